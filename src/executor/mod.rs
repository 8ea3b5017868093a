//! The executor side: CoarseGrainedExecutorBackend and its command-line arguments (running
//! tasks arrives with the driver-side milestone).

pub mod args;
pub mod backend;
