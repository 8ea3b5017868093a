//! sparkyard: Spark-on-YARN's control plane rebuilt in Rust as a supervised actor system.
//!
//! Modules: [`runtime`] (supervision trees on actix, paths, registry, death watch, fault
//! injection, the clock), [`rpc`] (endpoint refs), [`logs`] (structured actor logs and their
//! reader), [`deploy`] (spark-submit's argument handling), [`executor`] (the executor
//! backend's arguments), [`cli`] (the command line).

pub mod cli;
pub mod conf;
pub mod deploy;
pub mod executor;
pub mod logs;
pub mod rpc;
pub mod runtime;
