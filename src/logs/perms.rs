//! Files only their owners read: the modes sparkyard gives the directories and files it
//! writes, set explicitly rather than left to the umask.
//!
//! - Logs, as YARN's LinuxContainerExecutor lays out container logs: directories 0750
//!   ([`LOG_DIR_MODE`]), files 0640 ([`LOG_FILE_MODE`]); the structured actor logs under the
//!   log directory alike.
//! - Container working directories (`<local-dir>/usercache/<user>/appcache/<app>/<container>`):
//!   0750 at every level, as the LinuxContainerExecutor's `create_container_directories` and
//!   `initialize_app` make them ([`WORK_DIR_MODE`]); the launch file, which carries the
//!   application's secret, 0600 as YARN's container credentials file ([`PRIVATE_FILE_MODE`]).
//! - Event logs as Spark's `EventLogFileWriter` writes them: files 0660
//!   ([`EVENT_LOG_FILE_MODE`]), its rolling directories 0770 ([`EVENT_LOG_DIR_MODE`]).
//!
//! A directory or file is created with its mode (so it is never, even for a moment, wider
//! than it should be) and then given it with `set_permissions`, since the umask may have
//! narrowed the mode at creation. Directories that already existed are left as they are:
//! they belong to whoever made them (a log directory named on the command line, `/tmp`).
//!
//! Layer: logs (the bottom: the log sink, the container executor, the process containers
//! and the event log writer above it all use it).

use std::fs::{self, File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Log directories (`<log dir>`, `apps/<app>/<container>`, `nodes`): rwxr-x---.
pub const LOG_DIR_MODE: u32 = 0o750;
/// Log files (`stdout`, `stderr`, `sparkyard.jsonl`, `nodes/<node>.jsonl`): rw-r-----.
pub const LOG_FILE_MODE: u32 = 0o640;
/// Container working directories and their parents under the local directory: rwxr-x---.
pub const WORK_DIR_MODE: u32 = 0o750;
/// Files that carry a secret (the container launch file): rw-------.
pub const PRIVATE_FILE_MODE: u32 = 0o600;
/// Spark's `EventLogFileWriter.LOG_FILE_PERMISSIONS`: rw-rw----.
pub const EVENT_LOG_FILE_MODE: u32 = 0o660;
/// Spark's `EventLogFileWriter.LOG_FOLDER_PERMISSIONS` (rolling event logs): rwxrwx---.
pub const EVENT_LOG_DIR_MODE: u32 = 0o770;

/// Creates `path` and any missing parents, each directory it creates with `mode` (set
/// explicitly after creation, whatever the umask). Directories that exist are untouched.
pub fn create_dir_all(path: &Path, mode: u32) -> io::Result<()> {
    if path.as_os_str().is_empty() || path.is_dir() {
        return Ok(());
    }
    if let Some(parent) = path.parent() {
        create_dir_all(parent, mode)?;
    }
    match fs::DirBuilder::new().mode(mode).create(path) {
        Ok(()) => fs::set_permissions(path, Permissions::from_mode(mode)),
        // Made meanwhile by someone else (another thread of this process): theirs.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && path.is_dir() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Gives the existing directory or file `path` exactly `mode`.
pub fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    fs::set_permissions(path, Permissions::from_mode(mode))
}

/// Opens `path` for appending, creating it with `mode` if missing; a file this creates
/// gets exactly `mode` (an existing one keeps its own).
pub fn open_append(path: &Path, mode: u32) -> io::Result<File> {
    match OpenOptions::new()
        .append(true)
        .create_new(true)
        .mode(mode)
        .open(path)
    {
        Ok(file) => {
            file.set_permissions(Permissions::from_mode(mode))?;
            Ok(file)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => OpenOptions::new().append(true).open(path),
        Err(e) => Err(e),
    }
}

/// Creates (or truncates) `path` for writing with exactly `mode`.
pub fn create(path: &Path, mode: u32) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(path)?;
    file.set_permissions(Permissions::from_mode(mode))?;
    Ok(file)
}

/// Writes `contents` to a new (or truncated) file `path` with exactly `mode`.
pub fn write(path: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
    use std::io::Write as _;
    let mut file = create(path, mode)?;
    file.write_all(contents)
}

/// The permission bits of `path` (tests and checks).
pub fn mode_of(path: &Path) -> io::Result<u32> {
    Ok(fs::metadata(path)?.permissions().mode() & 0o7777)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_directories_and_files_get_their_modes_whatever_the_umask() {
        let tmp = tempfile::tempdir().unwrap();
        let before = mode_of(tmp.path()).unwrap();
        // A permissive and a restrictive umask: modes are set, not inherited.
        for (umask, name) in [(0o000, "open"), (0o077, "closed")] {
            let old = rustix::process::umask(rustix::fs::Mode::from_raw_mode(umask));
            let base = tmp.path().join(name);
            let dir = base.join("apps").join("app").join("c");
            create_dir_all(&dir, LOG_DIR_MODE).unwrap();
            let file = open_append(&dir.join("stdout"), LOG_FILE_MODE).unwrap();
            drop(file);
            write(&dir.join("secret"), b"x", PRIVATE_FILE_MODE).unwrap();
            rustix::process::umask(old);
            for d in [&base, &base.join("apps"), &base.join("apps/app"), &dir] {
                assert_eq!(
                    mode_of(d).unwrap(),
                    0o750,
                    "{} under umask {umask:o}",
                    d.display()
                );
            }
            assert_eq!(mode_of(&dir.join("stdout")).unwrap(), 0o640);
            assert_eq!(mode_of(&dir.join("secret")).unwrap(), 0o600);
        }
        // The existing parent (the temporary directory) was left alone.
        assert_eq!(mode_of(tmp.path()).unwrap(), before);
    }

    #[test]
    fn an_existing_file_is_appended_to_and_keeps_its_mode() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f");
        std::fs::write(&path, "a").unwrap();
        set_mode(&path, 0o600).unwrap();
        use std::io::Write as _;
        open_append(&path, LOG_FILE_MODE)
            .unwrap()
            .write_all(b"b")
            .unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "ab");
        assert_eq!(mode_of(&path).unwrap(), 0o600);
    }
}
