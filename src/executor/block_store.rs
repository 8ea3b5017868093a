//! The executor's block store for shuffle output (the part of Spark's BlockManager that
//! sparkyard needs): each finished map task's buckets, one per reduce partition, kept by
//! (shuffle id, map id) until the executor ends. Reduce tasks on this executor read it
//! directly; reduce tasks elsewhere fetch through the backend (FetchShuffleBlocks). The
//! store lives and dies with its executor, so a lost executor loses its map outputs, as
//! it does in Spark without an external shuffle service.
//!
//! Layer: executor (the Spark side, above scheduler).

use std::sync::Arc;

use dashmap::DashMap;

/// One map task's output: an encoded bucket per reduce partition.
pub type MapOutputBlocks = Arc<Vec<Vec<u8>>>;

/// Shuffle blocks by (shuffle id, map id); cheap to clone and share with task threads.
#[derive(Clone, Debug, Default)]
pub struct BlockStore {
    blocks: Arc<DashMap<(u32, u64), MapOutputBlocks>>,
}

impl BlockStore {
    pub fn new() -> BlockStore {
        BlockStore::default()
    }

    /// Keeps a map task's buckets.
    pub fn put_map_output(&self, shuffle_id: u32, map_id: u64, buckets: Vec<Vec<u8>>) {
        self.blocks.insert((shuffle_id, map_id), Arc::new(buckets));
    }

    /// Bucket `reduce_id` of a map output, if this executor has it.
    pub fn bucket(&self, shuffle_id: u32, map_id: u64, reduce_id: u32) -> Option<Vec<u8>> {
        let out = self.blocks.get(&(shuffle_id, map_id))?;
        out.get(reduce_id as usize).cloned()
    }

    /// Bucket `reduce_id` of each listed map output, in order; the error names the first
    /// output this executor does not have.
    pub fn buckets(&self, shuffle_id: u32, map_ids: &[u64], reduce_id: u32) -> Result<Vec<Vec<u8>>, String> {
        map_ids
            .iter()
            .map(|&m| {
                self.bucket(shuffle_id, m, reduce_id).ok_or_else(|| {
                    format!("shuffle_{shuffle_id}_{m}_{reduce_id} is not in this executor's block store")
                })
            })
            .collect()
    }

    /// Forgets every output of a shuffle.
    pub fn remove_shuffle(&self, shuffle_id: u32) {
        self.blocks.retain(|(s, _), _| *s != shuffle_id);
    }

    /// How many map outputs are kept.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_and_serves_buckets() {
        let s = BlockStore::new();
        s.put_map_output(0, 7, vec![b"a".to_vec(), b"b".to_vec()]);
        s.put_map_output(0, 8, vec![b"c".to_vec(), b"d".to_vec()]);
        assert_eq!(
            s.buckets(0, &[7, 8], 1).unwrap(),
            vec![b"b".to_vec(), b"d".to_vec()]
        );
        let err = s.buckets(0, &[7, 9], 0).unwrap_err();
        assert!(err.contains("shuffle_0_9_0"), "{err}");
        assert_eq!(s.bucket(0, 7, 5), None);
        s.remove_shuffle(0);
        assert!(s.is_empty());
    }
}
