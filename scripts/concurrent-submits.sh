#!/usr/bin/env bash
# N cluster-mode SparkPi submissions at once to one `sparkyard node` (issue 11: the AM
# resource limit keeps them from deadlocking). Starts a node on a free port, submits N at
# once, counts those that end SUCCEEDED, prints the node's RSS and descriptors, stops it.
#
#   scripts/concurrent-submits.sh [N]        # default 20; SPARKYARD=binary, CONF_DIR=config
set -u
cd "$(dirname "$0")/.."
N=${1:-20}
BIN=${SPARKYARD:-target/release/sparkyard}
CONF=${CONF_DIR:-$PWD/config}
[ -x "$BIN" ] || cargo build --release --locked >&2 || exit 1
D=$(mktemp -d -t concurrent.XXXXXX)
PORT=$((20000 + RANDOM % 20000))
"$BIN" node --config-dir "$CONF" --conf "yarn.resourcemanager.address=127.0.0.1:$PORT" --log-dir "$D/logs" >"$D/node.out" 2>&1 &
NODE=$!
for _ in $(seq 100); do grep -q listening "$D/node.out" 2>/dev/null && break; sleep 0.1; done
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
