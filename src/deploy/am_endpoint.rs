//! AMEndpoint (ApplicationMaster.AMEndpoint, Spark's `YarnAM`), at `<container>/am/am-endpoint`:
//! the AM's side of the conversation with the driver's YarnSchedulerEndpoint.
//!
//! On start it registers with the driver (RegisterClusterManager). It serves the driver's
//! RequestExecutors (new totals for the allocator; a change wakes the reporter so the
//! request reaches the ResourceManager at once), KillExecutors and GetExecutorLossReason
//! (answered by the allocator when the executor's container completes; the reporter is
//! woken so that happens soon). Shutdown from the driver ends the attempt (client mode).

use std::time::Duration;

use actix::{Actor, Context, Handler, ResponseFuture};
use tokio::sync::oneshot;

use super::application_master::{ApplicationMaster, Finish};
use super::reporter::{Reporter, ResetAllocatorInterval};
use super::yarn_allocator::{EnqueueLossReason, KillExecutor, RequestTotalExecutors, YarnAllocator};
use crate::rpc::EndpointRef;
use crate::runtime::{ActorPath, Me};
use crate::scheduler::loss_reason::ExecutorLossReason;
use crate::scheduler::messages::*;
use crate::scheduler::yarn_scheduler_endpoint::YarnSchedulerEndpoint;
use crate::yarn::records::FinalApplicationStatus;

/// How long a loss-reason answer may take before the allocator is assumed gone.
const LOSS_REASON_LIMIT: Duration = Duration::from_secs(3600);

/// The AMEndpoint actor; see the module docs.
pub struct AmEndpoint {
    me: Me,
    allocator: EndpointRef<YarnAllocator>,
    reporter: EndpointRef<Reporter>,
    am: EndpointRef<ApplicationMaster>,
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
        let yse: EndpointRef<YarnSchedulerEndpoint> = self.me.endpoint(&self.driver);
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
            match allocator
                .ask(RequestTotalExecutors(msg), Duration::from_secs(30))
                .await
            {
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
    type Result = Result<bool, String>;

    fn handle(&mut self, msg: KillExecutors, _: &mut Context<Self>) -> Result<bool, String> {
        tracing::info!(
            executors = msg.executor_ids.join(",").as_str(),
            "Driver requested to kill executor(s) {}.",
            msg.executor_ids.join(", ")
        );
        for id in msg.executor_ids {
            if self.allocator.tell(KillExecutor { executor_id: id }).is_err() {
                tracing::warn!("Container allocator is not ready to kill executors yet.");
            }
        }
        Ok(true)
    }
}

impl Handler<GetExecutorLossReason> for AmEndpoint {
    type Result = ResponseFuture<Result<ExecutorLossReason, String>>;

    fn handle(&mut self, msg: GetExecutorLossReason, _: &mut Context<Self>) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        let sent = self.allocator.tell(EnqueueLossReason {
            executor_id: msg.executor_id.clone(),
            reply: tx,
        });
        let _ = self.reporter.tell(ResetAllocatorInterval);
        Box::pin(async move {
            if sent.is_err() {
                // Spark: no allocator → never answered; the caller's time-out decides.
                tracing::warn!("Container allocator is not ready to find executor loss reasons yet.");
            }
            match tokio::time::timeout(LOSS_REASON_LIMIT, rx).await {
                Ok(Ok(answer)) => answer,
                _ => Err(format!("no loss reason for executor {}", msg.executor_id)),
            }
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
