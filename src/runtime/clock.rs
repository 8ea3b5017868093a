//! The cluster's one clock, real or manual.
//!
//! Layer: runtime (above logs, under everything else).
//!
//! Timers, ask time-outs, deadlines and task sleeps all read a [`Clock`], so a test can use a
//! manual clock and step time explicitly with [`Clock::advance`] instead of sleeping through
//! real time-outs. (tokio's paused clock is per runtime and advances by itself when the
//! runtime is idle, which is not the same thing.) Time is a [`Duration`] since the clock was
//! made; [`Clock::wall`] gives the matching wall-clock time for log records.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, SystemTime};

use super::cancel::{CancelToken, Cancelled};

/// How many times [`Clock::advance`] yields to the scheduler after each step, so that actors
/// on the current arbiter can react to the timers that fired (each yield lets every ready
/// task run once; message chains of this many hops settle within one step).
const SETTLE_YIELDS: usize = 64;

/// What a sleep whose deadline no `Instant` can hold waits instead (about a century).
const FAR_FUTURE: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

#[derive(Default)]
struct Manual {
    now: Duration,
    next_id: u64,
    timers: BTreeMap<(Duration, u64), Waker>,
}

enum Kind {
    Real { start: std::time::Instant },
    Manual { state: Mutex<Manual>, cv: Condvar },
}

struct Inner {
    kind: Kind,
    wall_start: SystemTime,
}

/// A real or manual clock; cheap to clone, all clones share the same time.
#[derive(Clone)]
pub struct Clock {
    inner: Arc<Inner>,
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.is_manual() { "manual" } else { "real" };
        write!(f, "Clock({kind}, now={:?})", self.now())
    }
}

/// The error of [`Clock::timeout`] when the time ran out first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed(pub Duration);

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "timed out after {}", humantime::format_duration(self.0))
    }
}

impl std::error::Error for Elapsed {}

fn lock(m: &Mutex<Manual>) -> MutexGuard<'_, Manual> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Clock {
    /// The machine's monotonic clock.
    pub fn real() -> Clock {
        Clock {
            inner: Arc::new(Inner {
                kind: Kind::Real {
                    start: std::time::Instant::now(),
                },
                wall_start: SystemTime::now(),
            }),
        }
    }

    /// A clock that only moves when [`Clock::advance`] is called.
    pub fn manual() -> Clock {
        Clock {
            inner: Arc::new(Inner {
                kind: Kind::Manual {
                    state: Mutex::new(Manual::default()),
                    cv: Condvar::new(),
                },
                wall_start: SystemTime::now(),
            }),
        }
    }

    pub fn is_manual(&self) -> bool {
        matches!(self.inner.kind, Kind::Manual { .. })
    }

    /// Time since the clock was made.
    pub fn now(&self) -> Duration {
        match &self.inner.kind {
            Kind::Real { start } => start.elapsed(),
            Kind::Manual { state, .. } => lock(state).now,
        }
    }

    /// Wall-clock time matching [`Clock::now`].
    pub fn wall(&self) -> SystemTime {
        self.inner.wall_start + self.now()
    }

    /// Milliseconds since the Unix epoch of [`Clock::wall`], as Spark's timestamps are.
    pub fn epoch_millis(&self) -> u64 {
        self.wall()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    }

    /// A future that completes once `d` has passed on this clock.
    pub fn sleep(&self, d: Duration) -> Sleep {
        self.sleep_until(self.now().saturating_add(d))
    }

    /// A future that completes once the clock reads `deadline` or later.
    pub fn sleep_until(&self, deadline: Duration) -> Sleep {
        Sleep {
            clock: self.clone(),
            deadline,
            real: None,
            key: None,
        }
    }

    /// Runs `fut` with a time limit on this clock.
    pub fn timeout<F: Future>(&self, d: Duration, fut: F) -> Timeout<F> {
        Timeout {
            fut: Box::pin(fut),
            sleep: self.sleep(d),
            limit: d,
        }
    }

    /// Runs `fut` until the clock reads `deadline`.
    pub fn timeout_at<F: Future>(&self, deadline: Duration, fut: F) -> Timeout<F> {
        Timeout {
            fut: Box::pin(fut),
            limit: deadline.saturating_sub(self.now()),
            sleep: self.sleep_until(deadline),
        }
    }

    /// Blocks the calling thread (a task body, never an actor) for `d` on this clock; returns
    /// early with `Err(Cancelled)` when `cancel` fires.
    pub fn blocking_sleep(&self, d: Duration, cancel: Option<&CancelToken>) -> Result<(), Cancelled> {
        match &self.inner.kind {
            Kind::Real { .. } => match cancel {
                Some(token) => token.wait_timeout(d),
                None => {
                    std::thread::sleep(d);
                    Ok(())
                }
            },
            Kind::Manual { state, cv } => {
                let deadline = self.now().saturating_add(d);
                let mut guard = lock(state);
                loop {
                    if let Some(token) = cancel {
                        token.check()?;
                    }
                    if guard.now >= deadline {
                        return Ok(());
                    }
                    guard = match cv.wait_timeout(guard, Duration::from_millis(10)) {
                        Ok((g, _)) => g,
                        Err(p) => p.into_inner().0,
                    };
                }
            }
        }
    }

    /// Moves a manual clock forward by `d`, one due timer at a time in deadline order,
    /// yielding after each step so the actors on this arbiter react before the next timer
    /// fires. It first lets ready tasks run, so a task spawned just before the call has
    /// registered its timers. On a real clock it simply waits `d`.
    pub async fn advance(&self, d: Duration) {
        let Kind::Manual { state, cv } = &self.inner.kind else {
            tokio::time::sleep(d).await;
            return;
        };
        settle().await;
        let target = lock(state).now.saturating_add(d);
        loop {
            let woke = {
                let mut m = lock(state);
                let next = m.timers.keys().next().map(|k| k.0).filter(|t| *t <= target);
                let step = next.unwrap_or(target);
                if step > m.now {
                    m.now = step;
                }
                let due: Vec<(Duration, u64)> =
                    m.timers.range(..=(m.now, u64::MAX)).map(|(k, _)| *k).collect();
                let wakers: Vec<Waker> = due.iter().filter_map(|k| m.timers.remove(k)).collect();
                cv.notify_all();
                (next.is_some(), wakers)
            };
            let (more, wakers) = woke;
            for w in wakers {
                w.wake();
            }
            settle().await;
            if !more {
                break;
            }
        }
    }

    /// Moves a manual clock to `now + d` at once and wakes every timer due by then, without
    /// waiting for anything to react. For code that cannot await.
    pub fn advance_now(&self, d: Duration) {
        if let Kind::Manual { state, cv } = &self.inner.kind {
            let wakers: Vec<Waker> = {
                let mut m = lock(state);
                m.now = m.now.saturating_add(d);
                let now = m.now;
                let due: Vec<(Duration, u64)> = m.timers.range(..=(now, u64::MAX)).map(|(k, _)| *k).collect();
                due.iter().filter_map(|k| m.timers.remove(k)).collect()
            };
            cv.notify_all();
            for w in wakers {
                w.wake();
            }
        }
    }

    /// Number of sleeps currently waiting on a manual clock (0 on a real clock).
    pub fn pending_timers(&self) -> usize {
        match &self.inner.kind {
            Kind::Manual { state, .. } => lock(state).timers.len(),
            Kind::Real { .. } => 0,
        }
    }

    /// The deadline of the earliest sleep waiting on a manual clock.
    pub fn next_deadline(&self) -> Option<Duration> {
        match &self.inner.kind {
            Kind::Manual { state, .. } => lock(state).timers.keys().next().map(|k| k.0),
            Kind::Real { .. } => None,
        }
    }
}

/// Lets every task that is ready on the current thread run a few times.
pub async fn settle() {
    for _ in 0..SETTLE_YIELDS {
        tokio::task::yield_now().await;
    }
}

/// A sleep on a [`Clock`]; see [`Clock::sleep`].
pub struct Sleep {
    clock: Clock,
    deadline: Duration,
    real: Option<Pin<Box<tokio::time::Sleep>>>,
    key: Option<(Duration, u64)>,
}

impl Sleep {
    pub fn deadline(&self) -> Duration {
        self.deadline
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        match &this.clock.inner.kind {
            Kind::Real { start } => {
                if this.real.is_none() {
                    // A deadline past what an Instant can hold (a sleep of u64::MAX seconds)
                    // is never reached: sleep for a century instead of overflowing.
                    let at = start
                        .checked_add(this.deadline)
                        .map(tokio::time::Instant::from_std)
                        .unwrap_or_else(|| tokio::time::Instant::now() + FAR_FUTURE);
                    this.real = Some(Box::pin(tokio::time::sleep_until(at)));
                }
                match this.real.as_mut() {
                    Some(s) => s.as_mut().poll(cx),
                    None => Poll::Ready(()),
                }
            }
            Kind::Manual { state, .. } => {
                let mut m = lock(state);
                if m.now >= this.deadline {
                    if let Some(k) = this.key.take() {
                        m.timers.remove(&k);
                    }
                    return Poll::Ready(());
                }
                let key = match this.key {
                    Some(k) => k,
                    None => {
                        m.next_id += 1;
                        let k = (this.deadline, m.next_id);
                        this.key = Some(k);
                        k
                    }
                };
                m.timers.insert(key, cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let (Some(k), Kind::Manual { state, .. }) = (self.key.take(), &self.clock.inner.kind) {
            lock(state).timers.remove(&k);
        }
    }
}

/// A future with a time limit on a [`Clock`]; see [`Clock::timeout`].
pub struct Timeout<F: Future> {
    fut: Pin<Box<F>>,
    sleep: Sleep,
    limit: Duration,
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(v) = self.fut.as_mut().poll(cx) {
            return Poll::Ready(Ok(v));
        }
        let limit = self.limit;
        match Pin::new(&mut self.sleep).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed(limit))),
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[actix_rt::test]
    async fn manual_sleep_fires_only_when_advanced() {
        let clock = Clock::manual();
        let fired = Arc::new(AtomicUsize::new(0));
        for ms in [30u64, 10, 20] {
            let (c, f) = (clock.clone(), fired.clone());
            actix_rt::spawn(async move {
                c.sleep(Duration::from_millis(ms)).await;
                f.fetch_add(1, Ordering::SeqCst);
            });
        }
        settle().await;
        assert_eq!(clock.pending_timers(), 3);
        assert_eq!(clock.next_deadline(), Some(Duration::from_millis(10)));
        clock.advance(Duration::from_millis(15)).await;
        assert_eq!(fired.load(Ordering::SeqCst), 1);
        assert_eq!(clock.now(), Duration::from_millis(15));
        clock.advance(Duration::from_millis(100)).await;
        assert_eq!(fired.load(Ordering::SeqCst), 3);
        assert_eq!(clock.pending_timers(), 0);
    }

    #[actix_rt::test]
    async fn advance_steps_timers_in_order() {
        // A timer chain: each step re-arms one period later; advancing 5 periods at once
        // must fire it 5 times, each seeing the clock at its own deadline.
        let clock = Clock::manual();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (c, s) = (clock.clone(), seen.clone());
        actix_rt::spawn(async move {
            for _ in 0..5 {
                c.sleep(Duration::from_secs(1)).await;
                s.lock().unwrap().push(c.now().as_secs());
            }
        });
        settle().await;
        clock.advance(Duration::from_secs(10)).await;
        assert_eq!(*seen.lock().unwrap(), vec![1, 2, 3, 4, 5]);
    }

    #[actix_rt::test]
    async fn timeout_on_manual_clock() {
        let clock = Clock::manual();
        let c = clock.clone();
        let handle = actix_rt::spawn(async move {
            c.timeout(Duration::from_secs(120), std::future::pending::<()>())
                .await
        });
        settle().await;
        clock.advance(Duration::from_secs(119)).await;
        assert!(!handle.is_finished());
        clock.advance(Duration::from_secs(1)).await;
        assert_eq!(handle.await.unwrap(), Err(Elapsed(Duration::from_secs(120))));
        assert_eq!(clock.timeout(Duration::from_secs(1), async { 7 }).await, Ok(7));
    }

    #[test]
    fn blocking_sleep_on_manual_clock_waits_for_advance_or_cancel() {
        let clock = Clock::manual();
        let c = clock.clone();
        let sleeper = std::thread::spawn(move || c.blocking_sleep(Duration::from_secs(5), None));
        std::thread::sleep(Duration::from_millis(20));
        assert!(!sleeper.is_finished());
        clock.advance_now(Duration::from_secs(5));
        assert!(sleeper.join().unwrap().is_ok());

        let token = CancelToken::new();
        let (c, t) = (clock.clone(), token.clone());
        let sleeper = std::thread::spawn(move || c.blocking_sleep(Duration::from_secs(5), Some(&t)));
        token.cancel("task killed");
        assert_eq!(sleeper.join().unwrap().unwrap_err().reason, "task killed");
    }

    #[actix_rt::test]
    async fn real_clock_sleeps() {
        let clock = Clock::real();
        let before = clock.now();
        clock.sleep(Duration::from_millis(5)).await;
        assert!(clock.now() - before >= Duration::from_millis(5));
        assert!(!clock.is_manual());
    }
}
