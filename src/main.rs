//! The `sparkyard` binary: everything is in the library's `cli` module.

sparkyard::global_allocator!();

fn main() {
    sparkyard::cli::exit(sparkyard::cli::run(std::env::args_os().collect()));
}
