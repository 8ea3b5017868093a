//! `sparkyard.examples.MapCount`: seed 002's job.
//!
//! Layer: apps (the built-in applications, above the Spark side).
//!
//! ```scala
//! val parallelizedRDD = sc.parallelize(Seq(1,2,3,4,5,6,7,8,9,10), 2)
//! val transformedRDD = parallelizedRDD.map(_ + "th value")
//! transformedRDD.partitions.foreach(p => println(s"RDD: ${p.rddId}, Partition: ${p.index}, Values: ..."))
//! transformedRDD.count()
//! ```
//!
//! The partitions are printed from the driver's side (a MapPartitionsRDD's partitions are its
//! parent's ParallelCollectionPartitions, so they say `RDD: 0`), without a job; then one job
//! counts: one ResultStage of two tasks. An optional argument sets the number of slices.

use crate::context::{AppEnv, AppError, SparkContext};
use crate::rdd::Value;

/// The application's main.
pub fn main(env: &AppEnv) -> Result<(), AppError> {
    let slices = match env.args().first() {
        Some(a) => a.parse::<u32>().map_err(|_| {
            AppError::Exception(format!(
                "java.lang.NumberFormatException: For input string: \"{a}\""
            ))
        })?,
        None => 2,
    };
    let sc = SparkContext::new(env)?;
    let parallelized = sc.parallelize((1..=10).map(Value::I64).collect(), Some(slices))?;
    let transformed = parallelized.map("append", vec![Value::Str("th value".into())]);
    for p in transformed.partitions() {
        let values = p
            .values()
            .unwrap_or_default()
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(",");
        env.println(format!(
            "RDD: {}, Partition: {}, Values: {values}",
            p.rdd_id, p.index
        ));
    }
    let count = transformed.count()?;
    env.println(format!("Count: {count}"));
    sc.stop();
    Ok(())
}
