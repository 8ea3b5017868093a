//! The command line of `sparkyard executor`, read the way Spark's
//! `CoarseGrainedExecutorBackend.parseArguments` reads an executor's arguments, and the argument
//! vector an ApplicationMaster puts in a container launch command (the order of Spark's
//! `ExecutorRunnable.prepareCommand`). The NodeManager reads launch commands with the same
//! parser, so whatever [`executor_command`] builds, [`parse_executor_args`] reads back.
//!
//! Layer: executor (the Spark side, above scheduler).

use std::fmt;

/// The subcommand word that starts an executor's argument vector.
pub const EXECUTOR_SUBCOMMAND: &str = "executor";

/// What an executor process needs to know to join its driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecutorArgs {
    /// `--driver-url`: the driver's scheduler endpoint. Required.
    pub driver_url: String,
    /// `--executor-id`. Required.
    pub executor_id: String,
    /// `--bind-address`; defaults to the hostname.
    pub bind_address: String,
    /// `--hostname` to advertise; defaults to the local host name given to the parser.
    pub hostname: String,
    /// `--cores`: a positive number. Required.
    pub cores: u32,
    /// `--app-id`. Required.
    pub app_id: String,
    /// `--worker-url` (Spark standalone's fate-sharing with its worker).
    pub worker_url: Option<String>,
    /// `--resourcesFile`: JSON file describing resources assigned to this executor.
    pub resources_file: Option<String>,
    /// `--resourceProfileId`; 0 (Spark's default profile) when absent.
    pub resource_profile_id: u32,
}

/// Why the executor's command line was refused. Spark prints the usage text for all of these
/// and exits with status 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecutorArgsError {
    /// An argument that is not a known option, or a known option with no value after it.
    /// Carries that argument and everything after it, as Spark prints them.
    Unrecognized {
        /// The unread arguments.
        rest: Vec<String>,
    },
    /// `--cores` or `--resourceProfileId` with a value that is not a usable integer (Spark's
    /// `toInt` fails, or the profile id is negative).
    InvalidNumber {
        /// The option.
        option: &'static str,
        /// The value given.
        value: String,
    },
    /// Required options absent, or `--cores` not positive (Spark prints only the usage text;
    /// the message is sparkyard's).
    MissingRequired {
        /// The options at fault, in the order of the usage text.
        options: Vec<&'static str>,
    },
}

impl ExecutorArgsError {
    /// The exit status Spark uses: 1.
    pub fn exit_code(&self) -> i32 {
        1
    }

    /// Whether to print [`executor_usage`] after the message: always, as Spark does.
    pub fn show_usage(&self) -> bool {
        true
    }
}

impl fmt::Display for ExecutorArgsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecutorArgsError::Unrecognized { rest } => {
                write!(f, "Unrecognized options: {}", rest.join(" "))
            }
            ExecutorArgsError::InvalidNumber { option, value } => {
                write!(f, "{option} needs an integer value, got '{value}'")
            }
            ExecutorArgsError::MissingRequired { options } => {
                write!(f, "missing or invalid required options: {}", options.join(", "))
            }
        }
    }
}

impl std::error::Error for ExecutorArgsError {}

/// Reads an executor's arguments (the words after `executor`) like Spark's
/// `CoarseGrainedExecutorBackend.parseArguments`: each option is followed by its value; the
/// last occurrence of an option wins; the first word that is not a known option (or a known
/// option with nothing after it) ends reading with `Unrecognized options: <that word and the
/// rest>`; `--driver-url`, `--executor-id`, `--app-id` and a positive `--cores` are required.
/// The hostname defaults to `local_hostname`, the bind address to the hostname.
pub fn parse_executor_args(args: &[String], local_hostname: &str) -> Result<ExecutorArgs, ExecutorArgsError> {
    let mut driver_url = None;
    let mut executor_id = None;
    let mut bind_address = None;
    let mut hostname = None;
    let mut cores: i32 = 0;
    let mut resources_file = None;
    let mut app_id = None;
    let mut worker_url = None;
    let mut resource_profile_id: u32 = 0;

    let mut idx = 0;
    while let Some(option) = args.get(idx) {
        let value = match args.get(idx + 1) {
            Some(v) if is_option(option) => v.clone(),
            _ => {
                return Err(ExecutorArgsError::Unrecognized {
                    rest: args.get(idx..).unwrap_or_default().to_vec(),
                })
            }
        };
        match option.as_str() {
            "--driver-url" => driver_url = Some(value),
            "--executor-id" => executor_id = Some(value),
            "--bind-address" => bind_address = Some(value),
            "--hostname" => hostname = Some(value),
            "--cores" => {
                cores = value
                    .parse::<i32>()
                    .map_err(|_| ExecutorArgsError::InvalidNumber {
                        option: "--cores",
                        value: value.clone(),
                    })?;
            }
            "--resourcesFile" => resources_file = Some(value),
            "--app-id" => app_id = Some(value),
            "--worker-url" => worker_url = Some(value),
            "--resourceProfileId" => {
                resource_profile_id = value
                    .parse::<i32>()
                    .ok()
                    .and_then(|id| u32::try_from(id).ok())
                    .ok_or_else(|| ExecutorArgsError::InvalidNumber {
                        option: "--resourceProfileId",
                        value: value.clone(),
                    })?;
            }
            _ => {}
        }
        idx += 2;
    }

    let hostname = hostname.unwrap_or_else(|| local_hostname.to_string());
    let positive_cores = u32::try_from(cores).ok().filter(|c| *c > 0);
    let mut missing = Vec::new();
    if driver_url.is_none() {
        missing.push("--driver-url");
    }
    if executor_id.is_none() {
        missing.push("--executor-id");
    }
    if positive_cores.is_none() {
        missing.push("--cores");
    }
    if app_id.is_none() {
        missing.push("--app-id");
    }
    match (driver_url, executor_id, positive_cores, app_id) {
        (Some(driver_url), Some(executor_id), Some(cores), Some(app_id)) => Ok(ExecutorArgs {
            bind_address: bind_address.unwrap_or_else(|| hostname.clone()),
            driver_url,
            executor_id,
            hostname,
            cores,
            app_id,
            worker_url,
            resources_file,
            resource_profile_id,
        }),
        _ => Err(ExecutorArgsError::MissingRequired { options: missing }),
    }
}

/// The options [`parse_executor_args`] knows, each taking one value.
fn is_option(word: &str) -> bool {
    matches!(
        word,
        "--driver-url"
            | "--executor-id"
            | "--bind-address"
            | "--hostname"
            | "--cores"
            | "--resourcesFile"
            | "--app-id"
            | "--worker-url"
            | "--resourceProfileId"
    )
}

/// The usage text of `sparkyard executor`, in the shape Spark prints for its executor backend.
pub fn executor_usage() -> String {
    let text = "
Usage: sparkyard executor [options]

 Options are:
   --driver-url <driverUrl>
   --executor-id <executorId>
   --bind-address <bindAddress>
   --hostname <hostname>
   --cores <cores>
   --resourcesFile <fileWithJSONResourceInformation>
   --app-id <appid>
   --worker-url <workerUrl>
   --resourceProfileId <id>
";
    text.to_string()
}

/// The argument vector that starts an executor: `executor --driver-url U --executor-id N
/// --hostname H --cores C --app-id A --resourceProfileId R`, in the order Spark's
/// `ExecutorRunnable.prepareCommand` uses. Fields Spark leaves out of that command are appended
/// only when parsing would not restore them by default (`--bind-address` when it differs from
/// the hostname, `--worker-url`, `--resourcesFile`), so that parsing everything after the first
/// word gives back `args`.
pub fn executor_command(args: &ExecutorArgs) -> Vec<String> {
    let mut command: Vec<String> = [
        EXECUTOR_SUBCOMMAND,
        "--driver-url",
        &args.driver_url,
        "--executor-id",
        &args.executor_id,
        "--hostname",
        &args.hostname,
        "--cores",
        &args.cores.to_string(),
        "--app-id",
        &args.app_id,
        "--resourceProfileId",
        &args.resource_profile_id.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if args.bind_address != args.hostname {
        command.push("--bind-address".to_string());
        command.push(args.bind_address.clone());
    }
    if let Some(url) = &args.worker_url {
        command.push("--worker-url".to_string());
        command.push(url.clone());
    }
    if let Some(file) = &args.resources_file {
        command.push("--resourcesFile".to_string());
        command.push(file.clone());
    }
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    const BASE: &[&str] = &[
        "--driver-url",
        "spark://CoarseGrainedScheduler@driver:7078",
        "--executor-id",
        "3",
        "--cores",
        "2",
        "--app-id",
        "application_1_0001",
    ];

    fn with(extra: &[&str]) -> Vec<String> {
        let mut all = args(BASE);
        all.extend(args(extra));
        all
    }

    #[test]
    fn required_only_uses_defaults() {
        let a = parse_executor_args(&args(BASE), "nm-host").expect("parse");
        assert_eq!(a.driver_url, "spark://CoarseGrainedScheduler@driver:7078");
        assert_eq!(a.executor_id, "3");
        assert_eq!(a.cores, 2);
        assert_eq!(a.app_id, "application_1_0001");
        assert_eq!(a.hostname, "nm-host");
        assert_eq!(a.bind_address, "nm-host");
        assert_eq!(a.resource_profile_id, 0);
        assert_eq!(a.worker_url, None);
        assert_eq!(a.resources_file, None);
    }

    #[test]
    fn every_option() {
        let a = parse_executor_args(
            &with(&[
                "--hostname",
                "h1",
                "--bind-address",
                "0.0.0.0",
                "--resourcesFile",
                "/tmp/res.json",
                "--worker-url",
                "spark://Worker@w:1",
                "--resourceProfileId",
                "4",
            ]),
            "local",
        )
        .expect("parse");
        assert_eq!(a.hostname, "h1");
        assert_eq!(a.bind_address, "0.0.0.0");
        assert_eq!(a.resources_file.as_deref(), Some("/tmp/res.json"));
        assert_eq!(a.worker_url.as_deref(), Some("spark://Worker@w:1"));
        assert_eq!(a.resource_profile_id, 4);
        // The bind address follows an explicit hostname.
        let a = parse_executor_args(&with(&["--hostname", "h2"]), "local").expect("parse");
        assert_eq!(a.bind_address, "h2");
        // The last occurrence wins.
        let a = parse_executor_args(&with(&["--cores", "8"]), "local").expect("parse");
        assert_eq!(a.cores, 8);
    }

    #[test]
    fn values_may_look_like_options() {
        let a = parse_executor_args(&with(&["--hostname", "--cores"]), "local").expect("parse");
        assert_eq!(a.hostname, "--cores");
        assert_eq!(a.cores, 2);
    }

    #[test]
    fn unrecognized_options() {
        let e = parse_executor_args(&with(&["--bogus", "1", "--hostname", "h"]), "l").expect_err("bogus");
        assert_eq!(e.to_string(), "Unrecognized options: --bogus 1 --hostname h");
        assert_eq!(e.exit_code(), 1);
        assert!(e.show_usage());
        // A known option with no value is unrecognized too, as in Spark.
        let e = parse_executor_args(&with(&["--hostname"]), "l").expect_err("no value");
        assert_eq!(e.to_string(), "Unrecognized options: --hostname");
        // The `=` form is not Spark's executor syntax.
        let e = parse_executor_args(&with(&["--hostname=h"]), "l").expect_err("eq");
        assert_eq!(e.to_string(), "Unrecognized options: --hostname=h");
        // Reading stops at the first unknown word, even if required options follow.
        let e = parse_executor_args(&args(&["executor", "--cores", "1"]), "l").expect_err("word");
        assert_eq!(e.to_string(), "Unrecognized options: executor --cores 1");
    }

    #[test]
    fn missing_required_or_bad_cores() {
        let e = parse_executor_args(&[], "l").expect_err("empty");
        assert_eq!(
            e,
            ExecutorArgsError::MissingRequired {
                options: vec!["--driver-url", "--executor-id", "--cores", "--app-id"]
            }
        );
        assert_eq!(e.exit_code(), 1);
        assert!(e.show_usage());
        assert!(!e.to_string().contains('\n'));
        for (drop, name) in [
            ("--driver-url", "--driver-url"),
            ("--executor-id", "--executor-id"),
            ("--cores", "--cores"),
            ("--app-id", "--app-id"),
        ] {
            let list: Vec<String> = BASE
                .chunks(2)
                .filter(|pair| pair.first() != Some(&drop))
                .flat_map(args)
                .collect();
            let e = parse_executor_args(&list, "l").expect_err(name);
            assert_eq!(e, ExecutorArgsError::MissingRequired { options: vec![name] });
        }
        for cores in ["0", "-3"] {
            let e = parse_executor_args(&with(&["--cores", cores]), "l").expect_err("cores");
            assert_eq!(
                e,
                ExecutorArgsError::MissingRequired {
                    options: vec!["--cores"]
                }
            );
        }
    }

    #[test]
    fn numbers_that_do_not_parse() {
        let e = parse_executor_args(&with(&["--cores", "two"]), "l").expect_err("cores");
        assert_eq!(
            e,
            ExecutorArgsError::InvalidNumber {
                option: "--cores",
                value: "two".to_string()
            }
        );
        assert_eq!(e.to_string(), "--cores needs an integer value, got 'two'");
        assert_eq!(e.exit_code(), 1);
        assert!(parse_executor_args(&with(&["--cores", "99999999999"]), "l").is_err());
        assert!(parse_executor_args(&with(&["--resourceProfileId", "x"]), "l").is_err());
        assert!(parse_executor_args(&with(&["--resourceProfileId", "-1"]), "l").is_err());
        let a = parse_executor_args(&with(&["--cores", "+4"]), "l").expect("plus sign");
        assert_eq!(a.cores, 4);
    }

    #[test]
    fn command_follows_spark_order_and_round_trips() {
        let a = parse_executor_args(&with(&["--hostname", "nm1", "--resourceProfileId", "2"]), "x")
            .expect("parse");
        let command = executor_command(&a);
        assert_eq!(
            command,
            args(&[
                "executor",
                "--driver-url",
                "spark://CoarseGrainedScheduler@driver:7078",
                "--executor-id",
                "3",
                "--hostname",
                "nm1",
                "--cores",
                "2",
                "--app-id",
                "application_1_0001",
                "--resourceProfileId",
                "2",
            ])
        );
        let rest = command.get(1..).unwrap_or_default();
        assert_eq!(parse_executor_args(rest, "elsewhere"), Ok(a));

        let full = ExecutorArgs {
            driver_url: "spark://d:1".to_string(),
            executor_id: "7".to_string(),
            bind_address: "0.0.0.0".to_string(),
            hostname: "h".to_string(),
            cores: 16,
            app_id: "app".to_string(),
            worker_url: Some("spark://Worker@w:2".to_string()),
            resources_file: Some("/r.json".to_string()),
            resource_profile_id: 9,
        };
        let command = executor_command(&full);
        assert_eq!(command.first().map(String::as_str), Some(EXECUTOR_SUBCOMMAND));
        let rest = command.get(1..).unwrap_or_default();
        assert_eq!(parse_executor_args(rest, "other"), Ok(full));
    }

    #[test]
    fn usage_shape() {
        let text = executor_usage();
        assert!(text.contains("Usage: sparkyard executor [options]"));
        for option in [
            "--driver-url <driverUrl>",
            "--executor-id <executorId>",
            "--bind-address <bindAddress>",
            "--hostname <hostname>",
            "--cores <cores>",
            "--resourcesFile <fileWithJSONResourceInformation>",
            "--app-id <appid>",
            "--worker-url <workerUrl>",
            "--resourceProfileId <id>",
        ] {
            assert!(text.contains(option), "{option}");
        }
    }

    #[test]
    fn odd_inputs_do_not_panic() {
        let odd = [
            "",
            "--cores",
            "--app-id",
            "-1",
            "é",
            "\u{0}",
            "--resourceProfileId",
        ];
        for a in odd {
            for b in odd {
                for c in odd {
                    let _ = parse_executor_args(&args(&[a, b, c]), "");
                    let _ = parse_executor_args(&with(&[a, b, c]), "");
                }
            }
        }
    }
}
