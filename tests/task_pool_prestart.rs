//! The task pool's threads started ahead of the first task (issue 17: the seed job's first
//! two tasks ran one after the other while the second waited for a new thread to start).
//!
//! A file of its own: the task threads are the process's, and no other test may have
//! started any before these look.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use sparkyard::executor::task_pool::TaskPool;

/// Waits (bounded) until `done` holds.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::yield_now();
    }
}

#[test]
fn an_executor_starting_starts_its_first_task_threads_before_any_task() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(
        TaskPool::worker_threads(),
        0,
        "no task thread before the first executor"
    );

    // An executor of one core: one thread, started before any task is given.
    TaskPool::prestart(1);
    assert_eq!(TaskPool::worker_threads(), 1);
    wait_until("the thread is asleep waiting for work", || {
        TaskPool::idle_workers() == 1
    });

    // The next executor's thread too, up to one per core of the machine; no more after that.
    TaskPool::prestart(1);
    TaskPool::prestart(64);
    let expected = cores.min(66);
    assert_eq!(TaskPool::worker_threads(), expected);
    wait_until("every started thread is asleep", || {
        TaskPool::idle_workers() == expected
    });

    // Tasks of two executors run on the threads already there: none is started for them.
    let pools = [
        TaskPool::new("executor-1-task", 1),
        TaskPool::new("executor-2-task", 1),
    ];
    let (tx, rx) = mpsc::channel();
    for pool in &pools {
        let tx = tx.clone();
        pool.execute(Box::new(move || {
            let _ = tx.send(std::thread::current().name().map(str::to_string));
        }))
        .map_err(|_| ())
        .unwrap();
    }
    for _ in &pools {
        let name = rx
            .recv_timeout(Duration::from_secs(20))
            .unwrap()
            .unwrap_or_default();
        assert!(name.starts_with("task-worker-"), "ran on {name}");
    }
    assert_eq!(
        TaskPool::worker_threads(),
        expected,
        "the pre-started threads ran the tasks; none was added"
    );
}
