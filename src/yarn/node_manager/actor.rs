//! NodeManager, at `/node/nm-<host>/node-manager`: starts and stops the containers of one
//! node and reports how they ended.
//!
//! StartContainer starts the container's launch command through the launcher registry the
//! node was assembled with ([`crate::yarn::launcher`]), as a real NodeManager execs a command
//! line: the launcher of the command's program builds the container's process, and the
//! NodeManager starts it as a subtree under the node's supervisor:
//! `/node/nm-<host>/<container_id>` is a supervisor whose significant child is the process
//! (for sparkyard's roles, `am` for an ApplicationMaster, `executor-<id>` for an executor
//! backend), so the container ends when its process does, with its exit status. The
//! NodeManager knows nothing of what runs inside. A command the registry cannot start (an
//! unknown program, arguments its launcher refuses) is a process that fails at once: the
//! container completes with exit status 1 and the launcher's message as its diagnostics.
//! StopContainer stops the
//! subtree; the container then completes with the requester's YARN exit status (-105 by
//! the ApplicationMaster, -106 by the ResourceManager, -107 after the application
//! completed). Every completion goes to the ResourceManager at once (NodeStatusUpdate, an
//! ask): a status stays in the NodeManager's list until the RM has taken it, and is sent
//! again after a failure and with every registration, so none is lost while the RM
//! restarts. The NodeManager keeps each container's stdout, which the ResourceManager can
//! fetch.
//!
//! Registration ([`RegisterNode`], Hadoop's RegisterNodeManagerRequest with its container
//! statuses) names the containers running here and the completed statuses not yet taken;
//! the RM completes every container it placed here that the node does not name as lost
//! (exit status -100, "Container released on a *lost* node") and answers their ids, and
//! this NodeManager then refuses to start them. Nothing else is handled until the
//! registration is answered. It registers when it starts and again when a restarted RM asks
//! it to ([`Resync`], YARN's NodeAction.RESYNC).
//!
//! What survives a restart of the NodeManager actor is its [`NmState`], held by the node's
//! supervisor: the containers (which keep running next to it), their outputs, the statuses
//! not yet taken and the ids refused; the node's supervisor records each container's
//! incarnation there the moment it starts it, so a container that starts and ends while the
//! NodeManager restarts is still reported with its exit status. A new incarnation first asks the node's supervisor
//! for its children (so a container whose start was still on its way is counted), watches
//! the running containers again and completes those that ended while it was down with the
//! exit status their incarnation recorded (YARN's recovered exit-code file; 154, YARN's
//! LOST, if there is none) — one whose start died with the old incarnation before the node
//! ran it is forgotten, since its starter asks again — then registers. When the whole node (`/node/nm-<host>`) dies,
//! its containers die with it and its new NodeManager starts with an empty state: it
//! registers naming no container, and the RM reports every container it had here lost.
//! A container that ends because its node is going down (shut down or aborted while the
//! NodeManager did not stop it) is therefore not reported by this NodeManager.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use actix::{
    Actor, ActorFutureExt, AsyncContext, Context, Handler, MessageResult, ResponseActFuture, WrapFuture,
};

use crate::conf::NodeSpec;
use crate::logs::output::OutputSink;
use crate::logs::LogIds;
use crate::rpc::EndpointRef;
use crate::runtime::cell::CellShared;
use crate::runtime::supervisor::{StartChild, TerminateChild, WhichChildren};
use crate::runtime::timers::run_later;
use crate::runtime::SupervisorProtocol;
use crate::runtime::{
    ActorPath, ChildSpec, ExitReason, Kept, Me, Restart, Strategy, SupervisorSpec, Terminated,
};
use crate::yarn::launcher::{Launch, LauncherRegistry};
use crate::yarn::protocol::*;
use crate::yarn::records::*;

/// How many finished containers' outputs a NodeManager keeps.
const KEPT_FINISHED: usize = 256;

/// How many ids of containers the RM declared lost a NodeManager remembers.
const KEPT_LOST: usize = 1024;

/// YARN's ContainerExecutor.ExitCode.LOST: a container whose exit status could not be
/// recovered (it ended while its NodeManager was down and left no status).
pub const EXIT_CODE_LOST: i32 = 154;

/// The diagnostics of a container completed because its node was lost
/// (SchedulerUtils.LOST_CONTAINER).
pub const LOST_CONTAINER: &str = "Container released on a *lost* node";

/// How often a registration is tried while the RM cannot be reached, and the pause between.
const REGISTER_TRIES: u32 = 100;
const RETRY_DELAY: Duration = Duration::from_millis(10);

/// The longest pause between two sends of statuses the RM has not taken.
const MAX_FLUSH_DELAY: Duration = Duration::from_secs(1);

/// The path of the NodeManager of `host` in the all-in-one node.
pub fn node_manager_path(host: &str) -> ActorPath {
    ActorPath::from_trusted(format!(
        "/{}/nm-{host}/node-manager",
        crate::yarn::node::NODE_ROOT
    ))
}

struct ContainerRecord {
    app_id: ApplicationId,
    stop: Option<StopRequester>,
    output: OutputSink,
    /// The container's incarnation once started: how it ended outlives it, so a restarted
    /// NodeManager can still report a container that ended while it was down.
    cell: Option<Arc<CellShared>>,
}

/// What a NodeManager knows, kept by its node's supervisor across the NodeManager's
/// restarts (a restarted node starts with a new one).
#[derive(Default)]
pub struct NmState {
    containers: BTreeMap<ContainerId, ContainerRecord>,
    finished: VecDeque<(ContainerId, OutputSink)>,
    /// Completed statuses the RM has not taken yet, oldest first.
    unacked: Vec<ContainerStatus>,
    /// Containers the RM declared lost when this node registered: never started here.
    lost: VecDeque<ContainerId>,
}

impl NmState {
    fn remember(&mut self, id: ContainerId, output: OutputSink) {
        self.finished.push_back((id, output));
        while self.finished.len() > KEPT_FINISHED {
            self.finished.pop_front();
        }
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
    state: Kept<NmState>,
    /// What its containers' commands run.
    launchers: LauncherRegistry,
    timeout: Duration,
    /// A NodeStatusUpdate is on its way, or a retry is scheduled.
    flushing: bool,
    flush_delay: Duration,
}

impl NodeManager {
    pub fn new(
        me: Me,
        spec: NodeSpec,
        rm: ActorPath,
        state: Kept<NmState>,
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
            flushing: false,
            flush_delay: RETRY_DELAY,
        }
    }

    fn container_path(&self, id: &ContainerId) -> ActorPath {
        ActorPath::from_trusted(format!("{}/{id}", self.node_sup))
    }

    /// A container completed: its status waits in the list until the RM takes it.
    fn report(&mut self, status: ContainerStatus, ctx: &mut Context<Self>) {
        self.state.lock().unacked.push(status);
        self.flush(ctx);
    }

    /// Sends the statuses the RM has not taken; after a failure, again a little later.
    fn flush(&mut self, ctx: &mut Context<Self>) {
        if self.flushing {
            return;
        }
        let batch = self.state.lock().unacked.clone();
        if batch.is_empty() {
            return;
        }
        self.flushing = true;
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
                        act.flushing = false;
                        act.flush_delay = RETRY_DELAY;
                        act.state
                            .lock()
                            .unacked
                            .retain(|s| !sent.contains(&s.container_id));
                        act.flush(ctx);
                    }
                    Err(e) => {
                        let delay = act.flush_delay;
                        act.flush_delay = (delay * 2).min(MAX_FLUSH_DELAY);
                        tracing::warn!(
                            pending = sent.len() as u64,
                            "Cannot report {} completed container(s) to the ResourceManager ({e}); retrying in {}",
                            sent.len(),
                            humantime::format_duration(delay)
                        );
                        let clock = act.me.clock().clone();
                        run_later(ctx, &clock, delay, |act: &mut Self, ctx| {
                            act.flushing = false;
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
        let (running, completed) = {
            let st = self.state.lock();
            (
                st.containers.keys().copied().collect::<Vec<_>>(),
                st.unacked.clone(),
            )
        };
        let capability = Resource::new(self.spec.memory_mb, self.spec.vcores);
        tracing::info!(
            host = self.spec.host.as_str(),
            rack = self.spec.rack.as_str(),
            running_containers = running.len() as u64,
            completed_containers = completed.len() as u64,
            "NodeManager {} ({}) registering with the ResourceManager with {capability}, {} running container(s) and {} completed container(s) to report",
            self.spec.host,
            self.spec.rack,
            running.len(),
            completed.len()
        );
        let request = RegisterNode {
            host: self.spec.host.clone(),
            rack: self.spec.rack.clone(),
            capability,
            running,
            completed,
        };
        let sent: BTreeSet<ContainerId> = request.completed.iter().map(|s| s.container_id).collect();
        let (rm, timeout, clock) = (self.rm.clone(), self.timeout, self.me.clock().clone());
        let fut = async move {
            let mut last = String::new();
            for _ in 0..REGISTER_TRIES {
                match rm.ask(request.clone(), timeout).await {
                    Ok(answer) => return answer.map_err(|e| e.to_string()),
                    Err(e) => last = e.to_string(),
                }
                clock.sleep(RETRY_DELAY).await;
            }
            Err(last)
        };
        ctx.wait(fut.into_actor(self).map(move |res, act, ctx| match res {
            Ok(registration) => {
                let mut st = act.state.lock();
                st.unacked.retain(|s| !sent.contains(&s.container_id));
                for id in &registration.lost {
                    st.containers.remove(id);
                    st.lost.push_back(*id);
                }
                while st.lost.len() > KEPT_LOST {
                    st.lost.pop_front();
                }
                drop(st);
                tracing::info!(
                    host = act.spec.host.as_str(),
                    lost_containers = registration.lost.len() as u64,
                    "Registered with the ResourceManager ({} container(s) of this node declared lost)",
                    registration.lost.len()
                );
                act.flush(ctx);
            }
            Err(e) => {
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
        let known: Vec<ContainerId> = self.state.lock().containers.keys().copied().collect();
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
                        if running.contains(&id.to_string()) {
                            let cell = act.me.cluster().registry().shared(&path);
                            if let Some(record) = act.state.lock().containers.get_mut(&id) {
                                if cell.is_some() {
                                    record.cell = cell;
                                }
                            }
                            let me = act.me.clone();
                            me.watch(ctx, &path);
                            watched += 1;
                        } else if act
                            .state
                            .lock()
                            .containers
                            .get(&id)
                            .is_some_and(|r| r.cell.is_none())
                        {
                            // Its start died with the previous incarnation before the node
                            // ran it: it never ran. Forget it; its starter asks again (a
                            // start is idempotent), or gives up and releases it.
                            tracing::info!(
                                container_id = %id,
                                "Container {id} was never started; forgetting it"
                            );
                            act.state.lock().containers.remove(&id);
                        } else {
                            let reason = act
                                .state
                                .lock()
                                .containers
                                .get(&id)
                                .and_then(|r| r.cell.as_ref().and_then(|c| c.final_reason()));
                            tracing::info!(
                                container_id = %id,
                                "Container {id} ended while the NodeManager was down"
                            );
                            act.container_ended(id, reason, ctx);
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
        let Some(record) = self.state.lock().containers.remove(&id) else {
            return;
        };
        let reason = reason.or_else(|| record.cell.as_ref().and_then(|c| c.final_reason()));
        // The container is gone: its log files close (YARN closes a container's log files
        // when its process ends).
        self.me
            .cluster()
            .logs()
            .close_container(&record.app_id.to_string(), &id.to_string());
        if record.stop.is_none()
            && matches!(
                reason,
                Some(ExitReason::Shutdown) | Some(ExitReason::Aborted { .. })
            )
        {
            // Only the node's supervisor stops a container this NodeManager did not stop:
            // the node is going down, and its containers with it. The RM learns they were
            // lost when the node registers again.
            tracing::info!(
                container_id = %id,
                app_id = %record.app_id,
                "Container {id} ended with its node ({}); not reported",
                reason.as_ref().map(ToString::to_string).unwrap_or_default()
            );
            self.state.lock().remember(id, record.output);
            return;
        }
        let (exit_status, diagnostics) = match record.stop {
            Some(StopRequester::ApplicationMaster) => (
                exit_status::KILLED_BY_APPMASTER,
                "Container killed by the ApplicationMaster.\nContainer killed on request. Exit code is 143\nContainer exited with a non-zero exit code 143.".to_string(),
            ),
            Some(StopRequester::ResourceManager) => (
                exit_status::KILLED_BY_RESOURCEMANAGER,
                "Container killed by the ResourceManager.\nContainer killed on request. Exit code is 143".to_string(),
            ),
            Some(StopRequester::AppCompletion) => (
                exit_status::KILLED_AFTER_APP_COMPLETION,
                "Container Killed since the application completed.".to_string(),
            ),
            None => match &reason {
                None | Some(ExitReason::NoProc) => (
                    EXIT_CODE_LOST,
                    format!(
                        "Container {id} ended while its NodeManager was down and left no exit status.\nContainer exited with a non-zero exit code {EXIT_CODE_LOST}."
                    ),
                ),
                Some(reason) => {
                    let code = reason.exit_code();
                    let diagnostics = match reason {
                        _ if code == 0 => String::new(),
                        ExitReason::Exit { message, .. } => format!(
                            "Exception from container-launch.\nContainer id: {id}\nExit code: {code}\n{message}\nContainer exited with a non-zero exit code {code}."
                        ),
                        other => format!(
                            "Exception from container-launch.\nContainer id: {id}\nExit code: {code}\n{other}\nContainer exited with a non-zero exit code {code}."
                        ),
                    };
                    (code, diagnostics)
                }
            },
        };
        tracing::info!(
            container_id = %id,
            app_id = %record.app_id,
            exit_status,
            "Container {id} transitioned from RUNNING to EXITED with exit code {exit_status}"
        );
        self.state.lock().remember(id, record.output);
        self.report(
            ContainerStatus {
                container_id: id,
                state: ContainerState::Complete,
                exit_status,
                diagnostics,
            },
            ctx,
        );
    }

    /// The child spec of a container: its launch command's process, started through the
    /// node's launcher registry, under a supervisor named after the container.
    fn container_spec(
        &self,
        container: &Container,
        launch: &ContainerLaunchContext,
        output: &OutputSink,
    ) -> Result<ChildSpec, String> {
        let attempt_id = container.id.attempt;
        let process = self.launchers.launch(&Launch {
            container,
            context: launch,
            host: &self.spec.host,
            rm: &self.rm_path,
            output,
        })?;
        let ids = LogIds::default()
            .app(&attempt_id.app.to_string())
            .attempt(attempt_id.attempt)
            .container(&container.id.to_string())
            .with(&process.ids);
        let role = process.spec;
        let id = container.id.to_string();
        Ok(ChildSpec::supervisor(&id, move || {
            SupervisorSpec::new(Strategy::OneForOne)
                .auto_shutdown(true)
                .child(role.clone())
        })
        .restart(Restart::Temporary)
        .ids(ids))
    }
}

impl Actor for NodeManager {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if self.me.incarnation() > 1 {
            let known = self.state.lock().containers.len();
            tracing::info!(
                containers = known as u64,
                "NodeManager restarted; recovering {known} container(s)"
            );
        }
        self.reconcile(ctx);
        self.register(ctx);
    }
}

impl Handler<Resync> for NodeManager {
    type Result = ();

    fn handle(&mut self, _: Resync, ctx: &mut Context<Self>) {
        tracing::info!("The ResourceManager asked this node to resynchronise");
        self.register(ctx);
    }
}

impl Handler<StartContainer> for NodeManager {
    type Result = ResponseActFuture<Self, Result<(), YarnError>>;

    fn handle(&mut self, msg: StartContainer, ctx: &mut Context<Self>) -> Self::Result {
        let id = msg.container.id;
        {
            let st = self.state.lock();
            if st.containers.contains_key(&id) {
                // A start sent again (its first answer was lost): the container is already
                // ours, so the start succeeded.
                tracing::info!(container_id = %id, "Container {id} is already started");
                return Box::pin(actix::fut::ready(Ok(())));
            }
            if st.lost.contains(&id) {
                return Box::pin(actix::fut::ready(Err(YarnError::Other(format!(
                    "Container {id} cannot be started: the ResourceManager released it when node {} was lost",
                    self.spec.host
                )))));
            }
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
                spec.on_start(move |cell| {
                    if let Some(record) = state.lock().containers.get_mut(&id) {
                        record.cell = Some(cell.clone());
                    }
                })
            }
            Err(problem) => {
                // The process starts and dies at once, as a JVM given bad arguments does.
                output.println(&problem);
                tracing::warn!(container_id = %id, "Container {id} failed to start: {}", problem.lines().next().unwrap_or(""));
                self.state.lock().remember(id, output);
                self.me
                    .cluster()
                    .logs()
                    .close_container(&id.attempt.app.to_string(), &id.to_string());
                self.report(
                    ContainerStatus {
                        container_id: id,
                        state: ContainerState::Complete,
                        exit_status: 1,
                        diagnostics: format!(
                            "Exception from container-launch.\nContainer id: {id}\nExit code: 1\n{problem}\nContainer exited with a non-zero exit code 1."
                        ),
                    },
                    ctx,
                );
                return Box::pin(actix::fut::ready(Ok(())));
            }
        };
        self.state.lock().containers.insert(
            id,
            ContainerRecord {
                app_id: id.attempt.app,
                stop: None,
                output,
                cell: None,
            },
        );
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
                        act.state.lock().containers.remove(&id);
                        Err(YarnError::Other(format!("cannot start container {id}: {e}")))
                    }
                    Err(e) => {
                        act.state.lock().containers.remove(&id);
                        Err(YarnError::Other(format!("cannot start container {id}: {e}")))
                    }
                }),
        )
    }
}

impl Handler<StopContainer> for NodeManager {
    type Result = Result<(), YarnError>;

    fn handle(&mut self, msg: StopContainer, _: &mut Context<Self>) -> Self::Result {
        {
            let mut st = self.state.lock();
            let Some(record) = st.containers.get_mut(&msg.container_id) else {
                return Ok(()); // already completed
            };
            if record.stop.is_none() {
                record.stop = Some(msg.requester);
            }
        }
        tracing::info!(container_id = %msg.container_id, requester = ?msg.requester, "Stopping container {}", msg.container_id);
        let _ = self
            .me
            .endpoint::<SupervisorProtocol>(&self.node_sup)
            .tell(TerminateChild(msg.container_id.to_string()));
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
        let st = self.state.lock();
        let output = st
            .containers
            .get(&msg.container_id)
            .map(|r| r.output.text())
            .or_else(|| {
                st.finished
                    .iter()
                    .find(|(id, _)| *id == msg.container_id)
                    .map(|(_, o)| o.text())
            });
        MessageResult(output.ok_or_else(|| {
            YarnError::Other(format!(
                "container {} is not known on {}",
                msg.container_id, self.spec.host
            ))
        }))
    }
}

crate::speaks!(NodeManager: ContainerManagementProtocol, NodeActionProtocol);
