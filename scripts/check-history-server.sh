#!/usr/bin/env bash
# Checks that Spark's own History Server reads the event logs in a directory.
#
# Starts org.apache.spark.deploy.history.HistoryServer (Spark 4.3.0 from the pyspark package of
# PyPI, installed once into a venv under the cache directory; needs python3 and Java 17+) on
# LOG_DIR, waits (bounded) until it lists one application attempt per log, asks its REST API
# (/api/v1/applications, then per application /jobs, /stages and /stages/<id>/<attempt>/taskList)
# and prints a summary per application: id, name, completed, jobs with their status, stages with
# their status and completed tasks. Always stops the server on exit.
#
# Then runs every line through Spark's own JsonProtocol (parse, write back) and checks that the
# same JSON comes back.
#
# Exit status: 0 when every log was listed and loaded without a parse error and every line came
# back the same; 1 when the server left a log out, could not load an application, or reported a
# line it could not parse, when JsonProtocol rejected or changed a line (or an --expect count
# differs); 2 for a usage or setup problem.
#
# Usage: scripts/check-history-server.sh LOG_DIR [--expect JOBS STAGES TASKS]
#   --expect  also require every completed application to have exactly JOBS succeeded jobs,
#             STAGES complete stages and TASKS succeeded tasks.
# Environment:
#   SPARKYARD_PYSPARK_VENV  venv holding pyspark
#                           (default ${XDG_CACHE_HOME:-$HOME/.cache}/sparkyard/pyspark-venv)
#   SPARKYARD_SPARK_HOME    use this Spark installation instead of pyspark's
#   HS_TIMEOUT              seconds to wait for the server and its listing (default 120)
#
# Logs to try it on: the reference log Spark wrote (copy it into an empty directory under the
# name Spark gives it, its application id), or the ones sparkyard's writer produces:
#   cargo test write_history_server_check_logs -- --ignored --nocapture
#   scripts/check-history-server.sh /tmp/sparkyard-eventlog-check
set -euo pipefail

PYSPARK_VERSION=4.3.0

usage() {
    echo "usage: $0 LOG_DIR [--expect JOBS STAGES TASKS]" >&2
    exit 2
}

[ $# -ge 1 ] || usage
LOG_DIR=$1
shift
EXPECT=""
if [ $# -gt 0 ]; then
    [ "$1" = "--expect" ] && [ $# -eq 4 ] || usage
    for n in "$2" "$3" "$4"; do [[ $n =~ ^[0-9]+$ ]] || usage; done
    EXPECT="$2 $3 $4"
fi
[ -d "$LOG_DIR" ] || { echo "not a directory: $LOG_DIR" >&2; exit 2; }
LOG_DIR=$(cd "$LOG_DIR" && pwd)
HS_TIMEOUT=${HS_TIMEOUT:-120}
[[ $HS_TIMEOUT =~ ^[0-9]+$ ]] || { echo "HS_TIMEOUT must be a number of seconds" >&2; exit 2; }
command -v java >/dev/null || { echo "java not found (Spark's History Server needs Java 17+)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 not found" >&2; exit 2; }

if [ -n "${SPARKYARD_SPARK_HOME:-}" ]; then
    SPARK_HOME=$SPARKYARD_SPARK_HOME
else
    VENV=${SPARKYARD_PYSPARK_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/sparkyard/pyspark-venv}
    if ! "$VENV/bin/python" -c "import pyspark, sys; sys.exit(pyspark.__version__ != '$PYSPARK_VERSION')" \
        2>/dev/null; then
        echo "installing pyspark $PYSPARK_VERSION into $VENV (once) ..." >&2
        mkdir -p "$(dirname "$VENV")"
        python3 -m venv "$VENV" || { echo "cannot create a venv in $VENV" >&2; exit 2; }
        timeout 1200 "$VENV/bin/pip" install --quiet "pyspark==$PYSPARK_VERSION" ||
            { echo "cannot install pyspark==$PYSPARK_VERSION into $VENV" >&2; exit 2; }
    fi
    SPARK_HOME=$("$VENV/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
fi
export SPARK_HOME
[ -x "$SPARK_HOME/bin/spark-class" ] || { echo "no bin/spark-class in SPARK_HOME=$SPARK_HOME" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sparkyard-hs.XXXXXX")
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
HS_PID=""

cleanup() {
    if [ -n "$HS_PID" ] && kill -0 "$HS_PID" 2>/dev/null; then
        # The server runs in its own process group (setsid): stop that group, and only it.
        kill -TERM -- "-$HS_PID" 2>/dev/null || true
        for _ in $(seq 1 20); do
            kill -0 "$HS_PID" 2>/dev/null || break
            sleep 0.5
        done
        kill -KILL -- "-$HS_PID" 2>/dev/null || true
        wait "$HS_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "History Server: Spark in $SPARK_HOME, logs in $LOG_DIR, port $PORT" >&2
mkdir -p "$WORK/conf"
# An empty conf dir: no spark-defaults.conf or log4j settings from elsewhere.
SPARK_CONF_DIR="$WORK/conf" SPARK_LOCAL_IP=127.0.0.1 \
    SPARK_HISTORY_OPTS="-Dspark.history.fs.logDirectory=file:$LOG_DIR -Dspark.history.ui.port=$PORT \
-Dspark.history.fs.update.interval=1s" \
    setsid "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.history.HistoryServer \
    >"$WORK/history-server.log" 2>&1 &
HS_PID=$!

status=0
python3 - "$PORT" "$LOG_DIR" "$HS_TIMEOUT" "$HS_PID" "$EXPECT" "$WORK/history-server.log" <<'PY' || status=$?
import json, os, re, sys, time, urllib.error, urllib.parse, urllib.request

port, log_dir, timeout, pid, expect, server_log = sys.argv[1:7]
timeout, pid = float(timeout), int(pid)
base = f"http://127.0.0.1:{port}/api/v1"
deadline = time.monotonic() + timeout


class QueryFailed(Exception):
    pass


def get(path):
    try:
        with urllib.request.urlopen(base + path, timeout=60) as r:
            return json.loads(r.read().decode("utf-8"))
    except urllib.error.HTTPError as e:
        raise QueryFailed(f"GET {path}: HTTP {e.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise QueryFailed(f"GET {path}: {e}") from None


def alive():
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def q(s):
    return urllib.parse.quote(str(s), safe="")


# The History Server skips names starting with "." (and "_" ones are Hadoop's hidden files).
logs = sorted(n for n in os.listdir(log_dir) if not n.startswith((".", "_")))
if not logs:
    print(f"no event log in {log_dir}", file=sys.stderr)
    sys.exit(2)

apps, listed = None, 0
while time.monotonic() < deadline:
    if not alive():
        print("the History Server exited early", file=sys.stderr)
        sys.exit(1)
    try:
        apps = get("/applications")
        listed = sum(len(a.get("attempts") or []) for a in apps)
        if listed >= len(logs):
            break
    except QueryFailed:
        pass
    time.sleep(1)
if apps is None:
    print(f"the History Server did not answer within {timeout:.0f}s", file=sys.stderr)
    sys.exit(1)

failed = False
if listed < len(logs):
    print(f"REJECTED: {listed} application attempt(s) listed for {len(logs)} log(s) {logs} "
          f"after {timeout:.0f}s: the History Server could not read the others", file=sys.stderr)
    failed = True

for app in sorted(apps, key=lambda a: a["id"]):
    for attempt in app.get("attempts") or [{}]:
        attempt_id = attempt.get("attemptId")
        prefix = f"/applications/{q(app['id'])}" + (f"/{q(attempt_id)}" if attempt_id else "")
        label = app["id"] + (f" attempt {attempt_id}" if attempt_id else "")
        try:
            jobs = get(prefix + "/jobs")
            stages = get(prefix + "/stages")
            tasks = {}
            for s in stages:
                tasks[(s["stageId"], s["attemptId"])] = get(
                    f"{prefix}/stages/{s['stageId']}/{s['attemptId']}/taskList?length=100000")
        except QueryFailed as e:
            print(f"REJECTED: application {label}: the History Server could not load it: {e}",
                  file=sys.stderr)
            failed = True
            continue
        print(f"application {label}: name={app['name']!r} completed={attempt.get('completed')} "
              f"user={attempt.get('sparkUser')!r} sparkVersion={attempt.get('appSparkVersion')!r} "
              f"duration={attempt.get('duration')}ms")
        print(f"  jobs ({len(jobs)}): "
              + (", ".join(f"{j['jobId']} {j['status']} ({j['numCompletedTasks']}/{j['numTasks']} tasks)"
                           for j in sorted(jobs, key=lambda j: j["jobId"])) or "none"))
        print(f"  stages ({len(stages)}): "
              + (", ".join(f"{s['stageId']}.{s['attemptId']} {s['status']} "
                           f"numCompleteTasks={s['numCompleteTasks']}/{s['numTasks']}"
                           + (f" numFailedTasks={s['numFailedTasks']}" if s.get("numFailedTasks") else "")
                           for s in sorted(stages, key=lambda s: (s["stageId"], s["attemptId"])))
                 or "none"))
        all_tasks = [t for ts in tasks.values() for t in ts]
        by_status = {}
        for t in all_tasks:
            by_status[t["status"]] = by_status.get(t["status"], 0) + 1
        print(f"  tasks ({len(all_tasks)}): "
              + (", ".join(f"{n} {st}" for st, n in sorted(by_status.items())) or "none"))
        for (sid, said), ts in sorted(tasks.items()):
            for t in sorted(ts, key=lambda t: t["taskId"]):
                if t.get("errorMessage"):
                    first = (t["errorMessage"].strip().splitlines() or [""])[0]
                    print(f"    task {t['taskId']} (stage {sid}.{said}) {t['status']}: {first[:140]}")
        if expect and attempt.get("completed"):
            want = [int(x) for x in expect.split()]
            got = [sum(j["status"] == "SUCCEEDED" for j in jobs),
                   sum(s["status"] == "COMPLETE" for s in stages),
                   sum(t["status"] == "SUCCESS" for t in all_tasks)]
            if got != want:
                print(f"  EXPECTED {want[0]} jobs, {want[1]} stages, {want[2]} tasks succeeded; got {got}",
                      file=sys.stderr)
                failed = True

# A line the server cannot parse is skipped with an error in its log (the application is still
# listed, without that event): that is a rejection too.
time.sleep(1)
with open(server_log, encoding="utf-8", errors="replace") as f:
    text = f.read()
bad = [l for l in text.splitlines()
       if re.search(r"Exception parsing Spark event log|Malformed line|Drop unrecognized event"
                    r"|Exception encountered when attempting to load application log"
                    r"|Exception while merging application listings|Failed to load application", l)]
if bad:
    print("REJECTED: the History Server could not parse some lines:", file=sys.stderr)
    for l in bad[:20]:
        print("  " + l[:300], file=sys.stderr)
    failed = True
sys.exit(1 if failed else 0)
PY

if [ "$status" -ne 0 ]; then
    echo "--- History Server log (last 40 lines) ---" >&2
    tail -n 40 "$WORK/history-server.log" >&2 || true
    exit "$status"
fi

# Second check, line by line: Spark's own JsonProtocol (the code the History Server replays
# with) parses every line and writes the event back; the result must hold the same JSON (maps
# such as properties may come back in another key order). Run as a single-file Java program.
cat >"$WORK/RoundTrip.java" <<'JAVA'
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.util.JsonProtocol$;

public class RoundTrip {
  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(new FileOutputStream(args[0]), true, "UTF-8");
    for (int i = 1; i < args.length; i++) {
      int n = 0;
      for (String line : Files.readAllLines(Paths.get(args[i]), StandardCharsets.UTF_8)) {
        n++;
        String back;
        try {
          SparkListenerEvent e = JsonProtocol$.MODULE$.sparkEventFromJson(line);
          back = "OK\t" + JsonProtocol$.MODULE$.sparkEventToJsonString(e);
        } catch (Throwable t) {
          back = "FAILED\t" + t.toString().replace('\n', ' ');
        }
        out.println(args[i] + "\t" + n + "\t" + back);
      }
    }
  }
}
JAVA
mapfile -t LOG_FILES < <(find "$LOG_DIR" -mindepth 1 -maxdepth 1 -type f ! -name '.*' ! -name '_*' | sort)
if ! java -cp "$SPARK_HOME/jars/*" "$WORK/RoundTrip.java" "$WORK/roundtrip.tsv" "${LOG_FILES[@]}" \
    >"$WORK/roundtrip.log" 2>&1; then
    echo "REJECTED: Spark's JsonProtocol could not be run on the logs:" >&2
    tail -n 20 "$WORK/roundtrip.log" >&2
    exit 1
fi
python3 - "$WORK/roundtrip.tsv" <<'PY' || status=$?
import json, sys
lines = {}
bad, same, total = [], 0, 0
with open(sys.argv[1], encoding="utf-8") as f:
    rows = [l.rstrip("\n").split("\t", 3) for l in f]
last = {}
for path, n, _, _ in rows:
    last[path] = max(last.get(path, 0), int(n))
for path, n, status, payload in rows:
    if path not in lines:
        with open(path, encoding="utf-8") as f:
            lines[path] = f.read().split("\n")
    ours = lines[path][int(n) - 1]
    if status != "OK":
        if path.endswith(".inprogress") and int(n) == last[path]:
            continue  # a live log's last line may still be being written
    total += 1
    if status != "OK":
        bad.append(f"{path}:{n}: Spark cannot parse it: {payload[:200]}")
    elif json.loads(payload) != json.loads(ours):
        bad.append(f"{path}:{n}: Spark writes it back differently:\n    ours : {ours[:400]}\n"
                   f"    Spark: {payload[:400]}")
    else:
        same += 1
print(f"JsonProtocol round trip: {same} of {total} lines read and written back by Spark with the same content")
for b in bad[:20]:
    print("REJECTED: " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
exit "$status"
