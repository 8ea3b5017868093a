//! AMEndpoint (ApplicationMaster.AMEndpoint, Spark's `YarnAM`), at `<container>/am/am-endpoint`:
//! the AM's side of the conversation with the driver's YarnSchedulerEndpoint.
//!
//! Layer: deploy (the Spark side: spark-submit, the YARN Client, the ApplicationMaster; above context).
//!
//! On start it registers with the driver (RegisterClusterManager). It serves the driver's
//! RequestExecutors (new totals for the allocator; a change wakes the reporter so the
//! request reaches the ResourceManager at once), KillExecutors and GetExecutorLossReason
//! (answered by the allocator when the executor's container completes; the reporter is
//! woken so that happens soon). Shutdown from the driver ends the attempt (client mode).
//!
//! It keeps nothing across restarts: a new incarnation registers with the driver again (the
//! YarnSchedulerEndpoint takes the same endpoint's registration as the same AM). What it
//! asks the allocator goes again while the allocator cannot be reached (a request that died
//! with a restarting allocator's mailbox, or a loss-reason question whose reply channel was
//! dropped unanswered with it), up to 100 times, 10 ms apart on the cluster clock.

use std::time::Duration;

use actix::{Actor, Context, Handler, Message, ResponseFuture};
use tokio::sync::oneshot;

use super::application_master::Finish;
use super::reporter::ResetAllocatorInterval;
use super::yarn_allocator::{EnqueueLossReason, KillExecutor, RequestTotalExecutors};
use crate::deploy::application_master::AmLifecycleProtocol;
use crate::deploy::reporter::ReporterProtocol;
use crate::deploy::yarn_allocator::AllocatorProtocol;
use crate::rpc::{AskError, EndpointRef};
use crate::runtime::protocol::Carries;
use crate::runtime::{ActorPath, Me};
use crate::scheduler::loss_reason::ExecutorLossReason;
use crate::scheduler::messages::*;
use crate::yarn::records::FinalApplicationStatus;

/// How long a loss-reason answer may take before the allocator is assumed gone.
const LOSS_REASON_LIMIT: Duration = Duration::from_secs(3600);

/// How often a request to the allocator is tried while it cannot be reached, and the pause
/// between tries.
const ALLOCATOR_TRIES: u32 = 100;
const RETRY_DELAY: Duration = Duration::from_millis(10);

/// Asks the allocator, again while it cannot be reached (it is restarting).
async fn ask_allocator<M>(
    allocator: &EndpointRef<AllocatorProtocol>,
    msg: M,
    timeout: Duration,
) -> Result<M::Result, AskError>
where
    M: Message + Clone + Send + 'static,
    M::Result: Send,
    AllocatorProtocol: Carries<M>,
{
    allocator
        .ask_while_restarting(msg, timeout, ALLOCATOR_TRIES, RETRY_DELAY)
        .await
}

/// The AMEndpoint actor; see the module docs.
pub struct AmEndpoint {
    me: Me,
    allocator: EndpointRef<AllocatorProtocol>,
    reporter: EndpointRef<ReporterProtocol>,
    am: EndpointRef<AmLifecycleProtocol>,
    driver: ActorPath,
}

impl AmEndpoint {
    pub fn new(me: Me, allocator: ActorPath, reporter: ActorPath, am: ActorPath, driver: ActorPath) -> Self {
        AmEndpoint {
            allocator: me.endpoint(&allocator),
            reporter: me.endpoint(&reporter),
            am: me.endpoint(&am),
            driver,
            me,
        }
    }
}

impl Actor for AmEndpoint {
    type Context = Context<Self>;

    fn started(&mut self, _: &mut Context<Self>) {
        let yse: EndpointRef<YarnSchedulerProtocol> = self.me.endpoint(&self.driver);
        tracing::info!(
            driver = self.driver.as_str(),
            "Registering the AMEndpoint with the driver at {}",
            self.driver
        );
        if let Err(e) = yse.tell(RegisterClusterManager {
            am: self.me.path().clone(),
        }) {
            tracing::warn!("cannot reach the driver to register: {e}");
        }
    }
}

impl Handler<RequestExecutors> for AmEndpoint {
    type Result = ResponseFuture<Result<bool, String>>;

    fn handle(&mut self, msg: RequestExecutors, _: &mut Context<Self>) -> Self::Result {
        let (allocator, reporter) = (self.allocator.clone(), self.reporter.clone());
        Box::pin(async move {
            match ask_allocator(&allocator, RequestTotalExecutors(msg), Duration::from_secs(30)).await {
                Ok(changed) => {
                    if changed {
                        let _ = reporter.tell(ResetAllocatorInterval);
                    }
                    Ok(true)
                }
                Err(e) => {
                    tracing::warn!("Container allocator is not ready to request executors yet: {e}");
                    Ok(false)
                }
            }
        })
    }
}

impl Handler<KillExecutors> for AmEndpoint {
    type Result = ResponseFuture<Result<bool, String>>;

    fn handle(&mut self, msg: KillExecutors, _: &mut Context<Self>) -> Self::Result {
        tracing::info!(
            executors = msg.executor_ids.join(",").as_str(),
            "Driver requested to kill executor(s) {}.",
            msg.executor_ids.join(", ")
        );
        let allocator = self.allocator.clone();
        Box::pin(async move {
            for id in msg.executor_ids {
                let kill = KillExecutor { executor_id: id };
                if let Err(e) = ask_allocator(&allocator, kill, Duration::from_secs(30)).await {
                    tracing::warn!("Container allocator is not ready to kill executors yet: {e}");
                }
            }
            Ok(true)
        })
    }
}

impl Handler<GetExecutorLossReason> for AmEndpoint {
    type Result = ResponseFuture<Result<ExecutorLossReason, String>>;

    fn handle(&mut self, msg: GetExecutorLossReason, _: &mut Context<Self>) -> Self::Result {
        let allocator = self.allocator.clone();
        let _ = self.reporter.tell(ResetAllocatorInterval);
        let clock = self.me.clock().clone();
        Box::pin(async move {
            let id = msg.executor_id;
            for _ in 0..ALLOCATOR_TRIES {
                let (tx, rx) = oneshot::channel();
                let sent = allocator.tell(EnqueueLossReason {
                    executor_id: id.clone(),
                    reply: tx,
                });
                if sent.is_ok() {
                    match clock.timeout(LOSS_REASON_LIMIT, rx).await {
                        Ok(Ok(answer)) => return answer,
                        Ok(Err(_)) => {} // dropped unanswered: the allocator died; ask again
                        Err(_) => break,
                    }
                }
                clock.sleep(RETRY_DELAY).await;
            }
            // Spark: no allocator → never answered; the caller's time-out decides.
            tracing::warn!("Container allocator is not ready to find executor loss reasons yet.");
            Err(format!("no loss reason for executor {id}"))
        })
    }
}

impl Handler<Shutdown> for AmEndpoint {
    type Result = ();

    /// The driver is stopping (client mode; Spark 4's signalDriverStop).
    fn handle(&mut self, msg: Shutdown, _: &mut Context<Self>) {
        let (status, message) = if msg.exit_code == 0 {
            (FinalApplicationStatus::Succeeded, String::new())
        } else {
            (
                FinalApplicationStatus::Failed,
                format!("Driver stopped with exit code {}", msg.exit_code),
            )
        };
        tracing::info!(
            exit_code = msg.exit_code,
            "The driver is stopping; finishing the attempt"
        );
        let _ = self.am.tell(Finish {
            status,
            code: msg.exit_code,
            message,
        });
    }
}

crate::speaks!(AmEndpoint: AmProtocol);
