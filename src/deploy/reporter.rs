//! The allocation reporter (ApplicationMaster's "Reporter" thread), at `<container>/am/reporter`.
//!
//! Layer: deploy (the Spark side: spark-submit, the YARN Client, the ApplicationMaster; above context).
//!
//! Its loop (allocationThreadImpl): if the executor failures reached the cap, finish the
//! attempt FAILED with exit 11 ("Max number of executor failures (N) reached"); if every
//! node is excluded, the same with Spark's message; else one allocation heartbeat. An
//! ApplicationAttemptNotFound ends the attempt with exit 12; other errors are counted and
//! `spark.yarn.scheduler.reporterThread.maxFailures` in a row end it with exit 12. Then it
//! sleeps: while containers or loss reasons are pending (or fewer executors run than
//! wanted), the interval starts at
//! `spark.yarn.scheduler.initial-allocation.interval` and doubles up to the heartbeat
//! interval; otherwise it is the heartbeat interval (`spark.yarn.scheduler.heartbeat.interval-ms`,
//! at most half the AM expiry). ResetAllocatorInterval (a new target, a loss-reason
//! question) wakes it early, but never sooner than the initial interval after its last run.

use std::time::Duration;

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, Message, SpawnHandle, WrapFuture};

use super::application_master::{exit_code, Finish};
use super::yarn_allocator::{AllocateError, AllocateResources, AllocatorStatus, GetAllocatorStatus};
use crate::conf::{self, SparkConf};
use crate::deploy::application_master::AmLifecycleProtocol;
use crate::deploy::yarn_allocator::AllocatorProtocol;
use crate::rpc::EndpointRef;
use crate::runtime::timers::run_later;
use crate::runtime::{ActorPath, Me};
use crate::yarn::records::FinalApplicationStatus;

/// Wakes the reporter for an early heartbeat (resetAllocatorInterval).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ResetAllocatorInterval;

/// The reporter actor; see the module docs.
pub struct Reporter {
    me: Me,
    allocator: EndpointRef<AllocatorProtocol>,
    am: EndpointRef<AmLifecycleProtocol>,
    heartbeat: Duration,
    initial: Duration,
    next: Duration,
    max_failures: u32,
    failures: u32,
    timer: Option<SpawnHandle>,
    last_run: Duration,
    running: bool,
    timeout: Duration,
}

/// `heartbeatInterval = max(0, min(rmExpiry/2, heartbeat.interval-ms))`.
pub fn heartbeat_interval(conf: &SparkConf) -> Duration {
    let expiry = conf
        .get(&conf::RM_AM_EXPIRY_INTERVAL_MS)
        .unwrap_or(Duration::from_secs(120));
    let configured = conf
        .get(&conf::RM_HEARTBEAT_INTERVAL)
        .unwrap_or(Duration::from_secs(3));
    configured.min(expiry / 2)
}

impl Reporter {
    pub fn new(me: Me, conf: &SparkConf, allocator: ActorPath, am: ActorPath) -> Self {
        let heartbeat = heartbeat_interval(conf);
        let initial = conf
            .get(&conf::INITIAL_HEARTBEAT_INTERVAL)
            .unwrap_or(Duration::from_millis(200))
            .min(heartbeat);
        Reporter {
            allocator: me.endpoint(&allocator),
            am: me.endpoint(&am),
            me,
            heartbeat,
            initial,
            next: initial,
            max_failures: conf.get(&conf::MAX_REPORTER_THREAD_FAILURES).unwrap_or(5),
            failures: 0,
            timer: None,
            last_run: Duration::ZERO,
            running: false,
            timeout: conf
                .get(&conf::RPC_ASK_TIMEOUT)
                .unwrap_or(Duration::from_secs(120)),
        }
    }

    fn finish(&self, code: i32, message: String) {
        tracing::error!(exit_code = code, "{message}");
        let _ = self.am.tell(Finish {
            status: FinalApplicationStatus::Failed,
            code,
            message,
        });
    }

    fn schedule(&mut self, ctx: &mut Context<Self>, delay: Duration) {
        if let Some(h) = self.timer.take() {
            ctx.cancel_future(h);
        }
        let clock = self.me.clock().clone();
        self.timer = Some(run_later(ctx, &clock, delay, |act: &mut Reporter, ctx| {
            act.timer = None;
            act.run(ctx);
        }));
    }

    /// One turn of the loop.
    fn run(&mut self, ctx: &mut Context<Self>) {
        if self.running {
            return;
        }
        self.running = true;
        self.last_run = self.me.clock().now();
        let (allocator, timeout) = (self.allocator.clone(), self.timeout);
        let fut = async move {
            let status = allocator.ask(GetAllocatorStatus, timeout).await.ok().flatten();
            if let Some(s) = &status {
                if s.num_failed_executors >= s.max_executor_failures {
                    return Verdict::MaxFailures(s.max_executor_failures);
                }
                if s.all_nodes_excluded {
                    return Verdict::AllExcluded;
                }
            }
            match allocator.ask(AllocateResources, timeout).await {
                Ok(Ok(status)) => Verdict::Allocated(status),
                Ok(Err(AllocateError::NotReady)) => Verdict::Allocated(status.unwrap_or_default()),
                Ok(Err(AllocateError::AttemptNotFound(m))) => Verdict::AttemptNotFound(m),
                Ok(Err(AllocateError::Other(m))) => Verdict::Error(m, status.unwrap_or_default()),
                Err(e) => Verdict::Error(e.to_string(), status.unwrap_or_default()),
            }
        };
        ctx.spawn(fut.into_actor(self).map(|verdict, act, ctx| {
            act.running = false;
            let status = match verdict {
                Verdict::MaxFailures(n) => {
                    act.finish(
                        exit_code::EXIT_MAX_EXECUTOR_FAILURES,
                        format!("Max number of executor failures ({n}) reached"),
                    );
                    return;
                }
                Verdict::AllExcluded => {
                    act.finish(
                        exit_code::EXIT_MAX_EXECUTOR_FAILURES,
                        "Due to executor failures all available nodes are excluded".into(),
                    );
                    return;
                }
                Verdict::AttemptNotFound(m) => {
                    act.failures += 1;
                    act.finish(exit_code::EXIT_REPORTER_FAILURE, m);
                    return;
                }
                Verdict::Error(m, status) => {
                    act.failures += 1;
                    if act.failures >= act.max_failures {
                        act.finish(
                            exit_code::EXIT_REPORTER_FAILURE,
                            format!(
                                "Exception was thrown {} time(s) from Reporter thread.",
                                act.failures
                            ),
                        );
                        return;
                    }
                    tracing::warn!("Reporter thread fails {} time(s) in a row: {m}", act.failures);
                    status
                }
                Verdict::Allocated(status) => {
                    act.failures = 0;
                    status
                }
            };
            // Spark's rule, plus: while fewer executors run or start than wanted (a container
            // just completed, say), the next heartbeat comes as soon as while requests are
            // pending, so replacements are asked for at once rather than a heartbeat later.
            let short = (status.running as u64 + status.starting as u64) < status.target as u64;
            let sleep = if status.pending_allocate > 0 || status.pending_loss_reason_requests > 0 || short {
                let s = act.heartbeat.min(act.next);
                act.next = s.saturating_mul(2);
                tracing::debug!(
                    pending = status.pending_allocate as u64,
                    "Number of pending allocations is {}. Sleeping for {} ms.",
                    status.pending_allocate,
                    s.as_millis()
                );
                s
            } else {
                act.next = act.initial;
                act.heartbeat
            };
            act.schedule(ctx, sleep);
        }));
    }
}

enum Verdict {
    MaxFailures(u32),
    AllExcluded,
    AttemptNotFound(String),
    Error(String, AllocatorStatus),
    Allocated(AllocatorStatus),
}

impl Actor for Reporter {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        tracing::info!(
            heartbeat_ms = self.heartbeat.as_millis() as u64,
            initial_ms = self.initial.as_millis() as u64,
            "Started progress reporter thread with (heartbeat : {}, initial allocation : {}) intervals",
            self.heartbeat.as_millis(),
            self.initial.as_millis()
        );
        self.run(ctx);
    }
}

impl Handler<ResetAllocatorInterval> for Reporter {
    type Result = ();

    fn handle(&mut self, _: ResetAllocatorInterval, ctx: &mut Context<Self>) {
        self.next = self.initial;
        if self.running {
            return;
        }
        let since = self.me.clock().now().saturating_sub(self.last_run);
        self.schedule(ctx, self.initial.saturating_sub(since));
    }
}

crate::protocol! {
    /// What the AM's Reporter is told: allocate again at the fast interval.
    pub ReporterProtocol { ResetAllocatorInterval }
}

crate::speaks!(Reporter: ReporterProtocol);
