//! Printing: the grouped human output of `sparkyard logs`, one block per node log and per
//! container file, each framed as `yarn logs -applicationId` frames aggregated container
//! logs.
//!
//! Layer: logs (the reader), the bottom layer.

use std::collections::HashMap;
use std::io::{self, Write};

use serde_json::Value;

use super::*;
use crate::logs::format::{write_human, HumanFormat};

pub(super) const RULE: &str = "=============================================================================";

/// Writes the grouped human output. A block stays open while consecutive
/// lines come from the same file, so that `--follow` keeps extending it; it
/// is closed with `End of LogType` before another file's lines or at the
/// end.
pub(super) struct HumanPrinter {
    pub(super) format: HumanFormat,
    pub(super) group: Option<Origin>,
    pub(super) block: Option<(Origin, Kind, String)>,
    pub(super) line: String,
}

impl HumanPrinter {
    pub(super) fn new() -> HumanPrinter {
        HumanPrinter {
            format: HumanFormat::default(),
            group: None,
            block: None,
            line: String::with_capacity(256),
        }
    }

    pub(super) fn open(
        &mut self,
        out: &mut dyn Write,
        src: &Source,
        nodes: &HashMap<Origin, String>,
    ) -> io::Result<()> {
        if let Some((origin, kind, _)) = &self.block {
            if *origin == src.origin && *kind == src.kind {
                return Ok(());
            }
        }
        self.close(out)?;
        if self.group.as_ref() != Some(&src.origin) {
            match &src.origin {
                Origin::Node { node } => writeln!(out, "Node: {node}")?,
                Origin::Container { container, .. } => {
                    let node = nodes.get(&src.origin).map_or("unknown", String::as_str);
                    writeln!(out, "Container: {container} on {node}")?;
                }
            }
            writeln!(out, "{RULE}")?;
            self.group = Some(src.origin.clone());
        }
        writeln!(out, "LogType:{}", src.log_type)?;
        writeln!(out, "Log Contents:")?;
        self.block = Some((src.origin.clone(), src.kind, src.log_type.clone()));
        Ok(())
    }

    pub(super) fn close(&mut self, out: &mut dyn Write) -> io::Result<()> {
        if let Some((_, _, log_type)) = self.block.take() {
            writeln!(out, "End of LogType:{log_type}")?;
            writeln!(out)?;
        }
        Ok(())
    }

    pub(super) fn record(
        &mut self,
        out: &mut dyn Write,
        src: &Source,
        nodes: &HashMap<Origin, String>,
        record: &Value,
    ) -> io::Result<()> {
        self.open(out, src, nodes)?;
        self.line.clear();
        write_human(&mut self.line, record, &self.format);
        self.line.push('\n');
        out.write_all(self.line.as_bytes())
    }

    pub(super) fn text(
        &mut self,
        out: &mut dyn Write,
        src: &Source,
        nodes: &HashMap<Origin, String>,
        text: &[u8],
    ) -> io::Result<()> {
        self.open(out, src, nodes)?;
        out.write_all(text)?;
        out.write_all(b"\n")
    }
}
