//! Spark's JsonProtocol for the listener events of `scheduler::events`: each event as the JSON
//! object Spark 4.3.0 writes (field names, order and value types), the LogStart and
//! ResourceProfileAdded lines Spark writes first, which events EventLoggingListener logs, and
//! every documented difference in shape from Spark's own log.
//!
//! Layer: scheduler (the driver's event log); pure: values in, JSON out.

use serde_json::{json, Map, Value};

use super::redaction::redact_with;
use crate::scheduler::events::{
    JobResult, RddInfo, SparkListenerEvent, StageInfo, TaskEndReason, TaskInfo, TaskMetrics,
};

/// The Spark version sparkyard's logs declare in their LogStart line (the History Server shows
/// it as the application's Spark version): the JsonProtocol written here is Spark 4.3.0's.
pub const SPARK_VERSION: &str = "4.3.0";

/// What sparkyard reports as its "JVM" in the environment update.
pub const JAVA_VERSION_TEXT: &str = "sparkyard (Rust)";
/// What sparkyard reports as its Scala version in the environment update.
pub const SCALA_VERSION_TEXT: &str = "none (sparkyard is written in Rust)";

/// Every way the JSON written here differs in shape from the event log Spark 4.3.0 writes,
/// as (event, path of the field, reason). A path names object keys joined by `/`, with `[]`
/// for "any element of the array".
pub const DOCUMENTED_DIFFERENCES: &[(&str, &str, &str)] = &[
    (
        "*",
        "RDD Info[]/Scope",
        "sparkyard records no RDD operation scope (the `parallelize`/`map` scope object Spark \
         serializes into a string); Spark omits the field when an RDD has no scope too",
    ),
    (
        "SparkListenerTaskEnd",
        "Task Info/Accumulables",
        "always []: sparkyard has no accumulators. Spark writes the same [] when \
         spark.eventLog.includeTaskMetricsAccumulators=false; the History Server takes task \
         metrics from \"Task Metrics\"",
    ),
    (
        "SparkListenerStageCompleted",
        "Stage Info/Accumulables",
        "always []: no accumulators (as above); stage metrics are summed from the tasks",
    ),
    (
        "SparkListenerJobStart",
        "Stage Infos[]/Accumulables",
        "always []: no accumulators (as above)",
    ),
    (
        "SparkListenerEnvironmentUpdate",
        "JVM Information/Java Home",
        "no JVM: sparkyard writes \"Java Version\" and \"Scala Version\" only (the reference log \
         has no \"Java Home\" either; Spark 4.3.0 normally writes it)",
    ),
    (
        "SparkListenerEnvironmentUpdate",
        "Hadoop Properties, Metrics Properties, Classpath Entries",
        "always {}: sparkyard has no Hadoop configuration object, metrics system or classpath",
    ),
    (
        "SparkListenerExecutorAdded",
        "Executor Info/Log Urls",
        "always {}: the event carries no container id or NodeManager address to build the \
         YARN container log URLs from",
    ),
    (
        "SparkListenerExecutorAdded",
        "Executor Info/Request Time",
        "never written: the event carries no request time (Spark writes it when the executor \
         was requested through its allocation manager, as on YARN; it leaves it out otherwise)",
    ),
    (
        "SparkListenerTaskEnd",
        "Task Executor Metrics/*, Task Metrics/*",
        "0 for everything sparkyard does not measure (it measures run time, result size, \
         records read, shuffle records/bytes written, shuffle records read, remote bytes read)",
    ),
    (
        "SparkListenerTaskEnd",
        "Task End Reason/Block Manager Address",
        "left out of FetchFailed (Spark's form for an unknown address): the reason carries no \
         block manager port, and the History Server refuses a BlockManagerId whose port is not > 0",
    ),
    (
        "SparkListenerJobEnd",
        "Job Result/Exception/Stack Trace",
        "always []: a failed job carries a message only",
    ),
    (
        "SparkListenerResourceProfileAdded",
        "Executor Resource Requests/cores",
        "absent when executor_cores is 0: Spark on YARN always writes it (spark.executor.cores, \
         default 1), on standalone and local-cluster only when spark.executor.cores is set (the \
         local-cluster reference log has none)",
    ),
    (
        "SparkListenerBlockManagerAdded",
        "(whole event)",
        "not produced: sparkyard has no block managers; the History Server lists executors from \
         SparkListenerExecutorAdded alone",
    ),
];

/// The executor metric names Spark writes in "Task Executor Metrics", in Spark's order.
pub(super) const EXECUTOR_METRIC_NAMES: &[&str] = &[
    "JVMHeapMemory",
    "JVMOffHeapMemory",
    "OnHeapExecutionMemory",
    "OffHeapExecutionMemory",
    "OnHeapStorageMemory",
    "OffHeapStorageMemory",
    "OnHeapUnifiedMemory",
    "OffHeapUnifiedMemory",
    "DirectPoolMemory",
    "MappedPoolMemory",
    "ProcessTreeJVMVMemory",
    "ProcessTreeJVMRSSMemory",
    "ProcessTreePythonVMemory",
    "ProcessTreePythonRSSMemory",
    "ProcessTreeOtherVMemory",
    "ProcessTreeOtherRSSMemory",
    "MinorGCCount",
    "MinorGCTime",
    "MajorGCCount",
    "MajorGCTime",
    "TotalGCTime",
    "ConcurrentGCCount",
    "ConcurrentGCTime",
];

/// The first line of every event log: `{"Event":"SparkListenerLogStart","Spark Version":...}`.
pub fn log_start_json(spark_version: &str) -> Value {
    json!({"Event": "SparkListenerLogStart", "Spark Version": spark_version})
}

/// `SparkListenerResourceProfileAdded` for the default resource profile (id 0), which Spark
/// writes right after the LogStart line. Executor requests: `cores`, `memory` (MiB), `offHeap`
/// (0); task requests: `cpus`. On YARN Spark always requests cores (spark.executor.cores,
/// default 1): pass that value; 0 leaves `cores` out, as Spark does on standalone and
/// local-cluster masters when spark.executor.cores is unset. The History Server reads this
/// event for the environment page's resource profiles; it lists applications, jobs, stages and
/// tasks without it.
pub fn resource_profile_added_json(executor_memory_mb: u64, executor_cores: u32, task_cpus: u32) -> Value {
    let mut executor = Map::new();
    if executor_cores > 0 {
        executor.insert(
            "cores".into(),
            executor_request("cores", u64::from(executor_cores)),
        );
    }
    executor.insert("memory".into(), executor_request("memory", executor_memory_mb));
    executor.insert("offHeap".into(), executor_request("offHeap", 0));
    json!({
        "Event": "SparkListenerResourceProfileAdded",
        "Resource Profile Id": 0,
        "Executor Resource Requests": Value::Object(executor),
        "Task Resource Requests": {
            "cpus": {"Resource Name": "cpus", "Amount": f64::from(task_cpus)}
        }
    })
}

pub(super) fn executor_request(name: &str, amount: u64) -> Value {
    json!({"Resource Name": name, "Amount": amount, "Discovery Script": "", "Vendor": ""})
}

/// Whether Spark's EventLoggingListener writes this event to the log. Everything sparkyard
/// posts is logged except `SparkListenerSpeculativeTaskSubmitted`.
pub fn should_log(event: &SparkListenerEvent) -> bool {
    !matches!(event, SparkListenerEvent::SpeculativeTaskSubmitted { .. })
}

/// The event in Spark's JsonProtocol. Property lists keep the caller's order (a later
/// duplicate key replaces the value of the earlier one). Environment properties are redacted
/// (see [`redact_properties`]).
pub fn event_to_json(event: &SparkListenerEvent) -> Value {
    let mut o = Map::new();
    o.insert("Event".into(), Value::from(event.name()));
    match event {
        SparkListenerEvent::ApplicationStart {
            app_name,
            app_id,
            time,
            user,
            app_attempt_id,
        } => {
            o.insert("App Name".into(), Value::from(app_name.as_str()));
            if let Some(id) = app_id {
                o.insert("App ID".into(), Value::from(id.as_str()));
            }
            o.insert("Timestamp".into(), Value::from(*time));
            o.insert("User".into(), Value::from(user.as_str()));
            if let Some(attempt) = app_attempt_id {
                o.insert("App Attempt ID".into(), Value::from(attempt.as_str()));
            }
        }
        SparkListenerEvent::ApplicationEnd { time, exit_code } => {
            o.insert("Timestamp".into(), Value::from(*time));
            if let Some(code) = exit_code {
                o.insert("ExitCode".into(), Value::from(*code));
            }
        }
        SparkListenerEvent::EnvironmentUpdate {
            spark_properties,
            system_properties,
        } => {
            o.insert(
                "JVM Information".into(),
                json!({"Java Version": JAVA_VERSION_TEXT, "Scala Version": SCALA_VERSION_TEXT}),
            );
            // EventLoggingListener.redactEvent: every section but the classpath, with the
            // application's spark.redaction.regex.
            let redactor = crate::conf::Redactor::from_pairs(spark_properties);
            o.insert(
                "Spark Properties".into(),
                string_map(&redact_with(&redactor, spark_properties)),
            );
            o.insert("Hadoop Properties".into(), json!({}));
            o.insert(
                "System Properties".into(),
                string_map(&redact_with(&redactor, system_properties)),
            );
            o.insert("Metrics Properties".into(), json!({}));
            o.insert("Classpath Entries".into(), json!({}));
        }
        SparkListenerEvent::ExecutorAdded {
            time,
            executor_id,
            host,
            total_cores,
            resource_profile_id,
        } => {
            o.insert("Timestamp".into(), Value::from(*time));
            o.insert("Executor ID".into(), Value::from(executor_id.as_str()));
            o.insert(
                "Executor Info".into(),
                json!({
                    "Host": host,
                    "Total Cores": total_cores,
                    "Log Urls": {},
                    "Attributes": {},
                    "Resources": {},
                    "Resource Profile Id": resource_profile_id,
                    "Registration Time": time,
                }),
            );
        }
        SparkListenerEvent::ExecutorRemoved {
            time,
            executor_id,
            reason,
        } => {
            o.insert("Timestamp".into(), Value::from(*time));
            o.insert("Executor ID".into(), Value::from(executor_id.as_str()));
            o.insert("Removed Reason".into(), Value::from(reason.as_str()));
        }
        SparkListenerEvent::JobStart {
            job_id,
            time,
            stage_infos,
            properties,
        } => {
            o.insert("Job ID".into(), Value::from(*job_id));
            o.insert("Submission Time".into(), Value::from(*time));
            o.insert(
                "Stage Infos".into(),
                Value::Array(stage_infos.iter().map(stage_info_json).collect()),
            );
            o.insert(
                "Stage IDs".into(),
                Value::Array(stage_infos.iter().map(|s| Value::from(s.stage_id)).collect()),
            );
            o.insert("Properties".into(), string_map(properties));
        }
        SparkListenerEvent::JobEnd { job_id, time, result } => {
            o.insert("Job ID".into(), Value::from(*job_id));
            o.insert("Completion Time".into(), Value::from(*time));
            o.insert("Job Result".into(), job_result_json(result));
        }
        SparkListenerEvent::StageSubmitted {
            stage_info,
            properties,
        } => {
            o.insert("Stage Info".into(), stage_info_json(stage_info));
            o.insert("Properties".into(), string_map(properties));
        }
        SparkListenerEvent::StageCompleted { stage_info } => {
            o.insert("Stage Info".into(), stage_info_json(stage_info));
        }
        SparkListenerEvent::TaskStart {
            stage_id,
            stage_attempt_id,
            task_info,
        } => {
            o.insert("Stage ID".into(), Value::from(*stage_id));
            o.insert("Stage Attempt ID".into(), Value::from(*stage_attempt_id));
            o.insert("Task Info".into(), task_info_json(task_info));
        }
        SparkListenerEvent::TaskEnd {
            stage_id,
            stage_attempt_id,
            task_type,
            reason,
            task_info,
            metrics,
        } => {
            o.insert("Stage ID".into(), Value::from(*stage_id));
            o.insert("Stage Attempt ID".into(), Value::from(*stage_attempt_id));
            o.insert("Task Type".into(), Value::from(task_type.as_str()));
            o.insert("Task End Reason".into(), task_end_reason_json(reason));
            o.insert("Task Info".into(), task_info_json(task_info));
            let executor_metrics: Map<String, Value> = EXECUTOR_METRIC_NAMES
                .iter()
                .map(|name| ((*name).to_string(), Value::from(0)))
                .collect();
            o.insert("Task Executor Metrics".into(), Value::Object(executor_metrics));
            if let Some(m) = metrics {
                o.insert("Task Metrics".into(), task_metrics_json(m));
            }
        }
        SparkListenerEvent::SpeculativeTaskSubmitted {
            stage_id,
            stage_attempt_id,
            ..
        } => {
            // Spark has no JsonProtocol case for this event: Jackson writes the case class with
            // its full class name and its two constructor fields (the task index is lost).
            o.insert(
                "Event".into(),
                Value::from("org.apache.spark.scheduler.SparkListenerSpeculativeTaskSubmitted"),
            );
            o.insert("stageId".into(), Value::from(*stage_id));
            o.insert("stageAttemptId".into(), Value::from(*stage_attempt_id));
        }
    }
    Value::Object(o)
}

pub(super) fn string_map(pairs: &[(String, String)]) -> Value {
    let mut m = Map::new();
    for (k, v) in pairs {
        m.insert(k.clone(), Value::from(v.as_str()));
    }
    Value::Object(m)
}

pub(super) fn stage_info_json(s: &StageInfo) -> Value {
    let mut o = Map::new();
    o.insert("Stage ID".into(), Value::from(s.stage_id));
    o.insert("Stage Attempt ID".into(), Value::from(s.attempt_id));
    o.insert("Stage Name".into(), Value::from(s.name.as_str()));
    o.insert("Number of Tasks".into(), Value::from(s.num_tasks));
    o.insert(
        "RDD Info".into(),
        Value::Array(s.rdd_infos.iter().map(rdd_info_json).collect()),
    );
    o.insert("Parent IDs".into(), json!(s.parent_ids));
    o.insert("Details".into(), Value::from(s.details.as_str()));
    if let Some(t) = s.submission_time {
        o.insert("Submission Time".into(), Value::from(t));
    }
    if let Some(t) = s.completion_time {
        o.insert("Completion Time".into(), Value::from(t));
    }
    if let Some(r) = &s.failure_reason {
        o.insert("Failure Reason".into(), Value::from(r.as_str()));
    }
    o.insert("Accumulables".into(), json!([]));
    o.insert("Resource Profile Id".into(), Value::from(0));
    o.insert("Shuffle Push Enabled".into(), Value::from(false));
    o.insert("Shuffle Push Mergers Count".into(), Value::from(0));
    Value::Object(o)
}

pub(super) fn rdd_info_json(r: &RddInfo) -> Value {
    json!({
        "RDD ID": r.id,
        "Name": r.name,
        "Callsite": r.callsite,
        "Parent IDs": r.parent_ids,
        "Storage Level": {
            "Use Disk": false,
            "Use Memory": false,
            "Use Off Heap": false,
            "Deserialized": false,
            "Replication": 1
        },
        "Barrier": false,
        "DeterministicLevel": "DETERMINATE",
        "Number of Partitions": r.num_partitions,
        "Number of Cached Partitions": 0,
        "Memory Size": 0,
        "Disk Size": 0
    })
}

pub(super) fn task_info_json(t: &TaskInfo) -> Value {
    json!({
        "Task ID": t.task_id,
        "Index": t.index,
        "Attempt": t.attempt,
        "Partition ID": t.partition_id,
        "Launch Time": t.launch_time,
        "Executor ID": t.executor_id,
        "Host": t.host,
        "Locality": t.locality.as_str(),
        "Speculative": t.speculative,
        "Getting Result Time": t.getting_result_time,
        "Finish Time": t.finish_time,
        "Failed": t.failed,
        "Killed": t.killed,
        "Accumulables": []
    })
}

pub(super) fn task_metrics_json(m: &TaskMetrics) -> Value {
    json!({
        "Executor Deserialize Time": 0,
        "Executor Deserialize CPU Time": 0,
        "Executor Run Time": m.executor_run_time_ms,
        "Executor CPU Time": 0,
        "Peak Execution Memory": 0,
        "Peak On Heap Execution Memory": 0,
        "Peak Off Heap Execution Memory": 0,
        "Result Size": m.result_size,
        "JVM GC Time": 0,
        "Result Serialization Time": 0,
        "Memory Bytes Spilled": 0,
        "Disk Bytes Spilled": 0,
        "Shuffle Read Metrics": {
            "Remote Blocks Fetched": 0,
            "Local Blocks Fetched": 0,
            "Fetch Wait Time": 0,
            "Remote Bytes Read": m.shuffle_remote_bytes_read,
            "Remote Bytes Read To Disk": 0,
            "Local Bytes Read": 0,
            "Total Records Read": m.shuffle_records_read,
            "Remote Requests Duration": 0,
            "Push Based Shuffle": {
                "Corrupt Merged Block Chunks": 0,
                "Merged Fetch Fallback Count": 0,
                "Merged Remote Blocks Fetched": 0,
                "Merged Local Blocks Fetched": 0,
                "Merged Remote Chunks Fetched": 0,
                "Merged Local Chunks Fetched": 0,
                "Merged Remote Bytes Read": 0,
                "Merged Local Bytes Read": 0,
                "Merged Remote Requests Duration": 0
            }
        },
        "Shuffle Write Metrics": {
            "Shuffle Bytes Written": m.shuffle_bytes_written,
            "Shuffle Write Time": 0,
            "Shuffle Records Written": m.shuffle_records_written
        },
        "Input Metrics": {"Bytes Read": 0, "Records Read": m.records_read},
        "Output Metrics": {"Bytes Written": 0, "Records Written": 0},
        "Updated Blocks": []
    })
}

pub(super) fn task_end_reason_json(reason: &TaskEndReason) -> Value {
    let mut o = Map::new();
    let name = match reason {
        TaskEndReason::Success => "Success",
        TaskEndReason::Resubmitted => "Resubmitted",
        TaskEndReason::FetchFailed { .. } => "FetchFailed",
        TaskEndReason::ExceptionFailure { .. } => "ExceptionFailure",
        TaskEndReason::TaskKilled { .. } => "TaskKilled",
        TaskEndReason::ExecutorLostFailure { .. } => "ExecutorLostFailure",
        TaskEndReason::TaskResultLost => "TaskResultLost",
        TaskEndReason::UnknownReason => "UnknownReason",
    };
    o.insert("Reason".into(), Value::from(name));
    match reason {
        TaskEndReason::FetchFailed {
            shuffle_id,
            map_id,
            map_index,
            reduce_id,
            message,
            ..
        } => {
            // "Block Manager Address" is left out, as Spark does for a null BlockManagerId:
            // the reason carries no block manager port, and the History Server rejects a port
            // of 0 (BlockManagerId asserts port > 0), failing to load the whole application.
            o.insert("Shuffle ID".into(), Value::from(*shuffle_id));
            o.insert("Map ID".into(), Value::from(*map_id));
            o.insert("Map Index".into(), Value::from(*map_index));
            o.insert("Reduce ID".into(), Value::from(*reduce_id));
            o.insert("Message".into(), Value::from(message.as_str()));
        }
        TaskEndReason::ExceptionFailure {
            class_name,
            description,
            stack_trace,
        } => {
            o.insert("Class Name".into(), Value::from(class_name.as_str()));
            o.insert("Description".into(), Value::from(description.as_str()));
            o.insert("Stack Trace".into(), stack_trace_json(stack_trace));
            o.insert("Full Stack Trace".into(), Value::from(reason.error_string()));
            o.insert("Accumulator Updates".into(), json!([]));
        }
        TaskEndReason::TaskKilled { reason } => {
            o.insert("Kill Reason".into(), Value::from(reason.as_str()));
            o.insert("Accumulator Updates".into(), json!([]));
        }
        TaskEndReason::ExecutorLostFailure {
            executor_id,
            exit_caused_by_app,
            reason,
        } => {
            o.insert("Executor ID".into(), Value::from(executor_id.as_str()));
            o.insert("Exit Caused By App".into(), Value::from(*exit_caused_by_app));
            if let Some(r) = reason {
                o.insert("Loss Reason".into(), Value::from(r.as_str()));
            }
        }
        TaskEndReason::Success
        | TaskEndReason::Resubmitted
        | TaskEndReason::TaskResultLost
        | TaskEndReason::UnknownReason => {}
    }
    Value::Object(o)
}

pub(super) fn job_result_json(result: &JobResult) -> Value {
    match result {
        JobResult::JobSucceeded => json!({"Result": "JobSucceeded"}),
        JobResult::JobFailed { message } => json!({
            "Result": "JobFailed",
            "Exception": {"Message": message, "Stack Trace": []}
        }),
    }
}

pub(super) fn stack_trace_json(lines: &[String]) -> Value {
    Value::Array(lines.iter().map(|l| stack_trace_element_json(l)).collect())
}

/// One frame as Spark's StackTraceElement JSON, parsed from Java's printed form
/// `[loader/][module/]pkg.Class.method(File.java:12)` (also `(Native Method)`,
/// `(Unknown Source)`, `(File.java)`). A line of another shape becomes the declaring class
/// with an empty method name, no file and line -1.
pub(super) fn stack_trace_element_json(line: &str) -> Value {
    let line = line.trim();
    let line = line.strip_prefix("at ").unwrap_or(line).trim();
    let frame = |class: &str, method: &str, file: Option<&str>, line_number: i64| {
        json!({
            "Declaring Class": class,
            "Method Name": method,
            "File Name": file,
            "Line Number": line_number
        })
    };
    let Some(open) = line.rfind('(') else {
        return frame(line, "", None, -1);
    };
    let Some(location) = line.get(open + 1..).and_then(|rest| rest.strip_suffix(')')) else {
        return frame(line, "", None, -1);
    };
    let head = line.get(..open).unwrap_or("");
    let (qualified_class, method) = match head.rsplit_once('.') {
        Some((c, m)) => (c, m),
        None => ("", head),
    };
    // Drop the class loader and module prefix ("java.base/", "app//"), but keep a hidden
    // class's "/0x..." suffix.
    let segments: Vec<&str> = qualified_class.split('/').collect();
    let class = match segments.as_slice() {
        [.., prev, last] if last.starts_with("0x") => format!("{prev}/{last}"),
        [.., last] => (*last).to_string(),
        [] => String::new(),
    };
    let (file, line_number) = match location {
        "Native Method" => (None, -2),
        "Unknown Source" | "" => (None, -1),
        _ => match location.rsplit_once(':') {
            Some((f, n)) => match n.parse::<i64>() {
                Ok(n) => (Some(f), n),
                Err(_) => (Some(location), -1),
            },
            None => (Some(location), -1),
        },
    };
    frame(&class, method, file, line_number)
}
