//! Benchmarks of containers as processes (`cargo bench --bench processes`), against the
//! release binary's `sparkyard node` (its containers OS processes, every conversation between
//! driver, AM, executors and NodeManagers over TCP):
//!
//! 1. MapCount in cluster mode, `sparkyard submit` whole process (start, submission, the AM's
//!    process, two executor processes, the job, the final report, exit): median wall time.
//! 2. Tiny tasks over TCP: SleepTasks jobs of 100,000 tasks of 0 ms on 2 executor processes of
//!    4 cores; tasks per second from the job times the application prints.
//! 3. An executor process killed with SIGKILL mid-job (`sparkyard chaos signal KILL`): the
//!    time from the kill to the replacement executor's registration, and to the end of the
//!    last of the lost tasks' new attempts (from the records' timestamps).
//! 4. An idle executor process's memory (VmRSS), while its application sleeps.
//!
//! `cargo bench --bench processes -- <part>` runs one part: `mapcount`, `throughput`, `kill`
//! or `memory`. `SPARKYARD_BENCH_CONF="key=value ..."` adds settings to the node and every
//! submit (authentication and encryption, say).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sparkyard");
const RUNS: usize = 5;

fn config_dir() -> String {
    format!("{}/config", env!("CARGO_MANIFEST_DIR"))
}

/// A running `sparkyard node` (killed when dropped).
struct Node {
    child: Child,
    addr: String,
    logs: tempfile::TempDir,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Extra settings for the node and every submit, from `SPARKYARD_BENCH_CONF` (`key=value`
/// pairs separated by spaces), e.g. to measure with `spark.authenticate` and
/// `spark.network.crypto.enabled` on.
fn extra_conf() -> Vec<String> {
    std::env::var("SPARKYARD_BENCH_CONF")
        .unwrap_or_default()
        .split_whitespace()
        .flat_map(|pair| ["--conf".to_string(), pair.to_string()])
        .collect()
}

fn start_node() -> Node {
    let logs = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(["node", "--config-dir", &config_dir()])
        .args(["--conf", "yarn.resourcemanager.address=127.0.0.1:0"])
        .args(["--conf", "yarn.resourcemanager.webapp.address=127.0.0.1:0"])
        .args([
            "--conf",
            "yarn.resourcemanager.resource-tracker.address=127.0.0.1:0",
        ])
        .args(["--log-dir", logs.path().to_str().unwrap()])
        .args(extra_conf())
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let addr = line
        .split_whitespace()
        .find(|w| w.starts_with("127.0.0.1:"))
        .expect("the readiness line")
        .to_string();
    Node { child, addr, logs }
}

fn submit(node: &Node, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(["submit", "--config-dir", &config_dir(), "--master", "yarn"])
        .args(["--conf", &format!("yarn.resourcemanager.address={}", node.addr)])
        .args(["--conf", "spark.yarn.report.interval=20ms"])
        .args(["--log-dir", node.logs.path().to_str().unwrap()])
        .args(["--deploy-mode", "cluster"])
        .args(extra_conf())
        .args(args)
        .env_remove("RUST_LOG");
    cmd
}

fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn mapcount(node: &Node) {
    let mut times = Vec::new();
    for run in 0..=RUNS {
        let t = Instant::now();
        let out = submit(node, &["--class", "sparkyard.examples.MapCount", "x.jar"])
            .output()
            .unwrap();
        let secs = t.elapsed().as_secs_f64();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        if run > 0 {
            times.push(secs * 1e3);
        }
    }
    let (m, lo, hi) = median(times);
    println!("MapCount, cluster mode, container processes, whole submit: median {m:.1} ms ({lo:.1}–{hi:.1})");
}

fn throughput(node: &Node) {
    const TASKS: &str = "100000";
    let out = submit(
        node,
        &[
            "--conf",
            "spark.executor.instances=2",
            "--conf",
            "spark.executor.cores=4",
            "--class",
            "sparkyard.examples.SleepTasks",
            "x.jar",
            "--tasks",
            TASKS,
            "--ms",
            "0",
            "--jobs",
            &(RUNS + 1).to_string(),
        ],
    )
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ms: Vec<f64> = stdout
        .lines()
        .filter_map(|l| l.rsplit_once(" done in ")?.1.strip_suffix(" ms")?.parse().ok())
        .skip(1)
        .collect();
    let per_sec: Vec<f64> = ms.iter().map(|ms| 100_000.0 / (ms / 1e3)).collect();
    let (m, lo, hi) = median(per_sec);
    println!(
        "tiny tasks over TCP, 2 executor processes × 4 cores, jobs of 100,000: median {m:.0} tasks/s ({lo:.0}–{hi:.0}; {:.1} µs per task)",
        1e6 / m
    );
}

/// The records of `app` as JSON lines.
fn records(node: &Node, app: &str) -> Vec<serde_json::Value> {
    let out = Command::new(BIN)
        .args([
            "logs",
            "--log-dir",
            node.logs.path().to_str().unwrap(),
            "--app",
            app,
            "--json",
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn ts(r: &serde_json::Value) -> f64 {
    let t = r["ts"].as_str().unwrap_or_default();
    // 2026-11-26T11:51:35.110453Z: seconds of the day are enough within one run.
    let clock = t.split('T').nth(1).unwrap_or_default().trim_end_matches('Z');
    let mut parts = clock.split(':');
    let h: f64 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0.0);
    let m: f64 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0.0);
    let s: f64 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0.0);
    h * 3600.0 + m * 60.0 + s
}

/// Seconds since midnight UTC now (as [`ts`] reads a record's time).
fn now_of_day() -> f64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    since % 86_400.0
}

/// A running SleepTasks application and its id.
fn long_app(node: &Node, tasks: &str, ms: &str) -> (Child, String) {
    let mut child = submit(
        node,
        &[
            "--conf",
            "spark.executor.instances=2",
            "--class",
            "sparkyard.examples.SleepTasks",
            "x.jar",
            "--tasks",
            tasks,
            "--ms",
            ms,
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let err = BufReader::new(child.stderr.take().unwrap());
    let mut app = String::new();
    for line in err.lines().map_while(Result::ok) {
        if line.contains("(state: RUNNING)") {
            app = line
                .split_whitespace()
                .find(|w| w.starts_with("application_"))
                .unwrap()
                .to_string();
            break;
        }
    }
    (child, app)
}

fn control(node: &Node, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .args(["--config-dir", &config_dir()])
        .args(["--conf", &format!("yarn.resourcemanager.address={}", node.addr)])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Waits until executor 1 of `app` runs a task.
fn wait_for_tasks(node: &Node, app: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !records(node, app)
        .iter()
        .any(|r| r["msg"].as_str().is_some_and(|m| m.starts_with("Running task")))
    {
        assert!(Instant::now() < deadline, "no task ran");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kill(node: &Node) {
    let mut to_replacement = Vec::new();
    let mut to_recovered = Vec::new();
    for _ in 0..RUNS {
        let (mut child, app) = long_app(node, "400", "20");
        wait_for_tasks(node, &app);
        let killed_at = now_of_day();
        let said = control(
            node,
            &["chaos", "signal", "KILL", "--executor", "1", "--app", &app],
        );
        assert!(said.starts_with("sent SIGKILL"), "{said}");
        assert!(child.wait().unwrap().success());
        let recs = records(node, &app);
        let msg = |r: &serde_json::Value| r["msg"].as_str().unwrap_or_default().to_string();
        let registered = recs
            .iter()
            .filter(|r| ts(r) >= killed_at && msg(r).starts_with("Registered executor"))
            .map(ts)
            .next();
        // The tasks lost with executor 1, and the end of their next attempts.
        let lost: Vec<String> = recs
            .iter()
            .filter_map(|r| {
                let m = msg(r);
                let rest = m.strip_prefix("Lost task ")?;
                Some(rest.split_whitespace().next()?.split('.').next()?.to_string())
            })
            .collect();
        let recovered = recs
            .iter()
            .filter(|r| {
                let m = msg(r);
                lost.iter()
                    .any(|t| m.starts_with(&format!("Finished task {t}.1 ")))
            })
            .map(ts)
            .fold(f64::NAN, f64::max);
        if let Some(reg) = registered {
            to_replacement.push((reg - killed_at) * 1e3);
        }
        if recovered.is_finite() {
            to_recovered.push((recovered - killed_at) * 1e3);
        }
    }
    if !to_replacement.is_empty() {
        let (m, lo, hi) = median(to_replacement);
        println!("executor process SIGKILLed mid-job: to its replacement's registration median {m:.0} ms ({lo:.0}–{hi:.0})");
    }
    if !to_recovered.is_empty() {
        let (m, lo, hi) = median(to_recovered);
        println!("  to the end of the lost tasks' new attempts median {m:.0} ms ({lo:.0}–{hi:.0})");
    }
}

fn memory(node: &Node) {
    let (mut child, app) = long_app(node, "4", "3000");
    wait_for_tasks(node, &app);
    std::thread::sleep(Duration::from_millis(500));
    let mut rss = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline);
        if !cmdline.contains("--driver-url") || !cmdline.contains(app.as_str()) {
            continue;
        }
        let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
        if let Some(kb) = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        {
            rss.push(kb / 1024.0);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    println!("executor process resident memory (VmRSS) while its tasks sleep: {rss:.1?} MB");
}

fn main() {
    let part = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let node = start_node();
    let want = |p: &str| part.as_deref().is_none_or(|x| x == p);
    if want("mapcount") {
        mapcount(&node);
    }
    if want("throughput") {
        throughput(&node);
    }
    if want("kill") {
        kill(&node);
    }
    if want("memory") {
        memory(&node);
    }
}
