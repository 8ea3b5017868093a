//! The submission side's configuration rules against Spark's: every term of an executor's and
//! the AM's container memory in what YARN is asked for, the AM's launch environment
//! (`spark.yarn.appMasterEnv.*`), distributed files that do not exist, redaction wherever the
//! configuration is printed or logged, the main class, and the start-up checks of dynamic
//! allocation and speculation, through the Client in-process and through the binary.

mod common;

use std::path::Path;
use std::process::Command;

use common::inproc::{conf, msgs, node, submit, succeeded};
use common::process::{config_dir, BIN};
use sparkyard::deploy::client::{current_user, prepare_submission, submit_application, ClientArgs};
use sparkyard::logs::ctx::Instrumented;

const DRIVER_TEST: &str = "sparkyard.examples.DriverTest";

fn client_args(extra: &[(&str, &str)]) -> ClientArgs {
    ClientArgs {
        conf: conf(extra),
        main_class: DRIVER_TEST.into(),
        primary_resource: "tests.jar".into(),
        app_args: Vec::new(),
        client_mode_driver: None,
    }
}

#[actix_rt::test]
async fn yarn_is_asked_for_every_memory_term_of_the_am_and_the_executors() {
    let node = node().await;
    // Executors: 2048 MB heap + 384 MB overhead + 512 MB off-heap = 2944 MB. The AM (the
    // driver, cluster mode): 1024 MB + the explicit 500 MB overhead.
    let (outcome, output) = submit(
        &node,
        DRIVER_TEST,
        &[],
        conf(&[
            ("spark.executor.instances", "2"),
            ("spark.executor.memory", "2g"),
            ("spark.memory.offHeap.enabled", "true"),
            ("spark.memory.offHeap.size", "512m"),
            ("spark.driver.memoryOverhead", "500"),
            // Not a Python application: no PySpark memory is added.
            ("spark.executor.pyspark.memory", "1g"),
        ]),
    )
    .await;
    succeeded(&outcome, &output);
    assert!(
        output.contains("2 executors registered (requested 2)"),
        "{output}"
    );
    let m = msgs(&node);
    let has = |text: &str| m.iter().any(|x| x.contains(text));
    assert!(
        has("Will allocate AM container, with 1524 MB memory including 500 MB overhead"),
        "{m:#?}"
    );
    assert!(
        has("Will request 2 executor container(s) for ResourceProfile Id: 0, each with 1 core(s) and 2944 MB memory"),
        "{m:#?}"
    );
}

#[actix_rt::test]
async fn the_executor_check_against_the_cluster_maximum_names_every_term() {
    let node = node().await;
    let ctx = node.cluster.log_ctx().clone();
    let args = client_args(&[
        ("spark.executor.memory", "6g"),
        ("spark.memory.offHeap.enabled", "true"),
        ("spark.memory.offHeap.size", "1g"),
        ("spark.executor.pyspark.memory", "700m"),
        ("spark.yarn.isPython", "true"),
    ]);
    let rm = node.rm.clone();
    let res = Instrumented::new(async move { submit_application(&rm, &args).await }, ctx).await;
    assert_eq!(
        res,
        Err("Required executor memory (6144 MB), offHeap memory (1024) MB, overhead (614 MB), and PySpark memory (700 MB) is above the max threshold (8192 MB) of this cluster! Please check the values of 'yarn.scheduler.maximum-allocation-mb' and/or 'yarn.nodemanager.resource.memory-mb'.".to_string())
    );
}

#[actix_rt::test]
async fn the_am_launch_context_carries_the_app_master_environment() {
    let node = node().await;
    let args = client_args(&[
        ("spark.yarn.appMasterEnv.JAVA_HOME", "/opt/jdk"),
        ("spark.yarn.appMasterEnv.MY_TOKEN", "t0k3n"),
        // A variable the Client sets itself gets the value appended, as YARN's paths are.
        ("spark.yarn.appMasterEnv.SPARK_USER", "extra"),
        // Executors' environment is not the AM's.
        ("spark.executorEnv.ONLY_EXECUTORS", "1"),
        ("spark.driver.memory", "2g"),
    ]);
    let context = prepare_submission(&node.rm, &args).await.unwrap();
    let env = &context.am_container_spec.environment;
    let want: Vec<(String, String)> = vec![
        ("JAVA_HOME".into(), "/opt/jdk".into()),
        ("MY_TOKEN".into(), "t0k3n".into()),
        ("SPARK_USER".into(), format!("{}:extra", current_user())),
    ];
    assert_eq!(env.clone().into_iter().collect::<Vec<_>>(), want);
    // The driver's 2048 MB + 384 MB (10 % is 204 MB, below the floor).
    assert_eq!(context.resource.memory_mb, 2432);
    // The application's configuration still travels whole in its properties file.
    let props = &context.am_container_spec.local_resources["__spark_conf__.properties"];
    assert!(props.contains("spark.yarn.appMasterEnv.JAVA_HOME"), "{props}");
}

#[actix_rt::test]
async fn a_distributed_file_that_does_not_exist_fails_the_submission() {
    let node = node().await;
    let dir = tempfile::tempdir().unwrap();
    let present = dir.path().join("present.txt");
    std::fs::write(&present, "x").unwrap();
    let present = present.to_str().unwrap().to_string();
    let missing = dir.path().join("missing.txt");
    let missing = missing.to_str().unwrap().to_string();
    let submit = |extra: Vec<(&'static str, String)>| {
        let rm = node.rm.clone();
        let ctx = node.cluster.log_ctx().clone();
        let pairs: Vec<(&str, &str)> = extra.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let args = client_args(&pairs);
        async move {
            Instrumented::new(
                async move { prepare_submission(&rm, &args).await.map(|_| ()) },
                ctx,
            )
            .await
        }
    };
    let not_found = |path: &str| {
        Err(format!(
            "java.io.FileNotFoundException: File file:{path} does not exist"
        ))
    };
    for key in [
        "spark.yarn.dist.files",
        "spark.yarn.dist.jars",
        "spark.yarn.dist.archives",
    ] {
        assert_eq!(
            submit(vec![(key, format!("{present},{missing}"))]).await,
            not_found(&missing),
            "{key}"
        );
        // The link name after '#' is not part of the path; a file: URI is a local path.
        assert_eq!(
            submit(vec![(key, format!("file://{missing}#alias"))]).await,
            not_found(&missing),
            "{key}"
        );
        assert_eq!(
            submit(vec![(key, format!("{present}#alias,local:{missing}"))]).await,
            Ok(()),
            "{key}: local: resources are never copied"
        );
    }
    // A relative path is the submitting process's working directory's.
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(
        submit(vec![("spark.yarn.dist.files", "no-such-file.txt".to_string())]).await,
        not_found(cwd.join("no-such-file.txt").to_str().unwrap())
    );
    // The primary resource names a built-in application: in the jars (client mode puts it
    // there) it is not looked for.
    assert_eq!(
        submit(vec![("spark.yarn.dist.jars", "tests.jar".to_string())]).await,
        Ok(())
    );
    let m = msgs(&node);
    assert!(
        !m.iter().any(|x| x.starts_with("Submitting application")),
        "nothing was submitted"
    );
}

// ---------------------------------------------------------------------------------------
// Through the binary, on the embedded cluster.
// ---------------------------------------------------------------------------------------

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    logs: tempfile::TempDir,
}

fn sparkyard_submit(args: &[&str]) -> Run {
    sparkyard_submit_in(args, None)
}

fn sparkyard_submit_in(args: &[&str], dir: Option<&Path>) -> Run {
    let logs = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args([
        "submit",
        "--config-dir",
        &config_dir(),
        "--log-dir",
        logs.path().to_str().unwrap(),
        "--conf",
        "spark.yarn.report.interval=100ms",
    ])
    .args(args)
    .env_remove("RUST_LOG")
    .env_remove("SPARKYARD_CONF_DIR")
    .env("RUST_BACKTRACE", "0");
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let out = cmd.output().unwrap();
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        logs,
    };
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    run
}

/// Every file under `dir`, read as text.
fn all_text(dir: &Path) -> String {
    let mut text = String::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                text.push_str(&String::from_utf8_lossy(&std::fs::read(&p).unwrap_or_default()));
            }
        }
    }
    text
}

const MAP_COUNT: &[&str] = &["--class", "sparkyard.examples.MapCount", "x.jar"];

#[test]
fn verbose_output_and_logs_never_show_a_secret() {
    for mode in ["client", "cluster"] {
        let run = sparkyard_submit(
            &[
                &[
                    "-v",
                    "--deploy-mode",
                    mode,
                    "--conf",
                    "spark.executorEnv.SECRET_PASSWORD=hunter2",
                    "--conf",
                    "spark.yarn.appMasterEnv.AWS_SECRET_ACCESS_KEY=hunter3",
                    "--conf",
                    "spark.app.tag=made with my-token-hunter4",
                    "--conf",
                    "spark.executor.extraJavaOptions=-Dspark.my.password=hunter5",
                ][..],
                MAP_COUNT,
            ]
            .concat(),
        );
        assert_eq!(run.code, 0, "{mode}: {}", run.stderr);
        for line in [
            "(spark.executorEnv.SECRET_PASSWORD,*********(redacted))",
            "(spark.yarn.appMasterEnv.AWS_SECRET_ACCESS_KEY,*********(redacted))",
            "(spark.app.tag,*********(redacted))",
            "(spark.executor.extraJavaOptions,*********(redacted))",
        ] {
            assert!(run.stderr.contains(line), "{mode}: no {line} in:\n{}", run.stderr);
        }
        let plain = format!("(spark.submit.deployMode,{mode})");
        assert!(
            run.stderr.contains(&plain),
            "{mode}: no {plain} in:\n{}",
            run.stderr
        );
        let logs = all_text(run.logs.path());
        assert!(
            logs.contains("-Dspark.my.password=*********(redacted)"),
            "{mode}: the launch command is logged, redacted"
        );
        for secret in ["hunter2", "hunter3", "hunter4", "hunter5"] {
            assert!(
                !run.stderr.contains(secret),
                "{mode}: {secret} on stderr:\n{}",
                run.stderr
            );
            assert!(!run.stdout.contains(secret), "{mode}: {secret} on stdout");
            assert!(!logs.contains(secret), "{mode}: {secret} in the logs");
        }
        // Client mode distributes the application's jar, as spark-submit does.
        if mode == "client" {
            assert!(
                run.stderr.contains("(spark.yarn.dist.jars,x.jar)"),
                "{}",
                run.stderr
            );
        }
    }
}

#[test]
fn the_redaction_regex_is_the_applications() {
    let run = sparkyard_submit(
        &[
            &[
                "-v",
                "--conf",
                "spark.redaction.regex=(?i)internal",
                "--conf",
                "spark.internal.url=http://hidden",
                "--conf",
                "spark.my.password=shown",
            ][..],
            MAP_COUNT,
        ]
        .concat(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("(spark.internal.url,*********(redacted))"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("(spark.my.password,shown)"), "{}", run.stderr);
    assert!(!run.stderr.contains("http://hidden"));

    let run = sparkyard_submit(&[&["--conf", "spark.redaction.regex=(?<=x)"][..], MAP_COUNT].concat());
    assert_eq!(run.code, 1);
    let last = run.stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains("spark.redaction.regex") && last.contains("must be a regular expression"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_primary_resource_without_a_class_gets_sparks_message() {
    let run = sparkyard_submit(&["spark-examples.jar", "10"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let errors: Vec<&str> = run.stderr.lines().filter(|l| l.contains("error:")).collect();
    assert_eq!(
        errors,
        vec!["sparkyard submit: error: No main class set in JAR; please specify one with --class. (run 'sparkyard submit --help' for usage)"],
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("Failed to load class"), "{}", run.stderr);
}

#[test]
fn a_built_in_class_name_as_the_primary_resource_runs_that_application() {
    for mode in ["client", "cluster"] {
        let run = sparkyard_submit(&["--deploy-mode", mode, "org.apache.spark.examples.SparkPi", "2"]);
        assert_eq!(run.code, 0, "{mode}: {}", run.stderr);
        assert!(run.stdout.contains("Pi is roughly 3.1"), "{mode}: {}", run.stdout);
    }
}

#[test]
fn missing_files_fail_the_submission_and_missing_jars_are_warned_about_first() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    for mode in ["client", "cluster"] {
        let run = sparkyard_submit_in(
            &[&["--deploy-mode", mode, "--files", "missing.txt"][..], MAP_COUNT].concat(),
            Some(&cwd),
        );
        assert_eq!(run.code, 1, "{mode}: {}", run.stderr);
        let want = format!(
            "Exception in thread \"main\" java.io.FileNotFoundException: File file:{}/missing.txt does not exist",
            cwd.display()
        );
        assert!(
            run.stderr.lines().any(|l| l == want),
            "{mode}: no {want:?} in:\n{}",
            run.stderr
        );

        let run = sparkyard_submit_in(
            &[&["--deploy-mode", mode, "--jars", "lib.jar"][..], MAP_COUNT].concat(),
            Some(&cwd),
        );
        assert_eq!(run.code, 1, "{mode}: {}", run.stderr);
        let warning = format!("Local jar {}/lib.jar does not exist, skipping.", cwd.display());
        let failure = format!(
            "java.io.FileNotFoundException: File file:{}/lib.jar does not exist",
            cwd.display()
        );
        let at = |text: &str| {
            run.stderr
                .find(text)
                .unwrap_or_else(|| panic!("{mode}: no {text:?} in:\n{}", run.stderr))
        };
        assert!(at(&warning) < at(&failure), "{mode}: the warning comes first");
        assert!(!run.stdout.contains("Count: 10"), "{mode}: nothing ran");
    }
    // Files that are there are accepted (and the application's jar name is never looked for).
    std::fs::write(cwd.join("data.txt"), "x").unwrap();
    let run = sparkyard_submit_in(
        &[
            &["--files", "data.txt", "--archives", "data.txt#d"][..],
            MAP_COUNT,
        ]
        .concat(),
        Some(&cwd),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn dynamic_allocation_start_up_checks_refuse_with_sparks_messages() {
    let run = sparkyard_submit(
        &[
            &[
                "--conf",
                "spark.dynamicAllocation.enabled=true",
                "--conf",
                "spark.dynamicAllocation.initialExecutors=5",
                "--conf",
                "spark.dynamicAllocation.maxExecutors=3",
            ][..],
            MAP_COUNT,
        ]
        .concat(),
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.stderr.lines().last(),
        Some("sparkyard submit: error: inconsistent configuration: requirement failed: initial executor number 5 must between min executor number 0 and max executor number 3"),
        "{}",
        run.stderr
    );
    assert!(!run.stdout.contains("Count: 10"), "nothing ran");

    let run = sparkyard_submit(
        &[
            &[
                "--conf",
                "spark.dynamicAllocation.enabled=true",
                "--conf",
                "spark.dynamicAllocation.executorAllocationRatio=0",
            ][..],
            MAP_COUNT,
        ]
        .concat(),
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .ends_with("spark.dynamicAllocation.executorAllocationRatio must be > 0 and <= 1.0\n"),
        "{}",
        run.stderr
    );
}

#[test]
fn spark_accepts_quantile_one_and_the_memory_keys_without_a_warning() {
    let run = sparkyard_submit(
        &[
            &[
                "--conf",
                "spark.speculation=true",
                "--conf",
                "spark.speculation.quantile=1.0",
                "--conf",
                "spark.memory.offHeap.enabled=true",
                "--conf",
                "spark.memory.offHeap.size=64m",
                "--conf",
                "spark.executor.pyspark.memory=100m",
                "--conf",
                "spark.executor.minMemoryOverhead=400m",
                "--conf",
                "spark.yarn.am.memoryOverhead=400m",
            ][..],
            MAP_COUNT,
        ]
        .concat(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("Count: 10"), "{}", run.stdout);
    assert!(
        !run.stderr.contains("unknown configuration key"),
        "{}",
        run.stderr
    );
}

#[actix_rt::test]
async fn an_initial_number_below_the_minimum_is_ignored_with_sparks_warnings() {
    let node = node().await;
    let (outcome, output) = submit(
        &node,
        DRIVER_TEST,
        &[],
        conf(&[
            ("spark.dynamicAllocation.enabled", "true"),
            ("spark.dynamicAllocation.minExecutors", "2"),
            ("spark.dynamicAllocation.initialExecutors", "1"),
            ("spark.dynamicAllocation.maxExecutors", "3"),
        ]),
    )
    .await;
    succeeded(&outcome, &output);
    assert!(
        output.contains("2 executors registered (requested 2)"),
        "{output}"
    );
    let m = msgs(&node);
    for line in [
        "spark.dynamicAllocation.initialExecutors less than spark.dynamicAllocation.minExecutors is invalid, ignoring its setting, please update your configs.",
        "spark.executor.instances less than spark.dynamicAllocation.minExecutors is invalid, ignoring its setting, please update your configs.",
        "Using initial executors = 2, max of spark.dynamicAllocation.initialExecutors, spark.dynamicAllocation.minExecutors and spark.executor.instances",
    ] {
        assert!(m.iter().any(|x| x == line), "no {line:?} in {m:#?}");
    }
}
