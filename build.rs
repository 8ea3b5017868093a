//! Build script: links the `sparkyard` binary as a position-dependent executable on Linux.
//!
//! A position-independent executable (rustc's default) has the dynamic loader patch every
//! absolute address in its data before `main`: 31,000 relocations here, most of them in
//! tracing's per-call-site metadata and in vtables, each write a copy-on-write fault on a
//! page of the binary. That was 7% of the seed job's whole process (`sparkyard submit` of
//! SparkPi 10, about 10 ms in all; issue 17) and 76 of its 780 page faults. Linked with
//! `-no-pie` the addresses are fixed at link time (183 relocations are left) and those pages
//! are read from the file as they are. The cost is that the binary's own code and data load
//! at the same address in every process (its libraries, stack, heap and thread stacks are
//! still placed at random), as Go links its programs by default; the code is compiled as
//! before, so nothing else changes. Only the binaries get it: tests and benchmarks that run
//! `sparkyard` run this one.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
