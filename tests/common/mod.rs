//! Test support: a cluster on a manual clock with captured logs, a probe actor that can be
//! told to crash in every way, a journal of lifecycle events, and a bounded `eventually`.
#![allow(dead_code)]

pub mod apps;
pub mod inproc;
pub mod process;
pub mod suite;
pub mod yarn_processes;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;
use sparkyard::runtime::timers::run_at_fixed_rate;
use sparkyard::runtime::{ActorPath, ChildSpec, Clock, Cluster, ExitReason, Kept, Me, Terminated};
use sparkyard::yarn::protocol::ApplicationClientProtocol;
use sparkyard::{protocol, speaks};

/// A cluster on a manual clock whose records are captured.
pub fn cluster() -> Cluster {
    sparkyard::logs::init_for_tests();
    Cluster::builder()
        .clock(Clock::manual())
        .capture_logs(true)
        .build()
        .expect("inside an actix system")
}

/// Polls `cond` until it holds, yielding to the actors in between; fails the test after
/// 5 s of real time so nothing hangs.
pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        if cond() {
            return;
        }
        if std::time::Instant::now() > deadline {
            panic!("timed out waiting for: {what}");
        }
        sparkyard::runtime::clock::settle().await;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Awaits `fut` for at most 5 s of real time; fails the test after that.
pub async fn within<F: std::future::Future>(fut: F) -> F::Output {
    match tokio::time::timeout(Duration::from_secs(5), fut).await {
        Ok(v) => v,
        Err(_) => panic!("a future did not complete within 5 s"),
    }
}

/// Lifecycle lines in the order they happened: `started /r/a#1`, `stopped /r/a#1`, ...
#[derive(Clone, Default)]
pub struct Journal(Arc<Mutex<Vec<String>>>);

impl Journal {
    pub fn push(&self, line: String) {
        self.0.lock().unwrap().push(line);
    }
    pub fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
    pub fn clear(&self) {
        self.0.lock().unwrap().clear();
    }
}

/// How a probe misbehaves.
#[derive(Clone, Default)]
pub struct ProbeOpts {
    /// Panic in `started()` while fewer than this many starts have happened.
    pub panic_in_started_until: u32,
    /// A timer that ticks every period; it panics on the tick numbered `panic_on_tick`.
    pub tick: Option<(Duration, u32)>,
    /// Panic in `stopped()`.
    pub panic_in_stopped: bool,
    /// Never agree to stop (`stopping()` returns Continue).
    pub stubborn: bool,
    /// Counts the probe values dropped (an aborted actor is still dropped).
    pub drops: Option<Arc<AtomicU32>>,
}

/// A test actor: answers `Ping` with its incarnation and message count, and crashes,
/// stops or exits on request. `kept` survives restarts, `handled` does not.
pub struct Probe {
    pub me: Me,
    pub handled: u64,
    pub kept: Kept<u64>,
    pub journal: Journal,
    pub starts: Arc<AtomicU32>,
    pub opts: ProbeOpts,
    pub ticks: u32,
}

impl Probe {
    pub fn new(me: Me, kept: Kept<u64>, journal: Journal, starts: Arc<AtomicU32>, opts: ProbeOpts) -> Self {
        Probe {
            me,
            handled: 0,
            kept,
            journal,
            starts,
            opts,
            ticks: 0,
        }
    }
    fn tag(&self) -> String {
        format!("{}#{}", self.me.path(), self.me.incarnation())
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        if let Some(d) = &self.opts.drops {
            d.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Actor for Probe {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let n = self.starts.fetch_add(1, Ordering::SeqCst) + 1;
        self.journal.push(format!("started {}", self.tag()));
        if n <= self.opts.panic_in_started_until {
            panic!("probe refuses to start (start {n})");
        }
        if let Some((period, panic_on)) = self.opts.tick {
            let clock = self.me.clock().clone();
            run_at_fixed_rate(ctx, &clock, period, period, move |act: &mut Probe, _| {
                act.ticks += 1;
                if act.ticks == panic_on {
                    panic!("timer tick {} failed", act.ticks);
                }
            });
        }
    }

    fn stopping(&mut self, _: &mut Context<Self>) -> Running {
        if self.opts.stubborn {
            Running::Continue
        } else {
            Running::Stop
        }
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        self.journal.push(format!("stopped {}", self.tag()));
        if self.opts.panic_in_stopped {
            panic!("probe panics in stopped()");
        }
    }
}

#[derive(Message)]
#[rtype(result = "(u64, u64)")]
pub struct Ping;

impl Handler<Ping> for Probe {
    type Result = MessageResult<Ping>;
    fn handle(&mut self, _: Ping, _: &mut Context<Self>) -> MessageResult<Ping> {
        self.handled += 1;
        *self.kept.lock() += 1;
        MessageResult((self.me.incarnation(), self.handled))
    }
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct Crash(pub &'static str);

impl Handler<Crash> for Probe {
    type Result = ();
    fn handle(&mut self, msg: Crash, _: &mut Context<Self>) {
        panic!("{}", msg.0);
    }
}

/// Stop normally (`ctx.stop()`).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Finish;

impl Handler<Finish> for Probe {
    type Result = ();
    fn handle(&mut self, _: Finish, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

/// Exit with a status, as a process would.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ExitWith(pub i32);

impl Handler<ExitWith> for Probe {
    type Result = ();
    fn handle(&mut self, msg: ExitWith, ctx: &mut Context<Self>) {
        let me = self.me.clone();
        me.exit(
            ctx,
            ExitReason::Exit {
                code: msg.0,
                message: "asked to exit".into(),
            },
        );
    }
}

protocol! {
    /// What a test asks a [`Probe`].
    pub ProbeProtocol { Ping, Crash, Finish, ExitWith }
}

speaks!(Probe: ProbeProtocol);

/// Records every `Terminated` it receives; watches the paths it is told to.
pub struct Watcher {
    pub me: Me,
    pub seen: Arc<Mutex<Vec<Terminated>>>,
}

impl Actor for Watcher {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct WatchPath(pub ActorPath);

impl Handler<WatchPath> for Watcher {
    type Result = ();
    fn handle(&mut self, msg: WatchPath, ctx: &mut Context<Self>) {
        let me = self.me.clone();
        me.watch(ctx, &msg.0);
    }
}

impl Handler<Terminated> for Watcher {
    type Result = ();
    fn handle(&mut self, msg: Terminated, _: &mut Context<Self>) {
        self.seen.lock().unwrap().push(msg);
    }
}

/// A permanent probe worker with default behaviour, journaling into `journal`.
pub fn probe_spec(id: &str, journal: &Journal) -> ChildSpec {
    let j = journal.clone();
    ChildSpec::worker(id, move |_, me| {
        Probe::new(
            me,
            Kept::new(0),
            j.clone(),
            Default::default(),
            ProbeOpts::default(),
        )
    })
}

/// Captured records with `event == name`.
pub fn events(cluster: &Cluster, name: &str) -> Vec<Value> {
    cluster.logs().events(name)
}

/// Captured records with `event == name` about `actor`.
pub fn events_for(cluster: &Cluster, name: &str, actor: &str) -> Vec<Value> {
    events(cluster, name)
        .into_iter()
        .filter(|r| r["actor"] == actor)
        .collect()
}

pub fn path(s: &str) -> ActorPath {
    ActorPath::parse(s).unwrap()
}

/// An embedded cluster (captured logs, real clock) with the NodeManagers `nodes`, ready, and
/// a client connection to its ResourceManager.
pub async fn embedded_node(
    nodes: &[sparkyard::conf::NodeSpec],
) -> (Cluster, sparkyard::deploy::client::RmConnection) {
    embedded_node_with(nodes, &sparkyard::conf::SparkConf::new()).await
}

/// [`embedded_node`] with the node's own configuration (yarn-site keys).
pub async fn embedded_node_with(
    nodes: &[sparkyard::conf::NodeSpec],
    conf: &sparkyard::conf::SparkConf,
) -> (Cluster, sparkyard::deploy::client::RmConnection) {
    use sparkyard::yarn::node::{rm_path, start_node, wait_ready};
    sparkyard::logs::init_for_tests();
    let cluster = Cluster::builder()
        .capture_logs(true)
        .node("rmhost")
        .build()
        .unwrap();
    start_node(
        &cluster,
        conf,
        nodes,
        &sparkyard::cli::roles::launchers(),
        "rmhost",
        None,
    )
    .unwrap();
    wait_ready(&cluster, nodes.len(), Duration::from_secs(5))
        .await
        .unwrap();
    let rm = sparkyard::deploy::client::RmConnection::Local(
        cluster.endpoint::<ApplicationClientProtocol>(&rm_path()),
    );
    (cluster, rm)
}

protocol! {
    /// What a test tells a [`Watcher`].
    pub WatcherProtocol { WatchPath }
}

speaks!(Watcher: WatcherProtocol);
