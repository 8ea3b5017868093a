//! Death watch reasons, partitions (drop and delay), seeded fault plans that replay, and the
//! quiet panic hook.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use sparkyard::rpc::AskError;
use sparkyard::runtime::fault::PlanOutcome;
use sparkyard::runtime::{
    Backoff, ChildSpec, Cluster, ExitReason, FaultPlan, KillMode, PartitionMode, PlannedFault, Restart, Span,
    Strategy, SupervisorSpec, Terminated, Trigger,
};

fn watcher_spec(seen: &Arc<Mutex<Vec<Terminated>>>) -> ChildSpec {
    let seen = seen.clone();
    ChildSpec::worker("watcher", move |_, me| Watcher {
        me,
        seen: seen.clone(),
    })
}

#[actix_rt::test]
async fn death_watch_delivers_each_reason() {
    let cluster = cluster();
    let journal = Journal::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let spec = SupervisorSpec::new(Strategy::OneForOne)
        .intensity(10, Duration::from_secs(10))
        .child(watcher_spec(&seen))
        .child(probe_spec("target", &journal));
    cluster.start_root("w", spec).unwrap();
    let target = path("/w/target");
    let watcher = cluster.endpoint::<WatcherProtocol>(&path("/w/watcher"));
    let probe = cluster.endpoint::<ProbeProtocol>(&target);
    eventually("started", || journal.lines().len() == 1).await;
    let count = || seen.lock().unwrap().len();

    // A panic.
    watcher.tell(WatchPath(target.clone())).unwrap();
    cluster.kill("/w/target", KillMode::Panic, "watch-test").unwrap();
    eventually("first Terminated", || count() == 1).await;
    // A kill as a stop (the watch was for incarnation 1 only; watch the new one).
    eventually("target back", || {
        cluster.registry().incarnation(&target) == Some(2)
    })
    .await;
    watcher.tell(WatchPath(target.clone())).unwrap();
    cluster.kill("/w/target", KillMode::Stop, "watch-test").unwrap();
    eventually("second Terminated", || count() == 2).await;
    // A normal stop.
    eventually("target back", || {
        cluster.registry().incarnation(&target) == Some(3)
    })
    .await;
    watcher.tell(WatchPath(target.clone())).unwrap();
    probe.tell(Finish).unwrap();
    eventually("third Terminated", || count() == 3).await;
    // An exit code.
    eventually("target back", || {
        cluster.registry().incarnation(&target) == Some(4)
    })
    .await;
    watcher.tell(WatchPath(target.clone())).unwrap();
    probe.tell(ExitWith(52)).unwrap();
    eventually("fourth Terminated", || count() == 4).await;
    // Nothing there.
    watcher.tell(WatchPath(path("/w/nobody"))).unwrap();
    eventually("fifth Terminated", || count() == 5).await;

    let seen = seen.lock().unwrap().clone();
    let reasons: Vec<(u64, String)> = seen
        .iter()
        .map(|t| (t.incarnation, t.reason.kind().to_string()))
        .collect();
    assert_eq!(
        reasons,
        [
            (1, "panic".into()),
            (2, "killed".into()),
            (3, "normal".into()),
            (4, "exit".into()),
            (0, "noproc".into())
        ]
    );
    assert!(
        matches!(&seen[0].reason, ExitReason::Panic { message } if message.starts_with("injected panic (fault injection by watch-test)"))
    );
    assert_eq!(
        seen[1].reason,
        ExitReason::Killed {
            by: "watch-test".into()
        }
    );
    assert_eq!(seen[3].reason.exit_code(), 52);
    assert_eq!(seen[4].path.as_str(), "/w/nobody");
}

#[actix_rt::test]
async fn a_restarted_watcher_loses_its_watches() {
    let cluster = cluster();
    let journal = Journal::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let spec = SupervisorSpec::new(Strategy::OneForOne)
        .child(watcher_spec(&seen))
        .child(probe_spec("target", &journal));
    cluster.start_root("w", spec).unwrap();
    eventually("started", || journal.lines().len() == 1).await;
    let watcher = cluster.endpoint::<WatcherProtocol>(&path("/w/watcher"));
    watcher.tell(WatchPath(path("/w/target"))).unwrap();
    cluster.clock().advance(Duration::from_millis(1)).await;
    cluster.kill("/w/watcher", KillMode::Panic, "t").unwrap();
    eventually("watcher back", || {
        cluster.registry().incarnation(&path("/w/watcher")) == Some(2)
    })
    .await;
    cluster.kill("/w/target", KillMode::Stop, "t").unwrap();
    eventually("target back", || {
        cluster.registry().incarnation(&path("/w/target")) == Some(2)
    })
    .await;
    assert!(
        seen.lock().unwrap().is_empty(),
        "the old watcher's watch must not reach the new one"
    );
}

#[actix_rt::test]
async fn a_drop_partition_loses_messages_and_asks_time_out() {
    let cluster = cluster();
    let journal = Journal::default();
    cluster
        .start_root(
            "p",
            SupervisorSpec::new(Strategy::OneForOne).child(probe_spec("executor-1", &journal)),
        )
        .unwrap();
    eventually("started", || journal.lines().len() == 1).await;
    let ep = cluster.endpoint::<ProbeProtocol>(&path("/p/executor-1"));
    ep.tell(Ping).unwrap();
    assert_eq!(ep.ask(Ping, Duration::from_secs(1)).await.unwrap(), (1, 2));

    cluster
        .partition(
            "*/executor-*",
            PartitionMode::Drop,
            Duration::from_secs(10),
            "test",
        )
        .unwrap();
    ep.tell(Ping).unwrap(); // lost
    let ask = actix_rt::spawn(ep.ask(Ping, Duration::from_secs(3)));
    cluster.clock().advance(Duration::from_secs(3)).await;
    let err = within(ask).await.unwrap().unwrap_err();
    assert!(matches!(err, AskError::Timeout { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "cannot receive any reply from /p/executor-1 to Ping in 3s"
    );

    // After the partition heals (by time), messages flow again; the dropped one never came.
    cluster.clock().advance(Duration::from_secs(7)).await;
    assert_eq!(ep.ask(Ping, Duration::from_secs(1)).await.unwrap(), (1, 3));
    assert_eq!(events(&cluster, "partition_started").len(), 1);
}

#[actix_rt::test]
async fn a_delay_partition_delivers_late() {
    let cluster = cluster();
    let journal = Journal::default();
    cluster
        .start_root(
            "p",
            SupervisorSpec::new(Strategy::OneForOne).child(probe_spec("slow", &journal)),
        )
        .unwrap();
    eventually("started", || journal.lines().len() == 1).await;
    cluster
        .partition(
            "/p/slow",
            PartitionMode::Delay(Duration::from_millis(500)),
            Duration::from_secs(60),
            "test",
        )
        .unwrap();
    let ask = actix_rt::spawn(
        cluster
            .endpoint::<ProbeProtocol>(&path("/p/slow"))
            .ask(Ping, Duration::from_secs(5)),
    );
    cluster.clock().advance(Duration::from_millis(999)).await;
    assert!(!ask.is_finished(), "request and reply are each delayed 500ms");
    cluster.clock().advance(Duration::from_millis(1)).await;
    assert_eq!(within(ask).await.unwrap().unwrap(), (1, 1));
    cluster.heal_partitions();
    assert_eq!(
        cluster
            .endpoint::<ProbeProtocol>(&path("/p/slow"))
            .ask(Ping, Duration::from_secs(1))
            .await
            .unwrap(),
        (1, 2)
    );
}

/// Runs a seeded plan against a fresh cluster of five workers and returns what it did.
async fn run_seeded(seed: u64) -> (FaultPlan, Vec<PlanOutcome>, Vec<String>) {
    let cluster: Cluster = cluster();
    let journal = Journal::default();
    let mut spec = SupervisorSpec::new(Strategy::OneForOne).intensity(100, Duration::from_secs(1));
    for id in [
        "allocator",
        "driver-endpoint",
        "revive-timer",
        "executor-1",
        "executor-2",
    ] {
        spec = spec.child(probe_spec(id, &journal));
    }
    cluster.start_root("node", spec).unwrap();
    eventually("started", || journal.lines().len() == 5).await;
    let targets = [
        "*/allocator",
        "*/executor-*",
        "/node/driver-endpoint",
        "/node/nothing-here",
        "*/revive-timer",
    ];
    let plan = FaultPlan::seeded(seed, &targets, 12, Span::Time(Duration::from_secs(10))).unwrap();
    let run = cluster.run_plan(plan.clone(), "chaos");
    // Step through the plan's moments so every kill finds its target restarted.
    for _ in 0..100 {
        cluster.clock().advance(Duration::from_millis(100)).await;
    }
    eventually("plan finished", || run.is_finished()).await;
    let kills: Vec<String> = events(&cluster, "fault_injected")
        .iter()
        .map(|r| format!("{} {} {}", r["actor"], r["mode"], r["incarnation"]))
        .collect();
    (plan, run.outcomes(), kills)
}

#[actix_rt::test]
async fn a_seeded_plan_replays_identically() {
    let (plan_a, outcomes_a, kills_a) = run_seeded(2026).await;
    let (plan_b, outcomes_b, kills_b) = run_seeded(2026).await;
    assert_eq!(plan_a, plan_b);
    assert_eq!(outcomes_a, outcomes_b);
    assert_eq!(kills_a, kills_b);
    assert_eq!(outcomes_a.len(), 12);
    // The plan names a path that does not exist; those kills are recorded as skipped.
    let skipped = outcomes_a.iter().filter(|o| o.killed.is_empty()).count();
    let aimed_at_nothing = plan_a
        .faults
        .iter()
        .filter(|f| f.target == "/node/nothing-here")
        .count();
    assert_eq!(skipped, aimed_at_nothing);
    assert!(kills_a.len() >= 12 - skipped, "{kills_a:?}");
    // A different seed gives a different plan.
    let (plan_c, _, _) = run_seeded(7).await;
    assert_ne!(plan_a.faults, plan_c.faults);
}

#[test]
fn explicit_plans_are_sorted_and_validated() {
    let plan = FaultPlan::new(vec![
        PlannedFault {
            when: Trigger::At(Duration::from_secs(2)),
            target: "/a".into(),
            mode: KillMode::Stop,
            pick: None,
        },
        PlannedFault {
            when: Trigger::AfterTasks(1),
            target: "*/b".into(),
            mode: KillMode::Panic,
            pick: None,
        },
    ])
    .unwrap();
    // Moments first, then progress.
    assert_eq!(plan.faults[0].target, "/a");
    let plan = FaultPlan::new(vec![
        PlannedFault {
            when: Trigger::AfterTasks(9),
            target: "/a".into(),
            mode: KillMode::Stop,
            pick: None,
        },
        PlannedFault {
            when: Trigger::AfterTasks(3),
            target: "*/b".into(),
            mode: KillMode::Panic,
            pick: None,
        },
    ])
    .unwrap();
    assert_eq!(plan.faults[0].target, "*/b");
    let bad = FaultPlan::new(vec![PlannedFault {
        when: Trigger::At(Duration::ZERO),
        target: "a b".into(),
        mode: KillMode::Stop,
        pick: None,
    }]);
    assert!(bad.is_err());
}

/// Runs in a child process (see the next test): a caught panic and an injected one must
/// not print `panicked at` on stderr.
#[actix_rt::test]
async fn quiet_panic_hook_child() {
    if std::env::var_os("SPARKYARD_QUIET_HOOK_CHILD").is_none() {
        return;
    }
    let cluster = cluster();
    let journal = Journal::default();
    cluster
        .start_root(
            "q",
            SupervisorSpec::new(Strategy::OneForOne).child(probe_spec("w", &journal)),
        )
        .unwrap();
    eventually("started", || journal.lines().len() == 1).await;
    cluster
        .endpoint::<ProbeProtocol>(&path("/q/w"))
        .tell(Crash("loud?"))
        .unwrap();
    eventually("restarted", || {
        cluster.registry().incarnation(&path("/q/w")) == Some(2)
    })
    .await;
    cluster.kill("/q/w", KillMode::Panic, "t").unwrap();
    eventually("restarted", || {
        cluster.registry().incarnation(&path("/q/w")) == Some(3)
    })
    .await;
    assert_eq!(events(&cluster, "actor_failed").len(), 2);
    eprintln!("child done");
}

#[test]
fn caught_panics_are_not_printed() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "quiet_panic_hook_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SPARKYARD_QUIET_HOOK_CHILD", "1")
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed: {stderr}");
    assert!(stderr.contains("child done"), "the child did not run: {stderr}");
    assert!(
        !stderr.contains("panicked at"),
        "a caught panic was printed: {stderr}"
    );
}

/// Starts a blocking sleep on a plain thread with a child of its own incarnation's token,
/// as a task runner will.
struct Sleeper {
    me: sparkyard::runtime::Me,
}

impl actix::Actor for Sleeper {
    type Context = actix::Context<Self>;
}

#[derive(actix::Message)]
#[rtype(result = "()")]
struct SleepOnThread(std::sync::mpsc::Sender<Result<(), sparkyard::runtime::Cancelled>>);

sparkyard::protocol! {
    SleeperProtocol { SleepOnThread }
}

sparkyard::speaks!(Sleeper: SleeperProtocol);

impl actix::Handler<SleepOnThread> for Sleeper {
    type Result = ();
    fn handle(&mut self, msg: SleepOnThread, _: &mut actix::Context<Self>) {
        let (clock, token) = (self.me.clock().clone(), self.me.cancel_token().child());
        std::thread::spawn(move || {
            let _ = msg
                .0
                .send(clock.blocking_sleep(Duration::from_secs(3600), Some(&token)));
        });
    }
}

#[actix_rt::test]
async fn stopping_a_container_cancels_the_blocking_work_inside_it() {
    let cluster = cluster();
    let container = ChildSpec::supervisor("container_1_0001_01_000002", || {
        SupervisorSpec::new(Strategy::OneForOne).child(ChildSpec::supervisor("executor-1", || {
            SupervisorSpec::new(Strategy::OneForOne)
                .child(ChildSpec::worker("backend", |_, me| Sleeper { me }))
        }))
    })
    .restart(sparkyard::runtime::Restart::Temporary);
    cluster
        .start_root("nm", SupervisorSpec::new(Strategy::OneForOne).child(container))
        .unwrap();
    let backend = path("/nm/container_1_0001_01_000002/executor-1/backend");
    eventually("backend up", || cluster.registry().contains(&backend)).await;
    let (tx, rx) = std::sync::mpsc::channel();
    cluster
        .endpoint::<SleeperProtocol>(&backend)
        .tell(SleepOnThread(tx))
        .unwrap();
    sparkyard::runtime::clock::settle().await;
    assert!(rx.try_recv().is_err(), "the task is still sleeping");
    cluster
        .kill("/nm/container_1_0001_01_000002", KillMode::Stop, "test")
        .unwrap();
    let mut result = None;
    eventually("the blocking call returned", || {
        result = rx.try_recv().ok();
        result.is_some()
    })
    .await;
    let reason = result.unwrap().unwrap_err().reason;
    assert!(
        reason.starts_with("/nm/container_1_0001_01_000002/executor-1/backend ended"),
        "{reason}"
    );
}

#[actix_rt::test]
async fn a_plan_by_progress_fires_after_the_kth_finished_task() {
    let cluster = cluster();
    let journal = Journal::default();
    let spec = SupervisorSpec::new(Strategy::OneForOne)
        .intensity(10, Duration::from_secs(10))
        .child(probe_spec("target", &journal));
    cluster.start_root("p", spec).unwrap();
    eventually("started", || journal.lines().len() == 1).await;
    // Tasks finished before the plan starts do not count.
    cluster.progress().task_finished();
    let plan = FaultPlan::new(vec![
        PlannedFault {
            when: Trigger::AfterTasks(2),
            target: "/p/target".into(),
            mode: KillMode::Stop,
            pick: None,
        },
        PlannedFault {
            when: Trigger::AfterTasks(3),
            target: "/p/nothing".into(),
            mode: KillMode::Stop,
            pick: None,
        },
    ])
    .unwrap();
    let run = cluster.run_plan(plan, "progress-test");
    cluster.progress().task_finished();
    tokio::task::yield_now().await;
    assert!(run.outcomes().is_empty(), "one task since the start");
    cluster.progress().task_finished();
    eventually("first kill", || run.outcomes().len() == 1).await;
    assert_eq!(run.outcomes()[0].killed.len(), 1);
    cluster.progress().task_finished();
    eventually("plan finished", || run.is_finished()).await;
    assert!(run.outcomes()[1].killed.is_empty(), "skipped");
    let injected = events(&cluster, "fault_injected");
    assert_eq!(injected.len(), 1);
    assert_eq!(
        injected[0]["by"].as_str(),
        Some("progress-test (after 2 finished tasks)")
    );
    assert_eq!(events(&cluster, "fault_skipped").len(), 1);
}

#[actix_rt::test]
async fn a_planned_kill_waits_for_its_target_to_restart() {
    let cluster = cluster();
    let journal = Journal::default();
    // A restart after a 1 s backoff on the manual clock: the target stays between two
    // incarnations until the test advances the clock.
    let spec = SupervisorSpec::new(Strategy::OneForOne)
        .intensity(10, Duration::from_secs(10))
        .backoff(Some(Backoff {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(1),
        }))
        .child(probe_spec("target", &journal));
    cluster.start_root("r", spec).unwrap();
    eventually("started", || journal.lines().len() == 1).await;
    cluster.kill("/r/target", KillMode::Panic, "test").unwrap();
    eventually("the kill ended it", || {
        !cluster.registry().contains(&path("/r/target"))
    })
    .await;
    let plan = FaultPlan::new(vec![PlannedFault {
        when: Trigger::AfterTasks(1),
        target: "/r/target".into(),
        mode: KillMode::Stop,
        pick: None,
    }])
    .unwrap();
    let run = cluster.run_plan(plan, "restart-test");
    assert!(!cluster.progress().is_held());
    cluster.progress().task_finished();
    // The count that found its target restarting holds the progress: the driver keeps
    // later finished tasks aside until the kill is carried out.
    eventually("held", || cluster.progress().is_held()).await;
    eventually("the plan waits", || {
        records_with(&cluster, "fault injection waits for /r/target")
    })
    .await;
    assert!(run.outcomes().is_empty(), "not skipped while it restarts");
    assert!(cluster.progress().is_held());
    cluster.clock().advance(Duration::from_secs(1)).await;
    eventually("plan finished", || run.is_finished()).await;
    assert!(!cluster.progress().is_held(), "let go once the kill is done");
    cluster.progress().released().await;
    let killed = &run.outcomes()[0].killed;
    assert_eq!(killed.len(), 1, "{:?}", run.outcomes());
    assert_eq!(killed[0].incarnation, 2);
    assert!(events(&cluster, "fault_skipped").is_empty());
}

#[actix_rt::test]
async fn what_an_ending_significant_child_takes_down_is_not_killed_again() {
    // A container whose AM is significant and never restarted: once the AM is killed, its
    // siblings, its supervisor and the container are ending with it, even before the
    // supervisors have heard of the kill, so a second kill finds none of them running (a
    // seeded plan then waits for the next attempt instead of killing a doomed actor).
    let cluster = cluster();
    let journal = Journal::default();
    let j = journal.clone();
    let container = ChildSpec::supervisor("container_1_0001_01_000001", move || {
        let j = j.clone();
        SupervisorSpec::new(Strategy::OneForOne)
            .auto_shutdown(true)
            .child(
                ChildSpec::supervisor("am", move || {
                    SupervisorSpec::new(Strategy::OneForOne)
                        .auto_shutdown(true)
                        .child(probe_spec("allocator", &j))
                        .child(
                            probe_spec("application-master", &j)
                                .restart(Restart::Temporary)
                                .significant(true),
                        )
                })
                .restart(Restart::Temporary)
                .significant(true),
            )
    })
    .restart(Restart::Temporary);
    let other = probe_spec("other", &journal);
    cluster
        .start_root(
            "nm",
            SupervisorSpec::new(Strategy::OneForOne)
                .child(container)
                .child(other),
        )
        .unwrap();
    eventually("started", || journal.lines().len() == 3).await;
    let killed = cluster
        .kill("*/application-master", KillMode::Panic, "doom-test")
        .unwrap();
    assert_eq!(killed.len(), 1);
    // No yield in between: no supervisor has processed the AM's end yet.
    assert!(matches!(
        cluster.kill("*/am/allocator", KillMode::Stop, "doom-test"),
        Err(sparkyard::runtime::fault::FaultError::NoMatch(_))
    ));
    assert!(cluster
        .kill("/nm/container_*", KillMode::Stop, "doom-test")
        .is_err());
    // What the AM's end does not take down is still there to kill.
    assert_eq!(
        cluster
            .kill("/nm/other", KillMode::Stop, "doom-test")
            .unwrap()
            .len(),
        1
    );
}

fn records_with(cluster: &Cluster, text: &str) -> bool {
    cluster
        .logs()
        .records()
        .iter()
        .any(|r| r["msg"].as_str().is_some_and(|m| m.contains(text)))
}
