//! Slices of a parallelized collection (ParallelCollectionRDD's partitions) and how a
//! collection is cut into them, following `ParallelCollectionRDD.slice`.
//!
//! Layer: rdd (the Spark side's data model, above yarn; no actors).
//!
//! Slice `i` of `n` holds the elements at positions `i*len/n .. (i+1)*len/n` (integer
//! division on 128-bit products, so `1 to 10` in 2 slices is `1..5` and `6..10`, and `1 to 3`
//! in 5 is `[], [1], [], [2], [3]`, as Spark 4.3's `glom()` shows). An integer range stays a
//! [`Slice::Range`] (nothing is materialised: `parallelize(1 until 10000000, 100)` ships three
//! numbers per slice); element arithmetic is done in 128 bits, so ranges reaching
//! `i64::MIN`/`i64::MAX` slice and iterate without overflow. A Scala inclusive range
//! `a to b by s` is the exclusive range `a until b + 1 by s` here (`b - 1` for a negative
//! step).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::lineage::Slice;
use super::value::Value;

/// The message of `parallelize` with fewer than one slice (Spark's IllegalArgumentException).
pub const POSITIVE_PARTITIONS_REQUIRED: &str = "Positive number of partitions required";

impl Slice {
    /// How many records the slice yields (0 for a malformed range with step 0).
    pub fn len(&self) -> u64 {
        match self {
            Slice::Range { start, end, step } => range_len(*start, *end, *step).unwrap_or(0),
            Slice::Values(v) => v.len() as u64,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The slice's records, in order, without materialising a range (values are cloned).
    pub fn iter(&self) -> SliceIter<'_> {
        match self {
            Slice::Range { start, end, step } => SliceIter::Range(RangeIter::new(*start, *end, *step)),
            Slice::Values(v) => SliceIter::Values(v.iter()),
        }
    }

    /// The records as a vector (materialises a range).
    pub fn to_values(&self) -> Vec<Value> {
        self.iter().collect()
    }
}

/// Iterator over a [`Slice`]'s records.
#[derive(Clone, Debug)]
pub enum SliceIter<'a> {
    Range(RangeIter),
    Values(std::slice::Iter<'a, Value>),
}

impl Iterator for SliceIter<'_> {
    type Item = Value;

    fn next(&mut self) -> Option<Value> {
        match self {
            SliceIter::Range(r) => r.next().map(Value::I64),
            SliceIter::Values(it) => it.next().cloned(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            SliceIter::Range(r) => r.size_hint(),
            SliceIter::Values(it) => it.size_hint(),
        }
    }

    fn nth(&mut self, n: usize) -> Option<Value> {
        match self {
            SliceIter::Range(r) => r.nth(n).map(Value::I64),
            SliceIter::Values(it) => it.nth(n).cloned(),
        }
    }

    fn last(self) -> Option<Value> {
        match self {
            SliceIter::Range(r) => r.last().map(Value::I64),
            SliceIter::Values(it) => it.last().cloned(),
        }
    }
}

/// The integers of a range slice, computed one at a time.
#[derive(Clone, Debug)]
pub struct RangeIter {
    next: i128,
    step: i128,
    remaining: u64,
}

impl RangeIter {
    /// `start until end by step` (empty for step 0).
    pub fn new(start: i64, end: i64, step: i64) -> RangeIter {
        RangeIter {
            next: i128::from(start),
            step: i128::from(step),
            remaining: range_len(start, end, step).unwrap_or(0),
        }
    }

    /// The next at most `max` integers at once, as `(first, count, step)`: they are
    /// `first + k * step` for `k < count`, every one within `i64` (the range lies between two
    /// `i64`s). `None` once the range is used up.
    pub fn next_chunk(&mut self, max: u64) -> Option<(i64, u64, i64)> {
        if self.remaining == 0 || max == 0 {
            return None;
        }
        let first = i64::try_from(self.next).ok()?;
        let step = i64::try_from(self.step).ok()?;
        let count = self.remaining.min(max);
        self.remaining -= count;
        self.next = self
            .next
            .saturating_add(i128::from(count).saturating_mul(self.step));
        Some((first, count, step))
    }
}

impl Iterator for RangeIter {
    type Item = i64;

    fn next(&mut self) -> Option<i64> {
        if self.remaining == 0 {
            return None;
        }
        let v = i64::try_from(self.next).ok()?;
        self.remaining -= 1;
        self.next = self.next.saturating_add(self.step);
        Some(v)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.remaining).unwrap_or(usize::MAX);
        (n, usize::try_from(self.remaining).ok())
    }

    /// Skips in constant time.
    fn nth(&mut self, n: usize) -> Option<i64> {
        let skip = n as u64;
        if skip >= self.remaining {
            self.remaining = 0;
            return None;
        }
        self.remaining -= skip;
        self.next = self
            .next
            .saturating_add(i128::from(skip).saturating_mul(self.step));
        self.next()
    }

    /// The last element in constant time.
    fn last(self) -> Option<i64> {
        if self.remaining == 0 {
            return None;
        }
        let offset = i128::from(self.remaining - 1).saturating_mul(self.step);
        i64::try_from(self.next.saturating_add(offset)).ok()
    }
}

/// The number of elements of Scala's `start until end by step`. Errors: step 0 (Scala's
/// "step cannot be 0.").
pub fn range_len(start: i64, end: i64, step: i64) -> Result<u64, String> {
    if step == 0 {
        return Err("step cannot be 0.".to_string());
    }
    let (s, e, st) = (i128::from(start), i128::from(end), i128::from(step));
    let (span, stride) = if st > 0 { (e - s, st) } else { (s - e, -st) };
    let n: i128 = if span <= 0 { 0 } else { (span - 1) / stride + 1 };
    // At most 2^64 - 1 elements fit between two i64s with a stride of at least one.
    u64::try_from(n).map_err(|_| format!("range {start} until {end} by {step} has too many elements"))
}

/// Spark's `ParallelCollectionRDD.positions`: `(i*len/n, (i+1)*len/n)` for each slice `i`.
pub fn positions(len: u64, num_slices: u32) -> impl Iterator<Item = (u64, u64)> {
    let n = u128::from(num_slices);
    let l = u128::from(len);
    (0..n).map(move |i| {
        let s = (i * l) / n;
        let e = ((i + 1) * l) / n;
        (
            u64::try_from(s).unwrap_or(u64::MAX),
            u64::try_from(e).unwrap_or(u64::MAX),
        )
    })
}

fn check_slices(num_slices: u32) -> Result<(), String> {
    if num_slices < 1 {
        return Err(POSITIVE_PARTITIONS_REQUIRED.to_string());
    }
    Ok(())
}

/// Cuts `start until end by step` into `num_slices` range slices, as
/// `ParallelCollectionRDD.slice` cuts a Scala `Range` (each slice a sub-range).
pub fn slice_range(start: i64, end: i64, step: i64, num_slices: u32) -> Result<Vec<Slice>, String> {
    let slices = Slices::range(start, end, step, num_slices)?;
    Ok(slices.iter().map(Cow::into_owned).collect())
}

/// The element at position `pos` (at most the range's length) of `start until end by step`,
/// as a slice bound: position `len` is at most one step past the last element, which lies
/// between `start` and `end` (or is `end` itself), so it is clamped to `end` and fits an i64.
fn range_bound(start: i64, end: i64, step: i64, pos: u64) -> i64 {
    let v = i128::from(start) + i128::from(pos) * i128::from(step);
    let clamped = if step > 0 {
        v.min(i128::from(end))
    } else {
        v.max(i128::from(end))
    };
    i64::try_from(clamped).unwrap_or(end)
}

/// A parallelized collection's slices: listed one by one (explicit values, `makeRDD`), or an
/// integer range with the number of slices it is cut into, each slice computed when it is
/// asked for (what [`slice_range`] would list). A job of a million one-number slices then
/// holds 32 bytes of slices, not 32 MB per copy of its lineage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Slices {
    Listed(Vec<Slice>),
    /// `start until end by step` in `num_slices` slices (checked: step not 0, at least one
    /// slice, a length that fits a u64).
    Range {
        start: i64,
        end: i64,
        step: i64,
        num_slices: u32,
    },
}

impl Default for Slices {
    fn default() -> Slices {
        Slices::Listed(Vec::new())
    }
}

impl From<Vec<Slice>> for Slices {
    fn from(slices: Vec<Slice>) -> Slices {
        Slices::Listed(slices)
    }
}

impl Slices {
    /// `start until end by step` cut into `num_slices`, as `ParallelCollectionRDD.slice`
    /// cuts a Scala `Range`. Errors: fewer than one slice (Spark's message), step 0.
    pub fn range(start: i64, end: i64, step: i64, num_slices: u32) -> Result<Slices, String> {
        check_slices(num_slices)?;
        range_len(start, end, step)?;
        Ok(Slices::Range {
            start,
            end,
            step,
            num_slices,
        })
    }

    /// How many slices (the collection's partitions).
    pub fn len(&self) -> usize {
        match self {
            Slices::Listed(v) => v.len(),
            Slices::Range { num_slices, .. } => *num_slices as usize,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Slice `index`: borrowed when listed, computed (three numbers) for a range.
    pub fn get(&self, index: usize) -> Option<Cow<'_, Slice>> {
        match self {
            Slices::Listed(v) => v.get(index).map(Cow::Borrowed),
            &Slices::Range {
                start,
                end,
                step,
                num_slices,
            } => {
                if index >= num_slices as usize {
                    return None;
                }
                let len = range_len(start, end, step).ok()?;
                // Spark's positions: (i*len/n, (i+1)*len/n), in 128 bits.
                let (n, l, i) = (u128::from(num_slices), u128::from(len), index as u128);
                let pos = |k: u128| u64::try_from(k * l / n).unwrap_or(u64::MAX);
                Some(Cow::Owned(Slice::Range {
                    start: range_bound(start, end, step, pos(i)),
                    end: range_bound(start, end, step, pos(i + 1)),
                    step,
                }))
            }
        }
    }

    /// The slices in order.
    pub fn iter(&self) -> impl Iterator<Item = Cow<'_, Slice>> + '_ {
        (0..self.len()).map_while(move |i| self.get(i))
    }

    /// Drops the slices (a lineage that travels with a task carries none).
    pub fn clear(&mut self) {
        *self = Slices::default();
    }
}

/// Cuts explicit values into `num_slices` slices at the positions Spark uses.
pub fn slice_values(values: Vec<Value>, num_slices: u32) -> Result<Vec<Slice>, String> {
    check_slices(num_slices)?;
    let len = values.len() as u64;
    let mut it = values.into_iter();
    Ok(positions(len, num_slices)
        .map(|(s, e)| {
            let take = usize::try_from(e.saturating_sub(s)).unwrap_or(0);
            Slice::Values(it.by_ref().take(take).collect())
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(slices: &[Slice]) -> String {
        slices
            .iter()
            .map(|s| {
                let items: Vec<String> = s.iter().map(|v| v.to_string()).collect();
                format!("[{}]", items.join(","))
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn range(start: i64, end: i64, step: i64) -> Slice {
        Slice::Range { start, end, step }
    }

    #[test]
    fn one_to_ten_in_two() {
        // sc.parallelize(1 to 10, 2): 1..5 and 6..10 (seed 002).
        let s = slice_range(1, 11, 1, 2).unwrap();
        assert_eq!(s, vec![range(1, 6, 1), range(6, 11, 1)]);
        assert_eq!(show(&s), "[1,2,3,4,5] [6,7,8,9,10]");
        let vals: Vec<Value> = (1..=10).map(Value::I64).collect();
        assert_eq!(show(&slice_values(vals, 2).unwrap()), "[1,2,3,4,5] [6,7,8,9,10]");
    }

    #[test]
    fn ranges_match_spark() {
        // Spark 4.3's `glom().collect()` for the same parallelize calls (inclusive Scala
        // ranges written with an exclusive end one step further).
        assert_eq!(
            show(&slice_range(1, 10, 1, 3).unwrap()),
            "[1,2,3] [4,5,6] [7,8,9]"
        );
        assert_eq!(
            show(&slice_range(0, 21, 3, 4).unwrap()),
            "[0] [3,6] [9,12] [15,18]"
        );
        assert_eq!(show(&slice_range(10, 0, -2, 3).unwrap()), "[10] [8,6] [4,2]");
        assert_eq!(show(&slice_range(1, 4, 1, 5).unwrap()), "[] [1] [] [2] [3]");
        assert_eq!(show(&slice_range(1, 1, 1, 2).unwrap()), "[] []");
        assert_eq!(show(&slice_range(1, 11, 3, 4).unwrap()), "[1] [4] [7] [10]");
        assert_eq!(show(&slice_range(-5, 6, 5, 2).unwrap()), "[-5] [0,5]");
        // The wrong direction is empty, like Scala's `10 until 1`.
        assert_eq!(show(&slice_range(10, 1, 1, 2).unwrap()), "[] []");
    }

    #[test]
    fn positions_like_spark() {
        // Seven elements in three slices: (0,2) (2,4) (4,7).
        assert_eq!(positions(7, 3).collect::<Vec<_>>(), vec![(0, 2), (2, 4), (4, 7)]);
        let vals: Vec<Value> = ["a", "b", "c", "d", "e", "f", "g"]
            .iter()
            .map(|s| Value::str(*s))
            .collect();
        assert_eq!(show(&slice_values(vals, 3).unwrap()), "[a,b] [c,d] [e,f,g]");
        assert_eq!(show(&slice_values(vec![], 2).unwrap()), "[] []");
        assert_eq!(positions(0, 1).collect::<Vec<_>>(), vec![(0, 0)]);
    }

    #[test]
    fn zero_slices_and_zero_step_are_errors() {
        assert_eq!(
            slice_range(1, 10, 1, 0).unwrap_err(),
            POSITIVE_PARTITIONS_REQUIRED
        );
        assert_eq!(
            slice_values(vec![Value::I64(1)], 0).unwrap_err(),
            POSITIVE_PARTITIONS_REQUIRED
        );
        assert!(slice_range(1, 10, 0, 2).unwrap_err().contains("step cannot be 0"));
        assert!(range(1, 10, 0).is_empty());
        assert_eq!(range(1, 10, 0).iter().count(), 0);
    }

    /// Slices of a range as the elements themselves cut at Spark's positions (the oracle for
    /// the computed slices, independent of how a slice's bounds are worked out).
    fn materialised(start: i64, end: i64, step: i64, n: u32) -> Vec<Vec<i64>> {
        let all: Vec<i64> = RangeIter::new(start, end, step).collect();
        positions(all.len() as u64, n)
            .map(|(s, e)| all[s as usize..e as usize].to_vec())
            .collect()
    }

    /// The bounds of slice `i` as the listing used to compute them before slices were
    /// computed on demand.
    fn listed_bounds(start: i64, end: i64, step: i64, n: u32) -> Vec<Slice> {
        let len = range_len(start, end, step).unwrap();
        positions(len, n)
            .map(|(s, e)| {
                range(
                    range_bound(start, end, step, s),
                    range_bound(start, end, step, e),
                    step,
                )
            })
            .collect()
    }

    #[test]
    fn computed_range_slices_equal_the_listed_ones() {
        // (start, end exclusive, step, slices): empty, wrong direction, steps, negative
        // steps, Scala inclusive ranges (`1 to 10` = 1 until 11, `10 to 1 by -3` = 10 until
        // 0 by -3), counts that do not divide evenly, more slices than elements, one slice.
        let shapes: &[(i64, i64, i64, u32)] = &[
            (1, 1, 1, 2),
            (0, 0, -1, 3),
            (10, 1, 1, 2),
            (1, 10, -1, 4),
            (0, 10, 1, 1),
            (0, 10, 1, 10),
            (1, 11, 1, 2),
            (1, 11, 1, 3),
            (1, 11, 3, 4),
            (0, 21, 3, 4),
            (0, 100, 7, 6),
            (10, 0, -2, 3),
            (10, 0, -3, 4),
            (-5, 6, 5, 2),
            (-50, 50, 9, 7),
            (50, -50, -9, 7),
            (1, 4, 1, 5),
            (0, 3, 1, 64),
            (7, 8, 1, 3),
            (0, 1000, 1, 1000),
            (0, 999, 1, 1000),
            (0, 1001, 1, 1000),
            (i64::MAX - 10, i64::MAX, 3, 4),
            (i64::MIN, i64::MIN + 10, 1, 3),
        ];
        for &(start, end, step, n) in shapes {
            let slices = Slices::range(start, end, step, n).unwrap();
            assert_eq!(slices.len(), n as usize);
            let computed: Vec<Slice> = slices.iter().map(Cow::into_owned).collect();
            assert_eq!(computed.len(), n as usize);
            assert_eq!(
                computed,
                listed_bounds(start, end, step, n),
                "{start} until {end} by {step} in {n}"
            );
            let elements: Vec<Vec<i64>> = computed
                .iter()
                .map(|s| s.iter().map(|v| v.as_i64().unwrap()).collect())
                .collect();
            assert_eq!(
                elements,
                materialised(start, end, step, n),
                "{start} until {end} by {step} in {n}"
            );
            assert!(slices.get(n as usize).is_none());
            assert_eq!(slice_range(start, end, step, n).unwrap(), computed);
        }
        // Ranges too long to materialise: the bounds still match the listing.
        for &(start, end, step, n) in &[
            (i64::MIN, i64::MAX, 1, 4),
            (i64::MIN, i64::MAX, 1, 1_000_003),
            (0, i64::MAX, 2, 3),
            (i64::MAX, i64::MIN, -3, 2),
            (i64::MAX, i64::MIN, -1, 7),
        ] {
            let computed: Vec<Slice> = Slices::range(start, end, step, n)
                .unwrap()
                .iter()
                .map(Cow::into_owned)
                .collect();
            assert_eq!(computed, listed_bounds(start, end, step, n));
        }
        // The errors are the listing's.
        assert_eq!(
            Slices::range(1, 10, 1, 0).unwrap_err(),
            POSITIVE_PARTITIONS_REQUIRED
        );
        assert!(Slices::range(1, 10, 0, 2)
            .unwrap_err()
            .contains("step cannot be 0"));
    }

    #[test]
    fn a_range_of_a_million_slices_holds_no_slice() {
        let slices = Slices::range(0, 1_000_000, 1, 1_000_000).unwrap();
        assert_eq!(slices.len(), 1_000_000);
        assert_eq!(
            slices.get(999_999).as_deref(),
            Some(&range(999_999, 1_000_000, 1))
        );
        // Three numbers and the count travel, not a million slices.
        assert!(crate::rdd::encode(&slices).unwrap().len() < 40);
        // Listed slices are borrowed; clearing leaves none.
        let mut listed = Slices::from(vec![Slice::Values(vec![Value::I64(1)])]);
        assert!(matches!(listed.get(0), Some(Cow::Borrowed(_))));
        listed.clear();
        assert!(listed.is_empty() && listed.get(0).is_none());
    }

    #[test]
    fn extreme_ranges_do_not_overflow() {
        let s = slice_range(i64::MIN, i64::MAX, 1, 4).unwrap();
        let total: u64 = s.iter().map(|x| x.len()).sum();
        assert_eq!(total, u64::MAX);
        assert_eq!(
            s.first().and_then(|x| x.iter().next()),
            Some(Value::I64(i64::MIN))
        );
        assert_eq!(
            s.last().and_then(|x| x.iter().last()),
            Some(Value::I64(i64::MAX - 1))
        );
        let s = slice_range(0, i64::MAX, 2, 3).unwrap();
        assert_eq!(s.iter().map(|x| x.len()).sum::<u64>(), 1u64 << 62);
        assert_eq!(
            s.last().and_then(|x| x.iter().last()),
            Some(Value::I64(i64::MAX - 1))
        );
        let s = slice_range(i64::MAX, i64::MIN, -3, 2).unwrap();
        assert_eq!(
            s.first().and_then(|x| x.iter().next()),
            Some(Value::I64(i64::MAX))
        );
        // A big lazy range is cheap to slice and to count.
        let s = slice_range(1, 10_000_000, 1, 100).unwrap();
        assert_eq!(s.len(), 100);
        assert_eq!(s.iter().map(|x| x.len()).sum::<u64>(), 9_999_999);
    }
}
