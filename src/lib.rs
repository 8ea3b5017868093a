//! sparkyard: Spark-on-YARN's control plane rebuilt in Rust as a supervised actor system.
//!
//! Modules: [`runtime`] (supervision trees on actix, paths, registry, death watch, fault
//! injection, the clock), [`rpc`] (endpoint refs, the TCP transport), [`logs`] (structured
//! actor logs and their reader), [`conf`] (SparkConf and the configuration files),
//! [`yarn`] (ResourceManager, NodeManagers, records, protocols, the all-in-one node),
//! [`deploy`] (SparkSubmit, the Client, the ApplicationMaster and its allocator),
//! [`scheduler`] (the driver's endpoints and messages), [`executor`] (the executor
//! backend), [`context`] (what applications see: AppEnv, SparkContext), [`apps`] (the
//! built-in applications), [`chaos`] (what fault injection aims at, plans from the
//! configuration), [`cli`] (the command line).

pub mod apps;
pub mod chaos;
pub mod cli;
pub mod conf;
pub mod context;
pub mod deploy;
pub mod executor;
pub mod logs;
pub mod rdd;
pub mod rpc;
pub mod runtime;
pub mod scheduler;
pub mod yarn;
