//! The fault-injection suite, the driver's actors: each killed once in the middle of a
//! running job (after the k-th finished task) must come back as a new incarnation while the
//! job goes on to the exact result and the application ends SUCCEEDED; each killed beyond
//! its supervisor's restart intensity must end the application the way Spark would.

mod common;

use common::suite::{kill_plan, result_lines, run, suite_conf, PI};
use sparkyard::runtime::KillMode;

#[actix_rt::test]
async fn revive_timer_killed_once_restarts_in_place() {
    let clean = run(PI, suite_conf(&[]), None).await;
    clean.assert_succeeded();
    let r = run(
        PI,
        suite_conf(&[]),
        Some(kill_plan("*/driver/revive-timer", 5, KillMode::Panic)),
    )
    .await;
    r.assert_succeeded();
    r.assert_killed_and_restarted("/driver/revive-timer");
    assert_eq!(result_lines(&r.output), result_lines(&clean.output));
}
