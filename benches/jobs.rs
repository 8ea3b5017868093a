//! Benchmarks of the driver side, whole path (`cargo bench --bench jobs`):
//!
//! 1. MapCount submit-to-result: the release binary's `sparkyard submit` of MapCount on the
//!    embedded cluster, whole process (start, cluster, AM, executors, job, exit), median
//!    wall time of several runs.
//! 2. Tiny-task throughput: jobs of 1,000, 10,000 and 100,000 one-record tasks through the
//!    whole path (DAGScheduler, TaskSchedulerImpl, DriverEndpoint, LaunchTask, the
//!    executor's pool, StatusUpdate, TaskSetManager, back to the DAGScheduler) on 2
//!    executors of 4 cores and on 100 executors; tasks per second and µs per task.
//! 3. Flatness: 10,000 tasks on 2, 10, 100 and 1,000 executors of 1 core: the cost per
//!    task must not grow with the number of executors.
//!
//! The cluster logs at INFO to files in a temporary directory, as `sparkyard node` does
//! (`SPARKYARD_BENCH_LOG=warn` for the cost without per-task records,
//! `SPARKYARD_BENCH_NOFILES=1` for records formatted but not written). Each figure is the
//! median of `RUNS` jobs after a warm-up job. `cargo bench --bench jobs -- <part>` runs one
//! part: `mapcount`, `throughput` or `flatness`; `profile <n> [executors] [cores]` runs jobs
//! of n tasks on 2 × 4 cores (or the executors and cores given) alone (with
//! `SPARKYARD_BENCH_RUNS=1`, one warm-up and one timed job, for a profiler).
//! `SPARKYARD_BENCH_SPARK=1` adds the peer's figures, Apache Spark running the same jobs
//! (`scripts/peer/`).

sparkyard::global_allocator!();

mod common;

use std::sync::Mutex;
use std::time::Instant;

use sparkyard::context::{AppEnv, AppError, SparkContext};

const RUNS: usize = 5;

/// Timed jobs per figure: `RUNS`, or `SPARKYARD_BENCH_RUNS` (1 for a profile under `perf` or
/// callgrind).
fn runs() -> usize {
    std::env::var("SPARKYARD_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(RUNS)
}

/// (tasks, seconds) of every job the bench application ran.
static RESULTS: Mutex<Vec<(u32, f64)>> = Mutex::new(Vec::new());

/// Runs, for each task count in its arguments, a warm-up job and `RUNS` timed jobs of that
/// many one-record tasks (`parallelize(0 until n, n).count()`).
fn tiny_tasks(env: &AppEnv) -> Result<(), AppError> {
    let sizes: Vec<u32> = env.args().iter().filter_map(|a| a.parse().ok()).collect();
    let sc = SparkContext::new(env)?;
    for n in sizes {
        for run in 0..=runs() {
            let t = Instant::now();
            let count = sc.parallelize_range(0, n as i64, 1, Some(n))?.count()?;
            let secs = t.elapsed().as_secs_f64();
            assert_eq!(count, n as u64);
            if run > 0 {
                RESULTS.lock().unwrap().push((n, secs));
            }
        }
    }
    sc.stop();
    Ok(())
}

fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

/// Runs the bench application on `executors` executors of `cores` cores; answers, per task
/// count, the median job time.
fn throughput(executors: u32, cores: u32, sizes: &[u32]) -> Vec<(u32, (f64, f64, f64))> {
    RESULTS.lock().unwrap().clear();
    let setup = common::Setup {
        nodes: 4,
        node_memory_mb: 4_000_000,
        node_vcores: 100_000,
        executors,
        cores,
        executor_memory: "512m",
        log_files: std::env::var("SPARKYARD_BENCH_NOFILES").is_err(),
    };
    common::run_app(
        &setup,
        "bench.TinyTasks",
        sizes.iter().map(|s| s.to_string()).collect(),
    );
    let results = RESULTS.lock().unwrap().clone();
    sizes
        .iter()
        .map(|&n| {
            (
                n,
                median(results.iter().filter(|(m, _)| *m == n).map(|(_, s)| *s).collect()),
            )
        })
        .collect()
}

/// Wall times (ms) of `sparkyard submit` of MapCount in `mode`, after a warm-up run.
fn map_count_submit(mode: &str) -> Vec<f64> {
    submit_times(mode, "sparkyard.examples.MapCount", &[], "Count: 10")
}

/// Wall times (ms) of `sparkyard submit` of `class` with `args` in `mode`, whole process,
/// after a warm-up run; each run must print `expect` on stdout.
fn submit_times(mode: &str, class: &str, args: &[&str], expect: &str) -> Vec<f64> {
    let bin = env!("CARGO_BIN_EXE_sparkyard");
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/config");
    let mut times = Vec::new();
    for run in 0..=15 {
        let logs = tempfile::tempdir().unwrap();
        let t = Instant::now();
        let out = std::process::Command::new(bin)
            .args([
                "submit",
                "--config-dir",
                config,
                "--log-dir",
                logs.path().to_str().unwrap(),
            ])
            .args(["--deploy-mode", mode, "--class", class, "x.jar"])
            .args(args)
            .output()
            .unwrap();
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(expect),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        if run > 0 {
            times.push(ms);
        }
    }
    times
}

/// The peer: Apache Spark (pyspark from PyPI) running the same job, measured in the same run
/// when `SPARKYARD_BENCH_SPARK=1` (`scripts/peer/setup.sh` installs it).
mod peer {
    /// Seconds `scripts/peer/jvm.py <args>` reports (its line `PEER_SECONDS <s>`), or
    /// `None` when the peer is not asked for. A peer that cannot run says why on stderr.
    pub fn seconds(args: &[&str]) -> Option<f64> {
        let script = "jvm.py";
        if std::env::var("SPARKYARD_BENCH_SPARK").map_or(true, |v| v != "1") {
            return None;
        }
        let root = env!("CARGO_MANIFEST_DIR");
        let python = format!("{root}/target/bench-venv/bin/python");
        let out = std::process::Command::new(&python)
            .arg(format!("{root}/scripts/peer/{script}"))
            .args(args)
            .output();
        let out = match out {
            Ok(out) => out,
            Err(e) => {
                eprintln!("peer {script}: cannot run {python}: {e} (run scripts/peer/setup.sh)");
                return None;
            }
        };
        let found = String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("PEER_SECONDS ")?.trim().parse::<f64>().ok());
        if found.is_none() {
            eprintln!(
                "peer {script}: no PEER_SECONDS line (exit {:?}): {}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("")
            );
        }
        found
    }
}

fn main() {
    let level = common::log_level();
    common::init_logs(&level);
    sparkyard::apps::register_application("bench.TinyTasks", tiny_tasks);
    let filter = std::env::args()
        .nth(1)
        .filter(|a| !a.starts_with('-'))
        .unwrap_or_default();
    println!(
        "sparkyard job benchmarks (logs at {level} to files; median of {} jobs, min..max in brackets)\n",
        runs()
    );
    if filter.is_empty() || filter == "mapcount" {
        for mode in ["client", "cluster"] {
            let (m, lo, hi) = median(map_count_submit(mode));
            println!(
                "MapCount submit-to-result, whole process ({mode} mode): median {m:.1} ms [{lo:.1}..{hi:.1}]"
            );
        }
        // The seeds' job: spark-submit of SparkPi 10 in YARN cluster mode.
        let (m, lo, hi) = median(submit_times(
            "cluster",
            "org.apache.spark.examples.SparkPi",
            &["10"],
            "Pi is roughly 3.1",
        ));
        println!("seed job (SparkPi 10, cluster mode), whole process: median {m:.1} ms [{lo:.1}..{hi:.1}]");
        if let Some(spark) = peer::seconds(&["SparkPiPeer", "whole", "local[2]", "10"]) {
            println!("  Spark (spark-submit of SparkPi 10, local[2]), whole process: {spark:.2} s");
        }
        println!();
    }
    // Each cluster logs into a directory of its own, removed after its runs (a 100,000-task
    // job writes about 160 MB of records).
    let report = |label: &str, rows: Vec<(u32, (f64, f64, f64))>| {
        for (n, (m, lo, hi)) in rows {
            println!(
                "{label}, {n:>6} tasks: {:>8.0} tasks/s, {:>6.2} µs/task  [{:.0}..{:.0} ms per job]",
                n as f64 / m,
                m * 1e6 / n as f64,
                lo * 1000.0,
                hi * 1000.0
            );
        }
    };
    if filter.is_empty() || filter == "throughput" {
        report(
            "2 executors x 4 cores",
            throughput(2, 4, &[1_000, 10_000, 100_000]),
        );
        if let Some(spark) = peer::seconds(&["TinyTasks", "local-cluster[2,4,1024]", "100000"]) {
            println!(
                "  Spark (local-cluster[2,4,1024], 100000 tiny tasks): {:.0} tasks/s",
                100_000.0 / spark
            );
        }
        report(
            "100 executors x 4 cores",
            throughput(100, 4, &[1_000, 10_000, 100_000]),
        );
        println!();
    }
    // `profile <n> [executors] [cores]`: one cluster (2 executors x 4 cores unless told)
    // running jobs of n tasks, for a profiler.
    if filter == "profile" {
        let arg = |i: usize, default: u32| {
            std::env::args()
                .nth(i)
                .and_then(|n| n.parse().ok())
                .unwrap_or(default)
        };
        let (n, executors, cores) = (arg(2, 10_000), arg(3, 2), arg(4, 4));
        report(
            &format!("{executors} executors x {cores} cores"),
            throughput(executors, cores, &[n]),
        );
    }
    if filter.is_empty() || filter == "flatness" {
        let mut per_task = Vec::new();
        for executors in [2, 10, 100, 1000] {
            let rows = throughput(executors, 1, &[10_000]);
            per_task.push((executors, rows[0].1 .0 / rows[0].0 as f64));
            report(&format!("{executors:>4} executors x 1 core"), rows);
        }
        let at = |n: u32| {
            per_task
                .iter()
                .find(|(e, _)| *e == n)
                .map(|(_, t)| *t)
                .unwrap_or(f64::NAN)
        };
        println!(
            "per-task cost, 1000 vs 10 executors x 1 core: {:.2}x (target <= 1.3x)",
            at(1000) / at(10)
        );
    }
}
