//! The log context: which cluster, node, actor and ids a record is about.
//!
//! Layer: logs, the bottom layer (under the runtime; see actors.md "Layers").
//!
//! Every actor cell owns one [`LogCtx`] and enters it (a thread-local, see [`LogScope`])
//! while its actor runs, so every `tracing` record emitted by a handler, timer or lifecycle
//! hook carries the actor's path, type, incarnation and the app/container/executor ids of its
//! subtree without the handler naming them. Code that logs about another actor (a
//! supervisor about its child, the fault injector about its victim) enters that actor's
//! context for the record. Work outside an actor (a task thread, a detached future) enters a
//! context explicitly or wraps the future in [`Instrumented`].

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// Where a record comes from. Fields that do not apply are `None`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LogCtx {
    pub cluster: Option<Arc<str>>,
    pub node: Option<Arc<str>>,
    pub actor: Option<Arc<str>>,
    pub actor_type: Option<&'static str>,
    pub incarnation: Option<u64>,
    pub app_id: Option<Arc<str>>,
    pub attempt: Option<u32>,
    pub container_id: Option<Arc<str>>,
    pub executor_id: Option<Arc<str>>,
    /// What the log writer derived from the fields above (their rendering, the cluster's
    /// sink and file), made at the context's first record and shared by every thread that
    /// writes in it. Set the fields before the context's first record: a clone starts
    /// without it.
    pub(crate) memo: super::writer::CtxMemo,
}

/// Ids an actor's subtree adds to its parent's context (a container sets `container_id`, an
/// NM sets `node`, ...). Unset fields inherit.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LogIds {
    pub node: Option<Arc<str>>,
    pub app_id: Option<Arc<str>>,
    pub attempt: Option<u32>,
    pub container_id: Option<Arc<str>>,
    pub executor_id: Option<Arc<str>>,
}

impl LogIds {
    pub fn node(mut self, node: &str) -> Self {
        self.node = Some(Arc::from(node));
        self
    }
    pub fn app(mut self, app_id: &str) -> Self {
        self.app_id = Some(Arc::from(app_id));
        self
    }
    pub fn attempt(mut self, attempt: u32) -> Self {
        self.attempt = Some(attempt);
        self
    }
    pub fn container(mut self, container_id: &str) -> Self {
        self.container_id = Some(Arc::from(container_id));
        self
    }
    pub fn executor(mut self, executor_id: &str) -> Self {
        self.executor_id = Some(Arc::from(executor_id));
        self
    }
    pub fn is_empty(&self) -> bool {
        *self == LogIds::default()
    }
    /// These ids, with those set in `other` in their place.
    pub fn with(self, other: &LogIds) -> LogIds {
        LogIds {
            node: other.node.clone().or(self.node),
            app_id: other.app_id.clone().or(self.app_id),
            attempt: other.attempt.or(self.attempt),
            container_id: other.container_id.clone().or(self.container_id),
            executor_id: other.executor_id.clone().or(self.executor_id),
        }
    }
}

impl LogCtx {
    /// The context of a cluster-level record (no actor).
    pub fn cluster(id: &str) -> LogCtx {
        LogCtx {
            cluster: Some(Arc::from(id)),
            ..LogCtx::default()
        }
    }

    /// This context for a child actor: same cluster and ids, plus the overrides in `ids`.
    pub fn for_actor(
        &self,
        path: Arc<str>,
        actor_type: &'static str,
        incarnation: u64,
        ids: &LogIds,
    ) -> LogCtx {
        LogCtx {
            cluster: self.cluster.clone(),
            node: ids.node.clone().or_else(|| self.node.clone()),
            actor: Some(path),
            actor_type: Some(actor_type),
            incarnation: Some(incarnation),
            app_id: ids.app_id.clone().or_else(|| self.app_id.clone()),
            attempt: ids.attempt.or(self.attempt),
            container_id: ids.container_id.clone().or_else(|| self.container_id.clone()),
            executor_id: ids.executor_id.clone().or_else(|| self.executor_id.clone()),
            memo: Default::default(),
        }
    }

    /// The ids this context passes down to children.
    pub fn ids(&self) -> LogIds {
        LogIds {
            node: self.node.clone(),
            app_id: self.app_id.clone(),
            attempt: self.attempt,
            container_id: self.container_id.clone(),
            executor_id: self.executor_id.clone(),
        }
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<LogCtx>>> = const { RefCell::new(None) };
}

/// The context records on this thread are about right now.
pub fn current() -> Option<Arc<LogCtx>> {
    CURRENT.try_with(|c| c.borrow().clone()).ok().flatten()
}

/// While alive, records on this thread carry the entered context; dropping restores the
/// previous one (scopes nest).
pub struct LogScope {
    prev: Option<Arc<LogCtx>>,
}

impl LogScope {
    pub fn enter(ctx: &Arc<LogCtx>) -> LogScope {
        let prev = CURRENT
            .try_with(|c| c.borrow_mut().replace(ctx.clone()))
            .ok()
            .flatten();
        LogScope { prev }
    }
}

impl Drop for LogScope {
    fn drop(&mut self) {
        let prev = self.prev.take();
        let _ = CURRENT.try_with(|c| {
            if let Ok(mut slot) = c.try_borrow_mut() {
                *slot = prev;
            }
        });
    }
}

/// Runs `f` with `ctx` entered.
pub fn in_scope<R>(ctx: &Arc<LogCtx>, f: impl FnOnce() -> R) -> R {
    let _scope = LogScope::enter(ctx);
    f()
}

/// A future that enters a log context each time it is polled.
pub struct Instrumented<F> {
    fut: Pin<Box<F>>,
    ctx: Arc<LogCtx>,
}

impl<F> Instrumented<F> {
    pub fn new(fut: F, ctx: Arc<LogCtx>) -> Self {
        Instrumented {
            fut: Box::pin(fut),
            ctx,
        }
    }
}

impl<F: Future> Future for Instrumented<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let _scope = LogScope::enter(&self.ctx);
        self.fut.as_mut().poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_set_in_the_other_take_the_place_of_these() {
        let container = LogIds::default().app("app_1").attempt(1).container("c_1");
        let process = LogIds::default().executor("3");
        assert_eq!(
            container.clone().with(&process),
            LogIds::default()
                .app("app_1")
                .attempt(1)
                .container("c_1")
                .executor("3")
        );
        assert_eq!(
            container.clone().with(&LogIds::default().attempt(2)).attempt,
            Some(2)
        );
        assert_eq!(container.clone().with(&LogIds::default()), container);
    }

    #[test]
    fn scopes_nest_and_restore() {
        let a = Arc::new(LogCtx::cluster("a"));
        let b = Arc::new(LogCtx::cluster("b"));
        assert!(current().is_none());
        {
            let _sa = LogScope::enter(&a);
            assert_eq!(current().unwrap().cluster.as_deref(), Some("a"));
            in_scope(&b, || {
                assert_eq!(current().unwrap().cluster.as_deref(), Some("b"))
            });
            assert_eq!(current().unwrap().cluster.as_deref(), Some("a"));
        }
        assert!(current().is_none());
    }

    #[test]
    fn children_inherit_ids() {
        let root = LogCtx::cluster("c").for_actor(
            Arc::from("/node"),
            "Supervisor",
            1,
            &LogIds::default().node("host0"),
        );
        let nm = root.for_actor(
            Arc::from("/node/nm-host1"),
            "NodeManager",
            1,
            &LogIds::default().node("host1"),
        );
        let container = nm.for_actor(
            Arc::from("/node/nm-host1/c1"),
            "Supervisor",
            2,
            &LogIds::default().app("application_1_0001").container("c1"),
        );
        assert_eq!(container.node.as_deref(), Some("host1"));
        assert_eq!(container.app_id.as_deref(), Some("application_1_0001"));
        assert_eq!(container.incarnation, Some(2));
        let am = container.for_actor(
            Arc::from("/node/nm-host1/c1/am"),
            "ApplicationMaster",
            1,
            &LogIds::default(),
        );
        assert_eq!(am.container_id.as_deref(), Some("c1"));
        assert_eq!(am.actor_type, Some("ApplicationMaster"));
    }
}
