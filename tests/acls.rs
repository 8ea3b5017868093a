//! Who may do what, against a real `sparkyard node` with `yarn.acl.enable=true`: each client
//! command runs as the user its `HADOOP_USER_NAME` names (Hadoop's simple authentication).
//! An application's owner, its admins, and the users of its `spark.ui.view.acls` /
//! `spark.modify.acls` (or their groups) may read or kill it as YARN's
//! ApplicationACLsManager decides; anyone else is refused with YARN's AccessControlException
//! line, a WARN audit record on the node and a non-zero exit. `actors`, `chaos` (and its
//! `heal`) are for the node's admins (`yarn.admin.acl`); `--proxy-user` follows
//! `hadoop.proxyuser.*`. Every wait is bounded.

mod common;

use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;

use common::process::{
    app_id_in, config_dir, lines, run_to_end as run, start_node_env, submit, wait_exit, wait_for, Node, Out,
    BIN,
};
use sparkyard::yarn::acls::Caller;
use sparkyard::yarn::protocol::{
    ClientCall, ClientConnection, ClientRequest, ClientResponse, GetContainerOutput,
};
use sparkyard::yarn::records::ApplicationId;

/// The node's admins besides the node's own user (`yarn`).
const NODE_CONF: &[&str] = &[
    "yarn.acl.enable=true",
    "yarn.admin.acl=admin",
    "spark.hadoop.hadoop.proxyuser.alice.users=bob",
    "spark.hadoop.hadoop.proxyuser.alice.hosts=127.0.0.1",
];

fn node() -> (Node, Receiver<String>) {
    let (node, err) = start_node_env(NODE_CONF, Stdio::piped(), &[("HADOOP_USER_NAME", "yarn")]);
    (node, err.expect("piped stderr"))
}

/// `sparkyard submit <args>` to `node` as `user`.
fn submit_as(node: &Node, user: &str, args: &[&str]) -> Out {
    let mut cmd = submit(node, args);
    cmd.env("HADOOP_USER_NAME", user);
    run(cmd)
}

/// `sparkyard <args>` pointed at `node`, as `user`.
fn control_as(node: &Node, user: &str, args: &[&str]) -> Out {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .args(["--config-dir", &config_dir()])
        .args(["--conf", &format!("yarn.resourcemanager.address={}", node.addr)])
        .env("HADOOP_USER_NAME", user);
    run(cmd)
}

/// A cluster-mode application of `user` that sleeps 60 s, with `conf`, followed until it
/// runs: the submit process and the application id.
fn sleeping_as(node: &Node, user: &str, conf: &[&str], extra: &[&str]) -> (Child, String) {
    let mut args: Vec<&str> = Vec::new();
    for c in conf {
        args.extend(["--conf", c]);
    }
    args.extend(extra);
    args.extend([
        "--deploy-mode",
        "cluster",
        "--class",
        "sparkyard.examples.DriverTest",
        "x.jar",
        "--sleep",
        "60s",
    ]);
    let mut running = submit(node, &args)
        .env("HADOOP_USER_NAME", user)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("submit starts");
    let err = lines(running.stderr.take().expect("piped stderr"));
    let line = wait_for(&err, "(state: RUNNING)", &mut Vec::new());
    // Keep reading, so the pipe never fills.
    std::thread::spawn(move || while err.recv().is_ok() {});
    (running, app_id_in(&line))
}

fn refused(o: &Out, line: &str) {
    assert_ne!(o.code, 0, "refused: {}", o.stderr);
    assert!(o.stderr.contains(line), "expected {line:?} in:\n{}", o.stderr);
}

fn allowed(o: &Out) {
    assert_eq!(o.code, 0, "allowed: {}\n{}", o.stdout, o.stderr);
}

/// The node's AM container output through the client port, as `user`.
fn container_output_as(node: &Node, user: &str, app: &str) -> ClientResponse {
    let app: ApplicationId = app.parse().unwrap();
    let container = format!("container_{}_{:04}_01_000001", app.cluster_timestamp, app.id);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let wait = std::time::Duration::from_secs(10);
        let mut conn = ClientConnection::connect(&node.addr, wait).await.unwrap();
        let call = ClientCall::new(
            Caller {
                user: user.into(),
                real_user: None,
            },
            ClientRequest::GetContainerOutput(GetContainerOutput {
                container_id: container.parse().unwrap(),
            }),
        );
        conn.call(call, wait).await.unwrap()
    })
}

#[test]
fn only_the_owner_its_acls_and_the_admins_may_read_or_kill_an_application() {
    let (node, node_err) = node();
    let (mut running, app) = sleeping_as(
        &node,
        "alice",
        &[
            "spark.acls.enable=true",
            "spark.ui.view.acls=carol",
            "spark.modify.acls=dave",
            "spark.ui.view.acls.groups=daemon",
        ],
        &[],
    );

    // A stranger: no report, no output, no kill; the node records each refusal.
    let view = format!("User mallory cannot perform operation VIEW_APP on {app}");
    refused(&submit_as(&node, "mallory", &["--status", &app]), &view);
    wait_for(&node_err, "USER=mallory", &mut Vec::new());
    match container_output_as(&node, "mallory", &app) {
        ClientResponse::ContainerOutput(Err(e)) => assert!(
            e.to_string()
                .starts_with("User mallory cannot perform operation VIEW_APP on container_"),
            "{e}"
        ),
        other => panic!("refused, not {other:?}"),
    }
    refused(
        &submit_as(&node, "mallory", &["--kill", &app]),
        &format!("User mallory cannot perform operation MODIFY_APP on {app}"),
    );

    // A viewer (by name or by the OS group daemon): reads, cannot kill.
    allowed(&submit_as(&node, "carol", &["--status", &app]));
    allowed(&submit_as(&node, "daemon", &["--status", &app]));
    assert!(matches!(
        container_output_as(&node, "carol", &app),
        ClientResponse::ContainerOutput(Ok(_))
    ));
    refused(
        &submit_as(&node, "carol", &["--kill", &app]),
        &format!("User carol cannot perform operation MODIFY_APP on {app}"),
    );
    // A user of another group is a stranger.
    refused(
        &submit_as(&node, "nobody", &["--status", &app]),
        "User nobody cannot perform operation VIEW_APP",
    );

    // The owner and the admins read it.
    allowed(&submit_as(&node, "alice", &["--status", &app]));
    allowed(&submit_as(&node, "admin", &["--status", &app]));
    allowed(&submit_as(&node, "yarn", &["--status", &app]));

    // A user of spark.modify.acls kills it.
    allowed(&submit_as(&node, "dave", &["--kill", &app]));
    assert_ne!(
        wait_exit(&mut running),
        0,
        "the owner's submit sees its application killed"
    );
}

#[test]
fn without_spark_acls_only_the_owner_and_the_admins_may() {
    let (node, _err) = node();
    let (mut running, app) = sleeping_as(&node, "alice", &["spark.ui.view.acls=carol"], &[]);
    // spark.acls.enable is off: the ACLs are not handed to YARN.
    refused(
        &submit_as(&node, "carol", &["--status", &app]),
        &format!("User carol cannot perform operation VIEW_APP on {app}"),
    );
    allowed(&submit_as(&node, "alice", &["--status", &app]));

    // `application -list` shows carol the application as YARN does a caller without
    // VIEW_APP: listed, with N/A for its tracking URL and diagnostics, no progress, no
    // attempts; its owner sees them. Killing it needs MODIFY_APP.
    let listed = |user: &str| {
        let o = control_as(&node, user, &["application", "-list"]);
        allowed(&o);
        let row: Vec<String> = o
            .stdout
            .lines()
            .find(|l| l.contains(app.as_str()))
            .unwrap_or_else(|| panic!("{app} listed for {user}: {}", o.stdout))
            .split('\t')
            .map(|c| c.trim().to_string())
            .collect();
        row
    };
    let limited = listed("carol");
    assert_eq!((limited[3].as_str(), limited[5].as_str()), ("alice", "RUNNING"));
    assert_eq!((limited[7].as_str(), limited[8].as_str()), ("0%", "N/A"));
    assert_eq!(listed("alice")[0], app);
    let o = control_as(&node, "carol", &["application", "-status", &app]);
    allowed(&o);
    assert!(
        o.stdout.contains("\tAM Host : N/A\n") && o.stdout.contains("\tDiagnostics : N/A\n"),
        "{}",
        o.stdout
    );
    let o = control_as(&node, "alice", &["application", "-status", &app]);
    assert!(!o.stdout.contains("\tAM Host : N/A\n"), "{}", o.stdout);
    let o = control_as(&node, "carol", &["application", "-appattempts", &app]);
    assert!(
        o.stdout.starts_with("Total number of application attempts :0\n"),
        "{}",
        o.stdout
    );
    refused(
        &control_as(&node, "carol", &["application", "-kill", &app]),
        &format!("User carol cannot perform operation MODIFY_APP on {app}"),
    );

    allowed(&submit_as(&node, "admin", &["--kill", &app]));
    assert_ne!(wait_exit(&mut running), 0);
}

#[test]
fn actors_chaos_and_heal_are_for_the_admins() {
    let (node, node_err) = node();
    for args in [
        &["actors"][..],
        &["chaos", "kill", "/node/rm/none"],
        &["chaos", "partition", "/node/rm", "--for", "10m"],
        &["chaos", "heal"],
    ] {
        let o = control_as(&node, "mallory", args);
        refused(&o, "User mallory doesn't have permission to call '");
        assert_eq!(o.stderr.trim().lines().count(), 1, "one line: {}", o.stderr);
    }
    wait_for(&node_err, "USER=mallory", &mut Vec::new());

    // An admin partitions the ResourceManager for ten minutes and heals it at once: a
    // submission goes through again.
    allowed(&control_as(&node, "admin", &["actors"]));
    let o = control_as(
        &node,
        "admin",
        &["chaos", "partition", "/node/rm", "--for", "10m"],
    );
    allowed(&o);
    let o = control_as(&node, "yarn", &["chaos", "heal", "/node/rm"]);
    allowed(&o);
    assert!(
        o.stdout
            .contains("healed: messages to and from /node/rm flow again"),
        "{}",
        o.stdout
    );
    refused(
        &control_as(&node, "admin", &["chaos", "heal"]),
        "no partition is in force",
    );
    let o = submit_as(
        &node,
        "alice",
        &[
            "--deploy-mode",
            "cluster",
            "--class",
            "sparkyard.examples.DriverTest",
            "x.jar",
        ],
    );
    allowed(&o);
    assert!(o.stderr.contains("final status: SUCCEEDED"), "{}", o.stderr);
}

#[test]
fn a_proxy_user_is_allowed_only_as_the_proxyuser_rules_say() {
    let (node, _err) = node();
    // alice may be bob: the application is bob's.
    let (mut running, app) = sleeping_as(&node, "alice", &[], &["--proxy-user", "bob"]);
    allowed(&submit_as(&node, "bob", &["--status", &app]));
    refused(
        &submit_as(&node, "alice", &["--kill", &app]),
        &format!("User alice cannot perform operation MODIFY_APP on {app}"),
    );
    allowed(&submit_as(&node, "bob", &["--kill", &app]));
    assert_ne!(wait_exit(&mut running), 0);

    // alice may not be carol; carol may be nobody.
    for (real, proxy) in [("alice", "carol"), ("carol", "bob")] {
        let o = submit_as(
            &node,
            real,
            &[
                "--proxy-user",
                proxy,
                "--deploy-mode",
                "cluster",
                "--class",
                "sparkyard.examples.DriverTest",
                "x.jar",
            ],
        );
        refused(&o, &format!("User: {real} is not allowed to impersonate {proxy}"));
    }
}
