//! `org.apache.spark.examples.ExceptionHandlingTest [--seed N]`: Spark's example whose tasks
//! throw at random: `parallelize(0 until defaultParallelism)`, and each task attempt throws
//! `java.lang.Exception: Testing exception handling` when its random draw is above 0.75. So
//! retries show in the logs, and with bad luck (`spark.task.maxFailures` failures of one
//! task) the job fails with Spark's abort message. The draw depends on the seed, the
//! partition and the attempt number: `--seed` makes a run repeatable (without it the seed
//! is the time). Spark's example runs `foreach`; this one counts, the same job.
//!
//! Layer: apps (the built-in applications, above the Spark side).

use std::time::{SystemTime, UNIX_EPOCH};

use crate::context::{AppEnv, AppError, SparkContext};
use crate::rdd::ops::{self, Op};
use crate::rdd::{TaskError, Value};

/// The registered name of the throwing operation.
pub const MAYBE_THROW_OP: &str = "exceptionhandlingtest.maybe_throw";

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The draw in [0, 1) of one task attempt.
pub fn draw(seed: u64, partition: u32, attempt: u32) -> f64 {
    let bits = mix(seed ^ mix(((partition as u64) << 32) | attempt as u64));
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// Registers the application's operations.
pub fn register_ops() {
    ops::register(
        MAYBE_THROW_OP,
        Op::map(|ctx, v: Value| {
            let seed = ctx.args.first().and_then(Value::as_i64).unwrap_or(0) as u64;
            if draw(seed, ctx.task.partition_id(), ctx.task.attempt_number()) > 0.75 {
                return Err(TaskError::exception(
                    "java.lang.Exception",
                    "Testing exception handling",
                ));
            }
            Ok(v)
        }),
    );
}

/// The application's main.
pub fn main(env: &AppEnv) -> Result<(), AppError> {
    let mut seed: Option<u64> = None;
    let mut it = env.args().iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seed" => {
                let v = it.next().ok_or_else(|| {
                    AppError::Exception("java.lang.IllegalArgumentException: --seed needs a number".into())
                })?;
                seed = Some(v.parse().map_err(|_| {
                    AppError::Exception(format!(
                        "java.lang.IllegalArgumentException: --seed '{v}' is not a number"
                    ))
                })?);
            }
            other => {
                return Err(AppError::Exception(format!(
                    "java.lang.IllegalArgumentException: unknown ExceptionHandlingTest argument '{other}'"
                )))
            }
        }
    }
    let seed = seed.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
    });
    let sc = SparkContext::new(env)?;
    let n = sc.default_parallelism() as i64;
    sc.parallelize_range(0, n, 1, None)?
        .map(MAYBE_THROW_OP, vec![Value::I64(seed as i64)])
        .count()?;
    env.println(format!(
        "ExceptionHandlingTest: {n} tasks succeeded (seed {seed})"
    ));
    sc.stop();
    Ok(())
}
