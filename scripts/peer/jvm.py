"""Runs a peer job of scripts/peer/java/ on Apache Spark (pyspark's Spark, Java 17):
compiles the class against pyspark's jars into target/bench-peer/ when needed, then runs it
with spark-submit.

    jvm.py TinyTasks <master> <n>          -> PEER_SECONDS <median job seconds>
    jvm.py SparkPiPeer whole <master> <s>  -> PEER_SECONDS <whole spark-submit process, median of 3 after a warm-up>

Run with target/bench-venv's python (scripts/peer/setup.sh installs pyspark there).
"""
import glob
import os
import statistics
import subprocess
import sys
import time

import pyspark

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(ROOT, "target", "bench-peer")
SPARK = os.path.dirname(pyspark.__file__)


def jar_of(cls):
    src = os.path.join(HERE, "java", cls + ".java")
    classes = os.path.join(OUT, cls)
    jar = os.path.join(OUT, cls + ".jar")
    if not os.path.exists(jar) or os.path.getmtime(jar) < os.path.getmtime(src):
        os.makedirs(classes, exist_ok=True)
        cp = ":".join(glob.glob(os.path.join(SPARK, "jars", "*.jar")))
        subprocess.run(["javac", "-nowarn", "-cp", cp, "-d", classes, src], check=True)
        subprocess.run(["jar", "cf", jar, "-C", classes, "."], check=True)
    return jar


def submit(cls, master, args):
    cmd = [os.path.join(SPARK, "bin", "spark-submit"), "--master", master,
           "--conf", "spark.ui.enabled=false", "--class", cls, jar_of(cls)] + args
    env = dict(os.environ, SPARK_HOME=SPARK)
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    elapsed = time.perf_counter() - t
    if out.returncode != 0:
        sys.exit(f"spark-submit {cls} failed ({out.returncode}): " + out.stderr.strip()[-400:])
    return out.stdout, elapsed


cls = sys.argv[1]
if cls == "TinyTasks":
    out, _ = submit(cls, sys.argv[2], sys.argv[3:])
    print([l for l in out.splitlines() if l.startswith("PEER_SECONDS")][0], flush=True)
elif cls == "SparkPiPeer" and sys.argv[2] == "whole":
    times = [submit(cls, sys.argv[3], sys.argv[4:])[1] for _ in range(4)][1:]
    print(f"PEER_SECONDS {statistics.median(times):.3f}", flush=True)
else:
    sys.exit("usage: jvm.py TinyTasks <master> <n> | jvm.py SparkPiPeer whole <master> <slices>")
