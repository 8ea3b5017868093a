//! Merging: the `--json` output, a k-way merge of the records of every file in timestamp
//! order (one pending record per file in memory; ties go to the file listed first, and each
//! file keeps its own order).
//!
//! Layer: logs (the reader), the bottom layer.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io::Write;
use std::time::SystemTime;

use serde_json::Value;

use super::*;

/// A matching record waiting to be printed by the `--json` merge.
pub(super) struct Pending {
    pub(super) time: SystemTime,
    pub(super) raw: Vec<u8>,
}

/// Reads the next record of `src` that passes `filter`, reporting bad lines,
/// and returns it with its ordering time; its raw text stays in `src.buf`
/// until the next read. Also notes the node of a container's first record in
/// `nodes`.
pub(super) fn next_matching(
    src: &mut Source,
    filter: &Filter,
    nodes: &mut HashMap<Origin, String>,
    hold_partial: bool,
    err: &mut dyn Write,
) -> Option<(Value, SystemTime)> {
    loop {
        let line = src.next_line(hold_partial, err)?;
        match parse_line(line_text(&src.buf), line.complete) {
            Parsed::Blank => {}
            Parsed::Bad(reason) => warn_skipped(err, &src.path, line.number, &reason),
            Parsed::Record(record, raw) => {
                if let Origin::Container { container, .. } = &src.origin {
                    if !nodes.contains_key(&src.origin) {
                        // The ResourceManager's records of the allocation come first and carry
                        // its host: the container's host is that of its NodeManager and actors.
                        let node = container_host(&src.path, container).unwrap_or_else(|| {
                            record
                                .get("node")
                                .and_then(Value::as_str)
                                .unwrap_or("unknown")
                                .to_owned()
                        });
                        nodes.insert(src.origin.clone(), node);
                    }
                }
                let time = record_time(&record, &mut src.last_time);
                if filter.matches(&record, raw) {
                    return Some((record, time));
                }
            }
        }
    }
}

impl Session {
    pub(super) fn next_pending(
        &mut self,
        index: usize,
        hold_partial: bool,
        err: &mut dyn Write,
    ) -> Option<Pending> {
        let Session {
            filter,
            container_filter,
            sources,
            nodes,
            ..
        } = self;
        let src = sources.get_mut(index)?;
        if src.kind != Kind::Records {
            return None;
        }
        let filter = match src.origin {
            Origin::Node { .. } => &*filter,
            Origin::Container { .. } => &*container_filter,
        };
        let (_, time) = next_matching(src, filter, nodes, hold_partial, err)?;
        Some(Pending {
            time,
            raw: line_text(&src.buf).to_vec(),
        })
    }

    /// `--json`: a k-way merge of what the files hold from where they were
    /// left, keeping one pending record per file in memory. Ties go to the
    /// file listed first, and each file keeps its own order. While following,
    /// each round merges just the newly appended records.
    pub(super) fn json_merge(
        &mut self,
        out: &mut dyn Write,
        err: &mut dyn Write,
        hold_partial: bool,
    ) -> Result<(), LogsError> {
        let mut heads: Vec<Option<Pending>> = Vec::with_capacity(self.sources.len());
        let mut queue = BinaryHeap::new();
        for index in 0..self.sources.len() {
            let head = self.next_pending(index, hold_partial, err);
            if let Some(pending) = &head {
                queue.push(Reverse((pending.time, index)));
            }
            heads.push(head);
        }
        while let Some(Reverse((_, index))) = queue.pop() {
            if let Some(pending) = heads.get_mut(index).and_then(Option::take) {
                out.write_all(&pending.raw)?;
                out.write_all(b"\n")?;
                self.printed_any = true;
            }
            if let Some(next) = self.next_pending(index, hold_partial, err) {
                queue.push(Reverse((next.time, index)));
                if let Some(slot) = heads.get_mut(index) {
                    *slot = Some(next);
                }
            }
        }
        Ok(())
    }
}

/// How many lines of a container's file [`container_host`] reads at most.
const HOST_SCAN_LINES: usize = 4096;

/// The host a container ran on: the `node` of the first record in its file written by its
/// NodeManager or by an actor inside it (not the ResourceManager's nor the AM's records
/// about it, which carry their own hosts).
pub(super) fn container_host(path: &std::path::Path, container: &str) -> Option<String> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    let reader = std::io::BufReader::new(file);
    for line in reader.split(b'\n').take(HOST_SCAN_LINES) {
        let line = line.ok()?;
        let Ok(record) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        let placed = record.get("actor_type").and_then(Value::as_str) == Some("NodeManager")
            || record
                .get("actor")
                .and_then(Value::as_str)
                .is_some_and(|a| a.contains(container));
        if placed {
            if let Some(node) = record.get("node").and_then(Value::as_str) {
                return Some(node.to_owned());
            }
        }
    }
    None
}
