//! NodeManager, at `/node/nm-<host>/node-manager`: starts and stops the containers of one
//! node and reports how they ended.
//!
//! StartContainer parses the container's launch command with the binary's own parser
//! (`cli::roles`) and starts the role as a subtree under the node's supervisor:
//! `/node/nm-<host>/<container_id>` is a supervisor whose significant child is the role
//! (`am` for an ApplicationMaster, `executor-<id>` for an executor backend), so the
//! container ends when its role does, with the role's exit status — as a process would.
//! A command that does not parse is a process that fails at once: the container completes
//! with exit status 1 and the parser's message as its diagnostics. StopContainer stops the
//! subtree; the container then completes with the requester's YARN exit status (-105 by
//! the ApplicationMaster, -106 by the ResourceManager, -107 after the application
//! completed). Every completion goes to the ResourceManager at once (NodeStatusUpdate). The
//! NodeManager keeps each container's stdout, which the ResourceManager can fetch.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, ActorFutureExt, Context, Handler, MessageResult, ResponseActFuture, WrapFuture};

use super::protocol::*;
use super::records::*;
use super::resource_manager::ResourceManager;
use crate::cli::roles::{parse_launch_command, LaunchCommand, Role};
use crate::conf::{self, NodeSpec, SparkConf};
use crate::context::OutputSink;
use crate::deploy::application_master::{am_subtree_spec, AmContext, AmMode};
use crate::executor::backend::CoarseGrainedExecutorBackend;
use crate::logs::LogIds;
use crate::rpc::EndpointRef;
use crate::runtime::supervisor::{StartChild, TerminateChild};
use crate::runtime::{
    ActorPath, ChildSpec, ExitReason, Me, Restart, Strategy, Supervisor, SupervisorSpec, Terminated,
};

/// How many finished containers' outputs a NodeManager keeps.
const KEPT_FINISHED: usize = 256;

/// The path of the NodeManager of `host` in the all-in-one node.
pub fn node_manager_path(host: &str) -> ActorPath {
    ActorPath::from_trusted(format!("/{}/nm-{host}/node-manager", super::node::NODE_ROOT))
}

struct ContainerRecord {
    app_id: ApplicationId,
    stop: Option<StopRequester>,
    output: OutputSink,
}

/// The NodeManager actor; see the module docs.
pub struct NodeManager {
    me: Me,
    spec: NodeSpec,
    rm_path: ActorPath,
    rm: EndpointRef<ResourceManager>,
    /// The node's supervisor, under which containers run.
    node_sup: ActorPath,
    containers: BTreeMap<ContainerId, ContainerRecord>,
    finished: VecDeque<(ContainerId, OutputSink)>,
    timeout: Duration,
}

impl NodeManager {
    pub fn new(me: Me, spec: NodeSpec, rm: ActorPath) -> Self {
        let node_sup = me.path().parent().unwrap_or_else(|| me.path().clone());
        NodeManager {
            rm: me.endpoint(&rm),
            rm_path: rm,
            me,
            spec,
            node_sup,
            containers: BTreeMap::new(),
            finished: VecDeque::new(),
            timeout: Duration::from_secs(30),
        }
    }

    fn report(&self, status: ContainerStatus) {
        let _ = self.rm.tell(NodeStatusUpdate {
            host: self.spec.host.clone(),
            completed: vec![status],
        });
    }

    fn remember(&mut self, id: ContainerId, output: OutputSink) {
        self.finished.push_back((id, output));
        while self.finished.len() > KEPT_FINISHED {
            self.finished.pop_front();
        }
    }

    /// The child spec of a container running `cmd`.
    fn container_spec(
        &self,
        container: &Container,
        launch: &ContainerLaunchContext,
        cmd: LaunchCommand,
        output: &OutputSink,
    ) -> Result<ChildSpec, String> {
        let attempt_id = container.id.attempt;
        let mut ids = LogIds::default()
            .app(&attempt_id.app.to_string())
            .attempt(attempt_id.attempt)
            .container(&container.id.to_string());
        let role: ChildSpec = match cmd.role.clone() {
            Role::ApplicationMaster(args) | Role::ExecutorLauncher(args) => {
                let mode = if matches!(cmd.role, Role::ExecutorLauncher(_)) {
                    AmMode::Client
                } else {
                    AmMode::Cluster
                };
                let mut conf = SparkConf::new();
                if let Some(file) = &args.properties_file {
                    let text = launch
                        .local_resources
                        .get(file)
                        .ok_or_else(|| format!("Properties file {file} does not exist in the container"))?;
                    for (k, v) in
                        conf::parse_properties(text, std::path::Path::new(file)).map_err(|e| e.to_string())?
                    {
                        conf.set(k, v);
                    }
                }
                for (k, v) in &cmd.system_properties {
                    conf.set(k.as_str(), v.as_str());
                }
                am_subtree_spec(AmContext {
                    mode,
                    args,
                    attempt_id,
                    container: container.clone(),
                    conf: Arc::new(conf),
                    output: output.clone(),
                    rm: self.rm_path.clone(),
                })
            }
            Role::Executor(args) => {
                ids = ids.executor(&args.executor_id);
                let mut conf = SparkConf::new();
                for (k, v) in &cmd.system_properties {
                    conf.set(k.as_str(), v.as_str());
                }
                let ask = conf
                    .get(&conf::RPC_ASK_TIMEOUT)
                    .unwrap_or(Duration::from_secs(120));
                let segment = format!("executor-{}", args.executor_id);
                ChildSpec::worker(&segment, move |_, me| {
                    CoarseGrainedExecutorBackend::new(me, args.clone(), ask)
                })
                .restart(Restart::Temporary)
                .significant(true)
            }
        };
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

    fn started(&mut self, _: &mut Context<Self>) {
        let capability = Resource::new(self.spec.memory_mb, self.spec.vcores);
        tracing::info!(
            host = self.spec.host.as_str(),
            rack = self.spec.rack.as_str(),
            "NodeManager {} ({}) registering with the ResourceManager with {capability}",
            self.spec.host,
            self.spec.rack
        );
        let _ = self.rm.tell(RegisterNodeManager {
            host: self.spec.host.clone(),
            rack: self.spec.rack.clone(),
            capability,
        });
    }
}

impl Handler<StartContainer> for NodeManager {
    type Result = ResponseActFuture<Self, Result<(), YarnError>>;

    fn handle(&mut self, msg: StartContainer, _: &mut Context<Self>) -> Self::Result {
        let id = msg.container.id;
        if self.containers.contains_key(&id) {
            return Box::pin(actix::fut::ready(Err(YarnError::Other(format!(
                "Container {id} is already started"
            )))));
        }
        let sink = Some(self.me.cluster().logs().clone());
        let output = OutputSink::container(sink, &id.attempt.app.to_string(), &id.to_string());
        tracing::info!(
            container_id = %id,
            app_id = %id.attempt.app,
            command = msg.launch.command.join(" ").as_str(),
            "Start request for {id} by application {}",
            id.attempt.app
        );
        let spec = parse_launch_command(&msg.launch.command, &self.spec.host)
            .and_then(|cmd| self.container_spec(&msg.container, &msg.launch, cmd, &output));
        let spec = match spec {
            Ok(spec) => spec,
            Err(problem) => {
                // The process starts and dies at once, as a JVM given bad arguments does.
                output.println(&problem);
                tracing::warn!(container_id = %id, "Container {id} failed to start: {}", problem.lines().next().unwrap_or(""));
                self.remember(id, output);
                self.report(ContainerStatus {
                    container_id: id,
                    state: ContainerState::Complete,
                    exit_status: 1,
                    diagnostics: format!(
                        "Exception from container-launch.\nContainer id: {id}\nExit code: 1\n{problem}\nContainer exited with a non-zero exit code 1."
                    ),
                });
                return Box::pin(actix::fut::ready(Ok(())));
            }
        };
        self.containers.insert(
            id,
            ContainerRecord {
                app_id: id.attempt.app,
                stop: None,
                output,
            },
        );
        let sup = self.me.endpoint::<Supervisor>(&self.node_sup);
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
                        act.containers.remove(&id);
                        Err(YarnError::Other(format!("cannot start container {id}: {e}")))
                    }
                    Err(e) => {
                        act.containers.remove(&id);
                        Err(YarnError::Other(format!("cannot start container {id}: {e}")))
                    }
                }),
        )
    }
}

impl Handler<StopContainer> for NodeManager {
    type Result = Result<(), YarnError>;

    fn handle(&mut self, msg: StopContainer, _: &mut Context<Self>) -> Self::Result {
        let Some(record) = self.containers.get_mut(&msg.container_id) else {
            return Ok(()); // already completed
        };
        if record.stop.is_none() {
            record.stop = Some(msg.requester);
        }
        tracing::info!(container_id = %msg.container_id, requester = ?msg.requester, "Stopping container {}", msg.container_id);
        let _ = self
            .me
            .endpoint::<Supervisor>(&self.node_sup)
            .tell(TerminateChild(msg.container_id.to_string()));
        Ok(())
    }
}

impl Handler<Terminated> for NodeManager {
    type Result = ();

    fn handle(&mut self, msg: Terminated, _: &mut Context<Self>) {
        let Ok(id) = msg.path.name().parse::<ContainerId>() else {
            return;
        };
        let Some(record) = self.containers.remove(&id) else {
            return;
        };
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
            None => {
                let code = msg.reason.exit_code();
                let diagnostics = match &msg.reason {
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
        };
        tracing::info!(
            container_id = %id,
            app_id = %record.app_id,
            exit_status,
            "Container {id} transitioned from RUNNING to EXITED with exit code {exit_status}"
        );
        self.remember(id, record.output);
        self.report(ContainerStatus {
            container_id: id,
            state: ContainerState::Complete,
            exit_status,
            diagnostics,
        });
    }
}

impl Handler<ReadContainerOutput> for NodeManager {
    type Result = MessageResult<ReadContainerOutput>;

    fn handle(
        &mut self,
        msg: ReadContainerOutput,
        _: &mut Context<Self>,
    ) -> MessageResult<ReadContainerOutput> {
        let output = self
            .containers
            .get(&msg.container_id)
            .map(|r| r.output.text())
            .or_else(|| {
                self.finished
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
