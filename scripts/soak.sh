#!/usr/bin/env bash
# N cluster-mode SparkPi runs one after another on one `sparkyard node` (issue 11: what the
# node keeps per application is bounded). Prints the node's open descriptors and RSS after
# 10 runs and every 50.
#
#   scripts/soak.sh [N]        # default 300; SPARKYARD=binary, CONF_DIR=config
set -u
cd "$(dirname "$0")/.."
N=${1:-300}
# shellcheck source=scripts/node-lib.sh
. scripts/node-lib.sh
D=$(mktemp -d -t soak.XXXXXX)
start_node "$D"
fds() { ls /proc/$NODE/fd | wc -l; }
rss() { awk '/VmRSS/{print $2}' /proc/$NODE/status; }
echo "start: fds=$(fds) rss_kb=$(rss)"
fail=0
for i in $(seq "$N"); do
    out=$(timeout 120 "$BIN" submit --master yarn --deploy-mode cluster --config-dir "$CONF" \
        --conf "yarn.resourcemanager.address=127.0.0.1:$PORT" --log-dir "$D/sublogs" \
        --class org.apache.spark.examples.SparkPi x.jar 2 2>"$D/sub.err")
    if [ $? -ne 0 ] || ! echo "$out" | grep -q "Pi is roughly"; then
        fail=$((fail + 1)); echo "run $i failed"; tail -3 "$D/sub.err"
    fi
    if [ "$i" -eq 10 ] || [ $((i % 50)) -eq 0 ]; then
        echo "after $i: fds=$(fds) rss_kb=$(rss) failures=$fail"
    fi
done
kill -INT "$NODE"; wait "$NODE"
echo "runs kept in $D"
[ "$fail" = 0 ]
