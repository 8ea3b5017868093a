//! The cost of one INFO record, end to end (`cargo bench --bench records`): a task's records
//! (the executor's "Running task" and "Finished task", the driver's "Starting task" and
//! "Finished task") written in an executor's and the driver's log context to a cluster's
//! files, as the tiny-task jobs write them, with nothing else running.
//!
//! For 1 and 2 writing threads it prints the writers' time per record (what an actor's or a
//! task's thread pays) and the whole process's CPU per record (user + system, the log
//! flusher's writes included), the median of several runs. Tiny tasks write four records
//! each: a 250,000 tasks/s target on two cores leaves 8 CPU-µs a task for everything.
//! `records profile <n>` writes n records on one thread, for a profiler.

sparkyard::global_allocator!();

#[path = "common/cpu.rs"]
mod cpu;
use cpu::cpu_time;

use std::sync::Arc;
use std::time::{Duration, Instant};

use sparkyard::logs::sink::{self, LogSink};
use sparkyard::logs::{Console, LogCtx, LogIds, LogInit};

/// Records per thread per run.
const RECORDS: u64 = 200_000;
/// Timed runs per figure.
const RUNS: usize = 7;

/// The log contexts of an executor's backend and of the driver's endpoint, in cluster `id`.
fn contexts(id: &str, executor: u32) -> (Arc<LogCtx>, Arc<LogCtx>) {
    let app = "application_1795778669956_0001";
    let base = LogCtx::cluster(id);
    let container = format!("container_1795778669956_0001_01_{:06}", executor + 1);
    let exec_ids = LogIds::default()
        .node(&format!("host{}", executor + 1))
        .app(app)
        .attempt(1)
        .container(&container)
        .executor(&executor.to_string());
    let exec_path = format!("/node/nm-host{}/{container}/executor-{executor}", executor + 1);
    let exec = base.for_actor(
        Arc::from(exec_path.as_str()),
        "CoarseGrainedExecutorBackend",
        1,
        &exec_ids,
    );
    let driver_ids = LogIds::default()
        .node("host1")
        .app(app)
        .attempt(1)
        .container("container_1795778669956_0001_01_000001");
    let driver = base.for_actor(
        Arc::from("/node/nm-host1/container_1795778669956_0001_01_000001/am/driver/driver-endpoint"),
        "DriverEndpoint",
        1,
        &driver_ids,
    );
    (Arc::new(exec), Arc::new(driver))
}

/// Writes `n` tasks' worth of records (four a task) from one thread.
fn write_records(exec: &Arc<LogCtx>, driver: &Arc<LogCtx>, n: u64, executor: u32) {
    let host = format!("host{}", executor + 1);
    let executor_id = executor.to_string();
    for tid in 0..n / 4 {
        let (stage_id, index) = (0u32, tid);
        sparkyard::logs::ctx::in_scope(driver, || {
            // The fields the driver's records carry (`TaskSetManager`): the executor's id
            // among them, which the driver's log context names otherwise.
            tracing::info!(
                stage_id,
                stage_attempt = 0u32,
                task_id = tid,
                index,
                executor_id = executor_id.as_str(),
                host = host.as_str(),
                locality = "PROCESS_LOCAL",
                "Starting task {index}.0 in stage {stage_id}.0 (TID {tid}) ({host}, executor {executor}, partition {index}, PROCESS_LOCAL, 181 bytes) taskResourceAssignments Map()"
            )
        });
        sparkyard::logs::ctx::in_scope(exec, || {
            tracing::info!(
                stage_id,
                task_id = tid,
                stage_attempt = 0u32,
                "Running task {index}.0 in stage {stage_id}.0 (TID {tid})"
            );
            tracing::info!(
                stage_id,
                task_id = tid,
                stage_attempt = 0u32,
                "Finished task {index}.0 in stage {stage_id}.0 (TID {tid}). 22 bytes result sent to driver"
            );
        });
        sparkyard::logs::ctx::in_scope(driver, || {
            tracing::info!(
                executor_id = executor_id.as_str(),
                stage_id,
                task_id = tid,
                stage_attempt = 0u32,
                index,
                host = host.as_str(),
                "Finished task {index}.0 in stage {stage_id}.0 (TID {tid}) in 0 ms on {host} (executor {executor}) ({}/{n})",
                tid + 1
            )
        });
    }
}

/// One run: `threads` threads writing `per_thread` records each into a fresh sink. Returns
/// the writers' mean time per record and the process's CPU per record (the flusher's final
/// writes included: the sink is dropped, which writes out the rest).
fn run(threads: u32, per_thread: u64, run_id: usize) -> (f64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let id = format!("records-bench-{threads}-{run_id}");
    let wall: sink::WallClock = Arc::new(std::time::SystemTime::now);
    let sink = Arc::new(LogSink::new(Some(dir.path().to_path_buf()), false, wall));
    LogSink::start_flusher(&sink);
    sink::register(Arc::from(id.as_str()), sink.clone());
    let cpu0 = cpu_time();
    let writers: Vec<_> = (0..threads)
        .map(|t| {
            let id = id.clone();
            std::thread::spawn(move || {
                let (exec, driver) = contexts(&id, t + 1);
                let t0 = Instant::now();
                write_records(&exec, &driver, per_thread, t + 1);
                t0.elapsed()
            })
        })
        .collect();
    let busy: Duration = writers.into_iter().map(|w| w.join().unwrap()).sum();
    sink::unregister(&id);
    drop(sink);
    let cpu = cpu_time() - cpu0;
    let records = (per_thread * u64::from(threads)) as f64;
    (busy.as_nanos() as f64 / records, cpu.as_nanos() as f64 / records)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    sparkyard::logs::init(&LogInit {
        level: Some("info".into()),
        console: Console::Off,
        console_quiet_except: None,
    })
    .expect("subscriber");
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    if args.first().map(String::as_str) == Some("profile") {
        let n = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(2_000_000);
        let (writer, cpu) = run(1, n, 0);
        println!("1 thread, {n} records: {writer:.0} ns a record (writer), {cpu:.0} CPU-ns a record");
        return;
    }
    println!("sparkyard record benchmarks (INFO records of a tiny task to files; median of {RUNS} runs of {RECORDS} records a thread)\n");
    let _ = run(1, RECORDS / 4, usize::MAX);
    for threads in [1, 2] {
        let mut writer = Vec::new();
        let mut cpu = Vec::new();
        for r in 0..RUNS {
            let (w, c) = run(threads, RECORDS, r);
            writer.push(w);
            cpu.push(c);
        }
        println!(
            "{threads} writing thread(s): {:6.0} ns a record on the writer, {:6.0} CPU-ns a record in all (flusher included)",
            median(writer),
            median(cpu)
        );
    }
}
