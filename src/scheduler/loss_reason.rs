//! Why an executor was lost (Spark's ExecutorLossReason family). The allocator produces
//! them from container exit statuses; the driver uses them to decide whether the
//! executor's running tasks count as failed.
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Spark's ExecutorLossReason and its subclasses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExecutorLossReason {
    /// The executor's process (container) exited. `exit_caused_by_app` decides whether its
    /// tasks' failures count towards `spark.task.maxFailures`.
    ExecutorExited {
        exit_code: i32,
        exit_caused_by_app: bool,
        reason: String,
    },
    /// The driver asked for it to be killed ("Executor killed by driver.").
    ExecutorKilled,
    /// The real reason is not known yet; tasks are not failed until it is.
    LossReasonPending,
    /// Lost for an unknown cause (a disconnect without a reason, a heartbeat time-out).
    ExecutorProcessLost {
        message: String,
        worker_host: Option<String>,
        caused_by_app: bool,
    },
    /// Decommissioned.
    ExecutorDecommission {
        worker_host: Option<String>,
        reason: String,
    },
}

impl ExecutorLossReason {
    /// Spark's default ExecutorProcessLost ("Executor Process Lost", caused by the app).
    pub fn process_lost(message: impl Into<String>) -> Self {
        ExecutorLossReason::ExecutorProcessLost {
            message: message.into(),
            worker_host: None,
            caused_by_app: true,
        }
    }

    /// Whether the loss is blamed on the application (its running tasks' failures count).
    pub fn caused_by_app(&self) -> bool {
        match self {
            ExecutorLossReason::ExecutorExited {
                exit_caused_by_app, ..
            } => *exit_caused_by_app,
            ExecutorLossReason::ExecutorProcessLost { caused_by_app, .. } => *caused_by_app,
            ExecutorLossReason::ExecutorKilled
            | ExecutorLossReason::LossReasonPending
            | ExecutorLossReason::ExecutorDecommission { .. } => false,
        }
    }

    /// The message, as Spark's `ExecutorLossReason.message`.
    pub fn message(&self) -> String {
        match self {
            ExecutorLossReason::ExecutorExited { reason, .. } => reason.clone(),
            ExecutorLossReason::ExecutorKilled => "Executor killed by driver.".into(),
            ExecutorLossReason::LossReasonPending => "Pending loss reason.".into(),
            ExecutorLossReason::ExecutorProcessLost { message, .. } => message.clone(),
            ExecutorLossReason::ExecutorDecommission { reason, .. } => {
                format!("Executor decommission: {reason}")
            }
        }
    }
}

impl fmt::Display for ExecutorLossReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blame_and_messages() {
        let exited = ExecutorLossReason::ExecutorExited {
            exit_code: 52,
            exit_caused_by_app: true,
            reason: "oom".into(),
        };
        assert!(exited.caused_by_app());
        assert_eq!(exited.to_string(), "oom");
        assert!(!ExecutorLossReason::ExecutorKilled.caused_by_app());
        assert_eq!(
            ExecutorLossReason::ExecutorKilled.to_string(),
            "Executor killed by driver."
        );
        assert!(ExecutorLossReason::process_lost("Executor Process Lost").caused_by_app());
    }
}
