//! `Value`: the records an RDD holds, with a total order, a hash consistent with equality,
//! Scala-style display and the JVM hash codes Spark's `HashPartitioner` relies on.
//!
//! Layer: rdd (the Spark side's data model, above yarn; no actors).
//!
//! Equality, ordering and hashing are structural and by variant: `I64(1)` and `F64(1.0)` are
//! different values (as `1L` and `1.0` are different keys in a Scala `HashMap`). Variants
//! order as `Null < Bool < I64 < F64 < Str < Bytes < Pair < List`; inside a variant the
//! natural order applies, `F64` by [`f64::total_cmp`] (so `-0.0 < 0.0` and every NaN bit
//! pattern is a value of its own), pairs and lists lexicographically.
//!
//! Display follows what `println` shows for the matching Scala value: `null`, `true`, `42`,
//! doubles as Java's `Double.toString` (`1.0`, `1.0E7`, `1.0E-4`, `NaN`, `Infinity`),
//! strings raw, pairs as `(a,b)` and lists as `List(1, 2)`. Byte strings have no useful
//! Scala rendering (`[B@1f2a3b`), so they show as `Bytes(0a0bff)` (lower-case hex).
//!
//! Hash codes ([`Value::java_hash_code`]) are the ones the JVM gives the boxed value Spark
//! would hold, checked against Spark 4.3 / Scala 2.13.18 / Java 17:
//! * `Str`: `java.lang.String.hashCode` over UTF-16 code units;
//! * `I64`: one variant stands for both Scala's `Int` and `Long`; a value that fits an `Int`
//!   hashes as the `Int` would (`java.lang.Integer.hashCode`: the value itself), a larger one
//!   as `java.lang.Long.hashCode` (`(int)(v ^ (v >>> 32))`). The two differ only for negative
//!   values in `Int` range (`-1` hashes to -1 as an `Int`, to 0 as a `Long`); `Int` keys are
//!   what applications use (`1 to 10`, word counts), and Spark 4.3 places `-5 to 5` keys by
//!   their `Int` hash (checked). [`long_hash_code`] gives the `Long` hash when needed;
//! * `F64`: `java.lang.Double.hashCode` (NaN canonicalised); `Bool`: 1231 / 1237; `Null`: 0;
//! * `Pair`: `scala.Tuple2.hashCode` of Scala 2.13, i.e. MurmurHash3 `caseClassHash`: seed
//!   `0xcafebabe`, mix `"Tuple2".hashCode`, mix each element's `##`, finalise with arity 2
//!   (Scala 2.12, used by Spark 3.x's default build, does not mix the class name, so tuple
//!   keys partition differently there);
//! * `List`: `scala.collection.immutable.List.hashCode` (MurmurHash3 `listHash` with the
//!   `"Seq".hashCode` seed, including its arithmetic-progression `rangeHash` case);
//! * `Bytes`: `java.util.Arrays.hashCode(byte[])` (a JVM array key would hash by identity;
//!   Spark refuses array keys for `HashPartitioner`, so this is our own deterministic choice).
//!
//! Inside tuples and lists Scala hashes elements with `##`, which differs from `hashCode`
//! for numbers: a `Long` or `Double` holding an exact `Int` hashes as that `Int` (see
//! [`Value::scala_hash`]).

use serde::de::{self, DeserializeSeed, EnumAccess, SeqAccess, VariantAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

/// One record of an RDD. Serialized by serde's derived (externally tagged) form; decoding
/// refuses values nested more than [`MAX_DECODE_DEPTH`] levels deep (malformed input must
/// give an error, not overflow the stack).
#[derive(Clone, Debug, Serialize)]
pub enum Value {
    /// Scala's `null` (also what an absent value looks like).
    Null,
    /// A `Boolean`.
    Bool(bool),
    /// An integer (Spark's `Int` and `Long` both map here).
    I64(i64),
    /// A `Double`.
    F64(f64),
    /// A `String`.
    Str(String),
    /// An `Array[Byte]`.
    Bytes(#[serde(with = "serde_bytes")] Vec<u8>),
    /// A `Tuple2`: the key-value record of pair RDDs.
    Pair(Box<(Value, Value)>),
    /// A sequence (what `groupByKey` and `collect` produce).
    List(Vec<Value>),
}

impl Value {
    /// A pair `(k, v)`.
    pub fn pair(k: impl Into<Value>, v: impl Into<Value>) -> Value {
        Value::Pair(Box::new((k.into(), v.into())))
    }

    /// A string value.
    pub fn str(s: impl Into<String>) -> Value {
        Value::Str(s.into())
    }

    /// The variant's name, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "Null",
            Value::Bool(_) => "Bool",
            Value::I64(_) => "I64",
            Value::F64(_) => "F64",
            Value::Str(_) => "Str",
            Value::Bytes(_) => "Bytes",
            Value::Pair(_) => "Pair",
            Value::List(_) => "List",
        }
    }

    /// The integer, if this is an `I64`.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::I64(v) => Some(*v),
            _ => None,
        }
    }

    /// The number as a double, if this is an `I64` or an `F64`.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::I64(v) => Some(*v as f64),
            Value::F64(v) => Some(*v),
            _ => None,
        }
    }

    /// The boolean, if this is a `Bool`.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The string, if this is a `Str`.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The elements, if this is a `List`.
    pub fn as_list(&self) -> Option<&[Value]> {
        match self {
            Value::List(v) => Some(v),
            _ => None,
        }
    }

    /// Both halves, if this is a `Pair`.
    pub fn as_pair(&self) -> Option<(&Value, &Value)> {
        match self {
            Value::Pair(p) => Some((&p.0, &p.1)),
            _ => None,
        }
    }

    /// Both halves by value, or the value itself back when it is not a `Pair`.
    pub fn into_pair(self) -> Result<(Value, Value), Value> {
        match self {
            Value::Pair(p) => Ok(*p),
            other => Err(other),
        }
    }

    /// The elements by value, or the value itself back when it is not a `List`.
    pub fn into_list(self) -> Result<Vec<Value>, Value> {
        match self {
            Value::List(v) => Ok(v),
            other => Err(other),
        }
    }

    /// Whether this is `Null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// `self + other` for numbers, as Scala's `_ + _`: two `I64` give an `I64` (wrapping
    /// like a JVM `Long`), an `F64` on either side gives an `F64`. Anything else is an error
    /// naming both types.
    pub fn numeric_add(self, other: Value) -> Result<Value, String> {
        match (self, other) {
            (Value::I64(x), Value::I64(y)) => Ok(Value::I64(x.wrapping_add(y))),
            (Value::F64(x), Value::F64(y)) => Ok(Value::F64(x + y)),
            (Value::I64(x), Value::F64(y)) => Ok(Value::F64(x as f64 + y)),
            (Value::F64(x), Value::I64(y)) => Ok(Value::F64(x + y as f64)),
            (a, b) => Err(format!(
                "cannot add {} {a} and {} {b}",
                a.type_name(),
                b.type_name()
            )),
        }
    }

    /// Numeric order when both are numbers (`I64` and `F64` compared as doubles, ties by
    /// [`Ord`]), otherwise [`Ord`]'s: what `min` and `max` reduce with.
    pub fn numeric_cmp(&self, other: &Value) -> Ordering {
        match (self, other) {
            (Value::I64(a), Value::F64(b)) => (*a as f64).total_cmp(b).then(Ordering::Less),
            (Value::F64(a), Value::I64(b)) => a.total_cmp(&(*b as f64)).then(Ordering::Greater),
            _ => self.cmp(other),
        }
    }

    /// What a Java application printing the value shows: like [`Display`](fmt::Display)
    /// (Scala's `toString`) except that lists print as a `java.util.List` does, `[a, b]`
    /// (JavaWordCount-style programs see `groupByKey` values that way).
    pub fn to_java_string(&self) -> String {
        let mut out = String::new();
        self.write_java(&mut out);
        out
    }

    fn write_java(&self, out: &mut String) {
        use std::fmt::Write as _;
        match self {
            Value::Pair(p) => {
                out.push('(');
                p.0.write_java(out);
                out.push(',');
                p.1.write_java(out);
                out.push(')');
            }
            Value::List(xs) => {
                out.push('[');
                for (i, x) in xs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    x.write_java(out);
                }
                out.push(']');
            }
            other => {
                let _ = write!(out, "{other}");
            }
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::I64(_) => 2,
            Value::F64(_) => 3,
            Value::Str(_) => 4,
            Value::Bytes(_) => 5,
            Value::Pair(_) => 6,
            Value::List(_) => 7,
        }
    }

    /// The JVM `hashCode` of the value Spark would hold (see the module docs for each
    /// variant); this is what `HashPartitioner` uses.
    pub fn java_hash_code(&self) -> i32 {
        match self {
            Value::Null => 0,
            Value::Bool(b) => boolean_hash_code(*b),
            Value::I64(v) => scala_long_hash(*v),
            Value::F64(d) => double_hash_code(*d),
            Value::Str(s) => string_hash_code(s),
            Value::Bytes(b) => b
                .iter()
                .fold(1i32, |h, &x| h.wrapping_mul(31).wrapping_add(i32::from(x as i8))),
            Value::Pair(p) => tuple2_hash_code(&p.0, &p.1),
            Value::List(xs) => list_hash_code(xs),
        }
    }

    /// Scala's `##` of the value: like [`Value::java_hash_code`] except that numbers hash
    /// by their numeric value (`Statics.longHash` / `Statics.doubleHash`), so `1L`, `1` and
    /// `1.0` all give 1. Tuples and lists hash their elements with this.
    pub fn scala_hash(&self) -> i32 {
        match self {
            Value::I64(v) => scala_long_hash(*v),
            Value::F64(d) => scala_double_hash(*d),
            other => other.java_hash_code(),
        }
    }
}

/// How deeply pairs and lists may nest in a decoded [`Value`].
pub const MAX_DECODE_DEPTH: u32 = 128;

const VARIANTS: &[&str] = &["Null", "Bool", "I64", "F64", "Str", "Bytes", "Pair", "List"];

/// Decodes what the derived `Serialize` writes, with a nesting limit.
impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        ValueSeed { depth: 0 }.deserialize(d)
    }
}

#[derive(Clone, Copy)]
struct ValueSeed {
    depth: u32,
}

impl ValueSeed {
    fn deeper<E: de::Error>(self) -> Result<ValueSeed, E> {
        if self.depth >= MAX_DECODE_DEPTH {
            return Err(E::custom(format!(
                "value nested more than {MAX_DECODE_DEPTH} levels deep"
            )));
        }
        Ok(ValueSeed {
            depth: self.depth + 1,
        })
    }
}

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_enum("Value", VARIANTS, self)
    }
}

#[derive(Deserialize)]
#[serde(variant_identifier)]
enum Tag {
    Null,
    Bool,
    I64,
    F64,
    Str,
    Bytes,
    Pair,
    List,
}

impl<'de> Visitor<'de> for ValueSeed {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Value")
    }
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Value, A::Error> {
        let (tag, access) = data.variant::<Tag>()?;
        Ok(match tag {
            Tag::Null => {
                access.unit_variant()?;
                Value::Null
            }
            Tag::Bool => Value::Bool(access.newtype_variant()?),
            Tag::I64 => Value::I64(access.newtype_variant()?),
            Tag::F64 => Value::F64(access.newtype_variant()?),
            Tag::Str => Value::Str(access.newtype_variant()?),
            Tag::Bytes => Value::Bytes(access.newtype_variant::<serde_bytes::ByteBuf>()?.into_vec()),
            Tag::Pair => access.newtype_variant_seed(PairSeed(self.deeper()?))?,
            Tag::List => Value::List(access.newtype_variant_seed(ListSeed(self.deeper()?))?),
        })
    }
}

struct PairSeed(ValueSeed);

impl<'de> DeserializeSeed<'de> for PairSeed {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_tuple(2, self)
    }
}

impl<'de> Visitor<'de> for PairSeed {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a pair of Values")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let a = seq
            .next_element_seed(self.0)?
            .ok_or_else(|| de::Error::invalid_length(0, &self))?;
        let b = seq
            .next_element_seed(self.0)?
            .ok_or_else(|| de::Error::invalid_length(1, &self))?;
        Ok(Value::Pair(Box::new((a, b))))
    }
}

struct ListSeed(ValueSeed);

impl<'de> DeserializeSeed<'de> for ListSeed {
    type Value = Vec<Value>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<Value>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ListSeed {
    type Value = Vec<Value>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of Values")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Value>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = seq.next_element_seed(self.0)? {
            out.push(v);
        }
        Ok(out)
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Value {}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Value {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::I64(a), Value::I64(b)) => a.cmp(b),
            (Value::F64(a), Value::F64(b)) => a.total_cmp(b),
            (Value::Str(a), Value::Str(b)) => a.cmp(b),
            (Value::Bytes(a), Value::Bytes(b)) => a.cmp(b),
            (Value::Pair(a), Value::Pair(b)) => a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)),
            (Value::List(a), Value::List(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u8(self.rank());
        match self {
            Value::Null => {}
            Value::Bool(b) => b.hash(state),
            Value::I64(v) => v.hash(state),
            Value::F64(d) => d.to_bits().hash(state),
            Value::Str(s) => s.hash(state),
            Value::Bytes(b) => b.hash(state),
            Value::Pair(p) => {
                p.0.hash(state);
                p.1.hash(state);
            }
            Value::List(xs) => xs.hash(state),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::I64(v) => write!(f, "{v}"),
            Value::F64(d) => f.write_str(&java_double_to_string(*d)),
            Value::Str(s) => f.write_str(s),
            Value::Bytes(b) => {
                f.write_str("Bytes(")?;
                for x in b {
                    write!(f, "{x:02x}")?;
                }
                f.write_str(")")
            }
            Value::Pair(p) => write!(f, "({},{})", p.0, p.1),
            Value::List(xs) => {
                f.write_str("List(")?;
                for (i, x) in xs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{x}")?;
                }
                f.write_str(")")
            }
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::I64(v)
    }
}

impl From<i32> for Value {
    fn from(v: i32) -> Self {
        Value::I64(i64::from(v))
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::F64(v)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Str(v.to_string())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Str(v)
    }
}

impl From<Vec<Value>> for Value {
    fn from(v: Vec<Value>) -> Self {
        Value::List(v)
    }
}

impl<A: Into<Value>, B: Into<Value>> From<(A, B)> for Value {
    fn from((a, b): (A, B)) -> Self {
        Value::pair(a, b)
    }
}

/// `java.lang.String.hashCode`: `s[0]*31^(n-1) + ... + s[n-1]` over UTF-16 code units,
/// wrapping like Java's `int`.
/// An ASCII string (the common case) is hashed straight from its bytes, which are its code
/// units.
pub fn string_hash_code(s: &str) -> i32 {
    let bytes = s.as_bytes();
    if bytes.is_ascii() {
        return ascii_hash_code(bytes);
    }
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// `java.lang.String.hashCode` of ASCII bytes (each byte is one UTF-16 code unit), four bytes
/// a step: `h * 31^4 + b0 * 31^3 + b1 * 31^2 + b2 * 31 + b3` keeps one multiply on the chain.
/// Bytes of 0x80 and above would not be code units: callers pass ASCII only.
#[inline]
pub fn ascii_hash_code(bytes: &[u8]) -> i32 {
    let mut h = 0i32;
    let mut chunks = bytes.chunks_exact(4);
    for c in &mut chunks {
        let &[b0, b1, b2, b3] = c else { continue };
        let (b0, b1, b2, b3) = (i32::from(b0), i32::from(b1), i32::from(b2), i32::from(b3));
        h = h
            .wrapping_mul(923_521)
            .wrapping_add(b0.wrapping_mul(29_791))
            .wrapping_add(b1.wrapping_mul(961))
            .wrapping_add(b2.wrapping_mul(31))
            .wrapping_add(b3);
    }
    for &b in chunks.remainder() {
        h = h.wrapping_mul(31).wrapping_add(i32::from(b));
    }
    h
}

/// `java.lang.Long.hashCode`: `(int)(v ^ (v >>> 32))`.
pub fn long_hash_code(v: i64) -> i32 {
    let bits = v as u64;
    (bits ^ (bits >> 32)) as u32 as i32
}

/// `java.lang.Double.hashCode`: the `Long` hash of `doubleToLongBits` (NaN canonicalised).
pub fn double_hash_code(d: f64) -> i32 {
    let bits = if d.is_nan() {
        0x7ff8_0000_0000_0000u64
    } else {
        d.to_bits()
    };
    (bits ^ (bits >> 32)) as u32 as i32
}

/// `java.lang.Float.hashCode`: `floatToIntBits` (NaN canonicalised).
pub fn float_hash_code(f: f32) -> i32 {
    if f.is_nan() {
        0x7fc0_0000
    } else {
        f.to_bits() as i32
    }
}

/// `java.lang.Boolean.hashCode`: 1231 for true, 1237 for false.
pub fn boolean_hash_code(b: bool) -> i32 {
    if b {
        1231
    } else {
        1237
    }
}

/// Scala's `Statics.longHash`: the `Int` itself when the value fits one.
pub fn scala_long_hash(v: i64) -> i32 {
    match i32::try_from(v) {
        Ok(i) => i,
        Err(_) => long_hash_code(v),
    }
}

/// Scala 2.13's `Statics.doubleHash`: an exact `Int` hashes as the `Int`, an exact `Long`
/// as the `Long`, an exact `Float` as the `Float`, anything else as the `Double`.
/// (Rust's `as` casts saturate and map NaN to 0 exactly like the JVM's narrowing.)
pub fn scala_double_hash(d: f64) -> i32 {
    let i = d as i32;
    if f64::from(i) == d {
        return i;
    }
    let l = d as i64;
    if l as f64 == d {
        return long_hash_code(l);
    }
    let f = d as f32;
    if f64::from(f) == d {
        return float_hash_code(f);
    }
    double_hash_code(d)
}

// MurmurHash3 (x86, 32 bit) steps as scala.util.hashing.MurmurHash3 uses them.
const PRODUCT_SEED: i32 = 0xcafe_babe_u32 as i32;
/// `"Tuple2".hashCode`.
const TUPLE2_NAME_HASH: i32 = {
    let name = b"Tuple2";
    let mut h = 0i32;
    let mut i = 0;
    while i < name.len() {
        h = h.wrapping_mul(31).wrapping_add(name[i] as i32);
        i += 1;
    }
    h
};
/// The case-class hash state of a `Tuple2` before its elements: the seed mixed with the name.
const TUPLE2_SEED: i32 = mix(PRODUCT_SEED, TUPLE2_NAME_HASH);

const fn mix_last(hash: i32, data: i32) -> i32 {
    let mut k = data.wrapping_mul(0xcc9e_2d51_u32 as i32);
    k = k.rotate_left(15);
    k = k.wrapping_mul(0x1b87_3593);
    hash ^ k
}

const fn mix(hash: i32, data: i32) -> i32 {
    mix_last(hash, data)
        .rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(0xe654_6b64_u32 as i32)
}

fn avalanche(hash: i32) -> i32 {
    let mut h = hash as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h as i32
}

fn finalize_hash(hash: i32, length: i32) -> i32 {
    avalanche(hash ^ length)
}

/// `scala.Tuple2.hashCode` in Scala 2.13 (`MurmurHash3.caseClassHash`).
pub fn tuple2_hash_code(a: &Value, b: &Value) -> i32 {
    tuple2_hash_of(a.scala_hash(), b.scala_hash())
}

/// `scala.Tuple2.hashCode` from its elements' `##` (what `(partition, key).hashCode` is in
/// Spark's map-side `PartitionedAppendOnlyMap`).
pub fn tuple2_hash_of(a_hash: i32, b_hash: i32) -> i32 {
    let mut h = TUPLE2_SEED;
    h = mix(h, a_hash);
    h = mix(h, b_hash);
    finalize_hash(h, 2)
}

/// Guava's `Hashing.murmur3_32().hashInt(x).asInt()` (seed 0): Spark's
/// `AppendOnlyMap.rehash` of a key's hash code.
pub fn murmur3_hash_int(x: i32) -> i32 {
    finalize_hash(mix(0, x), 4)
}

/// `scala.collection.immutable.List.hashCode` in Scala 2.13 (`MurmurHash3.listHash` with
/// the `"Seq".hashCode` seed; a list of at least two element hashes in arithmetic
/// progression hashes as a range).
pub fn list_hash_code(xs: &[Value]) -> i32 {
    let seed = string_hash_code("Seq");
    let mut h = seed;
    let mut n: i32 = 0;
    // 0 = no element yet, 1 = first element seen, 2 = constant difference so far, 3 = not a range
    let mut range_state = 0u8;
    let mut range_diff: i32 = 0;
    let mut prev: i32 = 0;
    let mut initial: i32 = 0;
    for x in xs {
        let hash = x.scala_hash();
        h = mix(h, hash);
        match range_state {
            0 => {
                initial = hash;
                range_state = 1;
            }
            1 => {
                range_diff = hash.wrapping_sub(prev);
                range_state = 2;
            }
            2 if range_diff != hash.wrapping_sub(prev) => range_state = 3,
            _ => {}
        }
        prev = hash;
        n = n.wrapping_add(1);
    }
    if range_state == 2 {
        avalanche(mix(mix(mix(seed, initial), range_diff), prev))
    } else {
        finalize_hash(h, n)
    }
}

/// Java's `Double.toString`: plain notation for magnitudes in `[1e-3, 1e7)`, computerized
/// scientific notation (`1.0E7`, `1.2345E-7`) outside, always at least one fractional
/// digit, with the shortest digits that round-trip (what JDK 19+ prints; older JDKs
/// occasionally print one more digit; when one digit would do, the closest of one or two
/// digits, as Java's algorithm specifies).
pub fn java_double_to_string(d: f64) -> String {
    if d.is_nan() {
        return "NaN".to_string();
    }
    if d.is_infinite() {
        return if d > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0.0" } else { "0.0" }.to_string();
    }
    let sign = if d < 0.0 { "-" } else { "" };
    let abs = d.abs();
    // Rust's `{:e}` prints the shortest round-trip digits: "1.2345e-7", "1e7".
    let mut sci = format!("{abs:e}");
    // Java picks, when one digit would do, the closest decimal of one or two digits
    // (`Double.MIN_VALUE` is 4.9E-324, not 5.0E-324): the correctly rounded two-digit form,
    // if it still reads back as the same double.
    if sci.split_once('e').is_some_and(|(m, _)| m.len() == 1) {
        let two = format!("{abs:.1e}");
        if two.parse::<f64>().ok() == Some(abs) {
            sci = two;
        }
    }
    let (mantissa, exp) = match sci.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (sci.as_str(), 0),
    };
    let mut digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    if (1e-3..1e7).contains(&abs) {
        if exp >= 0 {
            let int_len = usize::try_from(exp).unwrap_or(0).saturating_add(1);
            let (int_part, frac_part) = if digits.len() > int_len {
                (
                    digits.get(..int_len).unwrap_or("").to_string(),
                    digits.get(int_len..).unwrap_or("").to_string(),
                )
            } else {
                let mut ip = digits.clone();
                ip.push_str(&"0".repeat(int_len - digits.len()));
                (ip, String::new())
            };
            let frac = if frac_part.is_empty() {
                "0".to_string()
            } else {
                frac_part
            };
            format!("{sign}{int_part}.{frac}")
        } else {
            let zeros = usize::try_from(-exp - 1).unwrap_or(0);
            format!("{sign}0.{}{digits}", "0".repeat(zeros))
        }
    } else {
        let first = digits.get(..1).unwrap_or("0");
        let rest = digits.get(1..).unwrap_or("");
        let rest = if rest.is_empty() { "0" } else { rest };
        format!("{sign}{first}.{rest}E{exp}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash_of(v: &Value) -> u64 {
        use std::collections::hash_map::DefaultHasher;
        let mut h = DefaultHasher::new();
        v.hash(&mut h);
        h.finish()
    }

    #[test]
    fn string_hash_codes_match_java() {
        assert_eq!(Value::str("hello").java_hash_code(), 99162322);
        assert_eq!(Value::str("").java_hash_code(), 0);
        // Non-ASCII: UTF-16 code units, including a surrogate pair (value from Java 17).
        assert_eq!(Value::str("héllo→😀").java_hash_code(), 403635687);
        assert_eq!(string_hash_code("polygenelubricants"), i32::MIN);
    }

    #[test]
    fn long_double_bool_hash_codes_match_java() {
        // java.lang.Long.hashCode (Java 17) of the same longs.
        let longs = [0i64, 1, -1, 1 << 32, i64::MIN, i64::MAX, -5, 123456789012];
        let got: Vec<i32> = longs.iter().map(|v| long_hash_code(*v)).collect();
        assert_eq!(got, vec![0, 1, 0, 1, -2147483648, -2147483648, 4, -1097262584]);
        // An I64 in Int range hashes as the Int (Integer.hashCode is the value), beyond it as
        // the Long.
        let got: Vec<i32> = longs.iter().map(|v| Value::I64(*v).java_hash_code()).collect();
        assert_eq!(got, vec![0, 1, -1, 1, -2147483648, -2147483648, -5, -1097262584]);
        assert_eq!(Value::I64(42).java_hash_code(), 42);
        assert_eq!(Value::I64(1 << 40).java_hash_code(), 256);
        assert_eq!(Value::I64(i64::from(i32::MIN)).java_hash_code(), i32::MIN);
        let doubles = [1.5, f64::NAN, -0.0, 0.0, 2.0, 1e300];
        let got: Vec<i32> = doubles.iter().map(|d| Value::F64(*d).java_hash_code()).collect();
        assert_eq!(
            got,
            vec![1073217536, 2146959360, -2147483648, 0, 1073741824, -164130400]
        );
        assert_eq!(Value::Bool(true).java_hash_code(), 1231);
        assert_eq!(Value::Bool(false).java_hash_code(), 1237);
        assert_eq!(Value::Null.java_hash_code(), 0);
    }

    #[test]
    fn tuple_hash_codes_match_scala_2_13() {
        // Values printed by Scala 2.13.18 for the same tuples (Int elements are I64 here:
        // `##` makes the two hash alike).
        assert_eq!(Value::pair("a", 1).java_hash_code(), -1734940110);
        // new scala.Tuple2(1, "a").hashCode() and (-1, -1L): scala-library 2.13.18 on Java 17.
        assert_eq!(Value::pair(1, "a").java_hash_code(), 1971805870);
        assert_eq!(Value::pair(-1, -1).java_hash_code(), -76342163);
        assert_eq!(Value::pair("hello", 42).java_hash_code(), 938182220);
        assert_eq!(Value::pair(1, 2).java_hash_code(), 1316541600);
        assert_eq!(Value::pair(1.5, true).java_hash_code(), 70192446);
        assert_eq!(Value::pair(2.0, 3i64 << 40).java_hash_code(), -1950422829);
        assert_eq!(
            Value::pair(Value::pair(1, "x"), Value::Null).java_hash_code(),
            1300507069
        );
        assert_eq!(Value::pair(-1, 1e20).java_hash_code(), -1448976711);
        assert_eq!(Value::pair(1099511627776.0, 0.1).java_hash_code(), -1465359419);
    }

    #[test]
    fn list_hash_codes_match_scala_2_13() {
        let l = |xs: Vec<Value>| Value::List(xs).java_hash_code();
        assert_eq!(l(vec![1.into(), 2.into(), 3.into()]), 1836368899);
        assert_eq!(l(vec!["a".into(), "b".into()]), -2026639483);
        assert_eq!(l(vec![]), 473519988);
        assert_eq!(l(vec![5.into()]), 1669515522);
        assert_eq!(l(vec![1.into(), 5.into(), 2.into()]), 759968518);
        assert_eq!(l(vec![Value::pair("a", 1)]), -761247448);
    }

    #[test]
    fn order_is_total_and_consistent_with_hash() {
        let mut vs = vec![
            Value::List(vec![]),
            Value::pair(1, 2),
            Value::Bytes(vec![1]),
            Value::str("b"),
            Value::str("a"),
            Value::F64(f64::NAN),
            Value::F64(-0.0),
            Value::F64(0.0),
            Value::I64(-3),
            Value::Bool(true),
            Value::Null,
        ];
        vs.sort();
        assert_eq!(vs.first(), Some(&Value::Null));
        assert_eq!(vs.last(), Some(&Value::List(vec![])));
        assert!(Value::F64(-0.0) < Value::F64(0.0));
        assert_ne!(Value::F64(-0.0), Value::F64(0.0));
        assert_eq!(Value::F64(f64::NAN), Value::F64(f64::NAN));
        assert_eq!(hash_of(&Value::F64(f64::NAN)), hash_of(&Value::F64(f64::NAN)));
        assert_ne!(Value::I64(1), Value::F64(1.0));
        assert_eq!(hash_of(&Value::pair("k", 1)), hash_of(&Value::pair("k", 1)));
    }

    #[test]
    fn display_is_scala_like() {
        assert_eq!(
            Value::pair("a", Value::List(vec![1.into(), 2.into()])).to_string(),
            "(a,List(1, 2))"
        );
        assert_eq!(
            Value::pair(1, Value::pair(2.0, Value::Null)).to_string(),
            "(1,(2.0,null))"
        );
        assert_eq!(Value::List(vec![Value::pair("x", 1)]).to_string(), "List((x,1))");
        assert_eq!(Value::Bytes(vec![0x0a, 0xff]).to_string(), "Bytes(0aff)");
        // Java 17's Double.toString for the same doubles.
        let ds = [
            1.0,
            1e7,
            1e-3,
            123456.789,
            1e-4,
            f64::NAN,
            -0.0,
            9999999.0,
            1.0e21,
            100.0,
            0.1 + 0.2,
            f64::INFINITY,
            1.2345e-7,
            f64::from_bits(1),
            f64::MAX,
        ];
        let got: Vec<String> = ds.iter().map(|d| java_double_to_string(*d)).collect();
        let want = "1.0 1.0E7 0.001 123456.789 1.0E-4 NaN -0.0 9999999.0 1.0E21 100.0 \
                    0.30000000000000004 Infinity 1.2345E-7 4.9E-324 1.7976931348623157E308";
        assert_eq!(got.join(" "), want);
        assert_eq!(java_double_to_string(-2.5), "-2.5");
        assert_eq!(java_double_to_string(0.0123), "0.0123");
    }

    #[test]
    fn murmur3_hash_int_matches_guava() {
        // Hashing.murmur3_32_fixed().hashInt(x).asInt() from Guava 33.6 (Spark 4.3's jars).
        let xs = [0, 1, -1, 42, 99162322, i32::MIN, i32::MAX];
        let got: Vec<i32> = xs.iter().map(|x| murmur3_hash_int(*x)).collect();
        assert_eq!(
            got,
            vec![
                593689054,
                -68075478,
                1982413648,
                -1134849565,
                1715862179,
                -1718298732,
                -1653689534
            ]
        );
        assert_eq!(
            tuple2_hash_of(1, string_hash_code("a")),
            Value::pair(1, "a").java_hash_code()
        );
    }

    #[test]
    fn numeric_helpers_and_java_display() {
        assert_eq!(
            Value::I64(i64::MAX).numeric_add(Value::I64(1)),
            Ok(Value::I64(i64::MIN))
        );
        assert_eq!(Value::I64(1).numeric_add(Value::F64(0.5)), Ok(Value::F64(1.5)));
        assert_eq!(
            Value::F64(0.25).numeric_add(Value::F64(0.5)),
            Ok(Value::F64(0.75))
        );
        let e = Value::str("a").numeric_add(Value::I64(1)).unwrap_err();
        assert_eq!(e, "cannot add Str a and I64 1");
        assert_eq!(Value::I64(2).numeric_cmp(&Value::F64(1.5)), Ordering::Greater);
        assert_eq!(Value::F64(1.5).numeric_cmp(&Value::I64(2)), Ordering::Less);
        assert_eq!(Value::I64(1).numeric_cmp(&Value::F64(1.0)), Ordering::Less);
        assert_eq!(Value::List(vec![1.into()]).into_list(), Ok(vec![Value::I64(1)]));
        assert_eq!(Value::Null.into_list(), Err(Value::Null));
        assert!(Value::Null.is_null() && !Value::I64(0).is_null());
        let v = Value::pair("a", Value::List(vec![1.into(), Value::pair(2, 0.5)]));
        assert_eq!(v.to_java_string(), "(a,[1, (2,0.5)])");
        assert_eq!(v.to_string(), "(a,List(1, (2,0.5)))");
    }

    #[test]
    fn decoding_matches_the_derived_form_and_limits_depth() {
        let vs = vec![
            Value::Null,
            Value::Bool(false),
            Value::I64(-7),
            Value::F64(2.5),
            Value::str("s"),
            Value::Bytes(vec![0, 255]),
            Value::pair(1, Value::List(vec![Value::Null, Value::pair("a", 1.5)])),
            Value::List(vec![]),
        ];
        for v in &vs {
            let bytes = rmp_serde::to_vec(v).unwrap();
            assert_eq!(&rmp_serde::from_slice::<Value>(&bytes).unwrap(), v);
        }
        // The derived (externally tagged) form: a unit variant is its name.
        assert_eq!(rmp_serde::to_vec(&Value::Null).unwrap(), b"\xa4Null".to_vec());
        let mut nested = Value::Null;
        for _ in 0..MAX_DECODE_DEPTH {
            nested = Value::List(vec![nested]);
        }
        let bytes = rmp_serde::to_vec(&nested).unwrap();
        assert_eq!(rmp_serde::from_slice::<Value>(&bytes).unwrap(), nested);
        let deeper = rmp_serde::to_vec(&Value::pair(nested, 1)).unwrap();
        let e = rmp_serde::from_slice::<Value>(&deeper).unwrap_err().to_string();
        assert!(e.contains("nested more than 128 levels"), "{e}");
        // Ten thousand levels of garbage: an error, not a stack overflow.
        let mut garbage = Vec::new();
        for _ in 0..10_000 {
            garbage.extend_from_slice(b"\x81\xa4List\x91");
        }
        assert!(rmp_serde::from_slice::<Value>(&garbage).is_err());
        assert!(rmp_serde::from_slice::<Value>(b"\x81\xa4Pair\x91\xa4Null").is_err());
        assert!(rmp_serde::from_slice::<Value>(b"\xa4Nope").is_err());
    }

    #[test]
    fn accessors() {
        assert_eq!(Value::pair(1, 2).into_pair(), Ok((Value::I64(1), Value::I64(2))));
        assert_eq!(Value::I64(1).into_pair(), Err(Value::I64(1)));
        assert_eq!(Value::I64(3).as_f64(), Some(3.0));
        assert_eq!(Value::str("x").as_str(), Some("x"));
        assert_eq!(Value::Null.type_name(), "Null");
    }
}
