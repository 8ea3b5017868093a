//! The applications a process can run, as whoever assembles the process hands them down: the
//! main classes by name, and the RDD operations their code registers (Spark ships a user's
//! jar to the driver and to every executor; loading a class from it makes its code
//! available). SparkSubmit (client mode) and the ApplicationMaster (cluster mode) find the
//! user's class here; an executor is given the operations alone.
//!
//! Layer: context (what an application's code sees), under deploy, apps and cli. The
//! command line builds one from `apps` (`cli::roles::applications`), so the Spark
//! side never reaches up to the applications.

use std::fmt;
use std::sync::Arc;

use super::AppMain;
use crate::rdd::ops::RegisterOperations;

/// Finds an application's entry point by its main class.
type FindClass = Arc<dyn Fn(&str) -> Option<AppMain> + Send + Sync>;

/// The applications of a process: its main classes and their operations; cheap to clone.
#[derive(Clone)]
pub struct Applications {
    lookup: FindClass,
    operations: RegisterOperations,
}

impl fmt::Debug for Applications {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Applications")
    }
}

impl Default for Applications {
    fn default() -> Self {
        Applications::none()
    }
}

impl Applications {
    /// The classes `lookup` finds, whose code registers its operations with `operations`.
    pub fn new(
        lookup: impl Fn(&str) -> Option<AppMain> + Send + Sync + 'static,
        operations: RegisterOperations,
    ) -> Applications {
        Applications {
            lookup: Arc::new(lookup),
            operations,
        }
    }

    /// No application at all: every class is unknown.
    pub fn none() -> Applications {
        Applications::new(|_| None, || {})
    }

    /// Loads `class`: its entry point, with the operations of the applications registered
    /// first (the jar is on the classpath before its class runs); `None` for a class no
    /// application has.
    pub fn load(&self, class: &str) -> Option<AppMain> {
        let main = (self.lookup)(class)?;
        (self.operations)();
        Some(main)
    }

    /// Whether `class` names an application.
    pub fn contains(&self, class: &str) -> bool {
        (self.lookup)(class).is_some()
    }

    /// What an executor needs of them: the registration of their operations.
    pub fn operations(&self) -> RegisterOperations {
        self.operations
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    static LOADS: AtomicU32 = AtomicU32::new(0);

    fn count_load() {
        LOADS.fetch_add(1, Ordering::SeqCst);
    }

    fn main_ok(_: &super::super::AppEnv) -> Result<(), super::super::AppError> {
        Ok(())
    }

    #[test]
    fn a_known_class_loads_with_its_operations_and_an_unknown_one_does_not() {
        let apps = Applications::new(|c| (c == "a.B").then_some(main_ok as AppMain), count_load);
        assert!(apps.load("x.Y").is_none());
        assert_eq!(LOADS.load(Ordering::SeqCst), 0);
        assert!(apps.load("a.B").is_some());
        assert_eq!(LOADS.load(Ordering::SeqCst), 1);
        assert!(apps.contains("a.B") && !apps.contains("x.Y"));
        assert!(Applications::none().load("a.B").is_none());
    }
}
