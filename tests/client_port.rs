//! The node's client port against hostile peers, with the real binary: a crafted report
//! wait of `u64::MAX` seconds is answered (when the application ends) without a panic;
//! greeted idle connections beyond `yarn.sparkyard.client-port.max-connections` make room
//! for a real submission and the node's descriptors stay bounded; admin calls beyond their
//! limits and inconsistent port settings are one line and status 1. Every wait is bounded.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::process::{
    config_dir, drain, interrupt, run_to_end, start_node_with, submit, submit_sleeping, wait_exit, Node, Out,
    BIN,
};
use sparkyard::rpc::tcp::{encode_frame, RequestFrame, ResponseFrame, WireProtocol};
use sparkyard::yarn::protocol::{
    ClientCall, ClientProtocol, ClientRequest, ClientResponse, GetApplicationReport, ReportWait,
};
use sparkyard::yarn::records::{FinalApplicationStatus, YarnApplicationState};

/// A greeted raw connection to the node.
fn greeted(node: &Node) -> TcpStream {
    let mut s = TcpStream::connect(&node.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(&ClientProtocol::GREETING).unwrap();
    s.write_all(&sparkyard::rpc::auth::plain_hello()).unwrap();
    let mut greeting = [0u8; 5];
    s.read_exact(&mut greeting).unwrap();
    assert_eq!(greeting, ClientProtocol::GREETING);
    let mut answer = vec![0u8; sparkyard::rpc::auth::plain_answer().len()];
    s.read_exact(&mut answer).unwrap();
    assert_eq!(answer, sparkyard::rpc::auth::plain_answer());
    s
}

/// The node's open sockets (its listener and its connections; log files are not counted).
fn open_sockets(node: &Node) -> usize {
    std::fs::read_dir(format!("/proc/{}/fd", node.child.id()))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.to_string_lossy().starts_with("socket:"))
        .count()
}

/// Stops the node with Ctrl-C and answers everything it printed on stderr.
fn stop(mut node: Node, err: std::sync::mpsc::Receiver<String>) -> String {
    interrupt(&node.child);
    assert_eq!(wait_exit(&mut node.child), 0);
    drain(err)
}

#[test]
fn a_report_wait_of_u64_max_seconds_is_answered_without_a_panic() {
    let (node, err) = start_node_with(&[], Stdio::piped());
    let err = err.unwrap();
    // Its stderr stays read until the end (a closed pipe would end it).
    let (mut running, _stderr, _, app) = submit_sleeping(&node);

    // The crafted frame: wait for a change of RUNNING for u64::MAX seconds.
    let crafted = encode_frame(&RequestFrame {
        id: 1,
        request: ClientCall::current(ClientRequest::GetApplicationReport(GetApplicationReport {
            app_id: app.parse().unwrap(),
            wait: Some(ReportWait {
                known: (YarnApplicationState::Running, FinalApplicationStatus::Undefined),
                max: Duration::from_secs(u64::MAX),
            }),
        })),
    })
    .unwrap();
    assert!(crafted.len() < 80, "a small frame: {} bytes", crafted.len());
    let mut raw = greeted(&node);
    raw.write_all(&crafted).unwrap();

    // The application ends; the held report is answered with its end.
    let o = run_to_end(submit(&node, &["--kill", &app]));
    assert_eq!(o.code, 0, "{}", o.stderr);
    let answer = read_response(&mut raw);
    match answer.response {
        ClientResponse::ApplicationReport(Ok(r)) => {
            assert_eq!(r.state, YarnApplicationState::Killed, "{r:?}")
        }
        other => panic!("expected the report, got {other:?}"),
    }
    assert_eq!(wait_exit(&mut running), 1);

    let o = run_to_end(submit(&node, &["--status", &app]));
    assert_eq!(o.code, 0, "{}", o.stderr);
    let stderr = stop(node, err);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Reads one response frame from a blocking socket (with its read time-out).
fn read_response(raw: &mut TcpStream) -> ResponseFrame<ClientResponse> {
    let mut prefix = [0u8; 4];
    raw.read_exact(&mut prefix).expect("an answer");
    let mut body = vec![0u8; u32::from_be_bytes(prefix) as usize];
    raw.read_exact(&mut body).expect("the whole answer");
    rmp_serde::from_slice(&body).expect("a response frame")
}

#[test]
fn idle_connections_beyond_the_limit_make_room_for_a_submission() {
    let (node, err) = start_node_with(&["yarn.sparkyard.client-port.max-connections=20"], Stdio::piped());
    let err = err.unwrap();
    let baseline = open_sockets(&node);
    let idle: Vec<TcpStream> = (0..100).map(|_| greeted(&node)).collect();

    let out = submit(
        &node,
        &[
            "--deploy-mode",
            "cluster",
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
    assert!(String::from_utf8_lossy(&out.stdout).contains("Pi is roughly"));

    // The node holds at most 20 client connections, however many were opened.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let open = open_sockets(&node);
        if open <= baseline + 20 {
            break;
        }
        assert!(Instant::now() < deadline, "{open} sockets, {baseline} before");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(idle);
    let stderr = stop(node, err);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

fn node_with(conf: &[&str]) -> Out {
    let mut cmd = Command::new(BIN);
    cmd.args(["node", "--config-dir", &config_dir()])
        .args(["--conf", "yarn.resourcemanager.address=127.0.0.1:0"])
        .args(["--conf", "yarn.resourcemanager.webapp.address=127.0.0.1:0"]);
    for c in conf {
        cmd.args(["--conf", c]);
    }
    run_to_end(cmd)
}

#[test]
fn port_settings_and_admin_values_beyond_their_limits_are_one_line() {
    let o = node_with(&["yarn.sparkyard.client-port.max-frame-size=100m"]);
    assert_eq!(o.code, 1);
    assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
    assert!(
        o.stderr.contains("yarn.sparkyard.client-port.max-frame-size"),
        "{}",
        o.stderr
    );

    let o = node_with(&[
        "yarn.sparkyard.client-port.max-frame-size=16m",
        "yarn.sparkyard.client-port.max-buffered-bytes=1m",
    ]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr
            .trim()
            .ends_with("a frame the client port cannot buffer could never be read"),
        "{}",
        o.stderr
    );

    let (node, _) = start_node_with(&[], Stdio::null());
    let mut cmd = Command::new(BIN);
    cmd.args([
        "chaos",
        "kill",
        "/node/rm",
        "--after",
        "100000h",
        "--config-dir",
        &config_dir(),
    ])
    .args(["--conf", &format!("yarn.resourcemanager.address={}", node.addr)]);
    let o = run_to_end(cmd);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(
        o.stderr.contains("KillActors: a kill delay of 11years 4months")
            && o.stderr.contains("is over the limit of 1day"),
        "{}",
        o.stderr
    );
}
