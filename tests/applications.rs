//! `sparkyard application` and `sparkyard node -list` against a running `sparkyard node`, as
//! a YARN user types them: after one application that finished and one killed with
//! `application -kill`, `-list -appStates ALL` lists both, the default list neither;
//! `-status` and `-appattempts` describe one; a second kill says it has already finished;
//! a bad id, state or option is one line and exit 1. Every wait is bounded.

mod common;

use std::process::Command;

use common::process::{
    config_dir, run_to_end as run, start_node, submit, submit_sleeping, wait_exit, Node, Out, BIN,
};

/// `sparkyard <args>` pointed at `node`.
fn yarn(node: &Node, args: &[&str]) -> Out {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .args(["--config-dir", &config_dir()])
        .args(["--conf", &format!("yarn.resourcemanager.address={}", node.addr)]);
    run(cmd)
}

/// The rows of a `-list` output (after its two header lines), split on tabs and trimmed.
fn rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .skip(2)
        .map(|l| l.split('\t').map(|c| c.trim().to_string()).collect())
        .collect()
}

#[test]
fn application_list_status_kill_and_attempts_against_a_running_node() {
    let node = start_node();

    // One application that finishes.
    let out = submit(
        &node,
        &[
            "--deploy-mode",
            "cluster",
            "--name",
            "pi",
            "--class",
            "org.apache.spark.examples.SparkPi",
            "x.jar",
            "2",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let finished = stderr
        .split_whitespace()
        .find(|w| w.starts_with("application_"))
        .expect("an application id")
        .trim_end_matches(|c: char| !c.is_ascii_digit())
        .to_string();

    // One that runs, listed by the default -list, then killed from the command line.
    let (mut running, _err, _seen, killed) = submit_sleeping(&node);
    let o = yarn(&node, &["application", "-list"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.starts_with(
            "Total number of applications (application-types: [] and states: [SUBMITTED, ACCEPTED, RUNNING]):1\n"
        ),
        "{}",
        o.stdout
    );
    let live = rows(&o.stdout);
    assert_eq!(live.len(), 1, "{}", o.stdout);
    assert_eq!(live[0][0], killed);
    assert_eq!(live[0][2], "SPARK");
    assert_eq!(
        (live[0][5].as_str(), live[0][6].as_str()),
        ("RUNNING", "UNDEFINED")
    );

    let o = yarn(&node, &["application", "-kill", &killed]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout, format!("Killing application {killed}\n"));
    assert_ne!(
        wait_exit(&mut running),
        0,
        "the killed application's submit fails"
    );

    // Both, with every state.
    let o = yarn(&node, &["application", "-list", "-appStates", "ALL"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "Total number of applications (application-types: [] and states: [NEW, NEW_SAVING, SUBMITTED, ACCEPTED, RUNNING, FINISHED, FAILED, KILLED]):2"
    );
    let header: Vec<&str> = lines[1].split('\t').map(str::trim).collect();
    assert_eq!(
        header,
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
    let all = rows(&o.stdout);
    let row = |id: &str| {
        all.iter()
            .find(|r| r[0] == id)
            .unwrap_or_else(|| panic!("{id} in {}", o.stdout))
    };
    let f = row(&finished);
    assert_eq!(
        (f[1].as_str(), f[5].as_str(), f[6].as_str(), f[7].as_str()),
        ("pi", "FINISHED", "SUCCEEDED", "100%")
    );
    let k = row(&killed);
    assert_eq!((k[5].as_str(), k[6].as_str()), ("KILLED", "KILLED"));

    // Filters: a state, a type (any case), a type no application has.
    let o = yarn(&node, &["application", "-list", "-appStates", "killed"]);
    assert_eq!(rows(&o.stdout).len(), 1, "{}", o.stdout);
    assert_eq!(rows(&o.stdout)[0][0], killed);
    let o = yarn(
        &node,
        &["application", "-list", "-appStates", "ALL", "-appTypes", "spark"],
    );
    assert_eq!(rows(&o.stdout).len(), 2, "{}", o.stdout);
    let o = yarn(
        &node,
        &[
            "application",
            "-list",
            "-appStates",
            "ALL",
            "-appTypes",
            "MAPREDUCE",
        ],
    );
    assert!(o
        .stdout
        .starts_with("Total number of applications (application-types: [MAPREDUCE]"));
    assert!(rows(&o.stdout).is_empty(), "{}", o.stdout);
    // Nothing is live now.
    let o = yarn(&node, &["application", "-list"]);
    assert!(rows(&o.stdout).is_empty(), "{}", o.stdout);

    // -status and -appattempts.
    let o = yarn(&node, &["application", "-status", &finished]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.starts_with("Application Report : \n"), "{}", o.stdout);
    for field in [
        format!("\tApplication-Id : {finished}\n"),
        "\tApplication-Name : pi\n".to_string(),
        "\tState : FINISHED\n".to_string(),
        "\tFinal-State : SUCCEEDED\n".to_string(),
        "\tProgress : 100%\n".to_string(),
    ] {
        assert!(o.stdout.contains(&field), "{field:?} in {}", o.stdout);
    }
    let o = yarn(&node, &["application", "-appattempts", &killed]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(lines[0], "Total number of application attempts :1");
    let attempt: Vec<&str> = lines[2].split('\t').map(str::trim).collect();
    assert!(attempt[0].starts_with("appattempt_"), "{}", o.stdout);
    assert_eq!(attempt[1], "KILLED");
    assert!(attempt[2].starts_with("container_"), "{}", o.stdout);

    // A second kill, of an application that ended.
    let o = yarn(&node, &["application", "-kill", &finished]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.stdout,
        format!("Application {finished} has already finished \n")
    );

    // Bad input: one line, exit 1.
    let unknown = "application_1_9999";
    for (args, line) in [
        (
            vec!["application", "-status", unknown],
            format!("sparkyard application: error: Application with id '{unknown}' doesn't exist in RM or Timeline Server."),
        ),
        (
            vec!["application", "-kill", unknown],
            format!("sparkyard application: error: Application with id '{unknown}' doesn't exist in RM."),
        ),
        (
            vec!["application", "-list", "-appStates", "DONE"],
            "sparkyard application: error: The application state DONE is invalid. The valid application state can be one of the following: ALL,NEW,NEW_SAVING,SUBMITTED,ACCEPTED,RUNNING,FINISHED,FAILED,KILLED".to_string(),
        ),
        (
            vec!["application", "-status", "app_42"],
            "sparkyard application: error: invalid application id 'app_42' (expected application_<clusterTimestamp>_<number>)".to_string(),
        ),
        (
            vec!["node", "-list", "-states", "ASLEEP"],
            "sparkyard node: error: The node state ASLEEP is invalid. The valid node state can be one of the following: NEW,RUNNING,UNHEALTHY,DECOMMISSIONED,LOST,REBOOTED,DECOMMISSIONING,SHUTDOWN.".to_string(),
        ),
    ] {
        let o = yarn(&node, &args);
        assert_eq!(o.code, 1, "{args:?}: {}", o.stderr);
        assert_eq!(o.stderr.trim_end(), line, "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?}: {}", o.stdout);
    }

    // The NodeManagers, as `yarn node -list` prints them.
    let o = yarn(&node, &["node", "-list"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let lines: Vec<&str> = o.stdout.lines().collect();
    let total: usize = lines[0]
        .strip_prefix("Total Nodes:")
        .expect(&o.stdout)
        .parse()
        .unwrap();
    assert!(total >= 1, "{}", o.stdout);
    assert_eq!(
        lines[1].split('\t').map(str::trim).collect::<Vec<_>>(),
        [
            "Node-Id",
            "Node-State",
            "Node-Http-Address",
            "Number-of-Running-Containers"
        ]
    );
    assert_eq!(lines.len(), 2 + total);
    assert!(lines[2..]
        .iter()
        .all(|l| l.split('\t').nth(1).unwrap().trim() == "RUNNING"));
    let o = yarn(&node, &["node", "-list", "-all"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.starts_with("Total Nodes:"), "{}", o.stdout);
    let o = yarn(&node, &["node", "-list", "-states", "DECOMMISSIONED"]);
    assert_eq!(o.stdout.lines().next(), Some("Total Nodes:0"), "{}", o.stdout);
}
