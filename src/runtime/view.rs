//! Published views: facts one actor publishes and others read. Runtime layer.
//!
//! An actor's state is its own: no other actor locks it. When others need a fact of it at
//! the moment they act (Spark reads a few such facts synchronously: the backend's active
//! executors, its task slots), the owner publishes a snapshot after each change and readers
//! take the latest one, as an Erlang process publishes into a protected ETS table: one
//! writer, any number of readers, and a reader never sees the owner's state itself.
//!
//! The [`Publisher`] goes to the owner's child spec (so each incarnation publishes into the
//! same view, and readers keep what the last one published while it restarts); readers get
//! a [`View`].

use std::fmt;
use std::sync::{Arc, RwLock};

/// The owner's side of a published view.
pub struct Publisher<T> {
    cell: Arc<RwLock<Arc<T>>>,
}

/// A reader's side: the latest snapshot.
pub struct View<T> {
    cell: Arc<RwLock<Arc<T>>>,
}

impl<T> Clone for Publisher<T> {
    fn clone(&self) -> Self {
        Publisher {
            cell: self.cell.clone(),
        }
    }
}

impl<T> Clone for View<T> {
    fn clone(&self) -> Self {
        View {
            cell: self.cell.clone(),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for View<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "View({:?})", self.get())
    }
}

impl<T: fmt::Debug> fmt::Debug for Publisher<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Publisher({:?})", self.view().get())
    }
}

impl<T> Publisher<T> {
    /// A view that starts with `initial`.
    pub fn new(initial: T) -> Self {
        Publisher {
            cell: Arc::new(RwLock::new(Arc::new(initial))),
        }
    }

    /// Replaces the snapshot readers see.
    pub fn publish(&self, value: T) {
        *self.cell.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(value);
    }

    /// A reader's side of this view.
    pub fn view(&self) -> View<T> {
        View {
            cell: self.cell.clone(),
        }
    }
}

impl<T> View<T> {
    /// The latest snapshot.
    pub fn get(&self) -> Arc<T> {
        self.cell.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_see_the_latest_snapshot_and_keep_an_old_one_they_hold() {
        let p = Publisher::new(vec![1]);
        let v = p.view();
        let held = v.get();
        p.publish(vec![1, 2]);
        assert_eq!(*v.get(), vec![1, 2]);
        assert_eq!(*held, vec![1], "a snapshot taken earlier does not change");
    }
}
