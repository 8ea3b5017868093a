"""The peer of `cargo bench --bench data`'s word count: Spark 4.3 (pyspark's, local[2]) counting
the words of <file> as JavaWordCount does: lines split on " ", a count per word, collected.

Usage: wordcount.py <file> <runs>. Runs a warm-up job, then <runs> timed jobs, printing
`job_seconds=<s>` for each (the job only: from building the query to the collected rows).

The job runs in the JVM through the DataFrame API (`split` then `explode`, `groupBy().count()`),
Spark's fastest form of it: a Python RDD job would time Python workers, not Spark. Spark SQL's
`split` keeps trailing empty strings where Java's `String.split` drops them; the bench's file has
no trailing or doubled spaces, so both count the same words.
"""
import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def main():
    path, runs = sys.argv[1], int(sys.argv[2])
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("JavaWordCount")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    for run in range(runs + 1):
        start = time.perf_counter()
        rows = (
            spark.read.text(path)
            .select(F.explode(F.split(F.col("value"), " ")).alias("word"))
            .groupBy("word")
            .count()
            .collect()
        )
        seconds = time.perf_counter() - start
        total = sum(r["count"] for r in rows)
        label = "warm-up_seconds" if run == 0 else "job_seconds"
        print(f"{label}={seconds:.3f} distinct={len(rows)} words={total}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
