//! `sparkyard.examples.DriverTest`: an application for the submission path itself.
//!
//! Layer: apps (the built-in applications, above the Spark side).
//!
//! By default it creates a SparkContext, waits until the executors it asked for have
//! registered (bounded by `spark.scheduler.maxRegisteredResourcesWaitingTime`), prints how
//! many did (the DriverEndpoint's count) and stops. Options:
//! - `--throw`: throw after creating the context (the attempt ends FAILED, exit 15);
//! - `--throw-before-context`: throw before creating it (FAILED, exit 13);
//! - `--no-context`: never create one, waiting until told to stop (the AM gives up after
//!   `spark.yarn.am.waitTime`: FAILED, 13, "Timed out waiting for SparkContext.");
//! - `--sleep <duration>`: wait that long before stopping;
//! - `--fail-attempts N`: throw (after creating the context) on attempts 1..N only.

use std::time::Duration;

use crate::conf;
use crate::context::{AppEnv, AppError, SparkContext};

#[derive(Debug, Default, PartialEq)]
struct Options {
    throw: bool,
    throw_before_context: bool,
    no_context: bool,
    sleep: Option<Duration>,
    fail_attempts: u32,
}

fn parse(args: &[String]) -> Result<Options, AppError> {
    let mut o = Options::default();
    let mut it = args.iter();
    let bad = |m: String| AppError::Exception(format!("java.lang.IllegalArgumentException: {m}"));
    while let Some(a) = it.next() {
        match a.as_str() {
            "--throw" => o.throw = true,
            "--throw-before-context" => o.throw_before_context = true,
            "--no-context" => o.no_context = true,
            "--sleep" => {
                let v = it.next().ok_or_else(|| bad("--sleep needs a duration".into()))?;
                o.sleep = Some(humantime::parse_duration(v).map_err(|e| bad(format!("--sleep '{v}': {e}")))?);
            }
            "--fail-attempts" => {
                let v = it
                    .next()
                    .ok_or_else(|| bad("--fail-attempts needs a number".into()))?;
                o.fail_attempts = v
                    .parse()
                    .map_err(|_| bad(format!("--fail-attempts '{v}' is not a number")))?;
            }
            other => return Err(bad(format!("unknown DriverTest argument '{other}'"))),
        }
    }
    Ok(o)
}

/// The application's main.
pub fn main(env: &AppEnv) -> Result<(), AppError> {
    let opts = parse(env.args())?;
    if opts.throw_before_context {
        return Err(AppError::Exception(
            "java.lang.RuntimeException: DriverTest threw before creating the SparkContext".into(),
        ));
    }
    if opts.no_context {
        env.println("DriverTest: not creating a SparkContext");
        while !env.is_cancelled() {
            let _ = env.sleep(Duration::from_millis(100));
        }
        return Ok(());
    }
    let sc = SparkContext::new(env)?;
    let requested = sc.initial_target_executors();
    let limit = env
        .conf()
        .get(&conf::SCHEDULER_MAX_REGISTERED_RESOURCE_WAITING_TIME)
        .unwrap_or(Duration::from_secs(30));
    let registered = sc.wait_for_executors(requested as usize, limit)?;
    env.println(format!(
        "DriverTest: {registered} executors registered (requested {requested}) for {} on attempt {}",
        sc.app_id(),
        env.attempt_number()
    ));
    if opts.throw || env.attempt_number() <= opts.fail_attempts {
        sc.stop();
        return Err(AppError::Exception(format!(
            "java.lang.RuntimeException: DriverTest threw after creating the SparkContext (attempt {})",
            env.attempt_number()
        )));
    }
    if let Some(d) = opts.sleep {
        env.sleep(d)?;
    }
    sc.stop();
    env.println("DriverTest: done");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let o = parse(&v(&["--throw", "--sleep", "250ms", "--fail-attempts", "1"])).unwrap();
        assert!(o.throw);
        assert_eq!(o.sleep, Some(Duration::from_millis(250)));
        assert_eq!(o.fail_attempts, 1);
        assert!(parse(&v(&["--dance"])).is_err());
        assert!(parse(&v(&["--sleep"])).is_err());
    }
}
