//! The NodeManager actor at `/node/nm-<host>/node-manager`: it starts each container's
//! launch command through the node's launcher registry as a subtree under the node's
//! supervisor, stops containers, watches them end, and talks to the ResourceManager
//! (registration, node heartbeats, NodeStatusUpdate); its core ([`NodeManagerCore`], kept by
//! the node's supervisor) holds the container records and decides what each start, stop and
//! end means.
//!
//! Once registered it heartbeats every `yarn.resourcemanager.nodemanagers.heartbeat-interval-ms`
//! on the cluster clock (NodeStatusUpdaterImpl): one [`NodeHeartbeat`] at a time, with its
//! running containers and the completed statuses not yet taken; the answer's node action
//! says carry on (its containers to clean up are stopped), register again (RESYNC: the RM
//! expired the node or lost it) or stop (SHUTDOWN: decommissioned). A refused registration
//! (another protocol version or cluster, a decommissioned node) is logged with the RM's line
//! and not retried: the NodeManager stops heartbeating until the RM asks it to register
//! again ([`Resync`]), and its shutdown hook ([`NodeManager::on_shutdown`]) runs.
//!
//! Layer: yarn. Not kept: whether a NodeStatusUpdate or a heartbeat is on its way, the retry
//! pause ([`StatusFlush`]) and the heartbeat's response id; a new incarnation reconciles with
//! the node's supervisor and registers again (response id 0).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use actix::{
    Actor, ActorFutureExt, AsyncContext, Context, Handler, MessageResult, ResponseActFuture, WrapFuture,
};

use super::core::{
    EndedContainer, ExitRecord, NodeManagerCore, Recovery, StartCheck, StatusFlush, RETRY_DELAY,
};
use crate::conf::{self, NodeSpec, SparkConf};
use crate::logs::output::OutputSink;
use crate::rpc::EndpointRef;
use crate::runtime::cell::CellShared;
use crate::runtime::supervisor::{StartChild, TerminateChild, WhichChildren};
use crate::runtime::timers::{run_later, run_with_fixed_delay};
use crate::runtime::SupervisorProtocol;
use crate::runtime::{ActorPath, ChildSpec, ExitReason, Kept, Me, Terminated};
use crate::yarn::launcher::{Launch, LauncherRegistry};
use crate::yarn::protocol::*;
use crate::yarn::records::*;

/// How often a registration is tried while the RM cannot be reached, and the pause between.
const REGISTER_TRIES: u32 = 100;

/// What a NodeManager reads from yarn-site.conf.
#[derive(Clone, Debug)]
pub struct NmConfig {
    /// yarn.resourcemanager.nodemanagers.heartbeat-interval-ms.
    pub heartbeat_interval: Duration,
    /// yarn.resourcemanager.cluster-id: the cluster it registers with.
    pub cluster_id: String,
}

impl NmConfig {
    pub fn from_conf(conf: &SparkConf) -> NmConfig {
        NmConfig {
            heartbeat_interval: conf
                .get(&conf::RM_NM_HEARTBEAT_INTERVAL_MS)
                .unwrap_or(Duration::from_secs(1)),
            cluster_id: conf
                .get(&conf::RM_CLUSTER_ID)
                .unwrap_or_else(|_| "sparkyard".into()),
        }
    }
}

impl Default for NmConfig {
    fn default() -> Self {
        NmConfig::from_conf(&SparkConf::new())
    }
}

/// Why a registration did not happen.
enum NotRegistered {
    /// The RM refused it, with its line.
    Refused(String),
    /// The RM could not be reached, with the last error.
    Unreachable(String),
}

/// Called with the ResourceManager's line when it refuses or shuts down this NodeManager
/// (a NodeManager process exits on it).
pub type ShutdownHook = Arc<dyn Fn(&str) + Send + Sync>;

/// The path of the NodeManager of `host` in the all-in-one node.
pub fn node_manager_path(host: &str) -> ActorPath {
    ActorPath::from_trusted(format!(
        "/{}/nm-{host}/node-manager",
        crate::yarn::node::NODE_ROOT
    ))
}

/// A container's incarnation records how it ended the moment it ends.
impl ExitRecord for CellShared {
    fn final_reason(&self) -> Option<ExitReason> {
        CellShared::final_reason(self)
    }
}

/// The NodeManager actor; see the module docs.
pub struct NodeManager {
    me: Me,
    spec: NodeSpec,
    rm_path: ActorPath,
    rm: EndpointRef<ResourceTracker>,
    /// The node's supervisor, under which containers run.
    node_sup: ActorPath,
    state: Kept<NodeManagerCore>,
    /// What its containers' commands run.
    launchers: LauncherRegistry,
    timeout: Duration,
    /// Whether a NodeStatusUpdate is on its way, and the pause before a retry.
    flush: StatusFlush,
    config: NmConfig,
    /// The node heartbeat: registered, the response id of the RM's last answer, whether
    /// one is on its way, which registration it belongs to (an answer to a heartbeat of an
    /// earlier registration is ignored), and whether the last one failed.
    registered: bool,
    response_id: u64,
    heartbeat_in_flight: bool,
    registration: u64,
    heartbeat_failing: bool,
    /// The RM's line when it refused or shut down this node: no heartbeats until a Resync.
    shut_down: Option<String>,
    on_shutdown: Option<ShutdownHook>,
}

impl NodeManager {
    pub fn new(
        me: Me,
        spec: NodeSpec,
        config: NmConfig,
        rm: ActorPath,
        state: Kept<NodeManagerCore>,
        launchers: LauncherRegistry,
    ) -> Self {
        let node_sup = me.path().parent().unwrap_or_else(|| me.path().clone());
        NodeManager {
            rm: me.endpoint(&rm),
            rm_path: rm,
            me,
            spec,
            node_sup,
            state,
            launchers,
            timeout: Duration::from_secs(30),
            flush: StatusFlush::default(),
            config,
            registered: false,
            response_id: 0,
            heartbeat_in_flight: false,
            registration: 0,
            heartbeat_failing: false,
            shut_down: None,
            on_shutdown: None,
        }
    }

    /// Runs `hook` with the RM's line when the RM refuses this NodeManager's registration
    /// or answers a heartbeat with SHUTDOWN.
    pub fn on_shutdown(mut self, hook: ShutdownHook) -> Self {
        self.on_shutdown = Some(hook);
        self
    }

    /// The RM refused or shut down this node: no more heartbeats (nor registrations) until
    /// it asks for one ([`Resync`]).
    fn shut_down(&mut self, line: String) {
        tracing::error!(
            event = "node_manager_shutdown",
            host = self.spec.host.as_str(),
            "{line}"
        );
        self.registered = false;
        self.shut_down = Some(line.clone());
        if let Some(hook) = &self.on_shutdown {
            hook(&line);
        }
    }

    /// Sends a heartbeat (NodeStatusUpdaterImpl's loop), unless one is on its way or the
    /// node is not registered.
    fn heartbeat(&mut self, ctx: &mut Context<Self>) {
        if !self.registered || self.heartbeat_in_flight || self.shut_down.is_some() {
            return;
        }
        let (running, completed) = {
            let state = self.state.lock();
            (state.containers(), state.pending_statuses())
        };
        let sent: BTreeSet<ContainerId> = completed.iter().map(|s| s.container_id).collect();
        let beat = NodeHeartbeat {
            host: self.spec.host.clone(),
            response_id: self.response_id,
            running,
            completed,
        };
        self.heartbeat_in_flight = true;
        let registration = self.registration;
        let (rm, timeout) = (self.rm.clone(), self.timeout);
        ctx.spawn(
            async move { rm.ask(beat, timeout).await }
                .into_actor(self)
                .map(move |res, act, ctx| {
                    act.heartbeat_in_flight = false;
                    if act.registration != registration || !act.registered {
                        return; // the node registered again meanwhile
                    }
                    match res {
                        Ok(answer) => {
                            if act.heartbeat_failing {
                                tracing::info!("Heartbeats reach the ResourceManager again");
                                act.heartbeat_failing = false;
                            }
                            act.heartbeat_answered(answer, &sent, ctx);
                        }
                        Err(e) if !act.heartbeat_failing => {
                            act.heartbeat_failing = true;
                            tracing::warn!(
                                "Cannot send a heartbeat to the ResourceManager ({e}); trying again every {}",
                                humantime::format_duration(act.config.heartbeat_interval)
                            );
                        }
                        Err(e) => tracing::debug!("Heartbeat failed again: {e}"),
                    }
                }),
        );
    }

    /// The RM answered a heartbeat: carry on, register again, or stop.
    fn heartbeat_answered(
        &mut self,
        answer: NodeHeartbeatResponse,
        sent: &BTreeSet<ContainerId>,
        ctx: &mut Context<Self>,
    ) {
        match answer.action {
            NodeAction::Normal => {
                self.response_id = answer.response_id;
                self.state.lock().taken(sent);
                for c in answer.containers_to_cleanup {
                    self.stop_container(c.container_id, c.requester);
                }
            }
            NodeAction::Resync => {
                tracing::info!(
                    event = "node_resync",
                    host = self.spec.host.as_str(),
                    diagnostics = answer.diagnostics.as_str(),
                    "Node is out of sync with ResourceManager, hence resyncing. ({})",
                    answer.diagnostics
                );
                self.registered = false;
                self.register(ctx);
            }
            NodeAction::Shutdown => self.shut_down(format!(
                "Received SHUTDOWN signal from Resourcemanager as part of heartbeat, hence shutting down. Message from ResourceManager: {}",
                answer.diagnostics
            )),
        }
    }

    /// Stops a container (for its AM, or the RM); false if it already completed.
    fn stop_container(&mut self, id: ContainerId, requester: StopRequester) -> bool {
        if !self.state.lock().stop(&id, requester) {
            return false;
        }
        tracing::info!(container_id = %id, requester = ?requester, "Stopping container {id}");
        let _ = self
            .me
            .endpoint::<SupervisorProtocol>(&self.node_sup)
            .tell(TerminateChild(id.to_string()));
        true
    }

    fn container_path(&self, id: &ContainerId) -> ActorPath {
        ActorPath::from_trusted(format!("{}/{id}", self.node_sup))
    }

    /// Sends the statuses the RM has not taken; after a failure, again a little later.
    fn flush(&mut self, ctx: &mut Context<Self>) {
        if self.flush.busy() {
            return;
        }
        let batch = self.state.lock().pending_statuses();
        if batch.is_empty() {
            return;
        }
        self.flush.sending();
        let sent: BTreeSet<ContainerId> = batch.iter().map(|s| s.container_id).collect();
        let update = NodeStatusUpdate {
            host: self.spec.host.clone(),
            completed: batch,
        };
        let (rm, timeout) = (self.rm.clone(), self.timeout);
        ctx.spawn(
            async move { rm.ask(update, timeout).await }
                .into_actor(self)
                .map(move |res, act, ctx| match res {
                    Ok(()) => {
                        act.flush.succeeded();
                        act.state.lock().taken(&sent);
                        act.flush(ctx);
                    }
                    Err(e) => {
                        let delay = act.flush.failed();
                        tracing::warn!(
                            pending = sent.len() as u64,
                            "Cannot report {} completed container(s) to the ResourceManager ({e}); retrying in {}",
                            sent.len(),
                            humantime::format_duration(delay)
                        );
                        let clock = act.me.clock().clone();
                        run_later(ctx, &clock, delay, |act: &mut Self, ctx| {
                            act.flush.retry_due();
                            act.flush(ctx);
                        });
                    }
                }),
        );
    }

    /// Registers with the RM: the running containers and the statuses not yet taken. The
    /// NodeManager handles nothing else until the RM answers (or it gives up, after
    /// `REGISTER_TRIES` tries while the RM cannot be reached).
    fn register(&mut self, ctx: &mut Context<Self>) {
        let capability = Resource::new(self.spec.memory_mb, self.spec.vcores);
        let request = self.state.lock().registration(
            &self.spec.host,
            &self.spec.rack,
            capability,
            &self.config.cluster_id,
        );
        self.registered = false;
        tracing::info!(
            host = self.spec.host.as_str(),
            rack = self.spec.rack.as_str(),
            running_containers = request.running.len() as u64,
            completed_containers = request.completed.len() as u64,
            "NodeManager {} ({}) registering with the ResourceManager with {capability}, {} running container(s) and {} completed container(s) to report",
            self.spec.host,
            self.spec.rack,
            request.running.len(),
            request.completed.len()
        );
        let sent: BTreeSet<ContainerId> = request.completed.iter().map(|s| s.container_id).collect();
        let (rm, timeout, clock) = (self.rm.clone(), self.timeout, self.me.clock().clone());
        let fut = async move {
            let mut last = String::new();
            for _ in 0..REGISTER_TRIES {
                match rm.ask(request.clone(), timeout).await {
                    // The RM's answer: registered, or refused (not tried again).
                    Ok(answer) => return answer.map_err(|e| NotRegistered::Refused(e.to_string())),
                    Err(e) => last = e.to_string(),
                }
                clock.sleep(RETRY_DELAY).await;
            }
            Err(NotRegistered::Unreachable(last))
        };
        ctx.wait(fut.into_actor(self).map(move |res, act, ctx| match res {
            Ok(registration) => {
                act.state.lock().registered(&sent, &registration.lost);
                act.registered = true;
                act.shut_down = None;
                act.response_id = 0;
                act.registration += 1;
                tracing::info!(
                    host = act.spec.host.as_str(),
                    lost_containers = registration.lost.len() as u64,
                    "Registered with the ResourceManager ({} container(s) of this node declared lost)",
                    registration.lost.len()
                );
                act.flush(ctx);
            }
            Err(NotRegistered::Refused(refusal)) => act.shut_down(format!(
                "Received SHUTDOWN signal from Resourcemanager, Registration of NodeManager failed, Message from ResourceManager: {refusal}"
            )),
            Err(NotRegistered::Unreachable(e)) => {
                tracing::error!(
                    host = act.spec.host.as_str(),
                    "Cannot register with the ResourceManager: {e}; a restarted ResourceManager will ask again"
                );
            }
        }));
    }

    /// After a restart: counts the node's children (the supervisor answers after any start
    /// still on its way), watches the running containers again and completes the others.
    fn reconcile(&mut self, ctx: &mut Context<Self>) {
        let known = self.state.lock().containers();
        if known.is_empty() {
            return;
        }
        let sup = self.me.endpoint::<SupervisorProtocol>(&self.node_sup);
        let timeout = self.timeout;
        ctx.wait(
            async move { sup.ask(WhichChildren, timeout).await }
                .into_actor(self)
                .map(move |children, act, ctx| {
                    let running: BTreeSet<String> = match children {
                        Ok(children) => children
                            .into_iter()
                            .filter(|c| c.incarnation.is_some())
                            .map(|c| c.id)
                            .collect(),
                        Err(e) => {
                            tracing::warn!(
                                "cannot list the node's containers ({e}); watching them one by one"
                            );
                            known.iter().map(ContainerId::to_string).collect()
                        }
                    };
                    let mut watched = 0u64;
                    for id in known {
                        let path = act.container_path(&id);
                        let is_running = running.contains(&id.to_string());
                        let incarnation = is_running
                            .then(|| act.me.cluster().registry().shared(&path))
                            .flatten()
                            .map(|cell| cell as Arc<dyn ExitRecord>);
                        let recovery = act.state.lock().recover(&id, is_running, incarnation);
                        match recovery {
                            Recovery::Watch => {
                                let me = act.me.clone();
                                me.watch(ctx, &path);
                                watched += 1;
                            }
                            Recovery::Forget => {}
                            Recovery::Ended(reason) => act.container_ended(id, reason, ctx),
                        }
                    }
                    tracing::info!(
                        containers = watched,
                        "Recovered {watched} running container(s) after a restart"
                    );
                }),
        );
    }

    /// A container's subtree ended with `reason` (`None`: not known).
    fn container_ended(&mut self, id: ContainerId, reason: Option<ExitReason>, ctx: &mut Context<Self>) {
        let Some(ended) = self.state.lock().take_ended(id, reason) else {
            return;
        };
        self.close_logs(&ended);
        if self.state.lock().complete(ended) {
            self.flush(ctx);
        }
    }

    /// The container is gone: its log files close (YARN closes a container's log files
    /// when its process ends).
    fn close_logs(&self, ended: &EndedContainer) {
        self.me
            .cluster()
            .logs()
            .close_container(&ended.app_id().to_string(), &ended.id().to_string());
    }

    /// The child spec of a container: its launch command's process, started through the
    /// node's launcher registry, under a supervisor named after the container.
    fn container_spec(
        &self,
        container: &Container,
        launch: &ContainerLaunchContext,
        output: &OutputSink,
    ) -> Result<ChildSpec, String> {
        let process = self.launchers.launch(&Launch {
            container,
            context: launch,
            host: &self.spec.host,
            rm: &self.rm_path,
            output,
        })?;
        Ok(super::super::launcher::container_spec(container, process))
    }
}

impl Actor for NodeManager {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if self.me.incarnation() > 1 {
            let known = self.state.lock().containers().len();
            tracing::info!(
                containers = known as u64,
                "NodeManager restarted; recovering {known} container(s)"
            );
        }
        self.reconcile(ctx);
        self.register(ctx);
        let (clock, interval) = (self.me.clock().clone(), self.config.heartbeat_interval);
        run_with_fixed_delay(ctx, &clock, interval, interval, |act: &mut Self, ctx| {
            act.heartbeat(ctx)
        });
    }
}

impl Handler<Resync> for NodeManager {
    type Result = ();

    fn handle(&mut self, _: Resync, ctx: &mut Context<Self>) {
        tracing::info!("The ResourceManager asked this node to resynchronise");
        self.shut_down = None;
        self.register(ctx);
    }
}

impl Handler<StartContainer> for NodeManager {
    type Result = ResponseActFuture<Self, Result<(), YarnError>>;

    fn handle(&mut self, msg: StartContainer, ctx: &mut Context<Self>) -> Self::Result {
        let id = msg.container.id;
        match self.state.lock().check_start(&id, &self.spec.host) {
            Ok(StartCheck::New) => {}
            Ok(StartCheck::AlreadyStarted) => {
                // A start sent again (its first answer was lost): the container is already
                // ours, so the start succeeded.
                tracing::info!(container_id = %id, "Container {id} is already started");
                return Box::pin(actix::fut::ready(Ok(())));
            }
            Err(refused) => return Box::pin(actix::fut::ready(Err(refused))),
        }
        let sink = Some(self.me.cluster().logs().clone());
        let output = OutputSink::container(sink, &id.attempt.app.to_string(), &id.to_string());
        // Hadoop keeps launch commands out of the NodeManager's log; sparkyard logs them, with
        // `-Dkey=value` values Spark's default spark.redaction.regex matches hidden.
        let command = crate::conf::Redactor::default()
            .redact_command_line_args(&msg.launch.command)
            .join(" ");
        tracing::info!(
            container_id = %id,
            app_id = %id.attempt.app,
            command = command.as_str(),
            "Start request for {id} by application {}",
            id.attempt.app
        );
        let spec = self.container_spec(&msg.container, &msg.launch, &output);
        let spec = match spec {
            // The container's incarnation is recorded the moment the node starts it, in the
            // state that outlives this NodeManager: a container that starts and ends while
            // the NodeManager restarts is reported with how it ended, not forgotten.
            Ok(spec) => {
                let state = self.state.clone();
                spec.on_start(move |cell| state.lock().started(&id, cell.clone()))
            }
            Err(problem) => {
                // The process starts and dies at once, as a JVM given bad arguments does.
                output.println(&problem);
                tracing::warn!(container_id = %id, "Container {id} failed to start: {}", problem.lines().next().unwrap_or(""));
                self.state.lock().launch_failed(id, output, &problem);
                self.me
                    .cluster()
                    .logs()
                    .close_container(&id.attempt.app.to_string(), &id.to_string());
                self.flush(ctx);
                return Box::pin(actix::fut::ready(Ok(())));
            }
        };
        self.state.lock().starting(id, output);
        let sup = self.me.endpoint::<SupervisorProtocol>(&self.node_sup);
        let timeout = self.timeout;
        Box::pin(
            async move { sup.ask(StartChild(spec), timeout).await }
                .into_actor(self)
                .map(move |res, act, ctx| match res {
                    Ok(Ok(path)) => {
                        let me = act.me.clone();
                        me.watch(ctx, &path);
                        Ok(())
                    }
                    Ok(Err(e)) => {
                        act.state.lock().start_failed(&id);
                        Err(YarnError::Other(format!("cannot start container {id}: {e}")))
                    }
                    Err(e) => {
                        act.state.lock().start_failed(&id);
                        Err(YarnError::Other(format!("cannot start container {id}: {e}")))
                    }
                }),
        )
    }
}

impl Handler<StopContainer> for NodeManager {
    type Result = Result<(), YarnError>;

    fn handle(&mut self, msg: StopContainer, _: &mut Context<Self>) -> Self::Result {
        // Already completed, or stopping now.
        self.stop_container(msg.container_id, msg.requester);
        Ok(())
    }
}

impl Handler<Terminated> for NodeManager {
    type Result = ();

    fn handle(&mut self, msg: Terminated, ctx: &mut Context<Self>) {
        let Ok(id) = msg.path.name().parse::<ContainerId>() else {
            return;
        };
        let reason = match msg.reason {
            // Not running when watched: its incarnation's record says how it ended.
            ExitReason::NoProc => None,
            other => Some(other),
        };
        self.container_ended(id, reason, ctx);
    }
}

impl Handler<ReadContainerOutput> for NodeManager {
    type Result = MessageResult<ReadContainerOutput>;

    fn handle(
        &mut self,
        msg: ReadContainerOutput,
        _: &mut Context<Self>,
    ) -> MessageResult<ReadContainerOutput> {
        let output = self.state.lock().output(&msg.container_id);
        MessageResult(output.ok_or_else(|| {
            YarnError::Other(format!(
                "container {} is not known on {}",
                msg.container_id, self.spec.host
            ))
        }))
    }
}

crate::speaks!(NodeManager: ContainerManagementProtocol, NodeActionProtocol);
