//! YarnSchedulerEndpoint (YarnSchedulerBackend.YarnSchedulerEndpoint, Spark's
//! `YarnScheduler`): the driver's side of the conversation with the ApplicationMaster.
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).
//!
//! The AM's endpoint registers here (RegisterClusterManager): a new AM, the first one
//! included, resets the driver's side (YarnSchedulerBackend.reset: the backend forgets its
//! requested totals and removes every executor it still knows as stale; the
//! ExecutorAllocationManager, with dynamic allocation, is told through its inbox to go back
//! to its initial target and forget its executors). The same AM's endpoint registering again after its own restart
//! (same path) resets nothing. The driver's executor requests and kills go through here to
//! the AM (answered `false` with Spark's warning while no AM has registered); the
//! allocator's RemoveExecutor comes back through here to the DriverEndpoint, and so does its
//! DecommissionExecutorsOnHost for a node YARN is decommissioning; and when an executor
//! disconnects, this endpoint asks the AM for the
//! loss reason and turns the answer (or its absence) into RemoveExecutor.

use std::time::Duration;

use actix::{Actor, Context, Handler, Message, ResponseFuture};

use super::executor_allocation_manager::AllocationMessage;
use super::loss_reason::ExecutorLossReason;
use super::messages::*;
use crate::rpc::EndpointRef;
use crate::runtime::protocol::Carries;
use crate::runtime::{ActorPath, InboxSender, Kept, Me, Terminated};

/// The YarnSchedulerEndpoint actor; see the module docs.
pub struct YarnSchedulerEndpoint {
    me: Me,
    driver: EndpointRef<DriverProtocol>,
    /// The registered AM's endpoint, kept across restarts of this endpoint.
    am: Kept<Option<ActorPath>>,
    /// The ExecutorAllocationManager's inbox (dynamic allocation): told to reset when an AM
    /// registers.
    allocation: Option<InboxSender<AllocationMessage>>,
    ask_timeout: Duration,
}

impl YarnSchedulerEndpoint {
    pub fn new(
        me: Me,
        driver: ActorPath,
        am: Kept<Option<ActorPath>>,
        allocation: Option<InboxSender<AllocationMessage>>,
        ask_timeout: Duration,
    ) -> Self {
        let driver = me.endpoint(&driver);
        YarnSchedulerEndpoint {
            me,
            driver,
            am,
            allocation,
            ask_timeout,
        }
    }

    fn am(&self) -> Option<EndpointRef<AmProtocol>> {
        self.am.lock().as_ref().map(|p| self.me.endpoint(p))
    }
}

impl Actor for YarnSchedulerEndpoint {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let known = self.am.lock().clone();
        if let Some(am) = known {
            let me = self.me.clone();
            me.watch(ctx, &am);
        }
    }
}

impl Handler<RegisterClusterManager> for YarnSchedulerEndpoint {
    type Result = ();

    fn handle(&mut self, msg: RegisterClusterManager, ctx: &mut Context<Self>) {
        let previous = self.am.lock().replace(msg.am.clone());
        let me = self.me.clone();
        me.watch(ctx, &msg.am);
        if previous.as_ref() == Some(&msg.am) {
            // The same AM's endpoint, restarted (re-registration on every start): nothing
            // about its executors changed.
            tracing::info!(
                am = msg.am.as_str(),
                "ApplicationMaster endpoint {} registered again after a restart",
                msg.am
            );
            return;
        }
        tracing::info!(am = msg.am.as_str(), "ApplicationMaster registered as {}", msg.am);
        // reset(): the backend's, then the allocation manager's.
        if let Err(e) = self.driver.tell(ResetSchedulerBackend) {
            tracing::warn!("cannot reset the scheduler backend: {e}");
        }
        if let Some(inbox) = &self.allocation {
            let _ = inbox.send(AllocationMessage::Reset);
        }
    }
}

impl YarnSchedulerEndpoint {
    /// Forwards an executor request or kill to the AM; `false` with Spark's warning while no
    /// AM has registered.
    fn forward_to_am<M>(
        &self,
        msg: M,
        name: &'static str,
        before_am: &'static str,
    ) -> ResponseFuture<Result<bool, String>>
    where
        M: Message<Result = Result<bool, String>> + Send + 'static,
        AmProtocol: Carries<M>,
    {
        let Some(am) = self.am() else {
            tracing::warn!("{before_am}");
            return Box::pin(async { Ok(false) });
        };
        let timeout = self.ask_timeout;
        Box::pin(async move {
            am.ask(msg, timeout).await.unwrap_or_else(|e| {
                tracing::warn!("Sending {name} to AM was unsuccessful: {e}");
                Err(e.to_string())
            })
        })
    }
}

impl Handler<RequestExecutors> for YarnSchedulerEndpoint {
    type Result = ResponseFuture<Result<bool, String>>;

    fn handle(&mut self, msg: RequestExecutors, _: &mut Context<Self>) -> Self::Result {
        self.forward_to_am(
            msg,
            "RequestExecutors",
            "Attempted to request executors before the AM has registered!",
        )
    }
}

impl Handler<KillExecutors> for YarnSchedulerEndpoint {
    type Result = ResponseFuture<Result<bool, String>>;

    fn handle(&mut self, msg: KillExecutors, _: &mut Context<Self>) -> Self::Result {
        self.forward_to_am(
            msg,
            "KillExecutors",
            "Attempted to kill executors before the AM has registered!",
        )
    }
}

impl Handler<RemoveExecutor> for YarnSchedulerEndpoint {
    type Result = ();

    fn handle(&mut self, msg: RemoveExecutor, _: &mut Context<Self>) {
        tracing::warn!(
            executor_id = msg.executor_id.as_str(),
            "Requesting driver to remove executor {} for reason {}",
            msg.executor_id,
            msg.reason
        );
        let _ = self.driver.tell(msg);
    }
}

impl Handler<DecommissionExecutorsOnHost> for YarnSchedulerEndpoint {
    type Result = ();

    /// The allocator saw the host put into DECOMMISSIONING: to the DriverEndpoint.
    fn handle(&mut self, msg: DecommissionExecutorsOnHost, _: &mut Context<Self>) {
        tracing::info!(
            host = msg.host.as_str(),
            "Requesting driver to decommission all executors on {}",
            msg.host
        );
        let _ = self.driver.tell(msg);
    }
}

impl Handler<RetrieveLastAllocatedExecutorId> for YarnSchedulerEndpoint {
    type Result = ResponseFuture<u64>;

    fn handle(&mut self, msg: RetrieveLastAllocatedExecutorId, _: &mut Context<Self>) -> ResponseFuture<u64> {
        let (driver, timeout) = (self.driver.clone(), self.ask_timeout);
        Box::pin(async move { driver.ask(msg, timeout).await.unwrap_or(0) })
    }
}

impl Handler<ExecutorDisconnected> for YarnSchedulerEndpoint {
    type Result = ();

    /// handleExecutorDisconnectedFromDriver: ask the AM why, then remove the executor.
    fn handle(&mut self, msg: ExecutorDisconnected, _: &mut Context<Self>) {
        let driver = self.driver.clone();
        let id = msg.executor_id;
        let Some(am) = self.am() else {
            let _ = driver.tell(RemoveExecutor {
                executor_id: id,
                reason: ExecutorLossReason::process_lost("AM is not yet registered."),
            });
            return;
        };
        let timeout = self.ask_timeout;
        actix::spawn(async move {
            let answer = match am
                .ask(
                    GetExecutorLossReason {
                        executor_id: id.clone(),
                    },
                    timeout,
                )
                .await
            {
                Ok(answer) => answer,
                Err(e) => Err(e.to_string()),
            };
            let reason = answer.unwrap_or_else(|e| {
                tracing::warn!(
                    executor_id = id.as_str(),
                    "Attempted to get executor loss reason for executor id {id}, but got no response ({e}). Marking as agent lost."
                );
                ExecutorLossReason::process_lost("Executor Process Lost")
            });
            let _ = driver.tell(RemoveExecutor {
                executor_id: id,
                reason,
            });
        });
    }
}

impl Handler<Terminated> for YarnSchedulerEndpoint {
    type Result = ();

    /// The AM's endpoint ended. If it failed, its supervisor restarts it at the same path
    /// (requests reach the new incarnation by path, which registers again); if it was shut
    /// down or its subtree gave up, the AM is gone.
    fn handle(&mut self, msg: Terminated, _: &mut Context<Self>) {
        let mut am = self.am.lock();
        if am.as_ref() != Some(&msg.path) {
            return;
        }
        let restarting = matches!(
            msg.reason,
            crate::runtime::ExitReason::Panic { .. } | crate::runtime::ExitReason::Killed { .. }
        );
        if restarting {
            tracing::warn!(
                am = msg.path.as_str(),
                "ApplicationMaster endpoint failed ({}); expecting it back at the same path",
                msg.reason
            );
        } else {
            tracing::warn!(
                am = msg.path.as_str(),
                "ApplicationMaster has disassociated: {}",
                msg.reason
            );
            *am = None;
        }
    }
}

impl Handler<Shutdown> for YarnSchedulerEndpoint {
    type Result = ();

    /// The backend is stopping (Spark 4's signalDriverStop): tell the AM.
    fn handle(&mut self, msg: Shutdown, _: &mut Context<Self>) {
        if let Some(am) = self.am() {
            let _ = am.tell(msg);
        }
    }
}

crate::speaks!(YarnSchedulerEndpoint: YarnSchedulerProtocol);
