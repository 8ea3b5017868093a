//! The executor's bounded task pool: task bodies run here, never on an actor's thread.
//!
//! Layer: executor (the Spark side, above scheduler).
//!
//! At most `max_threads` worker threads (the executor's cores), started as work arrives
//! and ended after a minute idle or when the pool shuts down. Work queues while every
//! thread is busy (the driver's core accounting keeps the queue short). A panic in a job
//! is caught and ends that job only; the thread lives on.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A unit of work.
pub type Job = Box<dyn FnOnce() + Send + 'static>;

/// How long a worker thread waits for work before it ends.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a worker that ran out of work keeps looking (yielding its core) before it
/// sleeps. Tasks arrive back to back while a job runs, so a short look saves the wake-up
/// system call the thread launching the next task would otherwise make.
const LINGER: Duration = Duration::from_micros(200);

#[derive(Default)]
struct State {
    queue: VecDeque<Job>,
    threads: usize,
    /// Workers asleep on the condition variable (they need a notify).
    idle: usize,
    /// Workers looking for work without sleeping (they need none).
    lingering: usize,
    shutdown: bool,
}

struct Inner {
    name: String,
    max_threads: usize,
    state: Mutex<State>,
    work: Condvar,
    /// The queue's length, readable without the lock (lingering workers watch it).
    queued: AtomicUsize,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A bounded pool of worker threads; cheap to clone.
#[derive(Clone)]
pub struct TaskPool {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for TaskPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.inner.lock();
        write!(
            f,
            "TaskPool({}, threads {}/{}, queued {})",
            self.inner.name,
            st.threads,
            self.inner.max_threads,
            st.queue.len()
        )
    }
}

impl TaskPool {
    /// A pool named `name` (its threads are `<name>-<n>`) of at most `max_threads` threads.
    pub fn new(name: &str, max_threads: usize) -> TaskPool {
        TaskPool {
            inner: Arc::new(Inner {
                name: name.to_string(),
                max_threads: max_threads.max(1),
                state: Mutex::new(State::default()),
                work: Condvar::new(),
                queued: AtomicUsize::new(0),
            }),
        }
    }

    /// Queues `job`; gives it back if the pool was shut down or no thread can be started.
    pub fn execute(&self, job: Job) -> Result<(), Job> {
        let mut st = self.inner.lock();
        if st.shutdown {
            return Err(job);
        }
        st.queue.push_back(job);
        self.inner.queued.store(st.queue.len(), Ordering::Release);
        if st.lingering >= st.queue.len() {
            return Ok(());
        }
        if st.idle > 0 {
            drop(st);
            self.inner.work.notify_one();
            return Ok(());
        }
        if st.threads < self.inner.max_threads {
            let n = st.threads;
            st.threads += 1;
            drop(st);
            let inner = self.inner.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("{}-{n}", self.inner.name))
                .spawn(move || worker(inner));
            if spawned.is_err() {
                let mut st = self.inner.lock();
                st.threads -= 1;
                if st.threads == 0 {
                    if let Some(job) = st.queue.pop_back() {
                        self.inner.queued.store(st.queue.len(), Ordering::Release);
                        return Err(job);
                    }
                }
            }
        }
        Ok(())
    }

    /// No new work is taken; queued work is dropped; running jobs finish; idle threads end.
    pub fn shutdown(&self) {
        let dropped = {
            let mut st = self.inner.lock();
            st.shutdown = true;
            self.inner.queued.store(0, Ordering::Release);
            std::mem::take(&mut st.queue)
        };
        self.inner.work.notify_all();
        drop(dropped);
    }

    /// Threads alive now.
    pub fn threads(&self) -> usize {
        self.inner.lock().threads
    }

    pub fn max_threads(&self) -> usize {
        self.inner.max_threads
    }
}

fn worker(inner: Arc<Inner>) {
    let mut st = inner.lock();
    loop {
        if let Some(job) = st.queue.pop_front() {
            inner.queued.store(st.queue.len(), Ordering::Release);
            drop(st);
            let _ = catch_unwind(AssertUnwindSafe(job));
            st = inner.lock();
            continue;
        }
        if st.shutdown {
            break;
        }
        // Look for a moment before sleeping, without holding the lock.
        st.lingering += 1;
        drop(st);
        let until = Instant::now() + LINGER;
        while inner.queued.load(Ordering::Acquire) == 0 && Instant::now() < until {
            std::thread::yield_now();
        }
        st = inner.lock();
        st.lingering -= 1;
        if !st.queue.is_empty() || st.shutdown {
            continue;
        }
        st.idle += 1;
        let (next, timeout) = inner
            .work
            .wait_timeout(st, IDLE_TIMEOUT)
            .unwrap_or_else(|p| p.into_inner());
        st = next;
        st.idle -= 1;
        if timeout.timed_out() && st.queue.is_empty() {
            break;
        }
    }
    st.threads -= 1;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;

    #[test]
    fn runs_jobs_on_at_most_max_threads() {
        let pool = TaskPool::new("test-pool", 2);
        let (tx, rx) = mpsc::channel();
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        for i in 0..20 {
            let (tx, running, peak) = (tx.clone(), running.clone(), peak.clone());
            pool.execute(Box::new(move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(1));
                running.fetch_sub(1, Ordering::SeqCst);
                let _ = tx.send(i);
            }))
            .map_err(|_| ())
            .unwrap();
        }
        let mut got: Vec<i32> = (0..20)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        got.sort();
        assert_eq!(got, (0..20).collect::<Vec<_>>());
        assert!(peak.load(Ordering::SeqCst) <= 2);
        assert!(pool.threads() <= 2);
    }

    #[test]
    fn a_panicking_job_does_not_kill_the_pool_and_shutdown_refuses_work() {
        std::env::set_var("RUST_BACKTRACE", "0");
        let pool = TaskPool::new("test-pool", 1);
        let (tx, rx) = mpsc::channel();
        pool.execute(Box::new(|| panic!("task body failed")))
            .map_err(|_| ())
            .unwrap();
        pool.execute(Box::new(move || tx.send(1).unwrap()))
            .map_err(|_| ())
            .unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 1);
        pool.shutdown();
        assert!(pool.execute(Box::new(|| {})).is_err());
    }
}
