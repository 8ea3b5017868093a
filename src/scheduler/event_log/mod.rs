//! Spark's event log for sparkyard (`spark.eventLog.enabled=true`): the listener events of
//! `scheduler::events` written in Spark's JsonProtocol, one JSON object per line, to the single
//! file that Spark's `SingleEventLogFileWriter` writes when `spark.eventLog.rolling.enabled=false`
//! and `spark.eventLog.compress=false`: `<dir>/<app id>[_<attempt id>].inprogress` while the
//! application runs, renamed to `<dir>/<app id>[_<attempt id>]` by [`EventLogWriter::stop`].
//! Spark's own History Server lists such a log with its jobs, stages and tasks
//! (`scripts/check-history-server.sh` runs it on a directory of logs).
//!
//! - [`event_to_json`]: an event in JsonProtocol (field names, field order and value types of
//!   Spark 4.3.0, checked against a log Spark wrote and against Spark's own JsonProtocol, which
//!   parses every line written here and writes the same JSON back);
//! - [`log_start_json`], [`resource_profile_added_json`]: the two lines Spark writes first;
//! - [`should_log`]: which events Spark's EventLoggingListener logs (all that sparkyard posts,
//!   except `SparkListenerSpeculativeTaskSubmitted`, which EventLoggingListener ignores);
//! - [`EventLogWriter`]: the file. [`EventLogWriter::create`] checks the directory (a path or a
//!   `file:` URI; other schemes are refused: sparkyard writes local files only), names the file
//!   as Spark's `nameForAppAndAttempt` does and writes the LogStart line. Each event is then
//!   written with a single `write` of one whole line on an unbuffered file, which is what Spark's
//!   flush after an event amounts to: the History Server sees a live application's progress at
//!   once and never a cut-off line (a write that fails part-way is cut back to the last complete
//!   line). The cost is one system call per event, a few thousand per second at most.
//! - The environment's property values are redacted as EventLoggingListener does, with the
//!   application's `spark.redaction.regex` (by default a key or value containing `secret`,
//!   `password`, `token`, `accesskey` or `access.key`, in any case, gets the value
//!   `*********(redacted)`; see [`crate::conf::Redactor`]).
//! - Errors carry Spark's messages where Spark has one: `File file:/x does not exist`,
//!   `Log directory file:/x is not a directory.`, `Target log file already exists (file:/x/app)`.
//!   Unlike Spark, which finds an existing completed log only when it renames at the end (and
//!   then leaves the events in `.inprogress`), [`EventLogWriter::create`] already refuses it,
//!   before the application runs; [`EventLogWriter::stop`] checks again.
//!
//! Where sparkyard has no value Spark would write, the field is still written, with Spark's
//! value for "nothing" (zero, `false`, `[]`, `{}`); [`DOCUMENTED_DIFFERENCES`] lists every place
//! where the output differs in shape from the log Spark writes.
//!
//! One file per Spark class, re-exported here: `json_protocol` (JsonProtocol), `writer`
//! (EventLogFileWriter) and `redaction` (EventLoggingListener's redaction of the
//! environment). Layer: scheduler (the driver's event log, written by
//! `scheduler::event_logging_listener`).

mod json_protocol;
mod redaction;
mod writer;

pub use json_protocol::{
    event_to_json, log_start_json, resource_profile_added_json, should_log, DOCUMENTED_DIFFERENCES,
    JAVA_VERSION_TEXT, SCALA_VERSION_TEXT, SPARK_VERSION,
};
pub use redaction::{redact_properties, REDACTION_REPLACEMENT_TEXT};
pub use writer::{log_file_name, resolve_log_dir, EventLogWriter, IN_PROGRESS_SUFFIX};

#[cfg(test)]
mod tests {
    use super::json_protocol::*;
    use super::redaction::*;
    use super::writer::*;
    use crate::scheduler::events::TaskLocality;
    use crate::scheduler::events::{
        JobResult, RddInfo, SparkListenerEvent, StageInfo, TaskEndReason, TaskInfo, TaskMetrics,
    };
    use serde_json::{json, Value};
    use std::fs::File;
    use std::io::Read;
    use std::path::{Path, PathBuf};

    const REFERENCE: &str = "spark-4.3-eventlog-seed-local-cluster.jsonl";

    /// The event log Spark 4.3.0 wrote (shared/reference), or None (the test then passes).
    fn reference() -> Option<Vec<Value>> {
        let beside_repo = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/reference")
            .join(REFERENCE);
        let absolute = Path::new("/work/shared/reference").join(REFERENCE);
        for path in [beside_repo, absolute] {
            if let Ok(text) = std::fs::read_to_string(&path) {
                let lines: Result<Vec<Value>, _> = text.lines().map(serde_json::from_str).collect();
                return Some(lines.expect("the reference event log is valid JSON lines"));
            }
        }
        eprintln!("reference event log {REFERENCE} not found beside the repository: comparison skipped");
        None
    }

    fn reference_event<'a>(lines: &'a [Value], name: &str) -> &'a Value {
        lines
            .iter()
            .find(|l| l["Event"] == name)
            .unwrap_or_else(|| panic!("the reference log has no {name}"))
    }

    /// Objects whose keys are data (property names, URLs), not JsonProtocol field names.
    const FREE_FORM: &[&str] = &[
        "Spark Properties",
        "Hadoop Properties",
        "System Properties",
        "Metrics Properties",
        "Classpath Entries",
        "Properties",
        "Log Urls",
        "Attributes",
        "Resources",
    ];

    fn kind(v: &Value) -> &'static str {
        match v {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_f64() => "float",
            Value::Number(_) => "integer",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }

    /// Every difference in keys, key order and value kinds between `ours` and `theirs`, as
    /// (path, what).
    fn shape_diffs(ours: &Value, theirs: &Value, path: &str, out: &mut Vec<(String, String)>) {
        match (ours, theirs) {
            (Value::Object(a), Value::Object(b)) => {
                let last = path.rsplit('/').next().unwrap_or("");
                if FREE_FORM.contains(&last) {
                    return;
                }
                for k in b.keys().filter(|k| !a.contains_key(*k)) {
                    out.push((join(path, k), "missing".into()));
                }
                for k in a.keys().filter(|k| !b.contains_key(*k)) {
                    out.push((join(path, k), "extra".into()));
                }
                let ours_common: Vec<&String> = a.keys().filter(|k| b.contains_key(*k)).collect();
                let theirs_common: Vec<&String> = b.keys().filter(|k| a.contains_key(*k)).collect();
                if ours_common != theirs_common {
                    out.push((
                        path.to_string(),
                        format!("key order {ours_common:?} vs {theirs_common:?}"),
                    ));
                }
                for (k, v) in a {
                    if let Some(w) = b.get(k) {
                        shape_diffs(v, w, &join(path, k), out);
                    }
                }
            }
            (Value::Array(a), Value::Array(b)) => {
                if a.is_empty() && !b.is_empty() {
                    out.push((path.to_string(), format!("[] vs {} elements", b.len())));
                }
                for (v, w) in a.iter().zip(b) {
                    shape_diffs(v, w, &format!("{path}[]"), out);
                }
            }
            _ if kind(ours) != kind(theirs) => {
                out.push((path.to_string(), format!("{} vs {}", kind(ours), kind(theirs))));
            }
            _ => {}
        }
    }

    fn join(path: &str, key: &str) -> String {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}/{key}")
        }
    }

    /// Compares shapes, fails on any difference not in DOCUMENTED_DIFFERENCES and returns the
    /// paths of the documented ones found.
    fn assert_same_shape(ours: &Value, theirs: &Value) -> Vec<String> {
        let event = theirs["Event"].as_str().unwrap_or("");
        let mut diffs = Vec::new();
        shape_diffs(ours, theirs, "", &mut diffs);
        let (documented, undocumented): (Vec<_>, Vec<_>) = diffs.into_iter().partition(|(path, _)| {
            DOCUMENTED_DIFFERENCES
                .iter()
                .any(|(e, p, _)| (*e == "*" || *e == event) && path.ends_with(p))
        });
        assert!(
            undocumented.is_empty(),
            "{event}: undocumented differences {undocumented:?}"
        );
        documented.into_iter().map(|(path, _)| path).collect()
    }

    fn keys(v: &Value) -> Vec<&str> {
        v.as_object()
            .map(|o| o.keys().map(|k| k.as_str()).collect())
            .unwrap_or_default()
    }

    fn props(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn rdd(id: u32, name: &str, callsite: &str, parents: &[u32]) -> RddInfo {
        RddInfo {
            id,
            name: name.into(),
            callsite: callsite.into(),
            parent_ids: parents.to_vec(),
            num_partitions: 2,
        }
    }

    fn stage(submitted: Option<u64>, completed: Option<u64>) -> StageInfo {
        StageInfo {
            stage_id: 0,
            attempt_id: 0,
            name: "count at /peer/jobs/seed.py:17".into(),
            num_tasks: 2,
            rdd_infos: vec![
                rdd(1, "PythonRDD", "count at /peer/jobs/seed.py:17", &[0]),
                rdd(
                    0,
                    "ParallelCollectionRDD",
                    "readRDDFromFile at PythonRDD.scala:326",
                    &[],
                ),
            ],
            parent_ids: vec![],
            details: "org.apache.spark.rdd.RDD.collect(RDD.scala:1122)".into(),
            submission_time: submitted,
            completion_time: completed,
            failure_reason: None,
            task_locality_preferences: vec![],
        }
    }

    fn task(id: u64, finish: u64) -> TaskInfo {
        TaskInfo {
            task_id: id,
            index: id as u32,
            attempt: 0,
            partition_id: id as u32,
            launch_time: 1795339309381,
            executor_id: "0".into(),
            host: "localhost".into(),
            locality: TaskLocality::ProcessLocal,
            speculative: false,
            getting_result_time: 0,
            finish_time: finish,
            failed: false,
            killed: false,
        }
    }

    fn task_end(reason: TaskEndReason, metrics: Option<TaskMetrics>) -> SparkListenerEvent {
        SparkListenerEvent::TaskEnd {
            stage_id: 0,
            stage_attempt_id: 0,
            task_type: "ResultTask".into(),
            reason,
            task_info: task(0, 1795339310951),
            metrics,
        }
    }

    fn job_props() -> Vec<(String, String)> {
        props(&[("callSite.short", "count at /peer/jobs/seed.py:17")])
    }

    #[test]
    fn log_start_and_resource_profile_equal_the_reference() {
        let Some(r) = reference() else { return };
        assert_eq!(log_start_json("4.3.0"), r[0]);
        assert_eq!(
            resource_profile_added_json(1024, 0, 1),
            *reference_event(&r, "SparkListenerResourceProfileAdded")
        );
    }

    #[test]
    fn resource_profile_with_executor_cores_matches_spark() {
        // Byte for byte the line Spark 4.3.0 wrote for a master that is neither standalone nor
        // local-cluster (as YARN), spark.executor.cores and spark.executor.memory unset.
        let spark = r#"{"Event":"SparkListenerResourceProfileAdded","Resource Profile Id":0,"Executor Resource Requests":{"cores":{"Resource Name":"cores","Amount":1,"Discovery Script":"","Vendor":""},"memory":{"Resource Name":"memory","Amount":1024,"Discovery Script":"","Vendor":""},"offHeap":{"Resource Name":"offHeap","Amount":0,"Discovery Script":"","Vendor":""}},"Task Resource Requests":{"cpus":{"Resource Name":"cpus","Amount":1.0}}}"#;
        assert_eq!(resource_profile_added_json(1024, 1, 1).to_string(), spark);
        let v = resource_profile_added_json(4096, 4, 2);
        assert_eq!(v["Executor Resource Requests"]["cores"]["Amount"], 4);
        assert_eq!(v["Executor Resource Requests"]["memory"]["Amount"], 4096);
        assert_eq!(v["Task Resource Requests"]["cpus"]["Amount"], json!(2.0));
    }

    #[test]
    fn application_start_and_end_equal_the_reference() {
        let Some(r) = reference() else { return };
        let start = SparkListenerEvent::ApplicationStart {
            app_name: "PeerSeed".into(),
            app_id: Some("app-20261122092142-0000".into()),
            time: 1795339301743,
            user: "root".into(),
            app_attempt_id: None,
        };
        assert_eq!(
            event_to_json(&start),
            *reference_event(&r, "SparkListenerApplicationStart")
        );
        let end = SparkListenerEvent::ApplicationEnd {
            time: 1795339311641,
            exit_code: Some(0),
        };
        assert_eq!(
            event_to_json(&end),
            *reference_event(&r, "SparkListenerApplicationEnd")
        );
    }

    #[test]
    fn application_start_optional_fields_follow_spark() {
        let start = SparkListenerEvent::ApplicationStart {
            app_name: "a".into(),
            app_id: None,
            time: 1,
            user: "u".into(),
            app_attempt_id: None,
        };
        assert_eq!(
            keys(&event_to_json(&start)),
            ["Event", "App Name", "Timestamp", "User"]
        );
        let start = SparkListenerEvent::ApplicationStart {
            app_name: "a".into(),
            app_id: Some("application_1_0001".into()),
            time: 1,
            user: "u".into(),
            app_attempt_id: Some("1".into()),
        };
        assert_eq!(
            keys(&event_to_json(&start)),
            [
                "Event",
                "App Name",
                "App ID",
                "Timestamp",
                "User",
                "App Attempt ID"
            ]
        );
        let end = SparkListenerEvent::ApplicationEnd {
            time: 1,
            exit_code: None,
        };
        assert_eq!(keys(&event_to_json(&end)), ["Event", "Timestamp"]);
    }

    #[test]
    fn environment_update_has_the_reference_shape() {
        let Some(r) = reference() else { return };
        let env = SparkListenerEvent::EnvironmentUpdate {
            spark_properties: props(&[("spark.app.name", "PeerSeed"), ("spark.master", "yarn")]),
            system_properties: props(&[("os.name", "Linux")]),
        };
        let ours = event_to_json(&env);
        assert_same_shape(&ours, reference_event(&r, "SparkListenerEnvironmentUpdate"));
        assert_eq!(ours["JVM Information"]["Java Version"], JAVA_VERSION_TEXT);
        assert_eq!(ours["Spark Properties"]["spark.master"], "yarn");
        assert_eq!(ours["System Properties"]["os.name"], "Linux");
    }

    #[test]
    fn environment_properties_are_redacted_like_spark() {
        let env = SparkListenerEvent::EnvironmentUpdate {
            spark_properties: props(&[
                ("spark.authenticate.secret", "abc"),
                ("spark.my.PASSWORD", "hunter2"),
                ("spark.plain", "uses a token here"),
                ("spark.hadoop.fs.s3a.access.key", "AK"),
                ("spark.accessKeyId", "AK"),
                ("spark.master", "yarn"),
            ]),
            system_properties: props(&[
                ("sun.java.command", "x --conf spark.password=p"),
                ("os.name", "Linux"),
            ]),
        };
        let v = event_to_json(&env);
        let sp = &v["Spark Properties"];
        for key in [
            "spark.authenticate.secret",
            "spark.my.PASSWORD",
            "spark.plain",
            "spark.hadoop.fs.s3a.access.key",
            "spark.accessKeyId",
        ] {
            assert_eq!(sp[key], REDACTION_REPLACEMENT_TEXT, "{key}");
        }
        assert_eq!(sp["spark.master"], "yarn");
        assert_eq!(
            v["System Properties"]["sun.java.command"],
            REDACTION_REPLACEMENT_TEXT
        );
        assert_eq!(v["System Properties"]["os.name"], "Linux");
        assert!(!v.to_string().contains("hunter2"));
    }

    #[test]
    fn the_applications_redaction_regex_is_the_one_applied() {
        let env = SparkListenerEvent::EnvironmentUpdate {
            spark_properties: props(&[
                ("spark.redaction.regex", "(?i)internal"),
                ("spark.my.password", "shown: the default pattern is replaced"),
                ("spark.internal.url", "hidden"),
            ]),
            system_properties: props(&[("java.home", "/opt/INTERNAL/jdk")]),
        };
        let v = event_to_json(&env);
        let sp = &v["Spark Properties"];
        assert_eq!(sp["spark.my.password"], "shown: the default pattern is replaced");
        assert_eq!(sp["spark.internal.url"], REDACTION_REPLACEMENT_TEXT);
        assert_eq!(v["System Properties"]["java.home"], REDACTION_REPLACEMENT_TEXT);
    }

    #[test]
    fn executor_added_has_the_reference_shape() {
        let Some(r) = reference() else { return };
        let ev = SparkListenerEvent::ExecutorAdded {
            time: 1795339308692,
            executor_id: "0".into(),
            host: "localhost".into(),
            total_cores: 1,
            resource_profile_id: 0,
        };
        let ours = event_to_json(&ev);
        let theirs = reference_event(&r, "SparkListenerExecutorAdded");
        assert_same_shape(&ours, theirs);
        let mut without_urls = theirs.clone();
        without_urls["Executor Info"]["Log Urls"] = json!({});
        assert_eq!(ours, without_urls);
    }

    #[test]
    fn executor_removed_matches_spark() {
        // Spark 4.3.0's JsonProtocol for SparkListenerExecutorRemoved(5, "3", "Container killed").
        let ev = SparkListenerEvent::ExecutorRemoved {
            time: 5,
            executor_id: "3".into(),
            reason: "Container killed".into(),
        };
        assert_eq!(
            event_to_json(&ev).to_string(),
            r#"{"Event":"SparkListenerExecutorRemoved","Timestamp":5,"Executor ID":"3","Removed Reason":"Container killed"}"#
        );
    }

    #[test]
    fn job_start_and_stage_events_have_the_reference_shape() {
        let Some(r) = reference() else { return };
        let job = SparkListenerEvent::JobStart {
            job_id: 0,
            time: 1795339309281,
            stage_infos: vec![stage(None, None)],
            properties: job_props(),
        };
        let ours = event_to_json(&job);
        let found = assert_same_shape(&ours, reference_event(&r, "SparkListenerJobStart"));
        assert_eq!(found, ["Stage Infos[]/RDD Info[]/Scope"]);
        assert_eq!(ours["Stage IDs"], json!([0]));
        let submitted = SparkListenerEvent::StageSubmitted {
            stage_info: stage(Some(1795339309298), None),
            properties: job_props(),
        };
        assert_same_shape(
            &event_to_json(&submitted),
            reference_event(&r, "SparkListenerStageSubmitted"),
        );
        let completed = SparkListenerEvent::StageCompleted {
            stage_info: stage(Some(1795339309298), Some(1795339311236)),
        };
        let found = assert_same_shape(
            &event_to_json(&completed),
            reference_event(&r, "SparkListenerStageCompleted"),
        );
        assert_eq!(found, ["Stage Info/RDD Info[]/Scope", "Stage Info/Accumulables"]);
        // The RDD without a scope is written exactly as Spark writes it.
        let theirs = reference_event(&r, "SparkListenerStageSubmitted");
        assert_eq!(
            event_to_json(&submitted)["Stage Info"]["RDD Info"][0],
            theirs["Stage Info"]["RDD Info"][0]
        );
    }

    #[test]
    fn stage_failure_reason_is_written_after_the_times() {
        let mut s = stage(Some(1), Some(2));
        s.failure_reason = Some("Job aborted".into());
        let v = event_to_json(&SparkListenerEvent::StageCompleted { stage_info: s });
        let k = keys(&v["Stage Info"]);
        let pos = |name: &str| k.iter().position(|x| *x == name).unwrap();
        assert_eq!(pos("Failure Reason"), pos("Completion Time") + 1);
        assert_eq!(pos("Accumulables"), pos("Failure Reason") + 1);
        assert_eq!(v["Stage Info"]["Failure Reason"], "Job aborted");
    }

    #[test]
    fn task_start_and_job_end_equal_the_reference() {
        let Some(r) = reference() else { return };
        let start = SparkListenerEvent::TaskStart {
            stage_id: 0,
            stage_attempt_id: 0,
            task_info: task(0, 0),
        };
        assert_eq!(
            event_to_json(&start),
            *reference_event(&r, "SparkListenerTaskStart")
        );
        let end = SparkListenerEvent::JobEnd {
            job_id: 0,
            time: 1795339311246,
            result: JobResult::JobSucceeded,
        };
        assert_eq!(event_to_json(&end), *reference_event(&r, "SparkListenerJobEnd"));
    }

    #[test]
    fn task_end_has_the_reference_shape_and_metrics() {
        let Some(r) = reference() else { return };
        let metrics = TaskMetrics {
            executor_run_time_ms: 1065,
            result_size: 1619,
            records_read: 5,
            shuffle_records_written: 6,
            shuffle_bytes_written: 7,
            shuffle_records_read: 8,
            shuffle_remote_bytes_read: 9,
        };
        let ours = event_to_json(&task_end(TaskEndReason::Success, Some(metrics)));
        let found = assert_same_shape(&ours, reference_event(&r, "SparkListenerTaskEnd"));
        assert_eq!(found, ["Task Info/Accumulables"]);
        let m = &ours["Task Metrics"];
        assert_eq!(m["Executor Run Time"], 1065);
        assert_eq!(m["Result Size"], 1619);
        assert_eq!(m["Input Metrics"]["Records Read"], 5);
        assert_eq!(m["Shuffle Write Metrics"]["Shuffle Records Written"], 6);
        assert_eq!(m["Shuffle Write Metrics"]["Shuffle Bytes Written"], 7);
        assert_eq!(m["Shuffle Read Metrics"]["Total Records Read"], 8);
        assert_eq!(m["Shuffle Read Metrics"]["Remote Bytes Read"], 9);
        // No metrics: Spark leaves "Task Metrics" out.
        let bare = event_to_json(&task_end(TaskEndReason::TaskResultLost, None));
        assert_eq!(
            keys(&bare),
            [
                "Event",
                "Stage ID",
                "Stage Attempt ID",
                "Task Type",
                "Task End Reason",
                "Task Info",
                "Task Executor Metrics"
            ]
        );
    }

    fn reason_json(reason: TaskEndReason) -> Value {
        event_to_json(&task_end(reason, None))["Task End Reason"].clone()
    }

    #[test]
    fn every_task_end_reason_has_sparks_fields() {
        // Key lists from Spark 4.3.0's JsonProtocol, one per TaskEndReason.
        assert_eq!(reason_json(TaskEndReason::Success), json!({"Reason": "Success"}));
        assert_eq!(
            reason_json(TaskEndReason::Resubmitted),
            json!({"Reason": "Resubmitted"})
        );
        assert_eq!(
            reason_json(TaskEndReason::TaskResultLost),
            json!({"Reason": "TaskResultLost"})
        );
        assert_eq!(
            reason_json(TaskEndReason::UnknownReason),
            json!({"Reason": "UnknownReason"})
        );
        let fetch = |executor_id: Option<&str>, host: Option<&str>| TaskEndReason::FetchFailed {
            executor_id: executor_id.map(String::from),
            host: host.map(String::from),
            shuffle_id: 2,
            map_id: 11,
            map_index: 4,
            reduce_id: 5,
            message: "fetch msg".into(),
        };
        // Spark 4.3.0 writes, for FetchFailed(BlockManagerId("3", "host-b", 7337), 2, 11, 4, 5, ...):
        // {"Reason":"FetchFailed","Block Manager Address":{"Executor ID":"3","Host":"host-b",
        // "Port":7337},"Shuffle ID":2,...}; without a port sparkyard writes the null-address form.
        assert_eq!(
            reason_json(fetch(Some("3"), Some("host-b"))),
            reason_json(fetch(None, None))
        );
        assert_eq!(
            reason_json(fetch(None, None)).to_string(),
            r#"{"Reason":"FetchFailed","Shuffle ID":2,"Map ID":11,"Map Index":4,"Reduce ID":5,"Message":"fetch msg"}"#
        );
        let failure = reason_json(TaskEndReason::ExceptionFailure {
            class_name: "java.lang.RuntimeException".into(),
            description: "boom".into(),
            stack_trace: vec![
                "java.base/jdk.internal.reflect.NativeConstructorAccessorImpl.newInstance0(Native Method)"
                    .into(),
                "org.apache.spark.rdd.RDD.collect(RDD.scala:1122)".into(),
            ],
        });
        assert_eq!(
            keys(&failure),
            [
                "Reason",
                "Class Name",
                "Description",
                "Stack Trace",
                "Full Stack Trace",
                "Accumulator Updates"
            ]
        );
        assert_eq!(
            failure["Stack Trace"],
            json!([
                {"Declaring Class": "jdk.internal.reflect.NativeConstructorAccessorImpl",
                 "Method Name": "newInstance0", "File Name": null, "Line Number": -2},
                {"Declaring Class": "org.apache.spark.rdd.RDD", "Method Name": "collect",
                 "File Name": "RDD.scala", "Line Number": 1122}
            ])
        );
        assert!(failure["Full Stack Trace"]
            .as_str()
            .unwrap()
            .starts_with("java.lang.RuntimeException: boom\n\tat java.base/"));
        assert_eq!(failure["Accumulator Updates"], json!([]));
        assert_eq!(
            reason_json(TaskEndReason::TaskKilled {
                reason: "stage cancelled".into()
            })
            .to_string(),
            r#"{"Reason":"TaskKilled","Kill Reason":"stage cancelled","Accumulator Updates":[]}"#
        );
        assert_eq!(
            reason_json(TaskEndReason::ExecutorLostFailure {
                executor_id: "3".into(),
                exit_caused_by_app: true,
                reason: Some("container lost".into()),
            })
            .to_string(),
            r#"{"Reason":"ExecutorLostFailure","Executor ID":"3","Exit Caused By App":true,"Loss Reason":"container lost"}"#
        );
        assert_eq!(
            reason_json(TaskEndReason::ExecutorLostFailure {
                executor_id: "3".into(),
                exit_caused_by_app: false,
                reason: None,
            })
            .to_string(),
            r#"{"Reason":"ExecutorLostFailure","Executor ID":"3","Exit Caused By App":false}"#
        );
    }

    #[test]
    fn failed_job_carries_sparks_exception_object() {
        let ev = SparkListenerEvent::JobEnd {
            job_id: 4,
            time: 99,
            result: JobResult::JobFailed {
                message: "Job aborted due to stage failure: x".into(),
            },
        };
        assert_eq!(
            event_to_json(&ev).to_string(),
            r#"{"Event":"SparkListenerJobEnd","Job ID":4,"Completion Time":99,"Job Result":{"Result":"JobFailed","Exception":{"Message":"Job aborted due to stage failure: x","Stack Trace":[]}}}"#
        );
    }

    #[test]
    fn speculative_task_is_rendered_like_spark_but_not_logged() {
        let ev = SparkListenerEvent::SpeculativeTaskSubmitted {
            stage_id: 1,
            stage_attempt_id: 0,
            task_index: 3,
        };
        assert_eq!(
            event_to_json(&ev).to_string(),
            r#"{"Event":"org.apache.spark.scheduler.SparkListenerSpeculativeTaskSubmitted","stageId":1,"stageAttemptId":0}"#
        );
        assert!(!should_log(&ev));
    }

    #[test]
    fn every_reference_event_kind_is_produced_or_documented() {
        let Some(r) = reference() else { return };
        let produced = [
            "SparkListenerLogStart",
            "SparkListenerResourceProfileAdded",
            "SparkListenerEnvironmentUpdate",
            "SparkListenerApplicationStart",
            "SparkListenerApplicationEnd",
            "SparkListenerExecutorAdded",
            "SparkListenerJobStart",
            "SparkListenerJobEnd",
            "SparkListenerStageSubmitted",
            "SparkListenerStageCompleted",
            "SparkListenerTaskStart",
            "SparkListenerTaskEnd",
        ];
        for line in &r {
            let name = line["Event"].as_str().unwrap_or("");
            let documented = DOCUMENTED_DIFFERENCES
                .iter()
                .any(|(e, p, _)| *e == name && *p == "(whole event)");
            assert!(
                produced.contains(&name) || documented,
                "{name} is neither produced nor documented"
            );
        }
    }

    #[test]
    fn stack_trace_lines_of_any_shape_do_not_panic() {
        for line in [
            "",
            "(",
            ")",
            "()",
            "a(b",
            "x.y(",
            "at org.Foo.bar(Foo.java:12)",
            "app//com.example.Main.main(Main.java)",
            "org.Foo$$Lambda/0x0000000800c03000.apply(Unknown Source)",
            "org.Foo.bar(Foo.java:notanumber)",
            "weird line with no frame",
            "é.ü(ß:1)",
            "/(/:)",
        ] {
            let v = stack_trace_element_json(line);
            assert_eq!(
                keys(&v),
                ["Declaring Class", "Method Name", "File Name", "Line Number"]
            );
        }
        let v = stack_trace_element_json("app//com.example.Main.main(Main.java)");
        assert_eq!(v["Declaring Class"], "com.example.Main");
        assert_eq!(v["File Name"], "Main.java");
        assert_eq!(v["Line Number"], -1);
        let v = stack_trace_element_json("org.Foo$$Lambda/0x0000000800c03000.apply(Unknown Source)");
        assert_eq!(v["Declaring Class"], "org.Foo$$Lambda/0x0000000800c03000");
        assert_eq!(v["File Name"], Value::Null);
    }

    // ------------------------------------------------------------- the whole reference log

    /// The path and the two sides of the first difference between `ours` and `theirs` (key
    /// order, value types and values), or None when they are the same.
    fn first_difference(ours: &Value, theirs: &Value) -> Option<String> {
        fn walk(a: &Value, b: &Value, path: &str) -> Option<String> {
            match (a, b) {
                (Value::Object(x), Value::Object(y)) => {
                    let xk: Vec<&String> = x.keys().collect();
                    let yk: Vec<&String> = y.keys().collect();
                    if xk != yk {
                        let i = xk.iter().zip(&yk).take_while(|(p, q)| p == q).count();
                        return Some(format!(
                            "{path}: key #{i} is {:?} in ours, {:?} in Spark's (ours {xk:?}, Spark's {yk:?})",
                            xk.get(i),
                            yk.get(i)
                        ));
                    }
                    x.iter().find_map(|(k, v)| walk(v, &y[k], &join(path, k)))
                }
                (Value::Array(x), Value::Array(y)) => {
                    if x.len() != y.len() {
                        return Some(format!(
                            "{path}: {} elements in ours, {} in Spark's",
                            x.len(),
                            y.len()
                        ));
                    }
                    x.iter()
                        .zip(y)
                        .enumerate()
                        .find_map(|(i, (v, w))| walk(v, w, &format!("{path}[{i}]")))
                }
                _ if a == b => None,
                _ => Some(format!(
                    "{path}: ours {a} ({}), Spark's {b} ({})",
                    kind(a),
                    kind(b)
                )),
            }
        }
        walk(ours, theirs, "")
    }

    fn num(v: &Value) -> u64 {
        v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
    }

    fn text(v: &Value) -> String {
        v.as_str()
            .unwrap_or_else(|| panic!("not a string: {v}"))
            .to_string()
    }

    fn pairs(v: &Value) -> Vec<(String, String)> {
        v.as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), text(v)))
            .collect()
    }

    fn ids(v: &Value) -> Vec<u32> {
        v.as_array().unwrap().iter().map(|x| num(x) as u32).collect()
    }

    fn stage_from(v: &Value) -> StageInfo {
        StageInfo {
            stage_id: num(&v["Stage ID"]) as u32,
            attempt_id: num(&v["Stage Attempt ID"]) as u32,
            name: text(&v["Stage Name"]),
            num_tasks: num(&v["Number of Tasks"]) as u32,
            rdd_infos: v["RDD Info"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| RddInfo {
                    id: num(&r["RDD ID"]) as u32,
                    name: text(&r["Name"]),
                    callsite: text(&r["Callsite"]),
                    parent_ids: ids(&r["Parent IDs"]),
                    num_partitions: num(&r["Number of Partitions"]) as u32,
                })
                .collect(),
            parent_ids: ids(&v["Parent IDs"]),
            details: text(&v["Details"]),
            submission_time: v.get("Submission Time").map(num),
            completion_time: v.get("Completion Time").map(num),
            failure_reason: v.get("Failure Reason").map(text),
            task_locality_preferences: vec![],
        }
    }

    fn task_from(v: &Value) -> TaskInfo {
        TaskInfo {
            task_id: num(&v["Task ID"]),
            index: num(&v["Index"]) as u32,
            attempt: num(&v["Attempt"]) as u32,
            partition_id: num(&v["Partition ID"]) as u32,
            launch_time: num(&v["Launch Time"]),
            executor_id: text(&v["Executor ID"]),
            host: text(&v["Host"]),
            locality: match v["Locality"].as_str() {
                Some("PROCESS_LOCAL") => TaskLocality::ProcessLocal,
                Some("NODE_LOCAL") => TaskLocality::NodeLocal,
                Some("NO_PREF") => TaskLocality::NoPref,
                Some("RACK_LOCAL") => TaskLocality::RackLocal,
                _ => TaskLocality::Any,
            },
            speculative: v["Speculative"].as_bool().unwrap(),
            getting_result_time: num(&v["Getting Result Time"]),
            finish_time: num(&v["Finish Time"]),
            failed: v["Failed"].as_bool().unwrap(),
            killed: v["Killed"].as_bool().unwrap(),
        }
    }

    /// The metrics sparkyard measures, at their places in "Task Metrics".
    const MEASURED_METRICS: &[&str] = &[
        "Executor Run Time",
        "Result Size",
        "Shuffle Read Metrics/Remote Bytes Read",
        "Shuffle Read Metrics/Total Records Read",
        "Shuffle Write Metrics/Shuffle Bytes Written",
        "Shuffle Write Metrics/Shuffle Records Written",
        "Input Metrics/Records Read",
    ];

    fn metric(m: &Value, path: &str) -> u64 {
        num(path.split('/').fold(m, |v, k| &v[k]))
    }

    /// The sparkyard event that carries what one line of Spark's log says, as far as the event
    /// can (None for the lines sparkyard does not produce).
    fn event_from_reference(line: &Value) -> Option<SparkListenerEvent> {
        let name = line["Event"].as_str().unwrap();
        Some(match name {
            "SparkListenerApplicationStart" => SparkListenerEvent::ApplicationStart {
                app_name: text(&line["App Name"]),
                app_id: line.get("App ID").map(text),
                time: num(&line["Timestamp"]),
                user: text(&line["User"]),
                app_attempt_id: line.get("App Attempt ID").map(text),
            },
            "SparkListenerApplicationEnd" => SparkListenerEvent::ApplicationEnd {
                time: num(&line["Timestamp"]),
                exit_code: line.get("ExitCode").map(|c| c.as_i64().unwrap() as i32),
            },
            "SparkListenerEnvironmentUpdate" => SparkListenerEvent::EnvironmentUpdate {
                spark_properties: pairs(&line["Spark Properties"]),
                system_properties: pairs(&line["System Properties"]),
            },
            "SparkListenerExecutorAdded" => SparkListenerEvent::ExecutorAdded {
                time: num(&line["Timestamp"]),
                executor_id: text(&line["Executor ID"]),
                host: text(&line["Executor Info"]["Host"]),
                total_cores: num(&line["Executor Info"]["Total Cores"]) as u32,
                resource_profile_id: num(&line["Executor Info"]["Resource Profile Id"]) as u32,
            },
            "SparkListenerJobStart" => SparkListenerEvent::JobStart {
                job_id: num(&line["Job ID"]) as u32,
                time: num(&line["Submission Time"]),
                stage_infos: line["Stage Infos"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(stage_from)
                    .collect(),
                properties: pairs(&line["Properties"]),
            },
            "SparkListenerJobEnd" => {
                assert_eq!(line["Job Result"]["Result"], "JobSucceeded");
                SparkListenerEvent::JobEnd {
                    job_id: num(&line["Job ID"]) as u32,
                    time: num(&line["Completion Time"]),
                    result: JobResult::JobSucceeded,
                }
            }
            "SparkListenerStageSubmitted" => SparkListenerEvent::StageSubmitted {
                stage_info: stage_from(&line["Stage Info"]),
                properties: pairs(&line["Properties"]),
            },
            "SparkListenerStageCompleted" => SparkListenerEvent::StageCompleted {
                stage_info: stage_from(&line["Stage Info"]),
            },
            "SparkListenerTaskStart" => SparkListenerEvent::TaskStart {
                stage_id: num(&line["Stage ID"]) as u32,
                stage_attempt_id: num(&line["Stage Attempt ID"]) as u32,
                task_info: task_from(&line["Task Info"]),
            },
            "SparkListenerTaskEnd" => {
                assert_eq!(line["Task End Reason"]["Reason"], "Success");
                let m = &line["Task Metrics"];
                SparkListenerEvent::TaskEnd {
                    stage_id: num(&line["Stage ID"]) as u32,
                    stage_attempt_id: num(&line["Stage Attempt ID"]) as u32,
                    task_type: text(&line["Task Type"]),
                    reason: TaskEndReason::Success,
                    task_info: task_from(&line["Task Info"]),
                    metrics: Some(TaskMetrics {
                        executor_run_time_ms: metric(m, MEASURED_METRICS[0]),
                        result_size: metric(m, MEASURED_METRICS[1]),
                        shuffle_remote_bytes_read: metric(m, MEASURED_METRICS[2]),
                        shuffle_records_read: metric(m, MEASURED_METRICS[3]),
                        shuffle_bytes_written: metric(m, MEASURED_METRICS[4]),
                        shuffle_records_written: metric(m, MEASURED_METRICS[5]),
                        records_read: metric(m, MEASURED_METRICS[6]),
                    }),
                }
            }
            _ => return None,
        })
    }

    /// Spark's line with what sparkyard cannot carry replaced by what it writes instead (see
    /// DOCUMENTED_DIFFERENCES): no RDD scopes, no accumulables, no log URLs, no JVM, Hadoop,
    /// metrics or classpath environment, zero for the task metrics it does not measure.
    fn expected_from_reference(line: &Value) -> Value {
        fn scrub(v: &mut Value) {
            match v {
                Value::Object(o) => {
                    if o.contains_key("Accumulables") {
                        o.insert("Accumulables".into(), json!([]));
                    }
                    if o.contains_key("RDD ID") {
                        o.shift_remove("Scope");
                    }
                    o.values_mut().for_each(scrub);
                }
                Value::Array(a) => a.iter_mut().for_each(scrub),
                _ => {}
            }
        }
        fn zero_numbers(v: &mut Value, path: &str) {
            match v {
                Value::Object(o) => o.iter_mut().for_each(|(k, v)| zero_numbers(v, &join(path, k))),
                Value::Number(_) if !MEASURED_METRICS.contains(&path) => *v = json!(0),
                _ => {}
            }
        }
        let mut v = line.clone();
        scrub(&mut v);
        match v["Event"].as_str() {
            Some("SparkListenerEnvironmentUpdate") => {
                v["JVM Information"] =
                    json!({"Java Version": JAVA_VERSION_TEXT, "Scala Version": SCALA_VERSION_TEXT});
                for k in ["Hadoop Properties", "Metrics Properties", "Classpath Entries"] {
                    v[k] = json!({});
                }
            }
            Some("SparkListenerExecutorAdded") => v["Executor Info"]["Log Urls"] = json!({}),
            Some("SparkListenerTaskEnd") => zero_numbers(&mut v["Task Metrics"], ""),
            _ => {}
        }
        v
    }

    #[test]
    fn first_difference_names_the_path() {
        assert_eq!(
            first_difference(&json!({"a": [1, {"b": 2}]}), &json!({"a": [1, {"b": 2}]})),
            None
        );
        let d = first_difference(&json!({"a": [1, {"b": 2}]}), &json!({"a": [1, {"b": 3}]})).unwrap();
        assert!(d.starts_with("a[1]/b: ours 2"), "{d}");
        let d = first_difference(&json!({"a": 1, "b": 2}), &json!({"b": 2, "a": 1})).unwrap();
        assert!(d.starts_with(": key #0 is Some(\"a\")"), "{d}");
        let d = first_difference(&json!({"x": 1.0}), &json!({"x": 1})).unwrap();
        assert!(d.contains("(float)") && d.contains("(integer)"), "{d}");
        let d = first_difference(&json!([1]), &json!([1, 2])).unwrap();
        assert!(d.contains("1 elements in ours, 2"), "{d}");
    }

    /// Every line of the log Spark 4.3.0 wrote, rebuilt from sparkyard's events (same ids,
    /// times, names, properties and measured metrics): the same keys in the same order, the same
    /// value types and the same values, except where DOCUMENTED_DIFFERENCES says.
    #[test]
    fn every_reference_line_is_written_back_the_same() {
        let Some(r) = reference() else { return };
        assert_eq!(log_start_json(SPARK_VERSION), r[0]);
        assert_eq!(resource_profile_added_json(1024, 0, 1), r[1]);
        let mut compared = 2;
        for (n, line) in r.iter().enumerate().skip(2) {
            let Some(event) = event_from_reference(line) else {
                assert_eq!(line["Event"], "SparkListenerBlockManagerAdded", "line {}", n + 1);
                continue;
            };
            assert!(should_log(&event));
            let ours = event_to_json(&event);
            if let Some(d) = first_difference(&ours, &expected_from_reference(line)) {
                panic!("line {} ({}): {d}", n + 1, line["Event"]);
            }
            // The text Spark reads back is the same too (serde_json's compact form, as Jackson's).
            let ours_text = ours.to_string();
            assert!(!ours_text.contains('\n'));
            assert_eq!(serde_json::from_str::<Value>(&ours_text).unwrap(), ours);
            compared += 1;
        }
        assert_eq!(
            compared,
            r.len() - 3,
            "all 34 lines but the three BlockManagerAdded"
        );
    }

    // ------------------------------------------------------------------------------- files

    fn read(path: &Path) -> String {
        let mut s = String::new();
        File::open(path).unwrap().read_to_string(&mut s).unwrap();
        s
    }

    /// The fabricated run the History Server check uses: one job, one stage, two tasks.
    pub(super) fn sample_run(app_id: &str) -> Vec<SparkListenerEvent> {
        let t0 = 1_795_000_000_000u64;
        let mut s = stage(Some(t0 + 200), None);
        s.name = "count at SparkyardSample".into();
        let mut t1 = task(0, 0);
        t1.launch_time = t0 + 300;
        let mut t2 = task(1, 0);
        t2.launch_time = t0 + 310;
        t2.executor_id = "1".into();
        let finish = |mut t: TaskInfo, at: u64| {
            t.finish_time = at;
            t
        };
        let metrics = TaskMetrics {
            executor_run_time_ms: 40,
            result_size: 1500,
            records_read: 5,
            ..TaskMetrics::default()
        };
        let mut done = s.clone();
        done.completion_time = Some(t0 + 500);
        vec![
            SparkListenerEvent::EnvironmentUpdate {
                spark_properties: props(&[
                    ("spark.app.name", "SparkyardSample"),
                    ("spark.app.id", app_id),
                    ("spark.master", "yarn"),
                    ("spark.eventLog.enabled", "true"),
                ]),
                system_properties: props(&[("os.name", "Linux")]),
            },
            SparkListenerEvent::ApplicationStart {
                app_name: "SparkyardSample".into(),
                app_id: Some(app_id.into()),
                time: t0,
                user: "sparkyard".into(),
                app_attempt_id: None,
            },
            SparkListenerEvent::ExecutorAdded {
                time: t0 + 50,
                executor_id: "0".into(),
                host: "localhost".into(),
                total_cores: 1,
                resource_profile_id: 0,
            },
            SparkListenerEvent::ExecutorAdded {
                time: t0 + 60,
                executor_id: "1".into(),
                host: "localhost".into(),
                total_cores: 1,
                resource_profile_id: 0,
            },
            SparkListenerEvent::JobStart {
                job_id: 0,
                time: t0 + 100,
                stage_infos: vec![stage(None, None)],
                properties: job_props(),
            },
            SparkListenerEvent::StageSubmitted {
                stage_info: s.clone(),
                properties: job_props(),
            },
            SparkListenerEvent::TaskStart {
                stage_id: 0,
                stage_attempt_id: 0,
                task_info: t1.clone(),
            },
            SparkListenerEvent::TaskStart {
                stage_id: 0,
                stage_attempt_id: 0,
                task_info: t2.clone(),
            },
            SparkListenerEvent::SpeculativeTaskSubmitted {
                stage_id: 0,
                stage_attempt_id: 0,
                task_index: 1,
            },
            SparkListenerEvent::TaskEnd {
                stage_id: 0,
                stage_attempt_id: 0,
                task_type: "ResultTask".into(),
                reason: TaskEndReason::Success,
                task_info: finish(t1, t0 + 400),
                metrics: Some(metrics.clone()),
            },
            SparkListenerEvent::TaskEnd {
                stage_id: 0,
                stage_attempt_id: 0,
                task_type: "ResultTask".into(),
                reason: TaskEndReason::Success,
                task_info: finish(t2, t0 + 450),
                metrics: Some(metrics),
            },
            SparkListenerEvent::StageCompleted { stage_info: done },
            SparkListenerEvent::JobEnd {
                job_id: 0,
                time: t0 + 510,
                result: JobResult::JobSucceeded,
            },
            SparkListenerEvent::ApplicationEnd {
                time: t0 + 600,
                exit_code: Some(0),
            },
        ]
    }

    /// A fabricated run with failures: job 0 fails after an ExceptionFailure, a lost executor,
    /// a retry and a killed task; job 1 (a shuffle map stage and a result stage) fails on a
    /// FetchFailed after a Resubmitted, a TaskResultLost and an UnknownReason.
    fn failure_run(app_id: &str) -> Vec<SparkListenerEvent> {
        let t0 = 1_795_000_100_000u64;
        let start = |mut s: StageInfo, id: u32, at: u64, parents: Vec<u32>| {
            s.stage_id = id;
            s.submission_time = Some(at);
            s.parent_ids = parents;
            s
        };
        let fail = |mut s: StageInfo, at: u64, why: &str| {
            s.completion_time = Some(at);
            s.failure_reason = Some(why.into());
            s
        };
        let attempt = |id: u64, index: u32, attempt: u32, exec: &str, at: u64| {
            let mut t = task(id, 0);
            t.index = index;
            t.partition_id = index;
            t.attempt = attempt;
            t.executor_id = exec.into();
            t.launch_time = at;
            t
        };
        let end = |stage_id: u32, task_type: &str, reason: TaskEndReason, mut t: TaskInfo, at: u64| {
            t.finish_time = at;
            t.failed = !matches!(reason, TaskEndReason::Success | TaskEndReason::TaskKilled { .. });
            t.killed = matches!(reason, TaskEndReason::TaskKilled { .. });
            let metrics = TaskMetrics {
                executor_run_time_ms: 10,
                shuffle_records_written: 5,
                shuffle_bytes_written: 120,
                ..TaskMetrics::default()
            };
            SparkListenerEvent::TaskEnd {
                stage_id,
                stage_attempt_id: 0,
                task_type: task_type.into(),
                reason,
                task_info: t,
                metrics: Some(metrics),
            }
        };
        let begin = |stage_id: u32, t: &TaskInfo| SparkListenerEvent::TaskStart {
            stage_id,
            stage_attempt_id: 0,
            task_info: t.clone(),
        };
        let s0 = start(stage(None, None), 0, t0 + 20, vec![]);
        let s1 = start(stage(None, None), 1, t0 + 220, vec![]);
        let s2 = start(stage(None, None), 2, t0 + 320, vec![1]);
        let (a0, a1, a2, a3) = (
            attempt(0, 0, 0, "0", t0 + 30),
            attempt(1, 1, 0, "1", t0 + 31),
            attempt(2, 0, 1, "0", t0 + 60),
            attempt(3, 1, 1, "0", t0 + 61),
        );
        let (b0, b1, c0, c1) = (
            attempt(4, 0, 0, "0", t0 + 230),
            attempt(5, 1, 0, "0", t0 + 231),
            attempt(6, 0, 0, "0", t0 + 330),
            attempt(7, 1, 0, "0", t0 + 331),
        );
        let boom = TaskEndReason::ExceptionFailure {
            class_name: "java.lang.RuntimeException".into(),
            description: "boom".into(),
            stack_trace: vec!["org.example.Job.run(Job.scala:12)".into()],
        };
        let lost = TaskEndReason::ExecutorLostFailure {
            executor_id: "1".into(),
            exit_caused_by_app: false,
            reason: Some("Container killed by YARN".into()),
        };
        let fetch = TaskEndReason::FetchFailed {
            executor_id: Some("0".into()),
            host: Some("localhost".into()),
            shuffle_id: 0,
            map_id: 4,
            map_index: 0,
            reduce_id: 1,
            message: "Connection refused".into(),
        };
        let mut run = sample_run(app_id);
        run.truncate(4); // environment, application start, two executors
        run.extend([
            SparkListenerEvent::JobStart {
                job_id: 0,
                time: t0 + 10,
                stage_infos: vec![s0.clone()],
                properties: job_props(),
            },
            SparkListenerEvent::StageSubmitted {
                stage_info: s0.clone(),
                properties: job_props(),
            },
            begin(0, &a0),
            begin(0, &a1),
            end(0, "ResultTask", boom, a0, t0 + 40),
            SparkListenerEvent::ExecutorRemoved {
                time: t0 + 45,
                executor_id: "1".into(),
                reason: "Container killed by YARN".into(),
            },
            end(0, "ResultTask", lost, a1, t0 + 46),
            begin(0, &a2),
            begin(0, &a3),
            end(0, "ResultTask", TaskEndReason::Success, a2, t0 + 80),
            end(
                0,
                "ResultTask",
                TaskEndReason::TaskKilled {
                    reason: "Stage cancelled".into(),
                },
                a3,
                t0 + 90,
            ),
            SparkListenerEvent::StageCompleted {
                stage_info: fail(s0, t0 + 95, "Job 0 cancelled"),
            },
            SparkListenerEvent::JobEnd {
                job_id: 0,
                time: t0 + 96,
                result: JobResult::JobFailed {
                    message: "Job 0 cancelled".into(),
                },
            },
            SparkListenerEvent::JobStart {
                job_id: 1,
                time: t0 + 200,
                stage_infos: vec![s1.clone(), s2.clone()],
                properties: job_props(),
            },
            SparkListenerEvent::StageSubmitted {
                stage_info: s1.clone(),
                properties: job_props(),
            },
            begin(1, &b0),
            begin(1, &b1),
            end(1, "ShuffleMapTask", TaskEndReason::Success, b0.clone(), t0 + 260),
            end(1, "ShuffleMapTask", TaskEndReason::TaskResultLost, b1, t0 + 261),
            end(1, "ShuffleMapTask", TaskEndReason::Resubmitted, b0, t0 + 262),
            SparkListenerEvent::StageCompleted {
                stage_info: {
                    let mut s = s1;
                    s.completion_time = Some(t0 + 300);
                    s
                },
            },
            SparkListenerEvent::StageSubmitted {
                stage_info: s2.clone(),
                properties: job_props(),
            },
            begin(2, &c0),
            begin(2, &c1),
            end(2, "ResultTask", fetch, c0, t0 + 340),
            end(2, "ResultTask", TaskEndReason::UnknownReason, c1, t0 + 341),
            SparkListenerEvent::StageCompleted {
                stage_info: fail(s2, t0 + 350, "FetchFailed: Connection refused"),
            },
            SparkListenerEvent::JobEnd {
                job_id: 1,
                time: t0 + 351,
                result: JobResult::JobFailed {
                    message: "Job aborted due to stage failure".into(),
                },
            },
            SparkListenerEvent::ApplicationEnd {
                time: t0 + 400,
                exit_code: Some(1),
            },
        ]);
        run
    }

    fn path_str(p: &Path) -> String {
        p.to_str().expect("temporary paths are UTF-8").to_string()
    }

    /// Writes the run as a complete log of `app_id` (with the ResourceProfileAdded line Spark
    /// writes second), replacing an earlier one.
    fn write_log(dir: &Path, app_id: &str, run: &[SparkListenerEvent]) -> Result<PathBuf, String> {
        let mut w = EventLogWriter::create(&path_str(dir), app_id, None, true)?;
        w.write_json(&resource_profile_added_json(1024, 1, 1))?;
        for ev in run {
            w.write(ev)?;
        }
        w.stop()
    }

    #[test]
    fn sample_logs_are_complete_json_lines() {
        let dir = tempfile::tempdir().unwrap();
        let ok = write_log(
            dir.path(),
            "sparkyard-sample-0001",
            &sample_run("sparkyard-sample-0001"),
        )
        .unwrap();
        assert_eq!(ok, dir.path().join("sparkyard-sample-0001"));
        let text = read(&ok);
        assert!(text.ends_with('\n'));
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines[0], log_start_json(SPARK_VERSION));
        assert_eq!(lines[1]["Event"], "SparkListenerResourceProfileAdded");
        assert_eq!(
            lines.len(),
            2 + sample_run("x").len() - 1,
            "all but the speculative event"
        );
        assert!(!text.contains("SpeculativeTaskSubmitted"));
        assert_eq!(lines.last().unwrap()["Event"], "SparkListenerApplicationEnd");
        let failed = write_log(
            dir.path(),
            "sparkyard-sample-0002",
            &failure_run("sparkyard-sample-0002"),
        )
        .unwrap();
        let failures = read(&failed);
        assert_eq!(failures.lines().count(), 2 + failure_run("x").len());
        for reason in [
            "ExceptionFailure",
            "ExecutorLostFailure",
            "TaskKilled",
            "TaskResultLost",
            "Resubmitted",
            "FetchFailed",
            "UnknownReason",
            "JobFailed",
            "SparkListenerExecutorRemoved",
        ] {
            assert!(failures.contains(&format!("\"{reason}\"")), "{reason}");
        }
    }

    /// Writes logs for scripts/check-history-server.sh into $SPARKYARD_EVENT_LOG_CHECK_DIR
    /// (default /tmp/sparkyard-eventlog-check): a completed run (one job, one stage, two tasks),
    /// a completed run with failures (two failed jobs, every task end reason, a lost executor)
    /// and a run still in progress (`.inprogress`: its job still running). Run with
    /// `cargo test write_history_server_check_logs -- --ignored --nocapture`.
    #[test]
    #[ignore = "writes into /tmp for scripts/check-history-server.sh"]
    fn write_history_server_check_logs() {
        let dir = std::env::var("SPARKYARD_EVENT_LOG_CHECK_DIR")
            .unwrap_or_else(|_| "/tmp/sparkyard-eventlog-check".to_string());
        std::fs::create_dir_all(&dir).unwrap();
        let dir = Path::new(&dir);
        for (app_id, run) in [
            (
                "application_1795000000000_0001",
                sample_run("application_1795000000000_0001"),
            ),
            (
                "application_1795000000000_0002",
                failure_run("application_1795000000000_0002"),
            ),
        ] {
            let path = write_log(dir, app_id, &run).unwrap();
            println!("completed event log: {}", path.display());
        }
        // A live application: everything up to its tasks' start, not stopped.
        let app_id = "application_1795000000000_0003";
        let mut run = sample_run(app_id);
        run.truncate(8);
        for ev in &mut run {
            if let SparkListenerEvent::ApplicationStart { app_attempt_id, .. } = ev {
                *app_attempt_id = Some("1".into());
            }
        }
        let mut w = EventLogWriter::create(&path_str(dir), app_id, Some("1"), true).unwrap();
        w.write_json(&resource_profile_added_json(1024, 1, 1)).unwrap();
        for ev in &run {
            w.write(ev).unwrap();
        }
        println!("in-progress event log: {}", w.in_progress_path().display());
    }

    #[test]
    fn file_names_follow_spark() {
        assert_eq!(
            log_file_name("application_1700000000000_0001", None),
            "application_1700000000000_0001"
        );
        assert_eq!(
            log_file_name("application_1700000000000_0001", Some("1")),
            "application_1700000000000_0001_1"
        );
        // Utils.sanitizeDirName: [ :/] -> '-', [.${}'"] -> '_', then lower case.
        assert_eq!(
            log_file_name("My App: x/y.z$'\"{}", Some("A.1")),
            "my-app--x-y_z______a_1"
        );
    }

    #[test]
    fn writer_uses_inprogress_then_renames() {
        let dir = tempfile::tempdir().unwrap();
        let mut w =
            EventLogWriter::create(&path_str(dir.path()), "application_1_0001", Some("2"), false).unwrap();
        let in_progress = dir.path().join("application_1_0001_2.inprogress");
        assert_eq!(w.in_progress_path(), in_progress);
        assert_eq!(w.final_path(), dir.path().join("application_1_0001_2"));
        // The LogStart line is there, complete, before any event.
        assert_eq!(read(&in_progress), format!("{}\n", log_start_json(SPARK_VERSION)));
        assert!(!w.final_path().exists());
        for ev in sample_run("application_1_0001") {
            let before = read(&in_progress).len();
            w.write(&ev).unwrap();
            let text = read(&in_progress);
            assert!(text.ends_with('\n'), "every write leaves complete lines");
            assert_eq!(
                text.len() > before,
                should_log(&ev),
                "each logged event is on disk at once"
            );
            assert!(text.lines().all(|l| serde_json::from_str::<Value>(l).is_ok()));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&in_progress).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o660);
        }
        let done = w.stop().unwrap();
        assert_eq!(done, dir.path().join("application_1_0001_2"));
        assert!(done.is_file());
        assert!(!in_progress.exists());
        let text = read(&done);
        assert_eq!(text.lines().count(), 1 + sample_run("x").len() - 1);
    }

    #[test]
    fn an_existing_completed_log_is_refused_unless_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let d = path_str(dir.path());
        let existing = dir.path().join("app-1");
        std::fs::write(&existing, "old\n").unwrap();
        let expected = format!("Target log file already exists (file:{})", existing.display());
        // Refused up front, before anything is written.
        assert_eq!(
            EventLogWriter::create(&d, "app-1", None, false).unwrap_err(),
            expected
        );
        assert!(!dir.path().join("app-1.inprogress").exists());
        // And at stop, when the completed log appeared while the application ran (as in Spark,
        // the events then stay in .inprogress).
        std::fs::remove_file(&existing).unwrap();
        let w = EventLogWriter::create(&d, "app-1", None, false).unwrap();
        std::fs::write(&existing, "old\n").unwrap();
        assert_eq!(w.stop().unwrap_err(), expected);
        assert_eq!(read(&existing), "old\n");
        assert!(dir.path().join("app-1.inprogress").is_file());
        // With overwrite the new log replaces it.
        let w = EventLogWriter::create(&d, "app-1", None, true).unwrap();
        assert_eq!(w.stop().unwrap(), existing);
        assert_eq!(read(&existing), format!("{}\n", log_start_json(SPARK_VERSION)));
        assert!(!dir.path().join("app-1.inprogress").exists());
    }

    #[test]
    fn a_stale_inprogress_file_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("app-2.inprogress"),
            "garbage that is longer than a line\n".repeat(9),
        )
        .unwrap();
        for overwrite in [false, true] {
            let w = EventLogWriter::create(&path_str(dir.path()), "app-2", None, overwrite).unwrap();
            assert_eq!(
                read(w.in_progress_path()),
                format!("{}\n", log_start_json(SPARK_VERSION))
            );
        }
    }

    #[test]
    fn directory_errors_use_sparks_messages() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no-such-dir");
        // What Spark 4.3.0 says for spark.eventLog.dir=file:/x or /x when /x does not exist.
        let expected = format!("File file:{} does not exist", missing.display());
        assert_eq!(
            EventLogWriter::create(&path_str(&missing), "app", None, false).unwrap_err(),
            expected
        );
        let uri = format!("file:{}", missing.display());
        assert_eq!(
            EventLogWriter::create(&uri, "app", None, false).unwrap_err(),
            expected
        );
        let file = dir.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        assert_eq!(
            EventLogWriter::create(&path_str(&file), "app", None, false).unwrap_err(),
            format!("Log directory file:{} is not a directory.", file.display())
        );
        for remote in ["hdfs://nn:8020/spark-logs", "s3a://bucket/logs", "HDFS:/x"] {
            let err = EventLogWriter::create(remote, "app", None, false).unwrap_err();
            assert!(
                err.contains(remote) && err.contains("local files only") && !err.contains('\n'),
                "{err}"
            );
        }
        let err = EventLogWriter::create(&path_str(dir.path()), "", None, false).unwrap_err();
        assert!(err.contains(&dir.path().display().to_string()), "{err}");
        let err = EventLogWriter::create(&path_str(dir.path()), "app", Some(""), false).unwrap_err();
        assert!(err.contains("attempt id is empty"), "{err}");
        assert!(EventLogWriter::create("", "app", None, false).is_err());
        assert!(EventLogWriter::create("  ", "app", None, false).is_err());
    }

    #[test]
    fn file_uris_name_local_directories() {
        let dir = tempfile::tempdir().unwrap();
        let spaced = dir.path().join("a b");
        std::fs::create_dir(&spaced).unwrap();
        let d = dir.path().display().to_string();
        for uri in [
            format!("file:{d}"),
            format!("file://{d}"),
            format!("file://localhost{d}/"),
            format!("FILE:{d}"),
        ] {
            assert_eq!(resolve_log_dir(&uri).unwrap(), dir.path(), "{uri}");
        }
        assert_eq!(resolve_log_dir(&format!("file:{d}/a%20b")).unwrap(), spaced);
        let w = EventLogWriter::create(&format!("file://{d}"), "app-3", None, false).unwrap();
        assert_eq!(w.stop().unwrap(), dir.path().join("app-3"));
        assert!(resolve_log_dir("file://otherhost/x").is_err());
        assert!(resolve_log_dir("file:relative").is_err());
        assert!(resolve_log_dir("file:/x%zz").is_err());
        assert!(resolve_log_dir("file:/x%+1").is_err());
        assert!(resolve_log_dir("file:/x%").is_err());
        assert!(resolve_log_dir("file:/x%c3%28").is_err(), "not UTF-8");
        assert!(resolve_log_dir("").is_err());
        // A plain path with a colon further on is still a path; a relative one is made absolute.
        assert_eq!(resolve_log_dir("/tmp/a:b").unwrap(), Path::new("/tmp/a:b"));
        assert!(resolve_log_dir("logs").unwrap().is_absolute());
    }

    #[test]
    fn write_json_refuses_non_events_and_a_failed_write_leaves_complete_lines() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = EventLogWriter::create(&path_str(dir.path()), "app-4", None, false).unwrap();
        assert!(w.write_json(&json!([1, 2])).is_err());
        assert!(w.write_json(&json!({"Event": 3})).is_err());
        // Make writes fail: swap in a read-only handle on the same file.
        let read_only = File::open(w.in_progress_path()).unwrap();
        let good = std::mem::replace(&mut w.file, read_only);
        let err = w
            .write(&SparkListenerEvent::ApplicationEnd {
                time: 1,
                exit_code: None,
            })
            .unwrap_err();
        assert!(
            err.starts_with("Cannot write SparkListenerApplicationEnd to event log file:"),
            "{err}"
        );
        assert!(err.contains("app-4.inprogress") && !err.contains('\n'), "{err}");
        w.file = good;
        w.write(&SparkListenerEvent::ApplicationEnd {
            time: 2,
            exit_code: Some(0),
        })
        .unwrap();
        let text = read(w.in_progress_path());
        assert_eq!(text.lines().count(), 2);
        assert!(text.lines().all(|l| serde_json::from_str::<Value>(l).is_ok()));
    }

    #[test]
    fn a_vanished_inprogress_file_fails_stop_with_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let w = EventLogWriter::create(&path_str(dir.path()), "app-5", None, false).unwrap();
        std::fs::remove_file(w.in_progress_path()).unwrap();
        let err = w.stop().unwrap_err();
        assert!(
            err.starts_with("Cannot rename event log file:") && !err.contains('\n'),
            "{err}"
        );
    }
}
