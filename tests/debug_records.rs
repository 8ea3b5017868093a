//! Per-message records: at DEBUG level every delivery is a record about the receiving actor
//! with its `msg_type`; at INFO (the default) there are none. This binary installs a DEBUG
//! subscriber, so it is a test binary of its own.

mod common;

use std::time::Duration;

use common::*;
use sparkyard::logs::{Console, LogInit};
use sparkyard::runtime::{Clock, Cluster, PartitionMode, Strategy, SupervisorSpec};

#[actix_rt::test]
async fn deliveries_are_debug_records_with_msg_type() {
    sparkyard::logs::init(&LogInit {
        level: Some("debug".into()),
        console: Console::Off,
        console_quiet_except: None,
    })
    .unwrap();
    let cluster = Cluster::builder()
        .clock(Clock::manual())
        .capture_logs(true)
        .build()
        .unwrap();
    let journal = Journal::default();
    let probe = probe_spec("executor-1", &journal);
    cluster
        .start_root("d", SupervisorSpec::new(Strategy::OneForOne).child(probe))
        .unwrap();
    eventually("started", || journal.lines().len() == 1).await;
    let ep = cluster.endpoint::<ProbeProtocol>(&path("/d/executor-1"));
    ep.tell(Ping).unwrap();
    ep.ask(Ping, Duration::from_secs(1)).await.unwrap();
    cluster
        .partition(
            "/d/executor-1",
            PartitionMode::Drop,
            Duration::from_secs(1),
            "test",
        )
        .unwrap();
    ep.tell(Ping).unwrap();

    let deliveries: Vec<_> = cluster
        .logs()
        .records()
        .into_iter()
        .filter(|r| r.get("msg_type").is_some())
        .collect();
    assert_eq!(deliveries.len(), 3, "{deliveries:?}");
    for r in &deliveries {
        assert_eq!(r["level"], "DEBUG");
        assert_eq!(r["msg_type"], "Ping");
        assert_eq!(r["actor"], "/d/executor-1");
        assert_eq!(r["actor_type"], "Probe");
        assert_eq!(r["incarnation"], 1);
        assert_eq!(r["from"], "-");
    }
    assert_eq!(deliveries[0]["delivery"], "delivered");
    assert_eq!(deliveries[1]["delivery"], "delivered (ask)");
    assert_eq!(deliveries[2]["delivery"], "dropped by a partition");
}
