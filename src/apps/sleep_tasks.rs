//! `sparkyard.examples.SleepTasks --tasks N --ms M [--skew F] [--jobs J]`: tasks that sleep,
//! for dynamic allocation and speculation. Each job is `parallelize(0 until N, N)` mapped
//! to a sleep of M ms on the cluster clock (a killed task stops sleeping at once), then
//! counted. `--skew F` makes the last task sleep F times as long (a straggler); `--jobs J`
//! runs J such jobs one after the other. Prints how long each job took.

use std::time::Duration;

use crate::context::{AppEnv, AppError, SparkContext};
use crate::rdd::ops::{self, Op};
use crate::rdd::Value;

/// The registered name of the sleeping operation.
pub const SLEEP_OP: &str = "sleeptasks.sleep";

#[derive(Debug, PartialEq)]
struct Options {
    tasks: u32,
    ms: u64,
    skew: f64,
    jobs: u32,
}

fn parse(args: &[String]) -> Result<Options, AppError> {
    let bad = |m: String| AppError::Exception(format!("java.lang.IllegalArgumentException: {m}"));
    let mut o = Options {
        tasks: 2,
        ms: 100,
        skew: 1.0,
        jobs: 1,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| bad(format!("{name} needs a value")))
        };
        match a.as_str() {
            "--tasks" => {
                let v = value("--tasks")?;
                o.tasks = v
                    .parse()
                    .map_err(|_| bad(format!("--tasks '{v}' is not a number")))?;
            }
            "--ms" => {
                let v = value("--ms")?;
                o.ms = v
                    .parse()
                    .map_err(|_| bad(format!("--ms '{v}' is not a number")))?;
            }
            "--skew" => {
                let v = value("--skew")?;
                o.skew = v
                    .parse::<f64>()
                    .ok()
                    .filter(|f| f.is_finite() && *f >= 0.0)
                    .ok_or_else(|| bad(format!("--skew '{v}' is not a factor")))?;
            }
            "--jobs" => {
                let v = value("--jobs")?;
                o.jobs = v
                    .parse()
                    .map_err(|_| bad(format!("--jobs '{v}' is not a number")))?;
            }
            other => return Err(bad(format!("unknown SleepTasks argument '{other}'"))),
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
        SLEEP_OP,
        Op::map(|ctx, v: Value| {
            let ms = ctx.args.first().and_then(Value::as_i64).unwrap_or(0).max(0) as f64;
            let skew = ctx.args.get(1).and_then(Value::as_f64).unwrap_or(1.0);
            let last = ctx.args.get(2).and_then(Value::as_i64).unwrap_or(-1);
            let factor = if v.as_i64() == Some(last) { skew } else { 1.0 };
            ctx.sleep(Duration::from_millis((ms * factor) as u64))?;
            Ok(v)
        }),
    );
}

/// The application's main.
pub fn main(env: &AppEnv) -> Result<(), AppError> {
    let o = parse(env.args())?;
    let sc = SparkContext::new(env)?;
    let clock = env.cluster.clock().clone();
    for job in 0..o.jobs {
        let started = clock.now();
        let n = sc
            .parallelize_range(0, o.tasks as i64, 1, Some(o.tasks))?
            .map(
                SLEEP_OP,
                vec![
                    Value::I64(o.ms as i64),
                    Value::F64(o.skew),
                    Value::I64(o.tasks as i64 - 1),
                ],
            )
            .count()?;
        let took = clock.now().saturating_sub(started);
        env.println(format!(
            "SleepTasks: job {job}: {n} tasks of {} ms done in {} ms",
            o.ms,
            took.as_millis()
        ));
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
        let o = parse(&v(&["--tasks", "8", "--ms", "250", "--skew", "4"])).unwrap();
        assert_eq!(
            o,
            Options {
                tasks: 8,
                ms: 250,
                skew: 4.0,
                jobs: 1
            }
        );
        assert!(parse(&v(&["--tasks", "0"])).is_err());
        assert!(parse(&v(&["--ms"])).is_err());
        assert!(parse(&v(&["--skew", "-1"])).is_err());
        assert!(parse(&v(&["--fast"])).is_err());
    }
}
