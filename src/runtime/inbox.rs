//! The durable inbox: an actor's queue that outlives its incarnations. Runtime layer.
//!
//! A mailbox dies with its incarnation (see [`super::cell`]); for most actors that is right,
//! since protocols reconcile. An event loop whose events must not be lost to a restart
//! (the DAGScheduler's, the listener bus's, the task-scheduler commands the DriverEndpoint
//! takes) keeps a [`DurableInbox`] instead: the actor's child spec holds it and hands it to
//! every incarnation, and whoever posts holds an [`InboxSender`], which can only push.
//! Only the owner takes from the queue, so the queue is the owner's alone; a post is a
//! message, queued while the owner restarts and handled by its next incarnation.
//!
//! A post pushes the item and, unless a wake is on its way, sends the owner one
//! [`WakeInbox`] message; the owner drains in batches ([`DurableInbox::drain`]) so other
//! messages get their turn, and asks for another round while items remain. A new
//! incarnation calls [`DurableInbox::restarted`] in `started()` and wakes itself: the wake
//! sent to the previous one died with its mailbox.
//!
//! A bounded inbox refuses a post when it is full ([`InboxSender::send`] answers the item
//! back), as Spark's AsyncEventQueue drops an event.
//!
//! The wake goes straight to the owner's mailbox through the registry, never through fault
//! injection's partitions: the inbox stands for a queue inside one process (Spark's event
//! loops), not a network link, and a dropped wake would leave the queue asleep for good.

use std::collections::VecDeque;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, MutexGuard};

use super::cluster::Cluster;
use super::path::ActorPath;
use super::protocol::Carries;

/// Wakes the owner of a `DurableInbox<T>` to drain it.
pub struct WakeInbox<T>(PhantomData<fn() -> T>);

impl<T> WakeInbox<T> {
    pub fn new() -> Self {
        WakeInbox(PhantomData)
    }
}

impl<T> Default for WakeInbox<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: 'static> actix::Message for WakeInbox<T> {
    type Result = ();
}

struct Queue<T> {
    items: VecDeque<T>,
    /// A wake is on its way (cleared when the owner finds the queue empty).
    wake_sent: bool,
}

struct Shared<T> {
    queue: Mutex<Queue<T>>,
    /// At most this many items wait (`usize::MAX`: unbounded).
    capacity: usize,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, Queue<T>> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The owner's side: kept by its child spec, handed to each incarnation.
pub struct DurableInbox<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for DurableInbox<T> {
    fn clone(&self) -> Self {
        DurableInbox {
            shared: self.shared.clone(),
        }
    }
}

impl<T> fmt::Debug for DurableInbox<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DurableInbox({} queued)", self.len())
    }
}

impl<T> Default for DurableInbox<T> {
    fn default() -> Self {
        Self::unbounded()
    }
}

impl<T> DurableInbox<T> {
    pub fn unbounded() -> Self {
        Self::bounded(usize::MAX)
    }

    /// An inbox that refuses posts while `capacity` items wait.
    pub fn bounded(capacity: usize) -> Self {
        DurableInbox {
            shared: Arc::new(Shared {
                queue: Mutex::new(Queue {
                    items: VecDeque::new(),
                    wake_sent: false,
                }),
                capacity: capacity.max(1),
            }),
        }
    }

    /// How many items wait.
    pub fn len(&self) -> usize {
        self.shared.lock().items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A sender whose posts wake the actor at `path`, which speaks `P` (a protocol that
    /// carries this inbox's [`WakeInbox`]).
    pub fn sender_to<P>(&self, cluster: &Cluster, path: &ActorPath) -> InboxSender<T>
    where
        P: Carries<WakeInbox<T>>,
        T: 'static,
    {
        let (cluster, path) = (cluster.clone(), path.clone());
        InboxSender {
            shared: self.shared.clone(),
            wake: Arc::new(move || {
                cluster
                    .registry()
                    .with_protocol::<P, _>(&path, |handle, _| {
                        handle.recipient().do_send(WakeInbox::<T>::new())
                    })
                    .is_ok()
            }),
        }
    }

    /// A sender for an owner that takes its items on its own schedule (a timer's round)
    /// instead of being woken: its posts send no wake.
    pub fn polled_sender(&self) -> InboxSender<T> {
        InboxSender {
            shared: self.shared.clone(),
            wake: Arc::new(|| true),
        }
    }

    /// Everything waiting, oldest first (an owner that polls takes it all at once).
    pub fn take_all(&self) -> VecDeque<T> {
        let mut q = self.shared.lock();
        q.wake_sent = false;
        std::mem::take(&mut q.items)
    }

    /// For a new incarnation's `started()`: the wake sent to the previous one died with its
    /// mailbox, so the caller must wake itself now (`ctx.notify(WakeInbox::new())`); until
    /// that wake is handled posts send none. Answers how many items wait.
    pub fn restarted(&self) -> usize {
        let mut q = self.shared.lock();
        q.wake_sent = true;
        q.items.len()
    }

    /// The owner queues an item behind those waiting (as a post would); answers whether the
    /// owner must wake itself (no wake is on its way).
    #[must_use]
    pub fn push_own(&self, item: T) -> bool {
        let mut q = self.shared.lock();
        q.items.push_back(item);
        !std::mem::replace(&mut q.wake_sent, true)
    }

    /// The next item; `None` when the queue is empty, and then the next post wakes the owner
    /// again.
    pub fn pop(&self) -> Option<T> {
        let mut q = self.shared.lock();
        let item = q.items.pop_front();
        if item.is_none() {
            q.wake_sent = false;
        }
        item
    }

    /// Hands up to `batch` items to `handle`, in order, one at a time (the queue is not
    /// locked while an item is handled, so the handler may post to it). Answers whether
    /// items remain: then the owner wakes itself for another round.
    pub fn drain(&self, batch: usize, mut handle: impl FnMut(T)) -> bool {
        for _ in 0..batch {
            match self.pop() {
                Some(item) => handle(item),
                None => return false,
            }
        }
        true
    }
}

/// A poster's side: it can only push.
pub struct InboxSender<T> {
    shared: Arc<Shared<T>>,
    wake: Arc<dyn Fn() -> bool + Send + Sync>,
}

impl<T> Clone for InboxSender<T> {
    fn clone(&self) -> Self {
        InboxSender {
            shared: self.shared.clone(),
            wake: self.wake.clone(),
        }
    }
}

impl<T> fmt::Debug for InboxSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "InboxSender({} queued)", self.shared.lock().items.len())
    }
}

impl<T> InboxSender<T> {
    /// Posts `item`; wakes the owner unless a wake is on its way. If the owner is not
    /// running, its next incarnation drains the queue when it starts. A full inbox refuses
    /// the item and answers it back.
    pub fn send(&self, item: T) -> Result<(), T> {
        let wake = {
            let mut q = self.shared.lock();
            if q.items.len() >= self.shared.capacity {
                return Err(item);
            }
            q.items.push_back(item);
            !std::mem::replace(&mut q.wake_sent, true)
        };
        if wake && !(self.wake)() {
            // Not running: no wake is on its way after all.
            self.shared.lock().wake_sent = false;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use actix::{Actor, Context, Handler};

    use crate::runtime::PartitionMode;

    /// An owner that counts what it takes.
    struct Owner {
        inbox: DurableInbox<u32>,
        taken: Arc<AtomicUsize>,
    }

    impl Actor for Owner {
        type Context = Context<Self>;

        fn started(&mut self, ctx: &mut Context<Self>) {
            use actix::AsyncContext;
            self.inbox.restarted();
            ctx.notify(WakeInbox::new());
        }
    }

    type OwnerWake = WakeInbox<u32>;

    crate::protocol! {
        OwnerProtocol { OwnerWake }
    }

    crate::speaks!(Owner: OwnerProtocol);

    impl Handler<WakeInbox<u32>> for Owner {
        type Result = ();

        fn handle(&mut self, _: WakeInbox<u32>, _: &mut Context<Self>) {
            let taken = self.taken.clone();
            self.inbox.drain(usize::MAX, |_| {
                taken.fetch_add(1, Ordering::SeqCst);
            });
        }
    }

    #[actix_rt::test]
    async fn a_partition_does_not_keep_a_post_from_its_owner() {
        let cluster = Cluster::for_unit_test();
        let inbox = DurableInbox::unbounded();
        let taken = Arc::new(AtomicUsize::new(0));
        let (i, t) = (inbox.clone(), taken.clone());
        let path = cluster
            .start_root_worker("owner", move |_, _| Owner { inbox: i, taken: t })
            .unwrap();
        let tx = inbox.sender_to::<OwnerProtocol>(&cluster, &path);
        let until = |n: usize, what: &'static str| {
            let taken = taken.clone();
            async move {
                let deadline = std::time::Instant::now() + Duration::from_secs(5);
                while taken.load(Ordering::SeqCst) < n {
                    assert!(std::time::Instant::now() < deadline, "{what}");
                    crate::runtime::clock::settle().await;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        };
        // The owner runs and has emptied its inbox: the next post must wake it.
        tx.send(0).unwrap();
        until(1, "the owner took the first post").await;
        cluster
            .partition("/owner", PartitionMode::Drop, Duration::from_secs(60), "test")
            .unwrap();
        tx.send(1).unwrap();
        tx.send(2).unwrap();
        until(3, "the owner took the posts made during the partition").await;
    }

    fn sender(inbox: &DurableInbox<u32>, wakes: &Arc<AtomicUsize>, running: bool) -> InboxSender<u32> {
        let w = wakes.clone();
        InboxSender {
            shared: inbox.shared.clone(),
            wake: Arc::new(move || {
                w.fetch_add(1, Ordering::SeqCst);
                running
            }),
        }
    }

    #[test]
    fn one_wake_per_round_and_items_in_order() {
        let inbox = DurableInbox::unbounded();
        let wakes = Arc::new(AtomicUsize::new(0));
        let tx = sender(&inbox, &wakes, true);
        for i in 0..5 {
            tx.send(i).unwrap();
        }
        assert_eq!(wakes.load(Ordering::SeqCst), 1, "one wake for the round");
        let mut got = Vec::new();
        assert!(inbox.drain(3, |i| got.push(i)), "more remain after a batch");
        assert!(!inbox.drain(10, |i| got.push(i)));
        assert_eq!(got, vec![0, 1, 2, 3, 4]);
        tx.send(9).unwrap();
        assert_eq!(wakes.load(Ordering::SeqCst), 2, "an emptied queue wakes again");
    }

    #[test]
    fn posts_while_the_owner_is_down_wait_for_its_next_incarnation() {
        let inbox = DurableInbox::unbounded();
        let wakes = Arc::new(AtomicUsize::new(0));
        let down = sender(&inbox, &wakes, false);
        down.send(1).unwrap();
        down.send(2).unwrap();
        assert_eq!(
            wakes.load(Ordering::SeqCst),
            2,
            "each post tries while nobody runs"
        );
        assert_eq!(inbox.restarted(), 2);
        let up = sender(&inbox, &wakes, true);
        up.send(3).unwrap();
        assert_eq!(wakes.load(Ordering::SeqCst), 2, "the new incarnation woke itself");
        let mut got = Vec::new();
        assert!(!inbox.drain(10, |i| got.push(i)));
        assert_eq!(got, vec![1, 2, 3]);
    }

    #[test]
    fn the_owner_queues_behind_posts_and_a_full_inbox_refuses() {
        let inbox = DurableInbox::bounded(2);
        let wakes = Arc::new(AtomicUsize::new(0));
        let tx = sender(&inbox, &wakes, true);
        tx.send(1).unwrap();
        assert!(!inbox.push_own(2), "a wake is already on its way");
        assert_eq!(tx.send(3), Err(3));
        assert_eq!(inbox.pop(), Some(1));
        assert_eq!(inbox.pop(), Some(2));
        assert_eq!(inbox.pop(), None);
        assert!(inbox.push_own(4), "the owner must wake itself");
    }
}
