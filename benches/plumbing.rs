//! The plumbing of a tiny task alone (`cargo bench --bench plumbing`): what the tiny-task
//! jobs of `benches/jobs.rs` cost with the schedulers' logic taken out, on this machine.
//!
//! Two executors of four cores in one process, as in the jobs' 2 × 4 case. A driver actor
//! keeps eight tasks in flight: it sends each executor actor (on the driver's arbiter, as
//! the embedded executors are) a LaunchTask-sized message; the executor hands a job to its
//! real [`TaskPool`]; the job, on a task thread, tells the driver RUNNING and then its final
//! status with a 22-byte result, by path, as `task_runner` does; the driver launches the
//! next task on each final status. With records (the default, `SPARKYARD_BENCH_LOG=warn`
//! for none) the four INFO records of a tiny task are written where the jobs write them
//! (the driver's "Starting task" and "Finished task" on the driver's thread, the executor's
//! "Running task" and "Finished task" on the task thread), to the cluster's files: about
//! 1.3 KB a task, against the jobs' 1.8 KB (these contexts carry fewer ids).
//!
//! `plumbing tcp`: the executors' cluster runs in an actix system of its own thread, as an
//! executor process's runtime thread, and the two talk over loopback TCP through the
//! project's links (`TcpLink`, `serve_actors`); the task threads leave their statuses for
//! the next write or the pool's flush, as `task_runner` does while tasks are short. It
//! flatters the real case: one executor runtime for both executors, one task pool, no
//! second process to schedule.
//!
//! What is left is what no scheduler can do without: three messages, one hand-off to a task
//! thread and back, four records. The tasks a second it reaches are the ceiling of the
//! jobs' figure on this machine with this runtime (the schedulers' work only adds to each
//! task's cost). Figures: the median of five runs of 100,000 tasks, with the process's CPU
//! time a task (every thread's, the log flusher's included).

sparkyard::global_allocator!();

#[path = "common/cpu.rs"]
mod cpu;
use cpu::cpu_time;

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use sparkyard::executor::task_pool::TaskPool;
use sparkyard::rpc::remote::{serve_actors, TcpLink};
use sparkyard::rpc::tcp::ServerLimits;
use sparkyard::runtime::endpoint::EndpointRef;
use sparkyard::runtime::{ActorPath, ChildSpec, Cluster, Me, Strategy, SupervisorSpec};

/// Tasks a run.
const TASKS: u64 = 100_000;
/// Timed runs a figure.
const RUNS: usize = 5;
/// Executors, and cores each.
const EXECUTORS: u32 = 2;
const CORES: u32 = 4;

#[derive(Message, serde::Serialize, serde::Deserialize)]
#[rtype(result = "()")]
struct LaunchTask {
    task_id: u64,
    /// As a task description's bytes (181 for the jobs' tiny tasks).
    #[serde(with = "serde_bytes")]
    data: Vec<u8>,
}

#[derive(Message, serde::Serialize, serde::Deserialize)]
#[rtype(result = "()")]
struct StatusUpdate {
    executor_id: String,
    task_id: u64,
    finished: bool,
    /// As a task result's bytes (22 for the jobs' tiny tasks), empty for RUNNING.
    #[serde(with = "serde_bytes")]
    data: Vec<u8>,
}

/// Launch `tasks` tasks; the driver notifies `done` after the last final status.
#[derive(Message, serde::Serialize, serde::Deserialize)]
#[rtype(result = "()")]
struct Run {
    tasks: u64,
}

sparkyard::protocol! {
    remote ExecutorProtocol { LaunchTask }
}
sparkyard::protocol! {
    remote DriverProtocol { StatusUpdate, Run }
}

struct Executor {
    id: u32,
    me: Me,
    pool: TaskPool,
    driver: EndpointRef<DriverProtocol>,
    /// The driver is in another runtime: statuses go as `task_runner` sends them to another
    /// process, left for the next write or the pool's flush (the tasks are short).
    tcp: bool,
}

impl Actor for Executor {
    type Context = Context<Self>;
}

impl Handler<LaunchTask> for Executor {
    type Result = ();
    fn handle(&mut self, msg: LaunchTask, _: &mut Context<Self>) {
        let (driver, ctx, executor, tcp) =
            (self.driver.clone(), self.me.log_ctx().clone(), self.id, self.tcp);
        let tell = move |driver: &EndpointRef<DriverProtocol>, status: StatusUpdate| {
            let task_id = status.task_id;
            let sent = if tcp {
                driver.tell_deferred(status)
            } else {
                driver.tell(status)
            };
            if let Err(e) = sent {
                tracing::warn!(task_id, "Cannot report TID {task_id}: {e}");
            }
        };
        let job = Box::new(move || {
            let _scope = sparkyard::logs::ctx::LogScope::enter(&ctx);
            let tid = msg.task_id;
            tell(
                &driver,
                StatusUpdate {
                    executor_id: executor.to_string(),
                    task_id: tid,
                    finished: false,
                    data: Vec::new(),
                },
            );
            tracing::info!(
                task_id = tid,
                stage_id = 0u32,
                stage_attempt = 0u32,
                "Running task {tid}.0 in stage 0.0 (TID {tid})"
            );
            let result = vec![0u8; 22];
            tracing::info!(
                task_id = tid,
                stage_id = 0u32,
                stage_attempt = 0u32,
                "Finished task {tid}.0 in stage 0.0 (TID {tid}). {} bytes result sent to driver",
                result.len()
            );
            tell(
                &driver,
                StatusUpdate {
                    executor_id: executor.to_string(),
                    task_id: tid,
                    finished: true,
                    data: result,
                },
            );
        });
        if self.pool.execute(job).is_err() {
            tracing::warn!(
                task_id = msg.task_id,
                "Cannot run the task: the pool is shut down"
            );
        }
    }
}

struct Driver {
    executors: Vec<EndpointRef<ExecutorProtocol>>,
    /// Tasks of the run launched, finished, and in all.
    launched: u64,
    finished: u64,
    tasks: u64,
    done: Arc<tokio::sync::Notify>,
}

impl Actor for Driver {
    type Context = Context<Self>;
}

impl Driver {
    fn launch(&mut self, executor: u32) {
        let tid = self.launched;
        self.launched += 1;
        let host = format!("host{}", executor + 1);
        tracing::info!(
            stage_id = 0u32,
            stage_attempt = 0u32,
            task_id = tid,
            index = tid,
            executor_id = executor,
            host = host.as_str(),
            locality = "PROCESS_LOCAL",
            "Starting task {tid}.0 in stage 0.0 (TID {tid}) ({host}, executor {executor}, partition {tid}, PROCESS_LOCAL, 181 bytes) taskResourceAssignments Map()"
        );
        let sent = self.executors[executor as usize].tell(LaunchTask {
            task_id: tid,
            data: vec![0u8; 181],
        });
        if let Err(e) = sent {
            tracing::warn!(task_id = tid, "Cannot launch TID {tid}: {e}");
        }
    }
}

impl Handler<Run> for Driver {
    type Result = ();
    fn handle(&mut self, msg: Run, _: &mut Context<Self>) {
        (self.launched, self.finished, self.tasks) = (0, 0, msg.tasks);
        for slot in 0..EXECUTORS * CORES {
            if self.launched < self.tasks {
                self.launch(slot % EXECUTORS);
            }
        }
    }
}

impl Handler<StatusUpdate> for Driver {
    type Result = ();
    fn handle(&mut self, msg: StatusUpdate, _: &mut Context<Self>) {
        if !msg.finished {
            return;
        }
        let tid = msg.task_id;
        let Some(executor) = msg.executor_id.parse::<u32>().ok().filter(|e| *e < EXECUTORS) else {
            tracing::warn!(
                task_id = tid,
                "A status from an unknown executor {}",
                msg.executor_id
            );
            return;
        };
        self.finished += 1;
        let host = format!("host{}", executor + 1);
        tracing::info!(
            executor_id = executor,
            stage_id = 0u32,
            task_id = tid,
            stage_attempt = 0u32,
            index = tid,
            host = host.as_str(),
            "Finished task {tid}.0 in stage 0.0 (TID {tid}) in 0 ms on {host} (executor {executor}) ({}/{})",
            self.finished,
            self.tasks
        );
        if self.launched < self.tasks {
            self.launch(executor);
        } else if self.finished == self.tasks {
            self.done.notify_one();
        }
    }
}

sparkyard::speaks!(Executor: ExecutorProtocol);
sparkyard::speaks!(Driver: DriverProtocol);

fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

/// The executors' root: `/execs/executor-N`; the driver is `/bench/driver`.
fn executors_spec(driver_path: &ActorPath, tcp: bool) -> SupervisorSpec {
    let mut spec = SupervisorSpec::new(Strategy::OneForOne);
    for e in 0..EXECUTORS {
        let driver_path = driver_path.clone();
        spec = spec.child(ChildSpec::worker(&format!("executor-{e}"), move |_, me: Me| {
            let driver = me.endpoint::<DriverProtocol>(&driver_path);
            TaskPool::prestart(CORES as usize);
            Executor {
                id: e,
                pool: TaskPool::new(&format!("executor-{e}"), CORES as usize),
                me,
                driver,
                tcp,
            }
        }));
    }
    spec
}

fn executor_paths() -> Vec<ActorPath> {
    (0..EXECUTORS)
        .map(|e| ActorPath::parse(&format!("/execs/executor-{e}")).expect("path"))
        .collect()
}

/// Over TCP: the executors' cluster in an actix system of its own thread (its runtime
/// thread stands for an executor process's), serving its actors on loopback and routing
/// `/bench` to the driver's address. Returns once its actors are up, with its address.
fn start_executors_elsewhere(driver_addr: String, log_dir: std::path::PathBuf) -> String {
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::Builder::new()
        .name("executors".into())
        .spawn(move || {
            let sys = actix::System::new();
            sys.block_on(async move {
                let cluster = Cluster::builder()
                    .id("executors")
                    .log_dir(log_dir)
                    .build()
                    .expect("executors' cluster");
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
                let addr = listener.local_addr().expect("address").to_string();
                // Serves until the process ends (the sender lives in this never-ending block).
                let (_serving, stopped) = tokio::sync::watch::channel(false);
                actix::spawn(serve_actors(
                    cluster.clone(),
                    listener,
                    stopped,
                    ServerLimits::default(),
                ));
                let bench = ActorPath::parse("/bench").expect("path");
                cluster.add_route(bench.clone(), TcpLink::new(&driver_addr));
                let driver_path = bench.child("driver").expect("path");
                cluster
                    .start_root("execs", executors_spec(&driver_path, true))
                    .expect("root");
                while executor_paths()
                    .iter()
                    .any(|p| !cluster.endpoint::<ExecutorProtocol>(p).is_alive())
                {
                    tokio::task::yield_now().await;
                }
                tx.send(addr).expect("main thread");
                std::future::pending::<()>().await;
            });
        })
        .expect("executors' thread");
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the executors' cluster starts within 30 s")
}

fn main() {
    let tcp = std::env::args().skip(1).any(|a| a == "tcp");
    let level = std::env::var("SPARKYARD_BENCH_LOG").unwrap_or_else(|_| "info".into());
    sparkyard::logs::init(&sparkyard::logs::LogInit {
        level: Some(level.clone()),
        console: sparkyard::logs::Console::Off,
        console_quiet_except: None,
    })
    .expect("subscriber");
    let dir = tempfile::tempdir().expect("temporary directory");
    let sys = actix::System::new();
    sys.block_on(async {
        let cluster = Cluster::builder().log_dir(dir.path()).build().expect("cluster");
        let done = Arc::new(tokio::sync::Notify::new());
        let driver_path = ActorPath::parse("/bench/driver").expect("path");
        // The driver's server serves while this is alive.
        let (_serving, stopped) = tokio::sync::watch::channel(false);
        let where_ = if tcp {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = listener.local_addr().expect("address").to_string();
            actix::spawn(serve_actors(cluster.clone(), listener, stopped, ServerLimits::default()));
            let executors_addr = start_executors_elsewhere(addr, dir.path().to_path_buf());
            cluster.add_route(ActorPath::parse("/execs").expect("path"), TcpLink::new(&executors_addr));
            "in a runtime of their own, over loopback TCP"
        } else {
            cluster.start_root("execs", executors_spec(&driver_path, false)).expect("root");
            while executor_paths()
                .iter()
                .any(|p| !cluster.endpoint::<ExecutorProtocol>(p).is_alive())
            {
                tokio::task::yield_now().await;
            }
            "on the driver's thread"
        };
        let d = done.clone();
        let spec = SupervisorSpec::new(Strategy::OneForOne).child(ChildSpec::worker("driver", move |_, me: Me| Driver {
            executors: executor_paths().iter().map(|p| me.endpoint::<ExecutorProtocol>(p)).collect(),
            launched: 0,
            finished: 0,
            tasks: 0,
            done: d.clone(),
        }));
        cluster.start_root("bench", spec).expect("root");
        let driver = cluster.endpoint::<DriverProtocol>(&driver_path);
        while !driver.is_alive() {
            tokio::task::yield_now().await;
        }
        println!(
            "sparkyard plumbing benchmark: {EXECUTORS} executors x {CORES} cores {where_}, records at {level} to files; median of {RUNS} runs of {TASKS} tasks\n"
        );
        let mut rates = Vec::new();
        let mut cpus = Vec::new();
        // One run unmeasured: the task threads start, the files open, the links connect.
        for run in 0..=RUNS {
            let (t0, c0) = (Instant::now(), cpu_time());
            let finished = done.notified();
            driver.tell(Run { tasks: TASKS }).expect("driver");
            tokio::time::timeout(Duration::from_secs(120), finished)
                .await
                .expect("a run of the plumbing bench ends within two minutes");
            let (wall, cpu) = (t0.elapsed(), cpu_time() - c0);
            if run > 0 {
                rates.push(TASKS as f64 / wall.as_secs_f64());
                cpus.push(cpu.as_nanos() as f64 / 1000.0 / TASKS as f64);
            }
        }
        let (m, lo, hi) = median(rates);
        let (c, clo, chi) = median(cpus);
        println!(
            "tiny-task plumbing: {m:>9.0} tasks/s [{lo:.0}..{hi:.0}], {c:.2} CPU-µs a task [{clo:.2}..{chi:.2}]"
        );
        cluster.shutdown(Duration::from_secs(5)).await;
    });
    // The records' bytes a task (the runs and the unmeasured one), once the files are whole.
    drop(sys);
    let bytes = files_size(dir.path());
    println!(
        "records written: {:.0} bytes a task",
        bytes as f64 / (TASKS * (RUNS as u64 + 1)) as f64
    );
}

/// The bytes of every file under `dir`.
fn files_size(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => files_size(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}
