//! The fault-injection suite's harness: an application submitted in-process (cluster mode)
//! to a fresh embedded four-node cluster while a fault plan fires on job progress, and the
//! checks every kill test makes on the result and on the structured records.
//!
//! Kills are triggered by progress (`Trigger::AfterTasks(k)`: once the k-th task of the run
//! has finished), never by wall time, so a test does the same thing on a fast or a slow
//! machine.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value as Json;
use sparkyard::conf::SparkConf;
use sparkyard::deploy::client::ClientOutcome;
use sparkyard::runtime::fault::{PlanOutcome, PlanRun};
use sparkyard::runtime::{FaultPlan, KillMode, PlannedFault, Trigger};
use sparkyard::yarn::records::FinalApplicationStatus;

use super::inproc::{self, Node};

/// SparkPi with 240 slices: its printed value is a pure function of the slices. Enough
/// slices that a run outlasts a killed executor's replacement (a slice of points is
/// counted in blocks, about a millisecond in a debug build).
pub const PI: (&str, &[&str]) = ("org.apache.spark.examples.SparkPi", &["240"]);
/// 24 tasks of 15 ms: long enough for a kill to land while tasks run.
pub const SLEEPS: (&str, &[&str]) = ("sparkyard.examples.SleepTasks", &["--tasks", "24", "--ms", "15"]);

/// The settings of every suite run: short intervals (allocation heartbeats, reports,
/// heartbeats and their time-out), two executors, one attempt unless a test says otherwise.
pub fn suite_conf(extra: &[(&str, &str)]) -> Arc<SparkConf> {
    let mut all: Vec<(&str, &str)> = vec![
        ("spark.executor.instances", "2"),
        ("spark.yarn.scheduler.heartbeat.interval-ms", "100ms"),
        ("spark.executor.heartbeatInterval", "100ms"),
        ("spark.network.timeout", "2s"),
        ("spark.network.timeoutInterval", "200ms"),
        ("spark.rpc.askTimeout", "5s"),
        ("spark.scheduler.revive.interval", "100ms"),
    ];
    all.extend_from_slice(extra);
    inproc::conf(&all)
}

/// One kill of `target` (a path or glob; every match) once `after_tasks` tasks finished.
pub fn kill_plan(target: &str, after_tasks: u64, mode: KillMode) -> FaultPlan {
    kills_plan(&[(target, after_tasks, mode)])
}

/// Several kills, each once its number of tasks finished.
pub fn kills_plan(kills: &[(&str, u64, KillMode)]) -> FaultPlan {
    FaultPlan::new(
        kills
            .iter()
            .map(|(target, after, mode)| PlannedFault {
                when: Trigger::AfterTasks(*after),
                target: target.to_string(),
                mode: *mode,
                pick: None,
            })
            .collect(),
    )
    .expect("a valid plan")
}

/// The index of the first record from `from` on that satisfies `pred`.
pub fn position_from(records: &[Json], from: usize, pred: impl Fn(&Json) -> bool) -> Option<usize> {
    records
        .iter()
        .enumerate()
        .skip(from)
        .find(|(_, r)| pred(r))
        .map(|(i, _)| i)
}

/// What a run gave.
pub struct Run {
    pub node: Node,
    pub outcome: ClientOutcome,
    /// The AM container's stdout (the application's output in cluster mode).
    pub output: String,
    pub plan: Vec<PlanOutcome>,
}

impl Run {
    pub fn records(&self) -> Vec<Json> {
        self.node.cluster.logs().records()
    }

    pub fn final_status(&self) -> FinalApplicationStatus {
        self.outcome
            .report
            .as_ref()
            .map(|r| r.final_status)
            .unwrap_or(FinalApplicationStatus::Undefined)
    }

    pub fn diagnostics(&self) -> String {
        self.outcome
            .report
            .as_ref()
            .map(|r| r.diagnostics.clone())
            .unwrap_or_default()
    }

    /// Fails with the run's diagnostics and output unless the application SUCCEEDED.
    pub fn assert_succeeded(&self) {
        assert_eq!(
            self.final_status(),
            FinalApplicationStatus::Succeeded,
            "diagnostics: {}\noutput:\n{}\nplan: {:?}",
            self.diagnostics(),
            self.output,
            self.plan
        );
    }

    /// The records with `event` = `name`.
    pub fn events(&self, name: &str) -> Vec<Json> {
        self.records()
            .into_iter()
            .filter(|r| r["event"].as_str() == Some(name))
            .collect()
    }

    /// Every record's message.
    pub fn msgs(&self) -> Vec<String> {
        self.records()
            .iter()
            .filter_map(|r| r["msg"].as_str().map(str::to_string))
            .collect()
    }

    /// Checks the story of one kill of `path_suffix` (the end of the victim's path) in the
    /// records, in order: the injection, the incarnation's failure with the reason the kill
    /// gives, a new incarnation (`incarnation` ≥ 2 at the same path), and a task finishing
    /// after the kill. Returns the victim's full path.
    pub fn assert_killed_and_restarted(&self, path_suffix: &str) -> String {
        let records = self.records();
        let at = |pred: &dyn Fn(&Json) -> bool, from: usize, what: &str| -> usize {
            position_from(&records, from, pred).unwrap_or_else(|| {
                panic!(
                    "no {what} for {path_suffix} after record {from}; plan {:?}",
                    self.plan
                )
            })
        };
        let ends = |r: &Json| r["actor"].as_str().is_some_and(|a| a.ends_with(path_suffix));
        let injected = at(
            &|r| r["event"] == "fault_injected" && ends(r),
            0,
            "fault_injected",
        );
        let path = records[injected]["actor"].as_str().unwrap().to_string();
        let failed = at(
            &|r| r["event"] == "actor_failed" && r["actor"] == path.as_str(),
            injected,
            "actor_failed",
        );
        let reason = records[failed]["reason"].as_str().unwrap_or("");
        assert!(
            reason.starts_with("killed by") || reason.starts_with("panic:"),
            "the failure names the kill: {reason}"
        );
        let restarted = at(
            &|r| r["event"] == "actor_restarted" && r["actor"] == path.as_str(),
            failed,
            "actor_restarted",
        );
        assert!(records[restarted]["incarnation"].as_u64().unwrap_or(0) >= 2);
        at(
            &|r| {
                r["msg"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("Finished task") && m.contains(" ms on "))
            },
            injected,
            "a task finished after the kill",
        );
        path
    }
}

/// Submits `app` in cluster mode to a fresh embedded node with `conf` and runs `plan`
/// (kills by progress) from the moment the application is submitted; follows it to its end
/// (at most 60 s).
pub async fn run(app: (&str, &[&str]), conf: Arc<SparkConf>, plan: Option<FaultPlan>) -> Run {
    sparkyard::apps::register_operations();
    let node = inproc::node().await;
    let running = plan.map(|p| node.cluster.run_plan(p, "fault-suite"));
    run_on(node, app, conf, running).await
}

/// [`run`] on a node the caller prepared (partitions, its own killer), with the plan it
/// started, if any.
pub async fn run_on(node: Node, app: (&str, &[&str]), conf: Arc<SparkConf>, running: Option<PlanRun>) -> Run {
    sparkyard::apps::register_operations();
    let bound = Duration::from_secs(60);
    let submitted = inproc::submit_within(&node, app.0, app.1, conf, bound + Duration::from_secs(5));
    let Ok((outcome, output)) = tokio::time::timeout(bound, submitted).await else {
        let records = node.cluster.logs().records();
        let mut tail: Vec<String> = records
            .iter()
            .rev()
            .filter(|r| !r["msg"].as_str().unwrap_or("").starts_with("Application report"))
            .take(40)
            .map(|r| format!("{} {} {}", r["ts"], r["actor"], r["msg"]))
            .collect();
        tail.reverse();
        panic!(
            "the application did not end within {}; kills: {:#?}\nlast records:\n{}",
            humantime::format_duration(bound),
            running.as_ref().map(PlanRun::outcomes).unwrap_or_default(),
            tail.join("\n")
        );
    };
    // A kill still waiting for progress that never came is reported as not fired.
    let plan = running.as_ref().map(PlanRun::outcomes).unwrap_or_default();
    Run {
        node,
        outcome,
        output,
        plan,
    }
}

/// The result lines of a clean SparkPi run ([`PI`]), computed once per test binary.
pub async fn clean_pi() -> &'static Vec<String> {
    static CLEAN: tokio::sync::OnceCell<Vec<String>> = tokio::sync::OnceCell::const_new();
    CLEAN
        .get_or_init(|| async {
            let r = run(PI, suite_conf(&[]), None).await;
            r.assert_succeeded();
            result_lines(&r.output)
        })
        .await
}

/// The printed result of a clean run of `app` (the reference a run under faults must give).
pub async fn clean_output(app: (&str, &[&str])) -> String {
    let r = run(app, suite_conf(&[]), None).await;
    r.assert_succeeded();
    r.output
}

/// The application lines of an output (without the timing lines that differ between runs).
pub fn result_lines(output: &str) -> Vec<String> {
    output
        .lines()
        .map(|l| match l.split_once(" done in ") {
            Some((head, _)) => head.to_string(),
            None => l.to_string(),
        })
        .collect()
}
