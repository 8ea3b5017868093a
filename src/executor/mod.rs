//! The executor side: CoarseGrainedExecutorBackend's command-line arguments (the backend
//! itself arrives with the YARN-side milestone).

pub mod args;
