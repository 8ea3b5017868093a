//! What a YARN user types to find applications and nodes: `sparkyard application` as `yarn
//! application` and `sparkyard node -list` as `yarn node -list`, against a running node's
//! client port (found at `yarn.resourcemanager.address`, as `sparkyard actors` finds it).
//!
//! Layer: cli (the top: parses commands and assembles processes).
//!
//! - `application -list [-appStates S1,S2|ALL] [-appTypes T1,T2]`: ApplicationCLI's table
//!   (default states SUBMITTED, ACCEPTED, RUNNING; ALL is every state, so every application
//!   the node keeps: the running ones and the last
//!   `yarn.resourcemanager.max-completed-applications` finished ones);
//! - `application -status <id>`: the application report block;
//! - `application -kill <id>`: "Killing application <id>", or "Application <id> has already
//!   finished " for one that ended (YARN's text, its trailing space included);
//! - `application -appattempts <id>` (also `-listattempts <id>`): the attempts table of
//!   `yarn applicationattempt -list <id>`;
//! - `node -list [-all] [-states S1,S2]`: NodeCLI's table (default RUNNING nodes).
//!
//! Options take YARN's single dash (a double dash is accepted too); `--config-dir DIR` and
//! `--conf KEY=VALUE` (`-c`) find the node as the other commands do. A malformed id, an
//! unknown state or option, an application the node does not have: one line on stderr
//! (YARN's words where it has them) and exit status 1.
//!
//! With `yarn.acl.enable`, every caller sees every application in the list (as YARN's
//! getApplications), but one without VIEW_APP on it sees "N/A" for its AM host, tracking
//! URL and diagnostics, no progress and no attempts (see `yarn::client_service`).

use std::io::Write;
use std::path::PathBuf;

use super::config;
use super::control::{node_address, NodeAddress, CONTROL_TIMEOUT};
use super::{fail, EXIT_BAD_INPUT, EXIT_OK};
use crate::conf::SparkConf;
use crate::yarn::protocol::{
    ApplicationListing, ClientCall, ClientConnection, ClientRequest, ClientResponse, GetApplications,
    GetNodeReports, KillApplication,
};
use crate::yarn::records::{ApplicationId, ApplicationReport, NodeReport, NodeState, YarnApplicationState};

const WHO_APP: &str = "sparkyard application";
const WHO_NODE: &str = "sparkyard node";

/// YARN's NodeState names, in its order; sparkyard's nodes are only ever RUNNING,
/// DECOMMISSIONING, DECOMMISSIONED or LOST.
const NODE_STATES: [&str; 8] = [
    "NEW",
    "RUNNING",
    "UNHEALTHY",
    "DECOMMISSIONED",
    "LOST",
    "REBOOTED",
    "DECOMMISSIONING",
    "SHUTDOWN",
];

/// What `sparkyard application` was asked to do.
#[derive(Clone, Debug, PartialEq)]
pub enum AppCommand {
    /// `-list`: the states (all of them for ALL) and the upper-cased types.
    List {
        states: Vec<YarnApplicationState>,
        types: Vec<String>,
    },
    Status(ApplicationId),
    Kill(ApplicationId),
    Attempts(ApplicationId),
    Help,
}

/// Where the node is: `--config-dir` and `--conf` as the other commands take them.
#[derive(Clone, Debug, Default, PartialEq)]
struct Where {
    config_dir: Option<PathBuf>,
    conf: Vec<String>,
}

/// The option names without their dashes (`-list`, `--list` → `list`), or None for a value.
fn option_name(arg: &str) -> Option<&str> {
    arg.strip_prefix("--")
        .or_else(|| arg.strip_prefix('-'))
        .filter(|n| !n.is_empty())
}

/// A command's options with their values, in order.
type Options = Vec<(String, Option<String>)>;

/// A parsed command line: what to do, the `--conf KEY=VALUE` pairs and the `--config-dir`.
pub type ParsedArgs<T> = (T, Vec<String>, Option<PathBuf>);

/// Splits `args` into the command's options with their values and where the node is.
fn split_where(args: &[String], takes_value: &[&str]) -> Result<(Options, Where), String> {
    let mut opts = Vec::new();
    let mut place = Where::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let Some(name) = option_name(arg) else {
            return Err(format!("unexpected argument '{arg}'"));
        };
        let (name, inline) = match name.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (name, None),
        };
        let mut value = |what: &str| -> Result<String, String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => it
                    .next()
                    .cloned()
                    .ok_or_else(|| format!("Missing argument for option -{what}")),
            }
        };
        match name {
            "config-dir" => place.config_dir = Some(PathBuf::from(value(name)?)),
            "conf" | "c" => place.conf.push(value(name)?),
            n if takes_value.contains(&n) => {
                let v = value(n)?;
                opts.push((n.to_string(), Some(v)));
            }
            n => opts.push((n.to_string(), inline)),
        }
    }
    Ok((opts, place))
}

/// The comma-separated values of a list option, trimmed, empty ones dropped.
fn values(v: &str) -> impl Iterator<Item = &str> {
    v.split(',').map(str::trim).filter(|s| !s.is_empty())
}

/// ApplicationCLI's list of valid states.
fn valid_app_states() -> String {
    let names: Vec<String> = YarnApplicationState::ALL.iter().map(|s| s.to_string()).collect();
    format!(
        "The valid application state can be one of the following: ALL,{}",
        names.join(",")
    )
}

/// A YarnApplicationState by its name (any case).
pub fn parse_app_state(name: &str) -> Option<YarnApplicationState> {
    YarnApplicationState::ALL
        .iter()
        .copied()
        .find(|s| s.to_string().eq_ignore_ascii_case(name.trim()))
}

fn parse_id(v: &str) -> Result<ApplicationId, String> {
    v.trim().parse::<ApplicationId>()
}

/// Parses `sparkyard application`'s arguments (after the command's name).
pub fn parse_application(args: &[String]) -> Result<ParsedArgs<AppCommand>, String> {
    let (opts, place) = split_where(
        args,
        &[
            "appStates",
            "appTypes",
            "status",
            "kill",
            "appattempts",
            "listattempts",
        ],
    )?;
    let mut command: Option<AppCommand> = None;
    let mut states: Option<Vec<YarnApplicationState>> = None;
    let mut types: Vec<String> = Vec::new();
    let set = |c: AppCommand, command: &mut Option<AppCommand>| -> Result<(), String> {
        if command.is_some() {
            return Err("give one of -list, -status, -kill, -appattempts".to_string());
        }
        *command = Some(c);
        Ok(())
    };
    for (name, value) in opts {
        let value = value.unwrap_or_default();
        match name.as_str() {
            "list" => set(
                AppCommand::List {
                    states: Vec::new(),
                    types: Vec::new(),
                },
                &mut command,
            )?,
            "status" => set(AppCommand::Status(parse_id(&value)?), &mut command)?,
            "kill" => set(AppCommand::Kill(parse_id(&value)?), &mut command)?,
            "appattempts" | "listattempts" => set(AppCommand::Attempts(parse_id(&value)?), &mut command)?,
            "help" | "h" => set(AppCommand::Help, &mut command)?,
            "appStates" => {
                let mut chosen = states.take().unwrap_or_default();
                for s in values(&value) {
                    if s.eq_ignore_ascii_case("ALL") {
                        chosen = YarnApplicationState::ALL.to_vec();
                        break;
                    }
                    match parse_app_state(s) {
                        Some(st) if !chosen.contains(&st) => chosen.push(st),
                        Some(_) => {}
                        None => {
                            return Err(format!(
                                "The application state {s} is invalid. {}",
                                valid_app_states()
                            ))
                        }
                    }
                }
                states = Some(chosen);
            }
            "appTypes" => {
                for t in values(&value) {
                    let t = t.to_uppercase();
                    if !types.contains(&t) {
                        types.push(t);
                    }
                }
            }
            other => return Err(format!("Unrecognized option: -{other}")),
        }
    }
    let command = match command {
        Some(AppCommand::List { .. }) => {
            let mut states = states
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| {
                    vec![
                        YarnApplicationState::Submitted,
                        YarnApplicationState::Accepted,
                        YarnApplicationState::Running,
                    ]
                });
            // EnumSet's order.
            states.sort_by_key(|s| YarnApplicationState::ALL.iter().position(|x| x == s));
            AppCommand::List { states, types }
        }
        Some(other) if states.is_some() || !types.is_empty() => {
            let _ = other;
            return Err("-appStates and -appTypes work with -list only".to_string());
        }
        Some(other) => other,
        None => return Err("give one of -list, -status <Application ID>, -kill <Application ID>, -appattempts <Application ID> (-help lists them)".to_string()),
    };
    let conf_pairs = place.conf;
    Ok((command, conf_pairs, place.config_dir))
}

/// What `sparkyard node -list` was asked for: YARN's state names (every one for -all).
pub fn parse_node_list(args: &[String]) -> Result<ParsedArgs<Vec<String>>, String> {
    let (opts, place) = split_where(args, &["states"])?;
    let mut list = false;
    let mut all = false;
    let mut states: Vec<String> = Vec::new();
    for (name, value) in opts {
        match name.as_str() {
            "list" => list = true,
            "all" => all = true,
            "states" => {
                for s in values(&value.unwrap_or_default()) {
                    let upper = s.to_uppercase();
                    if !NODE_STATES.contains(&upper.as_str()) {
                        return Err(format!(
                            "The node state {s} is invalid. The valid node state can be one of the following: {}.",
                            NODE_STATES.join(",")
                        ));
                    }
                    if !states.contains(&upper) {
                        states.push(upper);
                    }
                }
            }
            other => return Err(format!("Unrecognized option: -{other}")),
        }
    }
    if !list {
        return Err("-all and -states work with -list only".to_string());
    }
    let states = if all {
        NODE_STATES.iter().map(|s| s.to_string()).collect()
    } else if states.is_empty() {
        vec!["RUNNING".to_string()]
    } else {
        states
    };
    Ok((states, place.conf, place.config_dir))
}

/// sparkyard's node state of a YARN name, if its nodes can be in it.
fn node_state(name: &str) -> Option<NodeState> {
    match name {
        "RUNNING" => Some(NodeState::Running),
        "DECOMMISSIONING" => Some(NodeState::Decommissioning),
        "DECOMMISSIONED" => Some(NodeState::Decommissioned),
        "LOST" => Some(NodeState::Lost),
        _ => None,
    }
}

/// Java's `DecimalFormat("###.##%")` of a progress in [0, 1]: "0%", "12.5%", "100%".
pub fn percent(progress: f32) -> String {
    let hundredths = (f64::from(progress) * 10_000.0).round() as i64;
    let whole = hundredths / 100;
    let frac = hundredths % 100;
    match frac {
        0 => format!("{whole}%"),
        f if f % 10 == 0 => format!("{whole}.{}%", f / 10),
        f => format!("{whole}.{f:02}%"),
    }
}

fn or_na(v: &Option<String>) -> &str {
    v.as_deref().filter(|s| !s.is_empty()).unwrap_or("N/A")
}

/// ApplicationCLI's row pattern: `%30s\t%20s\t%20s\t%10s\t%10s\t%18s\t%18s\t%15s\t%35s`.
fn app_row(cols: [&str; 9]) -> String {
    format!(
        "{:>30}\t{:>20}\t{:>20}\t{:>10}\t{:>10}\t{:>18}\t{:>18}\t{:>15}\t{:>35}\n",
        cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7], cols[8]
    )
}

/// Java's `Set.toString`: `[A, B]`.
fn java_set<T: ToString>(items: &[T]) -> String {
    format!(
        "[{}]",
        items.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
    )
}

/// `yarn application -list`'s output for `listed`.
pub fn format_list(
    states: &[YarnApplicationState],
    types: &[String],
    listed: &[ApplicationListing],
) -> String {
    let mut text = format!(
        "Total number of applications (application-types: {} and states: {}):{}\n",
        java_set(types),
        java_set(states),
        listed.len()
    );
    text.push_str(&app_row([
        "Application-Id",
        "Application-Name",
        "Application-Type",
        "User",
        "Queue",
        "State",
        "Final-State",
        "Progress",
        "Tracking-URL",
    ]));
    for l in listed {
        let r = &l.report;
        text.push_str(&app_row([
            &r.app_id.to_string(),
            &r.name,
            &r.app_type,
            &r.user,
            &r.queue,
            &r.state.to_string(),
            &r.final_status.to_string(),
            &percent(l.progress),
            or_na(&r.tracking_url),
        ]));
    }
    text
}

/// `yarn application -status`'s report block.
pub fn format_status(l: &ApplicationListing) -> String {
    let r: &ApplicationReport = &l.report;
    let lines = [
        ("Application-Id", r.app_id.to_string()),
        ("Application-Name", r.name.clone()),
        ("Application-Type", r.app_type.clone()),
        ("User", r.user.clone()),
        ("Queue", r.queue.clone()),
        ("Application Priority", "0".to_string()),
        ("Start-Time", r.start_time.to_string()),
        ("Finish-Time", r.finish_time.to_string()),
        ("Progress", percent(l.progress)),
        ("State", r.state.to_string()),
        ("Final-State", r.final_status.to_string()),
        ("Tracking-URL", or_na(&r.tracking_url).to_string()),
        ("RPC Port", r.rpc_port.unwrap_or(-1).to_string()),
        ("AM Host", or_na(&r.host).to_string()),
        ("Aggregate Resource Allocation", "N/A".to_string()),
        ("Log Aggregation Status", "N/A".to_string()),
        ("Diagnostics", r.diagnostics.clone()),
        ("Unmanaged Application", "false".to_string()),
    ];
    let mut text = "Application Report : \n".to_string();
    for (k, v) in lines {
        text.push_str(&format!("\t{k} : {v}\n"));
    }
    text
}

/// `yarn applicationattempt -list`'s table.
pub fn format_attempts(l: &ApplicationListing) -> String {
    let row = |a: &str, b: &str, c: &str, d: &str| format!("{a:>30}\t{b:>20}\t{c:>35}\t{d:>35}\n");
    let mut text = format!("Total number of application attempts :{}\n", l.attempts.len());
    text.push_str(&row(
        "ApplicationAttempt-Id",
        "State",
        "AM-Container-Id",
        "Tracking-URL",
    ));
    for a in &l.attempts {
        text.push_str(&row(
            &a.attempt_id.to_string(),
            &a.state,
            &a.am_container
                .map(|c| c.to_string())
                .unwrap_or_else(|| "N/A".to_string()),
            or_na(&a.tracking_url),
        ));
    }
    text
}

/// `yarn node -list`'s table: `%16s\t%15s\t%17s\t%28s`. sparkyard's NodeManagers serve no
/// web pages yet: their HTTP address is N/A, and a node's id is its host.
pub fn format_nodes(nodes: &[NodeReport]) -> String {
    let row = |a: &str, b: &str, c: &str, d: &str| format!("{a:>16}\t{b:>15}\t{c:>17}\t{d:>28}\n");
    let mut text = format!("Total Nodes:{}\n", nodes.len());
    text.push_str(&row(
        "Node-Id",
        "Node-State",
        "Node-Http-Address",
        "Number-of-Running-Containers",
    ));
    for n in nodes {
        text.push_str(&row(
            &n.host,
            &n.state.to_string(),
            "N/A",
            &n.num_containers.to_string(),
        ));
    }
    text
}

/// The node's configuration from `--config-dir` and `--conf`, checked.
fn load_conf(pairs: &[String], dir: Option<&std::path::Path>) -> Result<SparkConf, String> {
    let pairs = pairs
        .iter()
        .map(|p| config::parse_conf_pair(p))
        .collect::<Result<Vec<_>, _>>()?;
    let (kept, warnings) = config::spark_and_yarn_only(pairs);
    for w in warnings {
        eprintln!("warning: {w}");
    }
    let loaded = config::load(dir, &kept)?;
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    Ok(loaded.conf)
}

/// One client call to the node at `addr`.
fn ask(addr: &NodeAddress, request: ClientRequest) -> Result<ClientResponse, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the client's runtime: {e}"))?;
    runtime.block_on(async move {
        let mut conn = ClientConnection::connect_secured(&addr.addr, CONTROL_TIMEOUT, addr.keyring.clone())
            .await
            .map_err(|e| e.to_string())?;
        match conn
            .call(ClientCall::current(request), CONTROL_TIMEOUT)
            .await
            .map_err(|e| e.to_string())?
        {
            ClientResponse::Failed(why) | ClientResponse::Denied(why) => Err(why),
            answer => Ok(answer),
        }
    })
}

fn unexpected(addr: &NodeAddress, answer: ClientResponse) -> String {
    format!("unexpected answer from the node at {addr}: {answer:?}")
}

/// The listing of `app` (every state), or YARN's "doesn't exist" line.
fn listing_of(addr: &NodeAddress, app: ApplicationId, missing: &str) -> Result<ApplicationListing, String> {
    let request = ClientRequest::GetApplications(GetApplications {
        states: Vec::new(),
        types: Vec::new(),
    });
    match ask(addr, request)? {
        ClientResponse::Applications(all) => all
            .into_iter()
            .find(|l| l.report.app_id == app)
            .ok_or_else(|| format!("Application with id '{app}' {missing}")),
        other => Err(unexpected(addr, other)),
    }
}

/// Runs `command` against the node of `conf`, printing on `out`.
pub fn application(conf: &SparkConf, command: AppCommand, out: &mut dyn Write) -> Result<(), String> {
    let addr = node_address(conf)?;
    let text = match command {
        AppCommand::Help => usage(),
        AppCommand::List { states, types } => {
            let request = ClientRequest::GetApplications(GetApplications {
                states: states.clone(),
                types: types.clone(),
            });
            match ask(&addr, request)? {
                ClientResponse::Applications(listed) => format_list(&states, &types, &listed),
                other => return Err(unexpected(&addr, other)),
            }
        }
        AppCommand::Status(app) => format_status(&listing_of(
            &addr,
            app,
            "doesn't exist in RM or Timeline Server.",
        )?),
        AppCommand::Attempts(app) => format_attempts(&listing_of(
            &addr,
            app,
            "doesn't exist in RM or Timeline Server.",
        )?),
        AppCommand::Kill(app) => {
            // The listing, not the report: YARN shows every caller the application's state
            // and leaves the refusal to the kill itself (MODIFY_APP).
            let state = listing_of(&addr, app, "doesn't exist in RM.")?.report.state;
            if state.is_final() {
                format!("Application {app} has already finished \n")
            } else {
                out.write_all(format!("Killing application {app}\n").as_bytes())
                    .map_err(|e| format!("cannot write output: {e}"))?;
                let kill = ClientRequest::KillApplication(KillApplication {
                    app_id: app,
                    diagnostics: String::new(),
                });
                match ask(&addr, kill)? {
                    ClientResponse::KillApplication(Ok(())) => String::new(),
                    ClientResponse::KillApplication(Err(e)) => return Err(e.to_string()),
                    other => return Err(unexpected(&addr, other)),
                }
            }
        }
    };
    out.write_all(text.as_bytes())
        .map_err(|e| format!("cannot write output: {e}"))
}

/// `sparkyard application`'s usage.
pub fn usage() -> String {
    format!(
        "usage: sparkyard application [--config-dir DIR] [--conf KEY=VALUE]...\n \
-appattempts <Application ID>   Lists the attempts of the application (also -listattempts).\n \
-appStates <States>             Works with -list to filter applications based on input\n                                 \
comma-separated list of application states. {}\n \
-appTypes <Types>               Works with -list to filter applications based on input\n                                 \
comma-separated list of application types.\n \
-help                           Displays help for all commands.\n \
-kill <Application ID>          Kills the application.\n \
-list                           List applications. Supports optional use of -appTypes to\n                                 \
filter applications based on application type, and -appStates to filter\n                                 \
applications based on application state.\n \
-status <Application ID>        Prints the status of the application.\n",
        valid_app_states()
    )
}

/// `sparkyard application <args>`; answers the exit status.
pub fn run_application(args: &[String]) -> i32 {
    let (command, pairs, dir) = match parse_application(args) {
        Ok(parsed) => parsed,
        Err(e) => {
            fail(WHO_APP, &e);
            return EXIT_BAD_INPUT;
        }
    };
    if command == AppCommand::Help {
        print!("{}", usage());
        return EXIT_OK;
    }
    let stdout = std::io::stdout();
    let result =
        load_conf(&pairs, dir.as_deref()).and_then(|conf| application(&conf, command, &mut stdout.lock()));
    match result {
        Ok(()) => EXIT_OK,
        Err(e) => {
            fail(WHO_APP, &e);
            EXIT_BAD_INPUT
        }
    }
}

/// Whether `sparkyard node <args>` is `yarn node -list` rather than the daemon.
pub fn is_node_list(args: &[String]) -> bool {
    args.iter()
        .any(|a| matches!(option_name(a), Some("list" | "all" | "states")) || a.starts_with("-states="))
}

/// `sparkyard node -list <args>`; answers the exit status.
pub fn run_node_list(args: &[String]) -> i32 {
    let (states, pairs, dir) = match parse_node_list(args) {
        Ok(parsed) => parsed,
        Err(e) => {
            fail(WHO_NODE, &e);
            return EXIT_BAD_INPUT;
        }
    };
    let result = load_conf(&pairs, dir.as_deref()).and_then(|conf| {
        let addr = node_address(&conf)?;
        let wanted: Vec<NodeState> = states.iter().filter_map(|s| node_state(s)).collect();
        let nodes = if wanted.is_empty() {
            // Only states sparkyard's nodes are never in.
            Vec::new()
        } else {
            match ask(
                &addr,
                ClientRequest::GetNodeReports(GetNodeReports { states: wanted }),
            )? {
                ClientResponse::NodeReports(nodes) => nodes,
                other => return Err(unexpected(&addr, other)),
            }
        };
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        out.write_all(format_nodes(&nodes).as_bytes())
            .map_err(|e| format!("cannot write output: {e}"))
    });
    match result {
        Ok(()) => EXIT_OK,
        Err(e) => {
            fail(WHO_NODE, &e);
            EXIT_BAD_INPUT
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn list_defaults_to_the_live_states_and_all_means_every_state() {
        let (c, _, _) = parse_application(&args("-list")).unwrap();
        assert_eq!(
            c,
            AppCommand::List {
                states: vec![
                    YarnApplicationState::Submitted,
                    YarnApplicationState::Accepted,
                    YarnApplicationState::Running
                ],
                types: vec![]
            }
        );
        let (c, _, _) = parse_application(&args("-list -appStates ALL -appTypes spark,Spark")).unwrap();
        assert_eq!(
            c,
            AppCommand::List {
                states: YarnApplicationState::ALL.to_vec(),
                types: vec!["SPARK".to_string()]
            }
        );
        let (c, pairs, dir) = parse_application(&args(
            "-list -appStates killed,FINISHED --conf a=b --config-dir d",
        ))
        .unwrap();
        assert_eq!(
            c,
            AppCommand::List {
                states: vec![YarnApplicationState::Finished, YarnApplicationState::Killed],
                types: vec![]
            }
        );
        assert_eq!(pairs, ["a=b"]);
        assert_eq!(dir, Some(PathBuf::from("d")));
    }

    #[test]
    fn bad_states_ids_and_options_are_one_line_in_yarns_words() {
        let e = parse_application(&args("-list -appStates RUNING")).unwrap_err();
        assert_eq!(
            e,
            "The application state RUNING is invalid. The valid application state can be one of the following: ALL,NEW,NEW_SAVING,SUBMITTED,ACCEPTED,RUNNING,FINISHED,FAILED,KILLED"
        );
        let e = parse_application(&args("-status app_1")).unwrap_err();
        assert!(e.contains("invalid application id 'app_1'"), "{e}");
        assert_eq!(
            parse_application(&args("-status")).unwrap_err(),
            "Missing argument for option -status"
        );
        assert_eq!(
            parse_application(&args("-frobnicate")).unwrap_err(),
            "Unrecognized option: -frobnicate"
        );
        assert!(parse_application(&args("")).is_err());
        let e = parse_node_list(&args("-list -states RUNNING,SLEEPY")).unwrap_err();
        assert!(e.starts_with("The node state SLEEPY is invalid."), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn node_list_states() {
        assert_eq!(parse_node_list(&args("-list")).unwrap().0, ["RUNNING"]);
        assert_eq!(parse_node_list(&args("-list -all")).unwrap().0.len(), 8);
        assert_eq!(
            parse_node_list(&args("-list -states lost,decommissioned"))
                .unwrap()
                .0,
            ["LOST", "DECOMMISSIONED"]
        );
        assert!(is_node_list(&args("-list")));
        assert!(!is_node_list(&args("--log-dir x")));
    }

    #[test]
    fn progress_is_printed_as_java_decimal_format_does() {
        assert_eq!(percent(0.0), "0%");
        assert_eq!(percent(1.0), "100%");
        assert_eq!(percent(0.125), "12.5%");
        assert_eq!(percent(0.12345), "12.35%");
        assert_eq!(percent(0.5), "50%");
    }

    #[test]
    fn the_list_header_is_yarns() {
        let text = format_list(&[YarnApplicationState::Running], &[], &[]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "Total number of applications (application-types: [] and states: [RUNNING]):0"
        );
        let cols: Vec<&str> = lines[1].split('\t').map(str::trim).collect();
        assert_eq!(
            cols,
            [
                "Application-Id",
                "Application-Name",
                "Application-Type",
                "User",
                "Queue",
                "State",
                "Final-State",
                "Progress",
                "Tracking-URL"
            ]
        );
        assert!(lines[1].starts_with(&format!("{:>30}", "Application-Id")));
    }
}
