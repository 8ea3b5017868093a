//! The driver's schedulers and endpoints: the DAGScheduler (its pure core in `dag`, its
//! event loop actor in `dag_scheduler`), TaskSchedulerImpl and TaskSetManager, the
//! DriverEndpoint and YarnSchedulerEndpoint, the revive timer, the listener bus and the
//! event log, Spark's cluster messages, task wire types and executor loss reasons.
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).

pub mod backend_utils;
pub mod barrier_coordinator;
pub mod console_progress_bar;
pub mod dag_scheduler;
pub mod driver_endpoint;
pub mod event_log;
pub mod event_logging_listener;
pub mod events;
pub mod executor_allocation_manager;
pub mod heartbeat_receiver;
pub mod listener_bus;
pub mod loss_reason;
pub mod messages;
pub mod revive_timer;
pub mod speculation_timer;
pub mod task;
pub mod task_scheduler;
pub mod task_set;
pub mod task_set_manager;
pub mod yarn_scheduler_endpoint;
