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
//!   split's end read in full; terminators found with `memchr2`; an ASCII line is valid
//!   UTF-8 without decoding it), split as Java's `String.split` does (separators found eight
//!   bytes a step and gathered into one bit mask per 64 bytes), and each word is counted in a
//!   byte-keyed table of 16-byte slots ([`WordMap`]) without allocating (a table of 1 MiB or more is
//!   mapped with transparent huge pages, see the `table` module, and a split's tables start as
//!   large as the last split's on the thread). Once the split is read, the
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
use super::table::{Table, ZeroSlot};
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
    let (bits, long_bits) = LAST_TABLE_BITS.get();
    let mut map = WordMap::with_bits(
        plan.partitions,
        bits.clamp(FIRST_SLOTS_BITS, MOST_FIRST_SLOTS_BITS),
        long_bits.clamp(FIRST_LONG_SLOTS_BITS, MOST_FIRST_LONG_SLOTS_BITS),
    );
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
        // An ASCII line (most) is valid UTF-8 without decoding it.
        if line.is_ascii() || std::str::from_utf8(line).is_ok() {
            map.add_line(&lines.buf, range, plan.separator)?;
        } else {
            // Hadoop's Text.toString: invalid UTF-8 becomes replacement characters.
            let s = String::from_utf8_lossy(line).into_owned();
            map.add_line(s.as_bytes(), 0..s.len(), plan.separator)?;
        }
    }
    records_read.set(records_read.get() + read);
    LAST_TABLE_BITS.set((map.bits, map.long_bits));
    Ok(map)
}

thread_local! {
    /// The sizes (bits) of the two counting tables of the last split counted on this thread:
    /// the next split of a job mostly has as many distinct words, so its tables start that
    /// large instead of doubling up to it (each doubling re-inserts every word; a fresh
    /// table's pages are zero-filled as they are first touched, see [`super::table`]).
    static LAST_TABLE_BITS: Cell<(u32, u32)> = const { Cell::new((FIRST_SLOTS_BITS, FIRST_LONG_SLOTS_BITS)) };
}

/// The largest first size (bits) of the short words' table taken from the last split (4 MiB
/// of slots): a split of a file with many more distinct words still grows past it, and a
/// thread that once counted such a file does not start every later split that large.
const MOST_FIRST_SLOTS_BITS: u32 = 18;
/// As [`MOST_FIRST_SLOTS_BITS`] for the long words' table (4 MiB).
const MOST_FIRST_LONG_SLOTS_BITS: u32 = 17;

/// One distinct word of a [`WordMap`]: where its bytes are in the arena.
#[derive(Clone, Copy, Debug)]
struct WordEntry {
    start: usize,
    len: usize,
}

/// One slot of [`WordMap`]'s counting table: 16 bytes, four a cache line, so that one read
/// finds a word and counts it (the slots of a split's ~100,000 words take 2 MiB).
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    /// The word's first eight bytes, little-endian, zero past its end.
    prefix: u64,
    /// Ones counted in the slot (wrapping into [`WordMap::extra`] past `u32::MAX`).
    count: u32,
    /// Bits 8..32: bits 32..56 of the word's table hash; bits 0..8: the word's length + 1,
    /// saturated at 255 (longer words compare their bytes). 0 for an empty slot.
    meta: u32,
}

// SAFETY: integers only; all zeros is the empty slot.
unsafe impl ZeroSlot for Slot {}

/// One slot of [`WordMap`]'s table of words longer than eight bytes (32 bytes): a word of up
/// to sixteen bytes is compared without reading its bytes.
#[derive(Clone, Copy, Debug, Default)]
struct LongSlot {
    /// The word's first eight bytes, little-endian.
    prefix: u64,
    /// Its bytes 8..16, little-endian, zero past its end.
    second: u64,
    /// As [`Slot::count`].
    count: u32,
    /// As [`Slot::meta`] (0 for an empty slot).
    meta: u32,
    /// Index + 1 of the word in [`WordMap::words`].
    word: u32,
}

// SAFETY: integers only; all zeros is the empty slot.
unsafe impl ZeroSlot for LongSlot {}

/// The counting table's first size (slots); it doubles past three quarters full.
const FIRST_SLOTS_BITS: u32 = 12;
/// The long words' table's first size (slots); it doubles past three quarters full.
const FIRST_LONG_SLOTS_BITS: u32 = 10;

/// Counts per word, keyed by the word's bytes. Counting uses tables of its own (linear
/// probing on a multiplicative hash of the bytes, the count in the slot; a word of up to eight
/// bytes compared as one integer and its length, in 16-byte slots; a longer word as two
/// integers and its length, and its bytes past the sixteenth, in 32-byte slots of a second
/// table), not Spark's layout: Spark's table, and so
/// the order its entries come out in, depends only on the distinct keys in the order they
/// were first inserted, so [`WordMap::into_encoded`] inserts the distinct words in that order
/// into a replica of `PartitionedAppendOnlyMap`'s slots (same slots from the `(partition,
/// word)` hash, same quadratic probing, same growth past 70%, re-inserted in slot order) and
/// reads the slot order from it. The JVM hash code is computed once per distinct word. The
/// words' bytes live in one arena.
#[derive(Clone, Debug)]
pub(crate) struct WordMap {
    /// The words of up to eight bytes.
    slots: Table<Slot>,
    /// Index + 1 in [`WordMap::words`] of each slot's word (0 for an empty slot), read only
    /// to compare a long word, to insert and to grow.
    index: Table<u32>,
    /// `slots.len() == 1 << bits`.
    bits: u32,
    /// The words longer than eight bytes; `long.len() == 1 << long_bits`.
    long: Table<LongSlot>,
    long_bits: u32,
    /// How many words `long` holds.
    long_words: usize,
    /// The distinct words in the order they were first seen.
    words: Vec<WordEntry>,
    /// Per word, what its count is beyond its slot's `count` (counts added other than one by
    /// one, and the carries of `count`); a word's count is `extra + count`, wrapping.
    extra: Vec<i64>,
    arena: Vec<u8>,
    partitions: u32,
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

/// The `0x80` bits of `m` (one a byte, as [`zero_bytes`] gives them) gathered into the low
/// eight bits, byte `i` to bit `i` (each product term lands on a bit of its own: no carries).
#[inline]
fn gather(m: u64) -> u64 {
    ((m >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56
}

/// The bytes of `block` equal to `sep`: bit i for byte i. SSE2 (part of x86-64's baseline)
/// compares 16 bytes an instruction: about 20 instructions for the 64 bytes where eight
/// steps of [`zero_bytes`] and [`gather`] take about 100.
#[cfg(target_arch = "x86_64")]
#[inline]
fn separators64(block: &[u8; 64], sep: u8) -> u64 {
    use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8};
    let mut mask = 0u64;
    // SAFETY: SSE2 is enabled on every x86-64 target; each load reads 16 bytes inside
    // `block` (offsets 0, 16, 32, 48 of 64) and needs no alignment.
    unsafe {
        let pattern = _mm_set1_epi8(sep as i8);
        for i in 0..4 {
            let v = _mm_loadu_si128(block.as_ptr().add(16 * i).cast());
            let m = _mm_movemask_epi8(_mm_cmpeq_epi8(v, pattern)) as u32 & 0xFFFF;
            mask |= u64::from(m) << (16 * i);
        }
    }
    mask
}

/// The bytes of `block` equal to `sep`: bit i for byte i (eight bytes a step).
#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn separators64(block: &[u8; 64], sep: u8) -> u64 {
    let pattern = ONES * u64::from(sep);
    let mut mask = 0u64;
    for (k, b) in block.chunks_exact(8).enumerate() {
        mask |= gather(zero_bytes(load8(b, 0) ^ pattern)) << (8 * k);
    }
    mask
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
        let end = (start + len.min(8)).min(bytes.len());
        bytes
            .get(start..end)
            .unwrap_or(&[])
            .iter()
            .rev()
            .fold(0u64, |v, &b| v << 8 | u64::from(b))
    }
}

/// The counting table's hash of the word `bytes[start..start + len]` whose first eight bytes
/// are `prefix`.
#[inline]
fn table_hash(bytes: &[u8], start: usize, len: usize, prefix: u64) -> u64 {
    let h = (prefix ^ (len as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93)).wrapping_mul(MIX);
    if len > 8 {
        long_hash(h, bytes, start, len)
    } else {
        h
    }
}

/// [`table_hash`] of a word longer than eight bytes: its other bytes, eight a step.
#[inline(never)]
fn long_hash(mut h: u64, bytes: &[u8], start: usize, len: usize) -> u64 {
    let mut at = 8;
    while at < len {
        let c = prefix_of(bytes, start + at, len - at);
        h = (h.rotate_left(29) ^ c).wrapping_mul(MIX);
        at += 8;
    }
    h
}

/// A slot's `meta` for a word of `len` bytes and table hash `hash` (never 0).
#[inline]
fn meta_of(hash: u64, len: usize) -> u32 {
    ((hash >> 24) as u32 & 0xFFFF_FF00) | (len.saturating_add(1)).min(255) as u32
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
        WordMap::with_bits(partitions, FIRST_SLOTS_BITS, FIRST_LONG_SLOTS_BITS)
    }

    /// An empty map whose tables start with `1 << bits` and `1 << long_bits` slots.
    fn with_bits(partitions: u32, bits: u32, long_bits: u32) -> WordMap {
        WordMap {
            slots: Table::zeroed(1 << bits),
            index: Table::zeroed(1 << bits),
            bits,
            long: Table::zeroed(1 << long_bits),
            long_bits,
            long_words: 0,
            words: Vec::new(),
            extra: Vec::new(),
            arena: Vec::new(),
            partitions,
        }
    }

    /// Counts the words of the line `bytes[line]` as Java's `line.split(sep)` gives them: a
    /// line without the separator (the empty line too) is one word; empty words are kept
    /// except trailing ones. The line must be valid UTF-8 (a decoded line). The separators of
    /// 64 bytes at a time are found eight bytes a step and gathered into one bit mask, and
    /// each word is counted as its end is found (the empty words before it with one look-up).
    pub(crate) fn add_line(
        &mut self,
        bytes: &[u8],
        line: std::ops::Range<usize>,
        sep: u8,
    ) -> Result<(), TaskError> {
        let (lo, hi) = (line.start, line.end.min(bytes.len()));
        if lo >= hi {
            return self.count(bytes, lo, 0, 1);
        }
        let pattern = ONES * u64::from(sep);
        let mut word_start = lo;
        let mut empties = 0i64;
        let mut base = lo;
        while base < hi {
            // The separators among the next (up to) 64 bytes: bit i for byte base + i.
            let n = (hi - base).min(64);
            let whole = bytes.get(base..base + 64).filter(|_| n == 64);
            let mut mask = match whole.and_then(|b| <&[u8; 64]>::try_from(b).ok()) {
                Some(block) => separators64(block, sep),
                None => 0,
            };
            if whole.is_none() {
                let mut k = 0;
                while k + 8 <= n {
                    mask |= gather(zero_bytes(load8(bytes, base + k) ^ pattern)) << k;
                    k += 8;
                }
                if k < n {
                    let rest = if base + k + 8 <= bytes.len() {
                        load8(bytes, base + k)
                    } else {
                        prefix_of(bytes, base + k, n - k)
                    };
                    // Bytes past the line's end (or the zero padding) are not separators.
                    mask |= (gather(zero_bytes(rest ^ pattern)) & ((1u64 << (n - k)) - 1)) << k;
                }
            }
            while mask != 0 {
                let at = base + mask.trailing_zeros() as usize;
                mask &= mask - 1;
                if at == word_start {
                    empties += 1;
                } else {
                    if empties > 0 {
                        self.count(bytes, word_start, 0, empties)?;
                        empties = 0;
                    }
                    self.count(bytes, word_start, at - word_start, 1)?;
                }
                word_start = at + 1;
            }
            base += n;
        }
        // What follows the last separator; trailing empty words are dropped.
        if word_start < hi {
            if empties > 0 {
                self.count(bytes, word_start, 0, empties)?;
            }
            self.count(bytes, word_start, hi - word_start, 1)?;
        }
        Ok(())
    }

    /// Adds `n` to the count of the word `bytes[start..start + len]` (wrapping, as `add`
    /// adds longs).
    #[inline]
    fn add_count(&mut self, bytes: &[u8], start: usize, len: usize, n: i64) -> Result<(), TaskError> {
        self.count(bytes, start, len, n)
    }

    /// Adds `n` to the count of the word `bytes[start..start + len]`.
    #[inline(always)]
    fn count(&mut self, bytes: &[u8], start: usize, len: usize, n: i64) -> Result<(), TaskError> {
        if len > 8 {
            return self.count_long(bytes, start, len, n);
        }
        let prefix = prefix_of(bytes, start, len);
        let h = table_hash(bytes, start, len, prefix);
        let meta = meta_of(h, len);
        let mask = (1usize << self.bits) - 1;
        let mut pos = (h >> (64 - self.bits)) as usize;
        loop {
            let Some(slot) = self.slots.get_mut(pos) else {
                return Err(CapacityError(format!("word table slot {pos} out of range")).into());
            };
            if slot.prefix == prefix && slot.meta == meta {
                if n == 1 {
                    let (c, carried) = slot.count.overflowing_add(1);
                    slot.count = c;
                    if carried {
                        let w = self.index.get(pos).copied();
                        self.add_extra(w, 1 << 32);
                    }
                } else {
                    let w = self.index.get(pos).copied();
                    self.add_extra(w, n);
                }
                return Ok(());
            } else if slot.meta == 0 {
                return self.insert(pos, bytes, start, len, prefix, meta, n);
            }
            pos = (pos + 1) & mask;
        }
    }

    /// Adds `n` to the count of the word `bytes[start..start + len]`, longer than eight bytes.
    #[inline(never)]
    fn count_long(&mut self, bytes: &[u8], start: usize, len: usize, n: i64) -> Result<(), TaskError> {
        let prefix = prefix_of(bytes, start, 8);
        let second = prefix_of(bytes, start + 8, len - 8);
        let h = table_hash(bytes, start, len, prefix);
        let meta = meta_of(h, len);
        let mask = (1usize << self.long_bits) - 1;
        let mut pos = (h >> (64 - self.long_bits)) as usize;
        loop {
            let Some(slot) = self.long.get(pos) else {
                return Err(CapacityError(format!("word table slot {pos} out of range")).into());
            };
            if slot.prefix == prefix
                && slot.second == second
                && slot.meta == meta
                && (len <= 16 || self.same_tail(slot.word, bytes, start, len))
            {
                let w = Some(slot.word);
                if n == 1 {
                    if let Some(slot) = self.long.get_mut(pos) {
                        let (c, carried) = slot.count.overflowing_add(1);
                        slot.count = c;
                        if carried {
                            self.add_extra(w, 1 << 32);
                        }
                    }
                } else {
                    self.add_extra(w, n);
                }
                return Ok(());
            }
            if slot.meta == 0 {
                self.check_capacity()?;
                self.push_word(bytes, start, len, n);
                if let Some(slot) = self.long.get_mut(pos) {
                    *slot = LongSlot {
                        prefix,
                        second,
                        count: u32::from(n == 1),
                        meta,
                        word: self.words.len() as u32,
                    };
                }
                self.long_words += 1;
                if self.long_words * 4 > self.long.len() * 3 {
                    self.grow_long();
                }
                return Ok(());
            }
            pos = (pos + 1) & mask;
        }
    }

    /// Whether the word of index + 1 `word` (as long as `len`, more than sixteen bytes, same
    /// first sixteen bytes) has the bytes of `bytes[start + 16..start + len]` after them.
    #[inline(never)]
    fn same_tail(&self, word: u32, bytes: &[u8], start: usize, len: usize) -> bool {
        let Some(e) = self.words.get((word as usize).wrapping_sub(1)) else {
            return false;
        };
        if e.len != len {
            return false;
        }
        let mut at = 16;
        while at < len {
            if prefix_of(&self.arena, e.start + at, len - at) != prefix_of(bytes, start + at, len - at) {
                return false;
            }
            at += 8;
        }
        true
    }

    /// Adds `n` to the count of the word of index + 1 `word` beyond its slot's own count.
    #[inline(never)]
    fn add_extra(&mut self, word: Option<u32>, n: i64) {
        let w = word.map_or(0, |w| w as usize);
        if let Some(c) = self.extra.get_mut(w.wrapping_sub(1)) {
            *c = c.wrapping_add(n);
        }
    }

    /// Spark's table refuses to grow past MAXIMUM_CAPACITY slots (70% of them full).
    fn check_capacity(&self) -> Result<(), TaskError> {
        let most = (0.7 * MAXIMUM_CAPACITY as f64) as usize;
        if self.words.len() >= most {
            return Err(CapacityError(format!("Can't contain more than {most} elements")).into());
        }
        Ok(())
    }

    /// Appends a new word to the words and the arena, counted `n` (one in its slot).
    fn push_word(&mut self, bytes: &[u8], start: usize, len: usize, n: i64) {
        let at = self.arena.len();
        self.arena
            .extend_from_slice(bytes.get(start..start + len).unwrap_or(&[]));
        self.words.push(WordEntry { start: at, len });
        self.extra.push(if n == 1 { 0 } else { n });
    }

    /// Puts a new word in the empty slot `pos`, then grows the table past three quarters full.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn insert(
        &mut self,
        pos: usize,
        bytes: &[u8],
        start: usize,
        len: usize,
        prefix: u64,
        meta: u32,
        n: i64,
    ) -> Result<(), TaskError> {
        self.check_capacity()?;
        self.push_word(bytes, start, len, n);
        if let (Some(slot), Some(index)) = (self.slots.get_mut(pos), self.index.get_mut(pos)) {
            *slot = Slot {
                prefix,
                count: u32::from(n == 1),
                meta,
            };
            *index = self.words.len() as u32;
        }
        if (self.words.len() - self.long_words) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        Ok(())
    }

    /// Doubles the table of short words (its order does not matter): each word's hash is
    /// computed again from its bytes.
    fn grow(&mut self) {
        let bits = self.bits + 1;
        let mask = (1usize << bits) - 1;
        let mut slots = Table::<Slot>::zeroed(1 << bits);
        let mut index = Table::<u32>::zeroed(1 << bits);
        for (s, &w) in self.slots.iter().zip(self.index.iter()) {
            let Some(e) = self.words.get((w as usize).wrapping_sub(1)) else {
                continue;
            };
            let prefix = prefix_of(&self.arena, e.start, e.len);
            let h = table_hash(&self.arena, e.start, e.len, prefix);
            let mut pos = (h >> (64 - bits)) as usize;
            while slots.get(pos).is_some_and(|t| t.meta != 0) {
                pos = (pos + 1) & mask;
            }
            if let (Some(t), Some(i)) = (slots.get_mut(pos), index.get_mut(pos)) {
                *t = *s;
                *i = w;
            }
        }
        self.slots = slots;
        self.index = index;
        self.bits = bits;
    }

    /// Doubles the table of long words.
    fn grow_long(&mut self) {
        let bits = self.long_bits + 1;
        let mask = (1usize << bits) - 1;
        let mut slots = Table::<LongSlot>::zeroed(1 << bits);
        for s in self.long.iter().filter(|s| s.meta != 0) {
            let Some(e) = self.words.get((s.word as usize).wrapping_sub(1)) else {
                continue;
            };
            let h = table_hash(&self.arena, e.start, e.len, s.prefix);
            let mut pos = (h >> (64 - bits)) as usize;
            while slots.get(pos).is_some_and(|t| t.meta != 0) {
                pos = (pos + 1) & mask;
            }
            if let Some(t) = slots.get_mut(pos) {
                *t = *s;
            }
        }
        self.long = slots;
        self.long_bits = bits;
    }

    /// The words' counts, in the order the words were first seen.
    fn counts(&self) -> Vec<i64> {
        let mut counts = self.extra.clone();
        let short = self.slots.iter().zip(self.index.iter().copied());
        let long = self.long.iter().map(|s| (s.count, s.word));
        for (count, w) in short.map(|(s, w)| (s.count, w)).chain(long) {
            if let Some(c) = counts.get_mut((w as usize).wrapping_sub(1)) {
                *c = c.wrapping_add(i64::from(count));
            }
        }
        counts
    }

    /// Sets the count of each word, given its bytes and its rank in slot order (short words'
    /// table first; tests).
    #[cfg(test)]
    fn set_counts(&mut self, mut count: impl FnMut(&[u8], usize) -> Option<i64>) {
        let short = self.slots.iter_mut().zip(self.index.iter().copied());
        let long = self.long.iter_mut().map(|s| {
            let w = s.word;
            (&mut s.count, w)
        });
        let mut rank = 0;
        for (slot_count, w) in short.map(|(s, w)| (&mut s.count, w)).chain(long) {
            let Some(e) = self.words.get((w as usize).wrapping_sub(1)) else {
                continue;
            };
            if let Some(c) = count(self.arena.get(e.start..e.start + e.len).unwrap_or(&[]), rank) {
                *slot_count = 0;
                if let Some(x) = self.extra.get_mut(w as usize - 1) {
                    *x = c;
                }
            }
            rank += 1;
        }
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
        let slot_order = spark_slot_order(&slot_hashes);
        // By partition, then hash code (signed), ties in slot order: one packed key and the
        // rank in slot order per word, sorted as integers.
        let mut sorted: Vec<(u64, u32)> = slot_order
            .iter()
            .enumerate()
            .filter_map(|(rank, &i)| {
                let &(hash, partition) = keys.get(i)?;
                let key = u64::from(partition) << 32 | u64::from(hash as u32 ^ 0x8000_0000);
                Some((key, rank as u32))
            })
            .collect();
        sorted.sort_unstable();
        let order = sorted
            .into_iter()
            .filter_map(|(_, rank)| slot_order.get(rank as usize).copied())
            .collect();
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
        m.set_counts(|w, _| (w.len() == 3).then_some(i64::MAX));
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
            m.set_counts(|_, i| Some(counts[i % counts.len()]));
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
    fn tables_started_large_count_and_order_as_grown_ones() {
        // Words of up to eight bytes and longer ones, many distinct (the small tables grow).
        let lines: Vec<String> = (0..3000)
            .map(|i| format!("w{} longer-word-{} w{} x", i % 1700, i % 900, i % 7))
            .collect();
        let grown = fused(&lines.iter().map(String::as_str).collect::<Vec<_>>(), b' ', 4);
        let mut m = WordMap::with_bits(4, MOST_FIRST_SLOTS_BITS, MOST_FIRST_LONG_SLOTS_BITS);
        for line in &lines {
            m.add_line(line.as_bytes(), 0..line.len(), b' ').unwrap();
        }
        assert_eq!(m.bits, MOST_FIRST_SLOTS_BITS);
        assert_eq!(m.into_buckets(), grown);
    }

    #[test]
    fn separators64_marks_each_byte_equal_to_the_separator() {
        // Every byte value at every position, against the separators the bytes are tested
        // for (space, comma, NUL, a high ASCII byte).
        for sep in [b' ', b',', 0, 0x7f] {
            for round in 0u32..256 {
                let block: [u8; 64] = std::array::from_fn(|i| {
                    let v = (round as usize * 64 + i * 7) as u8;
                    if (round as usize + i).is_multiple_of(5) {
                        sep
                    } else {
                        v
                    }
                });
                let want = block
                    .iter()
                    .enumerate()
                    .fold(0u64, |m, (i, &b)| m | u64::from(b == sep) << i);
                assert_eq!(separators64(&block, sep), want, "separator {sep}, round {round}");
            }
        }
    }

    #[test]
    fn gather_puts_each_bytes_match_on_its_bit() {
        for pattern in 0u32..256 {
            let bytes: [u8; 8] = std::array::from_fn(|i| {
                if pattern >> i & 1 == 1 {
                    b' '
                } else {
                    b'a' + i as u8
                }
            });
            let m = zero_bytes(u64::from_le_bytes(bytes) ^ (ONES * u64::from(b' ')));
            assert_eq!(gather(m), u64::from(pattern), "{bytes:?}");
        }
        // Bytes next to the separator's value, and high bytes, are not matches.
        let v = u64::from_le_bytes([0x1f, 0x21, 0xa0, 0x20, 0xff, 0x00, 0x60, 0x20]);
        assert_eq!(gather(zero_bytes(v ^ (ONES * 0x20))), 0b1000_1000);
    }

    #[test]
    fn word_map_lines_past_64_bytes_and_inside_a_buffer() {
        // Lines of every length up to 200 bytes with separators at and around the 64-byte
        // steps of the scan, single and doubled, leading and trailing; each counted where it
        // ends the buffer and where separators and other bytes follow it in the buffer.
        let mut lines: Vec<String> = Vec::new();
        for len in 0..200usize {
            for step in [1usize, 2, 3, 7, 8, 9, 63, 64, 65] {
                let line: String = (0..len)
                    .map(|i| match i % step {
                        0 => ' ',
                        _ if i % 61 == 5 => 'é',
                        _ => char::from(b'a' + (i % 26) as u8),
                    })
                    .collect();
                lines.push(line);
            }
        }
        for pos in [62usize, 63, 64, 65, 126, 127, 128, 129] {
            let mut l = "y".repeat(pos);
            l.push(' ');
            l.push_str("tail word");
            lines.push(l.clone());
            lines.push(format!("{l} "));
            lines.push(format!("{}  ", "z".repeat(pos)));
        }
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        for partitions in [1, 5] {
            let want = reference(&refs, ' ', partitions);
            assert_eq!(fused(&refs, b' ', partitions), want, "lines ending the buffer");
            let mut m = WordMap::new(partitions);
            for line in &refs {
                for (before, after) in [("", " a b"), ("  x ", "   "), ("q", " \n  \r ")] {
                    let buf = format!("{before}{line}{after}");
                    let start = before.len();
                    m.add_line(buf.as_bytes(), start..start + line.len(), b' ')
                        .unwrap();
                }
            }
            let got = m.into_buckets();
            let tripled: Vec<Vec<(Value, Value)>> = want
                .iter()
                .map(|b| {
                    b.iter()
                        .map(|(k, v)| (k.clone(), Value::I64(3 * v.as_i64().unwrap())))
                        .collect()
                })
                .collect();
            assert_eq!(got, tripled, "lines inside a buffer");
        }
    }

    #[test]
    fn slot_counts_carry_past_u32() {
        let mut m = WordMap::new(2);
        m.add_line(b"w w longer-than-eight", 0..21, b' ').unwrap();
        for s in m.slots.iter_mut().filter(|s| s.meta != 0) {
            s.count = u32::MAX - 1;
        }
        for s in m.long.iter_mut().filter(|s| s.meta != 0) {
            s.count = u32::MAX - 1;
        }
        m.add_line(b"w w w longer-than-eight longer-than-eight", 0..41, b' ')
            .unwrap();
        m.add_count(b"w", 0, 1, -5).unwrap();
        m.add_count(b"longer-than-eight", 0, 17, i64::MAX).unwrap();
        let got: std::collections::HashMap<Value, Value> = m.into_buckets().into_iter().flatten().collect();
        let max = i64::from(u32::MAX);
        assert_eq!(got.get(&Value::str("w")), Some(&Value::I64(max - 1 + 3 - 5)));
        let long = (max - 1 + 2).wrapping_add(i64::MAX);
        assert_eq!(got.get(&Value::str("longer-than-eight")), Some(&Value::I64(long)));
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn long_words_sharing_a_prefix_and_length_are_apart() {
        // Same first eight bytes and length, different later bytes: counted apart.
        let words = [
            "abcdefghi",
            "abcdefghj",
            "abcdefghij",
            "abcdefghik",
            "abcdefgh",
            "abcdefgh\u{0}",
            "abcdefgh12345678x",
            "abcdefgh12345678y",
            "abcdefgh12345679x",
            "abcdefgh12345678abcdefghX",
            "abcdefgh12345678abcdefghY",
            "abcdefgh12345678abcdefgh",
            "abcdefgh12345678abcdefgh\u{0}",
            "héllo-wörld-héllo",
            "héllo-wörld-hëllo",
        ];
        let mut lines = Vec::new();
        for (i, w) in words.iter().enumerate() {
            lines.push(vec![*w; i + 1].join(" "));
        }
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        assert_eq!(fused(&refs, b' ', 3), reference(&refs, ' ', 3));
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

    #[test]
    fn a_line_whose_words_grow_the_tables_gives_the_generic_counts() {
        // One line of thousands of distinct words (1 to 20 bytes, some non-ASCII, some after
        // double spaces) and their repeats: both tables grow several times in the middle of a
        // line's 64-byte scan steps, and the words seen again after growing are found.
        // Word i: its four base-26 digits, then filler letters, cut to 1 to 20 bytes.
        let words: Vec<String> = (0..20_000usize)
            .map(|i| {
                let digits = (0..4).map(|d| char::from(b'a' + (i / 26usize.pow(d) % 26) as u8));
                let mut w: String = digits
                    .chain("qwertyuiopasdfghjklz".chars())
                    .take(1 + i % 20)
                    .collect();
                if i % 97 == 3 {
                    w.push('ø');
                }
                w
            })
            .collect();
        let mut line = String::new();
        for (i, w) in words.iter().chain(words.iter().step_by(3)).enumerate() {
            line.push_str(w);
            line.push_str(if i % 13 == 0 { "  " } else { " " });
        }
        line.push_str("\r end ");
        let lines = [line.as_str(), " \r ", "     ", "end"];
        for partitions in [1, 7] {
            let mut m = WordMap::new(partitions);
            for line in lines {
                m.add_line(line.as_bytes(), 0..line.len(), b' ').unwrap();
            }
            assert!(m.bits > FIRST_SLOTS_BITS && m.long_bits > FIRST_LONG_SLOTS_BITS + 2);
            assert_eq!(m.into_buckets(), reference(&lines, ' ', partitions));
        }
    }
}
