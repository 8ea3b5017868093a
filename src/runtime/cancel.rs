//! Cooperative cancellation.
//!
//! Layer: runtime (above logs, under everything else).
//!
//! Rust threads cannot be killed, so a stopped container or a killed task signals a
//! [`CancelToken`] that its code checks. Blocking waits on a token (and the clock's
//! `blocking_sleep`) return [`Cancelled`] as soon as it fires, and async code can await
//! [`CancelToken::cancelled`]. Child tokens fire with their parent (container → task).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// The error a cancelled operation returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cancelled {
    pub reason: String,
}

impl fmt::Display for Cancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cancelled: {}", self.reason)
    }
}

impl std::error::Error for Cancelled {}

#[derive(Default)]
struct State {
    reason: Option<String>,
    wakers: Vec<Waker>,
    children: Vec<Weak<Inner>>,
}

#[derive(Default)]
struct Inner {
    fired: AtomicBool,
    state: Mutex<State>,
    cv: Condvar,
}

/// A cancellation signal shared by the code that may cancel and the code that checks.
#[derive(Clone, Default)]
pub struct CancelToken {
    inner: Arc<Inner>,
}

impl fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CancelToken(cancelled={})", self.is_cancelled())
    }
}

fn lock(inner: &Inner) -> std::sync::MutexGuard<'_, State> {
    inner.state.lock().unwrap_or_else(|p| p.into_inner())
}

impl CancelToken {
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// A token that fires when this one does (and may also be cancelled on its own).
    pub fn child(&self) -> CancelToken {
        let child = CancelToken::new();
        let mut state = lock(&self.inner);
        if let Some(reason) = state.reason.clone() {
            drop(state);
            child.cancel(reason);
        } else {
            state.children.retain(|w| w.strong_count() > 0);
            state.children.push(Arc::downgrade(&child.inner));
        }
        child
    }

    /// Fires the token (first reason wins) and every child token.
    pub fn cancel(&self, reason: impl Into<String>) {
        fire(&self.inner, reason.into());
    }

    pub fn is_cancelled(&self) -> bool {
        self.inner.fired.load(Ordering::Acquire)
    }

    /// The reason given to the first `cancel`, if fired.
    pub fn reason(&self) -> Option<String> {
        lock(&self.inner).reason.clone()
    }

    /// `Err(Cancelled)` once fired: the check that cooperative code makes between steps.
    pub fn check(&self) -> Result<(), Cancelled> {
        if self.is_cancelled() {
            Err(Cancelled {
                reason: self.reason().unwrap_or_default(),
            })
        } else {
            Ok(())
        }
    }

    /// Blocks the calling thread for up to `timeout`; returns `Err(Cancelled)` as soon as the
    /// token fires, `Ok(())` when the time passed without it.
    pub fn wait_timeout(&self, timeout: Duration) -> Result<(), Cancelled> {
        // A time-out no Instant can hold waits for the token alone.
        let deadline = std::time::Instant::now().checked_add(timeout);
        let mut state = lock(&self.inner);
        loop {
            if let Some(reason) = &state.reason {
                return Err(Cancelled {
                    reason: reason.clone(),
                });
            }
            let left = match deadline {
                Some(deadline) => deadline.saturating_duration_since(std::time::Instant::now()),
                None => Duration::MAX,
            };
            if left.is_zero() {
                return Ok(());
            }
            state = match self.inner.cv.wait_timeout(state, left) {
                Ok((s, _)) => s,
                Err(p) => p.into_inner().0,
            };
        }
    }

    /// A future that completes when the token fires.
    pub fn cancelled(&self) -> CancelledFuture {
        CancelledFuture { token: self.clone() }
    }
}

fn fire(inner: &Arc<Inner>, reason: String) {
    let (wakers, children) = {
        let mut state = lock(inner);
        if state.reason.is_some() {
            return;
        }
        state.reason = Some(reason.clone());
        inner.fired.store(true, Ordering::Release);
        (
            std::mem::take(&mut state.wakers),
            std::mem::take(&mut state.children),
        )
    };
    inner.cv.notify_all();
    for w in wakers {
        w.wake();
    }
    for child in children.iter().filter_map(Weak::upgrade) {
        fire(&child, reason.clone());
    }
}

/// Completes when its token fires; see [`CancelToken::cancelled`].
pub struct CancelledFuture {
    token: CancelToken,
}

impl Future for CancelledFuture {
    type Output = Cancelled;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Cancelled> {
        let mut state = lock(&self.token.inner);
        if let Some(reason) = &state.reason {
            return Poll::Ready(Cancelled {
                reason: reason.clone(),
            });
        }
        if !state.wakers.iter().any(|w| w.will_wake(cx.waker())) {
            state.wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_fires_children_and_waiters() {
        let parent = CancelToken::new();
        let child = parent.child();
        assert!(child.check().is_ok());
        let waiter = {
            let c = child.clone();
            std::thread::spawn(move || c.wait_timeout(Duration::from_secs(30)))
        };
        parent.cancel("container stopped");
        let res = waiter.join().unwrap();
        assert_eq!(res.unwrap_err().reason, "container stopped");
        assert!(child.is_cancelled());
        assert_eq!(
            child.check().unwrap_err().to_string(),
            "cancelled: container stopped"
        );
        // first reason wins
        parent.cancel("again");
        assert_eq!(parent.reason().as_deref(), Some("container stopped"));
        // a child made after the fact is born cancelled
        assert!(parent.child().is_cancelled());
    }

    #[test]
    fn wait_timeout_returns_ok_when_not_cancelled() {
        let t = CancelToken::new();
        assert!(t.wait_timeout(Duration::from_millis(5)).is_ok());
    }

    #[actix_rt::test]
    async fn cancelled_future_completes() {
        let t = CancelToken::new();
        let t2 = t.clone();
        actix_rt::spawn(async move { t2.cancel("bye") });
        assert_eq!(t.cancelled().await.reason, "bye");
    }
}
