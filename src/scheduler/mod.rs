//! The driver's schedulers and endpoints: the DAGScheduler's core (`dag`), TaskSchedulerImpl
//! and TaskSetManager, the event log, the DriverEndpoint and YarnSchedulerEndpoint, Spark's
//! cluster messages, task wire types and executor loss reasons.

pub mod dag;
pub mod driver_endpoint;
pub mod event_log;
pub mod events;
pub mod loss_reason;
pub mod messages;
pub mod task;
pub mod task_scheduler;
pub mod task_set;
pub mod task_set_manager;
pub mod yarn_scheduler_endpoint;
