//! The ResourceManager's REST API (`/ws/v1/cluster/...`) against a real `sparkyard node`:
//! YARN's own Python client, `yarn-api-client`'s ResourceManager (installed unchanged by
//! `scripts/test-deps.sh`), reads the cluster, its metrics, its scheduler, the applications
//! with filters, one application and its attempts, the nodes and one node, and kills an
//! application; what it reads agrees with `sparkyard application -list` and `node -list`.
//! Every bad request gets YARN's status and `RemoteException`, and the node stays up. With
//! ACLs on, a kill obeys them as the client port does. Every wait is bounded.

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use common::process::{
    app_id_in, config_dir, run_to_end as run, start_node, start_node_env, submit, submit_sleeping, wait_exit,
    wait_for, Node, Out, BIN,
};

/// `sparkyard <args>` pointed at `node`.
fn yarn(node: &Node, args: &[&str]) -> Out {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .args(["--config-dir", &config_dir()])
        .args(["--conf", &format!("yarn.resourcemanager.address={}", node.addr)]);
    let o = run(cmd);
    assert_eq!(o.code, 0, "sparkyard {args:?}: {}", o.stderr);
    o
}

/// The rows of a `-list` output (after its two header lines), split on tabs and trimmed.
fn rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .skip(2)
        .map(|l| l.split('\t').map(|c| c.trim().to_string()).collect())
        .collect()
}

/// The venv's python with yarn-api-client, or one line saying how to get it.
fn venv_python() -> PathBuf {
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/test-deps.sh (it installs yarn-api-client for this test)",
        python.display()
    );
    python
}

/// A cluster-mode SparkPi that ran to its end on `node`, submitted with `env`: its id and
/// `submit`'s stderr.
fn finished_pi(node: &Node, env: &[(&str, &str)]) -> (String, String) {
    let mut cmd = submit(
        node,
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
    );
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run(cmd);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let id = app_id_in(
        out.stderr
            .lines()
            .find(|l| l.split_whitespace().any(|w| w.starts_with("application_")))
            .expect("an application id"),
    );
    (id, out.stderr)
}

fn ids(list: &Value, outer: &str, inner: &str, key: &str) -> Vec<String> {
    match &list[outer] {
        Value::Null => Vec::new(),
        v => v[inner]
            .as_array()
            .unwrap_or_else(|| panic!("{outer}.{inner} is a list: {list}"))
            .iter()
            .map(|a| a[key].as_str().unwrap().to_string())
            .collect(),
    }
}

#[test]
fn yarn_api_client_reads_and_kills_through_the_rest_api_of_a_running_node() {
    let python = venv_python();
    let node = start_node();
    let base = format!("http://{}", node.web);

    // One application that finished; its submit shows the web app's tracking URL.
    let (finished, stderr) = finished_pi(&node, &[]);
    let tracking = format!("{base}/cluster/app/{finished}");
    assert!(stderr.contains(&format!("tracking URL: {tracking}")), "{stderr}");
    // One that sleeps.
    let (mut sleeping, err, _seen, running) = submit_sleeping(&node);
    std::thread::spawn(move || while err.recv().is_ok() {});

    let listed = yarn(&node, &["application", "-list", "-appStates", "ALL"]);
    let apps = rows(&listed.stdout);
    assert_eq!(apps.len(), 2, "{}", listed.stdout);
    let row = apps
        .iter()
        .find(|r| r[0] == finished)
        .expect("the finished one listed");
    let (user, queue) = (row[3].clone(), row[4].clone());
    assert_eq!(row[8], tracking, "application -list shows the tracking URL");
    let status = yarn(&node, &["application", "-status", &finished]);
    assert!(
        status.stdout.contains(&format!("Tracking-URL : {tracking}")),
        "{}",
        status.stdout
    );
    let node_list = yarn(&node, &["node", "-list"]);
    let nodes: Vec<String> = rows(&node_list.stdout)
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert!(!nodes.is_empty(), "{}", node_list.stdout);

    let mut cmd = Command::new(&python);
    cmd.arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/yarn_api_client_check.py"))
        .args([&base, &finished, &running, &nodes[0], &user]);
    let out = run(cmd);
    assert_eq!(out.code, 0, "the Python client failed:\n{}", out.stderr);
    let got: Value =
        serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));

    assert_eq!(got["endpoint"].as_str().unwrap().trim_end_matches('/'), base);
    assert_eq!(got["info"]["clusterInfo"]["state"], "STARTED");
    assert_eq!(got["info"]["clusterInfo"]["haState"], "ACTIVE");

    // The applications, as application -list says, with every filter.
    let mut all = ids(&got["apps"], "apps", "app", "id");
    all.sort();
    let mut expected = vec![finished.clone(), running.clone()];
    expected.sort();
    assert_eq!(all, expected);
    assert_eq!(
        ids(&got["apps_running"], "apps", "app", "id"),
        vec![running.clone()]
    );
    assert_eq!(
        ids(&got["apps_finished_or_killed"], "apps", "app", "id"),
        vec![finished.clone()]
    );
    assert_eq!(ids(&got["apps_user"], "apps", "app", "id").len(), 2);
    assert_eq!(got["apps_other_user"], json!({"apps": null}));
    assert_eq!(ids(&got["apps_limit"], "apps", "app", "id").len(), 1);
    assert_eq!(ids(&got["apps_spark"], "apps", "app", "id").len(), 2);
    assert_eq!(got["apps_mapreduce"], json!({"apps": null}));

    let app = &got["app"]["app"];
    assert_eq!(app["id"], finished.as_str());
    assert_eq!(app["name"], "pi");
    assert_eq!(app["user"], user.as_str());
    assert_eq!(app["queue"], queue.as_str());
    assert_eq!(app["state"], "FINISHED");
    assert_eq!(app["finalStatus"], "SUCCEEDED");
    assert_eq!(app["applicationType"], "SPARK");
    assert_eq!(app["progress"], 100.0);
    assert_eq!(app["trackingUrl"], tracking.as_str());
    assert_eq!(app["trackingUI"], "History");
    let attempts = ids(&got["attempts"], "appAttempts", "appAttempt", "appAttemptId");
    assert_eq!(
        attempts,
        vec![format!(
            "appattempt{}_000001",
            finished.trim_start_matches("application")
        )]
    );
    assert_eq!(
        got["attempts"]["appAttempts"]["appAttempt"][0]["appAttemptState"],
        "FINISHED"
    );

    // The nodes, as node -list says.
    let mut rest_nodes = ids(&got["nodes"], "nodes", "node", "id");
    rest_nodes.sort();
    let mut cli_nodes = nodes.clone();
    cli_nodes.sort();
    assert_eq!(rest_nodes, cli_nodes);
    assert_eq!(
        ids(&got["nodes_running"], "nodes", "node", "id").len(),
        nodes.len()
    );
    assert_eq!(got["node"]["node"]["id"], nodes[0].as_str());
    assert_eq!(got["node"]["node"]["state"], "RUNNING");

    // The metrics and the scheduler agree.
    let m = &got["metrics"]["clusterMetrics"];
    assert_eq!(m["appsSubmitted"], 2);
    assert_eq!(m["appsCompleted"], 1);
    assert_eq!(m["appsRunning"], 1);
    assert_eq!(m["activeNodes"], nodes.len());
    assert!(m["allocatedMB"].as_u64().unwrap() > 0, "{m}");
    assert_eq!(
        m["availableMB"].as_u64().unwrap() + m["allocatedMB"].as_u64().unwrap(),
        m["totalMB"].as_u64().unwrap()
    );
    let info = &got["scheduler"]["scheduler"]["schedulerInfo"];
    assert_eq!(info["type"], "capacityScheduler");
    let leaf = info["queues"]["queue"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["queueName"] == queue.as_str())
        .unwrap_or_else(|| panic!("queue {queue} in {info}"))
        .clone();
    assert_eq!(leaf["numApplications"], 1);
    assert!(leaf["numContainers"].as_u64().unwrap() >= 1, "{leaf}");

    // The kill: accepted (202, the state it had), then KILLED; a second kill is complete.
    assert_eq!(got["state_before"], json!({"state": "RUNNING"}));
    assert_eq!(got["kill"], json!({"state": "RUNNING"}));
    assert_eq!(got["state_after"], json!({"state": "KILLED"}));
    assert_eq!(got["kill_again"], json!({"state": "KILLED"}));
    assert_eq!(got["metrics_after"]["clusterMetrics"]["appsKilled"], 1);
    assert_eq!(got["metrics_after"]["clusterMetrics"]["appsRunning"], 0);
    let unknown = got["unknown_app"].as_str().unwrap();
    assert!(
        unknown.contains("404") && unknown.contains("NotFoundException"),
        "{unknown}"
    );

    let killed = yarn(&node, &["application", "-list", "-appStates", "KILLED"]);
    assert!(
        rows(&killed.stdout).iter().any(|r| r[0] == running),
        "{}",
        killed.stdout
    );
    assert_ne!(
        wait_exit(&mut sleeping),
        0,
        "the killed application's submit fails"
    );
}

/// A small HTTP client that returns every status as an answer.
fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

/// Status, `Allow` header and body of `method path` with `body`.
fn call(base: &str, method: &str, path: &str, body: Option<Vec<u8>>) -> (u16, String, String) {
    let request = ureq::http::Request::builder()
        .method(method)
        .uri(format!("{base}{path}"))
        .header("Content-Type", "application/json");
    let answer = match body {
        Some(b) => agent().run(request.body(b).unwrap()),
        None => agent().run(request.body(()).unwrap()),
    };
    let mut answer = answer.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    let allow = answer
        .headers()
        .get("allow")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let text = answer.body_mut().read_to_string().unwrap();
    (answer.status().as_u16(), allow, text)
}

/// Asserts `method path` answers `status` with Hadoop's RemoteException of `exception` whose
/// message contains `message`.
fn refused(
    base: &str,
    method: &str,
    path: &str,
    body: Option<Vec<u8>>,
    status: u16,
    exception: &str,
    message: &str,
) {
    let (got, _, text) = call(base, method, path, body);
    assert_eq!(got, status, "{method} {path}: {text}");
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{method} {path}: {e}: {text}"));
    let e = &v["RemoteException"];
    assert_eq!(e["exception"], exception, "{method} {path}: {text}");
    assert!(
        e["javaClassName"].as_str().unwrap().ends_with(exception),
        "{text}"
    );
    assert!(
        e["message"].as_str().unwrap().contains(message),
        "{method} {path}: expected {message:?} in {text}"
    );
}

#[test]
fn every_bad_request_gets_yarns_status_and_remote_exception() {
    let node = start_node();
    let base = format!("http://{}", node.web);
    let ok = |path: &str| {
        let (status, _, text) = call(&base, "GET", path, None);
        assert_eq!(status, 200, "GET {path}: {text}");
        serde_json::from_str::<Value>(&text).unwrap()
    };
    assert_eq!(ok("/ws/v1/cluster/apps"), json!({"apps": null}));

    let bad = "BadRequestException";
    let unknown_app = "application_1700000000000_0042";
    refused(
        &base,
        "GET",
        "/ws/v1/cluster/apps/job_1",
        None,
        400,
        bad,
        "Invalid ApplicationId prefix: job_1",
    );
    refused(
        &base,
        "GET",
        "/ws/v1/cluster/apps/application_x_1/state",
        None,
        400,
        bad,
        "Invalid ApplicationId: application_x_1",
    );
    refused(
        &base,
        "GET",
        &format!("/ws/v1/cluster/apps/{unknown_app}"),
        None,
        404,
        "NotFoundException",
        &format!("java.lang.Exception: app with id: {unknown_app} not found"),
    );
    refused(
        &base,
        "GET",
        &format!("/ws/v1/cluster/apps/{unknown_app}/appattempts"),
        None,
        404,
        "NotFoundException",
        "not found",
    );
    refused(&base, "GET", "/ws/v1/cluster/apps?states=RUNNING,SLEEPING", None, 400, bad, "Invalid application-state SLEEPING specified. It should be one of [NEW, NEW_SAVING, SUBMITTED, ACCEPTED, RUNNING, FINISHED, FAILED, KILLED]");
    refused(
        &base,
        "GET",
        "/ws/v1/cluster/apps?limit=0",
        None,
        400,
        bad,
        "limit value must be greater then 0",
    );
    refused(
        &base,
        "GET",
        "/ws/v1/cluster/apps?limit=many",
        None,
        400,
        bad,
        "limit value must be a number!",
    );
    refused(
        &base,
        "GET",
        "/ws/v1/cluster/apps?startedTimeBegin=9&startedTimeEnd=1",
        None,
        400,
        bad,
        "startedTimeEnd must be greater than startTimeBegin",
    );
    refused(
        &base,
        "GET",
        "/ws/v1/cluster/apps?queue=nosuch",
        None,
        400,
        bad,
        "Unknown queue: nosuch",
    );
    refused(
        &base,
        "GET",
        "/ws/v1/cluster/apps?finalStatus=GOOD",
        None,
        400,
        "IllegalArgumentException",
        "FinalApplicationStatus.GOOD",
    );
    refused(
        &base,
        "GET",
        "/ws/v1/cluster/nodes?states=busy",
        None,
        400,
        "IllegalArgumentException",
        "No enum constant org.apache.hadoop.yarn.api.records.NodeState.BUSY",
    );
    refused(
        &base,
        "GET",
        "/ws/v1/cluster/nodes/nosuchhost",
        None,
        404,
        "NotFoundException",
        "nodeId, nosuchhost, is not found",
    );
    refused(
        &base,
        "GET",
        "/ws/v1/cluster/nodes/bad%20host",
        None,
        400,
        "IllegalArgumentException",
        "Invalid NodeId [bad host]. Expected host:port",
    );
    refused(
        &base,
        "GET",
        "/ws/v1/cluster/nosuch",
        None,
        404,
        "NotFoundException",
        "/ws/v1/cluster/nosuch",
    );

    // Methods a resource does not answer: 405 with the ones it does.
    refused(
        &base,
        "DELETE",
        "/ws/v1/cluster/apps",
        None,
        405,
        "WebApplicationException",
        "DELETE",
    );
    let (status, allow, _) = call(
        &base,
        "POST",
        &format!("/ws/v1/cluster/apps/{unknown_app}/state"),
        Some(b"{}".to_vec()),
    );
    assert_eq!((status, allow.as_str()), (405, "GET, PUT"));

    // Bodies: too big (413, not read), malformed (400), an unknown application (404), a
    // target other than KILLED is checked once the application is known.
    let state_path = format!("/ws/v1/cluster/apps/{unknown_app}/state");
    refused(
        &base,
        "PUT",
        &state_path,
        Some(vec![b'x'; 256 * 1024]),
        413,
        "WebApplicationException",
        "4096 bytes",
    );
    refused(
        &base,
        "PUT",
        &state_path,
        Some(b"KILLED".to_vec()),
        400,
        bad,
        "AppState",
    );
    refused(
        &base,
        "PUT",
        &state_path,
        Some(br#"{"state":"KILLED"}"#.to_vec()),
        404,
        "NotFoundException",
        "not found",
    );

    // The node is still up and answers.
    assert_eq!(ok("/ws/v1/cluster/info")["clusterInfo"]["state"], "STARTED");
    assert_eq!(ok("/ws/v1/cluster/")["clusterInfo"]["state"], "STARTED");
    assert_eq!(ok("/ws/v1/cluster"), ok("/ws/v1/cluster/info"));
    assert_eq!(ok("/ws/v1/cluster/nodes?states=NEW"), json!({"nodes": null}));
}

#[test]
fn with_acls_on_a_kill_needs_modify_app_and_a_finished_application_answers_its_state() {
    let (node, err) = start_node_env(
        &["yarn.acl.enable=true", "yarn.admin.acl=admin"],
        Stdio::piped(),
        &[("HADOOP_USER_NAME", "yarn")],
    );
    let err = err.expect("piped stderr");
    let base = format!("http://{}", node.web);
    let (app, _) = finished_pi(&node, &[("HADOOP_USER_NAME", "alice")]);
    let state = |user: &str| format!("/ws/v1/cluster/apps/{app}/state?user.name={user}");
    let kill = Some(br#"{"state":"KILLED"}"#.to_vec());

    // Someone else, and the anonymous web user: 403 in YARN's words, a WARN record.
    let (status, _, text) = call(&base, "PUT", &state("carol"), kill.clone());
    assert_eq!(
        (status, text.as_str()),
        (
            403,
            format!("Unauthorized attempt to kill appid {app} by remote user carol").as_str()
        )
    );
    let (status, _, text) = call(
        &base,
        "PUT",
        &format!("/ws/v1/cluster/apps/{app}/state"),
        kill.clone(),
    );
    assert_eq!(
        (status, text.as_str()),
        (
            403,
            format!("Unauthorized attempt to kill appid {app} by remote user dr.who").as_str()
        )
    );
    let line = wait_for(&err, "USER=carol", &mut Vec::new());
    assert!(
        line.contains("Kill Application Request") && line.contains("RESULT=FAILURE"),
        "{line}"
    );

    // carol sees the application limited, as application -list shows it to her.
    let (status, _, text) = call(
        &base,
        "GET",
        &format!("/ws/v1/cluster/apps/{app}?user.name=carol"),
        None,
    );
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["app"]["trackingUrl"], "N/A");
    assert_eq!(v["app"]["state"], "FINISHED");

    // The owner: the application has finished, so the kill is complete at once: 200 with its
    // final state.
    let (status, _, text) = call(&base, "PUT", &state("alice"), kill);
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"state": "FINISHED"})
    );
    let (_, _, text) = call(
        &base,
        "GET",
        &format!("/ws/v1/cluster/apps/{app}?user.name=alice"),
        None,
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["app"]["trackingUrl"], format!("{base}/cluster/app/{app}"));
}

#[test]
fn an_embedded_submit_serves_the_rest_api_when_the_webapp_address_is_set() {
    // Set: one line with the URL, the application listed there while it runs, and killed
    // through it.
    let mut submit = Command::new(BIN)
        .args(["submit", "--config-dir", &config_dir()])
        .args(["--conf", "yarn.resourcemanager.webapp.address=127.0.0.1:0"])
        .args([
            "--deploy-mode",
            "cluster",
            "--class",
            "sparkyard.examples.DriverTest",
            "x.jar",
        ])
        .args(["--sleep", "60s"])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = common::process::lines(submit.stderr.take().unwrap());
    let mut seen = Vec::new();
    let line = wait_for(&err, "ResourceManager web UI at http://", &mut seen);
    let base = format!("http://{}", common::process::web_address(&line));
    let running = app_id_in(&wait_for(&err, "(state: RUNNING)", &mut seen));
    std::thread::spawn(move || while err.recv().is_ok() {});
    let (status, _, text) = call(&base, "GET", "/ws/v1/cluster/apps?states=RUNNING", None);
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(ids(&v, "apps", "app", "id"), vec![running.clone()]);
    assert_eq!(
        v["apps"]["app"][0]["trackingUrl"],
        format!("{base}/cluster/app/{running}")
    );
    let (status, _, text) = call(
        &base,
        "PUT",
        &format!("/ws/v1/cluster/apps/{running}/state"),
        Some(br#"{"state":"KILLED"}"#.to_vec()),
    );
    assert_eq!((status, text.as_str()), (202, r#"{"state":"RUNNING"}"#));
    assert_ne!(wait_exit(&mut submit), 0, "the killed application's submit fails");

    // Unset: no web app, and the tracking URL stays N/A.
    let out = run({
        let mut cmd = Command::new(BIN);
        cmd.args(["submit", "--config-dir", &config_dir()]).args([
            "--class",
            "org.apache.spark.examples.SparkPi",
            "x.jar",
            "2",
        ]);
        cmd
    });
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("web UI at"), "{}", out.stderr);
    assert!(out.stderr.contains("tracking URL: N/A"), "{}", out.stderr);
}
