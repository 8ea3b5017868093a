//! Container launch commands: the argument vectors a NodeManager runs, parsed.
//!
//! The Spark side writes a command ([`crate::deploy::launch_command`]: the shape of Spark's
//! `java <options> <MainClass> <args>`, `sparkyard [-Dkey=value ...] <role> <role
//! arguments>`); this module reads it. Options before the role are JVM-style system
//! properties; `spark.executor.extraJavaOptions` lands there, as in Spark. Anything else
//! there is refused, as a JVM refuses an unrecognized option, and the container exits with
//! status 1. The NodeManager runs commands through the launcher registry its node is
//! assembled with; [`launchers`] is this binary's entry in it, which parses a command with
//! this module, the same parser the binary's own command line uses, and starts its role
//! with the applications this binary ships ([`applications`]).
//!
//! Layer: cli, the top; it ties the Spark side's roles to YARN's registry, so neither knows
//! the other's launch mechanics.

use crate::context::Applications;
use crate::deploy::am_args::{am_usage, parse_am_args, AmArgs};
use crate::deploy::application_master::{am_process, AmMode};
pub use crate::deploy::launch_command::{
    build_command, PROGRAM, ROLE_APPLICATION_MASTER, ROLE_EXECUTOR, ROLE_EXECUTOR_LAUNCHER,
};
use crate::executor::args::{executor_usage, parse_executor_args, ExecutorArgs};
use crate::executor::backend::executor_process;
use crate::yarn::launcher::{Launch, LauncherRegistry, Process};

/// What a container runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    ApplicationMaster(AmArgs),
    ExecutorLauncher(AmArgs),
    Executor(ExecutorArgs),
}

/// A parsed launch command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchCommand {
    /// `-Dkey=value` options, in order.
    pub system_properties: Vec<(String, String)>,
    pub role: Role,
}

/// The programs a node's containers run: this binary, in the roles a launch command names
/// (`application-master`, `executor-launcher`, `executor`), with the applications it ships
/// ([`applications`]). `sparkyard node` and the embedded cluster of `sparkyard submit` hand
/// it to their NodeManagers.
pub fn launchers() -> LauncherRegistry {
    let applications = applications();
    LauncherRegistry::new().register(PROGRAM, move |l| launch(l, &applications))
}

/// The applications this binary ships: the built-in ones and those a program embedding
/// sparkyard registers ([`crate::apps`]), with their operations. Handed down to the Spark
/// side (SparkSubmit, the ApplicationMaster, executors), which never reaches up to `apps`.
pub fn applications() -> Applications {
    Applications::new(crate::apps::lookup, crate::apps::register_operations)
}

/// Starts a container running this binary: parses its command and starts the role it names.
pub(crate) fn launch(launch: &Launch<'_>, applications: &Applications) -> Result<Process, String> {
    let cmd = parse_launch_command(&launch.context.command, launch.host)?;
    let props = &cmd.system_properties;
    match cmd.role {
        Role::ApplicationMaster(args) => {
            am_process(AmMode::Cluster, args, props, launch, applications.clone())
        }
        Role::ExecutorLauncher(args) => am_process(AmMode::Client, args, props, launch, applications.clone()),
        Role::Executor(args) => Ok(executor_process(args, props, applications.operations())),
    }
}

/// Parses a container's launch command; the error is the one line the container's process
/// would print before exiting 1 (with the role's usage text after it where Spark prints it).
pub fn parse_launch_command(command: &[String], hostname: &str) -> Result<LaunchCommand, String> {
    let Some((program, rest)) = command.split_first() else {
        return Err("empty launch command".into());
    };
    if !(program == PROGRAM || program.ends_with("/sparkyard")) {
        return Err(format!(
            "cannot run '{program}': containers run the {PROGRAM} binary"
        ));
    }
    let mut system_properties = Vec::new();
    let mut idx = 0;
    while let Some(arg) = rest.get(idx) {
        if !arg.starts_with('-') {
            break;
        }
        match arg.strip_prefix("-D").and_then(|kv| kv.split_once('=')) {
            Some((k, v)) if !k.is_empty() => system_properties.push((k.to_string(), v.to_string())),
            _ => {
                return Err(format!(
                    "Unrecognized option: {arg} (only -Dkey=value may come before the role; Error: could not start the container's process)"
                ))
            }
        }
        idx += 1;
    }
    let Some(role) = rest.get(idx) else {
        return Err("the launch command names no role".into());
    };
    let args = rest.get(idx + 1..).unwrap_or_default();
    let role = match role.as_str() {
        ROLE_APPLICATION_MASTER => Role::ApplicationMaster(
            parse_am_args(args).map_err(|e| format!("{e}\n{}", am_usage("sparkyard application-master")))?,
        ),
        ROLE_EXECUTOR_LAUNCHER => Role::ExecutorLauncher(
            parse_am_args(args).map_err(|e| format!("{e}\n{}", am_usage("sparkyard executor-launcher")))?,
        ),
        ROLE_EXECUTOR => Role::Executor(
            parse_executor_args(args, hostname).map_err(|e| format!("{e}\n{}", executor_usage()))?,
        ),
        other => return Err(format!("unknown role '{other}' (expected {ROLE_APPLICATION_MASTER}, {ROLE_EXECUTOR_LAUNCHER} or {ROLE_EXECUTOR})")),
    };
    Ok(LaunchCommand {
        system_properties,
        role,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::args::executor_command;

    #[test]
    fn executor_commands_round_trip_with_options() {
        let args = ExecutorArgs {
            driver_url: "/node/nm-host1/c1/am/driver/driver-endpoint".into(),
            executor_id: "3".into(),
            bind_address: "host2".into(),
            hostname: "host2".into(),
            cores: 2,
            app_id: "application_1_0001".into(),
            worker_url: None,
            resources_file: None,
            resource_profile_id: 0,
        };
        let role_args = executor_command(&args).into_iter().skip(1).collect();
        let cmd = build_command(
            &[("spark.executor.id".into(), "3".into())],
            "-Dspark.a=b",
            ROLE_EXECUTOR,
            role_args,
        );
        assert_eq!(cmd[0], "sparkyard");
        assert_eq!(cmd[1], "-Dspark.executor.id=3");
        let parsed = parse_launch_command(&cmd, "host2").unwrap();
        assert_eq!(parsed.role, Role::Executor(args));
        assert_eq!(parsed.system_properties.len(), 2);
    }

    #[test]
    fn bad_vectors_are_refused_with_one_reason() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let err = parse_launch_command(&v(&["sparkyard", "-XX:+Bogus", "executor"]), "h").unwrap_err();
        assert!(err.starts_with("Unrecognized option: -XX:+Bogus"), "{err}");
        assert!(parse_launch_command(&v(&["java", "executor"]), "h").is_err());
        assert!(parse_launch_command(&v(&["sparkyard"]), "h").is_err());
        assert!(parse_launch_command(&v(&["sparkyard", "dance"]), "h")
            .unwrap_err()
            .starts_with("unknown role 'dance'"));
        let err = parse_launch_command(&v(&["sparkyard", "executor", "--cores", "0"]), "h").unwrap_err();
        assert!(err.contains("Usage:"), "{err}");
        let err = parse_launch_command(&v(&["sparkyard", "application-master", "--bogus"]), "h").unwrap_err();
        assert!(err.starts_with("Unknown/unsupported param --bogus"), "{err}");
    }
}
