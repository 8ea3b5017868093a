//! Containers as OS processes: the launcher registry of a node whose containers are
//! processes of this binary, as a NodeManager execs a JVM for each container.
//!
//! Layer: cli (the top: parses commands and assembles processes).
//!
//! The launcher checks the launch command with the same parser the process will use (a
//! command it cannot start fails at once, as in process), prepares the container's working
//! directory under the NodeManager's local directory
//! (`<local-dir>/usercache/<user>/appcache/<app>/<container>`) with the launch file the
//! process reads ([`LAUNCH_FILE`]), and hands the NodeManager a
//! [`container_process_child`]: the actor that runs the process in its own process group,
//! with stdout and stderr in the container's log directory
//! (`<log-dir>/<app>/<container>/{stdout,stderr}`), and stops it with SIGTERM then SIGKILL.

use std::path::{Path, PathBuf};

use super::roles::{parse_launch_command, PROGRAM};
use crate::conf::{self, SparkConf};
use crate::logs::perms;
use crate::yarn::container_executor::{ContainerExecutorConf, ContainerProcessSpec};
use crate::yarn::container_process::{container_process_child, ContainerProcesses};
use crate::yarn::launcher::{ContainerLaunchFile, Launch, LauncherRegistry, Process, LAUNCH_FILE};

/// `dir` made absolute against this process's working directory.
fn absolute(dir: &Path) -> Result<PathBuf, String> {
    std::path::absolute(dir).map_err(|e| format!("cannot resolve the directory {}: {e}", dir.display()))
}

/// What a node needs to start its containers as processes.
#[derive(Clone, Debug)]
pub struct ProcessContainers {
    /// The program containers run (this binary).
    pub binary: PathBuf,
    /// The node process's actor endpoint: a container routes what it does not hold there.
    pub node_actors: String,
    /// The address containers bind their own actor endpoints to (the node's).
    pub bind: String,
    /// `yarn.nodemanager.local-dirs`: the root of the containers' working directories.
    pub local_dir: PathBuf,
    /// `yarn.nodemanager.log-dirs`: the root of the containers' stdout and stderr.
    pub container_logs: PathBuf,
    /// The structured log directory containers write their records to.
    pub log_dir: Option<PathBuf>,
    /// SIGKILL delay, memory monitor, environment whitelist.
    pub executor: ContainerExecutorConf,
    /// The node's running container processes (fault injection signals them).
    pub processes: ContainerProcesses,
    /// The user containers run as (YARN's `usercache/<user>`).
    pub user: String,
    /// The node's secrets: each container's launch file gets its application's secret.
    pub keyring: std::sync::Arc<crate::rpc::auth::Keyring>,
}

impl ProcessContainers {
    /// The settings of `conf` for a node process serving its actors at `node_actors` and
    /// writing records under `log_dir`; an error names the key.
    pub fn from_conf(
        conf: &SparkConf,
        node_actors: &str,
        bind: &str,
        log_dir: Option<PathBuf>,
    ) -> Result<ProcessContainers, String> {
        let binary = std::env::current_exe().map_err(|e| format!("cannot find this program's path: {e}"))?;
        let user = std::env::var("USER").unwrap_or_else(|_| "sparkyard".to_string());
        let first = |value: Option<String>| {
            value.and_then(|v| {
                v.split(',')
                    .map(str::trim)
                    .find(|d| !d.is_empty())
                    .map(PathBuf::from)
            })
        };
        let local_dir =
            first(conf.get(&conf::NM_LOCAL_DIRS).map_err(|e| e.to_string())?).unwrap_or_else(|| {
                // One directory per node process: two nodes on one machine started in the
                // same millisecond give the same container ids (YARN's are the RM's start
                // time), and must not share working directories.
                std::env::temp_dir()
                    .join(format!("sparkyard-{user}"))
                    .join("nm-local-dir")
                    .join(std::process::id().to_string())
            });
        let container_logs = first(conf.get(&conf::NM_LOG_DIRS).map_err(|e| e.to_string())?)
            .or_else(|| log_dir.as_ref().map(|d| d.join("apps")))
            .unwrap_or_else(|| local_dir.join("userlogs"));
        // A container runs in its own working directory: a relative directory (`--log-dir
        // logs`, the default `./logs`) must name the node's, not one under each container's.
        let local_dir = absolute(&local_dir)?;
        let container_logs = absolute(&container_logs)?;
        let log_dir = log_dir.as_deref().map(absolute).transpose()?;
        Ok(ProcessContainers {
            binary,
            node_actors: node_actors.to_string(),
            bind: bind.to_string(),
            local_dir,
            container_logs,
            log_dir,
            executor: ContainerExecutorConf::from_conf(conf).map_err(|e| e.to_string())?,
            processes: ContainerProcesses::new(),
            user,
            keyring: crate::rpc::auth::Keyring::open(),
        })
    }

    /// The registry of a node whose containers are processes of this binary.
    pub fn launchers(self) -> LauncherRegistry {
        LauncherRegistry::new().register(PROGRAM, move |l| self.launch(l))
    }

    fn launch(&self, launch: &Launch<'_>) -> Result<Process, String> {
        // Refused here as in process: the same parser the process runs.
        parse_launch_command(&launch.context.command, launch.host)?;
        let id = launch.container.id;
        let app = id.attempt.app.to_string();
        let work_dir = self
            .local_dir
            .join("usercache")
            .join(&self.user)
            .join("appcache")
            .join(&app)
            .join(id.to_string());
        perms::create_dir_all(&work_dir, perms::WORK_DIR_MODE).map_err(|e| {
            format!(
                "cannot make the container's directory {}: {e}",
                work_dir.display()
            )
        })?;
        let file = ContainerLaunchFile {
            container: launch.container.clone(),
            context: launch.context.clone(),
            host: launch.host.to_string(),
            bind: self.bind.clone(),
            rm: launch.rm.as_str().to_string(),
            node_actors: self.node_actors.clone(),
            log_dir: self.log_dir.clone(),
            // YARN's NodeManager localizes the application's credentials for each container:
            // the launch context's, else derived from the node's secret.
            credentials: launch.context.tokens.clone().or_else(|| {
                self.keyring
                    .application_secret(&app)
                    .map(|secret| crate::yarn::records::Credentials(secret.expose()))
            }),
            encrypt: self.keyring.encrypts(),
        };
        let text =
            serde_json::to_string_pretty(&file).map_err(|e| format!("cannot write {LAUNCH_FILE}: {e}"))?;
        let path = work_dir.join(LAUNCH_FILE);
        // It carries the application's secret: the owner's alone, as YARN's credentials file.
        perms::write(&path, text.as_bytes(), perms::PRIVATE_FILE_MODE)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        let mut env: Vec<(String, String)> = launch
            .context
            .environment
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        env.push(("NM_HOST".into(), launch.host.to_string()));
        let spec = ContainerProcessSpec {
            container_id: id,
            program: self.binary.clone(),
            args: launch.context.command.iter().skip(1).cloned().collect(),
            env,
            work_dir,
            log_dir: self.container_logs.join(&app).join(id.to_string()),
            memory_limit_bytes: launch.container.resource.memory_mb << 20,
        };
        Ok(Process::new(container_process_child(
            spec,
            self.executor.clone(),
            self.processes.clone(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_directories_name_the_nodes_not_the_containers() {
        let mut conf = SparkConf::new();
        conf.set("yarn.nodemanager.local-dirs", "local");
        let c = ProcessContainers::from_conf(&conf, "127.0.0.1:1", "127.0.0.1", Some(PathBuf::from("logs")))
            .expect("the settings are valid");
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(c.log_dir, Some(cwd.join("logs")));
        assert_eq!(c.container_logs, cwd.join("logs").join("apps"));
        assert_eq!(c.local_dir, cwd.join("local"));
    }
}
