//! The log directory's fence: `sparkyard logs` reads nothing outside the directory it was
//! given. A symbolic link under it that leads out (to another user's files, to `/etc`) is
//! skipped with one line naming it, once; a link that stays inside is followed.
//!
//! Layer: logs (the reader's, used by the grouped, `--json` and `--supervision` readings).

use std::collections::HashSet;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What of a log directory may be read.
pub(crate) struct Fence {
    /// The directory, its links resolved (`None` if it cannot be resolved: then nothing
    /// under it is a link out of it that could be told apart, and every path is allowed).
    root: Option<PathBuf>,
    /// Links already reported.
    reported: HashSet<PathBuf>,
}

impl Fence {
    pub(crate) fn new(dir: &Path) -> Fence {
        Fence {
            root: fs::canonicalize(dir).ok(),
            reported: HashSet::new(),
        }
    }

    /// Whether `path` (an entry under the directory, whose parent was allowed) may be read:
    /// not a symbolic link that resolves outside the directory. A link that does is reported
    /// on `err` the first time.
    pub(crate) fn allows(&mut self, path: &Path, err: &mut dyn Write) -> bool {
        let Some(root) = &self.root else { return true };
        let is_link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            return true;
        }
        let inside = fs::canonicalize(path).is_ok_and(|target| target.starts_with(root));
        if inside {
            return true;
        }
        if self.reported.insert(path.to_path_buf()) {
            let target = fs::read_link(path)
                .map(|t| t.display().to_string())
                .unwrap_or_else(|_| "?".into());
            let _ = writeln!(
                err,
                "sparkyard logs: {}: skipped: a symbolic link to {target}, outside the log directory {}",
                path.display(),
                root.display()
            );
        }
        false
    }
}
