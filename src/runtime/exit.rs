//! Why an actor incarnation ended: the reason a supervisor acts on and a watcher receives.
//!
//! Layer: runtime (above logs, under everything else).

use std::fmt;

use serde::{Deserialize, Serialize};

/// The reason an actor incarnation terminated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExitReason {
    /// The actor stopped itself (`ctx.stop()`), its work done.
    Normal,
    /// Its supervisor or the cluster stopped it (orderly shutdown, or a sibling's restart).
    Shutdown,
    /// The actor ended with an exit status, as a process would (`Me::exit`). Code 0 is normal.
    Exit { code: i32, message: String },
    /// A panic in a handler, timer, spawned future or lifecycle hook; the message and location.
    Panic { message: String },
    /// Stopped on purpose by fault injection (stop mode); `by` is who asked.
    Killed { by: String },
    /// A supervisor whose children failed more often than its restart intensity allows.
    Escalated { message: String },
    /// Ended without its hooks completing: a shutdown time-out ran out, its arbiter stopped,
    /// or its supervisor died under it.
    Aborted { message: String },
    /// A watch on a path where no actor was running.
    NoProc,
}

impl ExitReason {
    /// Whether a transient child should be restarted after this exit.
    pub fn is_abnormal(&self) -> bool {
        match self {
            ExitReason::Normal | ExitReason::Shutdown => false,
            ExitReason::Exit { code, .. } => *code != 0,
            _ => true,
        }
    }

    /// The word used in logs and the `reason` field.
    pub fn kind(&self) -> &'static str {
        match self {
            ExitReason::Normal => "normal",
            ExitReason::Shutdown => "shutdown",
            ExitReason::Exit { .. } => "exit",
            ExitReason::Panic { .. } => "panic",
            ExitReason::Killed { .. } => "killed",
            ExitReason::Escalated { .. } => "escalated",
            ExitReason::Aborted { .. } => "aborted",
            ExitReason::NoProc => "noproc",
        }
    }

    /// The exit status a process ending this way would report (used for containers).
    /// A panic is an uncaught exception (Spark's SparkExitCode.UNCAUGHT_EXCEPTION, 50);
    /// a kill is SIGTERM's 143; an abort is SIGKILL's 137.
    pub fn exit_code(&self) -> i32 {
        match self {
            ExitReason::Normal | ExitReason::Shutdown => 0,
            ExitReason::Exit { code, .. } => *code,
            ExitReason::Panic { .. } => 50,
            ExitReason::Killed { .. } => 143,
            ExitReason::Escalated { .. } => 1,
            ExitReason::Aborted { .. } => 137,
            ExitReason::NoProc => 1,
        }
    }
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExitReason::Normal => f.write_str("normal"),
            ExitReason::Shutdown => f.write_str("shutdown"),
            ExitReason::Exit { code, message } if message.is_empty() => write!(f, "exit code {code}"),
            ExitReason::Exit { code, message } => write!(f, "exit code {code}: {message}"),
            ExitReason::Panic { message } => write!(f, "panic: {message}"),
            ExitReason::Killed { by } => write!(f, "killed by {by}"),
            ExitReason::Escalated { message } => write!(f, "escalated: {message}"),
            ExitReason::Aborted { message } => write!(f, "aborted: {message}"),
            ExitReason::NoProc => f.write_str("noproc: no actor at that path"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abnormal_and_codes() {
        assert!(!ExitReason::Normal.is_abnormal());
        assert!(!ExitReason::Shutdown.is_abnormal());
        assert!(!ExitReason::Exit {
            code: 0,
            message: String::new()
        }
        .is_abnormal());
        assert!(ExitReason::Exit {
            code: 15,
            message: "x".into()
        }
        .is_abnormal());
        assert!(ExitReason::Panic {
            message: "boom".into()
        }
        .is_abnormal());
        assert!(ExitReason::Killed { by: "test".into() }.is_abnormal());
        assert_eq!(
            ExitReason::Panic {
                message: "boom".into()
            }
            .exit_code(),
            50
        );
        assert_eq!(
            ExitReason::Panic {
                message: "boom".into()
            }
            .to_string(),
            "panic: boom"
        );
    }
}
