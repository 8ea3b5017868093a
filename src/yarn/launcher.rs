//! The launcher registry: what a NodeManager runs for a container's launch command.
//!
//! YARN layer; it knows programs by name and nothing of what they are. A real NodeManager
//! execs the command line of a ContainerLaunchContext and the program makes sense of its own
//! arguments. Here whoever assembles the node (`sparkyard node`, the embedded cluster of
//! `sparkyard submit`, a test) hands each NodeManager a [`LauncherRegistry`]: the programs
//! its containers may run, each a [`Launcher`] that turns a launch command into the
//! container's process, a child spec the NodeManager starts under the container's
//! supervisor. The first word of the command names the program; a path runs the program
//! its last segment names, as a `PATH` lookup would find it.
//!
//! A command the registry cannot start (no program, an unknown one, arguments its launcher
//! refuses) is a process that fails at once: the launcher's error is what that process
//! prints before it exits 1, and the NodeManager reports the container completed with
//! exit status 1 and YARN's "Exception from container-launch" diagnostics.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::records::{Container, ContainerLaunchContext};
use crate::logs::output::OutputSink;
use crate::logs::LogIds;
use crate::runtime::{ActorPath, ChildSpec, Restart, Strategy, SupervisorSpec};

/// The file a NodeManager writes into a container process's working directory before it
/// starts it (YARN's `launch_container.sh` and its tokens file): what the process needs to
/// know of its container beyond its command line.
pub const LAUNCH_FILE: &str = "launch_container.json";

/// The contents of [`LAUNCH_FILE`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerLaunchFile {
    /// The container the ResourceManager allocated.
    pub container: Container,
    /// Its launch context (the process reads its localized resources from it).
    pub context: ContainerLaunchContext,
    /// The node's host name (what the process sees as its own).
    pub host: String,
    /// The address the process binds its actor endpoint on (the node's).
    pub bind: String,
    /// The ResourceManager's path.
    pub rm: String,
    /// The actor endpoint of the process that started it (its NodeManager's), which routes
    /// every path the container does not hold.
    pub node_actors: String,
    /// Where the structured logs go (the node's log directory), if anywhere.
    pub log_dir: Option<std::path::PathBuf>,
    /// The application's secret (`spark.authenticate`): the process proves it on every
    /// connection and accepts its application's connections only.
    #[serde(default)]
    pub credentials: Option<crate::yarn::records::Credentials>,
    /// `spark.network.crypto.enabled` on the node.
    #[serde(default)]
    pub encrypt: bool,
}

/// The ids a container's records carry: its application, attempt and container, plus those
/// its process adds.
pub fn container_ids(container: &Container, process: &LogIds) -> LogIds {
    let attempt_id = container.id.attempt;
    LogIds::default()
        .app(&attempt_id.app.to_string())
        .attempt(attempt_id.attempt)
        .container(&container.id.to_string())
        .with(process)
}

/// A container's supervisor: `one_for_one` with `auto_shutdown`, over its process's role
/// (its significant child), so the container ends with its role's exit status. The
/// NodeManager starts it under the node; a container process holds it as its root.
pub fn container_supervisor(role: ChildSpec) -> SupervisorSpec {
    SupervisorSpec::new(Strategy::OneForOne)
        .auto_shutdown(true)
        .child(role)
}

/// The child spec of a container's supervisor, named after the container.
pub fn container_spec(container: &Container, process: Process) -> ChildSpec {
    let ids = container_ids(container, &process.ids);
    let role = process.spec;
    ChildSpec::supervisor(&container.id.to_string(), move || {
        container_supervisor(role.clone())
    })
    .restart(Restart::Temporary)
    .ids(ids)
}

/// What a launcher is given to start one container.
pub struct Launch<'a> {
    /// The container the ResourceManager allocated.
    pub container: &'a Container,
    /// Its launch context: the command (program first), environment and local resources.
    pub context: &'a ContainerLaunchContext,
    /// The node's host name (what the process sees as its own).
    pub host: &'a str,
    /// The ResourceManager this node reports to (what yarn-site tells a real container).
    pub rm: &'a ActorPath,
    /// The container's stdout, kept by the NodeManager.
    pub output: &'a OutputSink,
}

/// A container's process as its program's launcher builds it.
pub struct Process {
    /// Started under the container's supervisor; the container ends when it does, with
    /// its exit status.
    pub spec: ChildSpec,
    /// Ids the container's records carry beyond its application, attempt and container.
    pub ids: LogIds,
}

impl Process {
    /// A process with no ids of its own.
    pub fn new(spec: ChildSpec) -> Process {
        Process {
            spec,
            ids: LogIds::default(),
        }
    }

    /// The process's records also carry `ids`.
    pub fn ids(mut self, ids: LogIds) -> Process {
        self.ids = ids;
        self
    }
}

/// Turns a launch command into the container's process; the error is the text the process
/// would print before exiting 1.
pub type Launcher = Arc<dyn Fn(&Launch<'_>) -> Result<Process, String> + Send + Sync>;

/// The programs a node's containers may run, by name; cheap to clone.
#[derive(Clone, Default)]
pub struct LauncherRegistry {
    programs: Arc<BTreeMap<String, Launcher>>,
}

impl fmt::Debug for LauncherRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.programs.keys()).finish()
    }
}

impl LauncherRegistry {
    /// A registry with no program: every container fails at launch.
    pub fn new() -> LauncherRegistry {
        LauncherRegistry::default()
    }

    /// Installs `program` (a name, without `/`); a second registration replaces the first.
    pub fn register(
        mut self,
        program: &str,
        launcher: impl Fn(&Launch<'_>) -> Result<Process, String> + Send + Sync + 'static,
    ) -> LauncherRegistry {
        Arc::make_mut(&mut self.programs).insert(program.to_string(), Arc::new(launcher));
        self
    }

    /// The names of the programs installed, in order.
    pub fn programs(&self) -> impl Iterator<Item = &str> {
        self.programs.keys().map(String::as_str)
    }

    /// Starts the container's command with the launcher of its program.
    pub fn launch(&self, launch: &Launch<'_>) -> Result<Process, String> {
        let Some(program) = launch.context.command.first() else {
            return Err("empty launch command".into());
        };
        let name = program.rsplit('/').next().unwrap_or(program);
        match self.programs.get(name) {
            Some(launcher) => launcher(launch),
            None if self.programs.is_empty() => Err(format!(
                "cannot run '{program}': no program is installed on this node"
            )),
            None => {
                let names: Vec<&str> = self.programs().collect();
                Err(format!(
                    "cannot run '{program}': containers run the {} binary",
                    names.join(" or ")
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yarn::records::{ApplicationAttemptId, ApplicationId, ContainerId, Resource};

    fn container() -> Container {
        Container {
            id: ContainerId {
                attempt: ApplicationAttemptId {
                    app: ApplicationId {
                        cluster_timestamp: 1,
                        id: 1,
                    },
                    attempt: 1,
                },
                id: 1,
            },
            node: "host1".into(),
            rack: "/rack1".into(),
            resource: Resource::new(1024, 1),
            priority: 0,
        }
    }

    /// Launches `command` with `registry`: the name of the spec it started, or the error.
    fn run(registry: &LauncherRegistry, command: &[&str]) -> Result<String, String> {
        let context = ContainerLaunchContext {
            command: command.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        let (container, rm) = (container(), ActorPath::from_trusted("/node/rm".to_string()));
        let output = OutputSink::container(None, "a", "c");
        let launch = Launch {
            container: &container,
            context: &context,
            host: "host1",
            rm: &rm,
            output: &output,
        };
        registry.launch(&launch).map(|p| p.spec.id)
    }

    /// A launcher that names its process after its first argument, and refuses none.
    fn echo(launch: &Launch<'_>) -> Result<Process, String> {
        let arg = launch.context.command.get(1).cloned().unwrap_or_default();
        if arg == "bad" {
            return Err("bad argument".into());
        }
        let spec = ChildSpec::supervisor(&arg, || {
            crate::runtime::SupervisorSpec::new(crate::runtime::Strategy::OneForOne)
        });
        Ok(Process::new(spec))
    }

    #[test]
    fn a_command_runs_the_launcher_its_program_names() {
        let registry = LauncherRegistry::new().register("echo", echo);
        assert_eq!(run(&registry, &["echo", "hello"]), Ok("hello".to_string()));
        assert_eq!(run(&registry, &["/usr/bin/echo", "path"]), Ok("path".to_string()));
        assert_eq!(run(&registry, &["echo", "bad"]), Err("bad argument".to_string()));
    }

    #[test]
    fn a_command_no_program_answers_fails_with_one_reason() {
        let registry = LauncherRegistry::new().register("echo", echo);
        assert_eq!(run(&registry, &[]), Err("empty launch command".to_string()));
        assert_eq!(
            run(&registry, &["java", "x"]),
            Err("cannot run 'java': containers run the echo binary".to_string())
        );
        assert_eq!(
            run(&registry, &["echo/", "x"]),
            Err("cannot run 'echo/': containers run the echo binary".to_string())
        );
        let two = registry.register("cat", echo);
        assert_eq!(
            run(&two, &["java"]),
            Err("cannot run 'java': containers run the cat or echo binary".to_string())
        );
        assert_eq!(
            run(&LauncherRegistry::new(), &["echo"]),
            Err("cannot run 'echo': no program is installed on this node".to_string())
        );
    }
}
