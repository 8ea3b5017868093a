#!/usr/bin/env bash
# Seeded chaos, replayed: every seed runs twice per application and deploy mode on the
# embedded cluster (`spark.sparkyard.chaos.seed`), and the two runs must inject the same
# kills. Checks, per run: no hang (a bound per run), no panic, no wrong answer (a run that
# exits 0 prints the clean run's output), and no planned kill skipped because its target
# cannot exist in that mode and configuration. A run may fail when its kills allow it (an AM
# killed on every attempt, a supervisor beyond its intensity): those are counted, with the
# reason, not judged.
#
#   scripts/chaos-replay.sh [SEEDS] [FIRST_SEED]      # default: 50 seeds from 1
#
# Environment: SPARKYARD (the binary; default target/release/sparkyard, built if missing),
# RUN_BOUND (seconds per run, default 120), KILLS (kills per plan, default 3), OUT (where
# runs are kept, default a temporary directory). Exits 1 if any check fails.

set -u
cd "$(dirname "$0")/.."

SEEDS=${1:-50}
FIRST=${2:-1}
BIN=${SPARKYARD:-target/release/sparkyard}
RUN_BOUND=${RUN_BOUND:-120}
KILLS=${KILLS:-3}
OUT=${OUT:-$(mktemp -d -t chaos-replay.XXXXXX)}
CONF_DIR=$PWD/config

if [ ! -x "$BIN" ]; then
    cargo build --release --locked >&2 || exit 1
fi
mkdir -p "$OUT"

# The input of JavaWordCount.
WORDS=$OUT/words.txt
for i in $(seq 1 200); do echo "the quick brown fox $i jumps over the lazy dog $((i % 7))"; done >"$WORDS"

# name | arguments | finished tasks the kills are drawn from
APPS=(
    "MapCount|--class sparkyard.examples.MapCount x.jar 10|10"
    "SparkPi|--class org.apache.spark.examples.SparkPi x.jar 20|20"
    "JavaWordCount|--class org.apache.spark.examples.JavaWordCount x.jar $WORDS|4"
)
MODES=(client cluster)

# run DIR MODE ARGS TASKS [SEED]: one submit, bounded; leaves DIR/{stdout,stderr,code}.
run() {
    local dir=$1 mode=$2 args=$3 tasks=$4 seed=${5:-}
    mkdir -p "$dir"
    local chaos=()
    if [ -n "$seed" ]; then
        chaos=(--conf "spark.sparkyard.chaos.seed=$seed" --conf "spark.sparkyard.chaos.tasks=$tasks"
            --conf "spark.sparkyard.chaos.kills=$KILLS")
    fi
    # shellcheck disable=SC2086
    RUST_BACKTRACE=0 timeout -k 5 "$RUN_BOUND" "$BIN" submit --config-dir "$CONF_DIR" \
        --log-dir "$dir/logs" --deploy-mode "$mode" \
        --conf spark.yarn.report.interval=100ms --conf spark.yarn.maxAppAttempts=2 \
        "${chaos[@]}" $args >"$dir/stdout" 2>"$dir/stderr" </dev/null
    echo $? >"$dir/code"
}

# The kills a run injected, as it reports them, with the cluster's timestamp taken out.
kills() {
    grep '^sparkyard submit: chaos: ' "$1/stderr" | sed -E 's/_[0-9]{10,}_/_<ts>_/g'
}

runs=0 ok=0 failed=0 wrong=0 hangs=0 panics=0 mismatches=0 impossible=0 skipped=0 fired=0
declare -A reasons
problems=$OUT/problems.txt
: >"$problems"

for app in "${APPS[@]}"; do
    IFS='|' read -r name args tasks <<<"$app"
    for mode in "${MODES[@]}"; do
        clean=$OUT/clean-$name-$mode
        run "$clean" "$mode" "$args" "$tasks"
        if [ "$(cat "$clean/code")" != 0 ]; then
            echo "clean run of $name ($mode) failed: $(tail -1 "$clean/stderr")" >&2
            exit 1
        fi
        sort "$clean/stdout" >"$clean/sorted"
        for seed in $(seq "$FIRST" $((FIRST + SEEDS - 1))); do
            for take in a b; do
                dir=$OUT/$name-$mode-$seed-$take
                run "$dir" "$mode" "$args" "$tasks" "$seed"
                runs=$((runs + 1))
                code=$(cat "$dir/code")
                if [ "$code" = 124 ] || [ "$code" = 137 ]; then
                    hangs=$((hangs + 1))
                    echo "HANG $dir" >>"$problems"
                fi
                if grep -q 'panicked at\|RUST_BACKTRACE' "$dir/stderr"; then
                    panics=$((panics + 1))
                    echo "PANIC $dir" >>"$problems"
                fi
                if [ "$code" = 0 ]; then
                    if sort "$dir/stdout" | cmp -s - "$clean/sorted"; then
                        ok=$((ok + 1))
                    else
                        wrong=$((wrong + 1))
                        echo "WRONG $dir" >>"$problems"
                    fi
                elif [ "$code" != 124 ] && [ "$code" != 137 ]; then
                    failed=$((failed + 1))
                    why=$(grep -o 'failed 2 times\|maximum restart intensity\|escalated\|Max number of executor failures\|the submit side gave up\|SparkContext was shut down\|stopped while waiting for backend' "$dir/stderr" | head -1)
                    reasons["${why:-other (exit $code)}"]=$((${reasons["${why:-other (exit $code)}"]:-0} + 1))
                    [ -z "$why" ] && echo "FAILED(other) $dir: $(tail -1 "$dir/stderr")" >>"$problems"
                fi
                k=$(kills "$dir")
                fired=$((fired + $(grep -c ' killed (' <<<"$k")))
                skipped=$((skipped + $(grep -c ' skipped ' <<<"$k")))
                # A skip for a target this mode and configuration cannot have.
                if [ "$mode" = client ] && grep -q ' skipped .*/submit/client' <<<"$k"; then
                    impossible=$((impossible + 1))
                    echo "IMPOSSIBLE $dir" >>"$problems"
                fi
                if grep -q ' skipped .*\(speculation-timer\|executor-allocation-manager\)' <<<"$k"; then
                    impossible=$((impossible + 1))
                    echo "IMPOSSIBLE $dir" >>"$problems"
                fi
            done
            a=$OUT/$name-$mode-$seed-a b=$OUT/$name-$mode-$seed-b
            if ! diff <(kills "$a") <(kills "$b") >/dev/null; then
                mismatches=$((mismatches + 1))
                {
                    echo "MISMATCH $name $mode seed $seed"
                    diff <(kills "$a") <(kills "$b") | sed 's/^/    /'
                } >>"$problems"
            fi
            printf '%s %s seed %s: exit %s/%s\n' "$name" "$mode" "$seed" "$(cat "$a/code")" "$(cat "$b/code")" >&2
        done
    done
done

echo "runs: $runs ($SEEDS seeds x ${#APPS[@]} applications x ${#MODES[@]} deploy modes x 2)"
echo "succeeded with the clean result: $ok"
echo "failed (allowed by their kills): $failed"
for r in "${!reasons[@]}"; do echo "    $r: ${reasons[$r]}"; done
echo "wrong answers: $wrong"
echo "hangs (over ${RUN_BOUND}s): $hangs"
echo "panics: $panics"
echo "kills injected: $fired, skipped: $skipped (for a target that cannot exist: $impossible)"
echo "seeds whose two runs injected different kills: $mismatches"
echo "runs kept in $OUT; problems listed in $problems"
[ $((wrong + hangs + panics + mismatches + impossible)) = 0 ]
