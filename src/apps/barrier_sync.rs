//! `sparkyard.examples.BarrierSync [--tasks N] [--rounds R] [--ms M] [--fail-attempts K]
//! [--skip-barrier P]`: barrier execution mode.
//!
//! Layer: apps (the built-in applications, above the Spark side).
//!
//! `parallelize(0 until N, N).barrier().mapPartitions(...)` is a barrier stage of N tasks:
//! they are launched all together (or not at all), and each passes R global syncs
//! (`BarrierTaskContext.allGather`), arriving at each after a sleep of M × (partition + 1)
//! ms on the cluster clock (so they arrive at different times and wait for each other). Each
//! checks that a sync answered every task's message in partition order, then emits
//! `(round, 1)`; the stage's output is summed by key (`reduceByKey`, a shuffle, so the
//! barrier stage is a map stage Spark retries as a whole), and the application prints
//! `BarrierSync: round r: N tasks synchronised` per round.
//!
//! `--fail-attempts K` makes partition 0 throw on stage attempts below K (after its first
//! sync): the whole stage attempt fails, its tasks are killed and it runs again, up to
//! `spark.stage.maxConsecutiveAttempts`. `--skip-barrier P` makes partition P never sync,
//! so the others wait until `spark.barrier.sync.timeout`.

use std::time::Duration;

use crate::context::{AppEnv, AppError, SparkContext};
use crate::rdd::ops::{self, Op};
use crate::rdd::{TaskError, Value};

/// The registered name of the barrier stage's operation.
pub const BARRIER_OP: &str = "barriersync.rounds";

#[derive(Debug, PartialEq)]
struct Options {
    tasks: u32,
    rounds: u32,
    ms: u64,
    fail_attempts: u32,
    skip_barrier: Option<u32>,
}

fn parse(args: &[String]) -> Result<Options, AppError> {
    let bad = |m: String| AppError::Exception(format!("java.lang.IllegalArgumentException: {m}"));
    let mut o = Options {
        tasks: 2,
        rounds: 2,
        ms: 20,
        fail_attempts: 0,
        skip_barrier: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut number = |name: &str| -> Result<u64, AppError> {
            let v = it.next().ok_or_else(|| bad(format!("{name} needs a value")))?;
            v.parse::<u64>()
                .map_err(|_| bad(format!("{name} '{v}' is not a number")))
        };
        let small =
            |name: &str, n: u64| u32::try_from(n).map_err(|_| bad(format!("{name} {n} is too large")));
        match a.as_str() {
            "--tasks" => o.tasks = small("--tasks", number("--tasks")?)?,
            "--rounds" => o.rounds = small("--rounds", number("--rounds")?)?,
            "--ms" => o.ms = number("--ms")?,
            "--fail-attempts" => o.fail_attempts = small("--fail-attempts", number("--fail-attempts")?)?,
            "--skip-barrier" => o.skip_barrier = Some(small("--skip-barrier", number("--skip-barrier")?)?),
            other => return Err(bad(format!("unknown BarrierSync argument '{other}'"))),
        }
    }
    if o.tasks == 0 {
        return Err(bad("--tasks must be at least 1".into()));
    }
    Ok(o)
}

/// Registers the application's operations.
pub fn register_ops() {
    ops::register(
        BARRIER_OP,
        Op::map_partitions(|ctx, records| {
            // args: rounds, ms, fail attempts, partition that skips (-1: none).
            let int = |i: usize| ctx.args.get(i).and_then(Value::as_i64).unwrap_or(0);
            let (rounds, ms, fail_attempts, skip) = (int(0), int(1).max(0) as u64, int(2), int(3));
            for r in records {
                r?;
            }
            let partition = ctx.task.partition_id();
            let attempt = ctx.task.stage_attempt_number();
            let mut out = Vec::new();
            if i64::from(partition) == skip {
                return Ok(Box::new(out.into_iter()));
            }
            for round in 0..rounds {
                ctx.sleep(Duration::from_millis(ms.saturating_mul(u64::from(partition) + 1)))?;
                let messages = ctx.all_gather(&format!("{partition}:{round}"))?;
                let expected: Vec<String> = (0..messages.len()).map(|p| format!("{p}:{round}")).collect();
                if messages != expected {
                    return Err(TaskError::exception(
                        "java.lang.IllegalStateException",
                        format!("allGather of round {round} answered {messages:?}, expected {expected:?}"),
                    ));
                }
                if partition == 0 && i64::from(attempt) < fail_attempts {
                    return Err(TaskError::exception(
                        "java.lang.RuntimeException",
                        format!("BarrierSync: failing stage attempt {attempt} on purpose"),
                    ));
                }
                out.push(Ok(Value::pair(round, 1)));
            }
            Ok(Box::new(out.into_iter()))
        }),
    );
}

/// The application's main.
pub fn main(env: &AppEnv) -> Result<(), AppError> {
    let o = parse(env.args())?;
    let sc = SparkContext::new(env)?;
    let args = vec![
        Value::I64(i64::from(o.rounds)),
        Value::I64(o.ms as i64),
        Value::I64(i64::from(o.fail_attempts)),
        Value::I64(o.skip_barrier.map_or(-1, i64::from)),
    ];
    let mut rounds = sc
        .parallelize_range(0, i64::from(o.tasks), 1, Some(o.tasks))?
        .barrier()
        .map_partitions(BARRIER_OP, args)
        .reduce_by_key("add", Some(1))
        .collect()?;
    rounds.sort_by_key(|v| v.clone().into_pair().ok().and_then(|(round, _)| round.as_i64()));
    for pair in rounds {
        if let Ok((round, n)) = pair.into_pair() {
            env.println(format!("BarrierSync: round {round}: {n} tasks synchronised"));
        }
    }
    sc.stop();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            parse(&v(&["--tasks", "4", "--rounds", "3", "--fail-attempts", "1"])).unwrap(),
            Options {
                tasks: 4,
                rounds: 3,
                ms: 20,
                fail_attempts: 1,
                skip_barrier: None,
            }
        );
        assert_eq!(parse(&v(&["--skip-barrier", "1"])).unwrap().skip_barrier, Some(1));
        assert!(parse(&v(&["--tasks", "0"])).is_err());
        assert!(parse(&v(&["--tasks", "x"])).is_err());
        assert!(parse(&v(&["--rounds"])).is_err());
        assert!(parse(&v(&["--slow"])).is_err());
    }
}
