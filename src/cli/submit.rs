//! `sparkyard submit`: spark-submit's command line.
//!
//! Parsing follows SparkSubmitArguments (everything after the primary resource belongs to the
//! application); then the configuration is assembled the way spark-submit does it (command
//! line flags > `--conf` > properties file > environment) on top of `yarn-site.conf`, and
//! validated as a whole. Running the application needs the YARN side (ResourceManager,
//! NodeManagers, ApplicationMaster), which this version does not have yet; `submit` says so
//! after the checks and exits with [`super::EXIT_NOT_BUILT`].

use std::io::Write;
use std::path::{Path, PathBuf};

use super::config;
use super::{fail, EXIT_BAD_INPUT, EXIT_NOT_BUILT, EXIT_OK};
use crate::conf::{self, SparkConf};
use crate::deploy::spark_submit_arguments::{
    self as ssa, SparkSubmitAction, SparkSubmitArguments, SubmitArgsError,
};

const WHO: &str = "sparkyard submit";

/// Runs `sparkyard submit <args>`; returns the exit status.
pub fn run(args: &[String]) -> i32 {
    let mut parsed = match ssa::parse(args) {
        Ok(p) => p,
        Err(e) => return report(&e),
    };
    if parsed.action == SparkSubmitAction::PrintVersion {
        print_version();
        return EXIT_OK;
    }
    if let Err(e) = super::init_logs(parsed.log_level.as_deref()) {
        fail(WHO, &e);
        return EXIT_BAD_INPUT;
    }
    let conf = match assemble(&mut parsed) {
        Ok(conf) => conf,
        Err(Problem::Args(e)) => return report(&e),
        Err(Problem::Conf(e)) => {
            fail(WHO, &e);
            return EXIT_BAD_INPUT;
        }
    };
    if parsed.verbose {
        print_verbose(&parsed, &conf);
    }
    let what = match parsed.action {
        SparkSubmitAction::Submit => format!(
            "running {} (master {}, deploy mode {})",
            parsed
                .main_class
                .as_deref()
                .or(parsed.primary_resource.as_deref())
                .unwrap_or("the application"),
            parsed.master.as_deref().unwrap_or("local-cluster"),
            parsed.effective_deploy_mode()
        ),
        SparkSubmitAction::Kill => "--kill".to_string(),
        SparkSubmitAction::RequestStatus | SparkSubmitAction::PrintVersion => "--status".to_string(),
    };
    fail(
        WHO,
        &format!(
            "arguments and configuration are valid, but {what} needs the ResourceManager, NodeManagers and ApplicationMaster, which this version does not have yet"
        ),
    );
    EXIT_NOT_BUILT
}

/// Prints a command-line problem as spark-submit does (the usage text where Spark shows it,
/// then one line) and returns the exit status.
fn report(e: &SubmitArgsError) -> i32 {
    if e.is_help() {
        print!("{}", ssa::usage());
        return EXIT_OK;
    }
    if e.show_usage() {
        eprint!("{}", ssa::usage());
    }
    let message = e.message().unwrap_or("no application given");
    fail(WHO, &format!("{message} (run '{WHO} --help' for usage)"));
    // Spark exits -1 when given no arguments at all, which a process reports as 255.
    if e.exit_code() < 0 {
        255
    } else {
        e.exit_code()
    }
}

enum Problem {
    Args(SubmitArgsError),
    Conf(String),
}

/// Reads the properties files and yarn-site.conf, resolves the arguments as spark-submit does
/// and validates the final configuration.
fn assemble(parsed: &mut SparkSubmitArguments) -> Result<SparkConf, Problem> {
    let dir = config::config_dir(parsed.config_dir.as_deref().map(Path::new)).map_err(Problem::Conf)?;
    let defaults_file = dir.join(conf::SPARK_DEFAULTS_FILE);
    let mut files: Vec<PathBuf> = Vec::new();
    match &parsed.properties_file {
        Some(pf) => {
            files.push(PathBuf::from(pf));
            if parsed.load_spark_defaults && defaults_file.is_file() {
                files.push(defaults_file);
            }
        }
        None if defaults_file.is_file() => files.push(defaults_file),
        None => {}
    }
    let yarn_site = dir.join(conf::YARN_SITE_FILE);
    if yarn_site.is_file() {
        files.push(yarn_site);
    }
    let mut defaults = Vec::new();
    for f in &files {
        defaults.extend(conf::load_properties_file(f).map_err(|e| Problem::Conf(e.to_string()))?);
    }
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    parsed.resolve(&defaults, &env).map_err(Problem::Args)?;
    for w in &parsed.warnings {
        tracing::warn!("{w}");
    }
    let conf: SparkConf = parsed.to_spark_properties().into_iter().collect();
    let loaded = config::validate(conf, dir).map_err(Problem::Conf)?;
    for w in &loaded.warnings {
        tracing::warn!("{w}");
    }
    Ok(loaded.conf)
}

fn print_verbose(parsed: &SparkSubmitArguments, conf: &SparkConf) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "Parsed arguments:");
    let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "null".into());
    for (name, value) in [
        ("master", show(&parsed.master)),
        ("deployMode", parsed.effective_deploy_mode().to_string()),
        ("executorMemory", show(&parsed.executor_memory)),
        ("executorCores", show(&parsed.executor_cores)),
        ("driverMemory", show(&parsed.driver_memory)),
        ("driverCores", show(&parsed.driver_cores)),
        ("queue", show(&parsed.queue)),
        ("numExecutors", show(&parsed.num_executors)),
        ("propertiesFile", show(&parsed.properties_file)),
        ("mainClass", show(&parsed.main_class)),
        ("primaryResource", show(&parsed.primary_resource)),
        ("name", show(&parsed.name)),
        ("childArgs", format!("[{}]", parsed.child_args.join(" "))),
        ("verbose", parsed.verbose.to_string()),
    ] {
        let _ = writeln!(err, "  {name:<24}{value}");
    }
    let _ = writeln!(err, "\nSpark properties used, including those specified through --conf and those from the properties file:");
    for (k, v) in conf.iter() {
        let _ = writeln!(err, "  ({k},{v})");
    }
}

fn print_version() {
    println!("Welcome to sparkyard version {}", env!("CARGO_PKG_VERSION"));
    println!("Spark-on-YARN's control plane as a supervised actor system, after Spark 4's behaviour");
    println!("Type --help for more information.");
}
