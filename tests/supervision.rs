//! Supervision behaviour: strategies, restart types, intensity and escalation, panics in
//! handlers, timers and hooks, restarts under traffic, dynamic children, kept state and
//! shutdown time-outs. Every test runs on a manual clock and asserts on the structured
//! records as well as on behaviour.

mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use sparkyard::runtime::supervisor::{StartChild, TerminateChild, WhichChildren};
use sparkyard::runtime::{
    Backoff, ChildSpec, ExitReason, Kept, KillMode, Restart, Shutdown, Strategy, SupervisorProtocol,
    SupervisorSpec,
};

struct ProbeHandle {
    kept: Kept<u64>,
    starts: Arc<AtomicU32>,
}

fn probe(id: &str, journal: &Journal, opts: ProbeOpts) -> (ChildSpec, ProbeHandle) {
    let kept = Kept::new(0u64);
    let starts = Arc::new(AtomicU32::new(0));
    let (k, j, s) = (kept.clone(), journal.clone(), starts.clone());
    let spec = ChildSpec::worker(id, move |_, me| {
        Probe::new(me, k.clone(), j.clone(), s.clone(), opts.clone())
    });
    (spec, ProbeHandle { kept, starts })
}

fn three(strategy: Strategy, journal: &Journal) -> SupervisorSpec {
    let mut spec = SupervisorSpec::new(strategy).intensity(10, Duration::from_secs(10));
    for id in ["a", "b", "c"] {
        spec = spec.child(probe(id, journal, ProbeOpts::default()).0);
    }
    spec
}

async fn incarnations(cluster: &sparkyard::runtime::Cluster, paths: &[&str]) -> Vec<Option<u64>> {
    paths
        .iter()
        .map(|p| cluster.registry().incarnation(&path(p)))
        .collect()
}

#[actix_rt::test]
async fn one_for_one_restarts_only_the_failed_child() {
    let cluster = cluster();
    let journal = Journal::default();
    cluster
        .start_root("r", three(Strategy::OneForOne, &journal))
        .unwrap();
    eventually("children started", || journal.lines().len() == 3).await;
    assert_eq!(
        journal.lines(),
        ["started /r/a#1", "started /r/b#1", "started /r/c#1"]
    );
    journal.clear();

    cluster
        .endpoint::<ProbeProtocol>(&path("/r/b"))
        .tell(Crash("b broke"))
        .unwrap();
    eventually("b restarted", || {
        cluster.registry().incarnation(&path("/r/b")) == Some(2)
    })
    .await;
    assert_eq!(journal.lines(), ["stopped /r/b#1", "started /r/b#2"]);
    assert_eq!(
        incarnations(&cluster, &["/r/a", "/r/b", "/r/c"]).await,
        [Some(1), Some(2), Some(1)]
    );

    let failed = events_for(&cluster, "actor_failed", "/r/b");
    assert_eq!(failed.len(), 1);
    assert!(
        failed[0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("panic: b broke (at "),
        "{}",
        failed[0]
    );
    assert_eq!(failed[0]["level"], "ERROR");
    assert_eq!(failed[0]["incarnation"], 1);
    let restarted = events_for(&cluster, "actor_restarted", "/r/b");
    assert_eq!(restarted.len(), 1);
    assert_eq!(restarted[0]["incarnation"], 2);
    assert_eq!(restarted[0]["actor_type"], "Probe");
    assert_eq!(restarted[0]["cluster"], cluster.id());
}

#[actix_rt::test]
async fn one_for_all_stops_the_others_in_reverse_and_restarts_all_in_order() {
    let cluster = cluster();
    let journal = Journal::default();
    cluster
        .start_root("r", three(Strategy::OneForAll, &journal))
        .unwrap();
    eventually("children started", || journal.lines().len() == 3).await;
    journal.clear();

    cluster
        .endpoint::<ProbeProtocol>(&path("/r/b"))
        .tell(Crash("b broke"))
        .unwrap();
    eventually("all restarted", || journal.lines().len() == 6).await;
    assert_eq!(
        journal.lines(),
        [
            "stopped /r/b#1",
            "stopped /r/c#1",
            "stopped /r/a#1",
            "started /r/a#2",
            "started /r/b#2",
            "started /r/c#2"
        ]
    );
    // The siblings ended as a shutdown, not a failure.
    assert_eq!(events_for(&cluster, "actor_failed", "/r/a").len(), 0);
    assert_eq!(
        events_for(&cluster, "actor_stopped", "/r/a")[0]["reason"],
        "shutdown"
    );
}

#[actix_rt::test]
async fn rest_for_one_restarts_the_failed_child_and_those_after_it() {
    let cluster = cluster();
    let journal = Journal::default();
    cluster
        .start_root("r", three(Strategy::RestForOne, &journal))
        .unwrap();
    eventually("children started", || journal.lines().len() == 3).await;
    journal.clear();

    cluster
        .endpoint::<ProbeProtocol>(&path("/r/b"))
        .tell(Crash("b broke"))
        .unwrap();
    eventually("b and c restarted", || journal.lines().len() == 4).await;
    assert_eq!(
        journal.lines(),
        [
            "stopped /r/b#1",
            "stopped /r/c#1",
            "started /r/b#2",
            "started /r/c#2"
        ]
    );
    assert_eq!(
        incarnations(&cluster, &["/r/a", "/r/b", "/r/c"]).await,
        [Some(1), Some(2), Some(2)]
    );
}

#[actix_rt::test]
async fn restart_types_decide_who_comes_back() {
    let cluster = cluster();
    let journal = Journal::default();
    let spec = SupervisorSpec::new(Strategy::OneForOne)
        .intensity(10, Duration::from_secs(10))
        .child(probe("perm", &journal, ProbeOpts::default()).0)
        .child(
            probe("trans-ok", &journal, ProbeOpts::default())
                .0
                .restart(Restart::Transient),
        )
        .child(
            probe("trans-bad", &journal, ProbeOpts::default())
                .0
                .restart(Restart::Transient),
        )
        .child(
            probe("trans-exit", &journal, ProbeOpts::default())
                .0
                .restart(Restart::Transient),
        )
        .child(
            probe("temp", &journal, ProbeOpts::default())
                .0
                .restart(Restart::Temporary),
        );
    let root = cluster.start_root("r", spec).unwrap();
    eventually("children started", || journal.lines().len() == 5).await;

    // A permanent child comes back even after a normal stop.
    cluster
        .endpoint::<ProbeProtocol>(&path("/r/perm"))
        .tell(Finish)
        .unwrap();
    // A transient child that ends normally stays down...
    cluster
        .endpoint::<ProbeProtocol>(&path("/r/trans-ok"))
        .tell(Finish)
        .unwrap();
    // ...but comes back after a panic or a non-zero exit.
    cluster
        .endpoint::<ProbeProtocol>(&path("/r/trans-bad"))
        .tell(Crash("transient crash"))
        .unwrap();
    cluster
        .endpoint::<ProbeProtocol>(&path("/r/trans-exit"))
        .tell(ExitWith(3))
        .unwrap();
    // A temporary child never comes back.
    cluster
        .endpoint::<ProbeProtocol>(&path("/r/temp"))
        .tell(Crash("temporary crash"))
        .unwrap();

    eventually("restarts done", || {
        cluster.registry().incarnation(&path("/r/perm")) == Some(2)
            && cluster.registry().incarnation(&path("/r/trans-bad")) == Some(2)
            && cluster.registry().incarnation(&path("/r/trans-exit")) == Some(2)
            && !cluster.registry().contains(&path("/r/trans-ok"))
            && !cluster.registry().contains(&path("/r/temp"))
    })
    .await;
    let children = cluster
        .endpoint::<SupervisorProtocol>(&root)
        .ask(WhichChildren, Duration::from_secs(1))
        .await
        .unwrap();
    let ids: Vec<&str> = children.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["perm", "trans-bad", "trans-exit"]);
    let exit = events_for(&cluster, "actor_failed", "/r/trans-exit");
    assert_eq!(exit[0]["reason"], "exit code 3: asked to exit");
    assert_eq!(exit[0]["exit_code"], 3);
}

#[actix_rt::test]
async fn intensity_escalates_through_two_levels() {
    let cluster = cluster();
    let journal = Journal::default();
    let j = journal.clone();
    let mid = ChildSpec::supervisor("mid", move || {
        SupervisorSpec::new(Strategy::OneForOne)
            .intensity(2, Duration::from_secs(10))
            .child(probe("w", &j, ProbeOpts::default()).0)
    });
    let root = cluster
        .start_root(
            "root",
            SupervisorSpec::new(Strategy::OneForOne)
                .intensity(1, Duration::from_secs(10))
                .child(mid),
        )
        .unwrap();
    let w = path("/root/mid/w");
    eventually("w started", || cluster.registry().incarnation(&w) == Some(1)).await;

    // Three crashes of w: mid restarts it twice, then gives up; root restarts mid.
    for n in 1..=3u64 {
        eventually("w running", || cluster.registry().incarnation(&w) == Some(n)).await;
        cluster
            .endpoint::<ProbeProtocol>(&w)
            .tell(Crash("w crash"))
            .unwrap();
    }
    eventually("mid restarted by root", || {
        cluster.registry().incarnation(&path("/root/mid")) == Some(2)
    })
    .await;
    eventually("fresh w under new mid", || {
        cluster.registry().incarnation(&w) == Some(4)
    })
    .await;
    let esc = events_for(&cluster, "supervisor_escalated", "/root/mid");
    assert_eq!(esc.len(), 1);
    assert!(
        esc[0]["reason"]
            .as_str()
            .unwrap()
            .contains("more than 2 restarts within 10s"),
        "{}",
        esc[0]
    );
    assert_eq!(
        events_for(&cluster, "actor_failed", "/root/mid")[0]["reason"]
            .as_str()
            .unwrap()
            .split(':')
            .next(),
        Some("escalated")
    );

    // Three more: mid gives up again, and that is root's second restart within its period.
    for n in 4..=6u64 {
        eventually("w running", || cluster.registry().incarnation(&w) == Some(n)).await;
        cluster
            .endpoint::<ProbeProtocol>(&w)
            .tell(Crash("w crash"))
            .unwrap();
    }
    let reason = cluster.wait_ended(&root, Duration::from_secs(5)).await;
    let Some(ExitReason::Escalated { message }) = reason else {
        panic!("root should have escalated, ended with {reason:?}")
    };
    assert!(message.contains("more than 1 restarts within 10s"), "{message}");
    assert_eq!(events_for(&cluster, "supervisor_escalated", "/root").len(), 1);
    assert_eq!(events_for(&cluster, "supervisor_escalated", "/root/mid").len(), 2);
    assert!(
        cluster.registry().is_empty(),
        "everything stopped: {:?}",
        cluster.actors()
    );
}

#[actix_rt::test]
async fn restarts_outside_the_period_do_not_add_up() {
    let cluster = cluster();
    let journal = Journal::default();
    let spec = SupervisorSpec::new(Strategy::OneForOne)
        .intensity(1, Duration::from_secs(5))
        .child(probe("w", &journal, ProbeOpts::default()).0);
    let root = cluster.start_root("r", spec).unwrap();
    let w = path("/r/w");
    for n in 1..=4u64 {
        eventually("w running", || cluster.registry().incarnation(&w) == Some(n)).await;
        cluster
            .endpoint::<ProbeProtocol>(&w)
            .tell(Crash("crash"))
            .unwrap();
        cluster.clock().advance(Duration::from_secs(6)).await;
    }
    eventually("w restarted a 4th time", || {
        cluster.registry().incarnation(&w) == Some(5)
    })
    .await;
    assert!(cluster.registry().contains(&root));
    assert!(events(&cluster, "supervisor_escalated").is_empty());
}

#[actix_rt::test]
async fn panics_in_started_and_in_a_timer_are_failures() {
    let cluster = cluster();
    let journal = Journal::default();
    let (starter, starter_h) = probe(
        "starter",
        &journal,
        ProbeOpts {
            panic_in_started_until: 2,
            ..ProbeOpts::default()
        },
    );
    let (ticker, _) = probe(
        "ticker",
        &journal,
        ProbeOpts {
            tick: Some((Duration::from_secs(1), 3)),
            ..ProbeOpts::default()
        },
    );
    let spec = SupervisorSpec::new(Strategy::OneForOne)
        .intensity(5, Duration::from_secs(60))
        .child(starter)
        .child(ticker);
    cluster.start_root("r", spec).unwrap();

    // started() panics twice, the third start succeeds.
    eventually("starter up", || {
        cluster.registry().incarnation(&path("/r/starter")) == Some(3)
    })
    .await;
    assert_eq!(starter_h.starts.load(Ordering::SeqCst), 3);
    let failed = events_for(&cluster, "actor_failed", "/r/starter");
    assert_eq!(failed.len(), 2);
    assert!(failed[0]["reason"]
        .as_str()
        .unwrap()
        .starts_with("panic: probe refuses to start (start 1)"));

    // The timer's third tick panics: the ticker fails and is restarted with a fresh timer.
    cluster.clock().advance(Duration::from_secs(2)).await;
    assert_eq!(cluster.registry().incarnation(&path("/r/ticker")), Some(1));
    cluster.clock().advance(Duration::from_secs(1)).await;
    eventually("ticker restarted", || {
        cluster.registry().incarnation(&path("/r/ticker")) == Some(2)
    })
    .await;
    let failed = events_for(&cluster, "actor_failed", "/r/ticker");
    assert!(
        failed[0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("panic: timer tick 3 failed"),
        "{}",
        failed[0]
    );
    // The new incarnation's timer starts counting again from its own start.
    cluster.clock().advance(Duration::from_secs(2)).await;
    assert_eq!(cluster.registry().incarnation(&path("/r/ticker")), Some(2));
}

#[actix_rt::test]
async fn a_panic_while_stopping_after_a_panic_does_not_abort() {
    let cluster = cluster();
    let journal = Journal::default();
    let (spec, _) = probe(
        "w",
        &journal,
        ProbeOpts {
            panic_in_stopped: true,
            ..ProbeOpts::default()
        },
    );
    cluster
        .start_root("r", SupervisorSpec::new(Strategy::OneForOne).child(spec))
        .unwrap();
    let w = path("/r/w");
    eventually("w running", || cluster.registry().incarnation(&w) == Some(1)).await;
    cluster
        .endpoint::<ProbeProtocol>(&w)
        .tell(Crash("first panic"))
        .unwrap();
    eventually("w restarted", || cluster.registry().incarnation(&w) == Some(2)).await;
    // The first panic is the reason; the second is logged, not fatal.
    let failed = events_for(&cluster, "actor_failed", "/r/w");
    assert!(failed[0]["reason"]
        .as_str()
        .unwrap()
        .starts_with("panic: first panic"));
    assert_eq!(events(&cluster, "cleanup_panicked").len(), 1);
    // A panic in stopped() during a normal stop makes that stop a failure.
    cluster.endpoint::<ProbeProtocol>(&w).tell(Finish).unwrap();
    eventually("w restarted again", || {
        cluster.registry().incarnation(&w) == Some(3)
    })
    .await;
    let failed = events_for(&cluster, "actor_failed", "/r/w");
    assert!(
        failed[1]["reason"]
            .as_str()
            .unwrap()
            .starts_with("panic: probe panics in stopped()"),
        "{}",
        failed[1]
    );
}

#[actix_rt::test]
async fn a_peer_addressing_by_path_reaches_the_restarted_actor() {
    let cluster = cluster();
    let journal = Journal::default();
    let (spec, handle) = probe("w", &journal, ProbeOpts::default());
    cluster
        .start_root("r", SupervisorSpec::new(Strategy::OneForOne).child(spec))
        .unwrap();
    let w = path("/r/w");
    eventually("w running", || cluster.registry().incarnation(&w) == Some(1)).await;
    let ep = cluster.endpoint::<ProbeProtocol>(&w);

    let mut answered_by = Vec::new();
    let mut errors = 0;
    for i in 0..200 {
        if i == 100 {
            cluster.kill("/r/w", KillMode::Panic, "test").unwrap();
        }
        // tells keep arriving too, through the same path
        let _ = ep.tell(Ping);
        match ep.ask(Ping, Duration::from_secs(1)).await {
            Ok((incarnation, _)) => answered_by.push(incarnation),
            Err(_) => errors += 1,
        }
    }
    assert_eq!(answered_by.first(), Some(&1));
    assert_eq!(answered_by.last(), Some(&2));
    assert!(answered_by.windows(2).all(|w| w[0] <= w[1]));
    // Only the asks caught in the restart gap fail, and they fail fast (no hang).
    assert!(errors <= 5, "{errors} asks failed");
    assert!(answered_by.len() >= 195);
    // Kept state counted every message handled by either incarnation.
    let handled = *handle.kept.lock();
    assert!(handled >= 390, "kept counter {handled}");
    // The newest incarnation's own counter started fresh.
    let (inc, own) = ep.ask(Ping, Duration::from_secs(1)).await.unwrap();
    assert_eq!(inc, 2);
    assert!(
        own < 250,
        "fresh state counts only incarnation 2's messages: {own}"
    );
    let injected = events(&cluster, "fault_injected");
    assert_eq!(injected.len(), 1);
    assert_eq!(injected[0]["actor"], "/r/w");
    assert_eq!(injected[0]["mode"], "panic");
    assert_eq!(injected[0]["by"], "test");
    assert_eq!(injected[0]["target"], "/r/w");
}

#[actix_rt::test]
async fn backoff_delays_restarts_on_the_cluster_clock() {
    let cluster = cluster();
    let journal = Journal::default();
    let spec = SupervisorSpec::new(Strategy::OneForOne)
        .intensity(10, Duration::from_secs(60))
        .backoff(Some(Backoff {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(1),
        }))
        .child(probe("w", &journal, ProbeOpts::default()).0);
    cluster.start_root("r", spec).unwrap();
    let w = path("/r/w");
    eventually("w running", || cluster.registry().incarnation(&w) == Some(1)).await;
    cluster.endpoint::<ProbeProtocol>(&w).tell(Crash("one")).unwrap();
    eventually("w down", || !cluster.registry().contains(&w)).await;
    cluster.clock().advance(Duration::from_millis(99)).await;
    assert!(!cluster.registry().contains(&w), "restarted before its backoff");
    cluster.clock().advance(Duration::from_millis(1)).await;
    eventually("w back after 100ms", || {
        cluster.registry().incarnation(&w) == Some(2)
    })
    .await;
    // The second restart in the period waits twice as long.
    cluster.endpoint::<ProbeProtocol>(&w).tell(Crash("two")).unwrap();
    eventually("w down", || !cluster.registry().contains(&w)).await;
    cluster.clock().advance(Duration::from_millis(199)).await;
    assert!(!cluster.registry().contains(&w));
    cluster.clock().advance(Duration::from_millis(1)).await;
    eventually("w back after 200ms", || {
        cluster.registry().incarnation(&w) == Some(3)
    })
    .await;
}

#[actix_rt::test]
async fn dynamic_children_are_added_and_removed() {
    let cluster = cluster();
    let journal = Journal::default();
    let root = cluster
        .start_root("r", SupervisorSpec::new(Strategy::OneForOne))
        .unwrap();
    let sup = cluster.endpoint::<SupervisorProtocol>(&root);
    let t = Duration::from_secs(1);
    let p = sup
        .ask(
            StartChild(probe("executor-1", &journal, ProbeOpts::default()).0),
            t,
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(p.as_str(), "/r/executor-1");
    sup.ask(
        StartChild(probe("executor-2", &journal, ProbeOpts::default()).0),
        t,
    )
    .await
    .unwrap()
    .unwrap();
    let dup = sup
        .ask(
            StartChild(probe("executor-2", &journal, ProbeOpts::default()).0),
            t,
        )
        .await
        .unwrap();
    assert_eq!(
        dup.unwrap_err().to_string(),
        "a child 'executor-2' already exists"
    );
    assert_eq!(sup.ask(WhichChildren, t).await.unwrap().len(), 2);

    sup.ask(TerminateChild("executor-1".into()), t)
        .await
        .unwrap()
        .unwrap();
    eventually("executor-1 gone", || {
        !cluster.registry().contains(&path("/r/executor-1"))
    })
    .await;
    // A removed child is forgotten, its incarnation count with it: a node that runs for
    // days keeps nothing for the containers it ran.
    eventually("executor-1 forgotten", || cluster.registry().known_paths() == 2).await;
    let children = sup.ask(WhichChildren, t).await.unwrap();
    assert_eq!(children.len(), 1);
    assert_eq!(children[0].id, "executor-2");
    assert_eq!(
        events_for(&cluster, "actor_stopped", "/r/executor-1")[0]["reason"],
        "shutdown"
    );
    let missing = sup.ask(TerminateChild("executor-9".into()), t).await.unwrap();
    assert_eq!(missing.unwrap_err().to_string(), "no child 'executor-9'");
    // An id that is not a path segment is refused.
    let bad = sup
        .ask(StartChild(probe("a/b", &journal, ProbeOpts::default()).0), t)
        .await
        .unwrap();
    assert!(bad.unwrap_err().to_string().starts_with("invalid child id"));
}

#[actix_rt::test]
async fn a_child_that_will_not_stop_is_aborted_after_its_shutdown_timeout() {
    let cluster = cluster();
    let journal = Journal::default();
    let drops = Arc::new(AtomicU32::new(0));
    let (spec, _) = probe(
        "stubborn",
        &journal,
        ProbeOpts {
            stubborn: true,
            drops: Some(drops.clone()),
            ..ProbeOpts::default()
        },
    );
    let root = cluster
        .start_root("r", SupervisorSpec::new(Strategy::OneForOne))
        .unwrap();
    let sup = cluster.endpoint::<SupervisorProtocol>(&root);
    let t = Duration::from_secs(1);
    sup.ask(
        StartChild(spec.shutdown(Shutdown::Timeout(Duration::from_secs(2)))),
        t,
    )
    .await
    .unwrap()
    .unwrap();
    sup.ask(TerminateChild("stubborn".into()), t)
        .await
        .unwrap()
        .unwrap();
    cluster.clock().advance(Duration::from_millis(1999)).await;
    assert!(
        cluster.registry().contains(&path("/r/stubborn")),
        "aborted too early"
    );
    let listing = cluster.actors();
    let stubborn = listing.iter().find(|a| a.path.as_str() == "/r/stubborn").unwrap();
    assert_eq!(
        (stubborn.status.as_str(), stubborn.actor_type.as_str()),
        ("stopping", "Probe")
    );
    let root = listing.iter().find(|a| a.path.as_str() == "/r").unwrap();
    assert_eq!(
        (root.status.as_str(), root.incarnation, root.restarts),
        ("running", 1, 0)
    );
    cluster.clock().advance(Duration::from_millis(1)).await;
    eventually("stubborn aborted", || {
        !cluster.registry().contains(&path("/r/stubborn"))
    })
    .await;
    let failed = events_for(&cluster, "actor_failed", "/r/stubborn");
    assert_eq!(
        failed[0]["reason"],
        "aborted: did not stop within its shutdown time-out of 2s"
    );
    // An aborted actor's hooks do not run.
    assert!(!journal
        .lines()
        .iter()
        .any(|l| l.starts_with("stopped /r/stubborn")));
    // ...but its value is dropped, so what it owns is released.
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[actix_rt::test]
async fn cluster_shutdown_stops_children_in_reverse_order() {
    let cluster = cluster();
    let journal = Journal::default();
    cluster
        .start_root("r", three(Strategy::OneForOne, &journal))
        .unwrap();
    eventually("children started", || journal.lines().len() == 3).await;
    journal.clear();
    cluster.shutdown(Duration::from_secs(5)).await;
    assert_eq!(
        journal.lines(),
        ["stopped /r/c#1", "stopped /r/b#1", "stopped /r/a#1"]
    );
    assert!(cluster.registry().is_empty());
    assert_eq!(
        events_for(&cluster, "actor_stopped", "/r")[0]["reason"],
        "shutdown"
    );
}

#[actix_rt::test]
async fn killing_a_supervisor_takes_its_subtree_down_and_its_parent_restarts_it() {
    let cluster = cluster();
    let journal = Journal::default();
    let j = journal.clone();
    let mid = ChildSpec::supervisor("mid", move || three(Strategy::OneForOne, &j));
    cluster
        .start_root("root", SupervisorSpec::new(Strategy::OneForOne).child(mid))
        .unwrap();
    eventually("children started", || journal.lines().len() == 3).await;
    journal.clear();
    let killed = cluster.kill("/root/mid", KillMode::Stop, "test").unwrap();
    assert_eq!(killed.len(), 1);
    eventually("subtree restarted", || {
        cluster.registry().incarnation(&path("/root/mid/c")) == Some(2)
    })
    .await;
    assert_eq!(
        journal.lines(),
        [
            "stopped /root/mid/c#1",
            "stopped /root/mid/b#1",
            "stopped /root/mid/a#1",
            "started /root/mid/a#2",
            "started /root/mid/b#2",
            "started /root/mid/c#2"
        ]
    );
    assert_eq!(
        events_for(&cluster, "actor_failed", "/root/mid")[0]["reason"],
        "killed by test"
    );

    // A panic in a supervisor: its children are aborted as orphans, then it restarts.
    journal.clear();
    cluster.kill("/root/mid", KillMode::Panic, "test").unwrap();
    eventually("subtree restarted", || {
        cluster.registry().incarnation(&path("/root/mid/c")) == Some(3)
    })
    .await;
    assert_eq!(cluster.registry().incarnation(&path("/root/mid")), Some(3));
}

#[actix_rt::test]
async fn kill_by_glob_reaches_every_match_and_bad_patterns_are_errors() {
    let cluster = cluster();
    let journal = Journal::default();
    let j = journal.clone();
    let spec = SupervisorSpec::new(Strategy::OneForOne)
        .intensity(10, Duration::from_secs(10))
        .child(ChildSpec::supervisor("x", move || {
            SupervisorSpec::new(Strategy::OneForOne).child(probe("allocator", &j, ProbeOpts::default()).0)
        }))
        .child(probe("allocator", &journal, ProbeOpts::default()).0);
    cluster.start_root("n", spec).unwrap();
    eventually("started", || journal.lines().len() == 2).await;
    let killed = cluster.kill("*/allocator", KillMode::Stop, "glob-test").unwrap();
    let paths: Vec<&str> = killed.iter().map(|k| k.path.as_str()).collect();
    assert_eq!(paths, ["/n/allocator", "/n/x/allocator"]);
    eventually("both restarted", || {
        cluster.registry().incarnation(&path("/n/allocator")) == Some(2)
            && cluster.registry().incarnation(&path("/n/x/allocator")) == Some(2)
    })
    .await;
    assert_eq!(
        cluster
            .kill("/n/nothing", KillMode::Stop, "t")
            .unwrap_err()
            .to_string(),
        "no running actor matches '/n/nothing'"
    );
    let bad = cluster
        .kill("n/allocator", KillMode::Stop, "t")
        .unwrap_err()
        .to_string();
    assert_eq!(
        bad,
        "malformed actor path or glob 'n/allocator': it must start with '/' or '*'"
    );
}

#[actix_rt::test]
async fn delayed_kills_fire_on_the_cluster_clock() {
    let cluster = cluster();
    let journal = Journal::default();
    cluster
        .start_root("r", three(Strategy::OneForOne, &journal))
        .unwrap();
    eventually("started", || journal.lines().len() == 3).await;
    cluster
        .kill_after("/r/a", KillMode::Panic, Duration::from_secs(3), "test")
        .unwrap();
    cluster
        .kill_after("/r/missing", KillMode::Stop, Duration::from_secs(1), "test")
        .unwrap();
    cluster.clock().advance(Duration::from_millis(2999)).await;
    assert_eq!(cluster.registry().incarnation(&path("/r/a")), Some(1));
    assert_eq!(events(&cluster, "fault_skipped").len(), 1);
    cluster.clock().advance(Duration::from_millis(1)).await;
    eventually("a restarted", || {
        cluster.registry().incarnation(&path("/r/a")) == Some(2)
    })
    .await;
}

#[actix_rt::test]
async fn a_significant_child_ending_shuts_its_supervisor_down_with_its_reason() {
    let cluster = cluster();
    let journal = Journal::default();
    let j = journal.clone();
    // A container: its main role is significant; a sidecar is not.
    let container = ChildSpec::supervisor("container_1_0001_01_000001", move || {
        SupervisorSpec::new(Strategy::OneForOne)
            .auto_shutdown(true)
            .child(probe("sidecar", &j, ProbeOpts::default()).0)
            .child(
                probe("am", &j, ProbeOpts::default())
                    .0
                    .restart(Restart::Temporary)
                    .significant(true),
            )
    })
    .restart(Restart::Temporary);
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = seen.clone();
    let spec = SupervisorSpec::new(Strategy::OneForOne)
        .child(ChildSpec::worker("watcher", move |_, me| Watcher {
            me,
            seen: s.clone(),
        }))
        .child(container);
    cluster.start_root("nm", spec).unwrap();
    let c = path("/nm/container_1_0001_01_000001");
    eventually("started", || journal.lines().len() == 2).await;
    cluster
        .endpoint::<WatcherProtocol>(&path("/nm/watcher"))
        .tell(WatchPath(c.clone()))
        .unwrap();
    cluster.clock().advance(Duration::from_millis(1)).await;
    cluster
        .endpoint::<ProbeProtocol>(&c.child("am").unwrap())
        .tell(ExitWith(15))
        .unwrap();
    eventually("container ended", || !seen.lock().unwrap().is_empty()).await;
    let t = seen.lock().unwrap()[0].clone();
    assert_eq!(t.reason.exit_code(), 15, "{:?}", t.reason);
    assert!(journal
        .lines()
        .contains(&"stopped /nm/container_1_0001_01_000001/sidecar#1".to_string()));
    // Temporary: the node supervisor does not restart it.
    cluster.clock().advance(Duration::from_millis(1)).await;
    assert!(!cluster.registry().contains(&c));
}

#[actix_rt::test]
async fn the_start_hook_sees_every_incarnation_even_one_that_ends_at_once() {
    // A NodeManager relies on it: a container that starts and ends before anyone hears of
    // its start still leaves how it ended.
    let cluster = cluster();
    let root = cluster
        .start_root("r", SupervisorSpec::new(Strategy::OneForOne))
        .unwrap();
    let sup = cluster.endpoint::<SupervisorProtocol>(&root);
    let seen: Arc<std::sync::Mutex<Vec<Arc<sparkyard::runtime::cell::CellShared>>>> = Arc::default();
    let hook_seen = seen.clone();
    let spec = ChildSpec::try_worker("short", |_, _| -> Result<Probe, String> {
        Err("no such class".into())
    })
    .restart(Restart::Temporary)
    .on_start(move |cell| hook_seen.lock().unwrap().push(cell.clone()));
    sup.ask(StartChild(spec), Duration::from_secs(1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(seen.lock().unwrap().len(), 1, "the hook ran as the child started");
    let cell = seen.lock().unwrap()[0].clone();
    eventually("the short child ended", || cell.is_done()).await;
    match cell.final_reason() {
        Some(reason) => assert_eq!(reason.exit_code(), 1, "{reason}"),
        None => panic!("an ended incarnation has its reason"),
    }
}

/// A reference is typed by the protocol its target speaks, not by the target's type: a ref
/// in a protocol the actor does not speak is refused at the message, naming both; the same
/// path addressed in a protocol it speaks is reached.
#[actix_rt::test]
async fn a_ref_in_a_protocol_the_actor_does_not_speak_is_refused_naming_both() {
    let cluster = cluster();
    let journal = Journal::default();
    cluster
        .start_root("r", three(Strategy::OneForOne, &journal))
        .unwrap();
    eventually("children started", || journal.lines().len() == 3).await;
    let wrong = cluster.endpoint::<WatcherProtocol>(&path("/r/a"));
    let err = wrong.tell(WatchPath(path("/r/b"))).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the actor at /r/a is a Probe, which does not speak WatcherProtocol"
    );
    let asked = wrong
        .speaking::<ProbeProtocol>()
        .ask(Ping, Duration::from_secs(5))
        .await;
    assert!(asked.is_ok(), "{asked:?}");
    let sup = cluster.endpoint::<ProbeProtocol>(&path("/r"));
    assert_eq!(
        sup.tell(Ping).unwrap_err().to_string(),
        "the actor at /r is a Supervisor, which does not speak ProbeProtocol"
    );
}
