//! The container command line the Spark side writes into a ContainerLaunchContext: the
//! shape of Spark's `java <options> <MainClass> <args>` as
//! `sparkyard [-Dkey=value ...] <role> <role arguments>`, where the role is
//! `application-master` (cluster mode's AM and driver), `executor-launcher` (client mode's
//! AM) or `executor` (CoarseGrainedExecutorBackend). The Client writes the AM's command and
//! ExecutorRunnable an executor's; the binary's command line (`cli::roles`) parses them.
//!
//! Layer: deploy (the Spark side's submission and AM), under apps and cli.

/// The program name at the head of every launch command.
pub const PROGRAM: &str = "sparkyard";
pub const ROLE_APPLICATION_MASTER: &str = "application-master";
pub const ROLE_EXECUTOR_LAUNCHER: &str = "executor-launcher";
pub const ROLE_EXECUTOR: &str = "executor";

/// Builds a launch command: the program, the system properties and extra JVM-style options,
/// then the role and its arguments.
pub fn build_command(
    system_properties: &[(String, String)],
    extra_options: &str,
    role: &str,
    args: Vec<String>,
) -> Vec<String> {
    let mut cmd = vec![PROGRAM.to_string()];
    cmd.extend(system_properties.iter().map(|(k, v)| format!("-D{k}={v}")));
    cmd.extend(extra_options.split_whitespace().map(str::to_string));
    cmd.push(role.to_string());
    cmd.extend(args);
    cmd
}
