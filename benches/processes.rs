//! Benchmarks of containers as processes (`cargo bench --bench processes`), against the
//! release binary's `sparkyard node` (its containers OS processes, every conversation between
//! driver, AM, executors and NodeManagers over TCP):
//!
//! 1. MapCount in cluster mode, `sparkyard submit` whole process (start, submission, the AM's
//!    process, two executor processes, the job, the final report, exit): median wall time.
//! 2. Tiny tasks over TCP: SleepTasks jobs of 100,000 tasks of 0 ms on 2 executor processes of
//!    4 cores; tasks per second from the job times the application prints (the median of 5
//!    jobs after a warm-up), and the CPU time (user + system) the node and its container
//!    processes spent per task. Three variants, each on a node of its own: in the clear, with
//!    `spark.authenticate`, and with `spark.network.crypto.enabled` too.
//! 3. An executor process killed with SIGKILL mid-job (`sparkyard chaos signal KILL`): the
//!    time from the kill to the replacement executor's registration, and to the end of the
//!    last of the lost tasks' new attempts (from the records' timestamps).
//! 4. An idle executor process's memory (VmRSS), while its application sleeps.
//!
//! `cargo bench --bench processes -- <part>` runs one part: `mapcount`, `throughput` (its three
//! variants), `throughput-plain`, `throughput-auth`, `throughput-crypto`, `kill` or `memory`.
//! `SPARKYARD_BENCH_CONF="key=value ..."` adds settings to the node and every submit;
//! `SPARKYARD_BENCH_BIN=path` runs another build of the binary (to compare two builds the same
//! hour). Wall times are printed with the load average beside them: on a busy machine compare
//! the CPU time per task.

sparkyard::global_allocator!();

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 5;

/// The binary under test: this build's, or `SPARKYARD_BENCH_BIN`.
fn bin() -> String {
    std::env::var("SPARKYARD_BENCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_sparkyard").to_string())
}

fn config_dir() -> String {
    format!("{}/config", env!("CARGO_MANIFEST_DIR"))
}

/// A running `sparkyard node` (killed when dropped).
struct Node {
    child: Child,
    addr: String,
    logs: tempfile::TempDir,
    /// Settings of this node that every submit to it carries too.
    conf: Vec<String>,
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
    start_node_with(&[])
}

/// A node with `conf` added to its settings (and to every submit to it).
fn start_node_with(conf: &[String]) -> Node {
    let logs = tempfile::tempdir().unwrap();
    let mut child = Command::new(bin())
        .args(["node", "--config-dir", &config_dir()])
        .args(["--conf", "yarn.resourcemanager.address=127.0.0.1:0"])
        .args(["--conf", "yarn.resourcemanager.webapp.address=127.0.0.1:0"])
        .args([
            "--conf",
            "yarn.resourcemanager.resource-tracker.address=127.0.0.1:0",
        ])
        .args(["--log-dir", logs.path().to_str().unwrap()])
        .args(extra_conf())
        .args(conf)
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
    Node {
        child,
        addr,
        logs,
        conf: conf.to_vec(),
    }
}

fn submit(node: &Node, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(["submit", "--config-dir", &config_dir(), "--master", "yarn"])
        .args(["--conf", &format!("yarn.resourcemanager.address={}", node.addr)])
        .args(["--conf", "spark.yarn.report.interval=20ms"])
        .args(["--log-dir", node.logs.path().to_str().unwrap()])
        .args(["--deploy-mode", "cluster"])
        .args(extra_conf())
        .args(&node.conf)
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

/// A variant of the tiny-tasks run: its part name, what it prints, and whether it
/// authenticates and encrypts.
struct Variant {
    part: &'static str,
    name: &'static str,
    authenticate: bool,
    encrypt: bool,
}

const VARIANTS: [Variant; 3] = [
    Variant {
        part: "throughput-plain",
        name: "tiny tasks over TCP",
        authenticate: false,
        encrypt: false,
    },
    Variant {
        part: "throughput-auth",
        name: "the same with spark.authenticate",
        authenticate: true,
        encrypt: false,
    },
    Variant {
        part: "throughput-crypto",
        name: "the same with spark.network.crypto.enabled too",
        authenticate: true,
        encrypt: true,
    },
];

/// The settings of `variant`; the secret goes in a file in `dir`.
fn variant_conf(variant: &Variant, dir: &std::path::Path) -> Vec<String> {
    let mut conf = Vec::new();
    if variant.authenticate {
        let file = dir.join("secret");
        std::fs::write(&file, "a bench secret of the processes bench").unwrap();
        conf.push("spark.authenticate=true".to_string());
        conf.push(format!("spark.authenticate.secret.file={}", file.display()));
    }
    if variant.encrypt {
        conf.push("spark.network.crypto.enabled=true".to_string());
    }
    conf.into_iter()
        .flat_map(|pair| ["--conf".to_string(), pair])
        .collect()
}

/// CPU seconds (user + system) a process spent, with those of its children it has reaped.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // utime, stime, cutime, cstime: fields 14 to 17, counted from the state (field 3).
    let ticks: f64 = (11..15).filter_map(|i| fields.get(i)?.parse::<f64>().ok()).sum();
    ticks / clock_ticks()
}

/// The kernel's clock ticks per second (`getconf CLK_TCK`).
fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

/// The live children of `pid`.
fn children(pid: u32) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                == Some(pid)
        })
        .count()
}

/// The one-minute load average.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_default()
}

fn throughput(node: &Node, name: &str) {
    const TASKS: &str = "100000";
    let jobs = RUNS + 1;
    let cpu_before = cpu_seconds(node.child.id());
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
            &jobs.to_string(),
        ],
    )
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The containers' CPU time counts once the node has reaped them.
    let deadline = Instant::now() + Duration::from_secs(10);
    while children(node.child.id()) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let cpu = cpu_seconds(node.child.id()) - cpu_before;
    let ms: Vec<f64> = stdout
        .lines()
        .filter_map(|l| l.rsplit_once(" done in ")?.1.strip_suffix(" ms")?.parse().ok())
        .skip(1)
        .collect();
    let per_sec: Vec<f64> = ms.iter().map(|ms| 100_000.0 / (ms / 1e3)).collect();
    let (m, lo, hi) = median(per_sec);
    println!(
        "{name}, 2 executor processes × 4 cores, jobs of 100,000: median {m:.0} tasks/s ({lo:.0}–{hi:.0}; {:.1} µs per task; load average {})",
        1e6 / m,
        load()
    );
    println!(
        "  CPU (user + system) of the node and its containers: {:.1} µs per task ({cpu:.1} s for {jobs} jobs with the application's start)",
        cpu * 1e6 / (jobs as f64 * 100_000.0)
    );
}

/// The records of `app` as JSON lines.
fn records(node: &Node, app: &str) -> Vec<serde_json::Value> {
    let out = Command::new(bin())
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
    let out = Command::new(bin())
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
    let want = |p: &str| part.as_deref().is_none_or(|x| x == p);
    for variant in &VARIANTS {
        if want("throughput") || want(variant.part) {
            let dir = tempfile::tempdir().unwrap();
            let node = start_node_with(&variant_conf(variant, dir.path()));
            throughput(&node, variant.name);
        }
    }
    if !(want("mapcount") || want("kill") || want("memory")) {
        return;
    }
    let node = start_node();
    if want("mapcount") {
        mapcount(&node);
    }
    if want("kill") {
        kill(&node);
    }
    if want("memory") {
        memory(&node);
    }
}
