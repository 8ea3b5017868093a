//! Fused data paths: lineage shapes a task can compute without passing every record through
//! the generic [`Value`] and operation path, giving exactly what the generic path gives.
//!
//! Layer: rdd (the Spark side's data model, above yarn; no actors).
//!
//! * Word count's map side ([`word_count_plan`], [`word_count_map`]): a text file (with or
//!   without the `identity` map `textFile` puts over it), the built-in `split` on a one-byte ASCII separator, the built-in `pair_with_one`, then a
//!   shuffle with map-side combine by the built-in `add` (or `sum`) under a `HashPartitioner`.
//!   The split's bytes are read in large blocks and scanned in place; lines are cut as
//!   Hadoop's `LineReader` cuts them ([`super::text`]: `\n`, `\r\n`, a lone `\r`, the byte
//!   order mark at offset 0, the partial first line of a split skipped, the line across the
//!   split's end read in full; terminators found with `memchr2`), split as Java's
//!   `String.split` does (separators found eight bytes a step), and each word is counted in
//!   a byte-keyed table ([`WordMap`]) without allocating. Once the split is read, the
//!   distinct words get their `String.hashCode` (UTF-16 code units for non-ASCII words) for
//!   the partitioner and are placed in a replica of Spark's `PartitionedAppendOnlyMap`
//!   ([`super::aomap`]) for `(partition, word)` keys, inserted in the order they were first
//!   seen, which gives Spark's slot order. A word becomes a `Value::Str` only once per
//!   distinct word, when the buckets are written, so the buckets are the generic path's,
//!   byte for byte.
//! * An integer Map operation registered with a fused form
//!   ([`ops::register_with_range_sum`]) over a range slice, reduced by the built-in `add`
//!   (or `sum`), as SparkPi does ([`range_sum_plan`], [`range_sum`]): the operation's fused
//!   form runs over blocks of [`CANCEL_CHECK_INTERVAL`] integers.
//!
//! Both check for cancellation every [`CANCEL_CHECK_INTERVAL`] records, as the generic
//! sources do. Any other shape (an operation registered again under a built-in's name, a
//! separator of more than one byte, no partitions) takes the generic path.

use std::cell::Cell;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

use super::aomap::{CapacityError, INITIAL_CAPACITY, MAXIMUM_CAPACITY};
use super::compute::{CANCEL_CHECK_INTERVAL, MAX_REDUCE_PARTITIONS};
use super::lineage::{
    Aggregator, FileSplit, Lineage, OpCall, Partitioner, RddId, RddKind, ShuffleDep, Slice,
};
use super::ops::{self, RangeSumFn};
use super::partitioner::non_negative_mod;
use super::slice::RangeIter;
use super::task::{TaskContext, TaskError};
use super::text::{io_error, local_path, qualified};
use super::value::{ascii_hash_code, murmur3_hash_int, string_hash_code, tuple2_hash_of, Value};

/// Whether `call` is the built-in `add` / `sum` (the wrapping `_ + _` on integers).
pub(crate) fn is_builtin_add(call: &OpCall) -> bool {
    matches!(call.name.as_str(), "add" | "sum") && ops::is_builtin(&call.name)
}

/// A word count map task: what it reads and how it partitions.
#[derive(Debug)]
pub(crate) struct WordCountPlan<'a> {
    pub path: &'a str,
    pub split: &'a FileSplit,
    pub separator: u8,
    pub partitions: u32,
}

/// The word count shape of a shuffle map stage, for partition `partition`, if the stage has it.
pub(crate) fn word_count_plan<'a>(
    lineage: &'a Lineage,
    dep: &'a ShuffleDep,
    partition: u32,
) -> Option<WordCountPlan<'a>> {
    let partitions = match (&dep.partitioner, &dep.aggregator, dep.map_side_combine) {
        (Partitioner::Hash { partitions }, Some(Aggregator::Reduce(call)), true)
            if *partitions > 0 && *partitions <= MAX_REDUCE_PARTITIONS && is_builtin_add(call) =>
        {
            *partitions
        }
        _ => return None,
    };
    let words = mapped(lineage, dep.parent, "pair_with_one")?;
    let (mut lines, split_call) = mapped_call(lineage, words)?;
    if split_call.name != "split" || !ops::is_builtin("split") {
        return None;
    }
    let separator = match split_call.args.first() {
        None => b' ',
        Some(Value::Str(s)) => match s.as_bytes() {
            [b] if b.is_ascii() => *b,
            _ => return None,
        },
        Some(_) => return None,
    };
    // textFile is a HadoopRDD under an `identity` MapPartitionsRDD (Spark's `.map(_._2.toString)`).
    if let Some(parent) = mapped(lineage, lines, "identity") {
        lines = parent;
    }
    match &lineage.node(lines)?.kind {
        RddKind::TextFile { path, splits } => Some(WordCountPlan {
            path,
            split: splits.get(partition as usize)?,
            separator,
            partitions,
        }),
        _ => None,
    }
}

/// The parent of `id` if `id` is a MapPartitionsRDD of the built-in operation `name`.
fn mapped(lineage: &Lineage, id: RddId, name: &str) -> Option<RddId> {
    let (parent, call) = mapped_call(lineage, id)?;
    (call.name == name && ops::is_builtin(name)).then_some(parent)
}

fn mapped_call(lineage: &Lineage, id: RddId) -> Option<(RddId, &OpCall)> {
    match &lineage.node(id)?.kind {
        RddKind::MapPartitions { parent, op, .. } => Some((*parent, op)),
        _ => None,
    }
}

/// Word count's map side: the `(word, count)` records of the split, by reduce partition, in
/// the order the generic path writes them (by partition, then by the word's hash code, ties
/// in table order). Counts the lines read into `records_read`. (Tasks write
/// [`word_count_map_encoded`]'s bytes; this is what those bytes encode.)
#[cfg(test)]
pub(crate) fn word_count_map(
    plan: &WordCountPlan<'_>,
    ctx: &dyn TaskContext,
    records_read: &Cell<u64>,
) -> Result<Vec<Vec<(Value, Value)>>, TaskError> {
    Ok(count_words(plan, ctx, records_read)?.into_buckets())
}

/// [`word_count_map`]'s buckets encoded as [`super::compute::encode_bucket`] encodes them,
/// and the number of records.
pub(crate) fn word_count_map_encoded(
    plan: &WordCountPlan<'_>,
    ctx: &dyn TaskContext,
    records_read: &Cell<u64>,
) -> Result<(Vec<Vec<u8>>, u64), TaskError> {
    Ok(count_words(plan, ctx, records_read)?.into_encoded())
}

/// The words of the split, counted.
fn count_words(
    plan: &WordCountPlan<'_>,
    ctx: &dyn TaskContext,
    records_read: &Cell<u64>,
) -> Result<WordMap, TaskError> {
    let mut lines = SplitLines::open(plan.path, plan.split)?;
    let mut map = WordMap::new(plan.partitions);
    let mut since_check = 0u32;
    let mut read = 0u64;
    while let Some((start, range)) = lines.next_line()? {
        since_check += 1;
        if since_check >= CANCEL_CHECK_INTERVAL {
            since_check = 0;
            ctx.check_cancelled()?;
        }
        read += 1;
        let mut range = range;
        if start == 0
            && lines
                .buf
                .get(range.clone())
                .is_some_and(|l| l.starts_with(&[0xEF, 0xBB, 0xBF]))
        {
            range.start += 3;
        }
        let line = lines.buf.get(range.clone()).unwrap_or(&[]);
        if std::str::from_utf8(line).is_ok() {
            map.add_line(&lines.buf, range, plan.separator)?;
        } else {
            // Hadoop's Text.toString: invalid UTF-8 becomes replacement characters.
            let s = String::from_utf8_lossy(line).into_owned();
            map.add_line(s.as_bytes(), 0..s.len(), plan.separator)?;
        }
    }
    records_read.set(records_read.get() + read);
    Ok(map)
}

/// One distinct word of a [`WordMap`]: where its bytes are in the arena.
#[derive(Clone, Copy, Debug)]
struct WordEntry {
    start: usize,
    len: usize,
}

/// One slot of [`WordMap`]'s counting table (32 bytes, two a cache line).
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    /// The word's first eight bytes, little-endian, zero past its end.
    prefix: u64,
    count: i64,
    /// The high 32 bits of the word's table hash; the slot is its top bits.
    tag: u32,
    /// The word's length (saturated at `u32::MAX`; longer words compare their bytes).
    len: u32,
    /// Index + 1 of the word in [`WordMap::words`], 0 for an empty slot.
    word: u32,
    /// Where the word's bytes start in the arena (`u32::MAX`: see [`WordMap::words`]), so a
    /// word longer than eight bytes is compared with one look-up.
    start: u32,
}

/// A word of the line being counted: its bytes' place, first eight bytes and table hash.
#[derive(Clone, Copy, Debug)]
struct Pending {
    start: usize,
    len: usize,
    prefix: u64,
    hash: u64,
}

/// The counting table's first size (slots); it doubles past half full.
const FIRST_SLOTS_BITS: u32 = 12;

/// Counts per word, keyed by the word's bytes. Counting uses a table of its own (linear
/// probing on a multiplicative hash of the bytes, a word of up to eight bytes compared as one
/// integer, the count in the slot), not Spark's layout: Spark's table, and so the order its
/// entries come out in, depends only on the distinct keys in the order they were first
/// inserted, so [`WordMap::into_encoded`] inserts the distinct words in that order into a
/// replica of `PartitionedAppendOnlyMap`'s slots (same slots from the `(partition, word)`
/// hash, same quadratic probing, same growth past 70%, re-inserted in slot order) and reads
/// the slot order from it. The JVM hash code is computed once per distinct word. The words'
/// bytes live in one arena.
#[derive(Clone, Debug)]
pub(crate) struct WordMap {
    slots: Vec<Slot>,
    /// `slots.len() == 1 << bits`.
    bits: u32,
    /// The distinct words in the order they were first seen.
    words: Vec<WordEntry>,
    arena: Vec<u8>,
    partitions: u32,
    /// The words of the line being counted, looked up together once the line is split.
    batch: Vec<Pending>,
    /// What reading the batch's slots ahead of the look-ups gave (kept so they are read).
    touched: u32,
}

const ONES: u64 = 0x0101_0101_0101_0101;
const LOWS: u64 = 0x7F7F_7F7F_7F7F_7F7F;
/// The multiplier of the table hash (2^64 / the golden ratio, odd).
const MIX: u64 = 0x9E37_79B9_7F4A_7C15;

/// `0x80` in each byte of `v` that is zero, `0` in the others (exact: no borrow between bytes).
#[inline]
fn zero_bytes(v: u64) -> u64 {
    !((((v & LOWS).wrapping_add(LOWS)) | v) | LOWS)
}

/// The eight bytes at `at` as a little-endian integer (`at + 8 <= bytes.len()`; zero otherwise).
#[inline]
fn load8(bytes: &[u8], at: usize) -> u64 {
    bytes
        .get(at..at + 8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map_or(0, u64::from_le_bytes)
}

/// The first `min(len, 8)` bytes of `bytes[start..start + len]`, little-endian, zero-padded.
#[inline]
fn prefix_of(bytes: &[u8], start: usize, len: usize) -> u64 {
    if start + 8 <= bytes.len() {
        let v = load8(bytes, start);
        if len >= 8 {
            v
        } else {
            v & ((1u64 << (8 * len)) - 1)
        }
    } else {
        let end = start + len.min(8);
        bytes
            .get(start..end)
            .unwrap_or(&[])
            .iter()
            .enumerate()
            .fold(0u64, |v, (i, &b)| v | u64::from(b) << (8 * i))
    }
}

/// The counting table's hash of a word (its first eight bytes `prefix`, all its bytes `word`).
#[inline]
fn table_hash(prefix: u64, word: &[u8]) -> u64 {
    let mut h = (prefix ^ (word.len() as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93)).wrapping_mul(MIX);
    if let Some(rest) = word.get(8..).filter(|r| !r.is_empty()) {
        for chunk in rest.chunks(8) {
            let c = chunk
                .iter()
                .enumerate()
                .fold(0u64, |v, (i, &b)| v | u64::from(b) << (8 * i));
            h = (h.rotate_left(29) ^ c).wrapping_mul(MIX);
        }
    }
    h
}

/// The word `bytes[start..start + len]` as the table looks it up.
#[inline]
fn pending(bytes: &[u8], start: usize, len: usize) -> Pending {
    let prefix = prefix_of(bytes, start, len);
    let word = bytes.get(start..start + len).unwrap_or(&[]);
    Pending {
        start,
        len,
        prefix,
        hash: table_hash(prefix, word),
    }
}

/// The JVM's `String.hashCode` of a word's bytes (UTF-8 from a decoded line).
fn word_hash_code(bytes: &[u8]) -> i32 {
    if bytes.is_ascii() {
        ascii_hash_code(bytes)
    } else {
        string_hash_code(&String::from_utf8_lossy(bytes))
    }
}

impl WordMap {
    pub(crate) fn new(partitions: u32) -> WordMap {
        WordMap {
            slots: vec![Slot::default(); 1 << FIRST_SLOTS_BITS],
            bits: FIRST_SLOTS_BITS,
            words: Vec::new(),
            arena: Vec::new(),
            partitions,
            batch: Vec::new(),
            touched: 0,
        }
    }

    /// Counts the words of the line `bytes[line]` as Java's `line.split(sep)` gives them: a
    /// line without the separator (the empty line too) is one word; empty words are kept
    /// except trailing ones. The line must be valid UTF-8 (a decoded line). Separators are
    /// found eight bytes a step. The line's words are looked up together: their slots are
    /// read first, all of them, so that the table's cache misses overlap.
    pub(crate) fn add_line(
        &mut self,
        bytes: &[u8],
        line: std::ops::Range<usize>,
        sep: u8,
    ) -> Result<(), TaskError> {
        self.batch.clear();
        self.split_line(bytes, line, sep);
        let batch = std::mem::take(&mut self.batch);
        let shift = 64 - self.bits;
        let mut touched = 0u32;
        for p in &batch {
            touched ^= self.slots.get((p.hash >> shift) as usize).map_or(0, |s| s.word);
        }
        self.touched ^= touched;
        let mut result = Ok(());
        for p in &batch {
            result = self.count(bytes, p, 1);
            if result.is_err() {
                break;
            }
        }
        self.batch = batch;
        result
    }

    /// Puts the words of the line `bytes[line]` into the batch, in order.
    fn split_line(&mut self, bytes: &[u8], line: std::ops::Range<usize>, sep: u8) {
        let (lo, hi) = (line.start, line.end.min(bytes.len()));
        if lo >= hi {
            return self.push(bytes, lo, 0);
        }
        let pattern = ONES * u64::from(sep);
        let mut word_start = lo;
        let mut pending_empty = 0usize;
        let mut i = lo;
        while i + 8 <= hi {
            let mut m = zero_bytes(load8(bytes, i) ^ pattern);
            while m != 0 {
                let at = i + (m.trailing_zeros() / 8) as usize;
                self.piece(bytes, word_start, at, &mut pending_empty);
                word_start = at + 1;
                m &= m - 1;
            }
            i += 8;
        }
        for (at, &b) in bytes.get(i..hi).unwrap_or(&[]).iter().enumerate() {
            if b == sep {
                self.piece(bytes, word_start, i + at, &mut pending_empty);
                word_start = i + at + 1;
            }
        }
        // What follows the last separator; trailing empty words are dropped.
        if word_start < hi {
            self.piece(bytes, word_start, hi, &mut pending_empty);
        }
    }

    /// One piece between separators: an empty one waits until a word follows it.
    #[inline]
    fn piece(&mut self, bytes: &[u8], start: usize, end: usize, pending_empty: &mut usize) {
        if start == end {
            *pending_empty += 1;
            return;
        }
        while *pending_empty > 0 {
            *pending_empty -= 1;
            self.push(bytes, start, 0);
        }
        self.push(bytes, start, end - start)
    }

    /// Puts the word `bytes[start..start + len]` into the batch.
    #[inline]
    fn push(&mut self, bytes: &[u8], start: usize, len: usize) {
        let p = pending(bytes, start, len);
        self.batch.push(p);
    }

    /// Adds `n` to the count of the word `bytes[start..start + len]` (wrapping, as `add`
    /// adds longs).
    #[inline]
    fn add_count(&mut self, bytes: &[u8], start: usize, len: usize, n: i64) -> Result<(), TaskError> {
        self.count(bytes, &pending(bytes, start, len), n)
    }

    /// Adds `n` to the count of the word `p` of `bytes`.
    #[inline]
    fn count(&mut self, bytes: &[u8], p: &Pending, n: i64) -> Result<(), TaskError> {
        let &Pending {
            start,
            len,
            prefix,
            hash: h,
        } = p;
        let word = bytes.get(start..start + len).unwrap_or(&[]);
        let tag = (h >> 32) as u32;
        let short_len = u32::try_from(len).unwrap_or(u32::MAX);
        let mask = (1usize << self.bits) - 1;
        let mut pos = (h >> (64 - self.bits)) as usize;
        loop {
            let Some(slot) = self.slots.get_mut(pos) else {
                return Err(CapacityError(format!("word table slot {pos} out of range")).into());
            };
            if slot.word == 0 {
                return self.insert(pos, word, prefix, tag, n);
            }
            if slot.tag == tag && slot.prefix == prefix && slot.len == short_len {
                let same = len <= 8
                    || if slot.start != u32::MAX {
                        let s = slot.start as usize;
                        self.arena.get(s..s + len) == Some(word)
                    } else {
                        self.words
                            .get(slot.word as usize - 1)
                            .and_then(|e| self.arena.get(e.start..e.start + e.len))
                            == Some(word)
                    };
                if same {
                    slot.count = slot.count.wrapping_add(n);
                    return Ok(());
                }
            }
            pos = (pos + 1) & mask;
        }
    }

    /// Puts a new word in the empty slot `pos`, then grows the table past half full.
    #[cold]
    fn insert(&mut self, pos: usize, word: &[u8], prefix: u64, tag: u32, n: i64) -> Result<(), TaskError> {
        // Spark's table refuses to grow past MAXIMUM_CAPACITY slots (70% of them full).
        let most = (0.7 * MAXIMUM_CAPACITY as f64) as usize;
        if self.words.len() >= most {
            return Err(CapacityError(format!("Can't contain more than {most} elements")).into());
        }
        let start = self.arena.len();
        self.arena.extend_from_slice(word);
        self.words.push(WordEntry {
            start,
            len: word.len(),
        });
        if let Some(slot) = self.slots.get_mut(pos) {
            *slot = Slot {
                prefix,
                count: n,
                tag,
                len: u32::try_from(word.len()).unwrap_or(u32::MAX),
                word: self.words.len() as u32,
                start: u32::try_from(start).unwrap_or(u32::MAX),
            };
        }
        if self.words.len() * 2 > self.slots.len() {
            self.grow();
        }
        Ok(())
    }

    /// Doubles the counting table (its order does not matter).
    fn grow(&mut self) {
        let bits = self.bits + 1;
        let mask = (1usize << bits) - 1;
        let mut slots = vec![Slot::default(); 1 << bits];
        for s in self.slots.iter().filter(|s| s.word != 0) {
            let mut pos = (s.tag >> (32 - bits)) as usize;
            while slots.get(pos).is_some_and(|t| t.word != 0) {
                pos = (pos + 1) & mask;
            }
            if let Some(t) = slots.get_mut(pos) {
                *t = *s;
            }
        }
        self.slots = slots;
        self.bits = bits;
    }

    /// The words' counts, in the order the words were first seen.
    fn counts(&self) -> Vec<i64> {
        let mut counts = vec![0i64; self.words.len()];
        for s in self.slots.iter().filter(|s| s.word != 0) {
            if let Some(c) = counts.get_mut(s.word as usize - 1) {
                *c = s.count;
            }
        }
        counts
    }

    fn bytes_of(&self, e: &WordEntry) -> &[u8] {
        self.arena.get(e.start..e.start + e.len).unwrap_or(&[])
    }

    fn value_of(&self, e: &WordEntry) -> Value {
        Value::Str(String::from_utf8_lossy(self.bytes_of(e)).into_owned())
    }

    /// The words in the order their records are written (by partition, then by the word's
    /// hash code, ties in the slot order of Spark's table: `ExternalSorter`'s order), with
    /// each word's partition.
    fn write_order(&self) -> (Vec<usize>, Vec<u32>) {
        // (hash code, partition) per word, and Spark's rehash of the (partition, word) tuple.
        let mut keys: Vec<(i32, u32)> = Vec::with_capacity(self.words.len());
        let mut slot_hashes: Vec<u32> = Vec::with_capacity(self.words.len());
        for e in &self.words {
            let hash = word_hash_code(self.bytes_of(e));
            let partition = non_negative_mod(hash, self.partitions);
            keys.push((hash, partition));
            slot_hashes.push(murmur3_hash_int(tuple2_hash_of(partition as i32, hash)) as u32);
        }
        let mut order = spark_slot_order(&slot_hashes);
        order.sort_by_key(|&i| keys.get(i).map(|&(hash, partition)| (partition, hash)));
        (order, keys.into_iter().map(|(_, p)| p).collect())
    }

    /// The records by reduce partition, in the order they are written.
    #[cfg(test)]
    pub(crate) fn into_buckets(self) -> Vec<Vec<(Value, Value)>> {
        let counts = self.counts();
        let (order, partitions) = self.write_order();
        let mut buckets: Vec<Vec<(Value, Value)>> = Vec::new();
        buckets.resize_with(self.partitions as usize, Vec::new);
        for i in order {
            let (Some(e), Some(&partition), Some(&count)) =
                (self.words.get(i), partitions.get(i), counts.get(i))
            else {
                continue;
            };
            if let Some(b) = buckets.get_mut(partition as usize) {
                b.push((self.value_of(e), Value::I64(count)));
            }
        }
        buckets
    }

    /// The buckets as [`super::compute::encode_bucket`] encodes [`WordMap::into_buckets`]'
    /// records (MessagePack: an array of `2n` elements, each word a string, each count the
    /// smallest integer form), written from the bytes, and the number of records.
    pub(crate) fn into_encoded(self) -> (Vec<Vec<u8>>, u64) {
        let counts = self.counts();
        let (order, partitions) = self.write_order();
        let mut sizes = vec![0usize; self.partitions as usize];
        for &p in &partitions {
            if let Some(n) = sizes.get_mut(p as usize) {
                *n += 1;
            }
        }
        let mut out: Vec<Vec<u8>> = sizes.iter().map(|_| Vec::new()).collect();
        for i in order {
            let (Some(e), Some(&partition), Some(&count)) =
                (self.words.get(i), partitions.get(i), counts.get(i))
            else {
                continue;
            };
            let (Some(b), Some(&n)) = (out.get_mut(partition as usize), sizes.get(partition as usize)) else {
                continue;
            };
            if b.is_empty() {
                write_array_len(b, 2 * n as u64);
            }
            write_str(b, self.bytes_of(e));
            write_int(b, count);
        }
        (out, self.words.len() as u64)
    }

    /// The `(word, count)` records in the slot order of Spark's reduce-side `AppendOnlyMap`
    /// (keys hashed by `String.hashCode`) had the words been inserted in the order first seen.
    fn into_entries(self) -> Vec<(Value, Value)> {
        let counts = self.counts();
        let slot_hashes: Vec<u32> = self
            .words
            .iter()
            .map(|e| murmur3_hash_int(word_hash_code(self.bytes_of(e))) as u32)
            .collect();
        spark_slot_order(&slot_hashes)
            .into_iter()
            .filter_map(|i| Some((self.value_of(self.words.get(i)?), Value::I64(*counts.get(i)?))))
            .collect()
    }
}

/// MessagePack's array header as `rmp` writes it (the smallest form).
fn write_array_len(out: &mut Vec<u8>, n: u64) {
    if n < 16 {
        out.push(0x90 | n as u8);
    } else if n < 1 << 16 {
        out.push(0xdc);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(0xdd);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

/// A MessagePack string as `rmp` writes it (the smallest header).
fn write_str(out: &mut Vec<u8>, s: &[u8]) {
    let n = s.len();
    if n < 32 {
        out.push(0xa0 | n as u8);
    } else if n < 1 << 8 {
        out.push(0xd9);
        out.push(n as u8);
    } else if n < 1 << 16 {
        out.push(0xda);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
    out.extend_from_slice(s);
}

/// A MessagePack integer as `rmp`'s `write_sint` writes it (the smallest form).
fn write_int(out: &mut Vec<u8>, v: i64) {
    if (0..128).contains(&v) {
        out.push(v as u8);
    } else if (-32..0).contains(&v) {
        out.push(v as i8 as u8);
    } else if v >= 0 {
        if v < 1 << 8 {
            out.push(0xcc);
            out.push(v as u8);
        } else if v < 1 << 16 {
            out.push(0xcd);
            out.extend_from_slice(&(v as u16).to_be_bytes());
        } else if v < 1 << 32 {
            out.push(0xce);
            out.extend_from_slice(&(v as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&(v as u64).to_be_bytes());
        }
    } else if v >= -128 {
        out.push(0xd0);
        out.push(v as i8 as u8);
    } else if v >= -32_768 {
        out.push(0xd1);
        out.extend_from_slice(&(v as i16).to_be_bytes());
    } else if v >= i64::from(i32::MIN) {
        out.push(0xd2);
        out.extend_from_slice(&(v as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&v.to_be_bytes());
    }
}

/// The slot order of Spark's `AppendOnlyMap` after inserting distinct keys whose rehashed
/// hash codes are `slot_hashes`, in that order: indices into `slot_hashes`. The table starts
/// at [`INITIAL_CAPACITY`] slots, probes quadratically and doubles once it holds more than
/// 70% of its slots, re-inserting in slot order, as [`super::aomap::AppendOnlyMap`] does.
fn spark_slot_order(slot_hashes: &[u32]) -> Vec<usize> {
    let mut table = vec![0u32; INITIAL_CAPACITY];
    let mut threshold = (0.7 * INITIAL_CAPACITY as f64) as usize;
    let place = |table: &mut Vec<u32>, slot_hash: u32, index: u32| {
        let mask = table.len() - 1;
        let mut pos = slot_hash as usize & mask;
        let mut delta = 1usize;
        while table.get(pos).is_some_and(|&s| s != 0) {
            pos = (pos + delta) & mask;
            delta += 1;
        }
        if let Some(s) = table.get_mut(pos) {
            *s = index;
        }
    };
    for (i, &slot_hash) in slot_hashes.iter().enumerate() {
        place(&mut table, slot_hash, i as u32 + 1);
        if i + 1 > threshold {
            let capacity = table.len() * 2;
            let old = std::mem::replace(&mut table, vec![0u32; capacity]);
            for index in old.into_iter().filter(|&s| s != 0) {
                if let Some(&h) = slot_hashes.get(index as usize - 1) {
                    place(&mut table, h, index);
                }
            }
            threshold = (0.7 * capacity as f64) as usize;
        }
    }
    table
        .into_iter()
        .filter(|&s| s != 0)
        .map(|s| s as usize - 1)
        .collect()
}

/// Reduce-side merge of word count's shuffle (`reduceByKey` by the built-in `add` or `sum`):
/// when every bucket is a flat MessagePack array of string keys and integer values (what the
/// map side writes for `(word, count)` records, [`super::compute::encode_bucket`]), the
/// records in the order Spark's `AppendOnlyMap` gives them, counted by bytes without a
/// `Value` per record. `None` when a bucket holds anything else (the generic path then
/// decodes and merges them, failing as it fails). Counts the records read into
/// `records_read` and checks for cancellation every [`CANCEL_CHECK_INTERVAL`] records.
pub(crate) fn merge_word_counts(
    buckets: &[Vec<u8>],
    ctx: &dyn TaskContext,
    records_read: &Cell<u64>,
) -> Result<Option<Vec<(Value, Value)>>, TaskError> {
    let mut map = WordMap::new(1);
    let mut read = 0u64;
    let mut since_check = 0u32;
    for bytes in buckets {
        if bytes.is_empty() {
            continue;
        }
        let mut r = MsgReader { bytes, at: 0 };
        let Some(n) = r.array_len().filter(|n| n % 2 == 0) else {
            return Ok(None);
        };
        for _ in 0..n / 2 {
            since_check += 1;
            if since_check >= CANCEL_CHECK_INTERVAL {
                since_check = 0;
                ctx.check_cancelled()?;
            }
            let (Some((start, len)), Some(count)) = (r.str(), r.int()) else {
                return Ok(None);
            };
            map.add_count(bytes, start, len, count)?;
        }
        if r.at != bytes.len() {
            return Ok(None);
        }
        read += n / 2;
    }
    records_read.set(records_read.get() + read);
    Ok(Some(map.into_entries()))
}

/// Reads the MessagePack of a word count bucket: array headers, strings (valid UTF-8 only),
/// integers that fit an `i64`.
struct MsgReader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl MsgReader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    /// A big-endian unsigned integer of `n` bytes.
    fn be(&mut self, n: usize) -> Option<u64> {
        let b = self.bytes.get(self.at..self.at + n)?;
        self.at += n;
        Some(b.iter().fold(0u64, |v, &x| v << 8 | u64::from(x)))
    }

    fn array_len(&mut self) -> Option<u64> {
        match self.byte()? {
            b @ 0x90..=0x9f => Some(u64::from(b & 0x0f)),
            0xdc => self.be(2),
            0xdd => self.be(4),
            _ => None,
        }
    }

    /// A string: its bytes' start and length in `bytes`.
    fn str(&mut self) -> Option<(usize, usize)> {
        let len = match self.byte()? {
            b @ 0xa0..=0xbf => usize::from(b & 0x1f),
            0xd9 => self.be(1)? as usize,
            0xda => self.be(2)? as usize,
            0xdb => self.be(4)? as usize,
            _ => return None,
        };
        let start = self.at;
        let s = self.bytes.get(start..start.checked_add(len)?)?;
        std::str::from_utf8(s).ok()?;
        self.at += len;
        Some((start, len))
    }

    fn int(&mut self) -> Option<i64> {
        Some(match self.byte()? {
            b @ 0x00..=0x7f => i64::from(b),
            b @ 0xe0..=0xff => i64::from(b as i8),
            0xcc => self.be(1)? as i64,
            0xcd => self.be(2)? as i64,
            0xce => self.be(4)? as i64,
            0xcf => i64::try_from(self.be(8)?).ok()?,
            0xd0 => i64::from(self.be(1)? as u8 as i8),
            0xd1 => i64::from(self.be(2)? as u16 as i16),
            0xd2 => i64::from(self.be(4)? as u32 as i32),
            0xd3 => self.be(8)? as i64,
            _ => return None,
        })
    }
}

/// How much of the file is read at a time (4 KiB in unit tests, so that small files cross
/// many block edges).
#[cfg(not(test))]
pub(crate) const BLOCK: usize = 1 << 20;
#[cfg(test)]
pub(crate) const BLOCK: usize = 1 << 12;

/// The lines of one split, read in blocks and handed out as byte ranges of the block buffer
/// (same lines as [`super::text::open_split`]).
struct SplitLines {
    file: File,
    path: String,
    buf: Vec<u8>,
    /// The unread bytes are `buf[lo..hi]`.
    lo: usize,
    hi: usize,
    eof: bool,
    /// File offset of `buf[lo]`.
    pos: u64,
    end: u64,
    done: bool,
}

impl SplitLines {
    fn open(path: &str, split: &FileSplit) -> Result<SplitLines, TaskError> {
        let local = local_path(path).map_err(|m| TaskError::exception("java.io.IOException", m))?;
        let path = qualified(&local);
        let mut file = File::open(&local).map_err(|e| io_error(&path, &e))?;
        file.seek(SeekFrom::Start(split.start))
            .map_err(|e| io_error(&path, &e))?;
        let mut lines = SplitLines {
            file,
            path,
            buf: vec![0; BLOCK],
            lo: 0,
            hi: 0,
            eof: false,
            pos: split.start,
            end: split.end(),
            done: false,
        };
        if split.start != 0 {
            // The partial first line belongs to the previous split.
            let skipped = lines.raw_line().map_err(|e| io_error(&lines.path, &e))?;
            lines.pos = lines.pos.saturating_add(skipped.map_or(0, |(_, _, n)| n));
        }
        Ok(lines)
    }

    /// The next line that starts at or before the split's end: its file offset and its bytes'
    /// range in `buf` (without the terminator).
    fn next_line(&mut self) -> Result<Option<(u64, std::ops::Range<usize>)>, TaskError> {
        if self.done || self.pos > self.end {
            return Ok(None);
        }
        let start = self.pos;
        match self.raw_line().map_err(|e| io_error(&self.path, &e))? {
            None => {
                self.done = true;
                Ok(None)
            }
            Some((s, e, consumed)) => {
                self.pos = self.pos.saturating_add(consumed);
                Ok(Some((start, s..e)))
            }
        }
    }

    /// Reads one line: `(start, end, bytes consumed with the terminator)`, `None` at the end
    /// of the file.
    fn raw_line(&mut self) -> io::Result<Option<(usize, usize, u64)>> {
        loop {
            let window = self.buf.get(self.lo..self.hi).unwrap_or(&[]);
            if let Some(i) = find_eol(window) {
                let (s, e) = (self.lo, self.lo + i);
                let mut consumed = i + 1;
                if window.get(i) == Some(&b'\r') {
                    match window.get(i + 1) {
                        Some(&b'\n') => consumed += 1,
                        Some(_) => {}
                        None if !self.eof => {
                            // A `\r` ending the block: whether `\n` follows decides.
                            self.fill()?;
                            continue;
                        }
                        None => {}
                    }
                }
                self.lo += consumed;
                return Ok(Some((s, e, consumed as u64)));
            }
            if self.eof {
                if self.lo == self.hi {
                    return Ok(None);
                }
                let (s, e) = (self.lo, self.hi);
                self.lo = self.hi;
                return Ok(Some((s, e, (e - s) as u64)));
            }
            self.fill()?;
        }
    }

    /// Moves the unread bytes to the front and reads more after them (growing the buffer for
    /// a line longer than it).
    fn fill(&mut self) -> io::Result<()> {
        if self.lo > 0 {
            self.buf.copy_within(self.lo..self.hi, 0);
            self.hi -= self.lo;
            self.lo = 0;
        }
        if self.hi == self.buf.len() {
            let grown = (self.buf.len() * 2).max(BLOCK);
            self.buf.resize(grown, 0);
        }
        loop {
            let Some(space) = self.buf.get_mut(self.hi..) else {
                return Ok(());
            };
            match self.file.read(space) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.hi += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

/// The index of the first `\n` or `\r`.
#[inline]
fn find_eol(bytes: &[u8]) -> Option<usize> {
    memchr::memchr2(b'\n', b'\r', bytes)
}

/// A range-sum task: the fused form of the Map operation and the range it runs over.
pub(crate) struct RangeSumPlan {
    kernel: RangeSumFn,
    start: i64,
    end: i64,
    step: i64,
}

/// The `parallelize(range).map(op).reduce(add)` shape of a result stage, if `rdd` has it and
/// `op` has a fused form (`slice` is the task's slice, when given with the task).
pub(crate) fn range_sum_plan(
    lineage: &Lineage,
    rdd: RddId,
    reduce: &OpCall,
    partition: u32,
    slice: Option<&Slice>,
) -> Option<RangeSumPlan> {
    if !is_builtin_add(reduce) {
        return None;
    }
    let (parent, call) = mapped_call(lineage, rdd)?;
    if !matches!(lineage.node(parent)?.kind, RddKind::ParallelCollection { .. }) {
        return None;
    }
    let computed;
    let slice = match slice {
        Some(s) => s,
        None => {
            computed = lineage.slice(parent, partition)?;
            &*computed
        }
    };
    let Slice::Range { start, end, step } = *slice else {
        return None;
    };
    let kernel = ops::lookup_range_sum(&call.name)?;
    Some(RangeSumPlan {
        kernel,
        start,
        end,
        step,
    })
}

/// What `reduce(add)` of the mapped range answers: the wrapping sum, `Null` for no records.
pub(crate) fn range_sum(plan: &RangeSumPlan, ctx: &dyn TaskContext) -> Result<Value, TaskError> {
    let mut range = RangeIter::new(plan.start, plan.end, plan.step);
    let mut acc: Option<i64> = None;
    while let Some((first, count, step)) = range.next_chunk(u64::from(CANCEL_CHECK_INTERVAL)) {
        if acc.is_some() {
            ctx.check_cancelled()?;
        }
        let sum = (plan.kernel)(first, count, step);
        acc = Some(acc.unwrap_or(0).wrapping_add(sum));
    }
    Ok(acc.map_or(Value::Null, Value::I64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_wrap_as_add_does() {
        let mut m = WordMap::new(3);
        m.add_line(b"big big small", 0..13, b' ').unwrap();
        for s in &mut m.slots {
            if s.word != 0 && s.len == 3 {
                s.count = i64::MAX;
            }
        }
        m.add_line(b"big", 0..3, b' ').unwrap();
        let buckets = m.into_buckets();
        let big = buckets
            .iter()
            .flatten()
            .find(|(k, _)| k == &Value::str("big"))
            .map(|(_, v)| v.clone());
        let wrapped = Value::I64(i64::MAX).numeric_add(Value::I64(1)).unwrap();
        assert_eq!(big, Some(wrapped));
        assert_eq!(buckets.iter().map(Vec::len).sum::<usize>(), 2);
    }

    /// What the generic path gives for decoded lines: Java's `line.split(sep)` (the line
    /// itself when it has no separator; trailing empty strings dropped), each word counted in
    /// Spark's `PartitionedAppendOnlyMap` under its `HashPartitioner` partition, then sorted
    /// by partition and hash code as `ExternalSorter` sorts.
    fn reference(lines: &[&str], sep: char, partitions: u32) -> Vec<Vec<(Value, Value)>> {
        use crate::rdd::aomap::{AppendOnlyMap, PartitionedKey};
        let mut map: AppendOnlyMap<PartitionedKey, Value> = AppendOnlyMap::new();
        for line in lines {
            let mut words: Vec<&str> = line.split(sep).collect();
            if line.contains(sep) {
                while words.last() == Some(&"") {
                    words.pop();
                }
            }
            for w in words {
                let key = Value::str(w);
                let partition = non_negative_mod(key.java_hash_code(), partitions);
                map.change_value(PartitionedKey { partition, key }, |old| {
                    Ok::<_, CapacityError>(match old {
                        Some(Value::I64(n)) => Value::I64(n + 1),
                        _ => Value::I64(1),
                    })
                })
                .unwrap();
            }
        }
        let (_, sorted) = map.into_sorted_by(|k| (k.partition, k.key.java_hash_code()));
        let mut buckets = vec![Vec::new(); partitions as usize];
        for (k, v) in sorted {
            buckets[k.partition as usize].push((k.key, v));
        }
        buckets
    }

    fn fused(lines: &[&str], sep: u8, partitions: u32) -> Vec<Vec<(Value, Value)>> {
        let mut m = WordMap::new(partitions);
        for line in lines {
            m.add_line(line.as_bytes(), 0..line.len(), sep).unwrap();
        }
        m.into_buckets()
    }

    #[test]
    fn word_map_gives_the_generic_tables_records() {
        let mut lines: Vec<String> = [
            "",
            " ",
            "     ",
            "a",
            "a b",
            " a",
            "a ",
            "a  b",
            "  a  b  ",
            "héllo wörld héllo →😀 €",
            "\r",
            "a\rb \r",
            "\u{0}  \u{0}\u{0} a\u{0}",
            // Colliding hash codes: ties keep the slot order of Spark's table.
            "Aa BB AaAa BBBB AaBB BBAa AaAaAa BBBBBB AaBBAa",
            // Words around the eight-byte prefix and the scan's eight-byte steps.
            "abcdefg abcdefgh abcdefghi abcdefgh abcdefghij abcdefghijklmnopq abcdefghijklmnopqr",
            "12345678 1234567 123456789 1234567812345678 12345678123456781",
            "xxxxxxx xxxxxxxx xxxxxxxxx xxxxxxxxxxxxxxx xxxxxxxxxxxxxxxx xxxxxxxxxxxxxxxxx",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // Enough distinct words to grow both tables several times, some words repeating.
        for i in 0..5000u32 {
            lines.push(format!(
                "w{} x{} {} w{}  é{}",
                i % 701,
                i % 13,
                "y".repeat((i % 23) as usize),
                i,
                i % 37
            ));
        }
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        for partitions in [1, 2, 7, 30] {
            for sep in [' ', 'x', '\r'] {
                let want = reference(&lines, sep, partitions);
                assert_eq!(
                    fused(&lines, sep as u8, partitions),
                    want,
                    "{partitions} partitions, {sep:?}"
                );
            }
        }
        // Words placed at every offset of the scan's eight-byte steps.
        for shift in 0..17 {
            let line = format!(
                "{}a bb  ccc dddddddd eeeeeeeee{}",
                " ".repeat(shift),
                " ".repeat(shift % 3)
            );
            assert_eq!(fused(&[&line], b' ', 3), reference(&[&line], ' ', 3), "{line:?}");
        }
    }

    #[test]
    fn word_map_counts_in_bulk() {
        let line = "the cat the  end ".repeat(1000);
        let mut m = WordMap::new(2);
        for _ in 0..100 {
            m.add_line(line.as_bytes(), 0..line.len(), b' ').unwrap();
        }
        let got: std::collections::HashMap<Value, Value> = m.into_buckets().into_iter().flatten().collect();
        assert_eq!(got.get(&Value::str("the")), Some(&Value::I64(200_000)));
        assert_eq!(got.get(&Value::str("cat")), Some(&Value::I64(100_000)));
        assert_eq!(got.get(&Value::str("end")), Some(&Value::I64(100_000)));
        // The empty string between the doubled spaces; the trailing one is dropped.
        assert_eq!(got.get(&Value::str("")), Some(&Value::I64(100_000)));
        assert_eq!(got.len(), 4);
    }

    #[test]
    fn encoded_buckets_are_what_encode_bucket_writes() {
        use crate::rdd::compute::encode_bucket;
        let counts = [
            0i64,
            1,
            127,
            128,
            255,
            256,
            65_535,
            65_536,
            (1 << 32) - 1,
            1 << 32,
            i64::MAX,
            -1,
            -32,
            -33,
            -128,
            -129,
            -32_768,
            -32_769,
            i64::from(i32::MIN),
            i64::from(i32::MIN) - 1,
            i64::MIN,
        ];
        let long = [
            "x".repeat(31),
            "x".repeat(32),
            "y".repeat(255),
            "y".repeat(256),
            "z".repeat(65_536),
        ];
        for distinct in [0usize, 1, 14, 15, 16, 40, 70_000] {
            // One partition for the largest: an array of more than 65,535 elements.
            let mut m = WordMap::new(if distinct > 1000 { 1 } else { 3 });
            for i in 0..distinct {
                let w = match long.get(i) {
                    Some(l) => l.clone(),
                    None => format!("w{i}é"),
                };
                m.add_line(w.as_bytes(), 0..w.len(), b' ').unwrap();
            }
            for (i, s) in m.slots.iter_mut().filter(|s| s.word != 0).enumerate() {
                s.count = counts[i % counts.len()];
            }
            let want: Vec<Vec<u8>> = m
                .clone()
                .into_buckets()
                .iter()
                .map(|b| encode_bucket(b).unwrap())
                .collect();
            assert_eq!(m.into_encoded(), (want, distinct as u64), "{distinct} words");
        }
    }

    #[test]
    fn find_eol_finds_the_first_terminator() {
        let mut bytes = vec![b'x'; 40];
        assert_eq!(find_eol(&bytes), None);
        for at in [0, 7, 8, 15, 39] {
            for t in [b'\n', b'\r'] {
                let mut b = bytes.clone();
                b[at] = t;
                if at + 1 < 40 {
                    b[at + 1] = b'\n';
                }
                assert_eq!(find_eol(&b), Some(at), "{at} {t}");
            }
        }
        // Bytes around the terminators' values do not match.
        bytes[3] = 0x0b;
        bytes[4] = 0x8a;
        bytes[5] = 0x8d;
        assert_eq!(find_eol(&bytes), None);
    }
}
