//! `org.apache.spark.examples.JavaWordCount <file>`: Spark's word count. Lines of the file
//! (`textFile`), split on single spaces (Java's `String.split(" ")`: trailing empty strings
//! dropped), paired with 1, `reduceByKey(_ + _)`, collected, and printed `word: count` one
//! per line. Two stages: the map side (textFile, flatMap, mapToPair) and the reduce side.
//! Without a file argument it prints Spark's usage line and exits with status 1.
//!
//! Layer: apps (the built-in applications, above the Spark side).

use crate::context::{AppEnv, AppError, SparkContext};
use crate::rdd::Value;

/// The application's main.
pub fn main(env: &AppEnv) -> Result<(), AppError> {
    let Some(file) = env.args().first() else {
        eprintln!("Usage: JavaWordCount <file>");
        env.println("Usage: JavaWordCount <file>");
        return Err(AppError::Exit(1));
    };
    let sc = SparkContext::new(env)?;
    let counts = sc
        .text_file(file, None)?
        .flat_map("split", vec![Value::Str(" ".into())])
        .map("pair_with_one", vec![])
        .reduce_by_key("add", None)
        .collect()?;
    for record in counts {
        match record.as_pair() {
            Some((word, n)) => env.println(format!("{word}: {n}")),
            None => env.println(record),
        }
    }
    sc.stop();
    Ok(())
}
