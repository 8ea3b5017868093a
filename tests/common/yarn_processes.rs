//! A YARN cluster of processes for tests: a `sparkyard resourcemanager` and `sparkyard
//! nodemanager` processes bound to 127.0.0.1, 127.0.0.2, … (hosts on one machine), whose
//! containers are OS processes, all writing records into one log directory; submissions,
//! controls (`actors`, `chaos`) and the application's records against it, and bounded waits.
#![allow(dead_code)]

use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::Value as Json;

use super::process::{app_id_in, config_dir, lines, wait_for, BIN};

/// A ResourceManager process and its NodeManager processes, killed when dropped.
pub struct Yarn {
    rm: Child,
    nms: Vec<Child>,
    /// The RM's client port.
    pub addr: String,
    /// The RM's actor endpoint, where NodeManagers join.
    pub tracker: String,
    /// The RM's web app (`host:port` of its REST API and UI).
    pub web: String,
    pub logs: tempfile::TempDir,
    /// The NodeManagers' local directory (containers' working directories). Each cluster
    /// has its own: two ResourceManagers started in the same millisecond give the same
    /// application and container ids, and containers sharing a working directory would
    /// read each other's launch files.
    local: tempfile::TempDir,
    /// Settings every NodeManager and submission also gets.
    pub conf: Vec<String>,
}

impl Drop for Yarn {
    fn drop(&mut self) {
        for nm in &mut self.nms {
            let _ = nm.kill();
            let _ = nm.wait();
        }
        let _ = self.rm.kill();
        let _ = self.rm.wait();
    }
}

/// The `--conf` arguments of `pairs`.
pub fn confs(pairs: &[String]) -> Vec<String> {
    pairs
        .iter()
        .flat_map(|p| ["--conf".to_string(), p.clone()])
        .collect()
}

impl Yarn {
    /// The RM and `hosts` NodeManagers (host1 on 127.0.0.1, host2 on 127.0.0.2, …), each
    /// with `conf` too.
    pub fn start(hosts: usize, conf: &[&str]) -> Yarn {
        let logs = tempfile::tempdir().unwrap();
        let local = tempfile::tempdir().unwrap();
        let conf: Vec<String> = conf.iter().map(|s| s.to_string()).collect();
        let mut rm = Command::new(BIN)
            .args(["resourcemanager", "--config-dir", &config_dir()])
            .args(["--conf", "yarn.resourcemanager.address=127.0.0.1:0"])
            .args(["--conf", "yarn.resourcemanager.webapp.address=127.0.0.1:0"])
            .args([
                "--conf",
                "yarn.resourcemanager.resource-tracker.address=127.0.0.1:0",
            ])
            .args(confs(&conf))
            .args(["--log-dir", logs.path().to_str().unwrap()])
            .env_remove("RUST_LOG")
            .env("RUST_BACKTRACE", "0")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = lines(rm.stdout.take().unwrap());
        let ready = wait_for(&out, "ResourceManager listening on", &mut Vec::new());
        let addrs: Vec<&str> = ready
            .split_whitespace()
            .filter(|w| w.starts_with("127.0.0.1:"))
            .map(|w| w.trim_end_matches([';', ',']))
            .collect();
        let (addr, tracker) = (addrs[0].to_string(), addrs[1].to_string());
        let web = super::process::web_address(&ready);
        let mut yarn = Yarn {
            rm,
            nms: Vec::new(),
            addr,
            tracker,
            web,
            logs,
            local,
            conf,
        };
        for i in 1..=hosts {
            yarn.start_nm(i);
        }
        yarn
    }

    /// Starts the NodeManager of host `i` and waits until it registered.
    pub fn start_nm(&mut self, i: usize) {
        let mut nm = Command::new(BIN)
            .args(["nodemanager", "--config-dir", &config_dir()])
            .args(["--rm", &self.tracker, "--hostname", &format!("host{i}")])
            .args(["--bind", &format!("127.0.0.{i}"), "--rack", "/rack1"])
            .args(["--vcores", "4", "--memory-mb", "8192"])
            .args([
                "--conf",
                &format!("yarn.nodemanager.local-dirs={}", self.local.path().display()),
            ])
            .args(confs(&self.conf))
            .args(["--log-dir", self.logs.path().to_str().unwrap()])
            .env_remove("RUST_LOG")
            .env("RUST_BACKTRACE", "0")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = lines(nm.stdout.take().unwrap());
        wait_for(&out, "registered with the ResourceManager", &mut Vec::new());
        self.nms.push(nm);
    }

    /// `sparkyard submit --master yarn` against this cluster.
    pub fn submit(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(["submit", "--config-dir", &config_dir(), "--master", "yarn"])
            .args(["--conf", &format!("yarn.resourcemanager.address={}", self.addr)])
            .args(["--conf", "spark.yarn.report.interval=100ms"])
            .args(confs(&self.conf))
            .args(["--log-dir", self.logs.path().to_str().unwrap()])
            .args(args)
            .env_remove("RUST_LOG")
            .env("RUST_BACKTRACE", "0");
        cmd
    }

    /// A control command (`actors`, `chaos`) against this cluster.
    pub fn control(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .args(args)
            .args(["--config-dir", &config_dir()])
            .args(["--conf", &format!("yarn.resourcemanager.address={}", self.addr)])
            .args(confs(&self.conf))
            .env_remove("RUST_LOG")
            .output()
            .unwrap()
    }

    /// The application's actors, in every process.
    pub fn actors(&self, app: &str) -> Vec<Json> {
        let o = self.control(&["actors", "--json", "--app", app]);
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The application's records from every process (`sparkyard logs --app --json`: merged
    /// in time order).
    pub fn records(&self, app: &str) -> Vec<Json> {
        let o = Command::new(BIN)
            .args(["logs", "--json", "--log-dir", self.logs.path().to_str().unwrap()])
            .args(["--app", app])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Every record of every process (`sparkyard logs --json`), the daemons' own included.
    pub fn all_records(&self) -> Vec<Json> {
        let o = Command::new(BIN)
            .args(["logs", "--json", "--log-dir", self.logs.path().to_str().unwrap()])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The application's records (`sparkyard logs --app`), as text.
    pub fn app_logs(&self, app: &str) -> String {
        let o = Command::new(BIN)
            .args([
                "logs",
                "--log-dir",
                self.logs.path().to_str().unwrap(),
                "--app",
                app,
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
}

/// The run's stdout, after checking it exited 0.
pub fn ok(out: Output) -> String {
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "stdout:\n{stdout}\nstderr:\n{stderr}");
    stdout.into_owned()
}

/// Polls `check` (at most 30 s) until it answers something.
pub fn eventually<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A cluster-mode SleepTasks long enough to be hit while it runs: the submit process, its
/// stderr lines and the application id.
pub fn long_app(yarn: &Yarn, extra: &[&str]) -> (Child, Receiver<String>, String) {
    let mut args = vec!["--deploy-mode", "cluster", "--conf", "spark.executor.instances=2"];
    args.extend_from_slice(extra);
    args.extend([
        "--class",
        "sparkyard.examples.SleepTasks",
        "x.jar",
        "--tasks",
        "200",
        "--ms",
        "40",
    ]);
    running(yarn, &args)
}

/// `submit` with `args`, followed until the application runs: the submit process (its
/// stdout piped: the application's output in cluster mode), its stderr lines and the
/// application id.
pub fn running(yarn: &Yarn, args: &[&str]) -> (Child, Receiver<String>, String) {
    let mut child = yarn
        .submit(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = lines(child.stderr.take().unwrap());
    let line = wait_for(&err, "(state: RUNNING)", &mut Vec::new());
    (child, err, app_id_in(&line))
}

/// Waits (at most 60 s) for a process to exit.
pub fn wait_long(child: &mut Child) -> i32 {
    super::process::wait_exit_within(child, Duration::from_secs(60))
}

/// The host of the first running actor of `app` whose path ends with `suffix`.
pub fn host_of(yarn: &Yarn, app: &str, suffix: &str) -> String {
    eventually(suffix, || {
        yarn.actors(app).into_iter().find_map(|a| {
            let path = a["path"].as_str()?.to_string();
            path.ends_with(suffix)
                .then(|| path.split('/').nth(2)?.strip_prefix("nm-").map(str::to_string))
                .flatten()
        })
    })
}
