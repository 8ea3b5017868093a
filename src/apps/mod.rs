//! The built-in applications, registered by their class names as Spark's examples are, so
//! a spark-submit line from Spark's documentation runs with only the program name changed.
//! Each is plain Rust against [`crate::context`]: an `AppEnv` and a `SparkContext`.

pub mod driver_test;

use crate::context::AppMain;

/// Every built-in application: class name and entry point.
pub const APPLICATIONS: &[(&str, AppMain)] = &[("sparkyard.examples.DriverTest", driver_test::main)];

/// The application registered under `class`.
pub fn lookup(class: &str) -> Option<AppMain> {
    APPLICATIONS
        .iter()
        .find(|(name, _)| *name == class)
        .map(|(_, main)| *main)
}

/// The registered class names.
pub fn names() -> Vec<&'static str> {
    APPLICATIONS.iter().map(|(name, _)| *name).collect()
}
