//! The operation registry: functions registered by name in the binary (as Spark ships the
//! user's jar), which lineage nodes refer to by name ([`OpCall`](super::lineage::OpCall))
//! together with their arguments (what a Scala closure would have captured).
//!
//! Layer: rdd (the Spark side's data model, above yarn; no actors).
//!
//! An operation is one of five kinds ([`Op`]): `Map` (a record to a record), `Filter` (a
//! predicate), `FlatMap` (a record to any number of records, pushed into a buffer the
//! runtime reuses), `MapPartitions` (an iterator of the partition's records to an iterator)
//! and `Reduce` (two values to one: `reduce`, `reduceByKey`). Every function gets an
//! [`OpCtx`]: the call's arguments and the running task's context (so an operation can sleep
//! on the cluster clock or notice it was killed), and answers `Result<_, TaskError>`; an
//! error becomes the task's failure as is (use [`TaskError::exception`] with a Java-style
//! class name).
//!
//! The registry is process-wide: [`register`] (registering a name again replaces it),
//! [`lookup`], [`resolve`] (an unknown name is a `java.lang.ClassNotFoundException` with
//! message `operation 'x' is not registered`). [`register_with_range_sum`] registers an
//! integer Map operation with its fused form over a range (see [`super::fused`]);
//! [`is_builtin`] tells whether a name still holds its built-in. Built-ins are there from the
//! first use:
//!
//! | name | kind | what it does |
//! | --- | --- | --- |
//! | `identity` | Map | `x => x` |
//! | `pair_with_one` | Map | `x => (x, 1)` |
//! | `swap` | Map | `(a, b) => (b, a)` |
//! | `to_string` | Map | `x => x.toString` (Scala's rendering) |
//! | `append` | Map | `x => x.toString + args(0)` (seed 002's `_ + "th value"`) |
//! | `sleep_ms` | Map | sleeps `args(0)` ms through the task context, then `x => x` |
//! | `fail` | Map | fails: `java.lang.RuntimeException` with message `args(0)` (default `fail`) |
//! | `fail_attempts_below` | Map | fails (`IllegalStateException`) while the attempt number is below `args(0)`, else `x => x` |
//! | `split` | FlatMap | Java's `line.split(sep)` for the literal separator `args(0)` (default `" "`): empty words kept except trailing ones |
//! | `add`, `sum` | Reduce | `_ + _` on numbers ([`Value::numeric_add`]) |
//! | `min`, `max` | Reduce | the smaller / larger ([`Value::numeric_cmp`]) |
//! | `combine_values_by_key` | MapPartitions | internal: `reduceByKey` on an RDD already partitioned its way (no shuffle); `args = [op name, List(op args)]` |
//! | `group_values_by_key` | MapPartitions | internal: `groupByKey` on an RDD already partitioned its way |

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use super::aomap::AppendOnlyMap;
use super::task::{TaskContext, TaskError};
use super::value::Value;

/// The records of a partition as they stream through a task.
pub type Records<'a> = Box<dyn Iterator<Item = Result<Value, TaskError>> + 'a>;
/// A one-to-one map over records.
pub type MapFn = Arc<dyn Fn(&OpCtx<'_>, Value) -> Result<Value, TaskError> + Send + Sync>;
/// A predicate over records.
pub type FilterFn = Arc<dyn Fn(&OpCtx<'_>, &Value) -> Result<bool, TaskError> + Send + Sync>;
/// A record to any number of records, pushed in order into the buffer (which comes empty).
pub type FlatMapFn = Arc<dyn Fn(&OpCtx<'_>, Value, &mut Vec<Value>) -> Result<(), TaskError> + Send + Sync>;
/// A partition's records to records (lazily or not).
pub type MapPartitionsFn =
    Arc<dyn for<'a> Fn(OpCtx<'a>, Records<'a>) -> Result<Records<'a>, TaskError> + Send + Sync>;
/// An associative merge of two values.
pub type ReduceFn = Arc<dyn Fn(&OpCtx<'_>, Value, Value) -> Result<Value, TaskError> + Send + Sync>;

/// A registered operation.
#[derive(Clone)]
pub enum Op {
    Map(MapFn),
    Filter(FilterFn),
    FlatMap(FlatMapFn),
    MapPartitions(MapPartitionsFn),
    Reduce(ReduceFn),
}

impl Op {
    pub fn map(f: impl Fn(&OpCtx<'_>, Value) -> Result<Value, TaskError> + Send + Sync + 'static) -> Op {
        Op::Map(Arc::new(f))
    }

    pub fn filter(f: impl Fn(&OpCtx<'_>, &Value) -> Result<bool, TaskError> + Send + Sync + 'static) -> Op {
        Op::Filter(Arc::new(f))
    }

    /// A flat map pushing its records into the runtime's buffer (no allocation per record).
    pub fn flat_map_into(
        f: impl Fn(&OpCtx<'_>, Value, &mut Vec<Value>) -> Result<(), TaskError> + Send + Sync + 'static,
    ) -> Op {
        Op::FlatMap(Arc::new(f))
    }

    /// A flat map answering a vector.
    pub fn flat_map(
        f: impl Fn(&OpCtx<'_>, Value) -> Result<Vec<Value>, TaskError> + Send + Sync + 'static,
    ) -> Op {
        Op::FlatMap(Arc::new(
            move |ctx: &OpCtx<'_>, v: Value, out: &mut Vec<Value>| {
                out.extend(f(ctx, v)?);
                Ok(())
            },
        ))
    }

    pub fn map_partitions(
        f: impl for<'a> Fn(OpCtx<'a>, Records<'a>) -> Result<Records<'a>, TaskError> + Send + Sync + 'static,
    ) -> Op {
        Op::MapPartitions(Arc::new(f))
    }

    pub fn reduce(
        f: impl Fn(&OpCtx<'_>, Value, Value) -> Result<Value, TaskError> + Send + Sync + 'static,
    ) -> Op {
        Op::Reduce(Arc::new(f))
    }

    /// `"Map"`, `"Filter"`, `"FlatMap"`, `"MapPartitions"` or `"Reduce"`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Op::Map(_) => "Map",
            Op::Filter(_) => "Filter",
            Op::FlatMap(_) => "FlatMap",
            Op::MapPartitions(_) => "MapPartitions",
            Op::Reduce(_) => "Reduce",
        }
    }
}

impl std::fmt::Debug for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Op::{}", self.kind_name())
    }
}

/// What an operation sees: its call's arguments and the task running it.
#[derive(Clone, Copy)]
pub struct OpCtx<'a> {
    pub args: &'a [Value],
    pub task: &'a dyn TaskContext,
}

impl<'a> OpCtx<'a> {
    pub fn new(args: &'a [Value], task: &'a dyn TaskContext) -> OpCtx<'a> {
        OpCtx { args, task }
    }

    /// Argument `i`, or an IllegalArgumentException naming the operation.
    pub fn arg(&self, i: usize, op: &str) -> Result<&'a Value, TaskError> {
        self.args.get(i).ok_or_else(|| {
            TaskError::exception(
                "java.lang.IllegalArgumentException",
                format!("operation '{op}' needs argument {i}"),
            )
        })
    }

    /// Sleeps through the task context (a kill interrupts it with `Err(Killed)`).
    pub fn sleep(&self, d: Duration) -> Result<(), TaskError> {
        self.task.sleep(d)
    }

    /// `Err(Killed)` once the task was told to stop.
    pub fn check_cancelled(&self) -> Result<(), TaskError> {
        self.task.check_cancelled()
    }

    /// `BarrierTaskContext.get().barrier()`: waits until every task of the barrier stage
    /// attempt got here.
    pub fn barrier(&self) -> Result<(), TaskError> {
        self.task
            .barrier_sync(super::task::BarrierMethod::Barrier, "")
            .map(|_| ())
    }

    /// `BarrierTaskContext.get().allGather(message)`: like [`OpCtx::barrier`], answering every
    /// task's message in partition order.
    pub fn all_gather(&self, message: &str) -> Result<Vec<String>, TaskError> {
        self.task
            .barrier_sync(super::task::BarrierMethod::AllGather, message)
    }
}

/// The task context of operations run on the driver (merging `reduce` results): never
/// cancelled, `sleep` sleeps the thread, no shuffle to fetch.
#[derive(Clone, Copy, Debug, Default)]
pub struct DriverContext;

impl TaskContext for DriverContext {
    fn stage_id(&self) -> u32 {
        0
    }
    fn partition_id(&self) -> u32 {
        0
    }
    fn attempt_number(&self) -> u32 {
        0
    }
    fn task_id(&self) -> u64 {
        0
    }
    fn check_cancelled(&self) -> Result<(), TaskError> {
        Ok(())
    }
    fn sleep(&self, d: Duration) -> Result<(), TaskError> {
        std::thread::sleep(d);
        Ok(())
    }
    fn fetch_shuffle(&self, shuffle_id: u32, _reduce_id: u32) -> Result<Vec<Vec<u8>>, TaskError> {
        Err(TaskError::exception(
            "java.lang.IllegalStateException",
            format!("the driver cannot fetch shuffle {shuffle_id}"),
        ))
    }
}

fn registry() -> &'static RwLock<HashMap<String, Op>> {
    static REGISTRY: OnceLock<RwLock<HashMap<String, Op>>> = OnceLock::new();
    REGISTRY.get_or_init(|| RwLock::new(builtin_ops().clone()))
}

/// The built-in operations as first registered (the registry starts as a copy).
fn builtin_ops() -> &'static HashMap<String, Op> {
    static BUILTINS: OnceLock<HashMap<String, Op>> = OnceLock::new();
    BUILTINS.get_or_init(builtins)
}

impl Op {
    /// Whether both are the same registered function (not merely the same kind).
    pub fn same(&self, other: &Op) -> bool {
        match (self, other) {
            (Op::Map(a), Op::Map(b)) => Arc::ptr_eq(a, b),
            (Op::Filter(a), Op::Filter(b)) => Arc::ptr_eq(a, b),
            (Op::FlatMap(a), Op::FlatMap(b)) => Arc::ptr_eq(a, b),
            (Op::MapPartitions(a), Op::MapPartitions(b)) => Arc::ptr_eq(a, b),
            (Op::Reduce(a), Op::Reduce(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// Whether `name` is still the built-in operation of that name (an application may register
/// its own under a built-in's name; then fused paths that know the built-in stand aside).
pub fn is_builtin(name: &str) -> bool {
    match (builtin_ops().get(name), lookup(name)) {
        (Some(b), Some(current)) => b.same(&current),
        _ => false,
    }
}

/// The fused form of an integer Map operation followed by `reduce(add)`: the wrapping sum of
/// the operation's results over `count` integers `first, first + step, ...` (all within
/// `i64`). It must give what the Map operation and `add` give one record at a time.
pub type RangeSumFn = Arc<dyn Fn(i64, u64, i64) -> i64 + Send + Sync>;

fn range_sums() -> &'static RwLock<HashMap<String, (Op, RangeSumFn)>> {
    static SUMS: OnceLock<RwLock<HashMap<String, (Op, RangeSumFn)>>> = OnceLock::new();
    SUMS.get_or_init(|| RwLock::new(HashMap::new()))
}

/// Registers the Map operation `op` under `name` with its fused form over integer ranges
/// ([`RangeSumFn`]), which a task uses for `parallelize(range).map(name).reduce(add)`.
pub fn register_with_range_sum(name: impl Into<String>, op: Op, range_sum: RangeSumFn) {
    let name = name.into();
    range_sums()
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .insert(name.clone(), (op.clone(), range_sum));
    register(name, op);
}

/// The fused range sum of `name`, if the operation registered under it now is the one it was
/// registered with.
pub fn lookup_range_sum(name: &str) -> Option<RangeSumFn> {
    let current = lookup(name)?;
    let sums = range_sums().read().unwrap_or_else(|e| e.into_inner());
    let (op, f) = sums.get(name)?;
    op.same(&current).then(|| f.clone())
}

/// Registers a set of operations by name, as an application's code does when it is loaded
/// (Spark ships a user's jar to the driver and every executor); idempotent, a process may
/// call it many times. Whoever assembles a process hands it down to the Spark side.
pub type RegisterOperations = fn();

/// Registers `op` under `name`, replacing what was registered under it.
pub fn register(name: impl Into<String>, op: Op) {
    registry()
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .insert(name.into(), op);
}

/// The operation registered under `name`.
pub fn lookup(name: &str) -> Option<Op> {
    registry()
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(name)
        .cloned()
}

/// Every registered name, sorted.
pub fn registered_names() -> Vec<String> {
    let mut names: Vec<String> = registry()
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .keys()
        .cloned()
        .collect();
    names.sort();
    names
}

/// The operation registered under `name`, or the task failure Spark gives for a class it
/// cannot load: `java.lang.ClassNotFoundException: operation 'x' is not registered`.
pub fn resolve(name: &str) -> Result<Op, TaskError> {
    lookup(name).ok_or_else(|| {
        TaskError::exception(
            "java.lang.ClassNotFoundException",
            format!("operation '{name}' is not registered"),
        )
    })
}

/// The Reduce operation registered under `name`.
pub fn resolve_reduce(name: &str) -> Result<ReduceFn, TaskError> {
    match resolve(name)? {
        Op::Reduce(f) => Ok(f),
        other => Err(TaskError::exception(
            "java.lang.IllegalArgumentException",
            format!(
                "operation '{name}' is a {} operation, not a Reduce operation",
                other.kind_name()
            ),
        )),
    }
}

/// A value's rendering for error messages, cut at 100 characters.
pub fn short(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(100) {
        Some((i, _)) => format!("{} {}...", v.type_name(), &s[..i]),
        None => format!("{} {s}", v.type_name()),
    }
}

fn class_cast(op: &str, wanted: &str, v: &Value) -> TaskError {
    TaskError::exception(
        "java.lang.ClassCastException",
        format!("operation '{op}' needs {wanted}, got {}", short(v)),
    )
}

fn millis(ctx: &OpCtx<'_>, op: &str) -> Result<Duration, TaskError> {
    match ctx.arg(0, op)? {
        Value::I64(ms) if *ms >= 0 => Ok(Duration::from_millis(ms.unsigned_abs())),
        other => Err(class_cast(
            op,
            "a non-negative number of milliseconds as argument 0",
            other,
        )),
    }
}

/// Java's `s.split(sep)` for a literal, non-empty separator, pushing the parts into `out`:
/// a string without the separator (including `""`) gives itself; otherwise trailing empty
/// strings are removed (`"a  b ".split(" ")` is `[a, "", b]`, `" ".split(" ")` is empty).
pub fn java_split_into(s: &str, sep: &str, out: &mut Vec<Value>) {
    if sep.is_empty() {
        // Java's split("") gives every character (no leading empty string since Java 8).
        out.extend(s.chars().map(|c| Value::Str(c.to_string())));
        return;
    }
    if !s.contains(sep) {
        out.push(Value::str(s));
        return;
    }
    let mut pending_empty = 0usize;
    for part in s.split(sep) {
        if part.is_empty() {
            pending_empty += 1;
        } else {
            out.extend(std::iter::repeat_n(Value::str(""), pending_empty));
            pending_empty = 0;
            out.push(Value::str(part));
        }
    }
    // Empty parts not followed by a non-empty one are trailing: dropped.
}

fn combine_values_by_key<'a>(ctx: OpCtx<'a>, records: Records<'a>) -> Result<Records<'a>, TaskError> {
    const OP: &str = "combine_values_by_key";
    let name = match ctx.arg(0, OP)? {
        Value::Str(s) => s.as_str(),
        other => return Err(class_cast(OP, "a reduce operation's name as argument 0", other)),
    };
    let args = match ctx.args.get(1) {
        Some(Value::List(a)) => a.as_slice(),
        _ => &[],
    };
    let f = resolve_reduce(name)?;
    let octx = OpCtx::new(args, ctx.task);
    let mut map: AppendOnlyMap<Value, Value> = AppendOnlyMap::new();
    for r in records {
        let (k, v) = r?
            .into_pair()
            .map_err(|v| class_cast(OP, "(key, value) records", &v))?;
        map.change_value(k, |old| match old {
            Some(o) => f(&octx, o, v),
            None => Ok(v),
        })?;
    }
    Ok(Box::new(map.into_entries().map(|(k, v)| Ok(Value::pair(k, v)))))
}

fn group_values_by_key<'a>(_ctx: OpCtx<'a>, records: Records<'a>) -> Result<Records<'a>, TaskError> {
    const OP: &str = "group_values_by_key";
    let mut map: AppendOnlyMap<Value, Vec<Value>> = AppendOnlyMap::new();
    for r in records {
        let (k, v) = r?
            .into_pair()
            .map_err(|v| class_cast(OP, "(key, value) records", &v))?;
        map.change_value(k, |old| {
            let mut buf = old.unwrap_or_default();
            buf.push(v);
            Ok::<_, TaskError>(buf)
        })?;
    }
    Ok(Box::new(
        map.into_entries()
            .map(|(k, vs)| Ok(Value::pair(k, Value::List(vs)))),
    ))
}

fn builtins() -> HashMap<String, Op> {
    let mut m: HashMap<String, Op> = HashMap::new();
    m.insert("identity".into(), Op::map(|_, v| Ok(v)));
    m.insert("pair_with_one".into(), Op::map(|_, v| Ok(Value::pair(v, 1))));
    m.insert(
        "swap".into(),
        Op::map(|_, v| match v.into_pair() {
            Ok((a, b)) => Ok(Value::pair(b, a)),
            Err(v) => Err(class_cast("swap", "a pair", &v)),
        }),
    );
    m.insert("to_string".into(), Op::map(|_, v| Ok(Value::Str(v.to_string()))));
    m.insert(
        "append".into(),
        Op::map(|ctx, v| {
            let suffix = ctx.arg(0, "append")?;
            let mut s = match v {
                Value::Str(s) => s,
                other => other.to_string(),
            };
            match suffix {
                Value::Str(x) => s.push_str(x),
                other => s.push_str(&other.to_string()),
            }
            Ok(Value::Str(s))
        }),
    );
    m.insert(
        "sleep_ms".into(),
        Op::map(|ctx, v| {
            ctx.sleep(millis(ctx, "sleep_ms")?)?;
            Ok(v)
        }),
    );
    m.insert(
        "fail".into(),
        Op::map(|ctx, _| {
            let message = match ctx.args.first() {
                Some(Value::Str(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => "fail".to_string(),
            };
            Err(TaskError::exception("java.lang.RuntimeException", message))
        }),
    );
    m.insert(
        "fail_attempts_below".into(),
        Op::map(|ctx, v| {
            let below = match ctx.arg(0, "fail_attempts_below")? {
                Value::I64(n) => *n,
                other => {
                    return Err(class_cast(
                        "fail_attempts_below",
                        "an integer as argument 0",
                        other,
                    ))
                }
            };
            let attempt = ctx.task.attempt_number();
            if i64::from(attempt) < below {
                return Err(TaskError::exception(
                    "java.lang.IllegalStateException",
                    format!(
                        "injected failure of partition {} in attempt {attempt}",
                        ctx.task.partition_id()
                    ),
                ));
            }
            Ok(v)
        }),
    );
    m.insert(
        "split".into(),
        Op::flat_map_into(|ctx, v, out| {
            let sep = match ctx.args.first() {
                None => " ",
                Some(Value::Str(s)) => s.as_str(),
                Some(other) => return Err(class_cast("split", "a string separator as argument 0", other)),
            };
            match v {
                Value::Str(s) => {
                    java_split_into(&s, sep, out);
                    Ok(())
                }
                other => Err(class_cast("split", "a string", &other)),
            }
        }),
    );
    let add = Op::reduce(|_, a, b| {
        a.numeric_add(b)
            .map_err(|m| TaskError::exception("java.lang.ClassCastException", m))
    });
    m.insert("add".into(), add.clone());
    m.insert("sum".into(), add);
    m.insert(
        "min".into(),
        Op::reduce(|_, a, b| Ok(if b.numeric_cmp(&a).is_lt() { b } else { a })),
    );
    m.insert(
        "max".into(),
        Op::reduce(|_, a, b| Ok(if b.numeric_cmp(&a).is_gt() { b } else { a })),
    );
    m.insert(
        "combine_values_by_key".into(),
        Op::map_partitions(combine_values_by_key),
    );
    m.insert(
        "group_values_by_key".into(),
        Op::map_partitions(group_values_by_key),
    );
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(name: &str, args: &[Value], v: Value) -> Result<Value, TaskError> {
        match resolve(name)? {
            Op::Map(f) => f(&OpCtx::new(args, &DriverContext), v),
            other => panic!("{name}: {other:?}"),
        }
    }

    fn flat(name: &str, args: &[Value], v: Value) -> Vec<String> {
        let Ok(Op::FlatMap(f)) = resolve(name) else {
            panic!("{name}")
        };
        let mut out = Vec::new();
        f(&OpCtx::new(args, &DriverContext), v, &mut out).unwrap();
        out.into_iter().map(|x| x.to_string()).collect()
    }

    fn reduce(name: &str, a: Value, b: Value) -> Result<Value, TaskError> {
        resolve_reduce(name)?(&OpCtx::new(&[], &DriverContext), a, b)
    }

    #[test]
    fn register_replaces_and_unknown_names_fail_cleanly() {
        register(
            "test.ops.twice",
            Op::map(|_, v| v.clone().numeric_add(v).map_err(|m| TaskError::exception("E", m))),
        );
        assert_eq!(map("test.ops.twice", &[], Value::I64(21)), Ok(Value::I64(42)));
        register("test.ops.twice", Op::map(|_, _| Ok(Value::Null)));
        assert_eq!(map("test.ops.twice", &[], Value::I64(21)), Ok(Value::Null));
        let e = resolve("test.ops.nothing").unwrap_err();
        assert_eq!(
            e,
            TaskError::exception(
                "java.lang.ClassNotFoundException",
                "operation 'test.ops.nothing' is not registered"
            )
        );
        let Err(e) = resolve_reduce("identity") else {
            panic!("identity is a Map")
        };
        assert!(
            e.to_string()
                .contains("is a Map operation, not a Reduce operation"),
            "{e}"
        );
        let names = registered_names();
        assert!(names.contains(&"test.ops.twice".to_string()) && names.contains(&"add".to_string()));
        assert!(names.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn builtin_maps() {
        assert_eq!(map("identity", &[], Value::I64(3)), Ok(Value::I64(3)));
        assert_eq!(map("pair_with_one", &[], "w".into()), Ok(Value::pair("w", 1)));
        assert_eq!(map("swap", &[], Value::pair(1, "a")), Ok(Value::pair("a", 1)));
        let e = map("swap", &[], Value::I64(1)).unwrap_err();
        assert_eq!(
            e,
            TaskError::exception(
                "java.lang.ClassCastException",
                "operation 'swap' needs a pair, got I64 1"
            )
        );
        assert_eq!(
            map("to_string", &[], Value::pair("a", 1.0)),
            Ok(Value::str("(a,1.0)"))
        );
        assert_eq!(
            map("append", &[Value::str("th value")], Value::I64(1)),
            Ok(Value::str("1th value"))
        );
        assert_eq!(
            map("fail", &[Value::str("boom")], Value::Null),
            Err(TaskError::exception("java.lang.RuntimeException", "boom"))
        );
        assert_eq!(
            map("sleep_ms", &[Value::I64(0)], Value::I64(7)),
            Ok(Value::I64(7))
        );
        assert!(map("sleep_ms", &[], Value::I64(7))
            .unwrap_err()
            .to_string()
            .contains("needs argument 0"));
        assert!(map("sleep_ms", &[Value::I64(-1)], Value::I64(7)).is_err());
        // DriverContext's attempt is 0: fails below 1, passes below 0.
        assert!(map("fail_attempts_below", &[Value::I64(1)], Value::Null).is_err());
        assert_eq!(
            map("fail_attempts_below", &[Value::I64(0)], Value::Null),
            Ok(Value::Null)
        );
    }

    #[test]
    fn split_is_javas() {
        // The JVM's answers: "a  b ".split(" ") = [a, "", b]; "".split(" ") = [""];
        // " ".split(" ") = []; " a".split(" ") = ["", a].
        assert_eq!(flat("split", &[], "a  b ".into()), vec!["a", "", "b"]);
        assert_eq!(flat("split", &[], "".into()), vec![""]);
        assert_eq!(flat("split", &[], " ".into()), Vec::<String>::new());
        assert_eq!(flat("split", &[], " a".into()), vec!["", "a"]);
        assert_eq!(flat("split", &[Value::str(",")], "x,y,,".into()), vec!["x", "y"]);
        assert_eq!(
            flat("split", &[Value::str("ab")], "1ab2ab".into()),
            vec!["1", "2"]
        );
        assert_eq!(flat("split", &[Value::str("")], "xy".into()), vec!["x", "y"]);
    }

    #[test]
    fn builtin_reduces() {
        assert_eq!(reduce("add", Value::I64(2), Value::I64(3)), Ok(Value::I64(5)));
        assert_eq!(reduce("sum", Value::I64(1), Value::F64(0.5)), Ok(Value::F64(1.5)));
        let e = reduce("add", Value::str("a"), Value::I64(1)).unwrap_err();
        assert_eq!(
            e,
            TaskError::exception("java.lang.ClassCastException", "cannot add Str a and I64 1")
        );
        assert_eq!(reduce("max", Value::I64(1), Value::F64(7.5)), Ok(Value::F64(7.5)));
        assert_eq!(reduce("min", Value::I64(1), Value::F64(7.5)), Ok(Value::I64(1)));
        assert_eq!(
            reduce("min", Value::str("b"), Value::str("a")),
            Ok(Value::str("a"))
        );
    }

    #[test]
    fn short_cuts_long_values() {
        let long = Value::Str("x".repeat(500));
        let s = short(&long);
        assert!(
            s.starts_with("Str xxx") && s.ends_with("...") && s.len() < 120,
            "{s}"
        );
        assert_eq!(short(&Value::I64(5)), "I64 5");
    }
}
