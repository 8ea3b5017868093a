//! Endpoint references: how actors address each other. Runtime layer: it resolves paths
//! through the registry and routes through fault injection, both the runtime's; `rpc`
//! re-exports it beside the TCP transport.
//!
//! An [`EndpointRef<P>`] is typed by the [`Protocol`] `P` its target speaks, never by the
//! target's actor type: a sender imports the conversation's messages, not the receiver. It
//! names its target by path and resolves it through the cluster's registry on every message, so a peer never holds a stale actix address and reaches a
//! restarted actor as soon as its new incarnation is registered. Every message passes the
//! cluster's fault state on the way, so a partition can drop or delay the messages to and
//! from matching actors, and (later) a remote ref will carry the same typed messages over
//! TCP. At DEBUG level each delivery is logged as a record about the receiving actor with
//! its `msg_type`.
//!
//! - [`EndpointRef::tell`] is Spark's `send`: fire and forget, never blocks (the mailbox is
//!   unbounded for it, as Spark's inboxes are).
//! - [`EndpointRef::ask`] is Spark's `ask`: a reply or an error within a time limit on the
//!   cluster clock; the bounded mailbox makes a flood of asks wait.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use actix::{MailboxError, Message};

use super::cell::CellShared;
use super::cluster::Cluster;
use super::fault::Route;
use super::path::{short_type_name, ActorPath};
use super::protocol::{Carries, Protocol};
use super::registry::LookupError;
use super::remote::{RemoteLink, RemoteMessage};
use crate::logs::ctx::in_scope;

/// Why an ask got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskError {
    /// Nothing of the right type runs at the path.
    Lookup(LookupError),
    /// No reply within the time limit (a dropped message, a slow or partitioned actor).
    Timeout {
        path: ActorPath,
        msg_type: &'static str,
        after: Duration,
    },
    /// The actor ended before it answered.
    Died { path: ActorPath, msg_type: &'static str },
    /// The target lives in another process, and the message or its answer did not make
    /// the trip (the link, the other process or the decoding said why).
    Remote {
        path: ActorPath,
        msg_type: &'static str,
        reason: String,
    },
}

impl fmt::Display for AskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AskError::Lookup(e) => write!(f, "{e}"),
            AskError::Timeout {
                path,
                msg_type,
                after,
            } => write!(
                f,
                "cannot receive any reply from {path} to {msg_type} in {}",
                humantime::format_duration(*after)
            ),
            AskError::Died { path, msg_type } => write!(f, "{path} ended before it answered {msg_type}"),
            AskError::Remote {
                path,
                msg_type,
                reason,
            } => write!(
                f,
                "{path} (in another process) did not answer {msg_type}: {reason}"
            ),
        }
    }
}

impl std::error::Error for AskError {}

/// A reference to the actor at a path that speaks protocol `P`; cheap to clone.
pub struct EndpointRef<P> {
    cluster: Cluster,
    to: ActorPath,
    from: Option<ActorPath>,
    _protocol: PhantomData<fn() -> P>,
}

impl<P> Clone for EndpointRef<P> {
    fn clone(&self) -> Self {
        EndpointRef {
            cluster: self.cluster.clone(),
            to: self.to.clone(),
            from: self.from.clone(),
            _protocol: PhantomData,
        }
    }
}

impl<P> fmt::Debug for EndpointRef<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "EndpointRef({} -> {})",
            self.from.as_ref().map(ActorPath::as_str).unwrap_or("-"),
            self.to
        )
    }
}

fn trace_delivery<M>(target: &Arc<CellShared>, from: Option<&ActorPath>, outcome: &'static str) {
    if tracing::level_enabled!(tracing::Level::DEBUG) {
        in_scope(target.log_ctx(), || {
            tracing::debug!(
                msg_type = short_type_name::<M>(),
                from = from.map(ActorPath::as_str).unwrap_or("-"),
                delivery = outcome,
                "{} {}",
                short_type_name::<M>(),
                outcome
            )
        });
    }
}

impl<P: Protocol> EndpointRef<P> {
    pub(crate) fn new(cluster: Cluster, to: ActorPath, from: Option<ActorPath>) -> Self {
        EndpointRef {
            cluster,
            to,
            from,
            _protocol: PhantomData,
        }
    }

    /// The same target, addressed in another protocol it speaks (a ResourceManager's client
    /// protocol and its ApplicationMasterProtocol, an executor's cluster and shuffle
    /// protocols). Whether it speaks `Q` is checked at each message, as the path is.
    pub fn speaking<Q: Protocol>(&self) -> EndpointRef<Q> {
        EndpointRef::new(self.cluster.clone(), self.to.clone(), self.from.clone())
    }

    /// The target's path.
    pub fn path(&self) -> &ActorPath {
        &self.to
    }

    /// Whether an actor runs at the path now.
    pub fn is_alive(&self) -> bool {
        self.cluster.registry().contains(&self.to)
    }

    /// The target's running incarnation.
    pub fn incarnation(&self) -> Option<u64> {
        self.cluster.registry().incarnation(&self.to)
    }

    /// `body` (an encoded `M`) addressed to the target, for a link to another process.
    fn remote_message<M>(&self, body: Vec<u8>, ask: Option<Duration>) -> RemoteMessage
    where
        P: Carries<M>,
        M: Message + Send + 'static,
        M::Result: Send,
    {
        RemoteMessage {
            to: self.to.as_str().to_string(),
            from: self.from.as_ref().map(|p| p.as_str().to_string()),
            protocol: P::NAME.to_string(),
            message: P::message_name().to_string(),
            body,
            ask,
            origin: self.cluster.origin().cloned(),
            hops: 0,
        }
    }

    /// [`tell`](Self::tell) to an actor of another process: encoded and sent over the
    /// route's link; a failure on the way is logged, as a lost message on a network is not
    /// seen by its sender.
    fn tell_remote<M>(&self, link: Arc<dyn RemoteLink>, msg: M, defer: bool) -> Result<(), LookupError>
    where
        P: Carries<M>,
        M: Message + Send + 'static,
        M::Result: Send,
    {
        let body = match P::encode(&msg) {
            None => {
                return Err(LookupError::LocalOnly {
                    path: self.to.clone(),
                    protocol: P::NAME,
                })
            }
            Some(Err(e)) => {
                tracing::warn!(
                    to = self.to.as_str(),
                    "cannot send {} to {}: {e}",
                    short_type_name::<M>(),
                    self.to
                );
                return Ok(());
            }
            Some(Ok(body)) => body,
        };
        let message = self.remote_message::<M>(body, None);
        let told = if defer {
            link.tell_deferred(message)
        } else {
            link.tell(message)
        };
        if let Err(e) = told {
            tracing::warn!(
                to = self.to.as_str(),
                peer = link.peer(),
                "{} to {} over {} was not delivered: {e}",
                short_type_name::<M>(),
                self.to,
                link.peer()
            );
        }
        Ok(())
    }

    fn route(&self) -> Route {
        self.cluster
            .faults()
            .route(self.cluster.clock(), self.from.as_ref(), &self.to)
    }

    /// Sends `msg` without waiting. An error means nothing speaking `P` runs at the path now;
    /// a message caught by a partition is lost (or delayed) silently, as on a network.
    pub fn tell<M>(&self, msg: M) -> Result<(), LookupError>
    where
        P: Carries<M>,
        M: Message + Send + 'static,
        M::Result: Send,
    {
        self.tell_with(msg, false)
    }

    /// [`tell`](Self::tell), but a message to another process may be left unwritten until
    /// this thread sends again on that link or flushes (see [`super::deferred`]); one to an
    /// actor of this process is delivered at once.
    pub fn tell_deferred<M>(&self, msg: M) -> Result<(), LookupError>
    where
        P: Carries<M>,
        M: Message + Send + 'static,
        M::Result: Send,
    {
        self.tell_with(msg, true)
    }

    fn tell_with<M>(&self, msg: M, defer: bool) -> Result<(), LookupError>
    where
        P: Carries<M>,
        M: Message + Send + 'static,
        M::Result: Send,
    {
        match self.route() {
            Route::Deliver => match self.cluster.remote_link(&self.to) {
                Some(link) => self.tell_remote(link, msg, defer),
                None => self
                    .cluster
                    .registry()
                    .with_protocol::<P, _>(&self.to, |handle, shared| {
                        trace_delivery::<M>(shared, self.from.as_ref(), "delivered");
                        handle.recipient().do_send(msg)
                    }),
            },
            Route::Drop => {
                let _ = self
                    .cluster
                    .registry()
                    .with_protocol::<P, _>(&self.to, |_, shared| {
                        trace_delivery::<M>(shared, self.from.as_ref(), "dropped by a partition")
                    });
                Ok(())
            }
            Route::Delay(delay) => {
                let this = self.clone();
                let deadline = self.cluster.clock().now().saturating_add(delay);
                self.cluster.spawn_task(async move {
                    this.cluster.clock().sleep_until(deadline).await;
                    if let Some(link) = this.cluster.remote_link(&this.to) {
                        let _ = this.tell_remote(link, msg, false);
                        return;
                    }
                    let _ = this
                        .cluster
                        .registry()
                        .with_protocol::<P, _>(&this.to, |handle, shared| {
                            trace_delivery::<M>(
                                shared,
                                this.from.as_ref(),
                                "delivered late (partition delay)",
                            );
                            handle.recipient().do_send(msg)
                        });
                });
                Ok(())
            }
        }
    }

    /// [`ask`](Self::ask), sent again while the target cannot be reached because it is
    /// restarting (the ask died with its incarnation's mailbox, or nothing runs at the path
    /// yet): at most `tries` tries, `pause` apart on the cluster clock. A time-out or an
    /// answer ends it; the first retry is logged.
    pub async fn ask_while_restarting<M>(
        &self,
        msg: M,
        timeout: Duration,
        tries: u32,
        pause: Duration,
    ) -> Result<M::Result, AskError>
    where
        P: Carries<M>,
        M: Message + Clone + Send + 'static,
        M::Result: Send,
    {
        let mut tried = 0;
        loop {
            tried += 1;
            match self.ask(msg.clone(), timeout).await {
                Err(e @ (AskError::Died { .. } | AskError::Lookup(_))) if tried < tries => {
                    if tried == 1 {
                        tracing::warn!("{} cannot be reached ({e}); asking again", self.to);
                    }
                    self.cluster.clock().sleep(pause).await;
                }
                other => return other,
            }
        }
    }

    /// Sends `msg` and waits for the reply, at most `timeout` on the cluster clock.
    pub fn ask<M>(
        &self,
        msg: M,
        timeout: Duration,
    ) -> impl std::future::Future<Output = Result<M::Result, AskError>> + 'static
    where
        P: Carries<M>,
        M: Message + Send + 'static,
        M::Result: Send,
    {
        let this = self.clone();
        // The time limit counts from the call, as tokio's does, not from the first poll.
        let sent_at = self.cluster.clock().now();
        let deadline = sent_at.saturating_add(timeout);
        async move {
            let clock = this.cluster.clock().clone();
            let msg_type = short_type_name::<M>();
            let timed_out = || AskError::Timeout {
                path: this.to.clone(),
                msg_type,
                after: timeout,
            };
            let delay = match this.route() {
                Route::Drop => {
                    let _ = this
                        .cluster
                        .registry()
                        .with_protocol::<P, _>(&this.to, |_, shared| {
                            trace_delivery::<M>(shared, this.from.as_ref(), "dropped by a partition")
                        });
                    clock.sleep_until(deadline).await;
                    return Err(timed_out());
                }
                Route::Delay(d) => {
                    clock.sleep_until(sent_at.saturating_add(d)).await;
                    Some(d)
                }
                Route::Deliver => None,
            };
            if let Some(link) = this.cluster.remote_link(&this.to) {
                let body = match P::encode(&msg) {
                    None => {
                        return Err(AskError::Lookup(LookupError::LocalOnly {
                            path: this.to.clone(),
                            protocol: P::NAME,
                        }))
                    }
                    Some(body) => body,
                };
                let remote = |reason: String| AskError::Remote {
                    path: this.to.clone(),
                    msg_type,
                    reason,
                };
                let left = deadline.saturating_sub(clock.now());
                let sent = link.send(this.remote_message::<M>(body.map_err(remote)?, Some(left)));
                return match clock.timeout_at(deadline, sent).await {
                    Ok(Ok(bytes)) => P::decode_reply(&bytes).map_err(remote),
                    Ok(Err(reason)) => Err(remote(reason)),
                    Err(_) => Err(timed_out()),
                };
            }
            let request = this
                .cluster
                .registry()
                .with_protocol::<P, _>(&this.to, |handle, shared| {
                    trace_delivery::<M>(shared, this.from.as_ref(), "delivered (ask)");
                    handle.recipient().send(msg)
                })
                .map_err(AskError::Lookup)?;
            let reply = clock.timeout_at(deadline, request).await;
            if let Some(d) = delay {
                clock.sleep(d).await;
            }
            match reply {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(MailboxError::Closed)) => Err(AskError::Died {
                    path: this.to.clone(),
                    msg_type,
                }),
                Ok(Err(MailboxError::Timeout)) | Err(_) => Err(timed_out()),
            }
        }
    }
}
