//! The ResourceManager actor at `/node/rm`: it takes the messages of the protocols it
//! speaks, asks its core ([`ResourceManagerCore`], kept by its supervisor) what they change, and
//! carries out the core's [`Effect`]s: AM containers started on NodeManagers (with retries
//! while a NodeManager restarts; a launch that fails completes the container, so the
//! attempt fails), containers stopped, report waiters answered, nodes asked to register
//! again, graceful-decommission timers armed. It answers node heartbeats and runs the
//! liveness monitor: every third of `yarn.nm.liveness-monitor.expiry-interval-ms` on the
//! cluster clock it expires the nodes silent for the whole interval (LOST).
//!
//! Layer: yarn. What is not kept: the report waiters (clients ask again) and the timers
//! (a new incarnation arms the decommission timeouts again from the kept deadlines, and
//! the liveness check afresh, giving every node a whole interval).
//! [`ask_rm`] is how an ApplicationMaster reaches it, retrying while it restarts.

use std::time::Duration;

use actix::{Actor, Context, Handler, Message, MessageResult, ResponseFuture};
use tokio::sync::oneshot;

use super::core::{Effect, ReportKey, ResourceManagerCore, ResyncReason, RmConfig};
use crate::rpc::{AskError, EndpointRef};
use crate::runtime::protocol::Carries;
use crate::runtime::timers::{run_at_fixed_rate, run_later};
use crate::runtime::{Kept, Me};
use crate::yarn::node_manager::node_manager_path;
use crate::yarn::protocol::*;
use crate::yarn::records::*;

/// How often [`ask_rm`] tries while the RM cannot be reached, and the pause between tries.
const RM_TRIES: u32 = 100;
const RM_RETRY_DELAY: Duration = Duration::from_millis(10);

/// Asks the ResourceManager as an ApplicationMaster's RM proxy does: while the RM cannot be
/// reached (the ask died with its incarnation's mailbox, or nothing is registered at its
/// path while it restarts) the ask is sent again after a short pause, up to
/// 100 times (one second); a time-out or the RM's own answer ends it.
pub async fn ask_rm<P, M>(rm: &EndpointRef<P>, msg: M, timeout: Duration) -> Result<M::Result, AskError>
where
    M: Message + Clone + Send + 'static,
    M::Result: Send,
    P: Carries<M>,
{
    rm.ask_while_restarting(msg, timeout, RM_TRIES, RM_RETRY_DELAY)
        .await
}

struct ReportWaiter {
    /// Which wait this is: its own time limit answers it alone, not the other waits of the
    /// application (a client following it every 100 ms must not cut short another's wait).
    id: u64,
    app: ApplicationId,
    known: ReportKey,
    reply: oneshot::Sender<Result<ApplicationReport, YarnError>>,
}

/// The ResourceManager actor; see the module docs.
pub struct ResourceManager {
    me: Me,
    config: RmConfig,
    state: Kept<ResourceManagerCore>,
    waiters: Vec<ReportWaiter>,
    /// The id of the next report waiter.
    next_waiter: u64,
}

impl ResourceManager {
    pub fn new(me: Me, config: RmConfig, state: Kept<ResourceManagerCore>) -> Self {
        ResourceManager {
            me,
            config,
            state,
            waiters: Vec::new(),
            next_waiter: 0,
        }
    }

    fn now(&self) -> u64 {
        self.me.clock().epoch_millis()
    }

    fn nm(&self, host: &str) -> EndpointRef<ContainerManagementProtocol> {
        self.me.endpoint(&node_manager_path(host))
    }

    /// Carries out what the core decided, in order.
    fn carry_out(&mut self, effects: Vec<Effect>, ctx: &mut Context<Self>) {
        for effect in effects {
            match effect {
                Effect::LaunchAm { container, launch } => self.launch(container, launch),
                Effect::StopContainer {
                    host,
                    container_id,
                    requester,
                } => {
                    let _ = self.nm(&host).tell(StopContainer {
                        container_id,
                        requester,
                    });
                }
                Effect::AnswerWaiters { app, key, report } => {
                    let (due, keep): (Vec<ReportWaiter>, Vec<ReportWaiter>) =
                        std::mem::take(&mut self.waiters)
                            .into_iter()
                            .partition(|w| w.app == app && w.known != key);
                    self.waiters = keep;
                    for w in due {
                        let _ = w.reply.send(Ok(report.clone()));
                    }
                }
                Effect::Resync { host, reason } => {
                    if let Err(e) = self.nm(&host).speaking::<NodeActionProtocol>().tell(Resync) {
                        match reason {
                            ResyncReason::Restarted => tracing::warn!(
                                host = host.as_str(),
                                "cannot ask {host} to resynchronise: {e}"
                            ),
                            ResyncReason::Recommissioned => tracing::warn!(
                                host = host.as_str(),
                                "cannot ask {host} to register again: {e}"
                            ),
                        }
                    }
                }
                Effect::ArmDecommissionTimeout {
                    host,
                    after,
                    generation,
                } => {
                    let clock = self.me.clock().clone();
                    run_later(ctx, &clock, after, move |act: &mut Self, ctx| {
                        let now = act.now();
                        let effects = act.state.lock().decommission_timed_out(&host, generation, now);
                        act.carry_out(effects, ctx);
                    });
                }
            }
        }
    }

    /// Starts an AM container on its NodeManager (AMLauncher): a NodeManager that cannot be
    /// reached is asked again; a start that fails completes the container, failing its
    /// attempt.
    fn launch(&mut self, container: Container, launch: ContainerLaunchContext) {
        let nm = self.nm(&container.node);
        let host = container.node.clone();
        let id = container.id;
        let rm: EndpointRef<ResourceTracker> = self.me.endpoint(self.me.path());
        let launched: EndpointRef<AmLaunchProtocol> = rm.speaking();
        let timeout = self.config.ask_timeout;
        let clock = self.me.clock().clone();
        actix::spawn(async move {
            // A NodeManager that cannot be reached (restarting) is asked again; starting a
            // container is idempotent there.
            let start = StartContainer { container, launch };
            let mut tries = 0;
            let result = loop {
                tries += 1;
                match nm.ask(start.clone(), timeout).await {
                    Err(AskError::Died { .. } | AskError::Lookup(_)) if tries < RM_TRIES => {
                        clock.sleep(RM_RETRY_DELAY).await
                    }
                    other => break other,
                }
            };
            let failure = match result {
                Ok(Ok(())) => {
                    let _ = launched.tell(AmContainerLaunched { container_id: id });
                    None
                }
                Ok(Err(e)) => Some(e.to_string()),
                Err(e) => Some(e.to_string()),
            };
            if let Some(e) = failure {
                // The container never ran: report it as completed so the attempt fails.
                let _ = rm.tell(NodeStatusUpdate {
                    host,
                    completed: vec![ContainerStatus {
                        container_id: id,
                        state: ContainerState::Complete,
                        exit_status: exit_status::INVALID,
                        diagnostics: format!("Container launch failed: {e}"),
                    }],
                });
            }
        });
    }
}

impl Actor for ResourceManager {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let now = self.now();
        let effects = self.state.lock().recover(now, self.me.incarnation() > 1);
        self.carry_out(effects, ctx);
        // The liveness monitor (NMLivelinessMonitor): every third of the expiry interval,
        // the nodes silent for the whole interval are expired.
        let period = self.config.liveness_check_period();
        let clock = self.me.clock().clone();
        run_at_fixed_rate(ctx, &clock, period, period, |act: &mut Self, ctx| {
            let now = act.now();
            let effects = act.state.lock().expire_nodes(now);
            act.carry_out(effects, ctx);
        });
    }
}

impl Handler<RegisterNode> for ResourceManager {
    type Result = Result<NodeRegistration, YarnError>;

    fn handle(&mut self, msg: RegisterNode, ctx: &mut Context<Self>) -> Self::Result {
        let now = self.now();
        let (answer, effects) = self.state.lock().register_node(msg, now);
        self.carry_out(effects, ctx);
        answer
    }
}

impl Handler<NodeHeartbeat> for ResourceManager {
    type Result = MessageResult<NodeHeartbeat>;

    fn handle(&mut self, msg: NodeHeartbeat, ctx: &mut Context<Self>) -> MessageResult<NodeHeartbeat> {
        let now = self.now();
        let (answer, effects) = self.state.lock().node_heartbeat(msg, now);
        self.carry_out(effects, ctx);
        MessageResult(answer)
    }
}

impl Handler<NodeStatusUpdate> for ResourceManager {
    type Result = ();

    fn handle(&mut self, msg: NodeStatusUpdate, ctx: &mut Context<Self>) {
        let now = self.now();
        let effects = self.state.lock().node_status_update(msg.completed, now);
        self.carry_out(effects, ctx);
    }
}

impl Handler<GetNewApplication> for ResourceManager {
    type Result = Result<NewApplication, YarnError>;

    fn handle(&mut self, _: GetNewApplication, _: &mut Context<Self>) -> Self::Result {
        Ok(self.state.lock().new_application())
    }
}

impl Handler<SubmitApplication> for ResourceManager {
    type Result = Result<(), YarnError>;

    fn handle(&mut self, msg: SubmitApplication, ctx: &mut Context<Self>) -> Self::Result {
        let now = self.now();
        let (answer, effects) = self.state.lock().submit_application(msg.0, now);
        self.carry_out(effects, ctx);
        answer
    }
}

impl Handler<GetApplicationReport> for ResourceManager {
    type Result = ResponseFuture<Result<ApplicationReport, YarnError>>;

    fn handle(&mut self, msg: GetApplicationReport, ctx: &mut Context<Self>) -> Self::Result {
        let found = self.state.lock().report(&msg.app_id);
        let Some((key, report)) = found else {
            return Box::pin(async move { Err(YarnError::ApplicationNotFound(msg.app_id)) });
        };
        match msg.wait {
            Some(wait) if wait.known == key && !key.0.is_final() => {
                let (tx, rx) = oneshot::channel();
                self.next_waiter += 1;
                let id = self.next_waiter;
                self.waiters.push(ReportWaiter {
                    id,
                    app: msg.app_id,
                    known: wait.known,
                    reply: tx,
                });
                let app = msg.app_id;
                let clock = self.me.clock().clone();
                run_later(ctx, &clock, wait.max, move |act: &mut ResourceManager, _| {
                    let report = act.state.lock().report(&app).map(|(_, r)| r);
                    let (due, keep): (Vec<ReportWaiter>, Vec<ReportWaiter>) =
                        std::mem::take(&mut act.waiters)
                            .into_iter()
                            .partition(|w| w.id == id);
                    act.waiters = keep;
                    for w in due {
                        let _ = w
                            .reply
                            .send(report.clone().ok_or(YarnError::ApplicationNotFound(app)));
                    }
                });
                Box::pin(async move {
                    rx.await
                        .unwrap_or(Err(YarnError::Other("the ResourceManager stopped".into())))
                })
            }
            _ => Box::pin(async move { Ok(report) }),
        }
    }
}

impl Handler<KillApplication> for ResourceManager {
    type Result = Result<(), YarnError>;

    fn handle(&mut self, msg: KillApplication, ctx: &mut Context<Self>) -> Self::Result {
        let now = self.now();
        let (answer, effects) = self
            .state
            .lock()
            .kill_application(msg.app_id, &msg.diagnostics, now);
        self.carry_out(effects, ctx);
        answer
    }
}

impl Handler<GetClusterNodes> for ResourceManager {
    type Result = MessageResult<GetClusterNodes>;

    fn handle(&mut self, _: GetClusterNodes, _: &mut Context<Self>) -> MessageResult<GetClusterNodes> {
        MessageResult(self.state.lock().node_reports())
    }
}

impl Handler<GetApplications> for ResourceManager {
    type Result = MessageResult<GetApplications>;

    fn handle(&mut self, msg: GetApplications, _: &mut Context<Self>) -> MessageResult<GetApplications> {
        let listed = self.state.lock().applications(&msg.states, &msg.types);
        tracing::debug!(
            applications = listed.len() as u64,
            "GetApplications (states {:?}, types {:?}): {} application(s)",
            msg.states,
            msg.types,
            listed.len()
        );
        MessageResult(listed)
    }
}

impl Handler<GetContainers> for ResourceManager {
    type Result = Result<Vec<ContainerReport>, YarnError>;

    fn handle(&mut self, msg: GetContainers, _: &mut Context<Self>) -> Self::Result {
        let answer = self.state.lock().containers(&msg.attempt_id);
        tracing::debug!(
            attempt_id = %msg.attempt_id,
            containers = answer.as_ref().map(|c| c.len() as u64).unwrap_or(0),
            "GetContainers for {}: {}",
            msg.attempt_id,
            match &answer {
                Ok(c) => format!("{} container(s)", c.len()),
                Err(e) => e.to_string(),
            }
        );
        answer
    }
}

impl Handler<GetNodeReports> for ResourceManager {
    type Result = MessageResult<GetNodeReports>;

    fn handle(&mut self, msg: GetNodeReports, _: &mut Context<Self>) -> MessageResult<GetNodeReports> {
        MessageResult(self.state.lock().node_reports_in(&msg.states))
    }
}

impl Handler<GetClusterMetrics> for ResourceManager {
    type Result = MessageResult<GetClusterMetrics>;

    fn handle(&mut self, _: GetClusterMetrics, _: &mut Context<Self>) -> MessageResult<GetClusterMetrics> {
        MessageResult(self.state.lock().cluster_metrics())
    }
}

impl Handler<GetQueueInfo> for ResourceManager {
    type Result = MessageResult<GetQueueInfo>;

    fn handle(&mut self, _: GetQueueInfo, _: &mut Context<Self>) -> MessageResult<GetQueueInfo> {
        MessageResult(self.state.lock().queue_infos())
    }
}

impl Handler<RefreshNodes> for ResourceManager {
    type Result = Result<Vec<NodeReport>, YarnError>;

    fn handle(&mut self, msg: RefreshNodes, ctx: &mut Context<Self>) -> Self::Result {
        let now = self.now();
        let (answer, effects) = self.state.lock().refresh_nodes(&msg, now);
        self.carry_out(effects, ctx);
        answer
    }
}

impl Handler<ListNodes> for ResourceManager {
    type Result = MessageResult<ListNodes>;

    fn handle(&mut self, _: ListNodes, _: &mut Context<Self>) -> MessageResult<ListNodes> {
        MessageResult(self.state.lock().all_node_reports())
    }
}

impl Handler<GetApplicationAcls> for ResourceManager {
    type Result = Result<ApplicationAcls, YarnError>;

    fn handle(&mut self, msg: GetApplicationAcls, _: &mut Context<Self>) -> Self::Result {
        self.state
            .lock()
            .acls(&msg.app_id)
            .ok_or(YarnError::ApplicationNotFound(msg.app_id))
    }
}

impl Handler<GetContainerOutput> for ResourceManager {
    type Result = ResponseFuture<Result<String, YarnError>>;

    fn handle(&mut self, msg: GetContainerOutput, _: &mut Context<Self>) -> Self::Result {
        let host = self
            .state
            .lock()
            .container_host(&msg.container_id)
            .map(str::to_string);
        let Some(host) = host else {
            return Box::pin(async move {
                Err(YarnError::Other(format!(
                    "unknown container {}",
                    msg.container_id
                )))
            });
        };
        let (nm, timeout) = (self.nm(&host), self.config.ask_timeout);
        Box::pin(async move {
            nm.ask(
                ReadContainerOutput {
                    container_id: msg.container_id,
                },
                timeout,
            )
            .await
            .unwrap_or_else(|e| {
                Err(YarnError::Other(format!(
                    "cannot read the output from {host}: {e}"
                )))
            })
        })
    }
}

impl Handler<RegisterApplicationMaster> for ResourceManager {
    type Result = Result<RegisterResponse, YarnError>;

    fn handle(&mut self, msg: RegisterApplicationMaster, ctx: &mut Context<Self>) -> Self::Result {
        let now = self.now();
        let (answer, effects) = self.state.lock().register_application_master(&msg, now);
        self.carry_out(effects, ctx);
        answer
    }
}

impl Handler<Allocate> for ResourceManager {
    type Result = Result<AllocateResponse, YarnError>;

    fn handle(&mut self, msg: Allocate, ctx: &mut Context<Self>) -> Self::Result {
        let now = self.now();
        let (answer, effects) = self.state.lock().allocate(&msg, now);
        self.carry_out(effects, ctx);
        answer
    }
}

impl Handler<FinishApplicationMaster> for ResourceManager {
    type Result = Result<(), YarnError>;

    fn handle(&mut self, msg: FinishApplicationMaster, ctx: &mut Context<Self>) -> Self::Result {
        let now = self.now();
        let (answer, effects) = self.state.lock().finish_application_master(&msg, now);
        self.carry_out(effects, ctx);
        answer
    }
}

/// The NodeManager started an attempt's AM container (AMLauncher's LAUNCHED event): the
/// attempt now waits for its AM to register.
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
struct AmContainerLaunched {
    container_id: ContainerId,
}

impl Handler<AmContainerLaunched> for ResourceManager {
    type Result = ();

    fn handle(&mut self, msg: AmContainerLaunched, _: &mut Context<Self>) {
        let now = self.now();
        self.state.lock().am_container_launched(msg.container_id, now);
    }
}

crate::protocol! {
    /// The ResourceManager's own launch task: the AM container started.
    AmLaunchProtocol { AmContainerLaunched }
}

crate::speaks!(
    ResourceManager: ApplicationClientProtocol,
    ApplicationMasterProtocol,
    ResourceTracker,
    ResourceManagerAdministrationProtocol,
    AmLaunchProtocol,
);
