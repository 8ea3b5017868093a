//! The `sparkyard` command line: `submit | node | logs | actors | chaos | rmadmin | executor`,
//! with `help <command>` and `completions <shell>` ([`console`]).
//!
//! Layer: cli (the top: parses commands and assembles processes).
//!
//! Every bad input ends with one line on stderr naming the problem and a non-zero status;
//! clap's multi-line errors are joined into one line that keeps the flag and clap's tip. `submit` and `executor` take their
//! arguments raw and parse them as spark-submit and CoarseGrainedExecutorBackend do, so
//! everything after `submit`'s primary resource belongs to the application.
//!
//! `application` and `node -list` take YARN's single-dash spellings and parse their
//! arguments themselves ([`application`]).
//!
//! Exit statuses: 0 success; 1 bad input (arguments or configuration), or for `submit` an
//! application that failed, was killed or ended undefined; 255 `submit` with no arguments at
//! all (spark-submit's -1); 101 `submit` of a class that is not registered (client mode);
//! 130 `submit` interrupted by Ctrl-C; 3 the command needs a part of sparkyard that is not
//! built yet (it says which); 70 `node` whose supervision tree gave up ([`node`]). `actors`,
//! `chaos` and `rmadmin` talk to a running node ([`control`]);
//! a node they cannot reach, a malformed pattern or one that matches no running actor is
//! status 1.

pub mod application;
pub mod config;
pub mod console;
pub mod container;
pub mod control;
pub mod node;
pub mod nodemanager;
pub mod process_containers;
pub mod roles;
pub mod submit;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::error::ErrorKind;
use clap::{Args, CommandFactory, Parser, Subcommand};

use crate::executor::args::executor_usage;
use crate::logs::reader::{self, LogsArgs};
use crate::logs::{Console, LogInit};

/// This machine's host name (the runtime's; the command line names it for every role).
pub use crate::runtime::host::local_hostname;

pub const EXIT_OK: i32 = 0;
pub const EXIT_BAD_INPUT: i32 = 1;
pub const EXIT_NOT_BUILT: i32 = 3;

#[derive(Parser, Debug)]
#[command(
    name = "sparkyard",
    version,
    about = "Spark-on-YARN's control plane as a supervised actor system",
    long_about = "Spark-on-YARN's control plane as a supervised actor system: spark-submit, the YARN \
                  ResourceManager and NodeManagers, the ApplicationMaster and the driver's schedulers, \
                  each an actor under supervision, with structured logs and fault injection.",
    disable_help_subcommand = true,
    arg_required_else_help = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Submit an application, as spark-submit does: options, the application, its arguments
    /// (`sparkyard submit --help` lists the options).
    #[command(disable_help_flag = true)]
    Submit {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
        args: Vec<String>,
    },
    /// Run the all-in-one node: the ResourceManager and the NodeManagers of yarn-site.conf
    /// (`sparkyard node -list [-all] [-states S1,S2]` lists a running node's NodeManagers, as
    /// `yarn node -list` does).
    Node(NodeArgs),
    /// List, inspect and kill a running node's applications, as `yarn application` does:
    /// -list [-appStates S1,S2|ALL] [-appTypes T1,T2], -status <id>, -kill <id>,
    /// -appattempts <id> (`sparkyard application -help` lists them).
    #[command(disable_help_flag = true)]
    Application {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
        args: Vec<String>,
    },
    /// Run the ResourceManager alone, as `yarn resourcemanager` does: NodeManagers of other
    /// processes or hosts join it (`sparkyard nodemanager --rm HOST:PORT`).
    Resourcemanager(NodeArgs),
    /// Run one NodeManager, as `yarn nodemanager` does: it registers with the
    /// ResourceManager's actor endpoint (the address `sparkyard resourcemanager` prints after
    /// "NodeManagers join at") and starts containers as processes.
    Nodemanager(NodeManagerArgs),
    /// Read the structured logs, grouped per container as `yarn logs` prints them.
    Logs(LogsArgs),
    /// Print a running node's supervision tree: path, actor type, incarnation, restarts, status.
    Actors(ActorsArgs),
    /// Inject faults into a running node: kill actors, partition them, run a seeded plan
    /// (the node is found at yarn.resourcemanager.address).
    Chaos(ChaosArgs),
    /// Administer a running node's NodeManagers, as `yarn rmadmin -refreshNodes -g` and
    /// `yarn node -list -all` do: decommission them gracefully, recommission them, list them.
    Rmadmin(RmadminArgs),
    /// The executor backend (CoarseGrainedExecutorBackend) as a NodeManager launches it
    /// (`sparkyard executor --help` lists its arguments).
    #[command(disable_help_flag = true)]
    Executor {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
        args: Vec<String>,
    },
    /// The cluster-mode ApplicationMaster, as a NodeManager launches it.
    #[command(name = "application-master", hide = true, disable_help_flag = true)]
    ApplicationMaster {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
        args: Vec<String>,
    },
    /// The client-mode ApplicationMaster (ExecutorLauncher), as a NodeManager launches it.
    #[command(name = "executor-launcher", hide = true, disable_help_flag = true)]
    ExecutorLauncher {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
        args: Vec<String>,
    },
    /// Print the help of a command (`sparkyard help chaos partition`), or this list.
    Help {
        #[arg(value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Print a shell's completion script for sparkyard's commands and flags
    /// (`source <(sparkyard completions bash)`).
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        #[arg(value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
}

/// Where a command finds its configuration.
#[derive(Args, Debug, Clone, Default)]
struct ConfArgs {
    /// Directory with spark-defaults.conf and yarn-site.conf [default: $SPARKYARD_CONF_DIR, else ./config].
    #[arg(long, value_name = "DIR", global = true)]
    config_dir: Option<PathBuf>,
    /// A Spark or YARN configuration property, overriding the files; may be repeated.
    #[arg(long = "conf", short = 'c', value_name = "KEY=VALUE", global = true)]
    conf: Vec<String>,
}

#[derive(Args, Debug)]
struct NodeArgs {
    #[command(flatten)]
    conf: ConfArgs,
    /// Where structured logs are written [default: $SPARKYARD_LOG_DIR, else ./logs].
    #[arg(long, value_name = "DIR")]
    log_dir: Option<PathBuf>,
    /// error, warn, info, debug, trace, off or a RUST_LOG directive, for the files and the console [default: $RUST_LOG, else info in the files and warn on the console].
    #[arg(long, value_name = "LEVEL")]
    log_level: Option<String>,
}

#[derive(Args, Debug)]
pub struct NodeManagerArgs {
    /// The ResourceManager's actor endpoint (yarn.resourcemanager.resource-tracker.address).
    #[arg(long, value_name = "HOST:PORT")]
    pub rm: String,
    /// This node's host name, as the ResourceManager and locality know it.
    #[arg(long, value_name = "NAME")]
    pub hostname: String,
    /// The address this node and its containers listen on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    pub bind: String,
    /// vcores this node offers [default: yarn.nodemanager.resource.cpu-vcores].
    #[arg(long, value_name = "N")]
    pub vcores: Option<u32>,
    /// Memory this node offers, in MB [default: yarn.nodemanager.resource.memory-mb].
    #[arg(long, value_name = "M")]
    pub memory_mb: Option<u64>,
    /// This node's rack [default: /default-rack].
    #[arg(long, value_name = "RACK")]
    pub rack: Option<String>,
    #[command(flatten)]
    conf: ConfArgs,
    /// Where structured logs are written [default: $SPARKYARD_LOG_DIR, else ./logs].
    #[arg(long, value_name = "DIR")]
    pub log_dir: Option<PathBuf>,
    /// error, warn, info, debug, trace, off or a RUST_LOG directive, for the files and the console [default: $RUST_LOG, else info in the files and warn on the console].
    #[arg(long, value_name = "LEVEL")]
    log_level: Option<String>,
}

#[derive(Args, Debug)]
struct ActorsArgs {
    /// Only the actors of this application (the subtrees of its containers).
    #[arg(long, value_name = "APP_ID")]
    app: Option<String>,
    /// One JSON object per actor instead of the indented table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    conf: ConfArgs,
}

#[derive(Args, Debug)]
struct ChaosArgs {
    #[command(subcommand)]
    action: ChaosAction,
    #[command(flatten)]
    conf: ConfArgs,
}

#[derive(Subcommand, Debug)]
enum ChaosAction {
    /// Kill every actor matching a path or glob (`*` matches anything, `/` included).
    Kill {
        /// An actor path (`/node/rm`) or glob (`*/allocator`).
        target: String,
        /// Kill with a panic instead of a stop.
        #[arg(long)]
        panic: bool,
        /// Kill after this long (e.g. 500ms, 2s, 1m 30s).
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        after: Option<Duration>,
    },
    /// Drop (or delay) every message to and from matching actors for a while.
    Partition {
        /// An actor path or glob.
        target: String,
        /// How long the partition lasts.
        #[arg(long = "for", value_name = "DURATION", value_parser = parse_duration)]
        duration: Duration,
        /// Delay messages by this much instead of dropping them.
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        delay: Option<Duration>,
    },
    /// Send a real signal to container processes (by container id or glob, or an executor's)
    /// or to a NodeManager's process (by host): KILL, TERM, STOP or CONT.
    Signal {
        /// KILL, TERM, STOP or CONT (with or without SIG).
        signal: String,
        /// Container id or glob (`container_*_000002`).
        #[arg(long, value_name = "ID_OR_GLOB", conflicts_with_all = ["executor", "host"])]
        container: Option<String>,
        /// An executor's id: its container's process.
        #[arg(long, value_name = "ID", conflicts_with = "host")]
        executor: Option<String>,
        /// With --executor: the application it belongs to.
        #[arg(long, value_name = "APP_ID", requires = "executor")]
        app: Option<String>,
        /// The NodeManager of this host (started with sparkyard nodemanager).
        #[arg(long, value_name = "HOST")]
        host: Option<String>,
    },
    /// End the partitions in force now: those started with this target, or every one.
    Heal {
        /// The target a partition was started with (every partition without it).
        target: Option<String>,
    },
    /// Run a seeded random plan of kills in the node: spark.sparkyard.chaos.kills kills (3) of
    /// actors drawn from spark.sparkyard.chaos.targets (every killable actor of a node), at
    /// moments drawn from the duration; the same seed gives the same plan.
    Plan {
        /// The plan's seed.
        #[arg(long)]
        seed: u64,
        /// How long the plan runs (its kills fall within it).
        #[arg(long = "for", value_name = "DURATION", value_parser = parse_duration)]
        duration: Duration,
    },
}

#[derive(Args, Debug)]
struct RmadminArgs {
    #[command(subcommand)]
    action: RmadminAction,
    #[command(flatten)]
    conf: ConfArgs,
}

#[derive(Subcommand, Debug)]
enum RmadminAction {
    /// Put NodeManagers into graceful decommission (DECOMMISSIONING): no new container goes
    /// there, the running ones drain (Spark decommissions its executors there with
    /// spark.decommission.enabled), and once they and the applications that ran there are
    /// done, or after the timeout with what still runs killed, the node is DECOMMISSIONED.
    Decommission {
        /// Host names of NodeManagers (`sparkyard rmadmin nodes` lists them).
        #[arg(required = true, value_name = "HOST")]
        hosts: Vec<String>,
        /// How long the nodes may drain [default: yarn.resourcemanager.nodemanager-graceful-decommission-timeout-secs, 3600 s].
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        timeout: Option<Duration>,
    },
    /// Take NodeManagers out of decommission: they run and take containers again.
    Recommission {
        /// Host names of NodeManagers.
        #[arg(required = true, value_name = "HOST")]
        hosts: Vec<String>,
    },
    /// List every NodeManager with its state, decommissioned ones included.
    Nodes,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("'{s}' is not a duration ({e}; e.g. 500ms, 2s, 1m 30s)"))
}

/// Prints `<who>: error: <message>` on stderr.
pub fn fail(who: &str, message: &str) {
    eprintln!("{who}: error: {message}");
}

/// Installs the process's log subscriber: readable lines on stderr at `level` (else
/// `RUST_LOG`, else info for the files and, on the console, warnings plus the INFO records
/// of the actors under `chatty` prefixes).
pub fn init_logs(level: Option<&str>, chatty: &[&str]) -> Result<(), String> {
    crate::logs::init(&LogInit {
        level: level.map(str::to_string),
        console: Console::Human,
        console_quiet_except: Some(chatty.iter().map(|s| s.to_string()).collect()),
    })
}

/// `yarn logs -applicationId <id>` and `-containerId <id>`, YARN's single-dash spellings
/// (clap takes only `--app` and `--container`), given to `sparkyard logs`.
fn yarn_logs_spellings(mut args: Vec<OsString>) -> Vec<OsString> {
    if args.get(1).and_then(|a| a.to_str()) != Some("logs") {
        return args;
    }
    // A flag's value is left alone (`--grep -applicationId` looks for that text).
    const TAKES_VALUE: [&str; 7] = [
        "--log-dir",
        "--app",
        "--container",
        "--actor",
        "--level",
        "--grep",
        "--timeline",
    ];
    let mut value_next = false;
    for a in args.iter_mut().skip(2) {
        let text = a.to_str().unwrap_or("");
        if std::mem::take(&mut value_next) {
            continue;
        }
        if text == "--" {
            break;
        }
        value_next = TAKES_VALUE.contains(&text);
        let long = match text {
            "-applicationId" => "--app",
            "-containerId" => "--container",
            _ => continue,
        };
        value_next = true;
        *a = long.into();
    }
    args
}

/// Ends the process with `code` once stdout is flushed, without the C library's exit
/// handlers: the allocator's (mimalloc collects every heap and hands each page back to the
/// kernel, which frees them all a moment later anyway) is about a tenth of a millisecond to
/// half a millisecond of a short command's life. Everything else that must reach a file
/// was written before this: the clusters flush their logs when they shut down, stderr is
/// unbuffered, and `std::process::exit` would not run destructors either.
pub fn exit(code: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().lock().flush();
    extern "C" {
        fn _exit(status: std::ffi::c_int) -> !;
    }
    // SAFETY: `_exit` ends the process at once; nothing of this process runs after it.
    unsafe { _exit(code) }
}

/// Runs the command line `args` (program name first); returns the exit status.
pub fn run(args: Vec<OsString>) -> i32 {
    if let Some(command) = container_command(&args) {
        return container::run(command);
    }
    // `yarn node -list`'s spellings (single-dash options clap does not take) list a running
    // node's NodeManagers; `sparkyard node` without them is the daemon.
    if args.get(1).and_then(|a| a.to_str()) == Some("node") {
        let rest: Option<Vec<String>> = args[2..].iter().map(|a| a.to_str().map(str::to_string)).collect();
        if let Some(rest) = rest.filter(|r| application::is_node_list(r)) {
            return application::run_node_list(&rest);
        }
    }
    let args = yarn_logs_spellings(args);
    let program = args.first().cloned().unwrap_or_else(|| "sparkyard".into());
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            return match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    print!("{}", e.render());
                    EXIT_OK
                }
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    eprint!("{}", e.render());
                    EXIT_BAD_INPUT
                }
                _ => {
                    fail(
                        "sparkyard",
                        &format!(
                            "{} (see '{} --help')",
                            console::clap_error_line(&e),
                            console::clap_error_command(&e)
                        ),
                    );
                    EXIT_BAD_INPUT
                }
            }
        }
    };
    match cli.command {
        Command::Submit { args } => submit::run(&args),
        Command::Node(args) => node(args, node::Daemon::Node),
        Command::Application { args } => application::run_application(&args),
        Command::Resourcemanager(args) => node(args, node::Daemon::ResourceManager),
        Command::Nodemanager(args) => nodemanager(args),
        Command::Logs(args) => logs(args),
        Command::Actors(args) => actors(args),
        Command::Chaos(args) => chaos(args),
        Command::Rmadmin(args) => rmadmin(args),
        Command::Executor { args } => role(roles::ROLE_EXECUTOR, &args),
        Command::ApplicationMaster { args } => role(roles::ROLE_APPLICATION_MASTER, &args),
        Command::ExecutorLauncher { args } => role(roles::ROLE_EXECUTOR_LAUNCHER, &args),
        Command::Help { command } => run(console::help_args(program, &command)),
        Command::Completions { shell } => {
            console::completions(shell, &mut Cli::command(), &mut std::io::stdout());
            EXIT_OK
        }
    }
}

fn overrides(conf: &ConfArgs) -> Result<Vec<(String, String)>, String> {
    let pairs = conf
        .conf
        .iter()
        .map(|p| config::parse_conf_pair(p))
        .collect::<Result<Vec<_>, _>>()?;
    let (kept, warnings) = config::spark_and_yarn_only(pairs);
    for w in warnings {
        tracing::warn!("{w}");
    }
    Ok(kept)
}

fn node(args: NodeArgs, daemon: node::Daemon) -> i32 {
    let who = match daemon {
        node::Daemon::Node => "sparkyard node",
        node::Daemon::ResourceManager => "sparkyard resourcemanager",
    };
    if let Err(e) = init_logs(args.log_level.as_deref(), &[]) {
        fail(who, &e);
        return EXIT_BAD_INPUT;
    }
    let loaded = overrides(&args.conf).and_then(|o| config::load(args.conf.config_dir.as_deref(), &o));
    let loaded = match loaded {
        Ok(l) => l,
        Err(e) => {
            fail(who, &e);
            return EXIT_BAD_INPUT;
        }
    };
    for w in &loaded.warnings {
        tracing::warn!("{w}");
    }
    match node::run_daemon(daemon, loaded.conf, args.log_dir.as_deref()) {
        Ok(code) => code,
        Err(e) => {
            fail(who, &e);
            EXIT_BAD_INPUT
        }
    }
}

fn nodemanager(args: NodeManagerArgs) -> i32 {
    const WHO: &str = "sparkyard nodemanager";
    if let Err(e) = init_logs(args.log_level.as_deref(), &[]) {
        fail(WHO, &e);
        return EXIT_BAD_INPUT;
    }
    let loaded = overrides(&args.conf).and_then(|o| config::load(args.conf.config_dir.as_deref(), &o));
    let loaded = match loaded {
        Ok(l) => l,
        Err(e) => {
            fail(WHO, &e);
            return EXIT_BAD_INPUT;
        }
    };
    for w in &loaded.warnings {
        tracing::warn!("{w}");
    }
    match nodemanager::run(&args, loaded.conf) {
        Ok(code) => code,
        Err(e) => {
            fail(WHO, &e);
            EXIT_BAD_INPUT
        }
    }
}

fn logs(args: LogsArgs) -> i32 {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let mut out = std::io::LineWriter::new(stdout.lock());
    match reader::run(&args, &mut out, &mut stderr.lock()) {
        Ok(()) => EXIT_OK,
        Err(reader::LogsError::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => EXIT_OK,
        Err(e) => {
            fail("sparkyard logs", &e.to_string());
            EXIT_BAD_INPUT
        }
    }
}

/// The configuration of a control command (`actors`, `chaos`), checked.
fn control_conf(conf: &ConfArgs) -> Result<crate::conf::SparkConf, String> {
    let loaded = overrides(conf).and_then(|o| config::load(conf.config_dir.as_deref(), &o))?;
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    Ok(loaded.conf)
}

fn actors(args: ActorsArgs) -> i32 {
    const WHO: &str = "sparkyard actors";
    let result = control_conf(&args.conf).and_then(|conf| {
        let stdout = std::io::stdout();
        control::actors(&conf, args.app.as_deref(), args.json, &mut stdout.lock())
    });
    match result {
        Ok(()) => EXIT_OK,
        Err(e) => {
            fail(WHO, &e);
            EXIT_BAD_INPUT
        }
    }
}

fn chaos(args: ChaosArgs) -> i32 {
    const WHO: &str = "sparkyard chaos";
    let command = match args.action {
        ChaosAction::Kill { target, panic, after } => control::ChaosCommand::Kill { target, panic, after },
        ChaosAction::Partition {
            target,
            duration,
            delay,
        } => control::ChaosCommand::Partition {
            target,
            duration,
            delay,
        },
        ChaosAction::Plan { seed, duration } => control::ChaosCommand::Plan { seed, duration },
        ChaosAction::Heal { target } => control::ChaosCommand::Heal { target },
        ChaosAction::Signal {
            signal,
            container,
            executor,
            app,
            host,
        } => {
            let target = match (container, executor, host) {
                (Some(c), _, _) => control::ProcessTarget::Containers(c),
                (_, Some(id), _) => control::ProcessTarget::Executor { id, app },
                (_, _, Some(h)) => control::ProcessTarget::Host(h),
                _ => {
                    fail(
                        "sparkyard chaos signal",
                        "name the processes: --container, --executor or --host",
                    );
                    return EXIT_BAD_INPUT;
                }
            };
            control::ChaosCommand::Signal { signal, target }
        }
    };
    let result = control_conf(&args.conf).and_then(|conf| {
        let stdout = std::io::stdout();
        control::chaos(&conf, command, &mut stdout.lock())
    });
    match result {
        Ok(()) => EXIT_OK,
        Err(e) => {
            fail(WHO, &e);
            EXIT_BAD_INPUT
        }
    }
}

fn rmadmin(args: RmadminArgs) -> i32 {
    const WHO: &str = "sparkyard rmadmin";
    let command = match args.action {
        RmadminAction::Decommission { hosts, timeout } => {
            control::RmadminCommand::Decommission { hosts, timeout }
        }
        RmadminAction::Recommission { hosts } => control::RmadminCommand::Recommission { hosts },
        RmadminAction::Nodes => control::RmadminCommand::Nodes,
    };
    let result = control_conf(&args.conf).and_then(|conf| {
        let stdout = std::io::stdout();
        control::rmadmin(&conf, command, &mut stdout.lock())
    });
    match result {
        Ok(()) => EXIT_OK,
        Err(e) => {
            fail(WHO, &e);
            EXIT_BAD_INPUT
        }
    }
}

/// A container role run by hand: its arguments are parsed exactly as the binary's launcher
/// (`roles::launchers`) parses a container's launch command, but the role itself only runs
/// inside a container.
fn role(name: &str, args: &[String]) -> i32 {
    let who = format!("sparkyard {name}");
    if args.iter().any(|a| a == "--help" || a == "-h") {
        let usage = match name {
            roles::ROLE_EXECUTOR => executor_usage(),
            other => crate::deploy::am_args::am_usage(&format!("sparkyard {other}")),
        };
        print!("{usage}");
        return EXIT_OK;
    }
    let mut command = vec![roles::PROGRAM.to_string(), name.to_string()];
    command.extend(args.iter().cloned());
    match roles::parse_launch_command(&command, &local_hostname()) {
        Err(problem) => {
            let mut lines = problem.lines();
            let first = lines.next().unwrap_or("invalid arguments").to_string();
            for line in lines {
                eprintln!("{line}");
            }
            fail(&who, &first);
            EXIT_BAD_INPUT
        }
        Ok(_) => {
            fail(
                &who,
                "arguments are valid, but this role runs inside a container and is launched by a NodeManager (sparkyard node, or the embedded cluster of sparkyard submit)",
            );
            EXIT_NOT_BUILT
        }
    }
}

/// The launch command, when this process is a container a NodeManager started: its working
/// directory holds the launch file and its command names a role (possibly after `-D`
/// options, which the binary's own parser does not take).
fn container_command(args: &[OsString]) -> Option<Vec<String>> {
    let first = args.get(1)?.to_str()?;
    let role = first.starts_with("-D")
        || [
            roles::ROLE_EXECUTOR,
            roles::ROLE_APPLICATION_MASTER,
            roles::ROLE_EXECUTOR_LAUNCHER,
        ]
        .contains(&first);
    if !role || !container::is_container() {
        return None;
    }
    args.iter().map(|a| a.to_str().map(str::to_string)).collect()
}

/// The cluster id of a command's process (`node-<pid>-<start>`, `submit-<pid>-<start>`):
/// every record carries it, so the records of different processes sharing a log directory
/// (a node and the submissions to it, runs one after another) stay apart.
pub fn process_cluster_id(command: &str) -> String {
    let start = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("{command}-{}-{start}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spelled(line: &str) -> Vec<String> {
        let args: Vec<OsString> = line.split(' ').map(OsString::from).collect();
        yarn_logs_spellings(args)
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    #[test]
    fn yarn_logs_spellings_become_the_long_flags_but_not_a_flags_value() {
        assert_eq!(
            spelled("sparkyard logs -applicationId app_1 -containerId c_1"),
            ["sparkyard", "logs", "--app", "app_1", "--container", "c_1"]
        );
        assert_eq!(
            spelled("sparkyard logs --grep -applicationId -applicationId -x"),
            ["sparkyard", "logs", "--grep", "-applicationId", "--app", "-x"]
        );
        assert_eq!(
            spelled("sparkyard actors -applicationId x"),
            ["sparkyard", "actors", "-applicationId", "x"]
        );
    }
}
