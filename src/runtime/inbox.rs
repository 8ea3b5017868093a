//! A durable inbox: the queue of an actor whose messages must survive its restarts.
//!
//! An actor's mailbox dies with its incarnation, and a message sent while no incarnation is
//! registered is refused. Where losing one would corrupt what the actor keeps (a count of
//! running tasks that never comes down), senders post into the actor's [`Inbox`] instead:
//! it is held by the actor's supervisor beside its kept state, so what was posted while the
//! actor restarted, or was still queued when it failed, is there for the next incarnation.
//! Senders only post; the owner alone takes, in the order posted, and applies what it takes
//! to the state it alone keeps. The inbox holds messages, never the owner's state.
//!
//! Layer: runtime.

use std::collections::VecDeque;
use std::fmt;

use super::supervisor::Kept;

/// The durable inbox of one actor; clones post to the same queue.
pub struct Inbox<T>(Kept<VecDeque<T>>);

impl<T> Clone for Inbox<T> {
    fn clone(&self) -> Self {
        Inbox(self.0.clone())
    }
}

impl<T> Default for Inbox<T> {
    fn default() -> Self {
        Inbox(Kept::new(VecDeque::new()))
    }
}

impl<T> fmt::Debug for Inbox<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Inbox({} queued)", self.len())
    }
}

impl<T> Inbox<T> {
    pub fn new() -> Self {
        Inbox::default()
    }

    /// Posts `item` behind everything posted before it.
    pub fn post(&self, item: T) {
        self.0.lock().push_back(item);
    }

    /// Takes everything posted so far, oldest first (for the owner only).
    pub fn take(&self) -> VecDeque<T> {
        std::mem::take(&mut *self.0.lock())
    }

    /// How many items wait.
    pub fn len(&self) -> usize {
        self.0.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_takes_in_posting_order_what_any_clone_posted() {
        let inbox = Inbox::new();
        let sender = inbox.clone();
        sender.post(1);
        inbox.post(2);
        sender.post(3);
        assert_eq!(inbox.len(), 3);
        assert_eq!(Vec::from(inbox.take()), vec![1, 2, 3]);
        assert!(sender.is_empty());
    }
}
