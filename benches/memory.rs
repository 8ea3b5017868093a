//! Memory per pending task (`cargo bench --bench memory`): one job of N one-record tasks
//! (`parallelize(0 until n, n).count()`, as `benches/jobs.rs`'s tiny tasks) on 2 executors of
//! 4 cores, in process, the cluster logging at INFO to files in a temporary directory, and
//! the process's peak resident set (VmHWM from /proc/self/status) before and after it.
//!
//! Each size runs in a process of its own (the bench starts itself again with
//! `--tasks N`), so one size's peak does not hide another's. `cargo bench --bench memory --
//! 100000` runs one size; with no size it runs 1,000,000 and 100,000 tasks.
//! `SPARKYARD_BENCH_LOG=warn` measures without the per-task records.
//!
//! Printed per size: the peak before the job (cluster, AM, executors and SparkContext up),
//! the peak and the current resident set at its end, the growth of the peak per task, the
//! job's wall time (with the load average beside it) and the process's CPU time (user + sys)
//! over the job: figures that do not move with the machine's noise, except the wall time.

sparkyard::global_allocator!();

mod common;

use std::sync::Mutex;
use std::time::Instant;

use sparkyard::context::{AppEnv, AppError, SparkContext};

/// What the job saw.
#[derive(Clone, Copy)]
struct Figures {
    /// VmHWM before the job, kB.
    before: u64,
    /// VmHWM at its end, kB.
    after: u64,
    /// VmRSS at its end, kB.
    rss: u64,
    wall: f64,
    cpu: f64,
}

static FIGURES: Mutex<Option<Figures>> = Mutex::new(None);

/// A field of /proc/self/status in kB (VmHWM, VmRSS).
fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The process's CPU time so far (user + sys), in seconds.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which ends with the last ')'): state is field 3, utime
    // and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    let hz = rustix::param::clock_ticks_per_second() as f64;
    (ticks(11) + ticks(12)) as f64 / hz
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// The bench application: one job of `args[0]` one-record tasks.
fn tiny_tasks(env: &AppEnv) -> Result<(), AppError> {
    let n: u32 = env.args().first().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let sc = SparkContext::new(env)?;
    let before = status_kb("VmHWM");
    let cpu = cpu_seconds();
    let t = Instant::now();
    let count = sc.parallelize_range(0, n as i64, 1, Some(n))?.count()?;
    let wall = t.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu;
    assert_eq!(count, n as u64);
    *FIGURES.lock().unwrap() = Some(Figures {
        before,
        after: status_kb("VmHWM"),
        rss: status_kb("VmRSS"),
        wall,
        cpu,
    });
    sc.stop();
    Ok(())
}

/// Runs the bench application on an in-process cluster of 2 executors × 4 cores.
fn run_job(n: u32) {
    let setup = common::Setup {
        nodes: 4,
        node_memory_mb: 4_000_000,
        node_vcores: 100_000,
        executors: 2,
        cores: 4,
        executor_memory: "512m",
        log_files: true,
    };
    common::run_app(&setup, "bench.TinyTasks", vec![n.to_string()]);
}

/// The child: one job of `n` tasks, one line of figures.
fn child(n: u32, level: &str) {
    let at_start = status_kb("VmHWM");
    common::init_logs(level);
    sparkyard::apps::register_application("bench.TinyTasks", tiny_tasks);
    run_job(n);
    let Figures {
        before,
        after,
        rss,
        wall,
        cpu,
    } = FIGURES.lock().unwrap().expect("the job ran");
    println!(
        "{n:>9} tasks: peak RSS {:.1} MB at its end (before the job {:.1} MB, at start {:.1} MB, \
         RSS at end {:.1} MB), {:.3} KB a task; job CPU {cpu:.2} s, wall {wall:.2} s (load {})",
        after as f64 / 1024.0,
        before as f64 / 1024.0,
        at_start as f64 / 1024.0,
        rss as f64 / 1024.0,
        after.saturating_sub(before) as f64 / f64::from(n),
        load_average(),
    );
}

fn main() {
    let level = common::log_level();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(pos) = args.iter().position(|a| a == "--tasks") {
        let n = args
            .get(pos + 1)
            .and_then(|a| a.parse().ok())
            .expect("--tasks needs a number of tasks");
        child(n, &level);
        return;
    }
    let sizes: Vec<u32> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() {
        vec![1_000_000, 100_000]
    } else {
        sizes
    };
    let allocator = match sparkyard::allocator_options() {
        Some((purge_delay, allow_thp)) => {
            format!("mimalloc, purge_delay {purge_delay}, allow_thp {allow_thp}")
        }
        None => "not mimalloc 3.3".to_string(),
    };
    println!(
        "sparkyard memory per pending task (one job of N one-record tasks, 2 executors x 4 cores, \
         logs at {level} to files; a process per size; allocator: {allocator})"
    );
    let exe = std::env::current_exe().expect("the bench's own path");
    for n in sizes {
        let status = std::process::Command::new(&exe)
            .args(["--tasks", &n.to_string()])
            .status()
            .expect("the bench starts itself");
        assert!(status.success(), "the {n}-task run failed: {status}");
    }
}
