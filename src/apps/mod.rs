//! The built-in applications, registered by their class names as Spark's examples are, so
//! a spark-submit line from Spark's documentation runs with only the program name changed.
//! Each is plain Rust against [`crate::context`]: an `AppEnv` and a `SparkContext`.
//!
//! Closures cannot travel to executors, so each application registers the operations its
//! RDDs use by name ([`register_operations`]), as Spark ships a user's jar to its executors.
//! The command line hands [`lookup`] and [`register_operations`] down to the Spark side as
//! the process's `context::Applications` (`cli::roles::applications`): the driver registers
//! the operations as it loads the user's class, an executor before it starts. A program
//! embedding sparkyard registers its own applications with [`register_application`] and its
//! own operations with `rdd::ops::register`.
//!
//! Layer: apps, above the Spark side (context, deploy) and under cli.

pub mod barrier_sync;
pub mod driver_test;
pub mod exception_handling_test;
pub mod java_word_count;
pub mod map_count;
pub mod sleep_tasks;
pub mod spark_pi;

use std::sync::{Once, RwLock};

use crate::context::AppMain;

/// Every built-in application: class name and entry point.
pub const APPLICATIONS: &[(&str, AppMain)] = &[
    ("org.apache.spark.examples.SparkPi", spark_pi::main),
    ("org.apache.spark.examples.JavaWordCount", java_word_count::main),
    (
        "org.apache.spark.examples.ExceptionHandlingTest",
        exception_handling_test::main,
    ),
    ("sparkyard.examples.MapCount", map_count::main),
    ("sparkyard.examples.SleepTasks", sleep_tasks::main),
    ("sparkyard.examples.DriverTest", driver_test::main),
    ("sparkyard.examples.BarrierSync", barrier_sync::main),
];

static REGISTERED: RwLock<Vec<(String, AppMain)>> = RwLock::new(Vec::new());

/// Registers (or replaces) an application under `class`, beside the built-in ones.
pub fn register_application(class: &str, main: AppMain) {
    let mut apps = REGISTERED.write().unwrap_or_else(|p| p.into_inner());
    apps.retain(|(name, _)| name != class);
    apps.push((class.to_string(), main));
}

/// The application registered under `class`.
pub fn lookup(class: &str) -> Option<AppMain> {
    if let Some((_, main)) = APPLICATIONS.iter().find(|(name, _)| *name == class) {
        return Some(*main);
    }
    REGISTERED
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .find(|(name, _)| name == class)
        .map(|(_, main)| *main)
}

/// The registered class names.
pub fn names() -> Vec<String> {
    let mut out: Vec<String> = APPLICATIONS.iter().map(|(name, _)| name.to_string()).collect();
    out.extend(
        REGISTERED
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(n, _)| n.clone()),
    );
    out
}

/// Registers the operations of every built-in application (once per process).
pub fn register_operations() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        spark_pi::register_ops();
        exception_handling_test::register_ops();
        sleep_tasks::register_ops();
        barrier_sync::register_ops();
    });
}
