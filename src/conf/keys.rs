//! The known configuration keys: Spark's keys that the control plane reads (with Spark's
//! names, defaults and value checks), the YARN keys of `yarn-site.conf` (with YARN's
//! defaults), and sparkyard's own `spark.sparkyard.*` runtime keys.
//!
//! Layer: conf (above the runtime).
//!
//! Constants are named after Spark's Scala constants where Spark has one (`EXECUTOR_CORES`,
//! `RPC_ASK_TIMEOUT`, ...) and after Hadoop's `YarnConfiguration` constants for YARN keys.
//! Every constant is also listed in [`known_keys`], which `SparkConf::validate` and key
//! listings use; the one `keys!` invocation below defines both, so they cannot drift apart.

use std::sync::OnceLock;
use std::time::Duration;

use super::entry::{
    AnyEntry, BoolKind, ConfEntry, EnumKind, FloatKind, HostPortKind, IntKind, KeyInfo, ListKind, OptEntry,
    PatternEntry, SizeKind, StrKind, TimeKind,
};
use super::parse::{SizeUnit, TimeUnit};

/// A time with a default.
pub type TimeEntry = ConfEntry<TimeKind>;
/// A time without a default.
pub type OptTimeEntry = OptEntry<TimeKind>;
/// A byte size (read as bytes) with a default.
pub type SizeEntry = ConfEntry<SizeKind>;
/// A byte size without a default.
pub type OptSizeEntry = OptEntry<SizeKind>;
/// A boolean with a default.
pub type BoolEntry = ConfEntry<BoolKind>;
/// A boolean without a default.
pub type OptBoolEntry = OptEntry<BoolKind>;
/// A `u16` with a default.
pub type U16Entry = ConfEntry<IntKind<u16>>;
/// A `u32` with a default.
pub type U32Entry = ConfEntry<IntKind<u32>>;
/// A `u32` without a default.
pub type OptU32Entry = OptEntry<IntKind<u32>>;
/// A `u64` with a default.
pub type U64Entry = ConfEntry<IntKind<u64>>;
/// A `u64` without a default.
pub type OptU64Entry = OptEntry<IntKind<u64>>;
/// A decimal number with a default.
pub type F64Entry = ConfEntry<FloatKind>;
/// A string with a default.
pub type StrEntry = ConfEntry<StrKind>;
/// A string without a default.
pub type OptStrEntry = OptEntry<StrKind>;
/// One of a fixed set of words, with a default.
pub type EnumEntry = ConfEntry<EnumKind>;
/// A comma list with a default.
pub type ListEntry = ConfEntry<ListKind>;
/// A comma list without a default.
pub type OptListEntry = OptEntry<ListKind>;
/// A `host:port` address with a default.
pub type HostPortEntry = ConfEntry<HostPortKind>;

const MS: TimeKind = TimeKind::new(TimeUnit::Milliseconds);
const SECS: TimeKind = TimeKind::new(TimeUnit::Seconds);
/// sparkyard's own times: Spark syntax (bare numbers in ms) plus humantime durations.
const HUMANE_MS: TimeKind = TimeKind::humane(TimeUnit::Milliseconds);
const BYTES: SizeKind = SizeKind::new(SizeUnit::Byte);
const MIB: SizeKind = SizeKind::new(SizeUnit::MiB);

const ONE_MIB: u64 = 1 << 20;
/// Spark's `ByteArrayMethods.MAX_ROUNDED_ARRAY_LENGTH` (`Integer.MAX_VALUE - 15`).
const MAX_ROUNDED_ARRAY_LENGTH: u64 = i32::MAX as u64 - 15;
/// Spark's `RpcUtils.MAX_MESSAGE_SIZE_IN_MB` (`Int.MaxValue / 1024 / 1024` = 2047 MiB).
const MAX_RPC_MESSAGE_BYTES: u64 = (i32::MAX as u64 / 1024 / 1024) * ONE_MIB;

fn at_least_one(v: &u32) -> bool {
    *v >= 1
}
fn u64_at_least_one(v: &u64) -> bool {
    *v >= 1
}
fn positive_time(d: &Duration) -> bool {
    !d.is_zero()
}
fn at_least_one_mib(b: &u64) -> bool {
    *b >= ONE_MIB
}
fn non_negative(v: &f64) -> bool {
    *v >= 0.0
}
fn positive_fraction(v: &f64) -> bool {
    *v > 0.0 && *v <= 1.0
}
#[allow(clippy::ptr_arg)] // a check takes the key's value type
fn is_regex(v: &String) -> bool {
    super::redact::is_valid_pattern(v)
}

/// Defines the key statics (documentation once, used both as rustdoc and as the key's listed
/// doc) and the registry slice holding every one of them.
macro_rules! keys {
    ($( $(#[doc = $doc:literal])+ $name:ident : $ty:ty = $init:expr; )*) => {
        $(
            $(#[doc = $doc])+
            pub static $name: $ty = $init.with_doc(concat!($($doc, "\n"),+));
        )*

        /// Every single (non-pattern) key, in declaration order.
        static SINGLE_KEYS: &[&dyn AnyEntry] = &[$(&$name),*];
    };
}

keys! {
    // ---------------------------------------------------------------- submission

    /// Cluster manager URL. spark-submit applies `local[*]` when neither `--master`, this key
    /// nor the `MASTER` environment variable is set; sparkyard runs applications on YARN, so
    /// submissions use `yarn`.
    SPARK_MASTER: OptStrEntry =
        OptEntry::new("spark.master", StrKind, "(none; spark-submit uses local[*])");

    /// Where the driver runs: `client` (in the submitting process) or `cluster` (inside the
    /// ApplicationMaster's container).
    SUBMIT_DEPLOY_MODE: EnumEntry = ConfEntry::new(
        "spark.submit.deployMode",
        EnumKind::exact(&["client", "cluster"]),
        "client",
    );

    /// Application name. When unset spark-submit derives it (main class, then primary
    /// resource file name) and the YARN Client falls back to `Spark`.
    APP_NAME: OptStrEntry =
        OptEntry::new("spark.app.name", StrKind, "(derived by spark-submit; Spark in the Client)");

    /// Application id, set by the driver at run time (executors receive it too).
    APP_ID: OptStrEntry = OptEntry::new("spark.app.id", StrKind, "(set at run time)");

    /// Application attempt id assigned by YARN, set at run time in cluster mode.
    APP_ATTEMPT_ID: OptStrEntry =
        OptEntry::new("spark.app.attempt.id", StrKind, "(set at run time)");

    /// YARN application id, set by the ApplicationMaster at run time in cluster mode.
    YARN_APP_ID: OptStrEntry = OptEntry::new("spark.yarn.app.id", StrKind, "(set at run time)");

    /// Log directory of a YARN container, passed to executors at launch
    /// (`-Dspark.yarn.app.container.log.dir=<LOG_DIR>`).
    YARN_CONTAINER_LOG_DIR: OptStrEntry =
        OptEntry::new("spark.yarn.app.container.log.dir", StrKind, "(set at run time)");

    /// Executor id, set in each executor's configuration at run time (`driver` on the driver).
    EXECUTOR_ID: OptStrEntry = OptEntry::new("spark.executor.id", StrKind, "(set at run time)");

    /// Jars for the application; on YARN they are distributed through the staging directory
    /// and removed from the conf before the Client runs.
    JARS: ListEntry = ConfEntry::new("spark.jars", ListKind, "");

    /// Files for the application (same handling as `spark.jars`).
    FILES: ListEntry = ConfEntry::new("spark.files", ListKind, "");

    /// Jars shipped to the YARN containers (`--jars` is merged into it).
    JARS_TO_DISTRIBUTE: ListEntry = ConfEntry::new("spark.yarn.dist.jars", ListKind, "");

    /// Files shipped to the YARN containers (`--files`).
    FILES_TO_DISTRIBUTE: ListEntry = ConfEntry::new("spark.yarn.dist.files", ListKind, "");

    /// Archives shipped to and unpacked in the YARN containers (`--archives`).
    ARCHIVES_TO_DISTRIBUTE: ListEntry = ConfEntry::new("spark.yarn.dist.archives", ListKind, "");

    /// Python files shipped to the YARN containers (`--py-files`).
    PY_FILES: ListEntry = ConfEntry::new("spark.yarn.dist.pyFiles", ListKind, "");

    /// Restart the driver on failure; only honoured by Spark's standalone cluster mode and
    /// ignored on YARN.
    DRIVER_SUPERVISE: BoolEntry = ConfEntry::new("spark.driver.supervise", BoolKind, "false");

    /// Kerberos principal (`--principal`).
    PRINCIPAL: OptStrEntry = OptEntry::new("spark.kerberos.principal", StrKind, "(none)")
        .alternatives(&["spark.yarn.principal"]);

    /// Kerberos keytab file (`--keytab`).
    KEYTAB: OptStrEntry = OptEntry::new("spark.kerberos.keytab", StrKind, "(none)")
        .alternatives(&["spark.yarn.keytab"]);

    // ---------------------------------------------------------------- driver and executors

    /// Address the driver's endpoints listen on; Spark's default is the local host name,
    /// applied at run time.
    DRIVER_HOST_ADDRESS: OptStrEntry =
        OptEntry::new("spark.driver.host", StrKind, "(local host name)");

    /// Port of the driver's endpoints; 0 picks a free port.
    DRIVER_PORT: U16Entry = ConfEntry::new("spark.driver.port", IntKind::new(), "0");

    /// Port of the driver's web UI; 0 picks a free port (the AM sets 0 in cluster mode).
    UI_PORT: U16Entry = ConfEntry::new("spark.ui.port", IntKind::new(), "4040");

    /// Whether the driver serves a web UI; when false the AM may register the History Server
    /// URL as tracking URL (see `spark.yarn.historyServer.allowTracking`).
    UI_ENABLED: BoolEntry = ConfEntry::new("spark.ui.enabled", BoolKind, "true");

    /// Memory of the driver process (in cluster mode: the AM container's heap). Bare
    /// numbers are MiB.
    DRIVER_MEMORY: SizeEntry = ConfEntry::new("spark.driver.memory", MIB, "1g")
        .check(at_least_one_mib, "must be at least 1m");

    /// Cores of the driver process; in cluster mode the vcores of the AM container.
    DRIVER_CORES: U32Entry = ConfEntry::new("spark.driver.cores", IntKind::new(), "1")
        .check(at_least_one, "must be at least 1");

    /// Non-heap memory added to the driver container in cluster mode; unset means
    /// max(factor x memory, minimum). Bare numbers are MiB.
    DRIVER_MEMORY_OVERHEAD: OptSizeEntry =
        OptEntry::new("spark.driver.memoryOverhead", MIB, "(max(factor x memory, minimum))")
            .alternatives(&["spark.yarn.driver.memoryOverhead"]);

    /// Fraction of driver memory added as overhead when the overhead is not set explicitly.
    DRIVER_MEMORY_OVERHEAD_FACTOR: F64Entry =
        ConfEntry::new("spark.driver.memoryOverheadFactor", FloatKind, "0.1")
            .check(|v| *v > 0.0, "must be greater than 0");

    /// Smallest driver overhead when it is computed from the factor. Bare numbers are MiB.
    DRIVER_MIN_MEMORY_OVERHEAD: SizeEntry =
        ConfEntry::new("spark.driver.minMemoryOverhead", MIB, "384m");

    /// Extra JVM options of the driver, passed through into the AM launch command.
    DRIVER_JAVA_OPTIONS: OptStrEntry =
        OptEntry::new("spark.driver.extraJavaOptions", StrKind, "(none)");

    /// Number of executors for static allocation. When unset the YARN backend requests 2
    /// (`DEFAULT_NUMBER_EXECUTORS`); callers apply that fallback.
    EXECUTOR_INSTANCES: OptU32Entry =
        OptEntry::new("spark.executor.instances", IntKind::new(), "(none; YARN uses 2)");

    /// Cores of each executor (YARN default 1).
    EXECUTOR_CORES: U32Entry = ConfEntry::new("spark.executor.cores", IntKind::new(), "1")
        .check(at_least_one, "must be at least 1");

    /// Heap memory of each executor. Bare numbers are MiB.
    EXECUTOR_MEMORY: SizeEntry = ConfEntry::new("spark.executor.memory", MIB, "1g")
        .check(at_least_one_mib, "must be at least 1m");

    /// Non-heap memory added to each executor container; unset means
    /// max(factor x memory, minimum). Bare numbers are MiB.
    EXECUTOR_MEMORY_OVERHEAD: OptSizeEntry =
        OptEntry::new("spark.executor.memoryOverhead", MIB, "(max(factor x memory, minimum))")
            .alternatives(&["spark.yarn.executor.memoryOverhead"]);

    /// Fraction of executor memory added as overhead when the overhead is not set explicitly.
    EXECUTOR_MEMORY_OVERHEAD_FACTOR: F64Entry =
        ConfEntry::new("spark.executor.memoryOverheadFactor", FloatKind, "0.1")
            .check(|v| *v > 0.0, "must be greater than 0");

    /// Smallest executor overhead when it is computed from the factor. Bare numbers are MiB.
    EXECUTOR_MIN_MEMORY_OVERHEAD: SizeEntry =
        ConfEntry::new("spark.executor.minMemoryOverhead", MIB, "384m");

    /// Whether executors use off-heap memory; on YARN its size is added to each executor
    /// container (and must then be more than 0).
    MEMORY_OFFHEAP_ENABLED: BoolEntry = ConfEntry::new("spark.memory.offHeap.enabled", BoolKind, "false")
        .alternatives(&["spark.unsafe.offHeap"]);

    /// Off-heap memory of each executor, added to its container when
    /// `spark.memory.offHeap.enabled` is true. Bare numbers are bytes.
    MEMORY_OFFHEAP_SIZE: SizeEntry = ConfEntry::new("spark.memory.offHeap.size", BYTES, "0");

    /// Memory of each executor's Python workers, added to its container for a Python
    /// application (`spark.yarn.isPython`). Bare numbers are MiB.
    PYSPARK_EXECUTOR_MEMORY: OptSizeEntry =
        OptEntry::new("spark.executor.pyspark.memory", MIB, "(none)");

    /// Set by spark-submit for a Python primary resource (internal).
    IS_PYTHON_APP: BoolEntry = ConfEntry::new("spark.yarn.isPython", BoolKind, "false");

    /// Extra JVM options of executors, passed through into the executor launch command.
    EXECUTOR_JAVA_OPTIONS: OptStrEntry =
        OptEntry::new("spark.executor.extraJavaOptions", StrKind, "(none)");

    /// Cores each task uses; an executor runs cores / task.cpus tasks at once.
    CPUS_PER_TASK: U32Entry = ConfEntry::new("spark.task.cpus", IntKind::new(), "1")
        .check(at_least_one, "must be at least 1");

    /// Period of executor heartbeats to the driver's HeartbeatReceiver. Bare numbers are
    /// milliseconds; must stay below `spark.network.timeout`.
    EXECUTOR_HEARTBEAT_INTERVAL: TimeEntry =
        ConfEntry::new("spark.executor.heartbeatInterval", MS, "10s")
            .check(positive_time, "must be greater than 0");

    /// Consecutive failed heartbeats after which an executor exits with code 56 (internal
    /// in Spark).
    EXECUTOR_HEARTBEAT_MAX_FAILURES: U32Entry =
        ConfEntry::new("spark.executor.heartbeat.maxFailures", IntKind::new(), "60")
            .check(at_least_one, "must be at least 1");

    /// Executor failures after which the AM fails the application (exit 11). When unset:
    /// max(3, 2 x the target executor count: maxExecutors with dynamic allocation, else
    /// `spark.executor.instances` or 0).
    MAX_EXECUTOR_FAILURES: OptU32Entry =
        OptEntry::new("spark.executor.maxNumFailures", IntKind::new(), "(max(3, 2 x executors))")
            .alternatives(&["spark.yarn.max.executor.failures"]);

    /// Window after which executor failures no longer count toward the cap; unset means
    /// they never expire. Bare numbers are milliseconds.
    EXECUTOR_ATTEMPT_FAILURE_VALIDITY_INTERVAL_MS: OptTimeEntry =
        OptEntry::new("spark.executor.failuresValidityInterval", MS, "(never expire)")
            .alternatives(&["spark.yarn.executor.failuresValidityInterval"]);

    /// Whether executors are decommissioned gracefully instead of killed (also by dynamic
    /// allocation).
    DECOMMISSION_ENABLED: BoolEntry =
        ConfEntry::new("spark.decommission.enabled", BoolKind, "false");

    /// Time after which an outside service is expected to kill a decommissioned executor;
    /// used to speculate its tasks. Bare numbers are seconds.
    EXECUTOR_DECOMMISSION_KILL_INTERVAL: OptTimeEntry =
        OptEntry::new("spark.executor.decommission.killInterval", SECS, "(none)");

    /// Time after which Spark forces a decommissioning executor to exit. Bare numbers are
    /// seconds.
    EXECUTOR_DECOMMISSION_FORCE_KILL_TIMEOUT: OptTimeEntry =
        OptEntry::new("spark.executor.decommission.forceKillTimeout", SECS, "(none)");

    /// Spark's internal test setting: how long a decommissioned executor waits before it
    /// first checks whether it can exit (milliseconds).
    EXECUTOR_DECOMMISSION_INITIAL_SLEEP_MS: U64Entry =
        ConfEntry::new("spark.test.executor.decommission.initial.sleep.millis", IntKind::new(), "1000");

    // ---------------------------------------------------------------- task scheduling

    /// Attempts of one task before its task set (and so the job) is aborted.
    TASK_MAX_FAILURES: U32Entry = ConfEntry::new("spark.task.maxFailures", IntKind::new(), "4")
        .check(at_least_one, "must be at least 1");

    /// Task results up to this size go back to the driver inside the status update; larger
    /// ones go through the block manager. Bare numbers are bytes.
    TASK_MAX_DIRECT_RESULT_SIZE: SizeEntry =
        ConfEntry::new("spark.task.maxDirectResultSize", BYTES, "1m")
            .check(|b| *b < MAX_ROUNDED_ARRAY_LENGTH, "must be less than 2g");

    /// Limit on the total size of serialized results of one task set's result tasks; 0 means
    /// unlimited. Bare numbers are bytes.
    MAX_RESULT_SIZE: SizeEntry = ConfEntry::new("spark.driver.maxResultSize", BYTES, "1g");

    /// Base wait before giving up on a locality level (delay scheduling). Bare numbers are
    /// milliseconds.
    LOCALITY_WAIT: TimeEntry = ConfEntry::new("spark.locality.wait", MS, "3s");

    /// Wait at PROCESS_LOCAL; defaults to `spark.locality.wait`.
    LOCALITY_WAIT_PROCESS: TimeEntry =
        ConfEntry::fallback("spark.locality.wait.process", MS, &LOCALITY_WAIT);

    /// Wait at NODE_LOCAL; defaults to `spark.locality.wait`.
    LOCALITY_WAIT_NODE: TimeEntry =
        ConfEntry::fallback("spark.locality.wait.node", MS, &LOCALITY_WAIT);

    /// Wait at RACK_LOCAL; defaults to `spark.locality.wait`.
    LOCALITY_WAIT_RACK: TimeEntry =
        ConfEntry::fallback("spark.locality.wait.rack", MS, &LOCALITY_WAIT);

    /// Legacy delay scheduling: reset the locality timer on every task launch.
    LEGACY_LOCALITY_WAIT_RESET: BoolEntry =
        ConfEntry::new("spark.locality.wait.legacyResetOnTaskLaunch", BoolKind, "false");

    /// Whether slow tasks are speculatively re-launched.
    SPECULATION_ENABLED: BoolEntry = ConfEntry::new("spark.speculation", BoolKind, "false");

    /// Period of the speculation check. Bare numbers are milliseconds.
    SPECULATION_INTERVAL: TimeEntry = ConfEntry::new("spark.speculation.interval", MS, "100ms")
        .check(positive_time, "must be greater than 0");

    /// A task is speculatable when it runs longer than this many times the median
    /// successful duration.
    SPECULATION_MULTIPLIER: F64Entry =
        ConfEntry::new("spark.speculation.multiplier", FloatKind, "3")
            .check(non_negative, "must be at least 0");

    /// Fraction of a stage's tasks that must be finished before speculation starts.
    /// Spark checks no range: at 1 (or more) no task set ever has enough successes while a
    /// task still runs, so only `spark.speculation.task.duration.threshold` speculates.
    SPECULATION_QUANTILE: F64Entry = ConfEntry::new("spark.speculation.quantile", FloatKind, "0.9");

    /// Minimum run time before a task is considered for speculation. Bare numbers are
    /// milliseconds.
    SPECULATION_MIN_THRESHOLD: TimeEntry =
        ConfEntry::new("spark.speculation.minTaskRuntime", MS, "100ms");

    /// Absolute run time after which tasks of small stages (no more tasks than one executor's
    /// slots) are speculated. Bare numbers are milliseconds.
    SPECULATION_TASK_DURATION_THRESHOLD: OptTimeEntry =
        OptEntry::new("spark.speculation.task.duration.threshold", MS, "(none)");

    /// Only speculate tasks that are inefficient (slow data rate or very long run time).
    SPECULATION_EFFICIENCY_ENABLE: BoolEntry =
        ConfEntry::new("spark.speculation.efficiency.enabled", BoolKind, "true");

    /// A task is inefficient when its data rate is below the stage average times this.
    SPECULATION_EFFICIENCY_TASK_PROCESS_RATE_MULTIPLIER: F64Entry =
        ConfEntry::new("spark.speculation.efficiency.processRateMultiplier", FloatKind, "0.75")
            .check(positive_fraction, "must be greater than 0 and at most 1");

    /// A task is speculated anyway once it runs longer than this factor times the threshold.
    SPECULATION_EFFICIENCY_TASK_DURATION_FACTOR: F64Entry =
        ConfEntry::new("spark.speculation.efficiency.longRunTaskFactor", FloatKind, "2.0")
            .check(|v| *v >= 1.0, "must be at least 1");

    /// Period of the driver's self-sent ReviveOffers. Spark leaves the key unset and uses
    /// 1s in code. Bare numbers are milliseconds.
    SCHEDULER_REVIVE_INTERVAL: TimeEntry =
        ConfEntry::new("spark.scheduler.revive.interval", MS, "1s")
            .check(positive_time, "must be greater than 0");

    /// Scheduling between jobs: FIFO or FAIR (any letter case, as Spark upper-cases it).
    SCHEDULER_MODE: EnumEntry =
        ConfEntry::new("spark.scheduler.mode", EnumKind::any_case(&["FIFO", "FAIR"]), "FIFO");

    /// Fraction of expected executors that must register before the first job is scheduled.
    /// Spark's generic default is 0, its YARN backend uses 0.8; sparkyard always runs on YARN.
    /// Values above 1 act as 1.
    SCHEDULER_MIN_REGISTERED_RESOURCES_RATIO: F64Entry =
        ConfEntry::new("spark.scheduler.minRegisteredResourcesRatio", FloatKind, "0.8")
            .check(non_negative, "must be at least 0");

    /// Longest wait for `minRegisteredResourcesRatio` before scheduling starts anyway. Bare
    /// numbers are milliseconds.
    SCHEDULER_MAX_REGISTERED_RESOURCE_WAITING_TIME: TimeEntry =
        ConfEntry::new("spark.scheduler.maxRegisteredResourcesWaitingTime", MS, "30s");

    /// Period of the "Initial job has not accepted any resources" warning. Bare numbers are
    /// milliseconds.
    STARVATION_TIMEOUT: TimeEntry = ConfEntry::new("spark.starvation.timeout", MS, "15s")
        .check(positive_time, "must be greater than 0");

    /// Time to wait for a new executor before aborting a task set that every executor has
    /// excluded. Bare numbers are seconds.
    UNSCHEDULABLE_TASKSET_TIMEOUT: TimeEntry =
        ConfEntry::new("spark.scheduler.excludeOnFailure.unschedulableTaskSetTimeout", SECS, "120s")
            .alternatives(&["spark.scheduler.blacklist.unschedulableTaskSetTimeout"]);

    /// Capacity of each listener bus queue; events beyond it are dropped.
    LISTENER_BUS_EVENT_QUEUE_CAPACITY: U32Entry =
        ConfEntry::new("spark.scheduler.listenerbus.eventqueue.capacity", IntKind::new(), "10000")
            .check(at_least_one, "must be at least 1")
            .alternatives(&["spark.scheduler.listenerbus.eventqueue.size"]);

    /// Show the ConsoleProgressBar on the driver's console (client mode, stderr a
    /// terminal). False unless set, as in spark-submit (Spark turns it on only for shells).
    UI_SHOW_CONSOLE_PROGRESS: BoolEntry =
        ConfEntry::new("spark.ui.showConsoleProgress", BoolKind, "false");

    /// How often the console progress bar is redrawn. Bare numbers are milliseconds.
    UI_CONSOLE_PROGRESS_UPDATE_INTERVAL: TimeEntry =
        ConfEntry::new("spark.ui.consoleProgress.update.interval", MS, "200ms")
            .check(positive_time, "must be greater than 0");

    /// Default number of partitions of shuffles; unset means max(total executor cores, 2).
    DEFAULT_PARALLELISM: OptU32Entry =
        OptEntry::new("spark.default.parallelism", IntKind::new(), "(max(total cores, 2))")
            .check(at_least_one, "must be at least 1");

    /// Consecutive failed attempts of a stage (fetch failures) before the stage is aborted.
    STAGE_MAX_CONSECUTIVE_ATTEMPTS: U32Entry =
        ConfEntry::new("spark.stage.maxConsecutiveAttempts", IntKind::new(), "4")
            .check(at_least_one, "must be at least 1");

    /// Total attempts of a stage; the effective cap is the larger of this and
    /// `spark.stage.maxConsecutiveAttempts`.
    STAGE_MAX_ATTEMPTS: U32Entry =
        ConfEntry::new("spark.stage.maxAttempts", IntKind::new(), "2147483647")
            .check(at_least_one, "must be at least 1");

    /// Do not count fetch failures caused by decommissioned executors toward stage attempts.
    STAGE_IGNORE_DECOMMISSION_FETCH_FAILURE: BoolEntry =
        ConfEntry::new("spark.stage.ignoreDecommissionFetchFailure", BoolKind, "false");

    /// How long the tasks of a barrier stage wait for each other in one
    /// `BarrierTaskContext.barrier()` before they all fail. Bare numbers are seconds.
    BARRIER_SYNC_TIMEOUT: TimeEntry = ConfEntry::new("spark.barrier.sync.timeout", SECS, "365d")
        .check(positive_time, "must be greater than 0");

    /// How long the DAGScheduler waits before checking again whether the cluster has the
    /// slots a barrier stage needs. Bare numbers are seconds.
    BARRIER_MAX_CONCURRENT_TASKS_CHECK_INTERVAL: TimeEntry = ConfEntry::new(
        "spark.scheduler.barrier.maxConcurrentTasksCheck.interval",
        SECS,
        "15s"
    );

    /// How many failed checks of a barrier stage's slots fail its job.
    BARRIER_MAX_CONCURRENT_TASKS_CHECK_MAX_FAILURES: U32Entry = ConfEntry::new(
        "spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures",
        IntKind::new(),
        "40"
    )
    .check(at_least_one, "must be at least 1");

    /// On a fetch failure, drop every map output of the host instead of only the executor's.
    UNREGISTER_OUTPUT_ON_HOST_ON_FETCH_FAILURE: BoolEntry =
        ConfEntry::new("spark.files.fetchFailure.unRegisterOutputOnHost", BoolKind, "false");

    /// Whether an external shuffle service serves map outputs (so they survive executor loss).
    SHUFFLE_SERVICE_ENABLED: BoolEntry =
        ConfEntry::new("spark.shuffle.service.enabled", BoolKind, "false");

    /// Whether executors and nodes are excluded after repeated task failures.
    EXCLUDE_ON_FAILURE_ENABLED: OptBoolEntry =
        OptEntry::new("spark.excludeOnFailure.enabled", BoolKind, "(false)")
            .alternatives(&["spark.blacklist.enabled"]);

    /// How long an exclusion lasts; unset means 1h. Bare numbers are milliseconds.
    EXCLUDE_ON_FAILURE_TIMEOUT_CONF: OptTimeEntry =
        OptEntry::new("spark.excludeOnFailure.timeout", MS, "(1h)")
            .alternatives(&["spark.blacklist.timeout"]);

    /// A node is excluded for the application when more executors than this failed on it.
    MAX_FAILED_EXEC_PER_NODE: U32Entry = ConfEntry::new(
        "spark.excludeOnFailure.application.maxFailedExecutorsPerNode",
        IntKind::new(),
        "2",
    )
    .alternatives(&["spark.blacklist.application.maxFailedExecutorsPerNode"]);

    // ---------------------------------------------------------------- network and RPC

    /// Default timeout of network interactions, and the executor heartbeat timeout. Bare
    /// numbers are seconds.
    NETWORK_TIMEOUT: TimeEntry = ConfEntry::new("spark.network.timeout", SECS, "120s")
        .check(positive_time, "must be greater than 0");

    /// Period of the HeartbeatReceiver's check for executors without recent heartbeats. Bare
    /// numbers are milliseconds.
    NETWORK_TIMEOUT_INTERVAL: TimeEntry =
        ConfEntry::new("spark.network.timeoutInterval", MS, "60s")
            .check(positive_time, "must be greater than 0");

    /// Timeout of RPC asks; defaults to `spark.network.timeout` (Spark's chain:
    /// askTimeout, then network.timeout, then 120s). Bare numbers are seconds.
    RPC_ASK_TIMEOUT: TimeEntry = ConfEntry::fallback("spark.rpc.askTimeout", SECS, &NETWORK_TIMEOUT)
        .check(positive_time, "must be greater than 0");

    /// Timeout of endpoint look-ups; defaults to `spark.network.timeout`. Bare numbers are
    /// seconds.
    RPC_LOOKUP_TIMEOUT: TimeEntry =
        ConfEntry::fallback("spark.rpc.lookupTimeout", SECS, &NETWORK_TIMEOUT)
            .check(positive_time, "must be greater than 0");

    /// Largest RPC message, in particular a serialized task. Spark reads a whole number of
    /// MiB; sparkyard also accepts a size with a unit. At most 2047m.
    RPC_MESSAGE_MAX_SIZE: SizeEntry = ConfEntry::new("spark.rpc.message.maxSize", MIB, "128")
        .check(|b| *b >= 1 && *b <= MAX_RPC_MESSAGE_BYTES, "must be more than 0 and at most 2047m");

    /// Heartbeat timeout for executors; when unset `spark.network.timeout` is used. Bare
    /// numbers are milliseconds.
    STORAGE_BLOCKMANAGER_HEARTBEAT_TIMEOUT: OptTimeEntry =
        OptEntry::new("spark.storage.blockManagerHeartbeatTimeoutMs", MS, "(spark.network.timeout)")
            .alternatives(&["spark.storage.blockManagerSlaveTimeoutMs"]);

    // ---------------------------------------------------------------- event log

    /// Whether the driver writes Spark's event log (SparkListener events as JSON lines).
    EVENT_LOG_ENABLED: BoolEntry = ConfEntry::new("spark.eventLog.enabled", BoolKind, "false");

    /// Directory of event logs (Spark's `EventLoggingListener.DEFAULT_LOG_DIR`).
    EVENT_LOG_DIR: StrEntry = ConfEntry::new("spark.eventLog.dir", StrKind, "/tmp/spark-events");

    /// Whether event logs are compressed. Spark 4.0 defaults to true (zstd); sparkyard
    /// writes plain JSON lines by default, so its default is false.
    EVENT_LOG_COMPRESS: BoolEntry = ConfEntry::new("spark.eventLog.compress", BoolKind, "false");

    /// Whether a finished event log of the same application may be replaced.
    EVENT_LOG_OVERWRITE: BoolEntry = ConfEntry::new("spark.eventLog.overwrite", BoolKind, "false");

    /// Properties whose key or value matches this regular expression have their value shown
    /// as `*********(redacted)` wherever configuration is printed or logged (`submit -v`, the
    /// event log, launch contexts). Rust `regex` syntax (Spark's is Java's).
    SECRET_REDACTION_PATTERN: StrEntry = ConfEntry::new(
        "spark.redaction.regex",
        StrKind,
        "(?i)secret|password|token|access[.]?key",
    )
    .check(is_regex, "must be a regular expression");

    // ---------------------------------------------------------------- dynamic allocation

    /// Whether executors are added and removed with the workload.
    DYN_ALLOCATION_ENABLED: BoolEntry =
        ConfEntry::new("spark.dynamicAllocation.enabled", BoolKind, "false");

    /// Allows dynamic allocation with a local master (tests only).
    DYN_ALLOCATION_TESTING: BoolEntry =
        ConfEntry::new("spark.dynamicAllocation.testing", BoolKind, "false");

    /// Lower bound on the number of executors.
    DYN_ALLOCATION_MIN_EXECUTORS: U32Entry =
        ConfEntry::new("spark.dynamicAllocation.minExecutors", IntKind::new(), "0");

    /// Initial number of executors; defaults to `minExecutors`. The effective start is
    /// max(min, initial, `spark.executor.instances`).
    DYN_ALLOCATION_INITIAL_EXECUTORS: U32Entry = ConfEntry::fallback(
        "spark.dynamicAllocation.initialExecutors",
        IntKind::new(),
        &DYN_ALLOCATION_MIN_EXECUTORS,
    );

    /// Upper bound on the number of executors (Int.MaxValue by default); 0 is an error when
    /// dynamic allocation is enabled.
    DYN_ALLOCATION_MAX_EXECUTORS: U32Entry =
        ConfEntry::new("spark.dynamicAllocation.maxExecutors", IntKind::new(), "2147483647");

    /// Scales the number of executors requested for the backlog; in (0, 1] when dynamic
    /// allocation is on (checked then, as the ExecutorAllocationManager does).
    DYN_ALLOCATION_EXECUTOR_ALLOCATION_RATIO: F64Entry =
        ConfEntry::new("spark.dynamicAllocation.executorAllocationRatio", FloatKind, "1.0");

    /// Backlog duration before the first executors are requested; more than 0 when dynamic
    /// allocation is on. Bare numbers are seconds.
    DYN_ALLOCATION_SCHEDULER_BACKLOG_TIMEOUT: TimeEntry =
        ConfEntry::new("spark.dynamicAllocation.schedulerBacklogTimeout", SECS, "1s");

    /// Interval between later requests while the backlog persists; defaults to
    /// `schedulerBacklogTimeout`; more than 0 when dynamic allocation is on. Bare numbers are
    /// seconds.
    DYN_ALLOCATION_SUSTAINED_SCHEDULER_BACKLOG_TIMEOUT: TimeEntry = ConfEntry::fallback(
        "spark.dynamicAllocation.sustainedSchedulerBacklogTimeout",
        SECS,
        &DYN_ALLOCATION_SCHEDULER_BACKLOG_TIMEOUT,
    );

    /// Idle time after which an executor without cached data is removed. Bare numbers are
    /// seconds.
    DYN_ALLOCATION_EXECUTOR_IDLE_TIMEOUT: TimeEntry =
        ConfEntry::new("spark.dynamicAllocation.executorIdleTimeout", SECS, "60s");

    /// Idle time after which an executor holding cached blocks is removed (Int.MaxValue
    /// seconds: practically never). Bare numbers are seconds.
    DYN_ALLOCATION_CACHED_EXECUTOR_IDLE_TIMEOUT: TimeEntry =
        ConfEntry::new("spark.dynamicAllocation.cachedExecutorIdleTimeout", SECS, "2147483647s");

    /// Track shuffle data so executors holding active shuffle output are kept (needed
    /// without an external shuffle service).
    DYN_ALLOCATION_SHUFFLE_TRACKING_ENABLED: BoolEntry =
        ConfEntry::new("spark.dynamicAllocation.shuffleTracking.enabled", BoolKind, "true");

    /// Idle timeout for executors holding shuffle data (Long.MaxValue ms: never). Bare
    /// numbers are milliseconds.
    DYN_ALLOCATION_SHUFFLE_TRACKING_TIMEOUT: TimeEntry = ConfEntry::new(
        "spark.dynamicAllocation.shuffleTracking.timeout",
        MS,
        "9223372036854775807ms",
    );

    // ---------------------------------------------------------------- YARN client and AM

    /// YARN queue the application is submitted to.
    QUEUE_NAME: StrEntry = ConfEntry::new("spark.yarn.queue", StrKind, "default");

    /// Tags attached to the YARN application.
    APPLICATION_TAGS: OptListEntry = OptEntry::new("spark.yarn.tags", ListKind, "(none)");

    /// Application type reported to YARN.
    APPLICATION_TYPE: StrEntry = ConfEntry::new("spark.yarn.applicationType", StrKind, "SPARK");

    /// Maximum AM attempts; the effective value is the smaller of this and
    /// `yarn.resourcemanager.am.max-attempts`.
    MAX_APP_ATTEMPTS: OptU32Entry = OptEntry::new(
        "spark.yarn.maxAppAttempts",
        IntKind::new(),
        "(yarn.resourcemanager.am.max-attempts)",
    )
    .check(at_least_one, "must be at least 1");

    /// Window after which AM failures no longer count toward the attempt limit. Bare
    /// numbers are milliseconds.
    AM_ATTEMPT_FAILURE_VALIDITY_INTERVAL_MS: OptTimeEntry =
        OptEntry::new("spark.yarn.am.attemptFailuresValidityInterval", MS, "(none)");

    /// Base directory of the staging directory (`<base>/.sparkStaging/<appId>`); unset means
    /// the user's home directory.
    STAGING_DIR: OptStrEntry = OptEntry::new("spark.yarn.stagingDir", StrKind, "(home directory)");

    /// Keep the staging directory after the application ends.
    PRESERVE_STAGING_FILES: BoolEntry =
        ConfEntry::new("spark.yarn.preserve.staging.files", BoolKind, "false");

    /// In cluster mode, whether the client waits for the application to finish; false makes
    /// the submission fire-and-forget.
    WAIT_FOR_APP_COMPLETION: BoolEntry =
        ConfEntry::new("spark.yarn.submit.waitAppCompletion", BoolKind, "true");

    /// Period of the client's application report polling. Bare numbers are milliseconds.
    REPORT_INTERVAL: TimeEntry = ConfEntry::new("spark.yarn.report.interval", MS, "1s")
        .check(positive_time, "must be greater than 0");

    /// How long the cluster-mode AM waits for the user's SparkContext (then exit 13). Bare
    /// numbers are milliseconds.
    AM_MAX_WAIT_TIME: TimeEntry = ConfEntry::new("spark.yarn.am.waitTime", MS, "100s");

    /// Node label expression of the AM container request.
    AM_NODE_LABEL_EXPRESSION: OptStrEntry =
        OptEntry::new("spark.yarn.am.nodeLabelExpression", StrKind, "(none)");

    /// Node label expression of executor container requests.
    EXECUTOR_NODE_LABEL_EXPRESSION: OptStrEntry =
        OptEntry::new("spark.yarn.executor.nodeLabelExpression", StrKind, "(none)");

    /// Threads of the AM's container launcher pool.
    CONTAINER_LAUNCH_MAX_THREADS: U32Entry =
        ConfEntry::new("spark.yarn.containerLauncherMaxThreads", IntKind::new(), "25")
            .check(at_least_one, "must be at least 1");

    /// Consecutive exceptions in the AM's reporter thread before the AM fails (exit 12).
    MAX_REPORTER_THREAD_FAILURES: U32Entry =
        ConfEntry::new("spark.yarn.scheduler.reporterThread.maxFailures", IntKind::new(), "5")
            .check(at_least_one, "must be at least 1");

    /// Steady period of the AM's allocate heartbeat to the RM (capped at half the AM expiry
    /// interval). Bare numbers are milliseconds.
    RM_HEARTBEAT_INTERVAL: TimeEntry =
        ConfEntry::new("spark.yarn.scheduler.heartbeat.interval-ms", MS, "3s")
            .check(positive_time, "must be greater than 0");

    /// First allocate interval while container requests are pending; doubles up to the
    /// heartbeat interval. Bare numbers are milliseconds.
    INITIAL_HEARTBEAT_INTERVAL: TimeEntry =
        ConfEntry::new("spark.yarn.scheduler.initial-allocation.interval", MS, "200ms")
            .check(positive_time, "must be greater than 0");

    /// Length limit of the AM's final diagnostics message. Bare numbers are bytes
    /// (characters).
    AM_FINAL_MSG_LIMIT: SizeEntry = ConfEntry::new("spark.yarn.am.finalMessageLimit", BYTES, "1m");

    /// Cores of the client-mode AM (cluster mode uses `spark.driver.cores`).
    AM_CORES: U32Entry = ConfEntry::new("spark.yarn.am.cores", IntKind::new(), "1")
        .check(at_least_one, "must be at least 1");

    /// Memory of the client-mode AM (cluster mode uses `spark.driver.memory`). Bare numbers
    /// are MiB.
    AM_MEMORY: SizeEntry = ConfEntry::new("spark.yarn.am.memory", MIB, "512m")
        .check(at_least_one_mib, "must be at least 1m");

    /// Overhead of the client-mode AM container. Bare numbers are MiB.
    AM_MEMORY_OVERHEAD: OptSizeEntry =
        OptEntry::new("spark.yarn.am.memoryOverhead", MIB, "(max(0.1 x memory, 384m))");

    /// In client mode, whether losing the driver connection fails the AM (exit 17).
    AM_CLIENT_MODE_TREAT_DISCONNECT_AS_FAILED: BoolEntry =
        ConfEntry::new("spark.yarn.am.clientModeTreatDisconnectAsFailed", BoolKind, "false");

    /// History Server address; with it the AM registers `<address>/history/<app>/<attempt>`.
    HISTORY_SERVER_ADDRESS: OptStrEntry =
        OptEntry::new("spark.yarn.historyServer.address", StrKind, "(none)");

    /// Use the History Server URL as tracking URL when the driver has no web UI.
    ALLOW_HISTORY_SERVER_TRACKING_URL: BoolEntry =
        ConfEntry::new("spark.yarn.historyServer.allowTracking", BoolKind, "false");

    /// Exclude hosts where executor launches keep failing.
    YARN_EXECUTOR_LAUNCH_EXCLUDE_ON_FAILURE_ENABLED: BoolEntry =
        ConfEntry::new("spark.yarn.executor.launch.excludeOnFailure.enabled", BoolKind, "false")
            .alternatives(&["spark.yarn.blacklist.executor.launch.blacklisting.enabled"]);

    /// Hosts never used for containers.
    YARN_EXCLUDE_NODES: ListEntry = ConfEntry::new("spark.yarn.exclude.nodes", ListKind, "");

    // ---------------------------------------------------------------- sparkyard runtime

    /// Restarts a supervisor allows within `restartPeriod` before it gives up and escalates
    /// to its own parent (0 = never restart).
    SUPERVISOR_MAX_RESTARTS: U32Entry =
        ConfEntry::new("spark.sparkyard.supervisor.maxRestarts", IntKind::new(), "3");

    /// Window over which supervisor restarts are counted. Accepts Spark time syntax (bare
    /// numbers are milliseconds) and compound durations such as `1m 30s`.
    SUPERVISOR_RESTART_PERIOD: TimeEntry =
        ConfEntry::new("spark.sparkyard.supervisor.restartPeriod", HUMANE_MS, "5s")
            .check(positive_time, "must be greater than 0");

    /// Delay before the first restart of a failed child; doubles on each consecutive restart
    /// up to `maxBackoff`. 0 restarts at once. Accepts Spark time syntax (bare numbers are
    /// milliseconds) and compound durations such as `1m 30s`.
    SUPERVISOR_BACKOFF: TimeEntry =
        ConfEntry::new("spark.sparkyard.supervisor.backoff", HUMANE_MS, "0");

    /// Upper bound of the restart backoff. Accepts Spark time syntax (bare numbers are
    /// milliseconds) and compound durations such as `1m 30s`.
    SUPERVISOR_MAX_BACKOFF: TimeEntry =
        ConfEntry::new("spark.sparkyard.supervisor.maxBackoff", HUMANE_MS, "1s");

    /// How long a supervisor waits for each child to stop before abandoning it. Accepts
    /// Spark time syntax (bare numbers are milliseconds) and compound durations such as
    /// `1m 30s`.
    SUPERVISOR_SHUTDOWN_TIMEOUT: TimeEntry =
        ConfEntry::new("spark.sparkyard.supervisor.shutdownTimeout", HUMANE_MS, "5s");

    /// Seed of the random fault-injection plan of an embedded run; unset means no random
    /// faults.
    CHAOS_SEED: OptU64Entry = OptEntry::new("spark.sparkyard.chaos.seed", IntKind::new(), "(none)");

    /// How many kills a seeded fault plan makes.
    CHAOS_KILLS: U32Entry = ConfEntry::new("spark.sparkyard.chaos.kills", IntKind::new(), "3");

    /// A seeded plan's kills fire after a number of finished tasks drawn from 1 to this.
    CHAOS_TASKS: U32Entry = ConfEntry::new("spark.sparkyard.chaos.tasks", IntKind::new(), "10")
        .check(at_least_one, "must be at least 1");

    /// The actors (paths or globs) a seeded plan draws from; unset means every killable actor.
    CHAOS_TARGETS: OptListEntry =
        OptEntry::new("spark.sparkyard.chaos.targets", ListKind, "(every killable actor)");

    /// An explicit fault plan of an embedded run: `<glob>@<finished tasks>[:panic]`, comma
    /// separated.
    CHAOS_PLAN: OptStrEntry = OptEntry::new("spark.sparkyard.chaos.plan", StrKind, "(none)");

    // ---------------------------------------------------------------- YARN (yarn-site.conf)

    /// Address of the ResourceManager's client service. sparkyard binds to loopback by
    /// default (YARN's own default is `0.0.0.0:8032`).
    RM_ADDRESS: HostPortEntry =
        ConfEntry::new("yarn.resourcemanager.address", HostPortKind, "127.0.0.1:8032");

    /// Address of the ResourceManager's web application: its REST API (`/ws/v1/cluster/...`)
    /// and web UI. The node and `sparkyard resourcemanager` serve it; an embedded `submit`
    /// serves it only when this key is set. Loopback by default (YARN's own default is
    /// `0.0.0.0:8088`); port 0 takes any free port.
    RM_WEBAPP_ADDRESS: HostPortEntry =
        ConfEntry::new("yarn.resourcemanager.webapp.address", HostPortKind, "127.0.0.1:8088");

    // ---- the client port's bounds (sparkyard's; Hadoop's IPC server has
    // ipc.server.max.connections, ipc.client.connection.maxidletime, ipc.maximum.data.length)

    /// Connections the ResourceManager's client port holds at once. At the limit a new
    /// connection replaces the one idle longest (no request in flight); when every one has a
    /// request in flight, the new one is closed at once.
    CLIENT_PORT_MAX_CONNECTIONS: U32Entry =
        ConfEntry::new("yarn.sparkyard.client-port.max-connections", IntKind::new(), "512")
            .check(at_least_one, "must be at least 1");

    /// How long a client connection with no request in flight may send nothing before it is
    /// closed; also how long a request frame may take to arrive whole, and how long a client
    /// may leave its answers unread. Bare numbers are milliseconds.
    CLIENT_PORT_IDLE_TIMEOUT: TimeEntry =
        ConfEntry::new("yarn.sparkyard.client-port.idle-timeout", MS, "60s")
            .check(positive_time, "must be greater than 0");

    /// The largest request frame the client port accepts (a submission is a few KiB); a
    /// larger one closes its connection. At most 64m.
    CLIENT_PORT_MAX_FRAME_SIZE: SizeEntry =
        ConfEntry::new("yarn.sparkyard.client-port.max-frame-size", BYTES, "8m")
            .check(|b| (1 << 10..=64 * ONE_MIB).contains(b), "must be between 1k and 64m");

    /// Bytes of request frames in progress the client port holds across all its connections,
    /// beyond the 64 KiB each connection may always hold; a large frame that does not fit
    /// closes its connection. At least 1m.
    CLIENT_PORT_MAX_BUFFERED: SizeEntry =
        ConfEntry::new("yarn.sparkyard.client-port.max-buffered-bytes", BYTES, "64m")
            .check(at_least_one_mib, "must be at least 1m");

    /// Global maximum of application attempts (an AM that fails is retried until this).
    RM_AM_MAX_ATTEMPTS: U32Entry =
        ConfEntry::new("yarn.resourcemanager.am.max-attempts", IntKind::new(), "2")
            .check(at_least_one, "must be at least 1");

    /// Largest memory of one container, in MB.
    RM_SCHEDULER_MAXIMUM_ALLOCATION_MB: U64Entry =
        ConfEntry::new("yarn.scheduler.maximum-allocation-mb", IntKind::new(), "8192")
            .check(u64_at_least_one, "must be at least 1");

    /// Largest number of vcores of one container.
    RM_SCHEDULER_MAXIMUM_ALLOCATION_VCORES: U32Entry =
        ConfEntry::new("yarn.scheduler.maximum-allocation-vcores", IntKind::new(), "4")
            .check(at_least_one, "must be at least 1");

    /// Smallest memory of one container, in MB; requests are rounded up to a multiple.
    RM_SCHEDULER_MINIMUM_ALLOCATION_MB: U64Entry =
        ConfEntry::new("yarn.scheduler.minimum-allocation-mb", IntKind::new(), "1024")
            .check(u64_at_least_one, "must be at least 1");

    /// Smallest number of vcores of one container.
    RM_SCHEDULER_MINIMUM_ALLOCATION_VCORES: U32Entry =
        ConfEntry::new("yarn.scheduler.minimum-allocation-vcores", IntKind::new(), "1")
            .check(at_least_one, "must be at least 1");

    /// Memory a NodeManager offers for containers, in MB (default for nodes that do not set
    /// `memory-mb`).
    NM_PMEM_MB: U64Entry =
        ConfEntry::new("yarn.nodemanager.resource.memory-mb", IntKind::new(), "8192")
            .check(u64_at_least_one, "must be at least 1");

    /// Vcores a NodeManager offers for containers (default for nodes that do not set
    /// `vcores`).
    NM_VCORES: U32Entry =
        ConfEntry::new("yarn.nodemanager.resource.cpu-vcores", IntKind::new(), "8")
            .check(at_least_one, "must be at least 1");

    /// How long a stopped container's process group gets between SIGTERM and SIGKILL
    /// (YARN's ContainerLaunch cleanup). Bare numbers are milliseconds.
    NM_SLEEP_DELAY_BEFORE_SIGKILL_MS: TimeEntry =
        ConfEntry::new("yarn.nodemanager.sleep-delay-before-sigkill.ms", MS, "250");

    /// How often the container monitor reads each container's process-tree memory. Bare
    /// numbers are milliseconds.
    NM_CONTAINER_MON_INTERVAL_MS: TimeEntry =
        ConfEntry::new("yarn.nodemanager.container-monitor.interval-ms", MS, "3000")
            .check(positive_time, "must be greater than 0");

    /// Whether the container monitor kills a container whose process tree's resident memory
    /// runs beyond its allocation (exit status -104).
    NM_PMEM_CHECK_ENABLED: BoolEntry =
        ConfEntry::new("yarn.nodemanager.pmem-check-enabled", BoolKind, "true");

    /// A container's virtual-memory limit as a multiple of its allocation (shown in the
    /// monitor's diagnostics; sparkyard does not enforce it).
    NM_VMEM_PMEM_RATIO: F64Entry =
        ConfEntry::new("yarn.nodemanager.vmem-pmem-ratio", FloatKind, "2.1")
            .check(|v| *v >= 1.0, "must be at least 1");

    /// The NodeManager's environment variables a container inherits unless its launch
    /// context sets them.
    NM_ENV_WHITELIST: ListEntry = ConfEntry::new(
        "yarn.nodemanager.env-whitelist",
        ListKind,
        "JAVA_HOME,HADOOP_COMMON_HOME,HADOOP_HDFS_HOME,HADOOP_CONF_DIR,CLASSPATH_PREPEND_DISTCACHE,HADOOP_YARN_HOME,HADOOP_HOME,PATH,LANG,TZ"
    );

    /// Time without an allocate heartbeat after which the RM expires an AM attempt. Bare
    /// numbers are milliseconds.
    RM_AM_EXPIRY_INTERVAL_MS: TimeEntry =
        ConfEntry::new("yarn.am.liveness-monitor.expiry-interval-ms", MS, "600000")
            .check(positive_time, "must be greater than 0");

    /// Queues under the capacity scheduler's root queue.
    CAPACITY_ROOT_QUEUES: ListEntry =
        ConfEntry::new("yarn.scheduler.capacity.root.queues", ListKind, "default")
            .check(|q| !q.is_empty(), "must name at least one queue");

    /// Most of a queue's resources ApplicationMasters may hold, as a fraction (0.1 is ten
    /// per cent); at least one AM always runs. The rest wait ACCEPTED, in submission order.
    MAXIMUM_AM_RESOURCE_PERCENT: F64Entry =
        ConfEntry::new("yarn.scheduler.capacity.maximum-am-resource-percent", FloatKind, "0.1")
            .check(|v| (0.0..=1.0).contains(v), "must be between 0 and 1");

    /// Finished applications the ResourceManager keeps (their reports; older ones are
    /// forgotten, oldest first).
    RM_MAX_COMPLETED_APPLICATIONS: U64Entry =
        ConfEntry::new("yarn.resourcemanager.max-completed-applications", IntKind::new(), "1000");

    /// How long a node put into graceful decommission without a timeout of its own may
    /// drain before its remaining containers are killed. Bare numbers are seconds.
    RM_NM_GRACEFUL_DECOMMISSION_TIMEOUT: TimeEntry = ConfEntry::new(
        "yarn.resourcemanager.nodemanager-graceful-decommission-timeout-secs",
        SECS,
        "3600"
    );

    /// Where NodeManagers reach the ResourceManager's actors (register, node heartbeats) and
    /// containers their node's: the RM's actor endpoint. Port 0 picks a free one (the
    /// readiness line of `sparkyard node` / `sparkyard resourcemanager` prints it).
    RM_RESOURCE_TRACKER_ADDRESS: HostPortEntry = ConfEntry::new(
        "yarn.resourcemanager.resource-tracker.address",
        HostPortKind,
        "127.0.0.1:8031"
    );

    /// How a node runs its containers: `process` (each an OS process of this binary, as a
    /// NodeManager execs a JVM) or `in-process` (actor subtrees of the node's own process:
    /// fast, and what the paused-clock tests use). `sparkyard node` defaults to `process`,
    /// the embedded cluster of `sparkyard submit` to `in-process`.
    CONTAINERS: OptStrEntry = OptEntry::new(
        "spark.sparkyard.containers",
        StrKind,
        "(process for sparkyard node, in-process for the embedded cluster)"
    );

    /// Whether every connection to a node's ports proves a shared secret (Spark's
    /// `spark.authenticate`): the node's, or an application's derived from it.
    AUTHENTICATE: BoolEntry = ConfEntry::new("spark.authenticate", BoolKind, "false");

    /// The node's shared secret, when `spark.authenticate` is on (prefer the file: a value on
    /// a command line is visible to `ps`).
    AUTHENTICATE_SECRET: OptStrEntry = OptEntry::new("spark.authenticate.secret", StrKind, "(none)");

    /// A file holding the node's shared secret (read as is, no newline stripped); wins over
    /// `spark.authenticate.secret`.
    AUTHENTICATE_SECRET_FILE: OptStrEntry =
        OptEntry::new("spark.authenticate.secret.file", StrKind, "(none)");

    /// Whether authenticated connections are encrypted after their handshake
    /// (ChaCha20-Poly1305 here; AES-GCM in Spark's AuthEngine).
    NETWORK_CRYPTO_ENABLED: BoolEntry = ConfEntry::new("spark.network.crypto.enabled", BoolKind, "false");

    /// Where NodeManagers keep their containers' working directories
    /// (`<dir>/usercache/<user>/appcache/<app>/<container>`). Default: a directory under the
    /// system's temporary directory.
    NM_LOCAL_DIRS: OptStrEntry =
        OptEntry::new("yarn.nodemanager.local-dirs", StrKind, "($TMPDIR/sparkyard-<user>/nm-local-dir/<pid>)");

    /// Where NodeManagers keep their containers' stdout and stderr
    /// (`<dir>/<app>/<container>/stdout`). Default: `apps` under the log directory, beside
    /// the containers' records (the NodeManager's ReadContainerOutput finds a container
    /// process's stdout only there).
    NM_LOG_DIRS: OptStrEntry =
        OptEntry::new("yarn.nodemanager.log-dirs", StrKind, "(<log dir>/apps)");

    /// How long a NodeManager keeps trying to reach its ResourceManager before it gives up
    /// and exits. Bare numbers are milliseconds.
    RM_CONNECT_MAX_WAIT: TimeEntry =
        ConfEntry::new("yarn.resourcemanager.connect.max-wait.ms", MS, "900000")
            .check(positive_time, "must be greater than 0");

    /// The pause between a NodeManager's tries to reach its ResourceManager (doubling from a
    /// tenth of it, up to it). Bare numbers are milliseconds.
    RM_CONNECT_RETRY_INTERVAL: TimeEntry =
        ConfEntry::new("yarn.resourcemanager.connect.retry-interval.ms", MS, "30000")
            .check(positive_time, "must be greater than 0");

    /// Period of NodeManager heartbeats to the RM. Bare numbers are milliseconds.
    RM_NM_HEARTBEAT_INTERVAL_MS: TimeEntry =
        ConfEntry::new("yarn.resourcemanager.nodemanagers.heartbeat-interval-ms", MS, "1000")
            .check(positive_time, "must be greater than 0");

    // ----- node liveness and registration (issue 14) -----

    /// How long a RUNNING or DECOMMISSIONING node may stay silent (no heartbeat) before the
    /// RM declares it LOST and completes its containers as lost (-100); the RM checks every
    /// third of it. Bare numbers are milliseconds.
    RM_NM_EXPIRY_INTERVAL_MS: TimeEntry =
        ConfEntry::new("yarn.nm.liveness-monitor.expiry-interval-ms", MS, "600000")
            .check(positive_time, "must be greater than 0");

    /// The cluster a NodeManager joins and a ResourceManager runs: the RM refuses a
    /// NodeManager registering with another. (YARN has no default; sparkyard's is
    /// `sparkyard`, so nodes of one configuration agree.)
    RM_CLUSTER_ID: StrEntry =
        ConfEntry::new("yarn.resourcemanager.cluster-id", StrKind, "sparkyard")
            .check(|id: &String| !id.trim().is_empty(), "must not be empty");

    // ---------------------------------------------------------------- who may do what (ACLs)

    /// Whether the node checks who may do what (YARN's `yarn.acl.enable`): with it on, an
    /// application's VIEW_APP and MODIFY_APP ACLs decide who may read and kill it, and
    /// `yarn.admin.acl` who may use the admin calls (`actors`, `chaos`, `rmadmin`).
    YARN_ACL_ENABLE: BoolEntry = ConfEntry::new("yarn.acl.enable", BoolKind, "false");

    /// The node's administrators (YARN's `yarn.admin.acl`), as Hadoop's AccessControlList:
    /// `users groups` (comma lists, a space between), `*` for everyone, blank for nobody.
    YARN_ADMIN_ACL: StrEntry = ConfEntry::new("yarn.admin.acl", StrKind, "*");

    /// Whether the application's view and modify ACLs are handed to YARN at submit
    /// (Spark's `spark.acls.enable`; `spark.ui.acls.enable` is its old name).
    ACLS_ENABLE: BoolEntry =
        ConfEntry::new("spark.acls.enable", BoolKind, "false").alternatives(&["spark.ui.acls.enable"]);

    /// Users who may view and modify every application of this configuration.
    ADMIN_ACLS: ListEntry = ConfEntry::new("spark.admin.acls", ListKind, "");

    /// Groups whose members may view and modify the application.
    ADMIN_ACLS_GROUPS: ListEntry = ConfEntry::new("spark.admin.acls.groups", ListKind, "");

    /// Users who may modify (kill) the application, besides its owner and the admins.
    MODIFY_ACLS: ListEntry = ConfEntry::new("spark.modify.acls", ListKind, "");

    /// Groups whose members may modify (kill) the application.
    MODIFY_ACLS_GROUPS: ListEntry = ConfEntry::new("spark.modify.acls.groups", ListKind, "");

    /// Users who may view the application (its report and its containers' output).
    UI_VIEW_ACLS: ListEntry = ConfEntry::new("spark.ui.view.acls", ListKind, "");

    /// Groups whose members may view the application.
    UI_VIEW_ACLS_GROUPS: ListEntry = ConfEntry::new("spark.ui.view.acls.groups", ListKind, "");
}

/// Prefix of the per-node keys `yarn.sparkyard.nodemanager.<host>`.
pub const NODE_MANAGER_PREFIX: &str = "yarn.sparkyard.nodemanager.";

/// One NodeManager of the all-in-one node: key `yarn.sparkyard.nodemanager.<host>`, value
/// `rack=/rack1,memory-mb=8192,vcores=8` (each field optional; rack defaults to
/// `/default-rack`, memory and vcores to `yarn.nodemanager.resource.*`).
pub static NODE_MANAGERS: PatternEntry = PatternEntry::new(
    "yarn.sparkyard.nodemanager.<host>",
    NODE_MANAGER_PREFIX,
    "rack=/RACK,memory-mb=N,vcores=N (each optional)",
    super::nodes::check_node_key,
)
.with_doc(
    "One NodeManager of the all-in-one node per key; the value's fields are optional: rack \
     (default /default-rack), memory-mb (default yarn.nodemanager.resource.memory-mb) and \
     vcores (default yarn.nodemanager.resource.cpu-vcores).",
);

fn any_value(_key: &str, _raw: &str) -> Result<(), super::ConfError> {
    Ok(())
}

/// Environment variables of executors: `spark.executorEnv.<NAME>=<value>`.
pub static EXECUTOR_ENV: PatternEntry = PatternEntry::new(
    "spark.executorEnv.<name>",
    "spark.executorEnv.",
    "string",
    any_value,
)
.with_doc("Environment variable NAME set in every executor container.");

/// Environment variables of the ApplicationMaster: `spark.yarn.appMasterEnv.<NAME>=<value>`.
pub static AM_ENV: PatternEntry = PatternEntry::new(
    "spark.yarn.appMasterEnv.<name>",
    "spark.yarn.appMasterEnv.",
    "string",
    any_value,
)
.with_doc("Environment variable NAME set in the ApplicationMaster container (the cluster-mode driver).");

/// Hadoop settings passed through Spark's configuration: `spark.hadoop.<key>=<value>`.
pub static HADOOP_PASSTHROUGH: PatternEntry =
    PatternEntry::new("spark.hadoop.<key>", "spark.hadoop.", "string", any_value)
        .with_doc("Hadoop configuration key passed through Spark's configuration.");

static PATTERN_KEYS: &[&dyn AnyEntry] = &[&NODE_MANAGERS, &EXECUTOR_ENV, &AM_ENV, &HADOOP_PASSTHROUGH];

/// Every known key and key pattern, single keys first in declaration order, then patterns.
pub fn known_keys() -> &'static [KeyInfo] {
    static INFOS: OnceLock<Vec<KeyInfo>> = OnceLock::new();
    INFOS.get_or_init(|| {
        SINGLE_KEYS
            .iter()
            .chain(PATTERN_KEYS.iter())
            .map(|e| KeyInfo::from_entry(*e))
            .collect()
    })
}

/// The known key, alternative or pattern that `key` matches, if any.
pub fn find_key(key: &str) -> Option<&'static KeyInfo> {
    use std::collections::HashMap;
    static BY_NAME: OnceLock<HashMap<&'static str, usize>> = OnceLock::new();
    let infos = known_keys();
    let by_name = BY_NAME.get_or_init(|| {
        let mut map = HashMap::new();
        for (i, info) in infos.iter().enumerate() {
            if info.prefix.is_none() {
                map.insert(info.key, i);
                for alt in info.alternatives {
                    map.insert(*alt, i);
                }
            }
        }
        map
    });
    if let Some(i) = by_name.get(key) {
        return infos.get(*i);
    }
    infos
        .iter()
        .find(|info| info.prefix.is_some_and(|p| key.starts_with(p)))
}

#[cfg(test)]
mod tests {
    use super::super::SparkConf;
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_default_parses_and_passes_its_check() {
        let conf = SparkConf::new();
        for info in known_keys() {
            if info.is_pattern() || info.default.starts_with('(') {
                continue;
            }
            if info.default.starts_with("value of ") {
                continue;
            }
            info.check_value(info.key, &info.default)
                .unwrap_or_else(|e| panic!("default of {} is invalid: {e}", info.key));
        }
        // Fallback defaults read through.
        assert!(conf.get(&RPC_ASK_TIMEOUT).is_ok());
    }

    #[test]
    fn keys_are_unique_and_documented() {
        let mut seen = HashSet::new();
        for info in known_keys() {
            assert!(seen.insert(info.key), "duplicate key {}", info.key);
            for alt in info.alternatives {
                assert!(seen.insert(alt), "duplicate alternative {alt}");
            }
            assert!(!info.doc.is_empty(), "{} has no doc", info.key);
            assert!(!info.doc.contains('\n'));
            assert!(
                info.key.starts_with("spark.") || info.key.starts_with("yarn."),
                "{}",
                info.key
            );
        }
        assert!(known_keys().len() > 100);
    }

    #[test]
    fn spark_defaults() {
        let c = SparkConf::new();
        assert_eq!(c.get(&EXECUTOR_CORES), Ok(1));
        assert_eq!(c.get(&EXECUTOR_MEMORY), Ok(1 << 30));
        assert_eq!(c.get(&DRIVER_MEMORY), Ok(1 << 30));
        assert_eq!(c.get(&EXECUTOR_MIN_MEMORY_OVERHEAD), Ok(384 << 20));
        assert_eq!(c.get(&EXECUTOR_MEMORY_OVERHEAD_FACTOR), Ok(0.1));
        assert_eq!(c.get(&EXECUTOR_INSTANCES), Ok(None));
        assert_eq!(c.get(&EXECUTOR_MEMORY_OVERHEAD), Ok(None));
        assert_eq!(c.get(&TASK_MAX_FAILURES), Ok(4));
        assert_eq!(c.get(&LOCALITY_WAIT), Ok(Duration::from_secs(3)));
        assert_eq!(c.get(&SPECULATION_ENABLED), Ok(false));
        assert_eq!(c.get(&SPECULATION_INTERVAL), Ok(Duration::from_millis(100)));
        assert_eq!(c.get(&SPECULATION_MULTIPLIER), Ok(3.0));
        assert_eq!(c.get(&SPECULATION_QUANTILE), Ok(0.9));
        assert_eq!(c.get(&SCHEDULER_REVIVE_INTERVAL), Ok(Duration::from_secs(1)));
        assert_eq!(c.get(&SCHEDULER_MODE), Ok("FIFO"));
        assert_eq!(c.get(&SUBMIT_DEPLOY_MODE), Ok("client"));
        assert_eq!(c.get(&SCHEDULER_MIN_REGISTERED_RESOURCES_RATIO), Ok(0.8));
        assert_eq!(
            c.get(&SCHEDULER_MAX_REGISTERED_RESOURCE_WAITING_TIME),
            Ok(Duration::from_secs(30))
        );
        assert_eq!(c.get(&RPC_MESSAGE_MAX_SIZE), Ok(128 << 20));
        assert_eq!(c.get(&NETWORK_TIMEOUT), Ok(Duration::from_secs(120)));
        assert_eq!(c.get(&RPC_ASK_TIMEOUT), Ok(Duration::from_secs(120)));
        assert_eq!(c.get(&NETWORK_TIMEOUT_INTERVAL), Ok(Duration::from_secs(60)));
        assert_eq!(c.get(&EXECUTOR_HEARTBEAT_INTERVAL), Ok(Duration::from_secs(10)));
        assert_eq!(c.get(&EXECUTOR_HEARTBEAT_MAX_FAILURES), Ok(60));
        assert_eq!(c.get(&MAX_RESULT_SIZE), Ok(1 << 30));
        assert_eq!(c.get(&TASK_MAX_DIRECT_RESULT_SIZE), Ok(1 << 20));
        assert_eq!(c.get(&STAGE_MAX_CONSECUTIVE_ATTEMPTS), Ok(4));
        assert_eq!(c.get(&STAGE_MAX_ATTEMPTS), Ok(i32::MAX as u32));
        assert_eq!(c.get(&DYN_ALLOCATION_MAX_EXECUTORS), Ok(i32::MAX as u32));
        assert_eq!(
            c.get(&DYN_ALLOCATION_CACHED_EXECUTOR_IDLE_TIMEOUT),
            Ok(Duration::from_secs(i32::MAX as u64))
        );
        assert_eq!(
            c.get(&DYN_ALLOCATION_SHUFFLE_TRACKING_TIMEOUT),
            Ok(Duration::from_millis(i64::MAX as u64))
        );
        assert_eq!(c.get(&EVENT_LOG_DIR), Ok("/tmp/spark-events".to_string()));
        assert_eq!(c.get(&QUEUE_NAME), Ok("default".to_string()));
        assert_eq!(c.get(&MAX_APP_ATTEMPTS), Ok(None));
        assert_eq!(c.get(&AM_MAX_WAIT_TIME), Ok(Duration::from_secs(100)));
        assert_eq!(c.get(&RM_HEARTBEAT_INTERVAL), Ok(Duration::from_secs(3)));
        assert_eq!(c.get(&INITIAL_HEARTBEAT_INTERVAL), Ok(Duration::from_millis(200)));
        assert_eq!(c.get(&MAX_REPORTER_THREAD_FAILURES), Ok(5));
        assert_eq!(c.get(&CONTAINER_LAUNCH_MAX_THREADS), Ok(25));
        assert_eq!(c.get(&AM_FINAL_MSG_LIMIT), Ok(1 << 20));
        assert_eq!(c.get(&AM_MEMORY), Ok(512 << 20));
        assert_eq!(c.get(&REPORT_INTERVAL), Ok(Duration::from_secs(1)));
        assert_eq!(c.get(&WAIT_FOR_APP_COMPLETION), Ok(true));
        assert_eq!(c.get(&YARN_EXCLUDE_NODES), Ok(Vec::<String>::new()));
        assert_eq!(c.get(&STARVATION_TIMEOUT), Ok(Duration::from_secs(15)));
        assert_eq!(c.get(&LISTENER_BUS_EVENT_QUEUE_CAPACITY), Ok(10_000));
    }

    #[test]
    fn yarn_and_sparkyard_defaults() {
        let c = SparkConf::new();
        let rm = c.get(&RM_ADDRESS).unwrap();
        assert_eq!((rm.host.as_str(), rm.port), ("127.0.0.1", 8032));
        assert_eq!(rm.to_string(), "127.0.0.1:8032");
        assert_eq!(c.get(&RM_AM_MAX_ATTEMPTS), Ok(2));
        assert_eq!(c.get(&RM_SCHEDULER_MAXIMUM_ALLOCATION_MB), Ok(8192));
        assert_eq!(c.get(&RM_SCHEDULER_MAXIMUM_ALLOCATION_VCORES), Ok(4));
        assert_eq!(c.get(&RM_SCHEDULER_MINIMUM_ALLOCATION_MB), Ok(1024));
        assert_eq!(c.get(&RM_SCHEDULER_MINIMUM_ALLOCATION_VCORES), Ok(1));
        assert_eq!(c.get(&NM_PMEM_MB), Ok(8192));
        assert_eq!(c.get(&NM_VCORES), Ok(8));
        assert_eq!(c.get(&RM_AM_EXPIRY_INTERVAL_MS), Ok(Duration::from_secs(600)));
        assert_eq!(c.get(&CAPACITY_ROOT_QUEUES), Ok(vec!["default".to_string()]));
        assert_eq!(c.get(&MAXIMUM_AM_RESOURCE_PERCENT), Ok(0.1));
        assert_eq!(c.get(&RM_MAX_COMPLETED_APPLICATIONS), Ok(1000));
        assert_eq!(c.get(&RM_NM_HEARTBEAT_INTERVAL_MS), Ok(Duration::from_secs(1)));
        assert_eq!(c.get(&RM_NM_EXPIRY_INTERVAL_MS), Ok(Duration::from_secs(600)));
        assert_eq!(c.get(&RM_CLUSTER_ID), Ok("sparkyard".to_string()));
        assert_eq!(c.get(&SUPERVISOR_MAX_RESTARTS), Ok(3));
        assert_eq!(c.get(&SUPERVISOR_RESTART_PERIOD), Ok(Duration::from_secs(5)));
        assert_eq!(c.get(&SUPERVISOR_BACKOFF), Ok(Duration::ZERO));
        assert_eq!(c.get(&SUPERVISOR_MAX_BACKOFF), Ok(Duration::from_secs(1)));
        assert_eq!(c.get(&SUPERVISOR_SHUTDOWN_TIMEOUT), Ok(Duration::from_secs(5)));
        assert_eq!(c.get(&CHAOS_SEED), Ok(None));
    }

    #[test]
    fn fallbacks_read_the_other_key() {
        let mut c = SparkConf::new();
        c.set("spark.network.timeout", "300s");
        assert_eq!(c.get(&RPC_ASK_TIMEOUT), Ok(Duration::from_secs(300)));
        assert_eq!(c.get(&RPC_LOOKUP_TIMEOUT), Ok(Duration::from_secs(300)));
        c.set("spark.rpc.askTimeout", "30");
        assert_eq!(c.get(&RPC_ASK_TIMEOUT), Ok(Duration::from_secs(30)));

        c.set("spark.locality.wait", "500ms");
        assert_eq!(c.get(&LOCALITY_WAIT_NODE), Ok(Duration::from_millis(500)));
        assert_eq!(c.get(&LOCALITY_WAIT_PROCESS), Ok(Duration::from_millis(500)));
        c.set("spark.locality.wait.rack", "0");
        assert_eq!(c.get(&LOCALITY_WAIT_RACK), Ok(Duration::ZERO));

        c.set("spark.dynamicAllocation.minExecutors", "3");
        assert_eq!(c.get(&DYN_ALLOCATION_INITIAL_EXECUTORS), Ok(3));
        c.set("spark.dynamicAllocation.initialExecutors", "5");
        assert_eq!(c.get(&DYN_ALLOCATION_INITIAL_EXECUTORS), Ok(5));

        c.set("spark.dynamicAllocation.schedulerBacklogTimeout", "4");
        assert_eq!(
            c.get(&DYN_ALLOCATION_SUSTAINED_SCHEDULER_BACKLOG_TIMEOUT),
            Ok(Duration::from_secs(4))
        );
        // An error in the fallback key is reported under that key.
        c.set("spark.locality.wait", "soon");
        let e = c.get(&LOCALITY_WAIT_NODE).unwrap_err().to_string();
        assert!(
            e.starts_with("invalid value for spark.locality.wait: 'soon'"),
            "{e}"
        );
    }

    #[test]
    fn alternatives_are_read_when_the_key_is_unset() {
        let mut c = SparkConf::new();
        c.set("spark.yarn.max.executor.failures", "7");
        assert_eq!(c.get(&MAX_EXECUTOR_FAILURES), Ok(Some(7)));
        c.set("spark.executor.maxNumFailures", "9");
        assert_eq!(c.get(&MAX_EXECUTOR_FAILURES), Ok(Some(9)));

        c.set("spark.yarn.executor.failuresValidityInterval", "1h");
        assert_eq!(
            c.get(&EXECUTOR_ATTEMPT_FAILURE_VALIDITY_INTERVAL_MS),
            Ok(Some(Duration::from_secs(3600)))
        );
        c.set("spark.yarn.executor.memoryOverhead", "512");
        assert_eq!(c.get(&EXECUTOR_MEMORY_OVERHEAD), Ok(Some(512 << 20)));
        // A bad alternative value is reported under the name that was set.
        c.set(
            "spark.yarn.blacklist.executor.launch.blacklisting.enabled",
            "maybe",
        );
        let e = c
            .get(&YARN_EXECUTOR_LAUNCH_EXCLUDE_ON_FAILURE_ENABLED)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "invalid value for spark.yarn.blacklist.executor.launch.blacklisting.enabled: 'maybe'"
            ),
            "{e}"
        );
    }

    #[test]
    fn value_checks() {
        let cases: &[(&str, &str, &str)] = &[
            ("spark.task.maxFailures", "0", "'0' (must be at least 1)"),
            ("spark.executor.cores", "0", "'0' (must be at least 1)"),
            ("spark.task.cpus", "0", "(must be at least 1)"),
            ("spark.speculation.interval", "0", "(must be greater than 0)"),
            (
                "spark.scheduler.revive.interval",
                "0ms",
                "(must be greater than 0)",
            ),
            (
                "spark.redaction.regex",
                "(?<=secret)",
                "(must be a regular expression)",
            ),
            (
                "spark.rpc.message.maxSize",
                "2048",
                "(must be more than 0 and at most 2047m)",
            ),
            (
                "spark.rpc.message.maxSize",
                "0",
                "(must be more than 0 and at most 2047m)",
            ),
            ("spark.executor.memory", "100k", "(must be at least 1m)"),
            ("spark.task.maxDirectResultSize", "2g", "(must be less than 2g)"),
            (
                "spark.executor.memoryOverheadFactor",
                "0",
                "(must be greater than 0)",
            ),
            (
                "spark.scheduler.listenerbus.eventqueue.capacity",
                "0",
                "(must be at least 1)",
            ),
            (
                "spark.speculation.efficiency.longRunTaskFactor",
                "0.5",
                "(must be at least 1)",
            ),
            (
                "yarn.resourcemanager.am.max-attempts",
                "0",
                "(must be at least 1)",
            ),
            (
                "yarn.scheduler.capacity.root.queues",
                " , ",
                "(must name at least one queue)",
            ),
            (
                "spark.sparkyard.supervisor.restartPeriod",
                "0s",
                "(must be greater than 0)",
            ),
        ];
        for (key, value, expected) in cases {
            let info = find_key(key).unwrap_or_else(|| panic!("{key} unknown"));
            let e = info.check_value(key, value).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("invalid value for {key}: '{value}'")) && e.ends_with(expected),
                "{key}={value}: {e}"
            );
        }
        assert!(find_key("spark.rpc.message.maxSize")
            .unwrap()
            .check_value("spark.rpc.message.maxSize", "2047")
            .is_ok());
    }

    #[test]
    fn parse_errors_name_key_value_and_expectation() {
        let mut c = SparkConf::new();
        c.set("spark.executor.memory", "12x");
        assert_eq!(
            c.get(&EXECUTOR_MEMORY).unwrap_err().to_string(),
            "invalid value for spark.executor.memory: '12x' is not a size (expected a number with an optional unit b, k, m, g, t, p, e.g. 512m or 4g)"
        );
        c.set("spark.scheduler.revive.interval", "abc");
        assert_eq!(
            c.get(&SCHEDULER_REVIVE_INTERVAL).unwrap_err().to_string(),
            "invalid value for spark.scheduler.revive.interval: 'abc' is not a time (expected a number with an optional unit us, ms, s, m/min, h, d, e.g. 100ms or 3s)"
        );
        c.set("spark.task.maxFailures", "0");
        assert_eq!(
            c.get(&TASK_MAX_FAILURES).unwrap_err().to_string(),
            "invalid value for spark.task.maxFailures: '0' (must be at least 1)"
        );
        c.set("spark.executor.cores", "-2");
        assert_eq!(
            c.get(&EXECUTOR_CORES).unwrap_err().to_string(),
            "invalid value for spark.executor.cores: '-2' is not a whole number (expected 0 to 4294967295)"
        );
        c.set("spark.submit.deployMode", "Cluster");
        assert_eq!(
            c.get(&SUBMIT_DEPLOY_MODE).unwrap_err().to_string(),
            "invalid value for spark.submit.deployMode: 'Cluster' is not one of client, cluster"
        );
        c.set("spark.speculation", "yes");
        assert!(c.get(&SPECULATION_ENABLED).is_err());
        c.set("spark.speculation.multiplier", "NaN");
        assert!(c.get(&SPECULATION_MULTIPLIER).is_err());
        c.set("spark.sparkyard.chaos.seed", "-1");
        assert!(c.get(&CHAOS_SEED).is_err());
    }

    #[test]
    fn typed_reads_of_set_values() {
        let mut c = SparkConf::new();
        c.set("spark.executor.memory", "2048")
            .set("spark.task.maxDirectResultSize", "4096")
            .set("spark.scheduler.mode", "fair")
            .set("spark.submit.deployMode", " cluster ")
            .set("spark.executor.instances", "5")
            .set("spark.yarn.tags", "a, b")
            .set("spark.sparkyard.supervisor.backoff", "1m 30s")
            .set("spark.sparkyard.supervisor.maxBackoff", "250")
            .set("spark.sparkyard.chaos.seed", "42")
            .set("spark.rpc.message.maxSize", "64m")
            .set("yarn.resourcemanager.address", "rm.example.com:0");
        assert_eq!(c.get(&EXECUTOR_MEMORY), Ok(2048 << 20));
        assert_eq!(c.get(&TASK_MAX_DIRECT_RESULT_SIZE), Ok(4096));
        assert_eq!(c.get(&SCHEDULER_MODE), Ok("FAIR"));
        assert_eq!(c.get(&SUBMIT_DEPLOY_MODE), Ok("cluster"));
        assert_eq!(c.get(&EXECUTOR_INSTANCES), Ok(Some(5)));
        assert_eq!(
            c.get(&APPLICATION_TAGS),
            Ok(Some(vec!["a".to_string(), "b".to_string()]))
        );
        assert_eq!(c.get(&SUPERVISOR_BACKOFF), Ok(Duration::from_secs(90)));
        assert_eq!(c.get(&SUPERVISOR_MAX_BACKOFF), Ok(Duration::from_millis(250)));
        assert_eq!(c.get(&CHAOS_SEED), Ok(Some(42)));
        assert_eq!(c.get(&RPC_MESSAGE_MAX_SIZE), Ok(64 << 20));
        assert_eq!(c.get(&RM_ADDRESS).map(|a| a.port), Ok(0));
        // Spark's own time keys do not take compound durations.
        c.set("spark.network.timeout", "1m 30s");
        assert!(c.get(&NETWORK_TIMEOUT).is_err());
    }

    #[test]
    fn host_port_values() {
        let check = |v: &str| {
            find_key("yarn.resourcemanager.address")
                .unwrap()
                .check_value("yarn.resourcemanager.address", v)
        };
        assert!(check("127.0.0.1:8032").is_ok());
        assert!(check("localhost:65535").is_ok());
        assert!(check("[::1]:8032").is_ok());
        let e = check("localhost:65536").unwrap_err().to_string();
        assert!(e.contains("port '65536' is not a number from 0 to 65535"), "{e}");
        assert!(check("localhost").is_err());
        assert!(check(":8032").is_err());
        assert!(check("bad_host:8032").is_err());
        assert!(check("[nonsense]:1").is_err());
        assert!(check("host:-1").is_err());
    }

    #[test]
    fn find_key_matches_names_alternatives_and_patterns() {
        assert_eq!(
            find_key("spark.executor.cores").map(|k| k.key),
            Some("spark.executor.cores")
        );
        assert_eq!(
            find_key("spark.yarn.max.executor.failures").map(|k| k.key),
            Some("spark.executor.maxNumFailures")
        );
        assert_eq!(
            find_key("yarn.sparkyard.nodemanager.host9").map(|k| k.key),
            Some("yarn.sparkyard.nodemanager.<host>")
        );
        assert_eq!(
            find_key("spark.executorEnv.JAVA_HOME").map(|k| k.key),
            Some("spark.executorEnv.<name>")
        );
        assert!(find_key("spark.executor.memroy").is_none());
        let info = find_key("spark.executor.memory").unwrap();
        assert!(info.matches("spark.executor.memory"));
        assert!(!info.is_pattern());
        assert_eq!(info.value_type, "size in bytes (bare number in MiB)");
        assert_eq!(info.default, "1g");
        assert!(info.doc.starts_with("Heap memory of each executor."));
        let debug = format!("{info:?}");
        assert!(debug.contains("spark.executor.memory"));
    }
}
