//! Which reduce partition a key goes to, as Spark's `HashPartitioner` decides it:
//! `Utils.nonNegativeMod(key.hashCode, numPartitions)`, `null` keys to 0 — and Spark's
//! `Partitioner.defaultPartitioner` rule for choosing one.
//!
//! Layer: rdd (the Spark side's data model, above yarn; no actors).

use std::fmt;

use super::lineage::Partitioner;
use super::value::Value;

impl Partitioner {
    /// The partition of `key`: `Null` goes to 0, anything else to the non-negative remainder
    /// of its [`Value::java_hash_code`]. A partitioner without partitions (which Spark would
    /// fail on with an ArithmeticException) answers 0; no task partitions a key by one, since
    /// a job over zero reduce partitions runs no task at all.
    pub fn get_partition(&self, key: &Value) -> u32 {
        match (self, key) {
            (_, Value::Null) => 0,
            (Partitioner::Hash { partitions }, key) => non_negative_mod(key.java_hash_code(), *partitions),
        }
    }
}

impl fmt::Display for Partitioner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Partitioner::Hash { partitions } => write!(f, "HashPartitioner({partitions})"),
        }
    }
}

/// Spark's `Utils.nonNegativeMod`: `x % m`, plus `m` when that is negative; 0 when `m` is 0.
pub fn non_negative_mod(x: i32, m: u32) -> u32 {
    if m == 0 {
        return 0;
    }
    let r = i64::from(x).rem_euclid(i64::from(m));
    u32::try_from(r).unwrap_or(0)
}

/// Spark's `Partitioner.defaultPartitioner(rdd, others*)` for the number of partitions of a
/// new shuffle: `upstream` holds, for the RDD and the others, `(partitions, existing
/// partitioner)`. An existing partitioner with the most partitions is kept when it is
/// eligible (within one order of magnitude of the largest upstream partition count) or at
/// least as large as the default; otherwise a `HashPartitioner` of `spark.default.parallelism`
/// when that is set (`configured_parallelism`), else of the largest upstream partition count.
pub fn default_partitioner(
    upstream: &[(u32, Option<Partitioner>)],
    configured_parallelism: Option<u32>,
) -> Partitioner {
    let max_upstream = upstream.iter().map(|(n, _)| *n).max().unwrap_or(0);
    let has_max_partitioner = upstream
        .iter()
        .filter_map(|(n, p)| p.as_ref().filter(|p| p.num_partitions() > 0).map(|p| (*n, p)))
        .fold(None::<(u32, &Partitioner)>, |best, (n, p)| match best {
            Some((bn, _)) if bn >= n => best,
            _ => Some((n, p)),
        });
    let default_num = configured_parallelism.unwrap_or(max_upstream);
    if let Some((n, p)) = has_max_partitioner {
        // isEligiblePartitioner: log10(maxPartitions) - log10(partitioner's) < 1.
        let eligible = (f64::from(max_upstream)).log10() - (f64::from(n)).log10() < 1.0;
        if eligible || default_num <= p.num_partitions() {
            return p.clone();
        }
    }
    Partitioner::Hash {
        partitions: default_num,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(n: u32) -> Partitioner {
        Partitioner::Hash { partitions: n }
    }

    #[test]
    fn matches_spark_for_strings_longs_and_tuples() {
        // HashPartitioner(3).getPartition for the same keys in Spark 4.3 (the integers there
        // were Longs; the ones in Int range below are placed as Ints, see the next test).
        let p = hash(3);
        let keys: Vec<Value> = vec![
            "hello".into(),
            "".into(),
            "a".into(),
            "b".into(),
            "spark".into(),
            1i64.into(),
            10i64.into(),
            Value::pair("a", 1),
            Value::Null,
            "Aa".into(),
            "BB".into(),
            Value::I64(1 << 40),
        ];
        let got: Vec<u32> = keys.iter().map(|k| p.get_partition(k)).collect();
        assert_eq!(got, vec![1, 0, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1]);
    }

    #[test]
    fn int_keys_are_placed_by_their_int_hash() {
        // Spark 4.3: sc.parallelize(-5 to 5).map(x => (x, 1)).reduceByKey(_ + _, 3).glom():
        // [0,-3,3] [-2,4,-5,1] [-1,-4,5,2].
        let p = hash(3);
        let place = |k: i64| p.get_partition(&Value::I64(k));
        for k in [0, -3, 3] {
            assert_eq!(place(k), 0, "{k}");
        }
        for k in [-2, 4, -5, 1] {
            assert_eq!(place(k), 1, "{k}");
        }
        for k in [-1, -4, 5, 2] {
            assert_eq!(place(k), 2, "{k}");
        }
    }

    #[test]
    fn negative_hashes_wrap_to_non_negative_partitions() {
        let p = hash(7);
        // "negative?".hashCode == -1510311254 and "polygenelubricants".hashCode ==
        // Int.MinValue; Spark 4.3 puts them in 3 and 5.
        assert_eq!(p.get_partition(&Value::str("negative?")), 3);
        assert_eq!(p.get_partition(&Value::str("polygenelubricants")), 5);
        let words = ["the", "quick", "brown", "fox", "zzzz"];
        let got: Vec<u32> = words.iter().map(|w| p.get_partition(&Value::str(*w))).collect();
        assert_eq!(got, vec![1, 4, 1, 6, 1]);
        assert_eq!(non_negative_mod(-1, 5), 4);
        assert_eq!(non_negative_mod(i32::MIN, 1), 0);
        assert_eq!(non_negative_mod(i32::MIN, u32::MAX), 2147483647);
        assert_eq!(non_negative_mod(12, 0), 0);
        assert_eq!(hash(0).get_partition(&Value::str("x")), 0);
        assert_eq!(hash(4).to_string(), "HashPartitioner(4)");
    }

    #[test]
    fn default_partitioner_rules() {
        // No partitioner upstream: the largest partition count, or spark.default.parallelism.
        assert_eq!(default_partitioner(&[(2, None)], None), hash(2));
        assert_eq!(default_partitioner(&[(2, None), (5, None)], None), hash(5));
        assert_eq!(default_partitioner(&[(2, None)], Some(8)), hash(8));
        // An existing partitioner is kept when eligible, even over a configured default.
        assert_eq!(default_partitioner(&[(4, Some(hash(4)))], Some(8)), hash(4));
        // Not eligible (100 vs 5 partitions) and smaller than the default: a new one.
        assert_eq!(
            default_partitioner(&[(5, Some(hash(5))), (100, None)], None),
            hash(100)
        );
        // Not eligible but at least the configured default: kept.
        assert_eq!(
            default_partitioner(&[(5, Some(hash(5))), (100, None)], Some(3)),
            hash(5)
        );
        assert_eq!(default_partitioner(&[], None), hash(0));
    }
}
