//! ExecutorRunnable and its launcher pool, at `<container>/am/launcher`.
//!
//! Layer: deploy (the Spark side: spark-submit, the YARN Client, the ApplicationMaster; above context).
//!
//! ExecutorRunnable.prepareCommand builds an executor container's launch command as an
//! argument vector (`sparkyard [-D...] executor --driver-url ... --executor-id ...
//! --hostname ... --cores ... --app-id ... --resourceProfileId ...`), with the executor's
//! extra Java options and environment (`spark.executorEnv.*`) from the configuration, and
//! asks the container's NodeManager to start it. The ContainerLauncher runs at most
//! `spark.yarn.containerLauncherMaxThreads` launches at a time (Spark's launcher pool);
//! each result goes back to the allocator.
//!
//! A start that cannot reach its NodeManager (the ask died with a restarting NodeManager's
//! mailbox, or nothing is registered at its path yet) is sent again after a short pause,
//! up to 100 times, as NMClient's proxy retries a connection; starting a container is
//! idempotent at the NodeManager. The launcher keeps nothing across its own restarts: a new
//! incarnation asks the allocator, which remembers every launch not yet answered, to hand
//! them over again ([`RedriveLaunches`]), so the launches queued or under way in the dead
//! incarnation are not lost.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, Message, WrapFuture};

use super::launch_command::{build_command, ROLE_EXECUTOR};
use super::yarn_allocator::{LaunchResult, RedriveLaunches};
use crate::conf::{Redactor, SparkConf};
use crate::deploy::yarn_allocator::AllocatorProtocol;
use crate::executor::args::{executor_command, ExecutorArgs};
use crate::rpc::{AskError, EndpointRef};
use crate::runtime::{ActorPath, Me};
use crate::yarn::node_manager::node_manager_path;
use crate::yarn::protocol::ContainerManagementProtocol;
use crate::yarn::protocol::StartContainer;
use crate::yarn::records::{Container, ContainerLaunchContext};

/// One executor to start in one granted container (Spark's ExecutorRunnable).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecutorRunnable {
    pub container: Container,
    pub driver_url: String,
    pub executor_id: String,
    pub app_id: String,
    pub executor_cores: u32,
    pub resource_profile_id: u32,
    pub extra_java_options: String,
    pub environment: BTreeMap<String, String>,
}

impl ExecutorRunnable {
    /// Builds the runnable from the configuration.
    pub fn from_conf(
        conf: &SparkConf,
        container: Container,
        driver_url: &str,
        executor_id: &str,
        app_id: &str,
        cores: u32,
    ) -> Self {
        let environment = conf
            .iter()
            .filter_map(|(k, v)| {
                k.strip_prefix("spark.executorEnv.")
                    .map(|name| (name.to_string(), v.to_string()))
            })
            .collect();
        ExecutorRunnable {
            container,
            driver_url: driver_url.to_string(),
            executor_id: executor_id.to_string(),
            app_id: app_id.to_string(),
            executor_cores: cores,
            resource_profile_id: 0,
            extra_java_options: conf
                .get_str("spark.executor.extraJavaOptions")
                .unwrap_or("")
                .to_string(),
            environment,
        }
    }

    /// ExecutorRunnable.prepareCommand.
    pub fn prepare_command(&self) -> Vec<String> {
        let args = ExecutorArgs {
            driver_url: self.driver_url.clone(),
            executor_id: self.executor_id.clone(),
            bind_address: self.container.node.clone(),
            hostname: self.container.node.clone(),
            cores: self.executor_cores,
            app_id: self.app_id.clone(),
            worker_url: None,
            resources_file: None,
            resource_profile_id: self.resource_profile_id,
        };
        let role_args = executor_command(&args).into_iter().skip(1).collect();
        build_command(&[], &self.extra_java_options, ROLE_EXECUTOR, role_args)
    }

    /// The container's launch context.
    pub fn launch_context(&self) -> ContainerLaunchContext {
        let mut environment = self.environment.clone();
        environment.insert("SPARK_USER".into(), crate::deploy::client::current_user());
        ContainerLaunchContext {
            command: self.prepare_command(),
            environment,
            local_resources: BTreeMap::new(),
            // The NodeManager localizes the application's credentials for each of its
            // containers (it holds the node's secret the application's is derived from).
            tokens: None,
        }
    }
}

/// Starts an executor (from the allocator).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct LaunchExecutor {
    pub runnable: ExecutorRunnable,
    pub reply_to: ActorPath,
}

/// How often a start is tried while its NodeManager cannot be reached, and the pause between.
const NM_TRIES: u32 = 100;
const NM_RETRY_DELAY: Duration = Duration::from_millis(10);

/// The ContainerLauncher actor; see the module docs.
pub struct ContainerLauncher {
    me: Me,
    max_in_flight: usize,
    in_flight: usize,
    queue: VecDeque<LaunchExecutor>,
    timeout: Duration,
    allocator: ActorPath,
    /// What the launch records hide (`spark.redaction.regex`).
    redactor: Redactor,
}

impl ContainerLauncher {
    pub fn new(me: Me, max_in_flight: usize, timeout: Duration, allocator: ActorPath) -> Self {
        ContainerLauncher {
            me,
            max_in_flight: max_in_flight.max(1),
            in_flight: 0,
            queue: VecDeque::new(),
            timeout,
            allocator,
            redactor: Redactor::default(),
        }
    }

    /// The launcher of an application whose configuration is `conf`: its launch records are
    /// redacted with the application's `spark.redaction.regex`.
    pub fn with_redaction_of(mut self, conf: &SparkConf) -> Self {
        self.redactor = Redactor::from_conf(conf);
        self
    }

    fn pump(&mut self, ctx: &mut Context<Self>) {
        while self.in_flight < self.max_in_flight {
            let Some(job) = self.queue.pop_front() else { return };
            self.in_flight += 1;
            let r = &job.runnable;
            let launch = r.launch_context();
            // ExecutorRunnable's launch context is logged with Utils.redactCommandLineArgs.
            let shown = self.redactor.redact_command_line_args(&launch.command).join(" ");
            tracing::info!(
                executor_id = r.executor_id.as_str(),
                container = %r.container.id,
                host = r.container.node.as_str(),
                command = shown.as_str(),
                "Launching container {} on host {} for executor with ID {} for ResourceProfile Id {}",
                r.container.id,
                r.container.node,
                r.executor_id,
                r.resource_profile_id
            );
            let nm: EndpointRef<ContainerManagementProtocol> =
                self.me.endpoint(&node_manager_path(&r.container.node));
            let allocator: EndpointRef<AllocatorProtocol> = self.me.endpoint(&job.reply_to);
            let start = StartContainer {
                container: r.container.clone(),
                launch,
            };
            let (container_id, executor_id) = (r.container.id, r.executor_id.clone());
            let host = r.container.node.clone();
            let timeout = self.timeout;
            let clock = self.me.clock().clone();
            let fut = async move {
                let mut tries = 0;
                let answer = loop {
                    tries += 1;
                    match nm.ask(start.clone(), timeout).await {
                        Err(AskError::Died { .. } | AskError::Lookup(_)) if tries < NM_TRIES => {
                            clock.sleep(NM_RETRY_DELAY).await
                        }
                        other => break other,
                    }
                };
                let result = match answer {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(e)) => Err(format!(
                        "Exception while starting container {container_id} on host {host}: {e}"
                    )),
                    Err(e) => Err(format!(
                        "Exception while starting container {container_id} on host {host}: {e}"
                    )),
                };
                let _ = allocator.tell(LaunchResult {
                    container_id,
                    executor_id,
                    host: Some(host.clone()),
                    result,
                });
            };
            ctx.spawn(fut.into_actor(self).map(|_, act, ctx| {
                act.in_flight = act.in_flight.saturating_sub(1);
                act.pump(ctx);
            }));
        }
    }
}

impl Actor for ContainerLauncher {
    type Context = Context<Self>;

    fn started(&mut self, _: &mut Context<Self>) {
        if self.me.incarnation() > 1 {
            tracing::info!("Container launcher restarted; asking the allocator for the launches in flight");
            let allocator: EndpointRef<AllocatorProtocol> = self.me.endpoint(&self.allocator);
            if let Err(e) = allocator.tell(RedriveLaunches) {
                // A restarting allocator hands its launches over again by itself.
                tracing::warn!("cannot reach the allocator: {e}");
            }
        }
    }
}

impl Handler<LaunchExecutor> for ContainerLauncher {
    type Result = ();

    fn handle(&mut self, msg: LaunchExecutor, ctx: &mut Context<Self>) {
        self.queue.push_back(msg);
        self.pump(ctx);
    }
}

crate::protocol! {
    /// What the AM's ContainerLauncher (Spark's launcher pool) is asked: start an executor
    /// in an allocated container.
    pub LauncherProtocol { LaunchExecutor }
}

crate::speaks!(ContainerLauncher: LauncherProtocol);
