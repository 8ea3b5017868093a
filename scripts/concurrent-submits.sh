#!/usr/bin/env bash
# N cluster-mode SparkPi submissions at once to one `sparkyard node` (issue 11: the AM
# resource limit keeps them from deadlocking). Starts a node on a free port, submits N at
# once, counts those that end SUCCEEDED, prints the node's RSS and descriptors, stops it.
#
#   scripts/concurrent-submits.sh [N]        # default 20; SPARKYARD=binary, CONF_DIR=config
set -u
cd "$(dirname "$0")/.."
N=${1:-20}
# shellcheck source=scripts/node-lib.sh
. scripts/node-lib.sh
D=$(mktemp -d -t concurrent.XXXXXX)
start_node "$D"
start=$(date +%s.%N)
pids=()
for i in $(seq "$N"); do
    ( timeout 900 "$BIN" submit --master yarn --deploy-mode cluster --config-dir "$CONF" \
        --conf "yarn.resourcemanager.address=127.0.0.1:$PORT" --log-dir "$D/sublogs" \
        --class org.apache.spark.examples.SparkPi x.jar 2 >"$D/sub.$i.out" 2>"$D/sub.$i.err"
      echo $? >"$D/sub.$i.rc" ) &
    pids+=($!)
done
wait "${pids[@]}"
end=$(date +%s.%N)
ok=0
for i in $(seq "$N"); do
    if [ "$(cat "$D/sub.$i.rc")" = 0 ] && grep -q "final status SUCCEEDED" "$D/sub.$i.err"; then
        ok=$((ok + 1))
    else
        echo "submission $i: exit $(cat "$D/sub.$i.rc")"; tail -2 "$D/sub.$i.err"
    fi
done
echo "N=$N succeeded=$ok wall=$(echo "$end - $start" | bc)s node_rss_kb=$(awk '/VmRSS/{print $2}' /proc/$NODE/status) node_fds=$(ls /proc/$NODE/fd | wc -l)"
kill -INT "$NODE"; wait "$NODE"
echo "runs kept in $D"
[ "$ok" = "$N" ]
