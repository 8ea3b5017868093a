//! `sparkyard.examples.SleepTasks --tasks N --ms M [--skew F] [--jobs J]
//! [--durations a,b,...] [--linger D]`: tasks that sleep, for dynamic allocation and
//! speculation. Each job is `parallelize(0 until N, N)` mapped to a sleep of M ms on the
//! cluster clock (a killed task stops sleeping at once), then counted. `--skew F` makes the
//! last task sleep F times as long (a straggler); `--durations 1000,2000,3000,10000` gives
//! each task its own sleep in ms (task i sleeps the i-th; the number of tasks is the number
//! of durations); `--jobs J` runs J such jobs one after the other; `--linger D` keeps the
//! driver up for D (`5s`, `500ms`, or ms) after the last job, so idle executors can be seen
//! released. Prints how long each job took.
//!
//! Layer: apps (the built-in applications, above the Spark side).

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
    /// Per-task sleeps in ms (`--durations`), overriding `--ms` and `--skew`.
    durations: Option<Vec<u64>>,
    linger: Duration,
}

/// A duration argument: a bare number is milliseconds, else humantime (`5s`, `1m 30s`).
fn parse_duration_arg(v: &str) -> Option<Duration> {
    v.parse::<u64>()
        .map(Duration::from_millis)
        .ok()
        .or_else(|| humantime::parse_duration(v).ok())
}

fn parse(args: &[String]) -> Result<Options, AppError> {
    let bad = |m: String| AppError::Exception(format!("java.lang.IllegalArgumentException: {m}"));
    let mut o = Options {
        tasks: 2,
        ms: 100,
        skew: 1.0,
        jobs: 1,
        durations: None,
        linger: Duration::ZERO,
    };
    let mut tasks_given = false;
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
                tasks_given = true;
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
            "--durations" => {
                let v = value("--durations")?;
                let list = v
                    .split(',')
                    .map(|d| d.trim().parse::<u64>())
                    .collect::<Result<Vec<u64>, _>>()
                    .map_err(|_| {
                        bad(format!(
                            "--durations '{v}' is not a comma-separated list of milliseconds"
                        ))
                    })?;
                o.durations = Some(list);
            }
            "--linger" => {
                let v = value("--linger")?;
                o.linger = parse_duration_arg(&v)
                    .ok_or_else(|| bad(format!("--linger '{v}' is not a duration (e.g. 5s, 500ms)")))?;
            }
            other => return Err(bad(format!("unknown SleepTasks argument '{other}'"))),
        }
    }
    if let Some(d) = &o.durations {
        if tasks_given && o.tasks as usize != d.len() {
            return Err(bad(format!(
                "--tasks {} does not match the {} durations given",
                o.tasks,
                d.len()
            )));
        }
        o.tasks = u32::try_from(d.len()).unwrap_or(u32::MAX);
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
            // Per-task durations: args[3] is the list, task i sleeps the i-th.
            if let Some(Value::List(list)) = ctx.args.get(3) {
                let i = v.as_i64().unwrap_or(0).max(0) as usize;
                let ms = list.get(i).and_then(Value::as_i64).unwrap_or(0).max(0) as u64;
                ctx.sleep(Duration::from_millis(ms))?;
                return Ok(v);
            }
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
    let mut args = vec![
        Value::I64(o.ms as i64),
        Value::F64(o.skew),
        Value::I64(o.tasks as i64 - 1),
    ];
    let what = match &o.durations {
        Some(d) => {
            args.push(Value::List(d.iter().map(|ms| Value::I64(*ms as i64)).collect()));
            let list: Vec<String> = d.iter().map(u64::to_string).collect();
            format!("of {} ms", list.join(","))
        }
        None => format!("of {} ms", o.ms),
    };
    for job in 0..o.jobs {
        let started = clock.now();
        let n = sc
            .parallelize_range(0, o.tasks as i64, 1, Some(o.tasks))?
            .map(SLEEP_OP, args.clone())
            .count()?;
        let took = clock.now().saturating_sub(started);
        env.println(format!(
            "SleepTasks: job {job}: {n} tasks {what} done in {} ms",
            took.as_millis()
        ));
    }
    if !o.linger.is_zero() {
        env.println(format!(
            "SleepTasks: lingering {} after the last job",
            humantime::format_duration(o.linger)
        ));
        clock.blocking_sleep(o.linger, Some(&env.cancel))?;
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
                jobs: 1,
                durations: None,
                linger: Duration::ZERO,
            }
        );
        let o = parse(&v(&["--durations", "1000,2000,3000,10000", "--linger", "5s"])).unwrap();
        assert_eq!(o.tasks, 4);
        assert_eq!(o.durations, Some(vec![1000, 2000, 3000, 10000]));
        assert_eq!(o.linger, Duration::from_secs(5));
        assert_eq!(
            parse(&v(&["--linger", "250"])).unwrap().linger,
            Duration::from_millis(250)
        );
        assert!(parse(&v(&["--durations", "1,x"])).is_err());
        assert!(parse(&v(&["--tasks", "3", "--durations", "1,2"])).is_err());
        assert!(parse(&v(&["--linger", "soon"])).is_err());
        assert!(parse(&v(&["--tasks", "0"])).is_err());
        assert!(parse(&v(&["--ms"])).is_err());
        assert!(parse(&v(&["--skew", "-1"])).is_err());
        assert!(parse(&v(&["--fast"])).is_err());
    }
}
