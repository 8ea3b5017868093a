"""The peer of `cargo bench --bench data`'s SparkPi: Spark 4.3 (pyspark's, local[2]) estimating pi
as the SparkPi example does, n = 100000 * slices points `1 until n` in <slices> partitions, each
point (random * 2 - 1, random * 2 - 1) counted when inside the unit circle.

Usage: spark_pi.py <slices> <runs>. Runs a warm-up job, then <runs> timed jobs, printing
`job_seconds=<s>` for each (the job only).

The job runs in the JVM through the DataFrame API (`range`, `rand`, a filtered count): Spark's
fastest form of it; a Python RDD job would time Python workers, not Spark.
"""
import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def main():
    slices, runs = int(sys.argv[1]), int(sys.argv[2])
    n = min(100000 * slices, 2**31 - 1)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("Spark Pi")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    for run in range(runs + 1):
        start = time.perf_counter()
        count = (
            spark.range(1, n, 1, slices)
            .select((F.rand(run) * 2 - 1).alias("x"), (F.rand(run + 1000) * 2 - 1).alias("y"))
            .where("x * x + y * y <= 1")
            .count()
        )
        seconds = time.perf_counter() - start
        label = "warm-up_seconds" if run == 0 else "job_seconds"
        print(f"{label}={seconds:.3f} pi={4.0 * count / (n - 1)}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
