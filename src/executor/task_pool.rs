//! The executor's bounded task pool: task bodies run here, never on an actor's thread.
//!
//! Layer: executor (the Spark side, above scheduler).
//!
//! Each executor has its pool, which runs at most `max_threads` of its jobs at once (the
//! executor's cores) and queues the rest (the driver's core accounting keeps that queue
//! short). The threads themselves are the process's [`Workers`], shared by every pool of the
//! process: an executor process has one pool, so its workers are its own, as an executor
//! JVM's task threads are; the embedded cluster runs many executors in one process, and
//! shared workers keep the number of threads and the cost of waking one flat as executors
//! grow (a thousand executors of one core need not mean a thousand sleeping threads, each
//! woken for each task it gets). Workers start as work arrives, or when an executor starts
//! ([`TaskPool::prestart`], one per core of the machine at most), and end after a minute idle.
//! The most recently idle worker takes the next job (its cache is warm; it may still be
//! looking for work, and then nobody has to wake it). A panic in a job is caught and ends
//! that job only; the thread lives on.
//!
//! Waking a sleeping thread is a system call that costs the waker microseconds, and the
//! waker is the thread handing out tasks (the driver's, in the embedded cluster), the one
//! every task waits on. So a job that arrives while a worker is running one is not given a
//! thread at once when jobs have lately been short (under [`SHORT_JOB`] on average): a
//! returning worker takes it (tiny tasks come back in microseconds and one thread runs
//! them back to back; jobs that take longer are given a thread at once, so they run side by
//! side), and a watcher thread that looks every
//! [`WATCH_TICK`] wakes a worker for each job that waited a whole tick (a long task does
//! not hold up the next one by more than about two ticks). With nothing running, a job
//! wakes a worker at once.
//!
//! A job may leave a message to another process unwritten (a task's final status, see
//! `runtime::deferred`), to go with the next job's first one: a worker writes such messages
//! out before it looks for work or sleeps, and after a job once the oldest has waited
//! `runtime::deferred::MAX_DEFERRAL`. A job about to run for a time it cannot tell (a task
//! that deferred its RUNNING while jobs were short) hands them to the watcher, which writes
//! out what was handed over at every tick and ticks while anything is
//! ([`TaskPool::watch_handed_over`]).

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// A unit of work.
pub type Job = Box<dyn FnOnce() + Send + 'static>;

/// How long a worker waits for work before it ends.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a worker that ran out of work keeps looking (yielding its core) before it
/// sleeps. Tasks arrive back to back while a job runs, so a short look saves the wake-up
/// system call the thread launching the next task would otherwise make.
const LINGER: Duration = Duration::from_micros(200);

/// Jobs shorter than this on average are run back to back by the workers that are running
/// one, rather than waking another: waking costs the thread that hands the job out a few
/// microseconds, more than such a job waits for a worker to come back.
const SHORT_JOB: Duration = Duration::from_micros(50);

/// How often the watcher looks for jobs left waiting while every worker was busy.
const WATCH_TICK: Duration = Duration::from_micros(500);

/// Ticks with no job waiting after which the watcher sleeps until a job is left waiting
/// again (a second: an idle process does not wake every tick).
const WATCH_QUIET_TICKS: u32 = 2000;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One executor's side: its limit, its queue, its jobs running now.
#[derive(Default)]
struct PoolState {
    /// Jobs waiting for one of the pool's places (all `max_threads` taken).
    queue: VecDeque<Job>,
    /// Jobs of this pool handed to the workers and not finished (queued there or running).
    running: usize,
    shutdown: bool,
}

struct Pool {
    name: String,
    max_threads: usize,
    state: Mutex<PoolState>,
}

impl Pool {
    /// A job of this pool ended (ran, or was dropped): its place goes to the pool's next
    /// queued job, which the same worker runs at once.
    fn finished(&self) -> Option<Job> {
        let mut st = lock(&self.state);
        if !st.shutdown {
            if let Some(next) = st.queue.pop_front() {
                return Some(next);
            }
        }
        st.running = st.running.saturating_sub(1);
        None
    }

    fn is_shut_down(&self) -> bool {
        lock(&self.state).shutdown
    }
}

/// A bounded pool of task threads for one executor; cheap to clone.
#[derive(Clone)]
pub struct TaskPool {
    pool: Arc<Pool>,
}

impl std::fmt::Debug for TaskPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = lock(&self.pool.state);
        write!(
            f,
            "TaskPool({}, running {}/{}, queued {})",
            self.pool.name,
            st.running,
            self.pool.max_threads,
            st.queue.len()
        )
    }
}

impl TaskPool {
    /// A pool named `name` running at most `max_threads` jobs at once.
    pub fn new(name: &str, max_threads: usize) -> TaskPool {
        TaskPool {
            pool: Arc::new(Pool {
                name: name.to_string(),
                max_threads: max_threads.max(1),
                state: Mutex::new(PoolState::default()),
            }),
        }
    }

    /// Queues `job`; gives it back if the pool was shut down or no thread can be started.
    pub fn execute(&self, job: Job) -> Result<(), Job> {
        let mut st = lock(&self.pool.state);
        if st.shutdown {
            return Err(job);
        }
        if st.running >= self.pool.max_threads {
            st.queue.push_back(job);
            return Ok(());
        }
        st.running += 1;
        drop(st);
        workers().submit(self.pool.clone(), job).inspect_err(|_| {
            let mut st = lock(&self.pool.state);
            st.running = st.running.saturating_sub(1);
        })
    }

    /// No new work is taken; queued work is dropped; running jobs finish.
    pub fn shutdown(&self) {
        let dropped = {
            let mut st = lock(&self.pool.state);
            st.shutdown = true;
            std::mem::take(&mut st.queue)
        };
        drop(dropped);
    }

    /// Starts up to `cores` task threads ahead of the first task, so long as the process has
    /// fewer than one per core of the machine; called when an executor backend starts. A
    /// thread's start (its stack, the allocator's and the records' per-thread state) takes
    /// 0.5–1 ms before it can run anything: started here, it overlaps the executor's
    /// registration, and the executor's first tasks run side by side instead of the second
    /// waiting for its thread. The threads are the shared workers: they end after a minute
    /// idle as any other, and a thousand executors in one process start no more of them than
    /// the machine has cores.
    pub fn prestart(cores: usize) {
        workers().prestart(cores);
    }

    /// The process's task threads now (started, not ended).
    pub fn worker_threads() -> usize {
        lock(&workers().state).threads
    }

    /// The process's task threads asleep waiting for work now.
    pub fn idle_workers() -> usize {
        lock(&workers().state).idle.len()
    }

    /// Whether the process's jobs have lately been short (under [`SHORT_JOB`] on average).
    pub fn jobs_are_short() -> bool {
        workers().average_job_ns.load(Ordering::Relaxed) < SHORT_JOB.as_nanos() as u64
    }

    /// Makes sure the watcher ticks, so that what a task thread handed over
    /// (`runtime::deferred::hand_over`) is written out within a tick; false if it cannot
    /// (then the caller writes it out itself).
    pub fn watch_handed_over() -> bool {
        let workers = workers();
        if workers.watch_ticking.load(Ordering::SeqCst) {
            return true;
        }
        let mut st = lock(&workers.state);
        workers.watch_started(&mut st)
    }

    /// Jobs of this pool running or handed to a worker now.
    pub fn running(&self) -> usize {
        lock(&self.pool.state).running
    }

    pub fn max_threads(&self) -> usize {
        self.pool.max_threads
    }
}

/// A sleeping worker's bell.
#[derive(Default)]
struct Bell {
    rung: Mutex<bool>,
    cv: Condvar,
}

#[derive(Default)]
struct WorkersState {
    /// Jobs handed over by pools (their place taken), oldest first.
    jobs: VecDeque<(Arc<Pool>, Job)>,
    /// Sleeping workers, the most recently idle last (woken first).
    idle: Vec<Arc<Bell>>,
    threads: usize,
    /// Workers looking for work without sleeping (they need no bell).
    looking: usize,
    /// Jobs ever queued, and ever taken: the job at the front is number `taken + 1`.
    submitted: u64,
    taken: u64,
    /// The watcher is ticking (false: asleep on `Workers::watch`, or not started yet).
    watching: bool,
    /// The watcher thread was started.
    watcher_started: bool,
}

/// The process's task threads, shared by its executors' pools.
struct Workers {
    state: Mutex<WorkersState>,
    /// Jobs waiting, readable without the lock (looking workers watch it).
    queued: AtomicUsize,
    /// How many workers may look for work at once: one fewer than the cores. A looking
    /// worker keeps a core busy, so the process leaves one for the threads that hand the
    /// work out (the driver, the executors' endpoints).
    looking_budget: usize,
    /// Workers started so far (names them).
    started: AtomicUsize,
    /// Workers running a job now: raised under the lock as a worker takes one, lowered as
    /// it finishes, before it comes back for the next (so it may be counted free early,
    /// never late, and no thread is started for a job a returning worker will take).
    running: AtomicUsize,
    /// Where the watcher sleeps while no job waits.
    watch: Condvar,
    /// `WorkersState::watching`, readable without the lock (a task thread that handed its
    /// deferred messages over checks that the watcher ticks to write them out).
    watch_ticking: AtomicBool,
    /// The recent jobs' average run time in nanoseconds (a moving average, 1/8 weight to
    /// each new job): tells short jobs from long ones.
    average_job_ns: AtomicU64,
}

fn workers() -> &'static Workers {
    static WORKERS: OnceLock<Workers> = OnceLock::new();
    WORKERS.get_or_init(|| Workers {
        state: Mutex::new(WorkersState::default()),
        queued: AtomicUsize::new(0),
        looking_budget: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .saturating_sub(1),
        started: AtomicUsize::new(0),
        running: AtomicUsize::new(0),
        watch: Condvar::new(),
        watch_ticking: AtomicBool::new(false),
        average_job_ns: AtomicU64::new(u64::MAX),
    })
}

impl Workers {
    fn submit(&'static self, pool: Arc<Pool>, job: Job) -> Result<(), Job> {
        let mut st = lock(&self.state);
        st.jobs.push_back((pool, job));
        st.submitted += 1;
        self.queued.store(st.jobs.len(), Ordering::Release);
        // Workers not running a job are asleep, looking, or on their way back from one (they
        // take the next job themselves): wake one only if the others cannot take them all.
        if self.uncovered(&st) == 0 {
            return Ok(());
        }
        // A worker running a job comes back for the next; the watcher wakes one if it does
        // not come back within a tick.
        let short = self.average_job_ns.load(Ordering::Relaxed) < SHORT_JOB.as_nanos() as u64;
        if short && self.running.load(Ordering::Acquire) > 0 && self.watch_started(&mut st) {
            return Ok(());
        }
        match self.wake_one(st) {
            Ok(()) => Ok(()),
            Err(mut st) => {
                // No thread could be started: with none at all, nobody will run it (the
                // newest job is this one unless another pool's arrived since, and each of
                // those gets the same answer).
                if st.threads == 0 {
                    if let Some((_, job)) = st.jobs.pop_back() {
                        st.submitted -= 1;
                        self.queued.store(st.jobs.len(), Ordering::Release);
                        return Err(job);
                    }
                }
                Ok(())
            }
        }
    }

    /// Starts up to `cores` workers while the process has fewer than `cores_of_machine`
    /// (see [`TaskPool::prestart`]).
    fn prestart(&'static self, cores: usize) {
        // One per core at most: looking_budget is one fewer than the cores.
        let cap = self.looking_budget + 1;
        let wanted = {
            let mut st = lock(&self.state);
            let wanted = (st.threads + cores).min(cap).saturating_sub(st.threads);
            st.threads += wanted;
            wanted
        };
        let mut started = 0;
        for _ in 0..wanted {
            let n = self.started.fetch_add(1, Ordering::Relaxed);
            let spawned = std::thread::Builder::new()
                .name(format!("task-worker-{n}"))
                .spawn(move || self.work(true));
            if spawned.is_err() {
                lock(&self.state).threads -= wanted - started;
                break;
            }
            started += 1;
        }
        if started > 0 {
            tracing::debug!(started, cores, "Started task threads ahead of the first task");
        }
    }

    /// Jobs waiting that no worker is on its way to: the workers that are not running a job,
    /// not asleep (looking, or coming back from one) take one each.
    fn uncovered(&self, st: &WorkersState) -> usize {
        let free = st.threads.saturating_sub(self.running.load(Ordering::Acquire));
        st.jobs.len().saturating_sub(free.saturating_sub(st.idle.len()))
    }

    /// Rings the most recently idle worker's bell, or starts a worker; gives the lock back
    /// if no thread could be started.
    fn wake_one<'a>(
        &'static self,
        mut st: MutexGuard<'a, WorkersState>,
    ) -> Result<(), MutexGuard<'a, WorkersState>> {
        if let Some(bell) = st.idle.pop() {
            drop(st);
            *lock(&bell.rung) = true;
            bell.cv.notify_one();
            return Ok(());
        }
        st.threads += 1;
        drop(st);
        let n = self.started.fetch_add(1, Ordering::Relaxed);
        let spawned = std::thread::Builder::new()
            .name(format!("task-worker-{n}"))
            .spawn(move || self.work(false));
        if spawned.is_err() {
            let mut st = lock(&self.state);
            st.threads -= 1;
            return Err(st);
        }
        Ok(())
    }

    /// Makes sure the watcher ticks; false if it cannot be started (then the caller wakes a
    /// worker itself).
    fn watch_started(&'static self, st: &mut WorkersState) -> bool {
        if st.watching {
            return true;
        }
        if !st.watcher_started {
            let spawned = std::thread::Builder::new()
                .name("task-worker-watch".into())
                .spawn(move || self.watch());
            if spawned.is_err() {
                return false;
            }
            st.watcher_started = true;
        }
        st.watching = true;
        self.watch_ticking.store(true, Ordering::SeqCst);
        self.watch.notify_one();
        true
    }

    /// The watcher's life: every tick, wakes a worker for each job that waited the whole
    /// tick and that no worker is on its way to; sleeps after a quiet second.
    fn watch(&'static self) {
        let mut seen_submitted = 0u64;
        let mut quiet = 0u32;
        loop {
            std::thread::sleep(WATCH_TICK);
            // What task threads handed over while running their tasks goes out at each tick.
            let handed = crate::runtime::deferred::flush_handed_over();
            let mut st = lock(&self.state);
            if st.jobs.is_empty() {
                quiet = if handed { 0 } else { quiet + 1 };
                if quiet >= WATCH_QUIET_TICKS {
                    st.watching = false;
                    self.watch_ticking.store(false, Ordering::SeqCst);
                    // Handed over before the flag fell: written now (after it, the task
                    // thread saw the watcher asleep and wrote its messages itself).
                    drop(st);
                    crate::runtime::deferred::flush_handed_over();
                    st = lock(&self.state);
                    while !st.watching {
                        st = self
                            .watch
                            .wait_timeout(st, IDLE_TIMEOUT)
                            .unwrap_or_else(|p| p.into_inner())
                            .0;
                    }
                    quiet = 0;
                }
                seen_submitted = st.submitted;
                continue;
            }
            quiet = 0;
            // The front job is number `taken + 1`: it waited a tick if it was queued by the
            // last look.
            if st.taken < seen_submitted {
                let waited = (seen_submitted - st.taken) as usize;
                let mut wake = self.uncovered(&st).min(waited);
                while wake > 0 {
                    match self.wake_one(st) {
                        Ok(()) => st = lock(&self.state),
                        Err(back) => {
                            st = back;
                            break;
                        }
                    }
                    wake = self.uncovered(&st).min(wake - 1);
                }
            }
            seen_submitted = st.submitted;
        }
    }

    /// A worker thread's life: run jobs, look for more for a moment, sleep, end when idle
    /// for [`IDLE_TIMEOUT`]. A worker started ahead of any task (`ahead`) has no reason to
    /// expect one within the moment: the first time it finds nothing it sleeps at once,
    /// leaving the cores to the executor that is registering.
    fn work(&'static self, ahead: bool) {
        let mut st = lock(&self.state);
        let mut look = !ahead;
        loop {
            if let Some((pool, job)) = st.jobs.pop_front() {
                st.taken += 1;
                self.queued.store(st.jobs.len(), Ordering::Release);
                self.running.fetch_add(1, Ordering::AcqRel);
                drop(st);
                run_in(pool, job, &self.average_job_ns);
                self.running.fetch_sub(1, Ordering::AcqRel);
                st = lock(&self.state);
                continue;
            }
            // Nothing to run: what the jobs left unwritten goes out before the thread waits.
            if crate::runtime::deferred::has_deferred() {
                drop(st);
                crate::runtime::deferred::flush_deferred();
                st = lock(&self.state);
                continue;
            }
            // Look for a moment before sleeping, without holding the lock, if the process
            // has a core to spare for it.
            if look && st.looking < self.looking_budget {
                st.looking += 1;
                drop(st);
                let until = Instant::now() + LINGER;
                while self.queued.load(Ordering::Acquire) == 0 && Instant::now() < until {
                    std::thread::yield_now();
                }
                st = lock(&self.state);
                st.looking -= 1;
                if !st.jobs.is_empty() {
                    continue;
                }
            }
            look = true;
            let bell = Arc::new(Bell::default());
            st.idle.push(bell.clone());
            drop(st);
            let rung = {
                let rung = lock(&bell.rung);
                let (rung, _) = bell
                    .cv
                    .wait_timeout_while(rung, IDLE_TIMEOUT, |rung| !*rung)
                    .unwrap_or_else(|p| p.into_inner());
                *rung
            };
            st = lock(&self.state);
            if !rung {
                // Timed out: still on the idle list unless a submit took it just now.
                if let Some(i) = st.idle.iter().position(|b| Arc::ptr_eq(b, &bell)) {
                    st.idle.remove(i);
                    if st.jobs.is_empty() {
                        break;
                    }
                }
            }
        }
        st.threads -= 1;
    }
}

/// Runs `job` of `pool` and then the pool's next queued jobs, each in its place; a job of a
/// pool shut down meanwhile is dropped unrun.
fn run_in(pool: Arc<Pool>, job: Job, average_ns: &AtomicU64) {
    let mut next = Some(job);
    while let Some(job) = next.take() {
        if pool.is_shut_down() {
            drop(job);
        } else {
            let start = Instant::now();
            let _ = catch_unwind(AssertUnwindSafe(job));
            let took = start.elapsed().as_nanos().min(u64::MAX as u128) as u64;
            // Racy by design: a lost update only slows the average down.
            let old = average_ns.load(Ordering::Relaxed);
            let new = if old == u64::MAX {
                took
            } else {
                old - old / 8 + took / 8
            };
            average_ns.store(new, Ordering::Relaxed);
        }
        // A message the job left unwritten waits for the next job's first one, within a
        // bound (a long next job would hold it back).
        crate::runtime::deferred::flush_deferred_older_than(crate::runtime::deferred::MAX_DEFERRAL);
        next = pool.finished();
    }
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
            assert!(pool.running() <= 2);
        }
        let mut got: Vec<i32> = (0..20)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        got.sort();
        assert_eq!(got, (0..20).collect::<Vec<_>>());
        assert!(peak.load(Ordering::SeqCst) <= 2);
    }

    #[test]
    fn what_a_job_left_unwritten_goes_out_before_its_thread_waits() {
        use crate::runtime::deferred::{deferred, DeferredWrites};

        struct Flushed(mpsc::Sender<()>);
        impl DeferredWrites for Flushed {
            fn flush(self: Arc<Self>) {
                let _ = self.0.send(());
            }
        }
        let pool = TaskPool::new("test-pool-deferred", 1);
        let (tx, rx) = mpsc::channel();
        pool.execute(Box::new(move || {
            let queue: Arc<dyn DeferredWrites> = Arc::new(Flushed(tx));
            deferred(&queue);
        }))
        .map_err(|_| ())
        .unwrap();
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the worker flushed the job's deferred writes");
    }

    #[test]
    fn what_a_job_hands_over_goes_out_within_a_tick_while_the_job_still_runs() {
        use crate::runtime::deferred::{deferred, hand_over, DeferredWrites};

        struct Flushed(Mutex<mpsc::Sender<()>>);
        impl DeferredWrites for Flushed {
            fn flush(self: Arc<Self>) {
                let _ = lock(&self.0).send(());
            }
        }
        let pool = TaskPool::new("test-pool-handed", 1);
        let (tx, rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel();
        pool.execute(Box::new(move || {
            let queue: Arc<dyn DeferredWrites> = Arc::new(Flushed(Mutex::new(tx)));
            deferred(&queue);
            hand_over();
            assert!(TaskPool::watch_handed_over(), "the watcher ticks");
            // The job's own thread is busy until the message is out: the watcher wrote it.
            let _ = done_tx.send(rx.recv_timeout(Duration::from_secs(10)).is_ok());
        }))
        .map_err(|_| ())
        .unwrap();
        assert!(
            done_rx.recv_timeout(Duration::from_secs(20)).unwrap(),
            "the watcher wrote out what the running job handed over"
        );
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

    #[test]
    fn a_job_queued_behind_a_long_one_still_gets_a_thread() {
        // The first job runs until the second has run: the second must get a thread of its
        // own although a worker is busy (the watcher wakes one when nobody comes back).
        let pool = TaskPool::new("test-pool-long", 2);
        let (started_tx, started_rx) = mpsc::channel();
        let (second_tx, second_rx) = mpsc::channel::<()>();
        let (done_tx, done_rx) = mpsc::channel();
        pool.execute(Box::new(move || {
            started_tx.send(()).unwrap();
            let _ = done_tx.send(second_rx.recv_timeout(Duration::from_secs(10)).is_ok());
        }))
        .map_err(|_| ())
        .unwrap();
        started_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        pool.execute(Box::new(move || second_tx.send(()).unwrap()))
            .map_err(|_| ())
            .unwrap();
        assert!(
            done_rx.recv_timeout(Duration::from_secs(20)).unwrap(),
            "the second job ran while the first held its thread"
        );
    }

    #[test]
    fn pools_share_the_workers_but_each_keeps_its_own_limit_and_shutdown() {
        // Many pools of one place each, as a thousand executors of one core: every job runs,
        // no pool runs two at once, and a pool shut down drops what it had queued only.
        let pools: Vec<TaskPool> = (0..50).map(|i| TaskPool::new(&format!("p{i}"), 1)).collect();
        let (tx, rx) = mpsc::channel();
        let busy: Arc<Vec<AtomicUsize>> = Arc::new((0..50).map(|_| AtomicUsize::new(0)).collect());
        let (gate_tx, gate_rx) = mpsc::channel::<()>();
        let gate = Arc::new(Mutex::new(gate_rx));
        // Pool 0's first job holds its place until the gate opens; its next two queue.
        {
            let (tx, gate) = (tx.clone(), gate.clone());
            pools[0]
                .execute(Box::new(move || {
                    let _ = lock(&gate).recv_timeout(Duration::from_secs(10));
                    let _ = tx.send((0usize, 0u32));
                }))
                .map_err(|_| ())
                .unwrap();
        }
        for k in 1..3 {
            let tx = tx.clone();
            pools[0]
                .execute(Box::new(move || {
                    let _ = tx.send((0, k));
                }))
                .map_err(|_| ())
                .unwrap();
        }
        for (p, pool) in pools.iter().enumerate().skip(1) {
            for k in 0..4 {
                let (tx, busy) = (tx.clone(), busy.clone());
                pool.execute(Box::new(move || {
                    assert_eq!(busy[p].fetch_add(1, Ordering::SeqCst), 0, "one at a time");
                    std::thread::yield_now();
                    busy[p].fetch_sub(1, Ordering::SeqCst);
                    let _ = tx.send((p, k));
                }))
                .map_err(|_| ())
                .unwrap();
            }
        }
        let others: Vec<(usize, u32)> = (0..49 * 4)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        assert!(others.iter().all(|(p, _)| *p != 0), "pool 0 is still held");
        assert_eq!(pools[0].running(), 1);
        pools[0].shutdown();
        gate_tx.send(()).unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), (0, 0));
        // A pool's place is given back only after its queued jobs ran or were dropped.
        let deadline = Instant::now() + Duration::from_secs(10);
        while pools[0].running() != 0 && Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert!(
            rx.try_recv().is_err(),
            "the queued jobs of a pool shut down never run"
        );
        assert_eq!(pools[0].running(), 0, "its place is given back");
    }
}
