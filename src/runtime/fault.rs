//! Fault injection: kills, partitions and fault plans.
//!
//! Layer: runtime (above logs, under everything else).
//!
//! - Kill any actor, or every actor whose path matches a glob, as a *stop* (its
//!   `stopping()`/`stopped()` run and it exits `Killed`) or as a *panic* (a real panic is
//!   raised inside its cell), now or after a delay on the cluster clock.
//! - Partition: drop, or delay, every message to and from matching actors for a while.
//!   Endpoint refs consult [`FaultState::route`] on every send; with no partition active
//!   that costs one atomic load.
//! - A [`FaultPlan`] is a list of kills, each fired by a [`Trigger`]: a moment after the
//!   plan starts, or job progress (once the cluster's k-th task has finished since the plan
//!   started, counted by [`Progress`]). [`FaultPlan::seeded`] draws one from a seed (which
//!   actors, when, how) with a fixed generator, so the same seed gives the same plan on every
//!   machine and every version.
//!
//! Every kill is logged as a `fault_injected` record about the victim, with `mode`, `target`
//! and `by`; a planned kill that matches no actor is logged as `fault_skipped`. A planned
//! kill that fires while an actor its target matches is between two incarnations (a restart
//! under way, often the plan's previous kill), or while nothing it matched before runs (a
//! new application attempt starting its AM), first waits for a running match with none
//! restarting, for at most [`RESTART_WAIT`], so the same plan kills the same actors
//! whatever the timing. A target nothing ever matched is skipped at once.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::clock::Clock;
use super::cluster::Cluster;
use super::exit::ExitReason;
use super::path::{ActorPath, PathError, PathGlob};
use crate::logs::ctx::in_scope;

/// How long a planned kill waits for the actors it targets to come back from a restart.
pub const RESTART_WAIT: Duration = Duration::from_secs(5);

/// How often that wait looks again.
const RESTART_POLL: Duration = Duration::from_millis(2);

/// How a kill ends its victim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum KillMode {
    /// A graceful stop; the incarnation exits `Killed`.
    Stop,
    /// A panic raised inside the actor's cell; the incarnation exits `Panic`.
    Panic,
}

impl fmt::Display for KillMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KillMode::Stop => "stop",
            KillMode::Panic => "panic",
        })
    }
}

impl FromStr for KillMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "stop" => Ok(KillMode::Stop),
            "panic" => Ok(KillMode::Panic),
            other => Err(format!("unknown kill mode '{other}' (expected stop or panic)")),
        }
    }
}

/// What a partition does to the messages it catches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PartitionMode {
    Drop,
    Delay(Duration),
}

/// A fault request that could not be carried out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultError {
    /// The path or glob is malformed.
    BadPattern(PathError),
    /// Nothing running matches.
    NoMatch(String),
}

impl fmt::Display for FaultError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultError::BadPattern(e) => write!(f, "{e}"),
            FaultError::NoMatch(p) => write!(f, "no running actor matches '{p}'"),
        }
    }
}

impl std::error::Error for FaultError {}

/// One actor a kill reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Killed {
    pub path: ActorPath,
    pub incarnation: u64,
    pub actor_type: String,
}

#[derive(Clone, Debug)]
struct Partition {
    /// The target as given (what `heal` names).
    target: String,
    glob: PathGlob,
    mode: PartitionMode,
    until: Duration,
}

/// What an endpoint does with one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    Deliver,
    Drop,
    Delay(Duration),
}

/// The partitions of one cluster.
#[derive(Default)]
pub(crate) struct FaultState {
    active: AtomicBool,
    partitions: RwLock<Vec<Partition>>,
}

impl FaultState {
    /// How a message from `from` to `to` travels right now.
    pub(crate) fn route(&self, clock: &Clock, from: Option<&ActorPath>, to: &ActorPath) -> Route {
        if !self.active.load(Ordering::Acquire) {
            return Route::Deliver;
        }
        let now = clock.now();
        let mut route = Route::Deliver;
        let mut expired = false;
        {
            let parts = self.partitions.read().unwrap_or_else(|p| p.into_inner());
            for p in parts.iter() {
                if p.until <= now {
                    expired = true;
                    continue;
                }
                let hit = p.glob.matches(to.as_str()) || from.is_some_and(|f| p.glob.matches(f.as_str()));
                if hit {
                    match p.mode {
                        PartitionMode::Drop => return Route::Drop,
                        PartitionMode::Delay(d) => {
                            route = match route {
                                Route::Delay(prev) if prev >= d => route,
                                _ => Route::Delay(d),
                            }
                        }
                    }
                }
            }
        }
        if expired {
            let mut parts = self.partitions.write().unwrap_or_else(|p| p.into_inner());
            parts.retain(|p| p.until > now);
            self.active.store(!parts.is_empty(), Ordering::Release);
        }
        route
    }

    fn add(&self, p: Partition) {
        let mut parts = self.partitions.write().unwrap_or_else(|p| p.into_inner());
        parts.push(p);
        self.active.store(true, Ordering::Release);
    }

    fn clear(&self) {
        let mut parts = self.partitions.write().unwrap_or_else(|p| p.into_inner());
        parts.clear();
        self.active.store(false, Ordering::Release);
    }

    /// Ends the partitions in force at `now` whose target is `target` (every one with
    /// `None`), answering their targets.
    fn heal(&self, now: Duration, target: Option<&str>) -> Vec<String> {
        let mut parts = self.partitions.write().unwrap_or_else(|p| p.into_inner());
        let mut healed = Vec::new();
        parts.retain(|p| {
            let ends = p.until <= now || target.is_none_or(|t| t == p.target);
            if ends && p.until > now {
                healed.push(p.target.clone());
            }
            !ends
        });
        self.active.store(!parts.is_empty(), Ordering::Release);
        healed
    }
}

/// When a planned kill fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Trigger {
    /// This long after the plan started (cluster clock).
    At(Duration),
    /// Once this many tasks have finished successfully since the plan started.
    AfterTasks(u64),
}

impl Trigger {
    /// The order plans fire in: moments by time, then progress by count.
    fn sort_key(&self) -> (u8, u128) {
        match self {
            Trigger::At(d) => (0, d.as_millis()),
            Trigger::AfterTasks(n) => (1, u128::from(*n)),
        }
    }
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Trigger::At(d) => write!(f, "at {}", humantime::format_duration(*d)),
            Trigger::AfterTasks(n) => write!(f, "after {n} finished task{}", if *n == 1 { "" } else { "s" }),
        }
    }
}

/// How far a seeded plan spreads its kills.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Span {
    /// Moments drawn from `0..window`.
    Time(Duration),
    /// Progress drawn from `1..=tasks` finished tasks.
    Tasks(u64),
}

/// One kill of a plan: when `when` fires, kill what matches `target`: every match, or with
/// `pick = Some(n)` only the `n mod count`-th of the running matches in path order (a seeded
/// plan kills one actor per kill).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedFault {
    pub when: Trigger,
    pub target: String,
    pub mode: KillMode,
    #[serde(default)]
    pub pick: Option<u64>,
}

/// A list of kills, in firing order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultPlan {
    pub seed: Option<u64>,
    pub faults: Vec<PlannedFault>,
}

/// Job progress, counted per cluster: tasks finished successfully (the DriverEndpoint counts
/// them), so fault plans can fire "after the k-th finished task".
///
/// A plan's kill "after the k-th finished task" is armed here and, when its target is
/// running, carried out inside the very count that reaches k (on the thread that counts),
/// so it lands at the same point of the run in every replay: before anything that follows
/// the k-th task, even the application's end when k is its last task.
///
/// The count reaching k also *holds* the progress (a [`Hold`]): the DriverEndpoint keeps
/// every later finished task aside, uncounted and unprocessed, until the plan lets go
/// ([`Progress::is_held`], [`Progress::released`]), which it does once its next kill is
/// armed. When the target is not running at that count (it is restarting, or it dies with
/// an earlier kill's victim and comes back with a new application attempt), the kill waits
/// for it with the progress held. Either way the job cannot run past a kill's point before
/// the plan is ready for the next one, so a seed replays the same kills.
#[derive(Default)]
pub struct Progress {
    tasks_finished: AtomicU64,
    waiters: AtomicUsize,
    changed: tokio::sync::Notify,
    /// The kill due at a count, if one is armed.
    armed: Mutex<Option<(u64, DueKill)>>,
    /// Holds taken and not yet let go (see [`Hold`]).
    holds: AtomicUsize,
    /// Woken when the last hold goes.
    released: tokio::sync::Notify,
}

/// While one exists, the cluster's progress is held (see [`Progress`]); dropping it lets go,
/// so a plan that ends or is dropped never leaves a driver holding its tasks.
#[must_use = "the progress is held only while the Hold lives"]
pub struct Hold(Cluster);

impl Drop for Hold {
    fn drop(&mut self) {
        let progress = self.0.progress();
        if progress.holds.fetch_sub(1, Ordering::AcqRel) == 1 {
            progress.released.notify_waiters();
        }
    }
}

/// A kill to carry out when the count is reached (see [`Progress`]).
type DueKill = Box<dyn FnOnce() + Send>;

impl Progress {
    /// One more task finished.
    pub fn task_finished(&self) {
        let n = self.tasks_finished.fetch_add(1, Ordering::AcqRel) + 1;
        let due = {
            let mut armed = self.armed.lock().unwrap_or_else(|p| p.into_inner());
            if armed.as_ref().is_some_and(|(at, _)| n >= *at) {
                armed.take()
            } else {
                None
            }
        };
        if let Some((_, kill)) = due {
            kill();
        }
        if self.waiters.load(Ordering::Acquire) > 0 {
            self.changed.notify_waiters();
        }
    }

    /// Arms `kill` for when the count reaches `at`; runs it at once if it already has.
    fn arm(&self, at: u64, kill: DueKill) {
        let mut armed = self.armed.lock().unwrap_or_else(|p| p.into_inner());
        if self.tasks_finished() >= at {
            drop(armed);
            kill();
        } else {
            *armed = Some((at, kill));
        }
    }

    /// Holds the progress until the returned [`Hold`] is dropped.
    fn hold(&self, cluster: &Cluster) -> Hold {
        self.holds.fetch_add(1, Ordering::AcqRel);
        Hold(cluster.clone())
    }

    /// Whether a planned kill is waiting for its target: a finished task is then kept aside
    /// until [`Progress::released`].
    pub fn is_held(&self) -> bool {
        self.holds.load(Ordering::Acquire) > 0
    }

    /// Resolves once no hold is left (at once if none is).
    pub async fn released(&self) {
        loop {
            let notified = self.released.notified();
            if !self.is_held() {
                return;
            }
            notified.await;
        }
    }

    /// Tasks finished so far.
    pub fn tasks_finished(&self) -> u64 {
        self.tasks_finished.load(Ordering::Acquire)
    }

    /// Waits until at least `n` tasks have finished.
    pub async fn wait_tasks(&self, n: u64) {
        self.waiters.fetch_add(1, Ordering::AcqRel);
        loop {
            let notified = self.changed.notified();
            if self.tasks_finished() >= n {
                break;
            }
            notified.await;
        }
        self.waiters.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The generator of seeded plans: SplitMix64, written out here so a seed means the same
/// plan forever (a library's generator may change between versions).
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0), by rejection so there is no modulo bias.
    pub fn below(&mut self, n: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let v = self.next_u64();
            if v < zone {
                return v % n;
            }
        }
    }
}

impl FaultPlan {
    /// A plan from explicit kills; every target is validated, kills are sorted by their
    /// triggers (stable for equal ones).
    pub fn new(mut faults: Vec<PlannedFault>) -> Result<FaultPlan, FaultError> {
        for f in &faults {
            PathGlob::parse(&f.target).map_err(FaultError::BadPattern)?;
        }
        faults.sort_by_key(|f| f.when.sort_key());
        Ok(FaultPlan { seed: None, faults })
    }

    /// A random plan, a pure function of its arguments: `kills` kills, each of a target
    /// drawn from `targets` (paths or globs), fired at a millisecond drawn from `0..window`
    /// (`Span::Time`) or after a number of finished tasks drawn from `1..=tasks`
    /// (`Span::Tasks`), as a stop or a panic.
    pub fn seeded(seed: u64, targets: &[&str], kills: usize, span: Span) -> Result<FaultPlan, FaultError> {
        if targets.is_empty() {
            return Err(FaultError::NoMatch("(an empty list of targets)".into()));
        }
        for t in targets {
            PathGlob::parse(t).map_err(FaultError::BadPattern)?;
        }
        let mut rng = SplitMix64::new(seed);
        let faults = (0..kills)
            .map(|_| {
                let target = targets[rng.below(targets.len() as u64) as usize].to_string();
                let when = match span {
                    Span::Time(window) => Trigger::At(Duration::from_millis(
                        rng.below((window.as_millis() as u64).max(1)),
                    )),
                    Span::Tasks(tasks) => Trigger::AfterTasks(1 + rng.below(tasks.max(1))),
                };
                let mode = if rng.below(2) == 0 {
                    KillMode::Stop
                } else {
                    KillMode::Panic
                };
                let pick = Some(rng.next_u64() >> 1);
                PlannedFault {
                    when,
                    target,
                    mode,
                    pick,
                }
            })
            .collect();
        let mut plan = FaultPlan::new(faults)?;
        plan.seed = Some(seed);
        Ok(plan)
    }
}

/// What one planned kill did: the actors it reached, or none (skipped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanOutcome {
    pub fault: PlannedFault,
    pub killed: Vec<Killed>,
}

/// A plan being carried out.
#[derive(Clone, Debug, Default)]
pub struct PlanRun {
    outcomes: Arc<Mutex<Vec<PlanOutcome>>>,
    finished: Arc<AtomicBool>,
}

impl PlanRun {
    /// The kills carried out so far, in order.
    pub fn outcomes(&self) -> Vec<PlanOutcome> {
        self.outcomes.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }
}

impl Cluster {
    /// Kills every running actor matching `target` (a path or glob) at once.
    pub fn kill(&self, target: &str, mode: KillMode, by: &str) -> Result<Vec<Killed>, FaultError> {
        self.kill_picked(target, None, mode, by)
    }

    /// Kills every running actor matching `target`, or with `pick = Some(n)` only the
    /// `n mod count`-th of them in path order.
    pub fn kill_picked(
        &self,
        target: &str,
        pick: Option<u64>,
        mode: KillMode,
        by: &str,
    ) -> Result<Vec<Killed>, FaultError> {
        let glob = PathGlob::parse(target).map_err(FaultError::BadPattern)?;
        let mut victims = self.registry().matching(&glob);
        // One already being stopped or killed, or taken down with an ending actor, is not
        // killed twice.
        let ending = self.registry().ending();
        victims.retain(|v| !ending.covers(v.path()));
        if victims.is_empty() {
            return Err(FaultError::NoMatch(target.to_string()));
        }
        if let Some(n) = pick {
            let chosen = victims.swap_remove((n % victims.len() as u64) as usize);
            victims = vec![chosen];
        }
        let mut killed = Vec::with_capacity(victims.len());
        for v in victims {
            if v.is_done() {
                continue;
            }
            in_scope(v.log_ctx(), || {
                tracing::warn!(
                    event = "fault_injected",
                    mode = %mode,
                    target = v.path().as_str(),
                    by,
                    "fault injection: {mode} {} as asked by {by}",
                    v.path()
                )
            });
            match mode {
                KillMode::Stop => v.request_stop(ExitReason::Killed { by: by.to_string() }),
                KillMode::Panic => v.request_panic(by),
            }
            killed.push(Killed {
                path: v.path().clone(),
                incarnation: v.incarnation(),
                actor_type: v.actor_type().to_string(),
            });
        }
        Ok(killed)
    }

    /// Kills what matches `target` once `after` has passed on the cluster clock. The
    /// pattern is checked now; what it matches is decided when the time comes (a planned
    /// kill that then matches nothing is logged as `fault_skipped`).
    pub fn kill_after(
        &self,
        target: &str,
        mode: KillMode,
        after: Duration,
        by: &str,
    ) -> Result<(), FaultError> {
        PathGlob::parse(target).map_err(FaultError::BadPattern)?;
        let (cluster, target, by) = (self.clone(), target.to_string(), by.to_string());
        let deadline = self.clock().now().saturating_add(after);
        self.spawn_task(async move {
            cluster.clock().sleep_until(deadline).await;
            cluster.kill_or_skip(&target, None, mode, &by);
        });
        Ok(())
    }

    fn kill_or_skip(&self, target: &str, pick: Option<u64>, mode: KillMode, by: &str) -> Vec<Killed> {
        match self.kill_picked(target, pick, mode, by) {
            Ok(killed) => killed,
            Err(e) => {
                in_scope(
                    self.log_ctx(),
                    || tracing::warn!(event = "fault_skipped", mode = %mode, target, by, "fault injection skipped: {e}"),
                );
                Vec::new()
            }
        }
    }

    /// Whether some actor matching `target` runs and none is between two incarnations (a
    /// kill can be carried out at once).
    fn target_settled(&self, target: &str) -> bool {
        let Ok(glob) = PathGlob::parse(target) else {
            return true;
        };
        self.registry().between_incarnations(&glob).is_empty() && self.runs_a_match(&glob)
    }

    /// Whether some actor matching `glob` runs and is not ending (nor taken down with one).
    fn runs_a_match(&self, glob: &PathGlob) -> bool {
        let ending = self.registry().ending();
        self.registry()
            .matching(glob)
            .iter()
            .any(|v| !ending.covers(v.path()))
    }

    /// Waits (real time, at most [`RESTART_WAIT`]) until some actor matching `target` runs
    /// and none is between two incarnations.
    async fn wait_restarts(&self, target: &str, by: &str) {
        let Ok(glob) = PathGlob::parse(target) else { return };
        let settled = || {
            let pending = self.registry().between_incarnations(&glob);
            (pending.is_empty() && self.runs_a_match(&glob), pending)
        };
        let (mut ready, mut pending) = settled();
        // Nothing it matches has ever run: nothing to wait for (the kill is skipped).
        if ready || (pending.is_empty() && !self.registry().ever_matched(&glob)) {
            return;
        }
        in_scope(self.log_ctx(), || {
            tracing::info!(
                target,
                by,
                restarting = ?pending,
                "fault injection waits for {target} to be running (restarting: {}) before the kill",
                if pending.is_empty() { "none".to_string() } else { pending.iter().map(ActorPath::as_str).collect::<Vec<_>>().join(", ") }
            )
        });
        let deadline = std::time::Instant::now() + RESTART_WAIT;
        while !ready && std::time::Instant::now() < deadline {
            tokio::time::sleep(RESTART_POLL).await;
            (ready, pending) = settled();
        }
        if !ready {
            in_scope(self.log_ctx(), || {
                tracing::warn!(
                    target,
                    by,
                    restarting = ?pending,
                    "fault injection waited {} for {target} to be running; killing what runs",
                    humantime::format_duration(RESTART_WAIT)
                )
            });
        }
    }

    /// Drops or delays every message to and from actors matching `target` for `duration`.
    pub fn partition(
        &self,
        target: &str,
        mode: PartitionMode,
        duration: Duration,
        by: &str,
    ) -> Result<(), FaultError> {
        let glob = PathGlob::parse(target).map_err(FaultError::BadPattern)?;
        let until = self.clock().now().saturating_add(duration);
        in_scope(self.log_ctx(), || {
            tracing::warn!(
                event = "partition_started",
                target,
                mode = ?mode,
                by,
                duration_ms = duration.as_millis() as u64,
                "partition: messages to and from {target} {} for {}",
                match mode {
                    PartitionMode::Drop => "dropped".to_string(),
                    PartitionMode::Delay(d) => format!("delayed by {}", humantime::format_duration(d)),
                },
                humantime::format_duration(duration)
            )
        });
        self.faults().add(Partition {
            target: target.to_string(),
            glob,
            mode,
            until,
        });
        Ok(())
    }

    /// Ends every partition now.
    pub fn heal_partitions(&self) {
        self.faults().clear();
    }

    /// Ends the partitions in force whose target is `target` (every one with `None`) now,
    /// answering their targets, with a `partition_healed` record for each.
    pub fn heal(&self, target: Option<&str>, by: &str) -> Vec<String> {
        let healed = self.faults().heal(self.clock().now(), target);
        in_scope(self.log_ctx(), || {
            for t in &healed {
                tracing::warn!(
                    event = "partition_healed",
                    target = t.as_str(),
                    by,
                    "partition of {t} healed by {by}"
                );
            }
        });
        healed
    }

    /// Carries out `plan` on the cluster clock, starting now.
    pub fn run_plan(&self, plan: FaultPlan, by: &str) -> PlanRun {
        let run = PlanRun::default();
        let (cluster, by, r) = (self.clone(), by.to_string(), run.clone());
        let start = self.clock().now();
        let base = self.progress().tasks_finished();
        self.spawn_task(async move {
            // The hold taken by the last kill's count, let go only once the next kill is
            // armed, so no task is counted in between.
            let mut held: Option<Hold> = None;
            for fault in plan.faults {
                let who = format!("{by} ({})", fault.when);
                let due = match fault.when {
                    Trigger::At(at) => {
                        drop(held.take());
                        cluster.clock().sleep_until(start.saturating_add(at)).await;
                        Due::Wait(None)
                    }
                    Trigger::AfterTasks(n) => {
                        // Carried out by the count itself when its target runs (see
                        // `Progress`); otherwise here, after waiting for it, with the
                        // progress held.
                        let (tx, rx) = tokio::sync::oneshot::channel();
                        let (c, f, w) = (cluster.clone(), fault.clone(), who.clone());
                        cluster.progress().arm(
                            base.saturating_add(n),
                            Box::new(move || {
                                // Held from this count until the next kill is armed, so no
                                // task counts in between, whatever the threads do.
                                let hold = c.progress().hold(&c);
                                let due = if c.target_settled(&f.target) {
                                    Due::Done(c.kill_or_skip(&f.target, f.pick, f.mode, &w), hold)
                                } else {
                                    Due::Wait(Some(hold))
                                };
                                let _ = tx.send(due);
                            }),
                        );
                        drop(held.take());
                        rx.await.unwrap_or(Due::Wait(None))
                    }
                };
                let killed = match due {
                    Due::Done(killed, hold) => {
                        held = Some(hold);
                        killed
                    }
                    Due::Wait(hold) => {
                        held = hold;
                        cluster.wait_restarts(&fault.target, &who).await;
                        cluster.kill_or_skip(&fault.target, fault.pick, fault.mode, &who)
                    }
                };
                r.outcomes
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(PlanOutcome { fault, killed });
            }
            drop(held);
            r.finished.store(true, Ordering::Release);
        });
        run
    }
}

/// What a planned kill's trigger found: the kill carried out, or a target to wait for; a
/// count holds the progress in both cases (until the plan's next kill is armed).
enum Due {
    Done(Vec<Killed>, Hold),
    Wait(Option<Hold>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_plans_replay() {
        let targets = ["*/allocator", "*/driver-endpoint", "/node/rm"];
        let span = Span::Time(Duration::from_secs(5));
        let a = FaultPlan::seeded(42, &targets, 10, span).unwrap();
        let b = FaultPlan::seeded(42, &targets, 10, span).unwrap();
        let c = FaultPlan::seeded(43, &targets, 10, span).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.faults.len(), 10);
        let at = |f: &PlannedFault| match f.when {
            Trigger::At(d) => d,
            Trigger::AfterTasks(_) => panic!("a time plan"),
        };
        assert!(a.faults.windows(2).all(|w| at(&w[0]) <= at(&w[1])));
        assert!(a.faults.iter().all(|f| at(f) < Duration::from_secs(5)));
        // By progress: after 1..=20 finished tasks, in order.
        let p = FaultPlan::seeded(42, &targets, 10, Span::Tasks(20)).unwrap();
        assert_eq!(p, FaultPlan::seeded(42, &targets, 10, Span::Tasks(20)).unwrap());
        let n = |f: &PlannedFault| match f.when {
            Trigger::AfterTasks(n) => n,
            Trigger::At(_) => panic!("a progress plan"),
        };
        assert!(p.faults.windows(2).all(|w| n(&w[0]) <= n(&w[1])));
        assert!(p.faults.iter().all(|f| (1..=20).contains(&n(f))));
        assert!(a.faults.iter().any(|f| f.mode == KillMode::Stop));
        assert!(a.faults.iter().any(|f| f.mode == KillMode::Panic));
        // The generator is fixed: these values must never change.
        let mut g = SplitMix64::new(0);
        assert_eq!(g.next_u64(), 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn bad_targets_are_rejected() {
        assert!(matches!(
            FaultPlan::seeded(1, &["no-slash"], 1, Span::Tasks(1)),
            Err(FaultError::BadPattern(_))
        ));
        assert!(FaultPlan::seeded(1, &[], 1, Span::Tasks(1)).is_err());
        assert_eq!("panic".parse::<KillMode>(), Ok(KillMode::Panic));
        assert!("maim".parse::<KillMode>().is_err());
    }

    #[test]
    fn partitions_route_and_expire() {
        let clock = Clock::manual();
        let state = FaultState::default();
        let exec = ActorPath::parse("/node/nm-host1/c1/executor-1").unwrap();
        let driver = ActorPath::parse("/node/nm-host1/c0/driver-endpoint").unwrap();
        assert_eq!(state.route(&clock, Some(&exec), &driver), Route::Deliver);
        state.add(Partition {
            target: "*/executor-1".into(),
            glob: PathGlob::parse("*/executor-1").unwrap(),
            mode: PartitionMode::Drop,
            until: Duration::from_secs(10),
        });
        assert_eq!(state.route(&clock, Some(&exec), &driver), Route::Drop);
        assert_eq!(state.route(&clock, Some(&driver), &exec), Route::Drop);
        assert_eq!(state.route(&clock, None, &driver), Route::Deliver);
        clock.advance_now(Duration::from_secs(10));
        assert_eq!(state.route(&clock, Some(&exec), &driver), Route::Deliver);
        assert!(!state.active.load(Ordering::Acquire));
    }

    #[test]
    fn heal_ends_the_partitions_named_or_all() {
        let clock = Clock::manual();
        let state = FaultState::default();
        let rm = ActorPath::parse("/node/rm").unwrap();
        let exec = ActorPath::parse("/node/nm-host1/c1/executor-1").unwrap();
        for target in ["/node/rm", "*/executor-1"] {
            state.add(Partition {
                target: target.into(),
                glob: PathGlob::parse(target).unwrap(),
                mode: PartitionMode::Drop,
                until: Duration::from_secs(60),
            });
        }
        assert_eq!(state.heal(clock.now(), Some("/node/other")), Vec::<String>::new());
        assert_eq!(state.route(&clock, None, &rm), Route::Drop);
        assert_eq!(
            state.heal(clock.now(), Some("/node/rm")),
            vec!["/node/rm".to_string()]
        );
        assert_eq!(state.route(&clock, None, &rm), Route::Deliver);
        assert_eq!(state.route(&clock, None, &exec), Route::Drop);
        assert_eq!(state.heal(clock.now(), None), vec!["*/executor-1".to_string()]);
        assert_eq!(state.route(&clock, None, &exec), Route::Deliver);
        assert!(!state.active.load(Ordering::Acquire));
    }
}
