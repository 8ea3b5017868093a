//! The name registry: actor path → the live incarnation, and death-watch subscriptions.
//!
//! Layer: runtime (above logs, under everything else).
//!
//! Peers never keep an actor's actix address; they keep its path and resolve it here on
//! each send (a dashmap read), so a message sent after a restart reaches the new
//! incarnation. Incarnation numbers are per path and only grow, across restarts and across
//! a dynamic child being removed and added again.

use std::fmt;
use std::sync::Arc;

use actix::Recipient;
use dashmap::DashMap;
use serde::{Deserialize, Serialize};

use super::cell::CellShared;
use super::exit::ExitReason;
use super::path::{ActorPath, PathGlob};
use super::protocol::{Protocol, Protocols};
use super::supervisor::ChildKind;
use super::watch::Terminated;

pub(crate) struct Entry {
    pub(crate) shared: Arc<CellShared>,
    /// The handles of the protocols the incarnation speaks.
    pub(crate) protocols: Protocols,
}

pub(crate) struct Watcher {
    pub(crate) target_incarnation: u64,
    pub(crate) watcher: ActorPath,
    pub(crate) watcher_incarnation: u64,
    pub(crate) recipient: Recipient<Terminated>,
}

/// Why a path could not be resolved to an actor speaking the expected protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupError {
    /// Nothing runs at the path.
    NotFound { path: ActorPath },
    /// The actor at the path (of type `actual`) does not speak the protocol `expected`.
    WrongType {
        path: ActorPath,
        actual: &'static str,
        expected: &'static str,
    },
    /// The path lies in another process and the protocol cannot cross one.
    LocalOnly { path: ActorPath, protocol: &'static str },
}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LookupError::NotFound { path } => write!(f, "no live actor at {path}"),
            LookupError::WrongType {
                path,
                actual,
                expected,
            } => {
                write!(
                    f,
                    "the actor at {path} is a {actual}, which does not speak {expected}"
                )
            }
            LookupError::LocalOnly { path, protocol } => write!(
                f,
                "{path} lives in another process and {protocol} is local only: its messages cannot cross a process"
            ),
        }
    }
}

impl std::error::Error for LookupError {}

/// What `sparkyard actors` shows for one live actor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActorInfo {
    pub path: ActorPath,
    pub actor_type: String,
    pub incarnation: u64,
    /// Restarts so far (incarnation − 1).
    pub restarts: u64,
    pub kind: ChildKind,
    pub node: Option<String>,
    /// `running`, or `stopping` while a stop or kill is under way.
    pub status: String,
}

/// One cluster's registry.
#[derive(Default)]
pub struct Registry {
    entries: DashMap<ActorPath, Entry>,
    incarnations: DashMap<ActorPath, u64>,
    watchers: DashMap<ActorPath, Vec<Watcher>>,
    /// The most recently forgotten paths (at most [`KEPT_FORGOTTEN`]), so that "has an
    /// actor ever run there" still holds for a while after its supervisor removed it (a
    /// planned kill waits for the next AM attempt to start where the last one ran).
    forgotten: std::sync::Mutex<std::collections::VecDeque<ActorPath>>,
}

/// The subtrees that are ending: every actor asked to stop (or already stopped), and every
/// supervisor an ending significant child will take down (`auto_shutdown`), so that an actor
/// doomed by an earlier kill is seen as ending at once, not only once its supervisor has
/// processed that kill.
pub(crate) struct Ending {
    roots: std::collections::HashSet<ActorPath>,
}

impl Ending {
    /// Whether the actor at `path` is ending, or one above it is.
    pub(crate) fn covers(&self, path: &ActorPath) -> bool {
        let mut at = Some(path.clone());
        while let Some(p) = at {
            if self.roots.contains(&p) {
                return true;
            }
            at = p.parent();
        }
        false
    }
}

/// How many forgotten paths the registry remembers (see `Registry::forgotten`).
const KEPT_FORGOTTEN: usize = 1024;

impl Registry {
    /// The next incarnation number of `path` (1 for its first start).
    pub(crate) fn next_incarnation(&self, path: &ActorPath) -> u64 {
        let mut n = self.incarnations.entry(path.clone()).or_insert(0);
        *n += 1;
        *n
    }

    /// Forgets the incarnation counts of `path` and of every path below it where nothing
    /// runs: its supervisor removed it for good, and a node that runs for days must not keep
    /// a count for every container it ever ran (a new child there starts again at 1).
    pub(crate) fn forget_subtree(&self, path: &ActorPath) {
        let mut gone = Vec::new();
        self.incarnations.retain(|p, _| {
            let forget = (p == path || path.is_ancestor_of(p)) && !self.entries.contains_key(p);
            if forget {
                gone.push(p.clone());
            }
            !forget
        });
        let mut forgotten = self.forgotten.lock().unwrap_or_else(|p| p.into_inner());
        forgotten.extend(gone);
        while forgotten.len() > KEPT_FORGOTTEN {
            forgotten.pop_front();
        }
    }

    /// How many paths have an incarnation count (live or not).
    pub fn known_paths(&self) -> usize {
        self.incarnations.len()
    }

    pub(crate) fn insert(&self, shared: Arc<CellShared>, protocols: Protocols) {
        self.entries
            .insert(shared.path.clone(), Entry { shared, protocols });
    }

    /// Removes the entry of `path` if it is still `incarnation` (a newer one stays).
    pub(crate) fn remove_if(&self, path: &ActorPath, incarnation: u64) -> bool {
        self.entries
            .remove_if(path, |_, e| e.shared.incarnation == incarnation)
            .is_some()
    }

    /// Runs `f` with the handle of protocol `P` of the actor at `path`.
    pub(crate) fn with_protocol<P: Protocol, R>(
        &self,
        path: &ActorPath,
        f: impl FnOnce(&P, &Arc<CellShared>) -> R,
    ) -> Result<R, LookupError> {
        let entry = self
            .entries
            .get(path)
            .ok_or_else(|| LookupError::NotFound { path: path.clone() })?;
        match entry.protocols.get::<P>() {
            Some(handle) => Ok(f(handle, &entry.shared)),
            None => Err(LookupError::WrongType {
                path: path.clone(),
                actual: entry.shared.actor_type,
                expected: P::NAME,
            }),
        }
    }

    /// Delivers a message from another process to the actor at `path` through the protocol
    /// it names; `Ok(None)` when that protocol is local only.
    pub(crate) fn dispatch(
        &self,
        path: &ActorPath,
        message: &super::remote::RemoteMessage,
    ) -> Result<Option<super::remote::ReplyFuture>, String> {
        let entry = self
            .entries
            .get(path)
            .ok_or_else(|| LookupError::NotFound { path: path.clone() }.to_string())?;
        entry.protocols.dispatch(message).ok_or_else(|| {
            format!(
                "the actor at {path} is a {}, which does not speak {}",
                entry.shared.actor_type, message.protocol
            )
        })
    }

    /// The live incarnation at `path`.
    pub(crate) fn shared(&self, path: &ActorPath) -> Option<Arc<CellShared>> {
        self.entries.get(path).map(|e| e.shared.clone())
    }

    /// Whether an actor is running at `path`.
    pub fn contains(&self, path: &ActorPath) -> bool {
        self.entries.contains_key(path)
    }

    /// The incarnation running at `path`, if any.
    pub fn incarnation(&self, path: &ActorPath) -> Option<u64> {
        self.entries.get(path).map(|e| e.shared.incarnation)
    }

    /// Every live actor whose path matches `glob`, sorted by path.
    pub(crate) fn matching(&self, glob: &PathGlob) -> Vec<Arc<CellShared>> {
        let mut found: Vec<Arc<CellShared>> = self
            .entries
            .iter()
            .filter(|e| glob.matches(e.key().as_str()))
            .map(|e| e.shared.clone())
            .collect();
        found.sort_by(|a, b| a.path.cmp(&b.path));
        found
    }

    /// Where actors are ending now, counting what an ending actor takes down with it (see
    /// [`Ending`]).
    pub(crate) fn ending(&self) -> Ending {
        let mut roots: std::collections::HashSet<ActorPath> = std::collections::HashSet::new();
        let mut enders = Vec::new();
        for e in self.entries.iter() {
            if e.shared.is_ending() || e.shared.doomed.load(std::sync::atomic::Ordering::Acquire) {
                roots.insert(e.key().clone());
            }
            if e.shared.ends_parent {
                enders.push(e.key().clone());
            }
        }
        let mut ending = Ending { roots };
        // An ending significant child ends its parent, which may be one in turn.
        let mut changed = true;
        while changed {
            changed = false;
            for p in &enders {
                if ending.covers(p) {
                    if let Some(parent) = p.parent() {
                        if !ending.covers(&parent) {
                            ending.roots.insert(parent);
                            changed = true;
                        }
                    }
                }
            }
        }
        ending
    }

    /// The paths matching `glob` that are between two incarnations: one ran there before,
    /// none runs now (or it is ending: a stop or kill is under way), and the actor above it
    /// runs, so its supervisor is about to restart it (or has just decided not to).
    pub(crate) fn between_incarnations(&self, glob: &PathGlob) -> Vec<ActorPath> {
        let ending = self.ending();
        let running = |path: &ActorPath| self.entries.contains_key(path) && !ending.covers(path);
        let mut found: Vec<ActorPath> = self
            .incarnations
            .iter()
            .map(|e| e.key().clone())
            .filter(|path| glob.matches(path.as_str()) && !running(path))
            .filter(|path| path.parent().is_some_and(|p| running(&p)))
            .collect();
        found.sort();
        found
    }

    /// Whether an actor has ever run at a path matching `glob`.
    pub(crate) fn ever_matched(&self, glob: &PathGlob) -> bool {
        self.incarnations.iter().any(|e| glob.matches(e.key().as_str()))
            || self
                .forgotten
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .any(|p| glob.matches(p.as_str()))
    }

    /// Every live actor strictly below `path`, deepest first.
    pub(crate) fn descendants(&self, path: &ActorPath) -> Vec<Arc<CellShared>> {
        let mut found: Vec<Arc<CellShared>> = self
            .entries
            .iter()
            .filter(|e| path.is_ancestor_of(e.key()))
            .map(|e| e.shared.clone())
            .collect();
        found.sort_by_key(|s| std::cmp::Reverse(s.path.depth()));
        found
    }

    /// Number of live actors.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// A snapshot of every live actor, sorted by path.
    pub fn snapshot(&self) -> Vec<ActorInfo> {
        let mut out: Vec<ActorInfo> = self
            .entries
            .iter()
            .map(|e| {
                let s = &e.shared;
                ActorInfo {
                    path: s.path.clone(),
                    actor_type: s.actor_type.to_string(),
                    incarnation: s.incarnation,
                    restarts: s.incarnation.saturating_sub(1),
                    kind: s.kind,
                    node: s.log.node.as_deref().map(str::to_string),
                    status: s.status().to_string(),
                }
            })
            .collect();
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }

    pub(crate) fn add_watcher(&self, target: &ActorPath, w: Watcher) {
        self.watchers.entry(target.clone()).or_default().push(w);
    }

    /// Removes and returns the watchers of `path`'s incarnation `incarnation`.
    pub(crate) fn take_watchers(&self, path: &ActorPath, incarnation: u64) -> Vec<Watcher> {
        let mut taken = Vec::new();
        if let Some(mut list) = self.watchers.get_mut(path) {
            let mut i = 0;
            while i < list.len() {
                if list[i].target_incarnation == incarnation {
                    taken.push(list.swap_remove(i));
                } else {
                    i += 1;
                }
            }
        }
        self.watchers.remove_if(path, |_, l| l.is_empty());
        taken
    }

    /// Delivers `Terminated` to the watchers of an incarnation that just ended.
    pub(crate) fn notify_watchers(&self, path: &ActorPath, incarnation: u64, reason: &ExitReason) {
        for w in self.take_watchers(path, incarnation) {
            // A watcher that has itself been replaced or stopped is not told.
            if self.incarnation(&w.watcher) == Some(w.watcher_incarnation) {
                w.recipient.do_send(Terminated {
                    path: path.clone(),
                    incarnation,
                    reason: reason.clone(),
                });
            }
        }
    }
}
