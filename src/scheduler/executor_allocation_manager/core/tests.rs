//! The allocation rules with exact numbers, on explicit times (milliseconds).
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).

use super::*;
use crate::scheduler::events::{StageInfo, TaskInfo, TaskLocality};
use crate::scheduler::task_set::TaskLocation;

fn config(min: u32, max: u32, initial: u32, tasks_per_executor: u32, ratio: f64) -> AllocationConfig {
    AllocationConfig {
        min_executors: min,
        max_executors: max,
        initial_executors: initial,
        executor_allocation_ratio: ratio,
        tasks_per_executor,
        scheduler_backlog_timeout_ms: 1_000,
        sustained_scheduler_backlog_timeout_ms: 500,
        monitor: MonitorConfig {
            idle_timeout_ms: 60_000,
            shuffle_tracking: true,
            shuffle_timeout_ms: u64::MAX,
        },
        decommission_enabled: false,
    }
}

fn stage(stage_id: u32, attempt_id: u32, num_tasks: u32) -> StageInfo {
    StageInfo {
        stage_id,
        attempt_id,
        name: "count at Test".into(),
        num_tasks,
        rdd_infos: vec![],
        parent_ids: vec![],
        details: String::new(),
        submission_time: Some(0),
        completion_time: None,
        failure_reason: None,
        task_locality_preferences: vec![],
    }
}

/// Every executor is active in the backend.
fn all_active(_: &str) -> bool {
    true
}

fn submitted(c: &mut ExecutorAllocationManagerCore, stage_id: u32, num_tasks: u32, now: u64) {
    c.on_event(
        &SparkListenerEvent::StageSubmitted {
            stage_info: stage(stage_id, 0, num_tasks),
            properties: vec![],
        },
        now,
        &all_active,
    );
}

fn completed(c: &mut ExecutorAllocationManagerCore, stage_id: u32, now: u64) {
    c.on_event(
        &SparkListenerEvent::StageCompleted {
            stage_info: stage(stage_id, 0, 0),
        },
        now,
        &all_active,
    );
}

fn info(task_id: u64, index: u32, executor: &str, speculative: bool) -> TaskInfo {
    TaskInfo {
        task_id,
        index,
        attempt: u32::from(speculative),
        partition_id: index,
        launch_time: 0,
        executor_id: executor.into(),
        host: "host1".into(),
        locality: TaskLocality::ProcessLocal,
        speculative,
        getting_result_time: 0,
        finish_time: 0,
        failed: false,
        killed: false,
    }
}

fn start(c: &mut ExecutorAllocationManagerCore, stage_id: u32, index: u32, executor: &str, now: u64) {
    c.on_event(
        &SparkListenerEvent::TaskStart {
            stage_id,
            stage_attempt_id: 0,
            task_info: info(u64::from(index), index, executor, false),
        },
        now,
        &all_active,
    );
}

fn end(
    c: &mut ExecutorAllocationManagerCore,
    stage_id: u32,
    index: u32,
    executor: &str,
    reason: TaskEndReason,
    now: u64,
) {
    c.on_event(
        &SparkListenerEvent::TaskEnd {
            stage_id,
            stage_attempt_id: 0,
            task_type: "ResultTask".into(),
            reason,
            task_info: info(u64::from(index), index, executor, false),
            metrics: None,
        },
        now,
        &all_active,
    );
}

fn added(c: &mut ExecutorAllocationManagerCore, id: &str, now: u64) {
    c.on_event(
        &SparkListenerEvent::ExecutorAdded {
            time: now,
            executor_id: id.into(),
            host: "host1".into(),
            total_cores: 1,
            resource_profile_id: 0,
        },
        now,
        &all_active,
    );
}

/// Runs one round; answers its request with `ack`; returns the requested total.
fn round(c: &mut ExecutorAllocationManagerCore, now: u64, ack: bool) -> Option<u32> {
    let r = c.schedule(now);
    let total = r.request.as_ref().map(|q| q.total);
    if let Some(q) = &r.request {
        c.request_answered(q, ack);
    }
    c.round_done();
    total
}

#[test]
fn max_needed_is_the_ceiling_of_tasks_times_ratio_over_tasks_per_executor() {
    // (pending, running, tasks per executor, ratio) → executors needed.
    let cases = [
        (200, 0, 1, 1.0, 200),
        (7, 3, 4, 1.0, 3),   // ceil(10 / 4)
        (8, 0, 4, 1.0, 2),   // exactly 2
        (9, 0, 4, 1.0, 3),   // one more task, one more executor
        (10, 0, 4, 0.5, 2),  // ceil(10 × 0.5 / 4) = ceil(1.25)
        (10, 0, 1, 0.25, 3), // ceil(2.5)
        (0, 0, 4, 1.0, 0),
    ];
    for (pending, running, per_executor, ratio, want) in cases {
        let mut c = ExecutorAllocationManagerCore::new(config(0, 1000, 0, per_executor, ratio));
        submitted(&mut c, 0, pending + running, 0);
        for i in 0..running {
            start(&mut c, 0, i, "1", 0);
        }
        assert_eq!(c.pending_tasks(), pending);
        assert_eq!(c.running_tasks(), running);
        assert_eq!(
            c.max_needed(),
            want,
            "pending {pending} running {running} per executor {per_executor} ratio {ratio}"
        );
    }
}

#[test]
fn a_waiting_speculative_copy_asks_for_a_second_executor() {
    let mut c = ExecutorAllocationManagerCore::new(config(0, 10, 0, 4, 1.0));
    submitted(&mut c, 0, 1, 0);
    start(&mut c, 0, 0, "1", 0);
    assert_eq!(c.max_needed(), 1);
    c.on_event(
        &SparkListenerEvent::SpeculativeTaskSubmitted {
            stage_id: 0,
            stage_attempt_id: 0,
            task_index: 0,
        },
        10,
        &all_active,
    );
    assert_eq!(c.pending_speculative_tasks(), 1);
    // ceil(2 / 4) = 1, but the copy needs another executor than the original's.
    assert_eq!(c.max_needed(), 2);
    // The copy starts: nothing pending any more.
    c.on_event(
        &SparkListenerEvent::TaskStart {
            stage_id: 0,
            stage_attempt_id: 0,
            task_info: info(1, 0, "2", true),
        },
        20,
        &all_active,
    );
    assert_eq!(c.pending_speculative_tasks(), 0);
    assert_eq!(c.running_tasks(), 2);
    assert_eq!(c.add_time(), None, "queue empty again");
}

#[test]
fn the_target_ramps_up_1_2_4_per_sustained_backlog_and_caps_at_max() {
    let mut c = ExecutorAllocationManagerCore::new(config(0, 10, 0, 1, 1.0));
    // Initializing: no change before a stage is submitted.
    assert_eq!(round(&mut c, 5_000, true), None);
    submitted(&mut c, 0, 200, 10_000);
    assert_eq!(c.add_time(), Some(11_000));
    assert_eq!(round(&mut c, 10_999, true), None, "backlog timeout not reached");
    // 0 + 1 at the backlog timeout, then +2, +4 every sustained timeout (500 ms), then the
    // cap: 7 + 8 = 15 is bounded by maxExecutors 10 and the ramp-up resets.
    assert_eq!(round(&mut c, 11_000, true), Some(1));
    assert_eq!((c.to_add(), c.add_time()), (2, Some(11_500)));
    assert_eq!(round(&mut c, 11_499, true), None);
    assert_eq!(round(&mut c, 11_500, true), Some(3));
    assert_eq!(round(&mut c, 12_000, true), Some(7));
    assert_eq!(c.to_add(), 8);
    assert_eq!(round(&mut c, 12_500, true), Some(10));
    assert_eq!(c.to_add(), 1, "a partial increment resets the ramp-up");
    assert_eq!(round(&mut c, 13_000, true), None, "at maxExecutors");
    assert_eq!(c.target(), 10);
}

#[test]
fn the_ramp_up_starts_from_the_executors_already_there() {
    let mut c = ExecutorAllocationManagerCore::new(config(0, 100, 0, 1, 1.0));
    for id in ["1", "2", "3"] {
        added(&mut c, id, 0);
    }
    submitted(&mut c, 0, 50, 0);
    // max(target 0, 3 executors) + 1.
    assert_eq!(round(&mut c, 1_000, true), Some(4));
}

#[test]
fn the_target_never_exceeds_what_the_tasks_need() {
    let mut c = ExecutorAllocationManagerCore::new(config(0, 100, 0, 4, 1.0));
    submitted(&mut c, 0, 10, 0);
    assert_eq!(round(&mut c, 1_000, true), Some(1));
    assert_eq!(round(&mut c, 1_500, true), Some(3));
    // 3 + 4 = 7, but ceil(10 / 4) = 3 suffice: no change, and the ramp-up resets.
    assert_eq!(round(&mut c, 2_000, true), None);
    assert_eq!(c.to_add(), 1);
}

#[test]
fn when_fewer_are_needed_the_target_drops_to_the_need_but_not_below_min() {
    let mut c = ExecutorAllocationManagerCore::new(config(2, 10, 2, 1, 1.0));
    submitted(&mut c, 0, 8, 0);
    assert_eq!(round(&mut c, 1_000, true), Some(3));
    assert_eq!(round(&mut c, 1_500, true), Some(5));
    // Every task starts: 8 running, nothing pending; the backlog clock stops.
    for i in 0..8 {
        start(&mut c, 0, i, "1", 1_600);
    }
    assert_eq!(c.add_time(), None);
    assert_eq!(round(&mut c, 2_000, true), None, "5 < 8 needed, but no backlog");
    // Six end: 2 needed, 2 = min.
    for i in 0..6 {
        end(&mut c, 0, i, "1", TaskEndReason::Success, 2_100);
    }
    assert_eq!(c.max_needed(), 2);
    assert_eq!(round(&mut c, 2_200, true), Some(2));
    for i in 6..8 {
        end(&mut c, 0, i, "1", TaskEndReason::Success, 2_300);
    }
    completed(&mut c, 0, 2_300);
    assert_eq!(c.max_needed(), 0);
    assert_eq!(round(&mut c, 2_400, true), None, "already at minExecutors");
    assert_eq!(c.target(), 2);
}

#[test]
fn a_refused_request_rolls_the_target_and_the_ramp_up_back() {
    let mut c = ExecutorAllocationManagerCore::new(config(0, 10, 0, 1, 1.0));
    submitted(&mut c, 0, 100, 0);
    assert_eq!(round(&mut c, 1_000, true), Some(1));
    assert_eq!(round(&mut c, 1_500, false), Some(3));
    assert_eq!((c.target(), c.to_add(), c.add_time()), (1, 2, Some(1_500)));
    // The next round asks for the same again.
    assert_eq!(round(&mut c, 1_600, true), Some(3));
}

#[test]
fn no_round_runs_while_one_is_in_flight() {
    let mut c = ExecutorAllocationManagerCore::new(config(0, 10, 0, 1, 1.0));
    submitted(&mut c, 0, 100, 0);
    let r = c.schedule(1_000);
    assert_eq!(r.request.as_ref().map(|q| q.total), Some(1));
    assert!(c.is_busy());
    assert!(c.schedule(5_000).is_empty());
    c.request_answered(r.request.as_ref().unwrap(), true);
    c.round_done();
    assert_eq!(round(&mut c, 5_000, true), Some(3));
}

#[test]
fn a_failed_task_is_pending_again_and_restarts_the_backlog_clock() {
    let mut c = ExecutorAllocationManagerCore::new(config(0, 10, 0, 1, 1.0));
    submitted(&mut c, 0, 2, 0);
    start(&mut c, 0, 0, "1", 10);
    start(&mut c, 0, 1, "1", 10);
    assert_eq!((c.pending_tasks(), c.add_time()), (0, None));
    let failure = TaskEndReason::ExceptionFailure {
        class_name: "java.lang.Exception".into(),
        description: "boom".into(),
        stack_trace: vec![],
    };
    end(&mut c, 0, 1, "1", failure, 500);
    assert_eq!(c.pending_tasks(), 1);
    assert_eq!(c.running_tasks(), 1);
    assert_eq!(c.add_time(), Some(1_500));
    // A killed task is not resubmitted: nothing becomes pending.
    end(
        &mut c,
        0,
        0,
        "1",
        TaskEndReason::TaskKilled { reason: "x".into() },
        600,
    );
    assert_eq!(c.pending_tasks(), 1);
    assert_eq!(c.running_tasks(), 0);
}

#[test]
fn idle_executors_are_removed_down_to_the_target_and_never_below_min() {
    let mut c = ExecutorAllocationManagerCore::new(config(1, 10, 1, 1, 1.0));
    for id in ["1", "2", "3", "4"] {
        added(&mut c, id, 0);
    }
    submitted(&mut c, 0, 1, 0);
    start(&mut c, 0, 0, "4", 100);
    // At 59,999 ms nobody has been idle for 60 s.
    let r = c.schedule(59_999);
    assert!(r.expired.is_empty());
    c.round_done();
    let r = c.schedule(60_000);
    assert_eq!(
        r.expired,
        vec![("1".into(), 60_000), ("2".into(), 60_000), ("3".into(), 60_000)],
        "4 runs a task"
    );
    // The target is 1: three may go, leaving one... but executor 4 is busy, so 1, 2, 3 go
    // and 4 stays (4 − 3 = 1 ≥ min 1, ≥ target 1).
    if let Some(q) = &r.request {
        c.request_answered(q, true);
    }
    assert_eq!(c.target(), 1);
    let chosen = c.select_removals(&r.expired);
    assert_eq!(chosen, vec!["1", "2", "3"]);
    c.kill_answered(&chosen, &chosen);
    c.round_done();
    assert_eq!(c.monitor().pending_removal_count(), 3);
    // Once killed they are not candidates again.
    assert!(c.schedule(70_000).expired.is_empty());
    c.round_done();

    // With a target of 3 (three tasks wait, say for locality), only one of four idle
    // executors may go.
    let mut c = ExecutorAllocationManagerCore::new(config(0, 10, 3, 1, 1.0));
    for id in ["1", "2", "3", "4"] {
        added(&mut c, id, 0);
    }
    submitted(&mut c, 0, 3, 0);
    let r = c.schedule(60_000);
    assert_eq!((r.request.clone(), c.target()), (None, 3));
    assert_eq!(r.expired.len(), 4);
    assert_eq!(c.select_removals(&r.expired), vec!["1"]);
    c.round_done();

    // Nothing to run: the target drops to minExecutors 3 in the same round, and one of four
    // goes.
    let mut c = ExecutorAllocationManagerCore::new(config(3, 10, 4, 1, 1.0));
    for id in ["1", "2", "3", "4"] {
        added(&mut c, id, 0);
    }
    let r = c.schedule(60_000);
    assert_eq!(r.request.as_ref().map(|q| q.total), Some(3));
    assert_eq!(c.select_removals(&r.expired), vec!["1"]);
}

#[test]
fn a_refused_kill_leaves_the_executor_a_candidate() {
    let mut c = ExecutorAllocationManagerCore::new(config(0, 10, 0, 1, 1.0));
    added(&mut c, "1", 0);
    let r = c.schedule(60_000);
    let chosen = c.select_removals(&r.expired);
    assert_eq!(chosen, vec!["1"]);
    c.kill_answered(&chosen, &[]);
    c.round_done();
    assert_eq!(c.schedule(60_100).expired.len(), 1);
}

#[test]
fn after_the_job_the_target_returns_to_min_and_idle_executors_go() {
    // The whole cycle: from 0, a 6-task stage on 1-core executors, min 0, max 4.
    let mut c = ExecutorAllocationManagerCore::new(config(0, 4, 0, 1, 1.0));
    submitted(&mut c, 0, 6, 0);
    assert_eq!(round(&mut c, 1_000, true), Some(1));
    assert_eq!(round(&mut c, 1_500, true), Some(3));
    assert_eq!(round(&mut c, 2_000, true), Some(4), "7 capped at 4");
    for (i, id) in ["1", "2", "3", "4"].iter().enumerate() {
        added(&mut c, id, 2_100);
        start(&mut c, 0, i as u32, id, 2_100);
    }
    // Tasks 0 and 1 end on executors 1 and 2, which take tasks 4 and 5.
    end(&mut c, 0, 0, "1", TaskEndReason::Success, 3_000);
    start(&mut c, 0, 4, "1", 3_000);
    end(&mut c, 0, 1, "2", TaskEndReason::Success, 3_000);
    start(&mut c, 0, 5, "2", 3_000);
    // 4 and 5 run on executors 1 and 2; 3 and 4 are idle since 3,000.
    end(&mut c, 0, 2, "3", TaskEndReason::Success, 3_000);
    end(&mut c, 0, 3, "4", TaskEndReason::Success, 3_000);
    assert_eq!(c.max_needed(), 2);
    assert_eq!(round(&mut c, 3_100, true), Some(2), "lowered to what is needed");
    end(&mut c, 0, 4, "1", TaskEndReason::Success, 4_000);
    end(&mut c, 0, 5, "2", TaskEndReason::Success, 4_000);
    completed(&mut c, 0, 4_000);
    assert_eq!(
        round(&mut c, 4_100, true),
        Some(0),
        "no tasks: down to minExecutors 0"
    );
    let r = c.schedule(63_000);
    assert_eq!(r.expired, vec![("3".into(), 60_000), ("4".into(), 60_000)]);
    let chosen = c.select_removals(&r.expired);
    assert_eq!(chosen, vec!["3", "4"]);
    c.kill_answered(&chosen, &chosen);
    c.round_done();
    // 1 and 2 have been idle since 4,000: they go at 64,000, and none is left.
    let r = c.schedule(64_000);
    assert_eq!(r.expired, vec![("1".into(), 60_000), ("2".into(), 60_000)]);
    assert_eq!(c.select_removals(&r.expired), vec!["1", "2"]);
}

#[test]
fn a_task_start_before_the_executors_registration_leaves_it_busy_when_it_registers() {
    let mut c = ExecutorAllocationManagerCore::new(config(0, 10, 0, 1, 1.0));
    submitted(&mut c, 0, 2, 0);
    // The backend has executor 1 registered; its ExecutorAdded has not reached the listener.
    start(&mut c, 0, 0, "1", 1_000);
    added(&mut c, "1", 1_500);
    assert_eq!(c.monitor().executor_count(), 1);
    let r = c.schedule(200_000);
    assert!(r.expired.is_empty(), "busy since 1,000: no idle deadline");
    c.round_done();
    end(&mut c, 0, 0, "1", TaskEndReason::Success, 250_000);
    assert!(c.schedule(309_999).expired.is_empty());
    c.round_done();
    assert_eq!(c.schedule(310_000).expired, vec![("1".into(), 60_000)]);
    c.round_done();

    // A task start for an executor the backend does not have active is not counted.
    let mut c = ExecutorAllocationManagerCore::new(config(0, 10, 0, 1, 1.0));
    submitted(&mut c, 0, 1, 0);
    c.on_event(
        &SparkListenerEvent::TaskStart {
            stage_id: 0,
            stage_attempt_id: 0,
            task_info: info(0, 0, "7", false),
        },
        1_000,
        &|id| id != "7",
    );
    assert_eq!(c.monitor().executor_count(), 0);
    assert_eq!(c.running_tasks(), 1, "the task itself still counts as running");
}

fn submitted_with(c: &mut ExecutorAllocationManagerCore, stage_id: u32, prefs: &[&[&str]], now: u64) {
    let mut info = stage(stage_id, 0, prefs.len() as u32);
    info.task_locality_preferences = prefs
        .iter()
        .map(|hosts| hosts.iter().map(|h| TaskLocation::Host(h.to_string())).collect())
        .collect();
    c.on_event(
        &SparkListenerEvent::StageSubmitted {
            stage_info: info,
            properties: vec![],
        },
        now,
        &all_active,
    );
}

#[test]
fn requests_carry_the_placement_hints_of_the_active_stages() {
    let mut c = ExecutorAllocationManagerCore::new(config(0, 10, 0, 1, 1.0));
    // Stage 0: three tasks prefer host1 (one of them host2 as well), one has no preference.
    submitted_with(&mut c, 0, &[&["host1"], &["host1", "host2"], &["host1"], &[]], 0);
    assert_eq!(c.locality_aware_tasks(), 3);
    let hosts = |pairs: &[(&str, u32)]| -> BTreeMap<String, u32> {
        pairs.iter().map(|(h, n)| (h.to_string(), *n)).collect()
    };
    assert_eq!(c.host_to_local_task_count(), hosts(&[("host1", 3), ("host2", 1)]));
    // Stage 1 adds its own; the request made at the backlog timeout carries the sums.
    submitted_with(&mut c, 1, &[&["host2"], &["host3"]], 0);
    let r = c.schedule(1_000);
    let q = r.request.clone().expect("a new target");
    assert_eq!(q.locality_aware_tasks, 5);
    assert_eq!(
        q.host_to_local_task_count,
        hosts(&[("host1", 3), ("host2", 2), ("host3", 1)])
    );
    c.request_answered(&q, true);
    c.round_done();
    // Tasks starting do not change the hints; a completed stage takes its own away.
    start(&mut c, 0, 0, "1", 1_100);
    assert_eq!(c.locality_aware_tasks(), 5);
    completed(&mut c, 0, 1_200);
    assert_eq!(c.locality_aware_tasks(), 2);
    assert_eq!(c.host_to_local_task_count(), hosts(&[("host2", 1), ("host3", 1)]));
    assert_eq!(c.current_request("re-sync after a kill").locality_aware_tasks, 2);
    completed(&mut c, 1, 1_300);
    assert_eq!(
        (c.locality_aware_tasks(), c.host_to_local_task_count()),
        (0, hosts(&[]))
    );
}

#[test]
fn reset_restores_the_initial_target_and_forgets_the_executors() {
    let mut c = ExecutorAllocationManagerCore::new(config(0, 10, 2, 1, 1.0));
    for id in ["1", "2", "3"] {
        added(&mut c, id, 0);
    }
    // Idle for 60 s with nothing to run: the target drops to 0 and all three are killed.
    let r = c.schedule(60_000);
    let q = r.request.clone().expect("lowered");
    assert_eq!(q.total, 0);
    c.request_answered(&q, true);
    let chosen = c.select_removals(&r.expired);
    assert_eq!(chosen, vec!["1", "2", "3"]);
    c.kill_answered(&chosen, &chosen);
    c.round_done();
    // A 200-task stage ramps the target up from the 3 executors still known.
    submitted(&mut c, 0, 200, 60_000);
    assert_eq!(round(&mut c, 61_000, true), Some(4));
    assert_eq!(round(&mut c, 61_500, true), Some(5));
    assert_eq!((c.to_add(), c.monitor().pending_removal_count()), (2, 3));

    // A new ApplicationMaster registers.
    c.reset();
    assert_eq!((c.target(), c.to_add()), (2, 1));
    assert_eq!(c.monitor().executor_count(), 0);
    assert_eq!(c.monitor().pending_removal_count(), 0);
    assert_eq!(
        c.add_time(),
        Some(0),
        "executors are due at once while tasks wait"
    );
    assert_eq!(c.pending_tasks(), 200, "the listener's counts stay");
    // The next round adds at once, from the initial target, with a fresh ramp-up.
    assert_eq!(round(&mut c, 61_600, true), Some(3));
    assert_eq!((c.to_add(), c.add_time()), (2, Some(62_100)));
}
