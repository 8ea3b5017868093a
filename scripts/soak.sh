#!/usr/bin/env bash
# N cluster-mode SparkPi runs one after another on one `sparkyard node` (issue 11: what the
# node keeps per application is bounded). Prints the node's open descriptors and RSS after
# 10 runs and every 50.
#
#   scripts/soak.sh [N]        # default 300; SPARKYARD=binary, CONF_DIR=config
set -u
cd "$(dirname "$0")/.."
N=${1:-300}
BIN=${SPARKYARD:-target/release/sparkyard}
CONF=${CONF_DIR:-$PWD/config}
[ -x "$BIN" ] || cargo build --release --locked >&2 || exit 1
D=$(mktemp -d -t soak.XXXXXX)
PORT=$((20000 + RANDOM % 20000))
"$BIN" node --config-dir "$CONF" --conf "yarn.resourcemanager.address=127.0.0.1:$PORT" --log-dir "$D/logs" >"$D/node.out" 2>&1 &
NODE=$!
for _ in $(seq 100); do grep -q listening "$D/node.out" 2>/dev/null && break; sleep 0.1; done
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
