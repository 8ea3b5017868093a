//! The process's CPU time, for benches that report CPU a unit of work (`records`,
//! `plumbing`); included by path, apart from `common/mod.rs` (which starts clusters).

use std::time::Duration;

/// The process's CPU time so far (user + system, every thread's, those ended included).
pub fn cpu_time() -> Duration {
    // SAFETY: getrusage writes the struct it is given; RUSAGE_SELF is a valid `who`.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}
