//! Deferred sends: messages a thread queued on links to other processes without writing
//! them yet, written by the thread's next send on the link or at its next
//! [`flush_deferred`]. Runtime layer: the transport (`rpc`) queues and registers, the thread
//! that owes the flush (an executor's task thread, `executor::task_pool`) calls it.
//!
//! An executor's task thread reports a task's final status and, when tasks are short, takes
//! the next task at once and reports it RUNNING: deferring the final status lets both go to
//! the driver's process in one write (one system call on each side instead of two). The
//! order of messages on a link is kept (a deferred frame is queued where it would have
//! been written); only the moment of the write moves, by at most the time until the thread
//! sends again or flushes. A thread that defers must flush before it waits for anything
//! (the task pool flushes before a worker looks for work or sleeps, and after a task when
//! the oldest deferred frame is older than [`MAX_DEFERRAL`]).
//!
//! A thread about to be busy for a time it cannot tell (an executor's task thread that
//! reported a task RUNNING and is about to run it) may [`hand_over`] what it left unwritten
//! to the process's flusher, which calls [`flush_handed_over`] at every tick: the task pool's
//! watcher, every half millisecond while it ticks. So when tasks have lately been short a
//! task's RUNNING waits too, and a run of short tasks reports in batches, while a task that
//! turns out long delays its RUNNING by about a tick.
//!
//! Sends to actors of the same process are never deferred: `tell_deferred` delivers them at
//! once, as `tell` does.

use std::cell::RefCell;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a deferred frame may wait for its thread's next send before the thread writes
/// it after a task (a run of tiny tasks reports in batches of about this span).
pub const MAX_DEFERRAL: Duration = Duration::from_micros(200);

/// A queue of frames that a thread may have left unwritten: the transport's outbox.
pub trait DeferredWrites: Send + Sync {
    /// Starts writing whatever is queued, unless a write is under way already.
    fn flush(self: Arc<Self>);
}

/// What this thread has left unwritten: the queues, and when the first frame was left.
struct Deferred {
    queues: Vec<Arc<dyn DeferredWrites>>,
    since: Option<Instant>,
}

thread_local! {
    static DEFERRED: RefCell<Deferred> = const {
        RefCell::new(Deferred {
            queues: Vec::new(),
            since: None,
        })
    };
}

/// What threads handed over, for the flusher's next tick.
static HANDED: Mutex<Vec<Arc<dyn DeferredWrites>>> = Mutex::new(Vec::new());

fn handed() -> std::sync::MutexGuard<'static, Vec<Arc<dyn DeferredWrites>>> {
    HANDED.lock().unwrap_or_else(|p| p.into_inner())
}

/// The transport's side: this thread left a frame unwritten in `queue`.
pub fn deferred(queue: &Arc<dyn DeferredWrites>) {
    DEFERRED.with(|d| {
        let mut d = d.borrow_mut();
        if !d.queues.iter().any(|q| Arc::ptr_eq(q, queue)) {
            d.queues.push(queue.clone());
        }
        d.since.get_or_insert_with(Instant::now);
    });
}

/// Writes out everything this thread left unwritten.
pub fn flush_deferred() {
    let queues = DEFERRED.with(|d| {
        let mut d = d.borrow_mut();
        d.since = None;
        std::mem::take(&mut d.queues)
    });
    for queue in queues {
        queue.flush();
    }
}

/// Writes out what this thread left unwritten if the oldest of it waited `bound` or more.
pub fn flush_deferred_older_than(bound: Duration) {
    let stale = DEFERRED.with(|d| d.borrow().since.is_some_and(|since| since.elapsed() >= bound));
    if stale {
        flush_deferred();
    }
}

/// Whether this thread has left anything unwritten.
pub fn has_deferred() -> bool {
    DEFERRED.with(|d| !d.borrow().queues.is_empty())
}

/// Hands what this thread left unwritten to the process's flusher too (see the module
/// docs); the thread still writes it out itself before it waits. The caller must then make
/// sure the flusher ticks, or call [`flush_handed_over`] itself; the fence orders this
/// hand-over before the caller's look at the flusher.
pub fn hand_over() {
    let any = DEFERRED.with(|d| {
        let d = d.borrow();
        if d.queues.is_empty() {
            return false;
        }
        let mut handed = handed();
        for queue in &d.queues {
            if !handed.iter().any(|q| Arc::ptr_eq(q, queue)) {
                handed.push(queue.clone());
            }
        }
        true
    });
    if any {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }
}

/// The flusher's tick: writes out everything handed over; answers whether there was any.
pub fn flush_handed_over() -> bool {
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    let queues = std::mem::take(&mut *handed());
    let any = !queues.is_empty();
    for queue in queues {
        queue.flush();
    }
    any
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Default)]
    struct Counter(AtomicUsize);

    impl DeferredWrites for Counter {
        fn flush(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_thread_flushes_each_queue_it_left_unwritten_once_and_only_its_own() {
        let (a, b) = (Arc::new(Counter::default()), Arc::new(Counter::default()));
        let (qa, qb): (Arc<dyn DeferredWrites>, Arc<dyn DeferredWrites>) = (a.clone(), b.clone());
        assert!(!has_deferred());
        deferred(&qa);
        deferred(&qa);
        deferred(&qb);
        assert!(has_deferred());
        // Another thread has nothing of this one's to flush.
        std::thread::spawn(|| {
            assert!(!has_deferred());
            flush_deferred();
        })
        .join()
        .unwrap();
        assert_eq!(a.0.load(Ordering::SeqCst), 0);
        // Not stale yet: kept.
        flush_deferred_older_than(Duration::from_secs(3600));
        assert!(has_deferred());
        flush_deferred_older_than(Duration::ZERO);
        assert!(!has_deferred());
        assert_eq!((a.0.load(Ordering::SeqCst), b.0.load(Ordering::SeqCst)), (1, 1));
        flush_deferred();
        assert_eq!(a.0.load(Ordering::SeqCst), 1, "nothing left to flush");
    }

    #[test]
    fn what_a_thread_hands_over_is_flushed_by_another_once() {
        let c = Arc::new(Counter::default());
        let q: Arc<dyn DeferredWrites> = c.clone();
        std::thread::spawn(move || {
            deferred(&q);
            hand_over();
            hand_over();
            assert!(has_deferred(), "the thread still writes it out before it waits");
        })
        .join()
        .unwrap();
        // The task pool's watcher of another test may flush it first: once, whoever does.
        flush_handed_over();
        assert_eq!(c.0.load(Ordering::SeqCst), 1);
        flush_handed_over();
        assert_eq!(c.0.load(Ordering::SeqCst), 1);
    }
}
