//! The command line of `sparkyard submit`, read the way Apache Spark's `spark-submit` reads it.
//!
//! Layer: deploy (the Spark side: spark-submit, the YARN Client, the ApplicationMaster; above context).
//!
//! Three steps, as in Spark's `SparkSubmitArguments`:
//!
//! 1. [`parse`] walks the arguments with the rules of Spark's `SparkSubmitOptionParser`: every
//!    option Spark knows is accepted (also the ones sparkyard ignores), values come as
//!    `--opt value` or `--opt=value`, the first argument that is not an option is the primary
//!    resource and everything after it is handed to the application untouched.
//! 2. [`SparkSubmitArguments::resolve`] fills what the command line left open from `--conf`, the
//!    properties file(s) and the environment (flag > `--conf` > properties file > environment),
//!    derives the application name, and validates the result with Spark's messages.
//! 3. [`SparkSubmitArguments::to_spark_properties`] turns the flags into configuration keys the way
//!    `SparkSubmit.prepareSubmitEnvironment` does for YARN, flags winning over `--conf`.
//!
//! Where sparkyard departs from Spark on purpose, the item's documentation says so. In short:
//! only the masters `yarn` and `local-cluster[N,C,M]` are taken (no master at all means
//! sparkyard's default local cluster); `yarn.*` keys survive next to `spark.*` keys; there is no
//! `HADOOP_CONF_DIR`/`YARN_CONF_DIR` check; `--kill` and `--status` are meant for YARN; paths are
//! kept as written instead of being turned into absolute URIs; no JAR manifest is read to find
//! a main class.

use std::fmt;

/// What `sparkyard submit` was asked to do (Spark's `SparkSubmitAction`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SparkSubmitAction {
    /// Run an application (the default).
    #[default]
    Submit,
    /// `--kill ID`: stop a submitted application.
    Kill,
    /// `--status ID`: report on a submitted application.
    RequestStatus,
    /// `--version`: print the version and stop.
    PrintVersion,
}

impl SparkSubmitAction {
    /// The name Spark prints for the action (its enumeration value), e.g. `REQUEST_STATUS`.
    pub fn as_str(self) -> &'static str {
        match self {
            SparkSubmitAction::Submit => "SUBMIT",
            SparkSubmitAction::Kill => "KILL",
            SparkSubmitAction::RequestStatus => "REQUEST_STATUS",
            SparkSubmitAction::PrintVersion => "PRINT_VERSION",
        }
    }
}

impl fmt::Display for SparkSubmitAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why the command line cannot be acted on, or that it asked only for help.
///
/// The caller prints [`usage`] when [`show_usage`](Self::show_usage) says so, prints
/// `Error: <message>` for [`Invalid`](Self::Invalid), and exits with
/// [`exit_code`](Self::exit_code).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubmitArgsError {
    /// `--help` or `-h`: print the usage text and exit with status 0. Not a failure.
    Help,
    /// A bare usage error with no message of its own: no arguments at all (Spark exits with -1,
    /// which a process reports as 255) or Spark's internal `--usage-error` switch (exit 1).
    Usage {
        /// Short description for logs; Spark itself prints only the usage text.
        reason: &'static str,
        /// The status Spark would exit with.
        exit_code: i32,
    },
    /// A bad command line. Spark exits with status 1 for all of these.
    Invalid {
        /// Spark's message (or sparkyard's, where sparkyard adds a rule), one line.
        message: String,
        /// True for the mistakes spark-submit's launcher catches while reading the arguments
        /// (unknown option, option without its value, `--conf` without `=`): it prints the
        /// message followed by the usage text. The checks made after reading print only the
        /// message.
        show_usage: bool,
    },
}

impl SubmitArgsError {
    fn invalid(message: impl Into<String>) -> Self {
        SubmitArgsError::Invalid {
            message: message.into(),
            show_usage: false,
        }
    }

    fn invalid_with_usage(message: impl Into<String>) -> Self {
        SubmitArgsError::Invalid {
            message: message.into(),
            show_usage: true,
        }
    }

    /// The process exit status Spark uses for this outcome: 0 for help, -1 when no arguments
    /// were given (255 as a process status), 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            SubmitArgsError::Help => 0,
            SubmitArgsError::Usage { exit_code, .. } => *exit_code,
            SubmitArgsError::Invalid { .. } => 1,
        }
    }

    /// Whether the usage text should be printed.
    pub fn show_usage(&self) -> bool {
        match self {
            SubmitArgsError::Help | SubmitArgsError::Usage { .. } => true,
            SubmitArgsError::Invalid { show_usage, .. } => *show_usage,
        }
    }

    /// True for `--help` / `-h`, which is not an error at all.
    pub fn is_help(&self) -> bool {
        matches!(self, SubmitArgsError::Help)
    }

    /// The message to print after `Error: `, if there is one.
    pub fn message(&self) -> Option<&str> {
        match self {
            SubmitArgsError::Invalid { message, .. } => Some(message),
            _ => None,
        }
    }
}

impl fmt::Display for SubmitArgsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubmitArgsError::Help => f.write_str("help requested"),
            SubmitArgsError::Usage { reason, .. } => f.write_str(reason),
            SubmitArgsError::Invalid { message, .. } => f.write_str(message),
        }
    }
}

impl std::error::Error for SubmitArgsError {}

/// Everything `sparkyard submit` was told, in Spark's shapes: values stay strings, as Spark keeps
/// them, until validation checks the numeric ones.
///
/// Build it with [`parse`], then call [`resolve`](Self::resolve) once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SparkSubmitArguments {
    /// `--master`, else `spark.master`, else `MASTER`. `None` after [`resolve`](Self::resolve)
    /// means no master was given anywhere: sparkyard then runs its default local cluster
    /// (Spark would use `local[*]`; sparkyard does not take that master).
    pub master: Option<String>,
    /// `--remote` (Spark Connect), else `spark.remote`, else `SPARK_REMOTE`. Kept, not used.
    pub remote: Option<String>,
    /// `--deploy-mode`, else `spark.submit.deployMode`, else `DEPLOY_MODE`; `None` means client.
    pub deploy_mode: Option<String>,
    /// `--class`.
    pub main_class: Option<String>,
    /// `--name`, else the fallback chain applied by [`resolve`](Self::resolve).
    pub name: Option<String>,
    /// The first argument that is not an option, exactly as written (Spark would turn a local
    /// path into an absolute `file:` URI; sparkyard keeps it as given).
    pub primary_resource: Option<String>,
    /// Every argument after the primary resource, verbatim, even ones that look like options.
    pub child_args: Vec<String>,
    /// `--conf`/`-c` pairs in the order first given (a repeated key keeps its place and takes the
    /// later value); [`resolve`](Self::resolve) adds the properties-file entries after them.
    pub spark_properties: Vec<(String, String)>,
    /// `--properties-file`.
    pub properties_file: Option<String>,
    /// `--load-spark-defaults`: also read `spark-defaults.conf` when `--properties-file` is given.
    pub load_spark_defaults: bool,
    /// `--num-executors`, else `spark.executor.instances`.
    pub num_executors: Option<String>,
    /// `--executor-cores`, else `spark.executor.cores`, else `SPARK_EXECUTOR_CORES`.
    pub executor_cores: Option<String>,
    /// `--executor-memory`, else `spark.executor.memory`, else `SPARK_EXECUTOR_MEMORY`.
    pub executor_memory: Option<String>,
    /// `--total-executor-cores`, else `spark.cores.max` (standalone only; ignored by sparkyard).
    pub total_executor_cores: Option<String>,
    /// `--driver-memory`, else `spark.driver.memory`, else `SPARK_DRIVER_MEMORY`.
    pub driver_memory: Option<String>,
    /// `--driver-cores`, else `spark.driver.cores`.
    pub driver_cores: Option<String>,
    /// `--driver-java-options`, else `spark.driver.extraJavaOptions`.
    pub driver_java_options: Option<String>,
    /// `--driver-class-path`, else `spark.driver.extraClassPath`.
    pub driver_class_path: Option<String>,
    /// `--driver-library-path`, else `spark.driver.extraLibraryPath`.
    pub driver_library_path: Option<String>,
    /// `--driver-default-class-path` (read by Spark's launcher, not by `SparkSubmitArguments`).
    pub driver_default_class_path: Option<String>,
    /// `--queue`, else `spark.yarn.queue`.
    pub queue: Option<String>,
    /// `--jars`, else `spark.jars` (comma-separated, as written).
    pub jars: Option<String>,
    /// `--files`, else `spark.files`.
    pub files: Option<String>,
    /// `--archives`, else `spark.archives`.
    pub archives: Option<String>,
    /// `--py-files`, else `spark.submit.pyFiles`.
    pub py_files: Option<String>,
    /// `--packages`, else `spark.jars.packages`.
    pub packages: Option<String>,
    /// `--exclude-packages`, else `spark.jars.excludes`.
    pub exclude_packages: Option<String>,
    /// `--repositories`, else `spark.jars.repositories`.
    pub repositories: Option<String>,
    /// `--proxy-user`.
    pub proxy_user: Option<String>,
    /// `--principal`, else `spark.kerberos.principal`, else `spark.yarn.principal`.
    pub principal: Option<String>,
    /// `--keytab`, else `spark.kerberos.keytab`, else `spark.yarn.keytab`.
    pub keytab: Option<String>,
    /// `--supervise` (standalone cluster mode only in Spark).
    pub supervise: bool,
    /// `--verbose` / `-v`.
    pub verbose: bool,
    /// What to do; [`SparkSubmitAction::Submit`] unless `--kill`, `--status` or `--version`.
    pub action: SparkSubmitAction,
    /// `--kill ID`.
    pub submission_to_kill: Option<String>,
    /// `--status ID`.
    pub submission_to_request_status_for: Option<String>,
    /// The primary resource is a Python file (`*.py`) or `pyspark-shell`.
    pub is_python: bool,
    /// The primary resource is an R file (`*.R`, `*.r`) or `sparkr-shell`.
    pub is_r: bool,
    /// `spark.dynamicAllocation.enabled` is `true` (any case), set by [`resolve`](Self::resolve).
    pub dynamic_allocation_enabled: bool,
    /// Warnings produced by [`resolve`](Self::resolve) (Spark logs them; sparkyard's caller
    /// prints them).
    pub warnings: Vec<String>,
    /// `--config-dir` (sparkyard): where spark-defaults.conf and yarn-site.conf are read.
    pub config_dir: Option<String>,
    /// `--log-dir` (sparkyard): where the structured logs are written.
    pub log_dir: Option<String>,
    /// `--log-level` (sparkyard): the log filter, overriding `RUST_LOG`.
    pub log_level: Option<String>,
    /// How many raw arguments were given (Spark's "no arguments at all" check).
    arg_count: usize,
}

/// Options that take a value, by their canonical name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ValueOpt {
    Archives,
    Class,
    Conf,
    DeployMode,
    DriverClassPath,
    DriverCores,
    DriverDefaultClassPath,
    DriverJavaOptions,
    DriverLibraryPath,
    DriverMemory,
    ExecutorCores,
    ExecutorMemory,
    Files,
    Jars,
    Keytab,
    Kill,
    Master,
    Remote,
    Name,
    NumExecutors,
    Packages,
    ExcludePackages,
    Principal,
    PropertiesFile,
    ProxyUser,
    PyFiles,
    Queue,
    Repositories,
    Status,
    TotalExecutorCores,
    ConfigDir,
    LogDir,
    LogLevel,
}

/// Options that take no value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Switch {
    Help,
    Supervise,
    UsageError,
    Verbose,
    Version,
    LoadSparkDefaults,
}

/// Spark's table of options with a value (names and aliases as in `SparkSubmitOptionParser`).
fn value_option(name: &str) -> Option<ValueOpt> {
    let opt = match name {
        "--archives" => ValueOpt::Archives,
        "--class" => ValueOpt::Class,
        "--conf" | "-c" => ValueOpt::Conf,
        "--deploy-mode" => ValueOpt::DeployMode,
        "--driver-class-path" => ValueOpt::DriverClassPath,
        "--driver-cores" => ValueOpt::DriverCores,
        "--driver-default-class-path" => ValueOpt::DriverDefaultClassPath,
        "--driver-java-options" => ValueOpt::DriverJavaOptions,
        "--driver-library-path" => ValueOpt::DriverLibraryPath,
        "--driver-memory" => ValueOpt::DriverMemory,
        "--executor-cores" => ValueOpt::ExecutorCores,
        "--executor-memory" => ValueOpt::ExecutorMemory,
        "--files" => ValueOpt::Files,
        "--jars" => ValueOpt::Jars,
        "--keytab" => ValueOpt::Keytab,
        "--kill" => ValueOpt::Kill,
        "--master" => ValueOpt::Master,
        "--remote" => ValueOpt::Remote,
        "--name" => ValueOpt::Name,
        "--num-executors" => ValueOpt::NumExecutors,
        "--packages" => ValueOpt::Packages,
        "--exclude-packages" => ValueOpt::ExcludePackages,
        "--principal" => ValueOpt::Principal,
        "--properties-file" => ValueOpt::PropertiesFile,
        "--proxy-user" => ValueOpt::ProxyUser,
        "--py-files" => ValueOpt::PyFiles,
        "--queue" => ValueOpt::Queue,
        "--repositories" => ValueOpt::Repositories,
        "--status" => ValueOpt::Status,
        "--total-executor-cores" => ValueOpt::TotalExecutorCores,
        // sparkyard's own options (not Spark's)
        "--config-dir" => ValueOpt::ConfigDir,
        "--log-dir" => ValueOpt::LogDir,
        "--log-level" => ValueOpt::LogLevel,
        _ => return None,
    };
    Some(opt)
}

/// Spark's table of switches (names and aliases as in `SparkSubmitOptionParser`).
fn switch(name: &str) -> Option<Switch> {
    let sw = match name {
        "--help" | "-h" => Switch::Help,
        "--supervise" => Switch::Supervise,
        "--usage-error" => Switch::UsageError,
        "--verbose" | "-v" => Switch::Verbose,
        "--version" => Switch::Version,
        "--load-spark-defaults" => Switch::LoadSparkDefaults,
        _ => return None,
    };
    Some(sw)
}

/// Splits `--name=value` the way Spark's pattern `(--[^=]+)=(.+)` does: the name is `--` plus
/// at least one character up to the first `=`, and the value must be non-empty and free of line
/// terminators (Java's `.`). Anything else is returned whole, with no inline value.
fn split_inline_value(arg: &str) -> (&str, Option<&str>) {
    let is_line_end = |c: char| matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}');
    if let Some((key, value)) = arg.strip_prefix("--").and_then(|rest| rest.split_once('=')) {
        if !key.is_empty() && !value.is_empty() && !value.contains(is_line_end) {
            if let Some(name) = arg.get(..key.len() + 2) {
                return (name, Some(value));
            }
        }
    }
    (arg, None)
}

/// Sets `key` in an ordered property list: an existing entry keeps its place and takes the new
/// value, a new key goes to the end.
fn set_property(props: &mut Vec<(String, String)>, key: &str, value: &str) {
    match props.iter_mut().find(|(k, _)| k == key) {
        Some(entry) => entry.1 = value.to_string(),
        None => props.push((key.to_string(), value.to_string())),
    }
}

fn get_property<'a>(props: &'a [(String, String)], key: &str) -> Option<&'a str> {
    props.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// Joins comma-separated lists, dropping blank entries (Spark's `mergeFileLists`).
fn merge_file_lists(lists: &[&str]) -> String {
    lists
        .iter()
        .flat_map(|list| list.split(','))
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .collect::<Vec<_>>()
        .join(",")
}

/// The last path component of a resource, as `java.io.File#getName` gives it for Spark's
/// name fallback.
fn file_name(resource: &str) -> &str {
    let trimmed = resource.trim_end_matches('/');
    trimmed.rsplit('/').next().unwrap_or(trimmed)
}

/// SparkSubmit.isUserJar: the primary resource is a jar, not a shell, a Python or R file, or
/// the internal no-resource marker.
fn is_user_jar(resource: &str) -> bool {
    let shell = matches!(resource, "spark-shell" | "pyspark-shell" | "sparkr-shell");
    let python = resource.ends_with(".py");
    let r = resource.ends_with(".R") || resource.ends_with(".r");
    !shell && !python && !r && resource != NO_RESOURCE
}

/// SparkLauncher.NO_RESOURCE: the primary resource of applications that have none.
pub const NO_RESOURCE: &str = "spark-internal";

/// Whether a memory string is a positive byte count as Spark's `JavaUtils.byteStringAsBytes`
/// reads it (no unit means bytes); anything unparsable counts as not positive, as in Spark.
fn is_positive_size(s: &str) -> bool {
    crate::conf::parse_size(s, crate::conf::SizeUnit::Byte).is_ok_and(|b| b > 0)
}

/// Spark's positivity test for a count: `Try(s.toInt).getOrElse(-1) > 0`.
fn is_positive_int(s: &str) -> bool {
    s.parse::<i32>().map(|n| n > 0).unwrap_or(false)
}

/// Parses a `local-cluster[N,C,M]` master (N workers, C cores and M MiB of memory per worker),
/// allowing blanks around the numbers as Spark's `LOCAL_CLUSTER_REGEX` does. Every number must
/// be a positive integer that fits its type; anything else gives `None`.
pub fn parse_local_cluster(master: &str) -> Option<(u32, u32, u64)> {
    let inner = master.strip_prefix("local-cluster[")?.strip_suffix(']')?;
    let mut parts = inner.split(',');
    let mut number = || -> Option<&str> {
        let part = parts
            .next()?
            .trim_matches(|c: char| c.is_ascii_whitespace() || c == '\u{b}');
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(part)
    };
    let workers: u32 = number()?.parse().ok()?;
    let cores: u32 = number()?.parse().ok()?;
    let memory_mb: u64 = number()?.parse().ok()?;
    if parts.next().is_some() || workers == 0 || cores == 0 || memory_mb == 0 {
        return None;
    }
    Some((workers, cores, memory_mb))
}

/// Whether sparkyard takes this master: `yarn` or a valid `local-cluster[N,C,M]`.
fn is_supported_master(master: &str) -> bool {
    master == "yarn" || parse_local_cluster(master).is_some()
}

/// Reads the command line of `sparkyard submit` (the arguments after `submit`) with Spark's
/// `SparkSubmitOptionParser` rules and `SparkSubmitArguments`' handling of each option.
///
/// Errors found while reading, in Spark's words: an option without its value
/// (`Missing argument for option '--class'.`), an unknown option before the primary resource
/// (`Unrecognized option '-x'.`), `--conf` without `=` (`Spark config without '=': x`), a bad
/// `--deploy-mode`, and two actions (`Action cannot be both KILL and REQUEST_STATUS.`).
/// `--help`/`-h` ends reading with [`SubmitArgsError::Help`]. `--version` ends reading too; what
/// follows it becomes `child_args`, as in Spark.
///
/// The result still needs [`SparkSubmitArguments::resolve`].
pub fn parse(args: &[String]) -> Result<SparkSubmitArguments, SubmitArgsError> {
    let mut parsed = SparkSubmitArguments {
        arg_count: args.len(),
        ..SparkSubmitArguments::default()
    };
    let mut action: Option<SparkSubmitAction> = None;
    let mut rest_from = args.len();
    let mut idx = 0;
    while let Some(arg) = args.get(idx) {
        let (name, inline) = split_inline_value(arg);
        if let Some(opt) = value_option(name) {
            let value = match inline {
                Some(v) => v.to_string(),
                None => match args.get(idx + 1) {
                    Some(v) => {
                        idx += 1;
                        v.clone()
                    }
                    None => {
                        return Err(SubmitArgsError::invalid_with_usage(format!(
                            "Missing argument for option '{name}'."
                        )))
                    }
                },
            };
            parsed.apply_value(opt, value, &mut action)?;
            idx += 1;
            continue;
        }
        if let Some(sw) = switch(name) {
            match sw {
                Switch::Help => return Err(SubmitArgsError::Help),
                Switch::UsageError => {
                    return Err(SubmitArgsError::Usage {
                        reason: "usage error",
                        exit_code: 1,
                    })
                }
                Switch::Supervise => parsed.supervise = true,
                Switch::Verbose => parsed.verbose = true,
                Switch::LoadSparkDefaults => parsed.load_spark_defaults = true,
                Switch::Version => {
                    action = Some(SparkSubmitAction::PrintVersion);
                    rest_from = idx + 1;
                    break;
                }
            }
            idx += 1;
            continue;
        }
        if name.starts_with('-') {
            return Err(SubmitArgsError::invalid_with_usage(format!(
                "Unrecognized option '{name}'."
            )));
        }
        parsed.is_python = name.ends_with(".py") || name == "pyspark-shell";
        parsed.is_r = name.ends_with(".R") || name.ends_with(".r") || name == "sparkr-shell";
        parsed.primary_resource = Some(name.to_string());
        rest_from = idx + 1;
        break;
    }
    parsed.child_args = args.get(rest_from..).unwrap_or_default().to_vec();
    parsed.action = action.unwrap_or_default();
    Ok(parsed)
}

impl SparkSubmitArguments {
    fn apply_value(
        &mut self,
        opt: ValueOpt,
        value: String,
        action: &mut Option<SparkSubmitAction>,
    ) -> Result<(), SubmitArgsError> {
        match opt {
            ValueOpt::Name => self.name = Some(value),
            ValueOpt::ConfigDir => self.config_dir = Some(value),
            ValueOpt::LogDir => self.log_dir = Some(value),
            ValueOpt::LogLevel => self.log_level = Some(value),
            ValueOpt::Master => self.master = Some(value),
            ValueOpt::Remote => self.remote = Some(value),
            ValueOpt::Class => self.main_class = Some(value),
            ValueOpt::DeployMode => {
                if value != "client" && value != "cluster" {
                    return Err(SubmitArgsError::invalid(
                        "--deploy-mode must be either \"client\" or \"cluster\"",
                    ));
                }
                self.deploy_mode = Some(value);
            }
            ValueOpt::NumExecutors => self.num_executors = Some(value),
            ValueOpt::TotalExecutorCores => self.total_executor_cores = Some(value),
            ValueOpt::ExecutorCores => self.executor_cores = Some(value),
            ValueOpt::ExecutorMemory => self.executor_memory = Some(value),
            ValueOpt::DriverMemory => self.driver_memory = Some(value),
            ValueOpt::DriverCores => self.driver_cores = Some(value),
            ValueOpt::DriverClassPath => self.driver_class_path = Some(value),
            ValueOpt::DriverDefaultClassPath => self.driver_default_class_path = Some(value),
            ValueOpt::DriverJavaOptions => self.driver_java_options = Some(value),
            ValueOpt::DriverLibraryPath => self.driver_library_path = Some(value),
            ValueOpt::PropertiesFile => self.properties_file = Some(value),
            ValueOpt::Kill => {
                self.submission_to_kill = Some(value);
                set_action(action, SparkSubmitAction::Kill)?;
            }
            ValueOpt::Status => {
                self.submission_to_request_status_for = Some(value);
                set_action(action, SparkSubmitAction::RequestStatus)?;
            }
            ValueOpt::Queue => self.queue = Some(value),
            ValueOpt::Files => self.files = Some(value),
            ValueOpt::PyFiles => self.py_files = Some(value),
            ValueOpt::Archives => self.archives = Some(value),
            ValueOpt::Jars => self.jars = Some(value),
            ValueOpt::Packages => self.packages = Some(value),
            ValueOpt::ExcludePackages => self.exclude_packages = Some(value),
            ValueOpt::Repositories => self.repositories = Some(value),
            ValueOpt::Conf => match value.split_once('=') {
                Some((key, val)) => set_property(&mut self.spark_properties, key, val),
                None => {
                    return Err(SubmitArgsError::invalid_with_usage(format!(
                        "Spark config without '=': {value}"
                    )))
                }
            },
            ValueOpt::ProxyUser => self.proxy_user = Some(value),
            ValueOpt::Principal => self.principal = Some(value),
            ValueOpt::Keytab => self.keytab = Some(value),
        }
        Ok(())
    }

    /// Completes the arguments and checks them, as Spark's `SparkSubmitArguments` does after
    /// parsing (`mergeDefaultSparkProperties`, `ignoreNonSparkProperties`,
    /// `loadEnvironmentArguments`, `validateArguments`), followed by the master and deploy-mode
    /// checks Spark makes in `prepareSubmitEnvironment`.
    ///
    /// `defaults` are the properties-file entries the caller has already read (the
    /// `--properties-file`, and/or `spark-defaults.conf` under Spark's rule: the defaults file is
    /// read when no properties file is given or `--load-spark-defaults` is set). List the
    /// higher-priority file first and each file already reduced to one entry per key: a key
    /// present from `--conf` or an earlier entry is not overwritten. `env` looks up environment
    /// variables (`MASTER`, `DEPLOY_MODE`, `SPARK_YARN_APP_NAME`, `SPARK_DRIVER_MEMORY`,
    /// `SPARK_EXECUTOR_MEMORY`, `SPARK_EXECUTOR_CORES`, `SPARK_REMOTE`).
    ///
    /// Precedence for each setting: command-line flag, then `--conf`, then `defaults`, then the
    /// environment variable. The name falls back to `spark.app.name`, then (master `yarn…`)
    /// `SPARK_YARN_APP_NAME`, then the main class, then the primary resource's file name.
    ///
    /// Keys that start with neither `spark.` nor `yarn.` are dropped with Spark's warning
    /// (`Ignoring non-Spark config property: <key>`) pushed to [`warnings`](Self::warnings).
    /// Keeping `yarn.*` keys is a sparkyard departure (Spark drops them).
    ///
    /// Sparkyard departures in validation: no `HADOOP_CONF_DIR`/`YARN_CONF_DIR` check; the master
    /// must be `yarn` or `local-cluster[N,C,M]` (or absent: sparkyard's default local cluster)
    /// for every action but `--version`, so `--kill`/`--status` are accepted with `--master
    /// yarn`; no JAR manifest is opened when `--class` is missing.
    pub fn resolve(
        &mut self,
        defaults: &[(String, String)],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), SubmitArgsError> {
        self.merge_defaults(defaults);
        self.drop_foreign_properties();
        self.load_environment_arguments(env);
        self.validate()
    }

    /// Adds properties-file entries whose keys `--conf` (or an earlier entry) did not set.
    fn merge_defaults(&mut self, defaults: &[(String, String)]) {
        for (key, value) in defaults {
            if get_property(&self.spark_properties, key).is_none() {
                self.spark_properties.push((key.clone(), value.clone()));
            }
        }
    }

    /// Removes keys that are neither `spark.*` nor (sparkyard) `yarn.*`, with a warning each.
    fn drop_foreign_properties(&mut self) {
        let warnings = &mut self.warnings;
        self.spark_properties.retain(|(key, _)| {
            let keep = key.starts_with("spark.") || key.starts_with("yarn.");
            if !keep {
                warnings.push(format!("Ignoring non-Spark config property: {key}"));
            }
            keep
        });
    }

    /// Fills unset fields from the properties and the environment (Spark's
    /// `loadEnvironmentArguments`), derives the name and defaults the action.
    fn load_environment_arguments(&mut self, env: &dyn Fn(&str) -> Option<String>) {
        let props = &self.spark_properties;
        let prop = |key: &str| get_property(props, key).map(str::to_string);
        fill(&mut self.master, || {
            prop("spark.master").or_else(|| env("MASTER"))
        });
        fill(&mut self.remote, || {
            prop("spark.remote").or_else(|| env("SPARK_REMOTE"))
        });
        fill(&mut self.driver_class_path, || {
            prop("spark.driver.extraClassPath")
        });
        fill(&mut self.driver_java_options, || {
            prop("spark.driver.extraJavaOptions")
        });
        fill(&mut self.driver_library_path, || {
            prop("spark.driver.extraLibraryPath")
        });
        fill(&mut self.driver_memory, || {
            prop("spark.driver.memory").or_else(|| env("SPARK_DRIVER_MEMORY"))
        });
        fill(&mut self.driver_cores, || prop("spark.driver.cores"));
        fill(&mut self.executor_memory, || {
            prop("spark.executor.memory").or_else(|| env("SPARK_EXECUTOR_MEMORY"))
        });
        fill(&mut self.executor_cores, || {
            prop("spark.executor.cores").or_else(|| env("SPARK_EXECUTOR_CORES"))
        });
        fill(&mut self.total_executor_cores, || prop("spark.cores.max"));
        fill(&mut self.name, || prop("spark.app.name"));
        fill(&mut self.jars, || prop("spark.jars"));
        fill(&mut self.files, || prop("spark.files"));
        fill(&mut self.archives, || prop("spark.archives"));
        fill(&mut self.py_files, || prop("spark.submit.pyFiles"));
        fill(&mut self.packages, || prop("spark.jars.packages"));
        fill(&mut self.exclude_packages, || prop("spark.jars.excludes"));
        fill(&mut self.repositories, || prop("spark.jars.repositories"));
        fill(&mut self.deploy_mode, || {
            prop("spark.submit.deployMode").or_else(|| env("DEPLOY_MODE"))
        });
        fill(&mut self.num_executors, || prop("spark.executor.instances"));
        fill(&mut self.queue, || prop("spark.yarn.queue"));
        fill(&mut self.keytab, || {
            prop("spark.kerberos.keytab").or_else(|| prop("spark.yarn.keytab"))
        });
        fill(&mut self.principal, || {
            prop("spark.kerberos.principal").or_else(|| prop("spark.yarn.principal"))
        });
        self.dynamic_allocation_enabled = get_property(props, "spark.dynamicAllocation.enabled")
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));

        if self.master.as_deref().is_some_and(|m| m.starts_with("yarn")) {
            fill(&mut self.name, || env("SPARK_YARN_APP_NAME"));
        }
        fill(&mut self.name, || self.main_class.clone());
        fill(&mut self.name, || {
            self.primary_resource
                .as_deref()
                .map(|res| file_name(res).to_string())
        });
    }

    /// Spark's `validateArguments` for the action, then sparkyard's master rule and Spark's
    /// deploy-mode rule from `prepareSubmitEnvironment`.
    fn validate(&self) -> Result<(), SubmitArgsError> {
        match self.action {
            SparkSubmitAction::Submit => self.validate_submit()?,
            SparkSubmitAction::Kill => {
                if self.submission_to_kill.is_none() {
                    return Err(SubmitArgsError::invalid("Please specify a submission to kill."));
                }
            }
            SparkSubmitAction::RequestStatus => {
                if self.submission_to_request_status_for.is_none() {
                    return Err(SubmitArgsError::invalid(
                        "Please specify a submission to request status for.",
                    ));
                }
            }
            SparkSubmitAction::PrintVersion => return Ok(()),
        }
        if self.action != SparkSubmitAction::Submit
            && self
                .master
                .as_deref()
                .is_none_or(|m| m.starts_with("local-cluster"))
        {
            // Spark refuses --kill and --status where its master cannot find a submission
            // again; sparkyard's are the applications of a running node.
            let (flag, what) = if self.action == SparkSubmitAction::Kill {
                ("--kill", "Killing submissions")
            } else {
                ("--status", "Requesting submission statuses")
            };
            return Err(SubmitArgsError::invalid(format!(
                "{what} is only supported with --master yarn: {flag} asks the running node (sparkyard node) at yarn.resourcemanager.address"
            )));
        }
        if let Some(master) = self.master.as_deref() {
            if !is_supported_master(master) {
                return Err(SubmitArgsError::invalid(format!(
                    "Master '{master}' is not supported by sparkyard: use --master yarn or \
                     --master local-cluster[N,C,M] (N workers, C cores and M MiB each), or give \
                     no master for the default local cluster"
                )));
            }
        }
        let submitting = self.action == SparkSubmitAction::Submit;
        if let Some(mode) = self.deploy_mode.as_deref().filter(|_| submitting) {
            if mode != "client" && mode != "cluster" {
                return Err(SubmitArgsError::invalid(
                    "Deploy mode must be either client or cluster",
                ));
            }
        }
        Ok(())
    }

    /// Spark's `validateSubmitArguments`, without the Hadoop configuration check.
    fn validate_submit(&self) -> Result<(), SubmitArgsError> {
        if self.arg_count == 0 {
            return Err(SubmitArgsError::Usage {
                reason: "no arguments given",
                exit_code: -1,
            });
        }
        let local_connect = get_property(&self.spark_properties, "spark.local.connect").is_some();
        if !local_connect && self.remote.is_some() && (self.master.is_some() || self.deploy_mode.is_some()) {
            return Err(SubmitArgsError::invalid(
                "Remote cannot be specified with master and/or deploy mode.",
            ));
        }
        if self.primary_resource.is_none() {
            return Err(SubmitArgsError::invalid(
                "Must specify a primary resource (JAR or Python or R file)",
            ));
        }
        let checks: [PositivityCheck<'_>; 5] = [
            (
                &self.driver_memory,
                |v| is_positive_size(v),
                "Driver memory must be a positive number",
            ),
            (
                &self.executor_memory,
                |v| is_positive_size(v),
                "Executor memory must be a positive number",
            ),
            (
                &self.driver_cores,
                is_positive_int,
                "Driver cores must be a positive number",
            ),
            (
                &self.executor_cores,
                is_positive_int,
                "Executor cores must be a positive number",
            ),
            (
                &self.total_executor_cores,
                is_positive_int,
                "Total executor cores must be a positive number",
            ),
        ];
        for (value, ok, message) in checks {
            if let Some(v) = value.as_deref() {
                if !ok(v) {
                    return Err(SubmitArgsError::invalid(message));
                }
            }
        }
        if !self.dynamic_allocation_enabled {
            if let Some(n) = self.num_executors.as_deref() {
                if !is_positive_int(n) {
                    return Err(SubmitArgsError::invalid(
                        "Number of executors must be a positive number",
                    ));
                }
            }
        }
        if self.proxy_user.is_some() && self.principal.is_some() {
            return Err(SubmitArgsError::invalid(
                "Only one of --proxy-user or --principal can be provided.",
            ));
        }
        Ok(())
    }

    /// prepareSubmitEnvironment's main-class rule for a submission without `--class` whose
    /// primary resource is not a Python or R file: Spark reads the class from the jar's
    /// manifest and fails with "No main class set in JAR; please specify one with --class."
    /// when there is none. sparkyard reads no jar, so that is its answer too, with one
    /// exception: a primary resource that is itself the class name of a built-in application
    /// (`is_builtin`), as in `sparkyard submit org.apache.spark.examples.SparkPi 10`, is taken
    /// as the main class (spark-submit would look for a jar of that name). Returns whether it
    /// was.
    pub fn resolve_main_class(&mut self, is_builtin: impl Fn(&str) -> bool) -> Result<bool, SubmitArgsError> {
        if self.action != SparkSubmitAction::Submit
            || self.main_class.is_some()
            || self.is_python
            || self.is_r
        {
            return Ok(false);
        }
        match self.primary_resource.as_deref() {
            Some(resource) if is_builtin(resource) => {
                self.main_class = Some(resource.to_string());
                Ok(true)
            }
            _ => Err(SubmitArgsError::invalid(
                "No main class set in JAR; please specify one with --class.",
            )),
        }
    }

    /// The deploy mode in effect: the given one, or `client` (Spark's default).
    pub fn effective_deploy_mode(&self) -> &str {
        self.deploy_mode.as_deref().unwrap_or("client")
    }

    /// The Spark configuration the application gets: the `--conf` and properties-file entries,
    /// overridden (or, for the `spark.yarn.dist.*` lists, extended) by the flags, following the
    /// YARN rows of `SparkSubmit.prepareSubmitEnvironment`'s option table:
    ///
    /// | flag | key |
    /// |---|---|
    /// | master | `spark.master` (left out when no master was given: sparkyard's default) |
    /// | `--remote` | `spark.remote` |
    /// | deploy mode | `spark.submit.deployMode` (`client` when unset) |
    /// | name | `spark.app.name` |
    /// | `--driver-memory` | `spark.driver.memory` |
    /// | `--driver-class-path` / `-java-options` / `-library-path` | `spark.driver.extraClassPath` / `extraJavaOptions` / `extraLibraryPath` |
    /// | `--principal` / `--keytab` | `spark.kerberos.principal` / `spark.kerberos.keytab` |
    /// | `--py-files` (cluster mode) | `spark.submit.pyFiles` |
    /// | `--queue` | `spark.yarn.queue` |
    /// | `--py-files` / `--jars` / `--files` / `--archives` | `spark.yarn.dist.pyFiles` / `jars` / `files` / `archives`, appended to a value already there |
    /// | `--num-executors` / `--executor-cores` / `--executor-memory` | `spark.executor.instances` / `cores` / `memory` |
    /// | `--driver-cores` (cluster mode) | `spark.driver.cores` |
    /// | Python primary resource | `spark.yarn.isPython=true` |
    /// | `--driver-default-class-path` | `spark.driver.defaultExtraClassPath` (Spark's launcher) |
    ///
    /// In cluster mode `spark.driver.host` is removed, as Spark does. Sparkyard applies the YARN
    /// rows for `local-cluster` masters too (Spark would treat those as local mode). Paths are
    /// not turned into URIs.
    pub fn to_spark_properties(&self) -> Vec<(String, String)> {
        let mut props = self.spark_properties.clone();
        let cluster = self.effective_deploy_mode() == "cluster";
        let mut assign = |key: &str, value: Option<&String>| {
            if let Some(v) = value {
                set_property(&mut props, key, v);
            }
        };
        assign("spark.master", self.master.as_ref());
        assign("spark.remote", self.remote.as_ref());
        assign(
            "spark.submit.deployMode",
            Some(&self.effective_deploy_mode().to_string()),
        );
        assign("spark.app.name", self.name.as_ref());
        assign("spark.driver.memory", self.driver_memory.as_ref());
        assign("spark.driver.extraClassPath", self.driver_class_path.as_ref());
        assign("spark.driver.extraJavaOptions", self.driver_java_options.as_ref());
        assign("spark.driver.extraLibraryPath", self.driver_library_path.as_ref());
        assign("spark.kerberos.principal", self.principal.as_ref());
        assign("spark.kerberos.keytab", self.keytab.as_ref());
        if cluster {
            assign("spark.submit.pyFiles", self.py_files.as_ref());
        }
        assign("spark.yarn.queue", self.queue.as_ref());
        for (key, value) in [
            ("spark.yarn.dist.pyFiles", &self.py_files),
            ("spark.yarn.dist.jars", &self.jars),
            ("spark.yarn.dist.files", &self.files),
            ("spark.yarn.dist.archives", &self.archives),
        ] {
            if let Some(v) = value {
                let merged = match get_property(&props, key) {
                    Some(existing) => merge_file_lists(&[existing, v]),
                    None => v.clone(),
                };
                set_property(&mut props, key, &merged);
            }
        }
        // "Add the application jar automatically so the user doesn't have to call sc.addJar":
        // outside YARN cluster mode a user jar ends `spark.jars`, and on YARN's client mode
        // also `spark.yarn.dist.jars` (SparkSubmitSuite "handles YARN client mode"). In
        // cluster mode the Client ships it as the AM's `app.jar` instead.
        if let Some(primary) = self.primary_resource.as_deref() {
            if !cluster && !self.is_python && !self.is_r && is_user_jar(primary) {
                for key in ["spark.jars", "spark.yarn.dist.jars"] {
                    let merged = merge_file_lists(&[get_property(&props, key).unwrap_or(""), primary]);
                    set_property(&mut props, key, &merged);
                }
            }
        }
        let mut assign = |key: &str, value: Option<&String>| {
            if let Some(v) = value {
                set_property(&mut props, key, v);
            }
        };
        assign("spark.executor.instances", self.num_executors.as_ref());
        assign("spark.executor.cores", self.executor_cores.as_ref());
        assign("spark.executor.memory", self.executor_memory.as_ref());
        if cluster {
            assign("spark.driver.cores", self.driver_cores.as_ref());
        }
        if self.is_python {
            assign("spark.yarn.isPython", Some(&"true".to_string()));
        }
        assign(
            "spark.driver.defaultExtraClassPath",
            self.driver_default_class_path.as_ref(),
        );
        if cluster {
            props.retain(|(k, _)| k != "spark.driver.host");
        }
        props
    }
}

/// A value to check, the test it must pass and Spark's message when it fails.
type PositivityCheck<'a> = (&'a Option<String>, fn(&str) -> bool, &'static str);

/// Records the action, refusing a second one with Spark's message.
fn set_action(
    current: &mut Option<SparkSubmitAction>,
    next: SparkSubmitAction,
) -> Result<(), SubmitArgsError> {
    if let Some(previous) = current {
        return Err(SubmitArgsError::invalid(format!(
            "Action cannot be both {previous} and {next}."
        )));
    }
    *current = Some(next);
    Ok(())
}

/// Sets an unset field from a fallback.
fn fill(field: &mut Option<String>, fallback: impl FnOnce() -> Option<String>) {
    if field.is_none() {
        *field = fallback();
    }
}

/// Sparkyard's usage text for `sparkyard submit`, shaped like spark-submit's `--help`.
pub fn usage() -> String {
    let text = r#"Usage: sparkyard submit [options] <app jar | built-in app name> [app arguments]
Usage: sparkyard submit --kill [submission ID] --master yarn
Usage: sparkyard submit --status [submission ID] --master yarn
Usage: sparkyard submit --version

Options:
  --master MASTER_URL         yarn or local-cluster[N,C,M]; default: the built-in local cluster.
  --deploy-mode DEPLOY_MODE   Run the driver here ("client", default) or in the cluster ("cluster").
  --class CLASS_NAME          The application's main class.
  --name NAME                 The application's name (default: main class or resource name).
  --jars JARS                 Comma-separated jars to ship with the application.
  --files FILES               Comma-separated files to place in each executor's working directory.
  --archives ARCHIVES         Comma-separated archives to unpack in each executor's working directory.
  --conf, -c PROP=VALUE       A configuration property (spark.* or yarn.*); may be repeated.
  --properties-file FILE      File to read extra properties from (default: <config dir>/spark-defaults.conf).
  --load-spark-defaults       Read spark-defaults.conf as well when --properties-file is given.
  --driver-memory MEM         Memory for the driver, e.g. 1000M, 2G (default: 1G).
  --driver-cores NUM          Cores for the driver, cluster mode only (default: 1).
  --executor-memory MEM       Memory per executor, e.g. 1000M, 2G (default: 1G).
  --executor-cores NUM        Cores per executor (default: 1).
  --num-executors NUM         Executors to start (default: 2); with dynamic allocation, the minimum.
  --queue QUEUE_NAME          The YARN queue to submit to (default: "default").
  --kill SUBMISSION_ID        Kill the given application.
  --status SUBMISSION_ID      Report the state of the given application.
  --help, -h                  Show this message and exit.
  --verbose, -v               Print the parsed arguments and properties.
  --version                   Print the version and exit.

sparkyard's own options (before the application):
  --config-dir DIR            Where spark-defaults.conf and yarn-site.conf are (default: $SPARKYARD_CONF_DIR, else ./config).
  --log-dir DIR               Where structured logs are written (default: $SPARKYARD_LOG_DIR, else ./logs).
  --log-level LEVEL           error, warn, info, debug, trace, off or a RUST_LOG directive (default: $RUST_LOG, else info
                              in the files, and warnings plus the application reports on the console).

Accepted for compatibility with spark-submit but without effect in sparkyard:
  --packages, --exclude-packages, --repositories, --py-files, --driver-java-options,
  --driver-class-path, --driver-library-path, --driver-default-class-path,
  --total-executor-cores, --supervise, --proxy-user, --principal, --keytab, --remote.
"#;
    text.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    /// Parses and resolves with the given defaults and environment.
    fn full(
        list: &[&str],
        defaults: &[(&str, &str)],
        env: &[(&str, &str)],
    ) -> Result<SparkSubmitArguments, SubmitArgsError> {
        let env: Vec<(String, String)> = pairs(env);
        let lookup = move |key: &str| env.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        let mut parsed = parse(&args(list))?;
        parsed.resolve(&pairs(defaults), &lookup)?;
        Ok(parsed)
    }

    fn ok(list: &[&str]) -> SparkSubmitArguments {
        match full(list, &[], &[]) {
            Ok(a) => a,
            Err(e) => panic!("unexpected error for {list:?}: {e}"),
        }
    }

    fn err(list: &[&str]) -> SubmitArgsError {
        match full(list, &[], &[]) {
            Ok(a) => panic!("expected an error for {list:?}, got {a:?}"),
            Err(e) => e,
        }
    }

    fn err_msg(list: &[&str]) -> String {
        err(list).to_string()
    }

    fn prop<'a>(props: &'a [(String, String)], key: &str) -> Option<&'a str> {
        get_property(props, key)
    }

    #[test]
    fn spark_pi_line_from_the_yarn_docs() {
        let a = ok(&[
            "--class",
            "org.apache.spark.examples.SparkPi",
            "--master",
            "yarn",
            "--deploy-mode",
            "cluster",
            "--driver-memory",
            "4g",
            "--executor-memory",
            "2g",
            "--executor-cores",
            "1",
            "--queue",
            "thequeue",
            "examples/jars/spark-examples*.jar",
            "10",
        ]);
        assert_eq!(a.main_class.as_deref(), Some("org.apache.spark.examples.SparkPi"));
        assert_eq!(a.master.as_deref(), Some("yarn"));
        assert_eq!(a.deploy_mode.as_deref(), Some("cluster"));
        assert_eq!(a.driver_memory.as_deref(), Some("4g"));
        assert_eq!(a.executor_memory.as_deref(), Some("2g"));
        assert_eq!(a.executor_cores.as_deref(), Some("1"));
        assert_eq!(a.queue.as_deref(), Some("thequeue"));
        assert_eq!(
            a.primary_resource.as_deref(),
            Some("examples/jars/spark-examples*.jar")
        );
        assert_eq!(a.child_args, args(&["10"]));
        assert_eq!(a.action, SparkSubmitAction::Submit);
        assert_eq!(a.name.as_deref(), Some("org.apache.spark.examples.SparkPi"));
        let props = a.to_spark_properties();
        assert_eq!(prop(&props, "spark.master"), Some("yarn"));
        assert_eq!(prop(&props, "spark.submit.deployMode"), Some("cluster"));
        assert_eq!(prop(&props, "spark.driver.memory"), Some("4g"));
        assert_eq!(prop(&props, "spark.executor.memory"), Some("2g"));
        assert_eq!(prop(&props, "spark.executor.cores"), Some("1"));
        assert_eq!(prop(&props, "spark.yarn.queue"), Some("thequeue"));
        assert_eq!(
            prop(&props, "spark.app.name"),
            Some("org.apache.spark.examples.SparkPi")
        );
    }

    #[test]
    fn every_value_option_in_both_forms() {
        type Getter = fn(&SparkSubmitArguments) -> Option<&str>;
        let cases: &[(&str, Getter)] = &[
            ("--archives", |a| a.archives.as_deref()),
            ("--class", |a| a.main_class.as_deref()),
            ("--driver-class-path", |a| a.driver_class_path.as_deref()),
            ("--driver-cores", |a| a.driver_cores.as_deref()),
            ("--driver-default-class-path", |a| {
                a.driver_default_class_path.as_deref()
            }),
            ("--driver-java-options", |a| a.driver_java_options.as_deref()),
            ("--driver-library-path", |a| a.driver_library_path.as_deref()),
            ("--driver-memory", |a| a.driver_memory.as_deref()),
            ("--executor-cores", |a| a.executor_cores.as_deref()),
            ("--executor-memory", |a| a.executor_memory.as_deref()),
            ("--files", |a| a.files.as_deref()),
            ("--jars", |a| a.jars.as_deref()),
            ("--keytab", |a| a.keytab.as_deref()),
            ("--master", |a| a.master.as_deref()),
            ("--remote", |a| a.remote.as_deref()),
            ("--name", |a| a.name.as_deref()),
            ("--num-executors", |a| a.num_executors.as_deref()),
            ("--packages", |a| a.packages.as_deref()),
            ("--exclude-packages", |a| a.exclude_packages.as_deref()),
            ("--principal", |a| a.principal.as_deref()),
            ("--properties-file", |a| a.properties_file.as_deref()),
            ("--proxy-user", |a| a.proxy_user.as_deref()),
            ("--py-files", |a| a.py_files.as_deref()),
            ("--queue", |a| a.queue.as_deref()),
            ("--repositories", |a| a.repositories.as_deref()),
            ("--total-executor-cores", |a| a.total_executor_cores.as_deref()),
        ];
        for (option, get) in cases {
            let spaced = parse(&args(&[option, "7", "app.jar"])).expect("spaced form");
            assert_eq!(get(&spaced), Some("7"), "{option} v");
            assert_eq!(spaced.primary_resource.as_deref(), Some("app.jar"));
            let joined = format!("{option}=7");
            let inline = parse(&args(&[&joined, "app.jar"])).expect("inline form");
            assert_eq!(get(&inline), Some("7"), "{option}=v");
            assert_eq!(inline.primary_resource.as_deref(), Some("app.jar"));
        }
    }

    #[test]
    fn deploy_mode_kill_status_and_conf_in_both_forms() {
        let a = parse(&args(&["--deploy-mode=client", "x.jar"])).expect("parse");
        assert_eq!(a.deploy_mode.as_deref(), Some("client"));
        let a = parse(&args(&["--kill=app_1"])).expect("parse");
        assert_eq!(a.submission_to_kill.as_deref(), Some("app_1"));
        let a = parse(&args(&["--status", "app_2"])).expect("parse");
        assert_eq!(a.submission_to_request_status_for.as_deref(), Some("app_2"));
        let a = parse(&args(&[
            "--conf",
            "spark.a=1",
            "--conf=spark.b=2=3",
            "-c",
            "spark.c=",
            "x.jar",
        ]))
        .expect("parse");
        assert_eq!(
            a.spark_properties,
            pairs(&[("spark.a", "1"), ("spark.b", "2=3"), ("spark.c", "")])
        );
    }

    #[test]
    fn later_conf_wins_and_keeps_its_place() {
        let a = parse(&args(&[
            "--conf",
            "spark.a=1",
            "--conf",
            "spark.b=2",
            "--conf",
            "spark.a=3",
            "x.jar",
        ]))
        .expect("parse");
        assert_eq!(a.spark_properties, pairs(&[("spark.a", "3"), ("spark.b", "2")]));
    }

    #[test]
    fn switches_and_aliases() {
        let a = ok(&["--verbose", "--supervise", "--load-spark-defaults", "x.jar"]);
        assert!(a.verbose && a.supervise && a.load_spark_defaults);
        assert!(ok(&["-v", "x.jar"]).verbose);
        // A switch given a value through `=` is still the switch; the value is ignored.
        assert!(ok(&["--verbose=yes", "x.jar"]).verbose);
        assert_eq!(err(&["-h"]), SubmitArgsError::Help);
        assert_eq!(err(&["--help"]), SubmitArgsError::Help);
        assert_eq!(
            err(&["--master", "yarn", "--help", "--bogus"]),
            SubmitArgsError::Help
        );
        let help = err(&["--help"]);
        assert!(help.is_help() && help.show_usage());
        assert_eq!(help.exit_code(), 0);
        let usage_error = err(&["--usage-error"]);
        assert_eq!(usage_error.exit_code(), 1);
        assert!(usage_error.show_usage());
    }

    #[test]
    fn app_arguments_that_look_like_options_are_kept_verbatim() {
        let a = ok(&[
            "--class",
            "Main",
            "app.jar",
            "--conf",
            "x",
            "--help",
            "-v",
            "--master=local",
            "--bogus",
        ]);
        assert_eq!(
            a.child_args,
            args(&["--conf", "x", "--help", "-v", "--master=local", "--bogus"])
        );
        assert!(a.spark_properties.is_empty());
        assert!(!a.verbose);
        assert_eq!(a.master, None);
    }

    #[test]
    fn missing_value_is_reported_with_the_name_as_typed() {
        // After the primary resource, a trailing option is just an application argument.
        assert_eq!(ok(&["x.jar", "--class"]).child_args, args(&["--class"]));
        let e = err(&["--class"]);
        assert_eq!(e.to_string(), "Missing argument for option '--class'.");
        assert!(e.show_usage());
        assert_eq!(e.exit_code(), 1);
        assert_eq!(err_msg(&["-c"]), "Missing argument for option '-c'.");
        // `--class=` does not match Spark's `--name=value` pattern: it is an unknown option.
        assert_eq!(err_msg(&["--class="]), "Unrecognized option '--class='.");
    }

    #[test]
    fn unknown_options_before_the_resource() {
        let e = err(&["--bogus", "x.jar"]);
        assert_eq!(e.to_string(), "Unrecognized option '--bogus'.");
        assert!(e.show_usage());
        assert_eq!(e.exit_code(), 1);
        assert_eq!(err_msg(&["-x"]), "Unrecognized option '-x'.");
        assert_eq!(err_msg(&["-"]), "Unrecognized option '-'.");
        // Spark reports the part before `=` once the pattern has split it.
        assert_eq!(err_msg(&["--bogus=1", "x.jar"]), "Unrecognized option '--bogus'.");
        // The short alias takes no `=` form.
        assert_eq!(
            err_msg(&["-c=spark.a=1", "x.jar"]),
            "Unrecognized option '-c=spark.a=1'."
        );
    }

    #[test]
    fn conf_without_equals() {
        let e = err(&["--conf", "spark.novalue", "x.jar"]);
        assert_eq!(e.to_string(), "Spark config without '=': spark.novalue");
        assert!(e.show_usage());
        assert_eq!(e.exit_code(), 1);
    }

    #[test]
    fn deploy_mode_flag_is_checked_while_parsing() {
        let e = err(&["--deploy-mode", "both", "x.jar"]);
        assert_eq!(
            e.to_string(),
            "--deploy-mode must be either \"client\" or \"cluster\""
        );
        assert!(!e.show_usage());
        assert_eq!(e.exit_code(), 1);
        // Only submissions check a deploy mode taken from configuration.
        let a = full(
            &["--kill", "a", "--master", "yarn"],
            &[("spark.submit.deployMode", "both")],
            &[],
        );
        assert!(a.is_ok());
        // From configuration, Spark's later check (prepareSubmitEnvironment) applies.
        let e = full(&["x.jar"], &[("spark.submit.deployMode", "both")], &[]);
        assert_eq!(
            e.map(|_| ()).map_err(|e| e.to_string()),
            Err("Deploy mode must be either client or cluster".to_string())
        );
    }

    #[test]
    fn kill_status_and_version() {
        let a = ok(&["--kill", "application_1_0001", "--master", "yarn"]);
        assert_eq!(a.action, SparkSubmitAction::Kill);
        assert_eq!(a.submission_to_kill.as_deref(), Some("application_1_0001"));
        let a = ok(&["--master", "yarn", "--status", "application_1_0002"]);
        assert_eq!(a.action, SparkSubmitAction::RequestStatus);
        assert_eq!(
            a.submission_to_request_status_for.as_deref(),
            Some("application_1_0002")
        );
        assert_eq!(
            err_msg(&["--kill", "a", "--status", "b"]),
            "Action cannot be both KILL and REQUEST_STATUS."
        );
        assert_eq!(
            err_msg(&["--status", "a", "--kill", "b"]),
            "Action cannot be both REQUEST_STATUS and KILL."
        );
        assert_eq!(
            err_msg(&["--kill", "a", "--kill", "b"]),
            "Action cannot be both KILL and KILL."
        );
        // --kill "" passes Spark's null check.
        assert_eq!(
            ok(&["--kill", "", "--master", "yarn"]).action,
            SparkSubmitAction::Kill
        );
        // Without --master yarn there is no node to ask.
        assert_eq!(
            err_msg(&["--kill", "a"]),
            "Killing submissions is only supported with --master yarn: --kill asks the running node (sparkyard node) at yarn.resourcemanager.address"
        );
        assert!(err_msg(&["--status", "a", "--master", "local-cluster[1,1,1024]"])
            .starts_with("Requesting submission statuses is only supported with --master yarn: --status"));
        // --version stops reading; what follows goes to the application arguments.
        let a = ok(&["--version", "--bogus", "x"]);
        assert_eq!(a.action, SparkSubmitAction::PrintVersion);
        assert_eq!(a.child_args, args(&["--bogus", "x"]));
        let a = ok(&["--kill", "a", "--version"]);
        assert_eq!(a.action, SparkSubmitAction::PrintVersion);
        // --version skips validation, including the master rule.
        assert_eq!(
            ok(&["--master", "local", "--version"]).action,
            SparkSubmitAction::PrintVersion
        );
        // Kill with an unsupported master is refused like a submit.
        assert!(err_msg(&["--kill", "a", "--master", "spark://h:7077"]).contains("spark://h:7077"));
    }

    #[test]
    fn kill_and_status_without_a_submission_id() {
        let mut a = parse(&args(&["--master", "yarn"])).expect("parse");
        a.action = SparkSubmitAction::Kill;
        assert_eq!(
            a.resolve(&[], &no_env).map_err(|e| e.to_string()),
            Err("Please specify a submission to kill.".to_string())
        );
        let mut a = parse(&args(&["--master", "yarn"])).expect("parse");
        a.action = SparkSubmitAction::RequestStatus;
        assert_eq!(
            a.resolve(&[], &no_env).map_err(|e| e.to_string()),
            Err("Please specify a submission to request status for.".to_string())
        );
    }

    #[test]
    fn no_arguments_is_a_usage_error_with_spark_exit_code() {
        let e = err(&[]);
        assert!(matches!(e, SubmitArgsError::Usage { exit_code: -1, .. }));
        assert!(e.show_usage());
        assert_eq!(e.exit_code(), -1);
        assert_eq!(e.message(), None);
    }

    #[test]
    fn primary_resource_is_required() {
        let e = err(&["--master", "yarn"]);
        assert_eq!(
            e.to_string(),
            "Must specify a primary resource (JAR or Python or R file)"
        );
        assert!(!e.show_usage());
        assert_eq!(
            e.message(),
            Some("Must specify a primary resource (JAR or Python or R file)")
        );
    }

    #[test]
    fn numeric_validation_texts() {
        let cases: &[(&[&str], &str)] = &[
            (
                &["--driver-memory", "0", "x.jar"],
                "Driver memory must be a positive number",
            ),
            (
                &["--driver-memory", "1.5g", "x.jar"],
                "Driver memory must be a positive number",
            ),
            (
                &["--driver-memory", "-1g", "x.jar"],
                "Driver memory must be a positive number",
            ),
            (
                &["--driver-memory", "4q", "x.jar"],
                "Driver memory must be a positive number",
            ),
            (
                &["--executor-memory", "0m", "x.jar"],
                "Executor memory must be a positive number",
            ),
            (
                &["--executor-memory", "9999999p", "x.jar"],
                "Executor memory must be a positive number",
            ),
            (
                &["--driver-cores", "0", "x.jar"],
                "Driver cores must be a positive number",
            ),
            (
                &["--driver-cores", "two", "x.jar"],
                "Driver cores must be a positive number",
            ),
            (
                &["--executor-cores", "-2", "x.jar"],
                "Executor cores must be a positive number",
            ),
            (
                &["--total-executor-cores", "0", "x.jar"],
                "Total executor cores must be a positive number",
            ),
            (
                &["--num-executors", "0", "x.jar"],
                "Number of executors must be a positive number",
            ),
            (
                &["--num-executors", "3000000000", "x.jar"],
                "Number of executors must be a positive number",
            ),
        ];
        for (list, message) in cases {
            assert_eq!(err_msg(list), *message, "{list:?}");
        }
        // Values from configuration and the environment are checked too.
        let e = full(&["x.jar"], &[("spark.executor.cores", "0")], &[]).map_err(|e| e.to_string());
        assert_eq!(
            e.map(|_| ()),
            Err("Executor cores must be a positive number".to_string())
        );
        let e = full(&["x.jar"], &[], &[("SPARK_DRIVER_MEMORY", "nope")]).map_err(|e| e.to_string());
        assert_eq!(
            e.map(|_| ()),
            Err("Driver memory must be a positive number".to_string())
        );
    }

    #[test]
    fn accepted_numbers_and_memory_strings() {
        let a = ok(&[
            "--driver-memory",
            " 2G ",
            "--executor-memory",
            "512",
            "--driver-cores",
            "+2",
            "--executor-cores",
            "4",
            "--num-executors",
            "3",
            "x.jar",
        ]);
        assert_eq!(a.driver_memory.as_deref(), Some(" 2G "));
        assert!(is_positive_size("1"), "1");
        assert!(is_positive_size("1k"), "1k");
        assert!(is_positive_size("2Kb"), "2Kb");
        assert!(is_positive_size("3m"), "3m");
        assert!(is_positive_size("4g"), "4g");
        assert!(is_positive_size("5tb"), "5tb");
        assert!(is_positive_size("6P"), "6P");
        assert!(is_positive_size("7b"), "7b");
        assert!(!is_positive_size("8192p"), "8192p");
        assert!(!is_positive_size("99999999999999999999"), "99999999999999999999");
        assert!(!is_positive_size(""), "");
        assert!(!is_positive_size("g"), "g");
        assert!(!is_positive_size("1 g"), "1 g");
        assert!(!is_positive_size("1.0g"), "1.0g");
        assert!(!is_positive_size("1gib"), "1gib");
    }

    #[test]
    fn num_executors_zero_is_fine_with_dynamic_allocation() {
        let a = ok(&[
            "--num-executors",
            "0",
            "--conf",
            "spark.dynamicAllocation.enabled=TRUE",
            "x.jar",
        ]);
        assert!(a.dynamic_allocation_enabled);
        assert_eq!(
            err_msg(&[
                "--num-executors",
                "0",
                "--conf",
                "spark.dynamicAllocation.enabled=false",
                "x.jar"
            ]),
            "Number of executors must be a positive number"
        );
    }

    #[test]
    fn proxy_user_and_principal_exclude_each_other() {
        assert_eq!(
            err_msg(&["--proxy-user", "bob", "--principal", "bob@REALM", "x.jar"]),
            "Only one of --proxy-user or --principal can be provided."
        );
        let e = full(
            &["--proxy-user", "bob", "x.jar"],
            &[("spark.yarn.principal", "p@R")],
            &[],
        )
        .map_err(|e| e.to_string());
        assert_eq!(
            e.map(|_| ()),
            Err("Only one of --proxy-user or --principal can be provided.".to_string())
        );
    }

    #[test]
    fn remote_excludes_master_and_deploy_mode() {
        assert_eq!(
            err_msg(&["--remote", "sc://h", "--master", "yarn", "x.jar"]),
            "Remote cannot be specified with master and/or deploy mode."
        );
        let a = ok(&[
            "--remote",
            "sc://h",
            "--master",
            "yarn",
            "--conf",
            "spark.local.connect=1",
            "x.jar",
        ]);
        assert_eq!(a.remote.as_deref(), Some("sc://h"));
        assert_eq!(
            ok(&["--remote", "sc://h", "x.jar"]).remote.as_deref(),
            Some("sc://h")
        );
    }

    #[test]
    fn precedence_flag_conf_defaults_env() {
        let defaults = [
            ("spark.master", "local-cluster[1,1,512]"),
            ("spark.executor.memory", "3g"),
        ];
        let env = [
            ("MASTER", "local-cluster[9,9,9]"),
            ("SPARK_EXECUTOR_MEMORY", "4g"),
            ("DEPLOY_MODE", "cluster"),
            ("SPARK_DRIVER_MEMORY", "5g"),
        ];
        // Flag beats everything.
        let a = full(
            &[
                "--master",
                "yarn",
                "--conf",
                "spark.master=local-cluster[2,2,2]",
                "x.jar",
            ],
            &defaults,
            &env,
        )
        .expect("ok");
        assert_eq!(a.master.as_deref(), Some("yarn"));
        // --conf beats the properties file and the environment.
        let a = full(
            &["--conf", "spark.master=local-cluster[2,2,2]", "x.jar"],
            &defaults,
            &env,
        )
        .expect("ok");
        assert_eq!(a.master.as_deref(), Some("local-cluster[2,2,2]"));
        assert_eq!(
            prop(&a.spark_properties, "spark.master"),
            Some("local-cluster[2,2,2]")
        );
        // The properties file beats the environment.
        let a = full(&["x.jar"], &defaults, &env).expect("ok");
        assert_eq!(a.master.as_deref(), Some("local-cluster[1,1,512]"));
        assert_eq!(a.executor_memory.as_deref(), Some("3g"));
        // The environment is the last resort.
        let a = full(&["x.jar"], &[], &env).expect("ok");
        assert_eq!(a.master.as_deref(), Some("local-cluster[9,9,9]"));
        assert_eq!(a.executor_memory.as_deref(), Some("4g"));
        assert_eq!(a.deploy_mode.as_deref(), Some("cluster"));
        assert_eq!(a.driver_memory.as_deref(), Some("5g"));
        // spark.submit.deployMode beats DEPLOY_MODE; the flag beats both.
        let a = full(&["x.jar"], &[("spark.submit.deployMode", "client")], &env).expect("ok");
        assert_eq!(a.deploy_mode.as_deref(), Some("client"));
        let a = full(&["--deploy-mode", "client", "x.jar"], &[], &env).expect("ok");
        assert_eq!(a.deploy_mode.as_deref(), Some("client"));
        // Earlier defaults entries win over later ones (higher-priority file first).
        let a = full(
            &["x.jar"],
            &[("spark.executor.cores", "2"), ("spark.executor.cores", "3")],
            &[],
        )
        .expect("ok");
        assert_eq!(a.executor_cores.as_deref(), Some("2"));
        assert_eq!(a.spark_properties, pairs(&[("spark.executor.cores", "2")]));
    }

    #[test]
    fn more_fallbacks_from_properties() {
        let a = full(
            &["x.jar"],
            &[
                ("spark.yarn.queue", "q1"),
                ("spark.executor.instances", "4"),
                ("spark.driver.cores", "2"),
                ("spark.jars", "a.jar,b.jar"),
                ("spark.kerberos.keytab", "/k"),
                ("spark.yarn.principal", "p@R"),
                ("spark.driver.extraJavaOptions", "-Dx=1"),
            ],
            &[("SPARK_EXECUTOR_CORES", "3")],
        )
        .expect("ok");
        assert_eq!(a.queue.as_deref(), Some("q1"));
        assert_eq!(a.num_executors.as_deref(), Some("4"));
        assert_eq!(a.driver_cores.as_deref(), Some("2"));
        assert_eq!(a.jars.as_deref(), Some("a.jar,b.jar"));
        assert_eq!(a.keytab.as_deref(), Some("/k"));
        assert_eq!(a.principal.as_deref(), Some("p@R"));
        assert_eq!(a.executor_cores.as_deref(), Some("3"));
        assert_eq!(a.driver_java_options.as_deref(), Some("-Dx=1"));
    }

    #[test]
    fn non_spark_keys_are_dropped_but_yarn_keys_kept() {
        let a = full(
            &["--conf", "foo.bar=1", "--conf", "yarn.nodemanager.x=2", "x.jar"],
            &[("other", "3"), ("spark.x", "4"), ("yarn.resourcemanager.y", "5")],
            &[],
        )
        .expect("ok");
        assert_eq!(
            a.spark_properties,
            pairs(&[
                ("yarn.nodemanager.x", "2"),
                ("spark.x", "4"),
                ("yarn.resourcemanager.y", "5")
            ])
        );
        assert_eq!(
            a.warnings,
            vec![
                "Ignoring non-Spark config property: foo.bar".to_string(),
                "Ignoring non-Spark config property: other".to_string()
            ]
        );
        // `spark` without the dot is not a Spark key.
        let a = full(&["--conf", "sparkx=1", "x.jar"], &[], &[]).expect("ok");
        assert!(a.spark_properties.is_empty());
    }

    #[test]
    fn name_fallback_chain() {
        let env = [("SPARK_YARN_APP_NAME", "from-env")];
        let a = full(
            &["--name", "flag", "--class", "C", "x.jar"],
            &[("spark.app.name", "conf")],
            &env,
        )
        .expect("ok");
        assert_eq!(a.name.as_deref(), Some("flag"));
        let a = full(
            &["--master", "yarn", "--class", "C", "x.jar"],
            &[("spark.app.name", "conf")],
            &env,
        )
        .expect("ok");
        assert_eq!(a.name.as_deref(), Some("conf"));
        let a = full(&["--master", "yarn", "--class", "C", "x.jar"], &[], &env).expect("ok");
        assert_eq!(a.name.as_deref(), Some("from-env"));
        // SPARK_YARN_APP_NAME counts only for yarn masters.
        let a = full(&["--class", "C", "x.jar"], &[], &env).expect("ok");
        assert_eq!(a.name.as_deref(), Some("C"));
        let a = full(&["--master", "yarn", "dir/sub/app.jar"], &[], &[]).expect("ok");
        assert_eq!(a.name.as_deref(), Some("app.jar"));
        let a = full(&["hdfs://nn:8020/apps/app.jar/"], &[], &[]).expect("ok");
        assert_eq!(a.name.as_deref(), Some("app.jar"));
        let a = full(&["pi"], &[], &[]).expect("ok");
        assert_eq!(a.name.as_deref(), Some("pi"));
    }

    #[test]
    fn master_acceptance_and_refusal() {
        assert_eq!(ok(&["--master", "yarn", "x.jar"]).master.as_deref(), Some("yarn"));
        assert_eq!(
            ok(&["--master", "local-cluster[2, 1, 1024]", "x.jar"])
                .master
                .as_deref(),
            Some("local-cluster[2, 1, 1024]")
        );
        assert_eq!(ok(&["x.jar"]).master, None);
        for bad in [
            "local",
            "local[*]",
            "local[4]",
            "spark://host:7077",
            "k8s://https://h:6443",
            "yarn-cluster",
            "YARN",
            "local-cluster",
            "local-cluster[0,1,1024]",
            "local-cluster[1,1]",
            "",
        ] {
            let e = err(&["--master", bad, "x.jar"]);
            let text = e.to_string();
            assert!(text.contains(&format!("'{bad}'")), "{text}");
            assert!(
                text.contains("yarn") && text.contains("local-cluster[N,C,M]"),
                "{text}"
            );
            assert!(!text.contains('\n'));
            assert_eq!(e.exit_code(), 1);
            assert!(!e.show_usage());
        }
        // The same rule holds for a master from the environment or configuration.
        assert!(full(&["x.jar"], &[], &[("MASTER", "local[*]")]).is_err());
        assert!(full(&["x.jar"], &[("spark.master", "spark://h:1")], &[]).is_err());
        // A Spark validation error comes before the master rule, as in Spark.
        assert_eq!(
            err_msg(&["--master", "local"]),
            "Must specify a primary resource (JAR or Python or R file)"
        );
    }

    #[test]
    fn local_cluster_parsing() {
        assert_eq!(parse_local_cluster("local-cluster[2,1,1024]"), Some((2, 1, 1024)));
        assert_eq!(
            parse_local_cluster("local-cluster[ 3 ,\t4 , 5 ]"),
            Some((3, 4, 5))
        );
        assert_eq!(parse_local_cluster("local-cluster[1,1,0]"), None);
        assert_eq!(parse_local_cluster("local-cluster[1,0,1]"), None);
        assert_eq!(parse_local_cluster("local-cluster[1,1,1,1]"), None);
        assert_eq!(parse_local_cluster("local-cluster[1,1,]"), None);
        assert_eq!(parse_local_cluster("local-cluster[+1,1,1]"), None);
        assert_eq!(parse_local_cluster("local-cluster[-1,1,1]"), None);
        assert_eq!(parse_local_cluster("local-cluster[99999999999,1,1]"), None);
        assert_eq!(parse_local_cluster("local-cluster(1,1,1)"), None);
        assert_eq!(parse_local_cluster(" local-cluster[1,1,1]"), None);
        assert_eq!(parse_local_cluster("local-cluster[1,1,1] "), None);
        assert_eq!(parse_local_cluster("local-cluster[1 1,1,1]"), None);
        assert_eq!(parse_local_cluster("local-cluster[١,1,1]"), None);
    }

    #[test]
    fn to_spark_properties_flags_override_conf_and_merge_lists() {
        let a = ok(&[
            "--master",
            "yarn",
            "--conf",
            "spark.executor.memory=1g",
            "--conf",
            "spark.yarn.dist.jars=a.jar",
            "--conf",
            "spark.driver.host=10.0.0.1",
            "--executor-memory",
            "3g",
            "--jars",
            "b.jar, ,c.jar",
            "--files",
            "f.txt",
            "--num-executors",
            "5",
            "--driver-cores",
            "2",
            "--name",
            "n",
            "x.jar",
        ]);
        let props = a.to_spark_properties();
        assert_eq!(prop(&props, "spark.executor.memory"), Some("3g"));
        // Client mode: the application's jar ends the list (and spark.jars), as Spark's.
        assert_eq!(
            prop(&props, "spark.yarn.dist.jars"),
            Some("a.jar,b.jar,c.jar,x.jar")
        );
        assert_eq!(prop(&props, "spark.jars"), Some("x.jar"));
        assert_eq!(prop(&props, "spark.yarn.dist.files"), Some("f.txt"));
        assert_eq!(prop(&props, "spark.executor.instances"), Some("5"));
        assert_eq!(prop(&props, "spark.submit.deployMode"), Some("client"));
        assert_eq!(prop(&props, "spark.app.name"), Some("n"));
        // Client mode: driver cores are not passed on, spark.driver.host stays.
        assert_eq!(prop(&props, "spark.driver.cores"), None);
        assert_eq!(prop(&props, "spark.driver.host"), Some("10.0.0.1"));
        // The --conf entry kept its place; flag-only keys come after.
        assert_eq!(
            props.first().map(|(k, _)| k.as_str()),
            Some("spark.executor.memory")
        );

        let a = ok(&[
            "--master",
            "yarn",
            "--deploy-mode",
            "cluster",
            "--conf",
            "spark.driver.host=10.0.0.1",
            "--driver-cores",
            "2",
            "--py-files",
            "lib.zip",
            "main.py",
        ]);
        assert!(a.is_python);
        let props = a.to_spark_properties();
        assert_eq!(prop(&props, "spark.driver.cores"), Some("2"));
        assert_eq!(prop(&props, "spark.driver.host"), None);
        assert_eq!(prop(&props, "spark.submit.pyFiles"), Some("lib.zip"));
        assert_eq!(prop(&props, "spark.yarn.dist.pyFiles"), Some("lib.zip"));
        assert_eq!(prop(&props, "spark.yarn.isPython"), Some("true"));

        // No master anywhere: spark.master is left for the caller's default local cluster.
        let props = ok(&["x.jar"]).to_spark_properties();
        assert_eq!(prop(&props, "spark.master"), None);
        assert_eq!(prop(&props, "spark.app.name"), Some("x.jar"));
    }

    #[test]
    fn the_primary_jar_is_distributed_in_client_mode_only() {
        // SparkSubmitSuite "handles YARN client mode": --jars then the application's jar.
        let props = |list: &[&str]| ok(list).to_spark_properties();
        let client = props(&[
            "--master",
            "yarn",
            "--jars",
            "one.jar,two.jar,three.jar",
            "thejar.jar",
            "arg1",
        ]);
        assert_eq!(
            prop(&client, "spark.yarn.dist.jars"),
            Some("one.jar,two.jar,three.jar,thejar.jar")
        );
        assert_eq!(prop(&client, "spark.jars"), Some("thejar.jar"));
        // Without --jars, spark.jars from the properties comes first.
        let client = props(&["--conf", "spark.jars=lib.jar", "thejar.jar"]);
        assert_eq!(prop(&client, "spark.yarn.dist.jars"), Some("lib.jar,thejar.jar"));
        assert_eq!(prop(&client, "spark.jars"), Some("lib.jar,thejar.jar"));
        // Cluster mode ships it as the AM's app.jar: neither list has it.
        let cluster = props(&[
            "--master",
            "yarn",
            "--deploy-mode",
            "cluster",
            "--jars",
            "one.jar",
            "thejar.jar",
        ]);
        assert_eq!(prop(&cluster, "spark.yarn.dist.jars"), Some("one.jar"));
        assert_eq!(prop(&cluster, "spark.jars"), None);
        // Python and R files, shells and the internal marker are not user jars.
        for resource in [
            "job.py",
            "job.R",
            "spark-shell",
            "pyspark-shell",
            "spark-internal",
        ] {
            let p = props(&["--jars", "one.jar", resource]);
            assert_eq!(prop(&p, "spark.yarn.dist.jars"), Some("one.jar"), "{resource}");
            assert_eq!(prop(&p, "spark.jars"), None, "{resource}");
        }
    }

    #[test]
    fn a_submission_without_a_main_class_gets_sparks_message_or_a_built_in_class() {
        let builtin = |name: &str| name == "org.apache.spark.examples.SparkPi";
        let mut a = ok(&["spark-examples.jar", "10"]);
        let e = a.resolve_main_class(builtin).unwrap_err();
        assert_eq!(
            e.message(),
            Some("No main class set in JAR; please specify one with --class.")
        );
        assert_eq!(e.exit_code(), 1);
        // A built-in application's class name as the primary resource is its main class.
        let mut a = ok(&["org.apache.spark.examples.SparkPi", "10"]);
        assert_eq!(a.resolve_main_class(builtin), Ok(true));
        assert_eq!(a.main_class.as_deref(), Some("org.apache.spark.examples.SparkPi"));
        assert_eq!(a.child_args, vec!["10".to_string()]);
        // --class wins; Python and R applications need none; --kill and --status neither.
        for list in [
            &["--class", "my.App", "org.apache.spark.examples.SparkPi"][..],
            &["job.py"],
            &["job.R"],
            &["--master", "yarn", "--kill", "application_1_0001"],
            &["--master", "yarn", "--status", "application_1_0001"],
        ] {
            let mut a = ok(list);
            let before = a.main_class.clone();
            assert_eq!(a.resolve_main_class(builtin), Ok(false), "{list:?}");
            assert_eq!(a.main_class, before, "{list:?}");
        }
    }

    #[test]
    fn r_and_python_detection() {
        assert!(ok(&["job.R"]).is_r);
        assert!(ok(&["job.r"]).is_r);
        assert!(!ok(&["job.jar"]).is_r);
        assert!(ok(&["pyspark-shell"]).is_python);
    }

    #[test]
    fn odd_inputs_do_not_panic() {
        let odd = [
            "",
            "=",
            "--",
            "--=",
            "--=x",
            "-=",
            "---",
            "--conf=\n",
            "--name=a\nb",
            "é",
            "--é=ü",
            "-c",
            "--kill",
            "\u{0}",
        ];
        for a in odd {
            for b in odd {
                let _ = full(&[a, b], &[], &[]);
                let _ = full(&[a, b, "x.jar"], &[], &[]);
            }
        }
        // A line break in the inline value defeats Spark's pattern.
        assert_eq!(
            err_msg(&["--name=a\nb", "x.jar"]),
            "Unrecognized option '--name=a\nb'."
        );
        // "--" alone is an unknown option.
        assert_eq!(err_msg(&["--"]), "Unrecognized option '--'.");
        // An empty argument is a primary resource.
        assert_eq!(ok(&["", "a"]).primary_resource.as_deref(), Some(""));
    }

    #[test]
    fn usage_text_shape() {
        let text = usage();
        assert!(text.starts_with(
            "Usage: sparkyard submit [options] <app jar | built-in app name> [app arguments]\n"
        ));
        assert!(text.contains("Usage: sparkyard submit --kill [submission ID] --master yarn\n"));
        assert!(text.contains("Usage: sparkyard submit --status [submission ID] --master yarn\n"));
        assert!(text.contains("Usage: sparkyard submit --version\n"));
        for option in [
            "--master",
            "--deploy-mode",
            "--class",
            "--conf, -c",
            "--queue",
            "--help, -h",
        ] {
            assert!(text.contains(option), "{option}");
        }
        assert!(text.contains("--packages"));
    }

    #[test]
    fn errors_display_one_line() {
        let e = SubmitArgsError::invalid("x");
        assert_eq!(e.to_string(), "x");
        let boxed: Box<dyn std::error::Error> = Box::new(e);
        assert_eq!(boxed.to_string(), "x");
        assert_eq!(SparkSubmitAction::RequestStatus.to_string(), "REQUEST_STATUS");
    }
}
