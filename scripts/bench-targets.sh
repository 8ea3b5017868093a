#!/bin/bash
# Runs the benches of issue 17's targets (README, "Benchmarks") several times each and prints
# the lines that carry the figures, each prefixed with the part and the time of day, followed by
# the load average. The issue's targets must hold in every run of at least five in a row.
#
# usage: scripts/bench-targets.sh [runs] [part...]
#   runs  how many times each part runs (default 5; tiny tasks and TCP, far from their
#         targets and long, run once unless named)
#   part  tiny (jobs -- throughput), flat (jobs -- flatness), mem (memory 1000000),
#         wc (data -- wordcount), pi (data -- pi), seed (jobs -- mapcount),
#         tcp (processes -- throughput-plain); default: all
#         ceiling (plumbing, then plumbing tcp: the tiny-task cycle with the schedulers
#         taken out, the most the tiny and tcp targets could reach; not a target itself,
#         so named only)
#
# Builds the benches first (release, with `--locked`). Run it on a machine with nothing else
# running: figures are wall times, the load average is printed so a reader can tell.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=5
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then
    runs=$1
    shift
fi
named=$#
parts=("$@")
if [ "$named" -eq 0 ]; then
    parts=(tiny flat mem wc pi seed tcp)
fi

# The bench executables, by name, from cargo's own account of what it built.
declare -A bin
while IFS=' ' read -r name path; do
    bin[$name]=$path
done < <(cargo bench --locked --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "bench" in m["target"]["kind"]:
        print(m["target"]["name"], m["executable"])
')

for b in jobs data memory processes plumbing; do
    if [ -z "${bin[$b]:-}" ]; then
        echo "bench-targets: the bench '$b' was not built (cargo bench --locked --no-run failed?)" >&2
        exit 1
    fi
done

# part -> the command and the pattern of its figure lines
run_part() {
    case $1 in
        tiny) "${bin[jobs]}" throughput --bench 2>&1 | grep -E "tasks/s" ;;
        flat) "${bin[jobs]}" flatness --bench 2>&1 | grep -E "per-task cost|executors x 1" ;;
        mem) "${bin[memory]}" 1000000 --bench 2>&1 | grep -iE "peak|MB" | head -3 ;;
        wc) "${bin[data]}" wordcount --bench 2>&1 | grep -E "word count" ;;
        pi) "${bin[data]}" pi --bench 2>&1 | grep -E "SparkPi" ;;
        seed) "${bin[jobs]}" mapcount --bench 2>&1 | grep -E "seed job|MapCount" ;;
        tcp) "${bin[processes]}" throughput-plain --bench 2>&1 | grep -E "tasks/s|CPU" ;;
        ceiling)
            "${bin[plumbing]}" --bench 2>&1 | grep -E "tasks/s" | sed "s/^/in process: /"
            "${bin[plumbing]}" tcp --bench 2>&1 | grep -E "tasks/s" | sed "s/^/over TCP: /"
            ;;
        *)
            echo "bench-targets: unknown part '$1' (tiny, flat, mem, wc, pi, seed, tcp, ceiling)" >&2
            return 1
            ;;
    esac
}

for part in "${parts[@]}"; do
    n=$runs
    if [ "$named" -eq 0 ] && { [ "$part" = tiny ] || [ "$part" = tcp ]; }; then
        n=1
    fi
    for _ in $(seq "$n"); do
        run_part "$part" | sed "s/^/[$part $(date +%H:%M)] /"
    done
done
echo "load: $(uptime)"
