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
//!   split's end read in full), split as Java's `String.split` does, and each word is counted
//!   in a byte-keyed table ([`WordMap`]) that probes exactly as Spark's
//!   `PartitionedAppendOnlyMap` ([`super::aomap`]) does for `(partition, word)` keys, with
//!   the word's `String.hashCode` (UTF-16 code units for non-ASCII words) for the
//!   partitioner. A word becomes a `Value::Str` only once per distinct word, when the
//!   buckets are written, so the buckets are the generic path's, byte for byte.
//! * An integer Map operation registered with a fused form
//!   ([`ops::register_with_range_sum`]) over a range slice, reduced by the built-in `add`
//!   (or `sum`), as SparkPi does ([`range_sum_plan`], [`range_sum`]): the operation's fused
//!   form runs over blocks of [`CANCEL_CHECK_INTERVAL`] integers.
//!
//! Both check for cancellation every [`CANCEL_CHECK_INTERVAL`] records, as the generic
//! sources do. Any other shape (an operation registered again under a built-in's name, a
//! separator of more than one byte, no partitions) takes the generic path.

use std::borrow::Cow;
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
fn is_builtin_add(call: &OpCall) -> bool {
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
/// in table order). Counts the lines read into `records_read`.
pub(crate) fn word_count_map(
    plan: &WordCountPlan<'_>,
    ctx: &dyn TaskContext,
    records_read: &Cell<u64>,
) -> Result<Vec<Vec<(Value, Value)>>, TaskError> {
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
        let mut line = lines.buf.get(range).unwrap_or(&[]);
        if start == 0 {
            line = line.strip_prefix(&[0xEF, 0xBB, 0xBF][..]).unwrap_or(line);
        }
        if line.is_ascii() {
            map.add_line(line, plan.separator, true)?;
        } else {
            // Hadoop's Text.toString: invalid UTF-8 becomes replacement characters.
            match String::from_utf8_lossy(line) {
                Cow::Borrowed(s) => map.add_line(s.as_bytes(), plan.separator, false)?,
                Cow::Owned(s) => map.add_line(s.as_bytes(), plan.separator, false)?,
            }
        }
    }
    records_read.set(records_read.get() + read);
    Ok(map.into_buckets())
}

/// One distinct word of a [`WordMap`].
#[derive(Clone, Copy, Debug)]
struct WordEntry {
    /// The word's `String.hashCode`.
    hash: i32,
    partition: u32,
    /// Spark's `rehash` of the `(partition, word)` tuple's hash code: where probing starts.
    slot_hash: u32,
    start: usize,
    len: usize,
    count: i64,
}

/// Counts per word, laid out as Spark's `PartitionedAppendOnlyMap` lays out `(partition,
/// word)` keys: the same slots, the same quadratic probing, the same growth (double past
/// 70%, entries re-inserted in slot order), so that its slot order is the generic table's.
/// The words' bytes live in one arena.
#[derive(Debug)]
pub(crate) struct WordMap {
    /// Index + 1 of the entry in each slot, 0 for an empty slot.
    slots: Vec<u32>,
    mask: usize,
    grow_threshold: usize,
    entries: Vec<WordEntry>,
    arena: Vec<u8>,
    partitions: u32,
    /// Index + 1 of the entry last seen for each value of the hash code's low bits: a
    /// frequent word is counted without computing its slot or probing. Not part of the
    /// table's layout.
    recent: Vec<u32>,
}

/// How many entries [`WordMap::recent`] remembers.
const RECENT: usize = 1 << 12;

impl WordMap {
    pub(crate) fn new(partitions: u32) -> WordMap {
        WordMap {
            slots: vec![0; INITIAL_CAPACITY],
            mask: INITIAL_CAPACITY - 1,
            grow_threshold: (0.7 * INITIAL_CAPACITY as f64) as usize,
            entries: Vec::new(),
            arena: Vec::new(),
            partitions,
            recent: vec![0; RECENT],
        }
    }

    /// Counts the words of one line as Java's `line.split(sep)` gives them: a line without
    /// the separator (the empty line too) is one word; empty words are kept except trailing
    /// ones. `ascii` says the whole line is ASCII.
    pub(crate) fn add_line(&mut self, line: &[u8], sep: u8, ascii: bool) -> Result<(), TaskError> {
        if line.is_empty() {
            return self.add(b"", 0);
        }
        let mut pending_empty = 0usize;
        for word in line.split(|&b| b == sep) {
            if word.is_empty() {
                pending_empty += 1;
                continue;
            }
            for _ in 0..pending_empty {
                self.add(b"", 0)?;
            }
            pending_empty = 0;
            let hash = if ascii || word.is_ascii() {
                ascii_hash_code(word)
            } else {
                match std::str::from_utf8(word) {
                    Ok(s) => string_hash_code(s),
                    Err(_) => string_hash_code(&String::from_utf8_lossy(word)),
                }
            };
            self.add(word, hash)?;
        }
        Ok(())
    }

    /// Adds one occurrence of `word`, whose `String.hashCode` is `hash`.
    #[inline]
    fn add(&mut self, word: &[u8], hash: i32) -> Result<(), TaskError> {
        let r = (hash as u32 ^ (hash as u32 >> 12)) as usize & (RECENT - 1);
        if let Some(&index) = self.recent.get(r) {
            if let Some(e) = self.entries.get_mut((index as usize).wrapping_sub(1)) {
                if e.hash == hash && self.arena.get(e.start..e.start + e.len) == Some(word) {
                    e.count = e.count.wrapping_add(1);
                    return Ok(());
                }
            }
        }
        let partition = non_negative_mod(hash, self.partitions);
        let slot_hash = murmur3_hash_int(tuple2_hash_of(partition as i32, hash)) as u32;
        let mut pos = slot_hash as usize & self.mask;
        let mut delta = 1usize;
        loop {
            let Some(slot) = self.slots.get(pos).copied() else {
                return Err(CapacityError(format!("AppendOnlyMap slot {pos} out of range")).into());
            };
            if slot == 0 {
                let start = self.arena.len();
                self.arena.extend_from_slice(word);
                self.entries.push(WordEntry {
                    hash,
                    partition,
                    slot_hash,
                    start,
                    len: word.len(),
                    count: 1,
                });
                if let Some(s) = self.slots.get_mut(pos) {
                    *s = self.entries.len() as u32;
                }
                if let Some(c) = self.recent.get_mut(r) {
                    *c = self.entries.len() as u32;
                }
                if self.entries.len() > self.grow_threshold {
                    self.grow()?;
                }
                return Ok(());
            }
            if let Some(e) = self.entries.get_mut(slot as usize - 1) {
                if e.hash == hash && self.arena.get(e.start..e.start + e.len) == Some(word) {
                    e.count = e.count.wrapping_add(1);
                    if let Some(c) = self.recent.get_mut(r) {
                        *c = slot;
                    }
                    return Ok(());
                }
            }
            pos = (pos + delta) & self.mask;
            delta += 1;
        }
    }

    fn grow(&mut self) -> Result<(), TaskError> {
        let capacity = self.slots.len() * 2;
        if capacity > MAXIMUM_CAPACITY {
            return Err(CapacityError(format!(
                "Can't contain more than {} elements",
                (0.7 * MAXIMUM_CAPACITY as f64) as usize
            ))
            .into());
        }
        let mask = capacity - 1;
        let mut slots = vec![0u32; capacity];
        for &index in self.slots.iter().filter(|&&i| i != 0) {
            let Some(e) = self.entries.get(index as usize - 1) else {
                continue;
            };
            let mut pos = e.slot_hash as usize & mask;
            let mut delta = 1usize;
            while slots.get(pos).is_some_and(|&s| s != 0) {
                pos = (pos + delta) & mask;
                delta += 1;
            }
            if let Some(s) = slots.get_mut(pos) {
                *s = index;
            }
        }
        self.slots = slots;
        self.mask = mask;
        self.grow_threshold = (0.7 * capacity as f64) as usize;
        Ok(())
    }

    /// The records by reduce partition, each partition's sorted by the word's hash code,
    /// ties in slot order (`ExternalSorter`'s order).
    pub(crate) fn into_buckets(self) -> Vec<Vec<(Value, Value)>> {
        let mut order: Vec<&WordEntry> = self
            .slots
            .iter()
            .filter(|&&i| i != 0)
            .filter_map(|&i| self.entries.get(i as usize - 1))
            .collect();
        order.sort_by_key(|e| (e.partition, e.hash));
        let mut buckets: Vec<Vec<(Value, Value)>> = Vec::new();
        buckets.resize_with(self.partitions as usize, Vec::new);
        for e in order {
            let bytes = self.arena.get(e.start..e.start + e.len).unwrap_or(&[]);
            let word = String::from_utf8_lossy(bytes).into_owned();
            if let Some(b) = buckets.get_mut(e.partition as usize) {
                b.push((Value::Str(word), Value::I64(e.count)));
            }
        }
        buckets
    }
}

/// How much of the file is read at a time.
const BLOCK: usize = 1 << 20;

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

/// The index of the first `\n` or `\r`, eight bytes a step.
fn find_eol(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let is_eol = |b: &u8| *b == b'\n' || *b == b'\r';
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        let w = u64::from_le_bytes(w);
        if has_zero(w ^ (ONES * u64::from(b'\n'))) | has_zero(w ^ (ONES * u64::from(b'\r'))) != 0 {
            return c.iter().position(is_eol).map(|p| offset + p);
        }
        offset += 8;
    }
    chunks.remainder().iter().position(is_eol).map(|p| offset + p)
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
        m.add_line(b"big big small", b' ', true).unwrap();
        for e in &mut m.entries {
            if e.len == 3 {
                e.count = i64::MAX;
            }
        }
        m.add_line(b"big", b' ', true).unwrap();
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
