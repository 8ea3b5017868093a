//! How a NodeManager runs a container as an OS process: YARN's DefaultContainerExecutor and
//! ContainerLaunch mechanics, without actors.
//!
//! Layer: yarn. [`launch`] creates the container's working and log directories, opens
//! `<log dir>/stdout` and `<log dir>/stderr` (the files YARN keeps), and starts the program
//! in its own process group (as YARN's launch script does with `setsid`), in the working
//! directory, with stdin from `/dev/null` and a clean environment: the NodeManager's
//! variables that `yarn.nodemanager.env-whitelist` names (plus `RUST_BACKTRACE`/`RUST_LOG`),
//! the variables YARN sets for every container, then the container's own. A program that
//! cannot start is a launch failure with bash's exit status (127 not found, 126 not
//! executable) and its line in the container's stderr, as the launch script would leave it.
//!
//! [`yarn_exit_status`] turns a process's end into YARN's exit status (a signal N is
//! 128+N, as the bash launch script reports it), [`signal_group`] and [`signal_process`]
//! send a signal (stop: SIGTERM to the group, SIGKILL after
//! `yarn.nodemanager.sleep-delay-before-sigkill.ms`; fault injection: KILL, TERM, STOP,
//! CONT), and [`exit_diagnostics`] is what a container that ended says about it.

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use crate::conf::{self, ConfError, SparkConf};
use crate::logs::perms;
use crate::yarn::records::ContainerId;

/// YARN's ContainerExecutor.ExitCode.TERMINATED: the process ended on SIGTERM.
pub const EXIT_TERMINATED: i32 = 143;

/// YARN's ContainerExecutor.ExitCode.FORCE_KILLED: the process ended on SIGKILL.
pub const EXIT_FORCE_KILLED: i32 = 137;

/// bash's status for a command it cannot find.
pub const EXIT_NOT_FOUND: i32 = 127;

/// bash's status for a command it found but cannot execute.
pub const EXIT_NOT_EXECUTABLE: i32 = 126;

/// ContainerLaunch's status for a container whose launch failed before its command ran
/// (its directories or files could not be made).
pub const EXIT_LAUNCH_FAILED: i32 = -1;

/// How much of a failed container's stderr its diagnostics carry (YARN's
/// `yarn.nodemanager.container.stderr.tail.bytes`).
pub const STDERR_TAIL_BYTES: u64 = 4096;

/// Variables a container inherits from the NodeManager beyond the whitelist: how a Rust
/// program reports a panic and what it logs.
const ALWAYS_INHERITED: [&str; 2] = ["RUST_BACKTRACE", "RUST_LOG"];

/// Variables YARN sets for every container from the user it runs as; sparkyard runs
/// containers as the NodeManager's user, so they come from its environment.
const USER_VARIABLES: [&str; 3] = ["USER", "LOGNAME", "HOME"];

/// What to run for one container, as the NodeManager's launch context resolves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerProcessSpec {
    /// The container: in the environment (`CONTAINER_ID`), the records and the monitor's
    /// diagnostics.
    pub container_id: ContainerId,
    /// The program to execute (a path; not looked up on `PATH`, as the launch command of a
    /// ContainerLaunchContext names its program).
    pub program: PathBuf,
    /// Its arguments, without the program.
    pub args: Vec<String>,
    /// The launch context's environment; it wins over the inherited variables.
    pub env: Vec<(String, String)>,
    /// The container's working directory under the NodeManager's local directory; made if
    /// missing, and the process's current directory (`PWD`).
    pub work_dir: PathBuf,
    /// The container's log directory; made if missing, holds `stdout` and `stderr`
    /// (`LOG_DIRS`).
    pub log_dir: PathBuf,
    /// The container's allocation in bytes: the monitor's physical-memory limit.
    pub memory_limit_bytes: u64,
}

/// YARN's placeholder for the container's log directory in a launch command and its
/// environment (ApplicationConstants.LOG_DIR_EXPANSION_VAR).
pub const LOG_DIR_EXPANSION_VAR: &str = "<LOG_DIR>";

/// A container's working directory under a NodeManager local directory, as YARN lays it
/// out: `<local dir>/usercache/<user>/appcache/<application>/<container>`.
pub fn container_work_dir(local_dir: &Path, user: &str, container_id: &ContainerId) -> PathBuf {
    local_dir
        .join("usercache")
        .join(user)
        .join("appcache")
        .join(container_id.attempt.app.to_string())
        .join(container_id.to_string())
}

/// A container's log directory under a NodeManager log directory, as YARN lays it out:
/// `<log dir>/<application>/<container>`.
pub fn container_log_dir(log_root: &Path, container_id: &ContainerId) -> PathBuf {
    log_root
        .join(container_id.attempt.app.to_string())
        .join(container_id.to_string())
}

impl ContainerProcessSpec {
    /// The process of a launch context: `program` runs with the command's arguments (its
    /// first word, the program's name, left out) and the context's environment, `<LOG_DIR>`
    /// expanded in both to `log_dir`, as the NodeManager's ContainerLaunch does.
    pub fn from_launch_context(
        container_id: ContainerId,
        memory_mb: u64,
        context: &crate::yarn::records::ContainerLaunchContext,
        program: PathBuf,
        work_dir: PathBuf,
        log_dir: PathBuf,
    ) -> ContainerProcessSpec {
        let logs = log_dir.display().to_string();
        let expand = |s: &str| s.replace(LOG_DIR_EXPANSION_VAR, &logs);
        ContainerProcessSpec {
            container_id,
            program,
            args: context.command.iter().skip(1).map(|a| expand(a)).collect(),
            env: context
                .environment
                .iter()
                .map(|(k, v)| (k.clone(), expand(v)))
                .collect(),
            work_dir,
            log_dir,
            memory_limit_bytes: memory_mb.saturating_mul(1 << 20),
        }
    }
}

/// The NodeManager's settings for container processes (yarn-site keys).
#[derive(Clone, Debug, PartialEq)]
pub struct ContainerExecutorConf {
    /// `yarn.nodemanager.sleep-delay-before-sigkill.ms`: from SIGTERM to SIGKILL.
    pub sigkill_delay: Duration,
    /// `yarn.nodemanager.container-monitor.interval-ms`: between two memory checks.
    pub monitor_interval: Duration,
    /// `yarn.nodemanager.pmem-check-enabled`: whether a container beyond its allocation is
    /// killed.
    pub pmem_check: bool,
    /// `yarn.nodemanager.vmem-pmem-ratio`: the virtual-memory limit the diagnostics show.
    pub vmem_pmem_ratio: f64,
    /// `yarn.nodemanager.env-whitelist`: the NodeManager's variables a container inherits.
    pub env_whitelist: Vec<String>,
}

impl Default for ContainerExecutorConf {
    /// YARN's defaults.
    fn default() -> Self {
        ContainerExecutorConf::from_conf(&SparkConf::new()).expect("the defaults are valid")
    }
}

impl ContainerExecutorConf {
    /// The settings of `conf`; a bad value is an error naming its key.
    pub fn from_conf(conf: &SparkConf) -> Result<ContainerExecutorConf, ConfError> {
        Ok(ContainerExecutorConf {
            sigkill_delay: conf.get(&conf::NM_SLEEP_DELAY_BEFORE_SIGKILL_MS)?,
            monitor_interval: conf.get(&conf::NM_CONTAINER_MON_INTERVAL_MS)?,
            pmem_check: conf.get(&conf::NM_PMEM_CHECK_ENABLED)?,
            vmem_pmem_ratio: conf.get(&conf::NM_VMEM_PMEM_RATIO)?,
            env_whitelist: conf.get(&conf::NM_ENV_WHITELIST)?,
        })
    }

    /// The virtual-memory limit of a container allocated `pmem_limit` bytes.
    pub fn vmem_limit(&self, pmem_limit: u64) -> u64 {
        (pmem_limit as f64 * self.vmem_pmem_ratio) as u64
    }
}

/// A container whose process could not start: YARN's exit status for it and the line that
/// explains it (also in the container's stderr when the program itself could not run).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchFailure {
    pub exit_code: i32,
    pub message: String,
}

impl fmt::Display for LaunchFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "exit code {}: {}", self.exit_code, self.message)
    }
}

/// A started container process.
#[derive(Debug)]
pub struct Launched {
    /// The process; awaiting it reaps it.
    pub child: tokio::process::Child,
    /// Its pid, also its process group's id.
    pub pid: u32,
}

/// The environment of a container: the whitelisted variables of the NodeManager's
/// environment (`inherited` looks one up), YARN's own, then the launch context's, later
/// ones replacing earlier ones of the same name, in that order.
pub fn container_env(
    spec: &ContainerProcessSpec,
    whitelist: &[String],
    inherited: impl Fn(&str) -> Option<String>,
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = Vec::new();
    let mut set = |name: &str, value: String| {
        env.retain(|(n, _)| n != name);
        env.push((name.to_string(), value));
    };
    let names = whitelist
        .iter()
        .map(String::as_str)
        .chain(ALWAYS_INHERITED)
        .chain(USER_VARIABLES);
    for name in names {
        if let Some(value) = inherited(name) {
            set(name, value);
        }
    }
    set("CONTAINER_ID", spec.container_id.to_string());
    set("PWD", spec.work_dir.display().to_string());
    set("LOG_DIRS", spec.log_dir.display().to_string());
    for (name, value) in &spec.env {
        set(name, value.clone());
    }
    env
}

/// Starts the container's process; see the module docs. Must run inside a tokio runtime
/// (an actor's), which reaps the process.
pub fn launch(spec: &ContainerProcessSpec, conf: &ContainerExecutorConf) -> Result<Launched, LaunchFailure> {
    let setup = |what: &str, path: &Path, e: io::Error| LaunchFailure {
        exit_code: EXIT_LAUNCH_FAILED,
        message: format!("Failed to create {what} {}: {e}", path.display()),
    };
    // As the LinuxContainerExecutor: directories 0750, the output files 0640.
    perms::create_dir_all(&spec.work_dir, perms::WORK_DIR_MODE)
        .map_err(|e| setup("the working directory", &spec.work_dir, e))?;
    perms::create_dir_all(&spec.log_dir, perms::LOG_DIR_MODE)
        .map_err(|e| setup("the log directory", &spec.log_dir, e))?;
    let stdout_path = spec.log_dir.join("stdout");
    let stderr_path = spec.log_dir.join("stderr");
    let stdout = perms::create(&stdout_path, perms::LOG_FILE_MODE)
        .map_err(|e| setup("the log file", &stdout_path, e))?;
    let stderr = perms::create(&stderr_path, perms::LOG_FILE_MODE)
        .map_err(|e| setup("the log file", &stderr_path, e))?;
    let stderr_for_failure = stderr.try_clone().ok();
    let env = container_env(spec, &conf.env_whitelist, |name| std::env::var(name).ok());
    let mut command = tokio::process::Command::new(&spec.program);
    command
        .args(&spec.args)
        .env_clear()
        .envs(env)
        .current_dir(&spec.work_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr))
        .process_group(0)
        .kill_on_drop(false);
    match command.spawn() {
        Ok(child) => {
            let pid = child.id().unwrap_or(0);
            Ok(Launched { child, pid })
        }
        Err(e) => {
            let failure = exec_failure(&spec.program, &e);
            // What bash leaves in the container's stderr when it cannot run the command.
            if let Some(mut file) = stderr_for_failure {
                use std::io::Write;
                let _ = writeln!(file, "{}", failure.message);
            }
            Err(failure)
        }
    }
}

/// bash's status and line for a program that could not be executed.
pub fn exec_failure(program: &Path, e: &io::Error) -> LaunchFailure {
    let exit_code = match e.kind() {
        io::ErrorKind::NotFound => EXIT_NOT_FOUND,
        _ => EXIT_NOT_EXECUTABLE,
    };
    let text = e.to_string();
    let reason = text.split(" (os error").next().unwrap_or(&text);
    LaunchFailure {
        exit_code,
        message: format!("{}: {reason}", program.display()),
    }
}

/// YARN's exit status of a process that ended with `status`: its exit code, or 128+N
/// after signal N (143 after SIGTERM, 137 after SIGKILL), as the launch script reports it.
pub fn yarn_exit_status(status: ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => EXIT_LAUNCH_FAILED,
    }
}

/// What YARN says of a container process that ended with `exit_code`, between its "Exit
/// code" line and "Container exited with a non-zero exit code": for 137 and 143 that it was
/// killed on request; for another failure the tail of its stderr; nothing for success.
pub fn exit_diagnostics(exit_code: i32, log_dir: &Path) -> String {
    match exit_code {
        0 => String::new(),
        EXIT_TERMINATED | EXIT_FORCE_KILLED => {
            format!("Container killed on request. Exit code is {exit_code}")
        }
        _ => match stderr_tail(&log_dir.join("stderr"), STDERR_TAIL_BYTES) {
            Some(tail) if !tail.is_empty() => {
                format!("Error file: stderr.\nLast {STDERR_TAIL_BYTES} bytes of stderr :\n{tail}")
            }
            _ => String::new(),
        },
    }
}

/// The last `bytes` bytes of `path` (lossy UTF-8), `None` if it cannot be read.
pub fn stderr_tail(path: &Path, bytes: u64) -> Option<String> {
    let mut file = File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(bytes))).ok()?;
    let mut buf = Vec::new();
    file.read_to_end(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// A signal sparkyard sends to a container's process (a stop, or fault injection).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProcessSignal {
    Term,
    Kill,
    Stop,
    Cont,
}

impl ProcessSignal {
    fn raw(self) -> rustix::process::Signal {
        use rustix::process::Signal;
        match self {
            ProcessSignal::Term => Signal::TERM,
            ProcessSignal::Kill => Signal::KILL,
            ProcessSignal::Stop => Signal::STOP,
            ProcessSignal::Cont => Signal::CONT,
        }
    }
}

impl fmt::Display for ProcessSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProcessSignal::Term => "TERM",
            ProcessSignal::Kill => "KILL",
            ProcessSignal::Stop => "STOP",
            ProcessSignal::Cont => "CONT",
        })
    }
}

impl std::str::FromStr for ProcessSignal {
    type Err = String;

    /// `KILL`, `TERM`, `STOP` or `CONT`, with or without `SIG`, any case.
    fn from_str(s: &str) -> Result<ProcessSignal, String> {
        let upper = s.trim().to_ascii_uppercase();
        match upper.strip_prefix("SIG").unwrap_or(&upper) {
            "TERM" => Ok(ProcessSignal::Term),
            "KILL" => Ok(ProcessSignal::Kill),
            "STOP" => Ok(ProcessSignal::Stop),
            "CONT" => Ok(ProcessSignal::Cont),
            _ => Err(format!(
                "unknown signal '{s}' (expected KILL, TERM, STOP or CONT)"
            )),
        }
    }
}

fn pid_of(pid: u32) -> io::Result<rustix::process::Pid> {
    i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("invalid pid {pid}")))
}

/// Sends `signal` to every process of the group `pgid` (a container's processes).
pub fn signal_group(pgid: u32, signal: ProcessSignal) -> io::Result<()> {
    rustix::process::kill_process_group(pid_of(pgid)?, signal.raw()).map_err(io::Error::from)
}

/// Sends `signal` to the process `pid` alone.
pub fn signal_process(pid: u32, signal: ProcessSignal) -> io::Result<()> {
    rustix::process::kill_process(pid_of(pid)?, signal.raw()).map_err(io::Error::from)
}

/// Whether any process of the group `pgid` still exists (a zombie counts until reaped).
pub fn group_alive(pgid: u32) -> bool {
    pid_of(pgid).is_ok_and(|p| rustix::process::test_kill_process_group(p).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yarn::records::{ApplicationAttemptId, ApplicationId};
    use std::fs;

    fn container() -> ContainerId {
        ContainerId {
            attempt: ApplicationAttemptId {
                app: ApplicationId {
                    cluster_timestamp: 1,
                    id: 1,
                },
                attempt: 1,
            },
            id: 2,
        }
    }

    fn spec(dir: &Path, program: &str, args: &[&str]) -> ContainerProcessSpec {
        ContainerProcessSpec {
            container_id: container(),
            program: program.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            env: vec![("MINE".into(), "1".into())],
            work_dir: dir.join("work"),
            log_dir: dir.join("logs"),
            memory_limit_bytes: 1 << 30,
        }
    }

    #[test]
    fn the_environment_is_the_whitelist_yarns_variables_then_the_containers() {
        let dir = Path::new("/tmp/x");
        let mut s = spec(dir, "/bin/true", &[]);
        s.env.push(("PATH".into(), "/mine".into()));
        let nm = |name: &str| match name {
            "PATH" => Some("/usr/bin".to_string()),
            "LANG" => Some("C".to_string()),
            "SECRET" | "JAVA_HOME" => None,
            "RUST_LOG" => Some("info".to_string()),
            "HOME" => Some("/home/nm".to_string()),
            _ => None,
        };
        let whitelist = vec![
            "PATH".to_string(),
            "LANG".to_string(),
            "SECRET_NOT_SET".to_string(),
        ];
        let env = container_env(&s, &whitelist, nm);
        let get = |n: &str| env.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("LANG"), Some("C"));
        assert_eq!(get("RUST_LOG"), Some("info"));
        assert_eq!(get("HOME"), Some("/home/nm"));
        assert_eq!(get("PATH"), Some("/mine"), "the container's own value wins");
        assert_eq!(get("MINE"), Some("1"));
        assert_eq!(get("CONTAINER_ID"), Some("container_1_0001_01_000002"));
        assert_eq!(get("PWD"), Some("/tmp/x/work"));
        assert_eq!(get("LOG_DIRS"), Some("/tmp/x/logs"));
        assert_eq!(get("SECRET"), None, "only what the whitelist names is inherited");
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(names.len(), unique.len(), "each variable once: {names:?}");
    }

    #[test]
    fn a_launch_context_becomes_a_process_in_yarns_directories() {
        let id = container();
        let work = container_work_dir(Path::new("/nm/local"), "alice", &id);
        assert_eq!(
            work,
            Path::new("/nm/local/usercache/alice/appcache/application_1_0001/container_1_0001_01_000002")
        );
        let logs = container_log_dir(Path::new("/nm/logs"), &id);
        assert_eq!(
            logs,
            Path::new("/nm/logs/application_1_0001/container_1_0001_01_000002")
        );
        let context = crate::yarn::records::ContainerLaunchContext {
            command: vec!["sparkyard".into(), "executor".into(), "--log=<LOG_DIR>/x".into()],
            environment: [("SPARK_LOG".to_string(), "<LOG_DIR>".to_string())].into(),
            local_resources: Default::default(),
            tokens: None,
        };
        let spec = ContainerProcessSpec::from_launch_context(
            id,
            1024,
            &context,
            "/bin/sparkyard".into(),
            work.clone(),
            logs.clone(),
        );
        assert_eq!(spec.program, Path::new("/bin/sparkyard"));
        assert_eq!(
            spec.args,
            vec![
                "executor".to_string(),
                "--log=/nm/logs/application_1_0001/container_1_0001_01_000002/x".to_string()
            ]
        );
        assert_eq!(
            spec.env,
            vec![(
                "SPARK_LOG".to_string(),
                "/nm/logs/application_1_0001/container_1_0001_01_000002".to_string()
            )]
        );
        assert_eq!((spec.work_dir, spec.log_dir), (work, logs));
        assert_eq!(spec.memory_limit_bytes, 1 << 30);
    }

    #[test]
    fn exit_statuses_are_the_codes_or_128_plus_the_signal() {
        assert_eq!(yarn_exit_status(ExitStatus::from_raw(0)), 0);
        assert_eq!(yarn_exit_status(ExitStatus::from_raw(3 << 8)), 3);
        assert_eq!(yarn_exit_status(ExitStatus::from_raw(15)), EXIT_TERMINATED);
        assert_eq!(yarn_exit_status(ExitStatus::from_raw(9)), EXIT_FORCE_KILLED);
    }

    #[test]
    fn a_program_that_cannot_run_fails_as_bash_reports_it() {
        let missing = exec_failure(Path::new("/no/such"), &io::Error::from_raw_os_error(2));
        assert_eq!(
            missing,
            LaunchFailure {
                exit_code: 127,
                message: "/no/such: No such file or directory".into()
            }
        );
        let denied = exec_failure(Path::new("/etc/hosts"), &io::Error::from_raw_os_error(13));
        assert_eq!(denied.exit_code, 126);
        assert_eq!(denied.message, "/etc/hosts: Permission denied");
    }

    #[test]
    fn diagnostics_say_killed_on_request_or_carry_the_stderr_tail() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(exit_diagnostics(0, dir.path()), "");
        assert_eq!(
            exit_diagnostics(143, dir.path()),
            "Container killed on request. Exit code is 143"
        );
        assert_eq!(
            exit_diagnostics(137, dir.path()),
            "Container killed on request. Exit code is 137"
        );
        assert_eq!(exit_diagnostics(1, dir.path()), "", "no stderr file");
        let long = format!("{}the end\n", "x".repeat(5000));
        fs::write(dir.path().join("stderr"), &long).unwrap();
        let diag = exit_diagnostics(1, dir.path());
        assert!(
            diag.starts_with("Error file: stderr.\nLast 4096 bytes of stderr :\nxxx"),
            "{diag}"
        );
        assert!(diag.ends_with("the end\n"));
        assert_eq!(
            diag.len(),
            "Error file: stderr.\nLast 4096 bytes of stderr :\n".len() + 4096
        );
    }

    #[test]
    fn signals_parse_by_name() {
        assert_eq!("KILL".parse(), Ok(ProcessSignal::Kill));
        assert_eq!("sigterm".parse(), Ok(ProcessSignal::Term));
        assert_eq!("STOP".parse(), Ok(ProcessSignal::Stop));
        assert_eq!("Cont".parse(), Ok(ProcessSignal::Cont));
        assert_eq!(
            "HUP".parse::<ProcessSignal>(),
            Err("unknown signal 'HUP' (expected KILL, TERM, STOP or CONT)".to_string())
        );
        assert!(signal_group(0, ProcessSignal::Term).is_err(), "pid 0 is refused");
    }

    #[test]
    fn the_defaults_are_yarns() {
        let conf = ContainerExecutorConf::default();
        assert_eq!(conf.sigkill_delay, Duration::from_millis(250));
        assert_eq!(conf.monitor_interval, Duration::from_secs(3));
        assert!(conf.pmem_check);
        assert_eq!(conf.vmem_limit(1 << 30), (2.1 * (1u64 << 30) as f64) as u64);
        assert_eq!(conf.env_whitelist.len(), 10);
        assert!(conf.env_whitelist.iter().any(|v| v == "PATH"));
        let mut bad = SparkConf::new();
        bad.set("yarn.nodemanager.container-monitor.interval-ms", "0");
        let err = ContainerExecutorConf::from_conf(&bad).unwrap_err().to_string();
        assert!(
            err.contains("yarn.nodemanager.container-monitor.interval-ms"),
            "{err}"
        );
    }

    #[actix_rt::test]
    async fn a_process_runs_in_its_directory_and_group_with_its_output_in_the_log_dir() {
        let dir = tempfile::tempdir().unwrap();
        let s = spec(
            dir.path(),
            "/bin/sh",
            &[
                "-c",
                "echo out; echo err >&2; pwd; echo $MINE; cut -d' ' -f5 /proc/$$/stat; exit 3",
            ],
        );
        let mut launched = launch(&s, &ContainerExecutorConf::default()).expect("started");
        let status = launched.child.wait().await.unwrap();
        assert_eq!(yarn_exit_status(status), 3);
        let out = fs::read_to_string(s.log_dir.join("stdout")).unwrap();
        let lines: Vec<&str> = out.lines().map(str::trim).collect();
        assert_eq!(lines[0], "out");
        assert_eq!(Path::new(lines[1]), s.work_dir.canonicalize().unwrap());
        assert_eq!(lines[2], "1");
        assert_eq!(lines[3], launched.pid.to_string(), "its own process group");
        assert_eq!(fs::read_to_string(s.log_dir.join("stderr")).unwrap(), "err\n");
        // Only their owner (and group) read them, as YARN's LinuxContainerExecutor makes them.
        assert_eq!(perms::mode_of(&s.work_dir).unwrap(), 0o750);
        assert_eq!(perms::mode_of(&s.log_dir).unwrap(), 0o750);
        assert_eq!(perms::mode_of(&s.log_dir.join("stdout")).unwrap(), 0o640);
        assert_eq!(perms::mode_of(&s.log_dir.join("stderr")).unwrap(), 0o640);
    }

    #[actix_rt::test]
    async fn a_missing_program_fails_to_launch_and_says_so_in_its_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let s = spec(dir.path(), "/no/such/program", &[]);
        let failure = launch(&s, &ContainerExecutorConf::default()).unwrap_err();
        assert_eq!(failure.exit_code, 127);
        assert_eq!(
            fs::read_to_string(s.log_dir.join("stderr")).unwrap(),
            "/no/such/program: No such file or directory\n"
        );
    }

    #[actix_rt::test]
    async fn signals_reach_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let s = spec(dir.path(), "/bin/sh", &["-c", "sleep 30 & wait"]);
        let mut launched = launch(&s, &ContainerExecutorConf::default()).expect("started");
        assert!(group_alive(launched.pid));
        signal_group(launched.pid, ProcessSignal::Kill).unwrap();
        let status = launched.child.wait().await.unwrap();
        assert_eq!(yarn_exit_status(status), 137);
        // The background sleep was in the group too: no process of it runs on (an orphan
        // may stay a zombie where init does not reap).
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while crate::yarn::container_monitor::group_has_live(launched.pid) {
            assert!(std::time::Instant::now() < deadline, "the group outlived SIGKILL");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}
