//! Authentication against real processes: a `sparkyard resourcemanager` and two
//! `sparkyard nodemanager` processes with `spark.authenticate` on (the node's secret in a
//! file) and `spark.network.crypto.enabled`. With the secret, applications run in both deploy
//! modes in container processes (each holding its application's secret only); without it, or
//! with a wrong one, a submit, `--status`, `--kill`, `chaos`, `actors` and a NodeManager are
//! refused with a line saying why, the node writes one WARN record naming the peer, and it carries on.

mod common;

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::process::{Command, Output};

use common::process::{app_id_in, config_dir, wait_exit_within, BIN};
use common::yarn_processes::{ok, Yarn};

const PI: [&str; 4] = ["--class", "org.apache.spark.examples.SparkPi", "x.jar", "4"];

/// `sparkyard <args>` against `yarn`'s ResourceManager with only `conf` (not the cluster's
/// secret).
fn stranger(yarn: &Yarn, conf: &[&str], args: &[&str]) -> Output {
    // The settings go before a submit's application arguments, after anything else.
    let (head, tail) = if args[0] == "submit" {
        args.split_at(1)
    } else {
        (args, &[][..])
    };
    let mut cmd = Command::new(BIN);
    cmd.args(head)
        .args(["--config-dir", &config_dir()])
        .args(["--conf", &format!("yarn.resourcemanager.address={}", yarn.addr)]);
    for c in conf {
        cmd.args(["--conf", c]);
    }
    cmd.args(tail);
    cmd.env_remove("RUST_LOG")
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap()
}

/// The one line a refused command printed, after checking it failed.
fn refused(out: &Output, what: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_ne!(out.status.code(), Some(0), "{what} was not refused:\n{stderr}");
    assert!(!stderr.contains("panicked"), "{what}:\n{stderr}");
    // One line says why (the submit's ERROR record of it goes to the files, not again to
    // the console).
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("refused the connection"))
        .collect();
    assert_eq!(lines.len(), 1, "{what}: one line saying why, not:\n{stderr}");
    lines[0].to_string()
}

#[test]
fn with_authentication_only_holders_of_the_secret_reach_the_node() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("node.secret");
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&file)
        .unwrap()
        .write_all(b"correct horse battery staple")
        .unwrap();
    let secret_file = format!("spark.authenticate.secret.file={}", file.display());
    let yarn = Yarn::start(
        2,
        &[
            "spark.authenticate=true",
            &secret_file,
            "spark.network.crypto.enabled=true",
        ],
    );

    // With the secret: both modes run, their containers processes of their own.
    let mut app = String::new();
    for mode in ["cluster", "client"] {
        let out = yarn
            .submit(&[&["--deploy-mode", mode][..], &PI[..]].concat())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let stdout = ok(out);
        assert!(
            stdout.contains("Pi is roughly "),
            "SparkPi in {mode} mode:\n{stdout}"
        );
        if mode == "cluster" {
            let at = stderr
                .find("application_")
                .expect("the application's id on stderr");
            app = app_id_in(&stderr[at..]);
        }
    }

    // Without it, or with another, nothing gets in.
    let none: &[&str] = &[];
    let wrong = [
        "spark.authenticate=true",
        "spark.authenticate.secret=not the secret",
    ];
    let submit = |conf: &[&str]| {
        let args = [&["submit", "--master", "yarn"][..], &PI[..]].concat();
        stranger(&yarn, conf, &args)
    };
    let line = refused(&submit(none), "a submit without the secret");
    assert!(line.contains("authentication is required"), "{line}");
    let line = refused(&submit(&wrong), "a submit with a wrong secret");
    assert!(line.contains("authentication failed"), "{line}");
    for (what, args) in [
        (
            "--status",
            vec!["submit", "--master", "yarn", "--status", app.as_str()],
        ),
        (
            "--kill",
            vec!["submit", "--master", "yarn", "--kill", app.as_str()],
        ),
        ("chaos", vec!["chaos", "kill", "/node/rm"]),
        ("actors", vec!["actors"]),
    ] {
        let line = refused(&stranger(&yarn, none, &args), what);
        assert!(line.contains("authentication is required"), "{what}: {line}");
        let line = refused(&stranger(&yarn, &wrong, &args), what);
        assert!(line.contains("authentication failed"), "{what}: {line}");
    }

    // A NodeManager without the secret says why at once and exits 1.
    let mut nm = Command::new(BIN)
        .args(["nodemanager", "--config-dir", &config_dir()])
        .args([
            "--rm",
            &yarn.tracker,
            "--hostname",
            "intruder",
            "--bind",
            "127.0.0.9",
        ])
        .args(["--log-dir", dir.path().to_str().unwrap()])
        .env_remove("RUST_LOG")
        .env("RUST_BACKTRACE", "0")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let code = wait_exit_within(&mut nm, std::time::Duration::from_secs(60));
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut nm.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("authentication is required"), "{stderr}");

    // The node is unaffected: the application's status and the node list, with the secret.
    let status = yarn.submit(&["--status", &app]).output().unwrap();
    let status_err = String::from_utf8_lossy(&status.stderr).into_owned();
    assert!(status.status.success(), "{status_err}");
    let nodes = yarn.control(&["rmadmin", "nodes"]);
    let listed = String::from_utf8_lossy(&nodes.stdout).into_owned();
    assert!(
        listed.contains("host1") && listed.contains("host2") && !listed.contains("intruder"),
        "{listed}"
    );

    // No message of the applications' own was refused on the way (the gate lets every call
    // of a real run through).
    let refused: Vec<String> = yarn
        .all_records()
        .iter()
        .map(|r| r.to_string())
        .filter(|t| t.contains("message_refused"))
        .collect();
    assert!(refused.is_empty(), "{refused:?}");

    // Each refusal is one WARN record on the node naming the peer. The node writes its
    // records out every tick (100 ms), so the test waits for them (30 s at most).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let records = yarn.all_records();
        let warned = records
            .iter()
            .filter(|r| {
                let text = r.to_string();
                text.contains("\"WARN\"") && text.contains("authentication") && text.contains("127.0.0.")
            })
            .count();
        if warned >= 10 {
            break;
        }
        let all: Vec<String> = records
            .iter()
            .map(|r| r.to_string())
            .filter(|t| t.contains("authentication"))
            .collect();
        assert!(
            std::time::Instant::now() < deadline,
            "{warned} WARN records of refused connections after 30 s: {all:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
