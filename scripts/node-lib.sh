# Sourced by the scripts that measure one `sparkyard node`: the binary (SPARKYARD, built if
# missing), the configuration (CONF_DIR), and start_node DIR, which starts a node on a free
# loopback port with its logs under DIR and sets NODE (its pid) and PORT.
BIN=${SPARKYARD:-target/release/sparkyard}
CONF=${CONF_DIR:-$PWD/config}
[ -x "$BIN" ] || cargo build --release --locked >&2 || exit 1

start_node() {
    local dir=$1
    PORT=$((20000 + RANDOM % 20000))
    "$BIN" node --config-dir "$CONF" --conf "yarn.resourcemanager.address=127.0.0.1:$PORT" \
        --log-dir "$dir/logs" >"$dir/node.out" 2>&1 &
    NODE=$!
    for _ in $(seq 100); do grep -q listening "$dir/node.out" 2>/dev/null && return 0; sleep 0.1; done
    echo "the node did not start within 10 s: $(tail -1 "$dir/node.out")" >&2
    exit 1
}
