//! Supervisors with the semantics of Erlang/OTP's.
//!
//! Layer: runtime (above logs, under everything else).
//!
//! A [`Supervisor`] is an actor with an ordered list of [`ChildSpec`]s. It starts them in
//! order and stops them in reverse order, each within its shutdown time-out (then it aborts
//! the child). When a child ends on its own, its restart type decides whether it comes back
//! (`Permanent`: always; `Transient`: only after an abnormal exit; `Temporary`: never) and
//! the strategy decides what else restarts with it (`OneForOne`: only it; `OneForAll`: every
//! child, the others stopped first in reverse order; `RestForOne`: it and the children
//! started after it). Children can be added and removed at run time ([`StartChild`],
//! [`TerminateChild`]), as containers and executors are.
//!
//! Restart intensity: more than `max_restarts` restarts within `period` and the supervisor
//! gives up: it logs `supervisor_escalated`, stops its children in reverse start order and
//! fails itself with [`ExitReason::Escalated`], so its own parent applies its strategy. That
//! is how a failure climbs from a timer to the driver, to the AM attempt, to YARN's retry.
//! An optional backoff delays each restart: `initial × 2^(n−1)` capped at `max`, where `n`
//! counts the restarts in the current period.
//!
//! State that must survive a restart lives in the child spec, which the supervisor owns:
//! put it in a [`Kept`] captured by the spec's factory, and every new incarnation gets it.
//!
//! All waits (shutdown time-outs, backoff) run on the cluster clock.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use actix::{Actor, ActorContext, ArbiterHandle, AsyncContext, Context, Handler, Message, Running};
use serde::{Deserialize, Serialize};

use super::cell::{self, CellShared, Me, SpawnArgs, DEFAULT_MAILBOX};
use super::cluster::Cluster;
use super::exit::ExitReason;
use super::path::ActorPath;
use super::protocol::Endpoint;
use super::timers::run_later;
use crate::logs::ctx::LogIds;

/// Whether a child is a worker or a supervisor of its own subtree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ChildKind {
    Worker,
    Supervisor,
}

/// When a child that ended is started again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Restart {
    /// Always.
    Permanent,
    /// Only if it ended abnormally (a panic, a kill, a non-zero exit).
    Transient,
    /// Never; it is removed when it ends.
    Temporary,
}

/// How long a child gets to stop before it is aborted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shutdown {
    /// Aborted at once; its `stopping()`/`stopped()` do not run.
    Brutal,
    /// Asked to stop, aborted if still running after this long (cluster clock).
    Timeout(Duration),
    /// Asked to stop and waited for (the default for supervisors).
    Infinity,
}

/// Which children restart when one fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Strategy {
    OneForOne,
    OneForAll,
    RestForOne,
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Strategy::OneForOne => "one_for_one",
            Strategy::OneForAll => "one_for_all",
            Strategy::RestForOne => "rest_for_one",
        })
    }
}

/// At most `max_restarts` restarts within `period`; one more escalates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Intensity {
    pub max_restarts: u32,
    pub period: Duration,
}

impl Default for Intensity {
    /// sparkyard's defaults (`spark.sparkyard.supervisor.maxRestarts` 3,
    /// `spark.sparkyard.supervisor.restartPeriod` 5s).
    fn default() -> Self {
        Intensity {
            max_restarts: 3,
            period: Duration::from_secs(5),
        }
    }
}

/// Delay before a restart: `initial × 2^(n−1)`, at most `max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    pub initial: Duration,
    pub max: Duration,
}

impl Backoff {
    /// The delay before the `n`-th restart of the current period (n ≥ 1).
    pub fn delay(&self, n: u32) -> Duration {
        let factor = 1u32.checked_shl(n.saturating_sub(1).min(31)).unwrap_or(u32::MAX);
        self.initial.saturating_mul(factor).min(self.max)
    }
}

/// State that outlives its actor's restarts: the child spec holds it (so the supervisor
/// does) and hands it to each new incarnation through the factory. Everything not kept
/// here starts fresh.
pub struct Kept<T>(Arc<Mutex<T>>);

impl<T> Clone for Kept<T> {
    fn clone(&self) -> Self {
        Kept(self.0.clone())
    }
}

impl<T: Default> Default for Kept<T> {
    fn default() -> Self {
        Kept::new(T::default())
    }
}

impl<T> Kept<T> {
    pub fn new(value: T) -> Self {
        Kept(Arc::new(Mutex::new(value)))
    }

    /// The kept value (a panic while it was held does not make it unreadable).
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<T: fmt::Debug> fmt::Debug for Kept<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Kept({:?})", &*self.lock())
    }
}

type StartFn = Arc<dyn Fn(&Cluster, SpawnArgs) -> Arc<CellShared> + Send + Sync>;

/// How to start, restart and stop one child.
#[derive(Clone)]
pub struct ChildSpec {
    pub id: String,
    pub restart: Restart,
    pub shutdown: Shutdown,
    pub kind: ChildKind,
    /// Ids this child's subtree adds to its records (node, app, container, executor).
    pub ids: LogIds,
    /// Where the child runs (default: its supervisor's arbiter).
    pub arbiter: Option<ArbiterHandle>,
    /// Mailbox capacity for asks.
    pub mailbox: usize,
    /// A significant child's end (when it is not restarted) shuts its supervisor down if
    /// the supervisor has `auto_shutdown` (OTP's significant children).
    pub significant: bool,
    start: StartFn,
    /// Called by the supervisor with each incarnation it starts, before anything else can
    /// happen to it: whoever asked for the child learns its incarnation even if the child
    /// ends, or the asker dies, before the answer to the start arrives.
    on_start: Option<OnStartFn>,
}

/// See [`ChildSpec::on_start`].
type OnStartFn = Arc<dyn Fn(&Arc<CellShared>) + Send + Sync>;

impl fmt::Debug for ChildSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildSpec")
            .field("id", &self.id)
            .field("restart", &self.restart)
            .field("shutdown", &self.shutdown)
            .field("kind", &self.kind)
            .finish()
    }
}

const DEFAULT_WORKER_SHUTDOWN: Duration = Duration::from_secs(5);

impl ChildSpec {
    /// A worker built by `make` at each (re)start.
    pub fn worker<A, F>(id: &str, make: F) -> ChildSpec
    where
        A: Endpoint,
        F: Fn(&mut Context<A>, Me) -> A + Send + Sync + 'static,
    {
        ChildSpec::try_worker(id, move |ctx, me| Ok(make(ctx, me)))
    }

    /// A worker whose factory may fail; a failure ends the incarnation with exit code 1 and
    /// the message, which the supervisor treats as any other failure.
    pub fn try_worker<A, F>(id: &str, make: F) -> ChildSpec
    where
        A: Endpoint,
        F: Fn(&mut Context<A>, Me) -> Result<A, String> + Send + Sync + 'static,
    {
        let make = Arc::new(make);
        ChildSpec {
            id: id.to_string(),
            restart: Restart::Permanent,
            shutdown: Shutdown::Timeout(DEFAULT_WORKER_SHUTDOWN),
            kind: ChildKind::Worker,
            ids: LogIds::default(),
            arbiter: None,
            mailbox: DEFAULT_MAILBOX,
            significant: false,
            on_start: None,
            start: Arc::new(move |cluster, args| {
                let make = make.clone();
                cell::spawn::<A, _>(cluster, args, move |ctx, me| make(ctx, me))
            }),
        }
    }

    /// A child supervisor; `spec` is called at each (re)start, so its children start fresh.
    pub fn supervisor<F>(id: &str, spec: F) -> ChildSpec
    where
        F: Fn() -> SupervisorSpec + Send + Sync + 'static,
    {
        let spec = Arc::new(spec);
        ChildSpec {
            id: id.to_string(),
            restart: Restart::Permanent,
            shutdown: Shutdown::Infinity,
            kind: ChildKind::Supervisor,
            ids: LogIds::default(),
            arbiter: None,
            mailbox: DEFAULT_MAILBOX,
            significant: false,
            on_start: None,
            start: Arc::new(move |cluster, args| {
                let spec = spec.clone();
                cell::spawn::<Supervisor, _>(cluster, args, move |_, me| Ok(Supervisor::new(me, spec())))
            }),
        }
    }

    pub fn restart(mut self, restart: Restart) -> Self {
        self.restart = restart;
        self
    }
    pub fn shutdown(mut self, shutdown: Shutdown) -> Self {
        self.shutdown = shutdown;
        self
    }
    pub fn ids(mut self, ids: LogIds) -> Self {
        self.ids = ids;
        self
    }
    pub fn on_arbiter(mut self, arbiter: ArbiterHandle) -> Self {
        self.arbiter = Some(arbiter);
        self
    }
    pub fn mailbox(mut self, capacity: usize) -> Self {
        self.mailbox = capacity;
        self
    }
    /// Runs `hook` with every incarnation the supervisor starts (see the field).
    pub fn on_start(mut self, hook: impl Fn(&Arc<CellShared>) + Send + Sync + 'static) -> Self {
        self.on_start = Some(Arc::new(hook));
        self
    }
    /// Marks the child significant (see [`SupervisorSpec::auto_shutdown`]).
    pub fn significant(mut self, significant: bool) -> Self {
        self.significant = significant;
        self
    }
}

/// Supervision settings: restart intensity, backoff, and the default shutdown time-out of
/// workers (read from `spark.sparkyard.supervisor.*` by `conf::supervision`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Supervision {
    pub intensity: Intensity,
    pub backoff: Option<Backoff>,
    pub shutdown_timeout: Duration,
}

impl Default for Supervision {
    fn default() -> Self {
        Supervision {
            intensity: Intensity::default(),
            backoff: None,
            shutdown_timeout: DEFAULT_WORKER_SHUTDOWN,
        }
    }
}

/// A supervisor's configuration.
#[derive(Clone, Debug)]
pub struct SupervisorSpec {
    pub strategy: Strategy,
    pub intensity: Intensity,
    pub backoff: Option<Backoff>,
    /// When a significant child ends and is not restarted, stop the other children and end
    /// with that child's exit reason (as a process ends when its main thread does).
    pub auto_shutdown: bool,
    pub children: Vec<ChildSpec>,
}

impl SupervisorSpec {
    pub fn new(strategy: Strategy) -> Self {
        SupervisorSpec {
            strategy,
            intensity: Intensity::default(),
            backoff: None,
            auto_shutdown: false,
            children: Vec::new(),
        }
    }
    /// See [`SupervisorSpec::auto_shutdown`].
    pub fn auto_shutdown(mut self, on: bool) -> Self {
        self.auto_shutdown = on;
        self
    }
    pub fn intensity(mut self, max_restarts: u32, period: Duration) -> Self {
        self.intensity = Intensity { max_restarts, period };
        self
    }
    pub fn backoff(mut self, backoff: Option<Backoff>) -> Self {
        self.backoff = backoff;
        self
    }
    /// Takes intensity and backoff from `settings`.
    pub fn supervision(mut self, settings: &Supervision) -> Self {
        self.intensity = settings.intensity;
        self.backoff = settings.backoff;
        self
    }
    pub fn child(mut self, child: ChildSpec) -> Self {
        self.children.push(child);
        self
    }
}

/// A child's incarnation ended (sent by its cell to its supervisor).
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct ChildExited {
    pub id: String,
    pub incarnation: u64,
    pub reason: ExitReason,
}

/// Adds a child at run time and starts it; answers its path.
#[derive(Message)]
#[rtype(result = "Result<ActorPath, SupervisorError>")]
pub struct StartChild(pub ChildSpec);

/// Stops a child and removes its spec; answers once the stop is under way.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), SupervisorError>")]
pub struct TerminateChild(pub String);

/// Lists the children.
#[derive(Debug, Message)]
#[rtype(result = "Vec<ChildInfo>")]
pub struct WhichChildren;

/// One child as [`WhichChildren`] reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildInfo {
    pub id: String,
    pub path: ActorPath,
    pub kind: ChildKind,
    pub restart: Restart,
    /// The running incarnation, `None` while stopped or waiting to restart.
    pub incarnation: Option<u64>,
}

/// Why a supervisor refused a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SupervisorError {
    AlreadyExists(String),
    NotFound(String),
    ShuttingDown,
    BadId(String),
}

impl fmt::Display for SupervisorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SupervisorError::AlreadyExists(id) => write!(f, "a child '{id}' already exists"),
            SupervisorError::NotFound(id) => write!(f, "no child '{id}'"),
            SupervisorError::ShuttingDown => f.write_str("the supervisor is shutting down"),
            SupervisorError::BadId(e) => write!(f, "invalid child id: {e}"),
        }
    }
}

impl std::error::Error for SupervisorError {}

struct Child {
    spec: ChildSpec,
    path: ActorPath,
    running: Option<Arc<CellShared>>,
    removing: bool,
}

/// What to do once the children being stopped have ended.
enum Then {
    Start(Vec<String>),
    Remove(String),
    Escalate(String),
    StopSelf,
    /// End with a significant child's exit reason.
    ExitWith(ExitReason),
}

/// A multi-step operation under way.
enum Op {
    Stopping {
        queue: VecDeque<String>,
        current: Option<(String, u64)>,
        then: Then,
    },
    Backoff {
        start: Vec<String>,
    },
}

/// Work that waits for the operation under way to finish.
enum Work {
    Exit { id: String, reason: ExitReason },
    Remove { id: String },
}

/// The supervisor actor; see the module docs.
pub struct Supervisor {
    me: Me,
    strategy: Strategy,
    intensity: Intensity,
    backoff: Option<Backoff>,
    auto_shutdown: bool,
    initial: Vec<ChildSpec>,
    children: Vec<Child>,
    restarts: VecDeque<Duration>,
    op: Option<Op>,
    work: VecDeque<Work>,
    shutting_down: bool,
}

impl Supervisor {
    pub fn new(me: Me, spec: SupervisorSpec) -> Supervisor {
        Supervisor {
            me,
            strategy: spec.strategy,
            intensity: spec.intensity,
            backoff: spec.backoff,
            auto_shutdown: spec.auto_shutdown,
            initial: spec.children,
            children: Vec::new(),
            restarts: VecDeque::new(),
            op: None,
            work: VecDeque::new(),
            shutting_down: false,
        }
    }

    fn index(&self, id: &str) -> Option<usize> {
        self.children.iter().position(|c| c.spec.id == id)
    }

    fn add_child(&mut self, spec: ChildSpec) -> Result<ActorPath, SupervisorError> {
        if self.index(&spec.id).is_some() {
            return Err(SupervisorError::AlreadyExists(spec.id));
        }
        let path = self
            .me
            .path()
            .child(&spec.id)
            .map_err(|e| SupervisorError::BadId(e.to_string()))?;
        self.children.push(Child {
            spec,
            path: path.clone(),
            running: None,
            removing: false,
        });
        Ok(path)
    }

    fn start_child(&mut self, idx: usize, ctx: &mut Context<Self>, restart: bool) {
        let child = &mut self.children[idx];
        if child.running.is_some() {
            return;
        }
        let addr = ctx.address();
        let id = child.spec.id.clone();
        let args = SpawnArgs {
            path: child.path.clone(),
            kind: child.spec.kind,
            parent_log: self.me.log_ctx().clone(),
            parent_cancel: Some(self.me.cancel_token().clone()),
            ids: child.spec.ids.clone(),
            arbiter: child.spec.arbiter.clone(),
            mailbox: child.spec.mailbox,
            on_exit: Some(Box::new(move |shared: &Arc<CellShared>, reason: &ExitReason| {
                addr.do_send(ChildExited {
                    id,
                    incarnation: shared.incarnation(),
                    reason: reason.clone(),
                })
            })),
            restart,
            ends_parent: child.spec.significant
                && self.auto_shutdown
                && child.spec.restart == Restart::Temporary,
        };
        let shared = (child.spec.start)(self.me.cluster(), args);
        if let Some(hook) = &child.spec.on_start {
            hook(&shared);
        }
        // A start that failed at once has already reported its exit; keep the handle so
        // that report is matched to this incarnation.
        self.children[idx].running = Some(shared);
    }

    /// Records a restart; false when that exceeds the intensity.
    fn record_restart(&mut self) -> bool {
        let now = self.me.clock().now();
        self.restarts.push_back(now);
        while let Some(&t) = self.restarts.front() {
            if now.saturating_sub(t) >= self.intensity.period {
                self.restarts.pop_front();
            } else {
                break;
            }
        }
        self.restarts.len() as u32 <= self.intensity.max_restarts
    }

    /// Running children in reverse start order, optionally only from `from` on.
    fn running_reversed(&self, from: usize, except: Option<&str>) -> VecDeque<String> {
        self.children[from..]
            .iter()
            .rev()
            .filter(|c| c.running.is_some() && Some(c.spec.id.as_str()) != except)
            .map(|c| c.spec.id.clone())
            .collect()
    }

    /// Removes a child for good, with the incarnation counts of its subtree.
    fn forget_child(&mut self, idx: usize) {
        let child = self.children.remove(idx);
        self.me.cluster().registry().forget_subtree(&child.path);
    }

    fn handle_unexpected_exit(&mut self, id: String, reason: ExitReason, ctx: &mut Context<Self>) {
        let Some(idx) = self.index(&id) else { return };
        if self.children[idx].removing {
            self.forget_child(idx);
            return;
        }
        let restart = match self.children[idx].spec.restart {
            Restart::Permanent => true,
            Restart::Transient => reason.is_abnormal(),
            Restart::Temporary => false,
        };
        if !restart {
            let significant = self.children[idx].spec.significant;
            tracing::info!(child = id.as_str(), reason = %reason, "child {id} ended ({reason}) and is not restarted ({:?})", self.children[idx].spec.restart);
            self.forget_child(idx);
            if significant && self.auto_shutdown {
                tracing::info!(
                    child = id.as_str(),
                    "significant child {id} ended; shutting down with its exit reason"
                );
                let queue = self.running_reversed(0, None);
                self.begin(queue, Then::ExitWith(reason), ctx);
            }
            return;
        }
        if !self.record_restart() {
            let message = format!(
                "reached maximum restart intensity: more than {} restarts within {}; last: child {id} ended with {reason}",
                self.intensity.max_restarts,
                humantime::format_duration(self.intensity.period)
            );
            tracing::error!(
                event = "supervisor_escalated",
                reason = message.as_str(),
                child = id.as_str(),
                "giving up: {message}"
            );
            let queue = self.running_reversed(0, None);
            self.begin(queue, Then::Escalate(message), ctx);
            return;
        }
        let (queue, start) = match self.strategy {
            Strategy::OneForOne => (VecDeque::new(), vec![id.clone()]),
            Strategy::OneForAll => (
                self.running_reversed(0, Some(&id)),
                self.children.iter().map(|c| c.spec.id.clone()).collect(),
            ),
            Strategy::RestForOne => (
                self.running_reversed(idx + 1, Some(&id)),
                self.children[idx..].iter().map(|c| c.spec.id.clone()).collect(),
            ),
        };
        tracing::info!(
            child = id.as_str(),
            strategy = %self.strategy,
            reason = %reason,
            restarts_in_period = self.restarts.len() as u64,
            "child {id} ended ({reason}); {} restarts {}",
            self.strategy,
            start.join(", ")
        );
        self.begin(queue, Then::Start(start), ctx);
    }

    fn begin(&mut self, queue: VecDeque<String>, then: Then, ctx: &mut Context<Self>) {
        self.op = Some(Op::Stopping {
            queue,
            current: None,
            then,
        });
        self.advance(ctx);
    }

    /// Drives the operation under way until it waits for something, then the queued work.
    fn advance(&mut self, ctx: &mut Context<Self>) {
        loop {
            match self.op.take() {
                None => match self.work.pop_front() {
                    None => return,
                    Some(Work::Exit { id, reason }) => {
                        if !self.shutting_down {
                            self.handle_unexpected_exit(id, reason, ctx);
                        }
                    }
                    Some(Work::Remove { id }) => {
                        if self.index(&id).is_some() {
                            self.begin(VecDeque::from([id.clone()]), Then::Remove(id), ctx);
                        }
                    }
                },
                Some(Op::Backoff { start }) => {
                    self.op = Some(Op::Backoff { start });
                    return;
                }
                Some(Op::Stopping {
                    queue,
                    current: Some(cur),
                    then,
                }) => {
                    self.op = Some(Op::Stopping {
                        queue,
                        current: Some(cur),
                        then,
                    });
                    return;
                }
                Some(Op::Stopping {
                    mut queue,
                    current: None,
                    then,
                }) => match queue.pop_front() {
                    Some(id) => {
                        let current = self.stop_child(&id, ctx);
                        self.op = Some(Op::Stopping { queue, current, then });
                    }
                    None => self.finish_op(then, ctx),
                },
            }
        }
    }

    /// Asks child `id` to stop; returns what to wait for (None if it is not running).
    fn stop_child(&mut self, id: &str, ctx: &mut Context<Self>) -> Option<(String, u64)> {
        let idx = self.index(id)?;
        let shared = self.children[idx].running.clone()?;
        if shared.is_done() {
            // Its exit report is on the way; it needs no stop.
            return Some((id.to_string(), shared.incarnation()));
        }
        let incarnation = shared.incarnation();
        match self.children[idx].spec.shutdown {
            Shutdown::Brutal => shared.abort("brutal shutdown by its supervisor"),
            Shutdown::Infinity => shared.request_stop(ExitReason::Shutdown),
            Shutdown::Timeout(limit) => {
                shared.request_stop(ExitReason::Shutdown);
                let id = id.to_string();
                run_later(ctx, self.me.clock(), limit, move |act: &mut Supervisor, _ctx| {
                    act.shutdown_time_out(&id, incarnation, limit)
                });
            }
        }
        Some((id.to_string(), incarnation))
    }

    fn shutdown_time_out(&mut self, id: &str, incarnation: u64, limit: Duration) {
        if let Some(idx) = self.index(id) {
            if let Some(shared) = &self.children[idx].running {
                if shared.incarnation() == incarnation && !shared.is_done() {
                    tracing::warn!(
                        child = id,
                        "child {id} did not stop within {}; aborting it",
                        humantime::format_duration(limit)
                    );
                    shared.abort(&format!(
                        "did not stop within its shutdown time-out of {}",
                        humantime::format_duration(limit)
                    ));
                }
            }
        }
    }

    fn finish_op(&mut self, then: Then, ctx: &mut Context<Self>) {
        match then {
            Then::Start(ids) => {
                let n = self.restarts.len() as u32;
                match self.backoff.map(|b| b.delay(n)).filter(|d| !d.is_zero()) {
                    Some(delay) => {
                        tracing::info!(
                            delay_ms = delay.as_millis() as u64,
                            "restarting {} after a backoff of {}",
                            ids.join(", "),
                            humantime::format_duration(delay)
                        );
                        self.op = Some(Op::Backoff { start: ids });
                        run_later(ctx, self.me.clock(), delay, |act: &mut Supervisor, ctx| {
                            act.backoff_over(ctx)
                        });
                    }
                    None => self.restart_children(&ids, ctx),
                }
            }
            Then::Remove(id) => {
                if let Some(idx) = self.index(&id) {
                    self.forget_child(idx);
                }
            }
            Then::Escalate(message) => self.me.exit(ctx, ExitReason::Escalated { message }),
            Then::StopSelf => ctx.stop(),
            Then::ExitWith(reason) => self.me.exit(ctx, reason),
        }
    }

    fn backoff_over(&mut self, ctx: &mut Context<Self>) {
        if let Some(Op::Backoff { start }) = self.op.take() {
            if !self.shutting_down {
                self.restart_children(&start, ctx);
            }
            self.advance(ctx);
        }
    }

    fn restart_children(&mut self, ids: &[String], ctx: &mut Context<Self>) {
        for id in ids {
            if let Some(idx) = self.index(id) {
                if !self.children[idx].removing {
                    self.start_child(idx, ctx, true);
                }
            }
        }
    }

    fn on_child_exited(&mut self, msg: ChildExited, ctx: &mut Context<Self>) {
        let Some(idx) = self.index(&msg.id) else { return };
        let current = self.children[idx].running.as_ref().map(|s| s.incarnation());
        if current != Some(msg.incarnation) {
            return; // a report about an incarnation already replaced
        }
        self.children[idx].running = None;
        match &mut self.op {
            Some(Op::Stopping { current, .. })
                if current.as_ref() == Some(&(msg.id.clone(), msg.incarnation)) =>
            {
                *current = None;
            }
            Some(Op::Stopping { queue, .. }) if queue.contains(&msg.id) => {
                queue.retain(|q| q != &msg.id);
            }
            _ if self.shutting_down => {}
            _ => self.work.push_back(Work::Exit {
                id: msg.id,
                reason: msg.reason,
            }),
        }
        self.advance(ctx);
    }
}

crate::protocol! {
    /// What a supervisor is asked by its peers: start a child from a spec, terminate one by
    /// id, list its children (OTP's `start_child`, `terminate_child`, `which_children`).
    pub SupervisorProtocol { StartChild, TerminateChild, WhichChildren }
}

crate::speaks!(Supervisor: SupervisorProtocol);

impl Actor for Supervisor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        for spec in std::mem::take(&mut self.initial) {
            let id = spec.id.clone();
            if let Err(e) = self.add_child(spec) {
                tracing::error!(child = id.as_str(), "cannot add child {id}: {e}");
            }
        }
        for idx in 0..self.children.len() {
            self.start_child(idx, ctx, false);
        }
    }

    fn stopping(&mut self, ctx: &mut Context<Self>) -> Running {
        if self.children.iter().all(|c| c.running.is_none()) {
            return Running::Stop;
        }
        if !self.shutting_down {
            self.shutting_down = true;
            self.work.clear();
            let current = match self.op.take() {
                Some(Op::Stopping { current, .. }) => current,
                _ => None,
            };
            let queue = self.running_reversed(0, current.as_ref().map(|c| c.0.as_str()));
            self.op = Some(Op::Stopping {
                queue,
                current,
                then: Then::StopSelf,
            });
            self.advance(ctx);
        }
        Running::Continue
    }
}

impl Handler<ChildExited> for Supervisor {
    type Result = ();
    fn handle(&mut self, msg: ChildExited, ctx: &mut Context<Self>) {
        self.on_child_exited(msg, ctx);
    }
}

impl Handler<StartChild> for Supervisor {
    type Result = Result<ActorPath, SupervisorError>;
    fn handle(&mut self, msg: StartChild, ctx: &mut Context<Self>) -> Self::Result {
        if self.shutting_down {
            return Err(SupervisorError::ShuttingDown);
        }
        let path = self.add_child(msg.0)?;
        let idx = self.children.len() - 1;
        self.start_child(idx, ctx, false);
        Ok(path)
    }
}

impl Handler<TerminateChild> for Supervisor {
    type Result = Result<(), SupervisorError>;
    fn handle(&mut self, msg: TerminateChild, ctx: &mut Context<Self>) -> Self::Result {
        let idx = self
            .index(&msg.0)
            .ok_or_else(|| SupervisorError::NotFound(msg.0.clone()))?;
        if self.children[idx].removing {
            return Ok(());
        }
        self.children[idx].removing = true;
        if self.children[idx].running.is_none() {
            self.forget_child(idx);
            return Ok(());
        }
        self.work.push_back(Work::Remove { id: msg.0 });
        if self.op.is_none() {
            self.advance(ctx);
        }
        Ok(())
    }
}

impl Handler<WhichChildren> for Supervisor {
    type Result = Vec<ChildInfo>;
    fn handle(&mut self, _: WhichChildren, _: &mut Context<Self>) -> Vec<ChildInfo> {
        self.children
            .iter()
            .map(|c| ChildInfo {
                id: c.spec.id.clone(),
                path: c.path.clone(),
                kind: c.spec.kind,
                restart: c.spec.restart,
                incarnation: c.running.as_ref().map(|s| s.incarnation()),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let b = Backoff {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(1),
        };
        assert_eq!(b.delay(1), Duration::from_millis(100));
        assert_eq!(b.delay(2), Duration::from_millis(200));
        assert_eq!(b.delay(4), Duration::from_millis(800));
        assert_eq!(b.delay(5), Duration::from_secs(1));
        assert_eq!(b.delay(100), Duration::from_secs(1));
    }

    #[test]
    fn kept_state_is_shared_between_clones() {
        let k = Kept::new(1u32);
        let k2 = k.clone();
        *k2.lock() += 1;
        assert_eq!(*k.lock(), 2);
    }
}
