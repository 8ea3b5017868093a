//! The command line: bad input ends with one line naming the problem and a non-zero status,
//! never a panic; commands whose part of the system is not built yet say so; the live
//! node's controls and the chaos settings refuse bad input with one line.

use std::process::Command;

fn sparkyard(args: &[&str]) -> (i32, String, String) {
    sparkyard_in(args, None)
}

fn sparkyard_in(args: &[&str], dir: Option<&std::path::Path>) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sparkyard"));
    cmd.args(args)
        .env_remove("SPARKYARD_CONF_DIR")
        .env_remove("RUST_LOG")
        .env("RUST_BACKTRACE", "0");
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The last line of stderr (usage text may come before it), checked to be the only error line.
fn one_error_line(err: &str) -> String {
    assert!(!err.contains("panicked"), "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.contains("error:")).collect();
    assert_eq!(errors.len(), 1, "exactly one error line: {err}");
    errors[0].to_string()
}

fn config_dir() -> String {
    format!("{}/config", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn bad_configuration_values_name_key_and_value() {
    let cd = config_dir();
    let (code, _, err) = sparkyard(&[
        "submit",
        "--config-dir",
        &cd,
        "--conf",
        "spark.scheduler.revive.interval=12x",
        "x.jar",
    ]);
    assert_eq!(code, 1);
    let line = one_error_line(&err);
    assert!(
        line.contains("spark.scheduler.revive.interval") && line.contains("'12x'"),
        "{line}"
    );
    // Memory given through --conf is checked by spark-submit's own rule first, as in Spark.
    let (code, _, err) = sparkyard(&[
        "submit",
        "--config-dir",
        &cd,
        "--conf",
        "spark.executor.memory=12x",
        "x.jar",
    ]);
    assert_eq!(code, 1);
    assert!(
        one_error_line(&err).contains("Executor memory must be a positive number"),
        "{err}"
    );

    let (code, _, err) = sparkyard(&[
        "node",
        "--config-dir",
        &cd,
        "--conf",
        "yarn.resourcemanager.am.max-attempts=0",
    ]);
    assert_eq!(code, 1);
    let line = one_error_line(&err);
    assert!(
        line.contains("yarn.resourcemanager.am.max-attempts") && line.contains("'0'"),
        "{line}"
    );

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("yarn-site.conf"),
        "yarn.sparkyard.nodemanager.h1 rack=nope\n",
    )
    .unwrap();
    let (code, _, err) = sparkyard(&["node", "--config-dir", dir.path().to_str().unwrap()]);
    assert_eq!(code, 1);
    let line = one_error_line(&err);
    assert!(
        line.contains("yarn.sparkyard.nodemanager.h1") && line.contains("nope"),
        "{line}"
    );

    let (code, _, err) = sparkyard(&["node", "--config-dir", "/no/such/config"]);
    assert_eq!(code, 1);
    assert_eq!(
        one_error_line(&err),
        "sparkyard node: error: config directory /no/such/config does not exist"
    );
}

#[test]
fn bad_command_lines_are_one_line_errors() {
    for (args, expect) in [
        (vec!["bogus"], "unrecognized subcommand 'bogus'"),
        (
            vec!["submit", "--bogus", "x.jar"],
            "Unrecognized option '--bogus'.",
        ),
        (
            vec!["submit", "--deploy-mode", "sideways", "x.jar"],
            "--deploy-mode must be either \"client\" or \"cluster\"",
        ),
        (
            vec!["submit", "--class", "X"],
            "Must specify a primary resource (JAR or Python or R file)",
        ),
        (
            vec!["submit", "--executor-memory", "-1", "x.jar"],
            "Executor memory must be a positive number",
        ),
        (
            vec!["submit", "--conf", "novalue", "x.jar"],
            "Spark config without '=': novalue",
        ),
        (
            vec!["submit", "--master", "spark://h:7077", "x.jar"],
            "Master 'spark://h:7077' is not supported",
        ),
        (
            vec!["submit", "--log-level", "info,[[", "x.jar"],
            "invalid log level",
        ),
        (
            vec!["chaos", "kill", "/x", "--after", "soon"],
            "is not a duration",
        ),
        (vec!["logs", "--level", "loud", "--log-dir", "."], "loud"),
        (vec!["executor", "--cores", "two"], "--cores"),
        (
            vec!["node", "--conf", "novalue"],
            "--conf expects key=value, got 'novalue'",
        ),
        (
            vec!["submit", "--log-level", "loud", "x.jar"],
            "invalid log level 'loud' (expected error, warn, info, debug, trace, off",
        ),
        (
            vec!["node", "--log-level", "infp"],
            "invalid log level 'infp' (expected error, warn, info, debug, trace, off",
        ),
        (
            vec!["submit", "--status", "application_1_0001"],
            "only supported with --master yarn: --status asks the running node",
        ),
        (
            vec!["submit", "--kill", "application_1_0001"],
            "only supported with --master yarn: --kill asks the running node",
        ),
    ] {
        let (code, _, err) = sparkyard(&args);
        assert_ne!(code, 0, "{args:?}");
        let line = one_error_line(&err);
        assert!(line.contains(expect), "{args:?}: {line}");
    }
}

#[test]
fn everything_after_the_primary_resource_belongs_to_the_application() {
    let cd = config_dir();
    let logs = tempfile::tempdir().unwrap();
    let (code, _, err) = sparkyard(&[
        "submit",
        "--config-dir",
        &cd,
        "--log-dir",
        logs.path().to_str().unwrap(),
        "--class",
        "sparkyard.examples.DriverTest",
        "app.jar",
        "--bogus",
        "--conf",
        "not=checked",
    ]);
    // spark-submit took none of them: the application got them and refused the first.
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("Exception in thread \"main\" java.lang.IllegalArgumentException: unknown DriverTest argument '--bogus'"),
        "{err}"
    );
}

#[test]
fn an_unregistered_class_fails_to_load_in_client_mode() {
    let logs = tempfile::tempdir().unwrap();
    let (code, _, err) = sparkyard(&[
        "submit",
        "--config-dir",
        &config_dir(),
        "--log-dir",
        logs.path().to_str().unwrap(),
        "--class",
        "com.example.Nope",
        "app.jar",
    ]);
    assert_eq!(code, 101);
    assert!(
        err.contains("Error: Failed to load class com.example.Nope."),
        "{err}"
    );
}

#[test]
fn help_and_version() {
    let (code, out, _) = sparkyard(&["--version"]);
    assert_eq!(
        (code, out.trim()),
        (0, concat!("sparkyard ", env!("CARGO_PKG_VERSION")))
    );
    for cmd in ["node", "logs", "actors", "chaos"] {
        let (code, out, _) = sparkyard(&[cmd, "--help"]);
        assert_eq!(code, 0, "{cmd}");
        assert!(out.contains("Usage: sparkyard"), "{cmd}: {out}");
    }
    let (code, out, _) = sparkyard(&["submit", "--help"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("Usage: sparkyard submit [options]"));
    let (code, out, _) = sparkyard(&["executor", "--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("--driver-url"));
    let (code, out, _) = sparkyard(&["submit", "--version"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("Welcome to sparkyard version"));
}

#[test]
fn controls_without_a_node_or_with_bad_input_are_one_line_errors() {
    // Port 1: nothing listens there.
    let nowhere = "yarn.resourcemanager.address=127.0.0.1:1";
    for args in [
        vec!["actors", "--conf", nowhere],
        vec!["chaos", "kill", "*/allocator", "--conf", nowhere],
        vec!["chaos", "--conf", nowhere, "plan", "--seed", "1", "--for", "10s"],
        vec!["chaos", "partition", "/node/rm", "--for", "1s", "--conf", nowhere],
    ] {
        let (code, _, err) = sparkyard(&args);
        assert_eq!(code, 1, "{args:?}");
        let line = one_error_line(&err);
        assert!(
            line.contains("cannot connect") && line.contains("127.0.0.1:1"),
            "{args:?}: {err}"
        );
    }
    // A malformed pattern is refused before any node is asked.
    let (code, _, err) = sparkyard(&["chaos", "kill", "allocator", "--conf", nowhere]);
    assert_eq!(code, 1);
    let line = one_error_line(&err);
    assert!(
        line.contains("'allocator'") && line.contains("malformed"),
        "{line}"
    );
    let (code, _, err) = sparkyard(&["chaos", "kill", "*/allocator", "--after", "soon"]);
    assert_eq!(code, 1);
    assert!(one_error_line(&err).contains("'soon' is not a duration"), "{err}");
    let (code, _, err) = sparkyard(&["actors", "--app", "app_1", "--conf", nowhere]);
    assert_eq!(code, 1);
    assert!(one_error_line(&err).contains("--app"), "{err}");
    let (code, _, err) = sparkyard(&["actors", "--conf", "yarn.resourcemanager.address=127.0.0.1:0"]);
    assert_eq!(code, 1);
    assert!(one_error_line(&err).contains("port 0"), "{err}");
}

#[test]
fn bad_chaos_settings_on_submit_name_the_key() {
    let cd = config_dir();
    for (setting, key) in [
        (
            "spark.sparkyard.chaos.plan=*/allocator",
            "spark.sparkyard.chaos.plan",
        ),
        (
            "spark.sparkyard.chaos.plan=allocator@3",
            "spark.sparkyard.chaos.plan",
        ),
        ("spark.sparkyard.chaos.seed=seven", "spark.sparkyard.chaos.seed"),
    ] {
        let (code, _, err) = sparkyard(&[
            "submit",
            "--config-dir",
            &cd,
            "--conf",
            setting,
            "--class",
            "sparkyard.examples.DriverTest",
            "x.jar",
        ]);
        assert_eq!(code, 1, "{setting}");
        assert!(one_error_line(&err).contains(key), "{setting}: {err}");
    }
    let (code, _, err) = sparkyard(&[
        "submit",
        "--config-dir",
        &cd,
        "--master",
        "yarn",
        "--deploy-mode",
        "cluster",
        "--conf",
        "spark.sparkyard.chaos.seed=7",
        "--class",
        "sparkyard.examples.DriverTest",
        "x.jar",
    ]);
    assert_eq!(code, 1);
    let line = one_error_line(&err);
    assert!(
        line.contains("spark.sparkyard.chaos.seed") && line.contains("sparkyard chaos"),
        "{line}"
    );
}

#[test]
fn container_roles_are_launched_by_a_node_manager_only() {
    for args in [
        vec![
            "executor",
            "--driver-url",
            "/d",
            "--executor-id",
            "1",
            "--cores",
            "1",
            "--app-id",
            "a",
        ],
        vec!["application-master", "--class", "X"],
    ] {
        let (code, _, err) = sparkyard(&args);
        assert_eq!(code, 3, "{args:?}");
        assert!(
            one_error_line(&err).contains("launched by a NodeManager"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn submit_finds_config_through_the_environment_and_warns_on_unknown_keys() {
    let elsewhere = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sparkyard"));
    let logs = tempfile::tempdir().unwrap();
    let out = cmd
        .args([
            "submit",
            "--log-dir",
            logs.path().to_str().unwrap(),
            "--conf",
            "spark.executor.memroy=2g",
            "--class",
            "sparkyard.examples.DriverTest",
            "x.jar",
        ])
        .env("SPARKYARD_CONF_DIR", config_dir())
        .current_dir(elsewhere.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("DriverTest: 2 executors registered"));
    assert!(err.contains("did you mean 'spark.executor.memory'?"), "{err}");
}

#[test]
fn clap_errors_name_the_flag_and_keep_the_suggestion() {
    for (args, expect) in [
        (
            vec!["chaos", "partition", "/node/rm"],
            "the following required arguments were not provided: --for <DURATION> (see 'sparkyard chaos partition --help')",
        ),
        (
            vec!["actors", "--jsn"],
            "unexpected argument '--jsn' found (tip: a similar argument exists: '--json')",
        ),
        (
            vec!["actor"],
            "unrecognized subcommand 'actor' (tip: some similar subcommands exist: 'executor', 'actors')",
        ),
        (
            vec!["completions", "tcsh"],
            "invalid value 'tcsh' for '<SHELL>': [possible values: bash, elvish, fish, powershell, zsh]",
        ),
    ] {
        let (code, _, err) = sparkyard(&args);
        assert_eq!(code, 1, "{args:?}");
        let line = one_error_line(&err);
        assert!(line.contains(expect), "{args:?}: {line}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn help_names_a_command_and_completions_cover_every_shell() {
    let (code, out, _) = sparkyard(&["help", "chaos", "partition"]);
    assert_eq!(code, 0);
    assert!(out.contains("Usage: sparkyard chaos partition"), "{out}");
    assert!(out.contains("--for <DURATION>"), "{out}");
    let (code, out, _) = sparkyard(&["help", "submit"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("Usage: sparkyard submit [options]"), "{out}");
    let (code, out, _) = sparkyard(&["help", "executor"]);
    assert_eq!(code, 0);
    assert!(out.contains("--driver-url"), "{out}");
    let (code, out, _) = sparkyard(&["help"]);
    assert_eq!(code, 0);
    assert!(out.contains("completions") && out.contains("help"), "{out}");
    let (code, _, err) = sparkyard(&["help", "bogus"]);
    assert_eq!(code, 1);
    assert!(
        one_error_line(&err).contains("unrecognized subcommand 'bogus'"),
        "{err}"
    );

    for (shell, marker) in [
        ("bash", "_sparkyard()"),
        ("zsh", "#compdef sparkyard"),
        ("fish", "complete -c sparkyard"),
    ] {
        let (code, out, err) = sparkyard(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        assert!(out.contains(marker), "{shell}: {out}");
        for word in ["partition", "rmadmin", "log-level", "config-dir"] {
            assert!(out.contains(word), "{shell} misses {word}");
        }
    }
}

#[test]
fn submit_help_lists_the_built_in_applications_and_a_near_miss_gets_did_you_mean() {
    let (code, out, _) = sparkyard(&["submit", "--help"]);
    assert_eq!(code, 0);
    let list = out
        .split_once("Built-in applications")
        .map(|(_, l)| l)
        .unwrap_or_else(|| panic!("no list: {out}"));
    for class in [
        "org.apache.spark.examples.SparkPi",
        "org.apache.spark.examples.JavaWordCount",
        "sparkyard.examples.DriverTest",
        "sparkyard.examples.SleepTasks",
    ] {
        assert!(list.contains(&format!("  {class}\n")), "{class}: {list}");
    }

    let logs = tempfile::tempdir().unwrap();
    let (code, _, err) = sparkyard(&[
        "submit",
        "--config-dir",
        &config_dir(),
        "--log-dir",
        logs.path().to_str().unwrap(),
        "--class",
        "SparkPi",
        "app.jar",
    ]);
    // Spark's failure first, then the hint.
    assert_eq!(code, 101, "{err}");
    let failed = err.find("Error: Failed to load class SparkPi.").expect(&err);
    let hint = err
        .find("did you mean 'org.apache.spark.examples.SparkPi'?")
        .expect(&err);
    assert!(failed < hint, "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Every record under a log directory, as text.
fn all_records(dir: &std::path::Path) -> String {
    let mut text = String::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                text.push_str(&std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    text
}

#[test]
fn the_console_says_a_failure_once_and_keeps_to_its_default_level() {
    let logs = tempfile::tempdir().unwrap();
    let (code, _, err) = sparkyard(&[
        "submit",
        "--config-dir",
        &config_dir(),
        "--log-dir",
        logs.path().to_str().unwrap(),
        "--deploy-mode",
        "cluster",
        "--class",
        "sparkyard.examples.DriverTest",
        "app.jar",
        "--bogus",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // The user class's exception, once per attempt where it happened: not again as the
    // failure of the ApplicationMaster, its supervisor and its container.
    let thrown: Vec<&str> = err
        .lines()
        .filter(|l| {
            l.contains("unknown DriverTest argument '--bogus'") && l.contains("/am/application-master")
        })
        .collect();
    assert!(!thrown.is_empty(), "{err}");
    for line in &thrown {
        assert!(line.contains("User class threw exception"), "{err}");
    }
    assert!(!err.contains("failed: exit code 13"), "{err}");
    // The default console: warnings, errors and the client's lines; no other actor's INFO.
    for line in err.lines().filter(|l| l.contains(" INFO ")) {
        assert!(
            line.contains(" INFO  /submit/client#") || line.contains(" INFO  - "),
            "{line}"
        );
    }
    // The files keep every record: the failure at each level, and the INFO records.
    let records = all_records(logs.path());
    let failures = records
        .lines()
        .filter(|l| l.contains("\"event\":\"actor_failed\"") && l.contains("unknown DriverTest argument"))
        .count();
    assert!(failures >= 3, "{failures}");
    assert!(records.contains("\"level\":\"INFO\",\"msg\":\"Allocated AM container"));
}
