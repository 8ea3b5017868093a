//! This machine's host name, as Spark's `Utils.localHostName` gives it: what a process
//! started without a `--hostname` calls itself.
//!
//! Layer: runtime (under everything that names a host: the YARN nodes, the Spark side, the
//! command line).

/// This machine's host name (`HOSTNAME`, else /etc/hostname, else `localhost`).
pub fn local_hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.trim().is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|s| s.trim().to_string())
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}
