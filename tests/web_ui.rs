//! The ResourceManager's web UI in a real headless Chromium, against a running `sparkyard
//! node`: the cluster page lists the nodes, the applications page the application; a
//! running application's page has one timeline lane per executor, the mark of an actor
//! killed on purpose (`sparkyard chaos kill`) and that actor's restart in the supervision
//! tree; the finished application's page the same, final. A malformed or unknown id, or an
//! unknown state, gets a page of one sentence naming it (400/404); a viewer without VIEW_APP
//! gets YARN's refusal (403). Every wait is bounded (pages are polled until what they should
//! show appears).
//!
//! Chromium must be at `/usr/bin/chromium` (`scripts/test-deps.sh` installs it). The ignored
//! test `screenshots` (run by `scripts/screenshots.sh`) takes the pictures in
//! `docs/screenshots/`.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use common::process::{
    app_id_in, config_dir, lines, run_to_end as run, start_node, start_node_env, submit, wait_exit_within,
    wait_for, Node, Out, BIN,
};

const CHROMIUM: &str = "/usr/bin/chromium";

fn chromium_present() {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: install the test dependencies with scripts/test-deps.sh"
    );
}

/// Chromium's flags for a quiet, isolated headless run with a fresh profile in `profile`.
fn chromium(profile: &Path) -> Command {
    let mut cmd = Command::new("timeout");
    cmd.args(["90", CHROMIUM])
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .stdin(Stdio::null());
    cmd
}

/// The DOM of `url` once its scripts ran (5 s of virtual time), as Chromium dumps it.
fn dom(url: &str) -> String {
    chromium_present();
    let profile = tempfile::tempdir().unwrap();
    let out = chromium(profile.path())
        .args(["--virtual-time-budget=5000", "--dump-dom", url])
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && dom.contains("</html>"),
        "chromium could not load {url} (status {:?}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    dom
}

/// A PNG of `url` at 1400×`height` in `file`.
fn screenshot(url: &str, file: &Path, height: u32) {
    chromium_present();
    let profile = tempfile::tempdir().unwrap();
    let out = chromium(profile.path())
        .args([
            "--virtual-time-budget=3000",
            &format!("--window-size=1400,{height}"),
        ])
        .arg(format!("--screenshot={}", file.display()))
        .arg(url)
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success() && file.exists(),
        "no screenshot of {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One plain HTTP/1.0 GET: the status code and the body.
fn http_get(addr: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("an HTTP status in {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// Polls `check` (at most `limit`) until it answers something; the last DOM in the failure.
fn eventually<T>(what: &str, limit: Duration, mut check: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        match check() {
            Ok(v) => return v,
            Err(last) => assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; last seen:\n{last}"
            ),
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// `sparkyard <args>` pointed at `node`.
fn control(node: &Node, args: &[&str]) -> Out {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .args(["--config-dir", &config_dir()])
        .args(["--conf", &format!("yarn.resourcemanager.address={}", node.addr)]);
    run(cmd)
}

/// A SleepTasks application with two executors that runs for about half a minute, its
/// records in the node's log directory: the running submit, its stderr and the app id.
fn long_app(node: &Node) -> (Child, Receiver<String>, String) {
    let mut child = submit(
        node,
        &[
            "--log-dir",
            node.logs.path().to_str().unwrap(),
            "--deploy-mode",
            "cluster",
            "--conf",
            "spark.executor.instances=2",
            "--class",
            "sparkyard.examples.SleepTasks",
            "x.jar",
            "--jobs",
            "6",
            "--tasks",
            "100",
            "--ms",
            "60",
        ],
    )
    .env("RUST_BACKTRACE", "0")
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let err = lines(child.stderr.take().unwrap());
    let line = wait_for(&err, "(state: RUNNING)", &mut Vec::new());
    (child, err, app_id_in(&line))
}

fn count(dom: &str, needle: &str) -> usize {
    dom.matches(needle).count()
}

/// What an application's page must show once the kill happened: a lane per executor (at
/// least two), the kill's mark, and the killed revive timer restarted in the tree.
fn app_page_shows_the_kill(dom: &str) -> Result<(), String> {
    let lanes = count(dom, "class=\"lane\"");
    let executors = count(dom, "class=\"executor\"");
    let restarted = dom.split("<tr").any(|r| {
        r.contains("class=\"actor restarted")
            && r.contains("/driver/revive-timer\"")
            && !r.contains("data-restarts=\"0\"")
    });
    let ok = lanes >= 2
        && lanes == executors
        && dom.contains("class=\"mark kill\"")
        && dom.contains("data-kind=\"kill\"")
        && restarted;
    if ok {
        Ok(())
    } else {
        Err(format!(
            "lanes {lanes}, executor rows {executors}, kill mark {}, restart {restarted}:\n{dom}",
            dom.contains("class=\"mark kill\"")
        ))
    }
}

#[test]
fn the_pages_of_a_running_and_a_finished_application_in_chromium() {
    chromium_present();
    let node = start_node();
    let base = format!("http://{}", node.web);

    // The cluster page lists the node.
    let d = dom(&format!("{base}/"));
    assert!(
        d.contains("<h1>Cluster</h1>"),
        "/ leads to the cluster page:\n{d}"
    );
    assert!(count(&d, "<tr class=\"node\"") >= 1, "{d}");
    assert!(d.contains("Active nodes"), "{d}");
    assert!(d.contains("data-queue=\"default\""), "{d}");
    let d = dom(&format!("{base}/cluster/nodes"));
    assert!(
        count(&d, "<tr class=\"node\"") >= 1 && d.contains("RUNNING"),
        "{d}"
    );
    assert!(dom(&format!("{base}/cluster/scheduler")).contains("Application Queues"));

    let (mut running, err, app) = long_app(&node);
    let d = dom(&format!("{base}/cluster/apps"));
    assert!(
        d.contains(&format!("data-app=\"{app}\"")),
        "the apps page lists {app}:\n{d}"
    );
    assert!(
        d.contains(&format!("href=\"/cluster/app/{app}\"")),
        "with a link:\n{d}"
    );
    let d = dom(&format!("{base}/cluster/apps/RUNNING"));
    assert!(d.contains(&format!("data-app=\"{app}\"")), "{d}");

    // Both executors registered (their lanes drawn), then the revive timer killed on purpose.
    let page = format!("{base}/cluster/app/{app}");
    eventually("two executor lanes", Duration::from_secs(60), || {
        let d = dom(&page);
        (count(&d, "class=\"lane\"") >= 2).then_some(()).ok_or(d)
    });
    let o = control(&node, &["chaos", "kill", "*/driver/revive-timer"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.starts_with("killed (stop) "), "{}", o.stdout);

    let d = eventually(
        "the kill and the restart on the running app's page",
        Duration::from_secs(60),
        || {
            let d = dom(&page);
            app_page_shows_the_kill(&d).map(|()| d)
        },
    );
    assert!(
        d.contains("data-final=\"false\"") || d.contains("data-state=\"FINISHED\""),
        "the sections poll while it runs:\n{d}"
    );
    assert!(
        d.contains("Application Overview") && d.contains("Supervision tree"),
        "{d}"
    );
    assert!(
        d.contains("<svg") && d.contains("class=\"timeline\""),
        "the timeline inline:\n{d}"
    );
    let containers = count(&d, "<tr class=\"container\"");
    assert!(
        containers >= 3,
        "the AM's and the executors' containers: {containers}\n{d}"
    );
    assert!(
        d.contains(&format!("data-host=\"{}\"", host_of_a_node(&base))),
        "{d}"
    );
    assert!(count(&d, "<tr class=\"attempt\"") >= 1, "{d}");
    // The live actors of the application join the tree (executors run in their containers).
    assert!(d.contains("CoarseGrainedExecutorBackend"), "{d}");

    // The fragment the page polls, and the picture alone.
    let (status, fragment) = http_get(&node.web, &format!("/cluster/app/{app}/sections"));
    assert_eq!(status, 200, "{fragment}");
    assert!(fragment.starts_with("<div id=\"app-sections\""), "{fragment}");
    let (status, svg) = http_get(&node.web, &format!("/cluster/app/{app}/timeline.svg"));
    assert_eq!(status, 200, "{svg}");
    assert!(
        svg.starts_with("<?xml") && svg.contains("class=\"lane\""),
        "{svg}"
    );

    assert_eq!(
        wait_exit_within(&mut running, Duration::from_secs(120)),
        0,
        "the application ends SUCCEEDED"
    );
    drop(err);

    // After the end: the same story, final (no more polling).
    let d = eventually("the finished app's page", Duration::from_secs(60), || {
        let d = dom(&page);
        if !d.contains("data-final=\"true\"") || !d.contains("data-state=\"FINISHED\"") {
            return Err(d);
        }
        app_page_shows_the_kill(&d).map(|()| d)
    });
    assert!(d.contains("SUCCEEDED"), "{d}");
    assert!(!d.contains("live: updates every 2 s"), "{d}");
    assert!(d.contains("class=\"executor\""), "{d}");
    assert!(
        count(&d, "data-state=\"COMPLETE\"") >= 3,
        "every container complete:\n{d}"
    );
    let d = dom(&format!("{base}/cluster/apps/FINISHED"));
    assert!(d.contains(&format!("data-app=\"{app}\"")), "{d}");
    let d = dom(&format!("{base}/cluster/apps/RUNNING"));
    assert!(!d.contains(&format!("data-app=\"{app}\"")), "{d}");
}

/// The host of the first node of the cluster page.
fn host_of_a_node(base: &str) -> String {
    let d = dom(&format!("{base}/cluster/nodes"));
    d.split("<tr class=\"node\" data-host=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or_else(|| panic!("a node row in {d}"))
        .to_string()
}

#[test]
fn unknown_and_malformed_ids_get_one_clear_sentence() {
    chromium_present();
    let node = start_node();
    let base = format!("http://{}", node.web);

    let (status, body) = http_get(&node.web, "/cluster/app/application_1_9999");
    assert_eq!(status, 404, "{body}");
    let d = dom(&format!("{base}/cluster/app/application_1_9999"));
    assert!(
        d.contains("<p class=\"problem\">Application not found: application_1_9999</p>"),
        "{d}"
    );

    for (path, sentence) in [
        ("/cluster/app/nonsense", "Invalid Application ID: nonsense"),
        (
            "/cluster/app/%3Cb%3Ex%3C%2Fb%3E",
            "Invalid Application ID: &lt;b&gt;x&lt;/b&gt;",
        ),
        ("/cluster/apps/SLEEPING", "Invalid application state: SLEEPING"),
    ] {
        let (status, body) = http_get(&node.web, path);
        assert_eq!(status, 400, "{path}: {body}");
        assert!(body.contains(sentence), "{path}: {body}");
    }
    let d = dom(&format!("{base}/cluster/app/%3Cb%3Ex%3C%2Fb%3E"));
    assert!(!d.contains("<b>x</b>"), "escaped:\n{d}");
    let (status, body) = http_get(&node.web, "/cluster/app/application_1_9999/timeline.svg");
    assert_eq!(status, 404, "{body}");
    let (status, _) = http_get(&node.web, "/static/sparkyard.css");
    assert_eq!(status, 200);
}

#[test]
fn a_viewer_without_view_app_gets_yarns_refusal() {
    let (node, _) = start_node_env(
        &["yarn.acl.enable=true", "yarn.admin.acl=admin"],
        Stdio::null(),
        &[("HADOOP_USER_NAME", "yarn")],
    );
    let mut running = submit(
        &node,
        &[
            "--deploy-mode",
            "cluster",
            "--class",
            "sparkyard.examples.DriverTest",
            "x.jar",
            "--sleep",
            "60s",
        ],
    )
    .env("HADOOP_USER_NAME", "alice")
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let err = lines(running.stderr.take().unwrap());
    let app = app_id_in(&wait_for(&err, "(state: RUNNING)", &mut Vec::new()));

    for (who, query) in [("bob", "?user.name=bob"), ("dr.who", "")] {
        for path in [
            format!("/cluster/app/{app}{query}"),
            format!("/cluster/app/{app}/sections{query}"),
            format!("/cluster/app/{app}/timeline.svg{query}"),
        ] {
            let (status, body) = http_get(&node.web, &path);
            assert_eq!(status, 403, "{path}: {body}");
            assert!(
                body.contains(&format!("User {who} cannot perform operation VIEW_APP on {app}")),
                "{path}: {body}"
            );
        }
    }
    let (status, body) = http_get(&node.web, &format!("/cluster/app/{app}?user.name=alice"));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Application Overview"), "{body}");
    // Bob still sees the application listed, without its details (YARN's limited report).
    let (status, body) = http_get(&node.web, "/cluster/apps?user.name=bob");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(&format!("data-app=\"{app}\"")), "{body}");
    let _ = running.kill();
    let _ = running.wait();
}

/// Takes the README's pictures into `docs/screenshots/` (run by `scripts/screenshots.sh`).
#[test]
#[ignore = "writes docs/screenshots/; run with scripts/screenshots.sh"]
fn screenshots() {
    chromium_present();
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/screenshots");
    std::fs::create_dir_all(&out).unwrap();
    let node = start_node();
    let base = format!("http://{}", node.web);
    let (mut running, _err, app) = long_app(&node);
    let page = format!("{base}/cluster/app/{app}");
    eventually("two executor lanes", Duration::from_secs(60), || {
        let d = dom(&page);
        (count(&d, "class=\"lane\"") >= 2).then_some(()).ok_or(d)
    });
    let o = control(&node, &["chaos", "kill", "*/driver/revive-timer"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    eventually("the kill on the page", Duration::from_secs(60), || {
        app_page_shows_the_kill(&dom(&page))
    });
    screenshot(&format!("{base}/cluster"), &out.join("cluster.png"), 1000);
    screenshot(&format!("{base}/cluster/apps"), &out.join("apps.png"), 1000);
    screenshot(&page, &out.join("running-app.png"), 2000);
    assert_eq!(wait_exit_within(&mut running, Duration::from_secs(120)), 0);
    eventually("the finished page", Duration::from_secs(60), || {
        let d = dom(&page);
        d.contains("data-final=\"true\"").then_some(()).ok_or(d)
    });
    screenshot(&page, &out.join("finished-app.png"), 2000);
}
