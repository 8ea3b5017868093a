//! The client port under hostile load (`cargo bench --bench client_port`): the release
//! `sparkyard node` as a process, then, all at once, 1,000 idle greeted connections, 16
//! senders that announce a 60 MiB frame, send 4 MiB of it and stall, and one crafted frame
//! (a report wait of `u64::MAX` seconds); then a real cluster-mode SparkPi submission. It
//! prints the node's resident memory and open descriptors before, at the peak while the
//! load is held, and after the submission, whether the submission succeeded and whether the
//! node printed a panic. Run once with the default limits and once with
//! `yarn.sparkyard.client-port.max-frame-size=64m`, where the 60 MiB frames pass the frame
//! limit and meet the shared buffer budget instead. Needs `ulimit -n` above 1,100.

sparkyard::global_allocator!();

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sparkyard::rpc::tcp::{encode_frame, RequestFrame, WireProtocol};
use sparkyard::yarn::protocol::{
    ClientCall, ClientProtocol, ClientRequest, GetApplicationReport, ReportWait,
};
use sparkyard::yarn::records::{ApplicationId, FinalApplicationStatus, YarnApplicationState};

const BIN: &str = env!("CARGO_BIN_EXE_sparkyard");
const IDLE: usize = 1000;
const STALLED: usize = 16;
const STALLED_FRAME: u32 = 60 << 20;
const STALLED_SENT: usize = 4 << 20;

fn config_dir() -> String {
    format!("{}/config", env!("CARGO_MANIFEST_DIR"))
}

/// (resident MiB, open descriptors) of `pid`.
fn usage(pid: u32) -> (f64, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss_kb: f64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0);
    (rss_kb / 1024.0, fds)
}

fn greet(addr: &str) -> Option<TcpStream> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.write_all(&ClientProtocol::GREETING).ok()?;
    s.write_all(&sparkyard::rpc::auth::plain_hello()).ok()?;
    Some(s)
}

/// Whether the node still holds `s` open (its greeting may wait unread; then silence).
fn is_open(s: &mut TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut b = [0u8; 64];
    loop {
        match s.read(&mut b) {
            Ok(0) => return false,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
            Err(_) => return false,
        }
    }
}

struct Node {
    child: Child,
    addr: String,
    stderr: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

fn start_node(extra: &[&str]) -> Node {
    let dir = tempfile::tempdir().unwrap();
    let stderr = dir.path().join("node.stderr");
    let mut cmd = Command::new(BIN);
    cmd.args(["node", "--config-dir", &config_dir()])
        .args(["--conf", "yarn.resourcemanager.address=127.0.0.1:0"])
        .args(["--conf", "yarn.resourcemanager.webapp.address=127.0.0.1:0"])
        .args(["--log-dir", dir.path().join("logs").to_str().unwrap()]);
    for c in extra {
        cmd.args(["--conf", c]);
    }
    let mut child = cmd
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split_whitespace()
        .find(|w| w.starts_with("127.0.0.1:"))
        .expect("the readiness line")
        .to_string();
    Node {
        child,
        addr,
        stderr,
        _dir: dir,
    }
}

fn run(label: &str, extra: &[&str]) {
    let mut node = start_node(extra);
    let pid = node.child.id();
    std::thread::sleep(Duration::from_millis(500));
    let before = usage(pid);

    // 1,000 idle connections.
    let mut idle: Vec<TcpStream> = (0..IDLE).filter_map(|_| greet(&node.addr)).collect();
    // 16 stalled 60 MiB frames, 4 MiB of each sent (a write fails once the node closes it).
    let mut stalled = Vec::new();
    let mut refused_frames = 0;
    for _ in 0..STALLED {
        let Some(mut s) = greet(&node.addr) else { continue };
        s.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
        let sent = s
            .write_all(&STALLED_FRAME.to_be_bytes())
            .and_then(|()| s.write_all(&vec![0u8; STALLED_SENT]));
        if sent.is_err() {
            refused_frames += 1;
        }
        stalled.push(s);
    }
    // The crafted frame: a report wait of u64::MAX seconds.
    let crafted = encode_frame(&RequestFrame {
        id: 1,
        request: ClientCall::current(ClientRequest::GetApplicationReport(GetApplicationReport {
            app_id: ApplicationId {
                cluster_timestamp: 1,
                id: 1,
            },
            wait: Some(ReportWait {
                known: (YarnApplicationState::Running, FinalApplicationStatus::Undefined),
                max: Duration::from_secs(u64::MAX),
            }),
        })),
    })
    .unwrap();
    let mut c = greet(&node.addr).expect("a connection for the crafted frame");
    c.write_all(&crafted).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut answer = [0u8; 9];
    let crafted_answered = c.read_exact(&mut answer).is_ok();

    let mut peak = usage(pid);
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        let now = usage(pid);
        peak = (peak.0.max(now.0), peak.1.max(now.1));
        std::thread::sleep(Duration::from_millis(100));
    }

    let t = Instant::now();
    let submit = Command::new(BIN)
        .args(["submit", "--config-dir", &config_dir(), "--master", "yarn"])
        .args(["--conf", &format!("yarn.resourcemanager.address={}", node.addr)])
        .args([
            "--deploy-mode",
            "cluster",
            "--class",
            "org.apache.spark.examples.SparkPi",
            "x.jar",
            "10",
        ])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let submit_time = t.elapsed();
    let after = usage(pid);
    let still_open = idle.iter_mut().map(is_open).filter(|open| *open).count();

    let _ = Command::new("kill").args(["-TERM", &pid.to_string()]).status();
    let _ = node.child.wait();
    let stderr = std::fs::read_to_string(&node.stderr).unwrap_or_default();
    println!("## {label}");
    println!("| measurement | value |\n| --- | --- |");
    println!(
        "| node RSS before / peak under load / after the submission | {:.1} / {:.1} / {:.1} MiB |",
        before.0, peak.0, after.0
    );
    println!(
        "| node descriptors before / peak / after | {} / {} / {} |",
        before.1, peak.1, after.1
    );
    println!(
        "| idle connections opened / still greeted when the submission ran | {} / {} |",
        idle.len(),
        still_open
    );
    println!("| stalled 60 MiB frames refused while being sent | {refused_frames} of {STALLED} |");
    println!("| crafted frame answered | {crafted_answered} |");
    println!(
        "| SparkPi submission | exit {:?} in {:.1} s, {} |",
        submit.status.code(),
        submit_time.as_secs_f64(),
        if String::from_utf8_lossy(&submit.stdout).contains("Pi is roughly") {
            "printed Pi"
        } else {
            "no result"
        }
    );
    println!("| node printed a panic | {} |", stderr.contains("panicked"));
    println!(
        "| connection_evicted / connection_closed warnings on the node's console | {} / {} |\n",
        stderr.matches("connection_evicted").count(),
        stderr.matches("event=connection_closed").count()
    );
}

fn main() {
    run("default limits", &[]);
    run(
        "max-frame-size=64m (frames meet the 64m buffer budget)",
        &["yarn.sparkyard.client-port.max-frame-size=64m"],
    );
}
