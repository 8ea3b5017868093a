//! Seeded random chaos: jobs run under plans drawn from a seed (random actors of the
//! killable list, killed as stops or panics, each after a random number of finished tasks).
//! Every run ends (nothing hangs), gives the clean run's exact result or fails with a status
//! the rules allow, and shows its kills in the records; a single kill always ends
//! SUCCEEDED; the same seed gives the same plan and the same sequence of kills; a planned
//! kill that matches no running actor is recorded as skipped.

mod common;

use common::suite::{result_lines, run, suite_conf, Run, PI, SLEEPS};
use sparkyard::chaos::killable_globs;
use sparkyard::runtime::{FaultPlan, Span};
use sparkyard::yarn::records::FinalApplicationStatus;

fn plan(seed: u64, kills: usize) -> FaultPlan {
    FaultPlan::seeded(seed, &killable_globs(), kills, Span::Tasks(16)).expect("a valid plan")
}

/// The kills as they happened: the victim's path without ids (`…/am/allocator`), or
/// `skipped <target>`.
fn kill_sequence(r: &Run) -> Vec<String> {
    r.plan
        .iter()
        .flat_map(|o| {
            if o.killed.is_empty() {
                vec![format!("skipped {}", o.fault.target)]
            } else {
                o.killed
                    .iter()
                    .map(|k| format!("{} {} {}", o.fault.mode, k.actor_type, o.fault.when))
                    .collect()
            }
        })
        .collect()
}

/// Every fired kill shows in the records: an injection or a skip.
fn check_records(r: &Run) {
    let injected = r.events("fault_injected").len();
    let skipped = r.events("fault_skipped").len();
    let fired: usize = r.plan.iter().map(|o| o.killed.len().max(1)).sum();
    assert_eq!(injected + skipped, fired, "{:#?}", r.plan);
    for o in &r.plan {
        for k in &o.killed {
            assert!(
                r.records()
                    .iter()
                    .any(|rec| rec["event"] == "actor_failed"
                        && rec["actor"].as_str() == Some(k.path.as_str())),
                "the kill of {} shows as a failure",
                k.path
            );
        }
    }
}

async fn chaos_run(app: (&str, &[&str]), seed: u64, kills: usize) -> Run {
    let conf = suite_conf(&[("spark.yarn.maxAppAttempts", "2")]);
    run(app, conf, Some(plan(seed, kills))).await
}

#[actix_rt::test]
async fn single_random_kills_always_end_succeeded_with_the_right_result() {
    for app in [PI, SLEEPS] {
        let clean = run(app, suite_conf(&[]), None).await;
        clean.assert_succeeded();
        for seed in [11, 12, 13, 14, 15, 16] {
            let r = chaos_run(app, seed, 1).await;
            check_records(&r);
            assert_eq!(
                r.final_status(),
                FinalApplicationStatus::Succeeded,
                "seed {seed} ({:?}): {}\n{}",
                kill_sequence(&r),
                r.diagnostics(),
                r.output
            );
            assert_eq!(
                result_lines(&r.output),
                result_lines(&clean.output),
                "seed {seed}"
            );
        }
    }
}

#[actix_rt::test]
async fn several_random_kills_end_right_or_with_an_allowed_failure() {
    let clean = run(PI, suite_conf(&[]), None).await;
    clean.assert_succeeded();
    for seed in [21, 22, 23, 24] {
        let r = chaos_run(PI, seed, 3).await;
        check_records(&r);
        match r.final_status() {
            FinalApplicationStatus::Succeeded => {
                assert_eq!(
                    result_lines(&r.output),
                    result_lines(&clean.output),
                    "seed {seed}"
                )
            }
            FinalApplicationStatus::Failed => {
                // Allowed only when the kills failed every attempt (the AM or its node) or
                // took a supervisor beyond its intensity.
                let d = r.diagnostics();
                assert!(
                    d.contains("failed 2 times") || !r.events("supervisor_escalated").is_empty(),
                    "seed {seed} ({:?}): {d}",
                    kill_sequence(&r)
                );
            }
            other => panic!(
                "seed {seed} ({:?}) ended {other:?}: {}",
                kill_sequence(&r),
                r.diagnostics()
            ),
        }
    }
}

#[actix_rt::test]
async fn the_same_seed_gives_the_same_kills() {
    assert_eq!(plan(31, 3), plan(31, 3));
    assert_ne!(plan(31, 3).faults, plan(32, 3).faults);
    let a = chaos_run(PI, 31, 2).await;
    let b = chaos_run(PI, 31, 2).await;
    assert_eq!(kill_sequence(&a), kill_sequence(&b));
    assert_eq!(a.final_status(), b.final_status());
}
