//! sparkyard: Spark-on-YARN's control plane rebuilt in Rust as a supervised actor system.
//!
//! Modules, by layer, bottom first (the lower five import only from the layers under them,
//! which `tests/layers.rs` checks; the Spark side's modules still import each other):
//! [`logs`] (the log context, structured actor logs and their reader, container output, the
//! modes of the files sparkyard writes), [`runtime`] (supervision trees on actix, paths,
//! registry, endpoint refs, death watch, fault injection, the clock), [`conf`] (SparkConf and the
//! configuration files), [`rpc`] (the TCP transport, generic over its protocol), [`yarn`]
//! (ResourceManager, NodeManagers and their launcher registry, records, protocols, the
//! all-in-one node); then the Spark side: [`deploy`] (SparkSubmit, the Client, the
//! ApplicationMaster and its allocator), [`scheduler`] (the driver's endpoints and
//! messages), [`executor`] (the executor backend), [`context`] (what applications see:
//! AppEnv, SparkContext), [`rdd`]; and on top [`apps`] (the built-in applications),
//! [`chaos`] (what fault injection aims at, plans from the configuration), [`cli`] (the
//! command line, and the binary's roles as a NodeManager launches them).

pub mod apps;
pub mod chaos;
pub mod cli;
pub mod conf;
pub mod context;
pub mod deploy;
pub mod executor;
pub mod logs;
pub mod rdd;
pub mod rpc;
pub mod runtime;
pub mod scheduler;
pub mod yarn;

/// Declares the process's allocator: `sparkyard::global_allocator!();` at the top of the
/// binary and of each benchmark (a library cannot impose one: a test binary may bring its
/// own, as `tests/fuzz_wire.rs` does to watch allocations).
///
/// glibc's malloc keeps per-thread arenas that contend when one thread frees what another
/// allocated, which is the task path's shape (the driver's thread builds a LaunchTask, an
/// executor's task thread drops it, and back for StatusUpdate): under load its futex calls
/// doubled a tiny task's cost. mimalloc frees cross-thread blocks into the owning page's
/// lock-free list. jemalloc (`--features jemalloc`) is kept to compare the two in `benches/`.
///
/// On Linux the macro also runs [`configure_allocator`] before `main` (an `.init_array`
/// entry of priority 100, ahead of mimalloc's own start-up at 101), so every process of the
/// binary runs with the options it sets, with nothing for the user to set.
#[macro_export]
macro_rules! global_allocator {
    () => {
        #[global_allocator]
        static GLOBAL: $crate::Allocator = $crate::Allocator;

        #[cfg(target_os = "linux")]
        #[used]
        #[link_section = ".init_array.00100"]
        static CONFIGURE_ALLOCATOR: extern "C" fn() = $crate::configure_allocator;
    };
}

/// The mimalloc release whose option numbers [`configure_allocator`] uses (3.3.x, the one
/// libmimalloc-sys 0.1.49 builds): `mi_option_t` is a C enum whose numbers change between
/// releases, so another release is left with its defaults (a test names the change).
#[cfg(not(feature = "jemalloc"))]
const MIMALLOC_OPTIONS_RELEASE: i32 = 303;
/// `mi_option_purge_delay` in mimalloc 3.3.
#[cfg(not(feature = "jemalloc"))]
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;
/// `mi_option_allow_thp` in mimalloc 3.3.
#[cfg(not(feature = "jemalloc"))]
const MI_OPTION_ALLOW_THP: std::ffi::c_int = 43;

#[cfg(not(feature = "jemalloc"))]
extern "C" {
    fn mi_version() -> std::ffi::c_int;
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
    fn getenv(name: *const std::ffi::c_char) -> *mut std::ffi::c_char;
}

/// Sets mimalloc's options for this process (measured with `cargo bench --bench memory`, a
/// job of 1,000,000 tiny tasks; README "Memory per pending task"):
/// - `purge_delay` 0 (default 10 ms): pages freed are returned to the system at once rather
///   than after a delay during which the driver's thread goes on allocating fresh ones;
/// - `allow_thp` 0 (default 1): mimalloc does not ask for transparent huge pages for its
///   arenas (`MADV_HUGEPAGE`), which made the resident set grow by 2 MiB at a time. With it
///   mimalloc's start-up disables them for the whole process (`PR_SET_THP_DISABLE`) unless
///   they already are; on Linux 6.18 and later they are disabled here first with
///   `PR_THP_DISABLE_EXCEPT_ADVISED`, so that memory mapped apart and advised keeps them
///   (word count's counting tables, `rdd::table`) while the allocator's memory, never
///   advised, goes without as before. An older kernel refuses the flag and mimalloc disables
///   them all.
///
/// An option the user sets (`MIMALLOC_PURGE_DELAY`, `MIMALLOC_ALLOW_THP`) is kept.
/// Does nothing with jemalloc, or with a mimalloc release other than the one checked.
pub extern "C" fn configure_allocator() {
    #[cfg(not(feature = "jemalloc"))]
    {
        // SAFETY: plain C calls into the linked mimalloc with in-range option numbers; they
        // only store a value (no allocation), and run before any other thread exists.
        unsafe {
            if mi_version() / 100 != MIMALLOC_OPTIONS_RELEASE {
                return;
            }
            // getenv, not std::env: nothing may allocate before the options are set (the
            // first allocation starts mimalloc, which reads its options then).
            for (option, env, value) in [
                (MI_OPTION_PURGE_DELAY, c"MIMALLOC_PURGE_DELAY", 0),
                (MI_OPTION_ALLOW_THP, c"MIMALLOC_ALLOW_THP", 0),
            ] {
                if getenv(env.as_ptr()).is_null() {
                    mi_option_set(option, value);
                }
            }
            #[cfg(target_os = "linux")]
            if mi_option_get(MI_OPTION_ALLOW_THP) == 0 {
                // A syscall only (no allocation). Refused (EINVAL) before Linux 6.18.
                libc::prctl(
                    libc::PR_SET_THP_DISABLE,
                    1 as libc::c_ulong,
                    PR_THP_DISABLE_EXCEPT_ADVISED,
                    0 as libc::c_ulong,
                    0 as libc::c_ulong,
                );
            }
        }
    }
}

/// `prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED)` (Linux 6.18,
/// `include/uapi/linux/prctl.h`): huge pages stay disabled except in ranges advised
/// `MADV_HUGEPAGE`.
#[cfg(all(target_os = "linux", not(feature = "jemalloc")))]
const PR_THP_DISABLE_EXCEPT_ADVISED: libc::c_ulong = 1 << 1;

/// mimalloc's `purge_delay` and `allow_thp` as the process runs with them (`None` with
/// jemalloc or another mimalloc release): for tests and the benches' reports.
pub fn allocator_options() -> Option<(std::ffi::c_long, std::ffi::c_long)> {
    #[cfg(not(feature = "jemalloc"))]
    {
        // SAFETY: reading options of the linked mimalloc, numbers checked by release.
        unsafe {
            if mi_version() / 100 != MIMALLOC_OPTIONS_RELEASE {
                return None;
            }
            Some((
                mi_option_get(MI_OPTION_PURGE_DELAY),
                mi_option_get(MI_OPTION_ALLOW_THP),
            ))
        }
    }
    #[cfg(feature = "jemalloc")]
    None
}

/// The allocator [`global_allocator!`] installs.
#[cfg(not(feature = "jemalloc"))]
pub use mimalloc::MiMalloc as Allocator;
/// The allocator [`global_allocator!`] installs (`--features jemalloc`).
#[cfg(feature = "jemalloc")]
pub use tikv_jemallocator::Jemalloc as Allocator;

#[cfg(all(test, not(feature = "jemalloc")))]
mod allocator_tests {
    use super::*;

    #[test]
    fn the_linked_mimalloc_is_the_release_whose_option_numbers_are_used() {
        // SAFETY: a plain C call.
        let version = unsafe { mi_version() };
        assert_eq!(
            version / 100,
            MIMALLOC_OPTIONS_RELEASE,
            "mimalloc {version}: check MI_OPTION_PURGE_DELAY and MI_OPTION_ALLOW_THP against its \
             mimalloc.h (mi_option_t) and update MIMALLOC_OPTIONS_RELEASE"
        );
    }

    #[test]
    fn configure_allocator_sets_purge_delay_and_thp_unless_the_user_did() {
        configure_allocator();
        let (purge_delay, allow_thp) = allocator_options().expect("the checked mimalloc release");
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(purge_delay, 0);
        }
        if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
            assert_eq!(allow_thp, 0);
        }
    }
}
