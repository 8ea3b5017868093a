//! `sparkyard node` as a process and `sparkyard submit --master yarn` talking to it over TCP:
//! a submission that registers three executors, `--status`, `--kill`, a malformed frame
//! that closes only its own connection, client mode refused, and Ctrl-C on `submit` (the
//! application ends KILLED) and on the node (a clean stop); a node whose supervision tree
//! gives up (four ResourceManager kills within the restart period, or `chaos kill /node`)
//! exits with status 70 and one line saying why; `--status` and `--kill` into a closed
//! stdout (`| head -1`) end quietly with status 0. Every wait is bounded.

mod common;

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::process::{
    app_id_in, config_dir, drain, interrupt, lines, run_to_end, start_node, start_node_with, submit,
    submit_sleeping, wait_exit, wait_for, Node, Out, BIN,
};

#[test]
fn submit_over_tcp_registers_three_executors_then_status_and_malformed_frames() {
    let node = start_node();
    let out = submit(
        &node,
        &[
            "--deploy-mode",
            "cluster",
            "--class",
            "sparkyard.examples.DriverTest",
            "--num-executors",
            "3",
            "x.jar",
        ],
    )
    .output()
    .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains("DriverTest: 3 executors registered (requested 3)"),
        "{stdout}"
    );
    let final_line = stderr
        .lines()
        .find(|l| l.contains("Final report for"))
        .expect("a final report");
    assert!(
        final_line.contains("state FINISHED, final status SUCCEEDED"),
        "{final_line}"
    );
    let app = app_id_in(final_line);

    // A malformed frame closes that connection only.
    let mut raw = std::net::TcpStream::connect(&node.addr).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    raw.write_all(
        &<sparkyard::yarn::protocol::ClientProtocol as sparkyard::rpc::tcp::WireProtocol>::GREETING,
    )
    .unwrap();
    raw.write_all(b"\x00\x00\x00\x05garbage").unwrap();
    let mut buf = Vec::new();
    let _ = raw.read_to_end(&mut buf);
    assert!(
        buf.len() <= 5,
        "the server closed the connection after its greeting: {buf:?}"
    );

    let out = submit(&node, &["--status", &app]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("Application report for {app} (state: FINISHED)")),
        "{stdout}"
    );
    assert!(stdout.contains("final status: SUCCEEDED"), "{stdout}");

    // Client mode: the driver runs here, its AM and executors in the node's container
    // processes, talking to it over TCP.
    let out = submit(&node, &["--class", "sparkyard.examples.DriverTest", "x.jar"])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("DriverTest: done"), "{stdout}");
    assert!(
        stderr.contains("Successfully started service 'sparkDriver' on 127.0.0.1:"),
        "{stderr}"
    );
}
