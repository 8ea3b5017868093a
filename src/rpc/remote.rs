//! Actors across processes: the TCP link behind a cluster's routes, and the server that
//! delivers what other processes send to this one's actors. Rpc layer: it carries the
//! runtime's [`RemoteMessage`]s over TCP and hands each to the runtime ([`deliver`]); it knows
//! no protocol of its own beyond that envelope.
//!
//! A process that hosts actors others address serves them ([`serve_actors`], or
//! [`serve_cluster`] which also binds and says what the process serves); a process that
//! addresses them adds a route (`Cluster::add_route(prefix, TcpLink::new(addr))`, or learns it
//! from the messages it receives), and its `EndpointRef`s under that prefix then reach them by
//! the same `tell` and `ask`.
//!
//! # Wire format
//!
//! A connection opens with a greeting from each side (the transport's four magic bytes and
//! [`VERSION`]) and the [`auth`] handshake (which, under `spark.authenticate`, proves the
//! realm's secret and may seal the rest of the stream); then the client sends one
//! [`Frame::Hello`] with the process it speaks for.
//! After that the client sends [`Frame::Tell`]s and [`Frame::Ask`]s and the server answers
//! each ask with a [`Frame::Reply`] of the same id, in any order; a tell gets no answer. Every
//! frame is a `u32` big-endian length and an rmp-serde body. One connection per link carries
//! everything, so the messages of one sender to one process arrive in the order they were
//! sent (Spark's ordering between two endpoints), and many asks share it at once.
//!
//! A link that breaks (the other process ended, the network failed) fails every ask in flight
//! at once with the reason, which is how a remote death watch learns that a process is gone;
//! the next message connects again.
//!
//! Each side writes through an [`Outbox`]: a sender encodes its frame into the connection's
//! pending bytes, and the frames that gather while one write is under way go out together in
//! the next (a sender on no runtime thread, an executor's task thread, writes itself rather
//! than waking the runtime); each side reads as many frames as have arrived at every read.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures_util::FutureExt;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};

use super::auth::{self, Keyring, Principal, Sealer, SecureRead, SecureWrite};
use super::outbox::{Outbox, PushError};
use super::tcp::{encode_frame, FrameReader, ServerLimits, MAGIC, MAX_FRAME_BYTES};
use crate::runtime::deferred::{deferred, DeferredWrites};
use crate::runtime::remote::{deliver, Origin, RemoteLink, RemoteMessage, RemoteReply, ReplyFuture};
use crate::runtime::{ActorPath, Cluster};

/// The version of this wire format; both sides must send the same one.
pub const VERSION: u8 = 3;

/// How long a link waits to connect and greet.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The largest frame either side sends or accepts (Spark's `spark.rpc.message.maxSize` is
/// 128 MiB; a shuffle block travels in one frame).
pub const MAX_FRAME: usize = 128 << 20;

/// The frames of an actor connection as they arrive, decrypted when sealed.
type Frames = FrameReader<SecureRead<BufReader<OwnedReadHalf>>>;

/// One frame on an actor connection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Frame {
    /// Each side's first frame: the process it speaks for (its root and address), which the
    /// other side learns as a route, so that it can reach that process's actors at once (a
    /// client that connected to one path of a process learns the whole process).
    Hello { origin: Option<Origin> },
    /// A message that gets no answer.
    Tell(RemoteMessage),
    /// A message whose answer comes back as the [`Frame::Reply`] with the same id.
    Ask { id: u64, message: RemoteMessage },
    /// The answer to the ask `id`.
    Reply { id: u64, reply: RemoteReply },
}

// ------------------------------------------------------------------ security

/// What an endpoint asks of the processes that connect to it, and what its own links prove.
#[derive(Clone)]
pub struct Security {
    /// The secrets this process holds ([`auth`]): an open keyring when authentication is off.
    pub keyring: Arc<Keyring>,
    /// What a connection that proved an application's secret (one of its containers) may
    /// send here: `None` lets it send anything. A node's daemons set it, so that a container
    /// reaches its own application's actors and the ResourceManager's and NodeManagers'
    /// calls for its application, and nothing else.
    pub gate: Option<Gate>,
}

/// Answers whether application `app`'s connection may deliver a message; the error is the
/// one line the refusal's record and the sender's error carry.
pub type Gate = Arc<dyn Fn(&str, &RemoteMessage) -> Result<(), String> + Send + Sync>;

impl Security {
    /// No authentication: anyone who reaches the port may send anything.
    pub fn open() -> Security {
        Security {
            keyring: Keyring::open(),
            gate: None,
        }
    }

    /// Whether `principal` may deliver `message` here (including the route its origin
    /// teaches).
    fn admits(&self, principal: &Principal, message: &RemoteMessage) -> Result<(), String> {
        let (Principal::Application(app), Some(gate)) = (principal, &self.gate) else {
            return Ok(());
        };
        if let Some(origin) = &message.origin {
            self.speaks_for(app, origin)?;
        }
        gate(app, message)
    }

    /// Whether application `app`'s connection may teach a route to `origin` here: on a gated
    /// endpoint (a node's daemons), only to its own containers, so it cannot pose as a daemon
    /// or another application. (Within an application its processes trust each other; the
    /// node, which reaches a container with the application's secret, speaks for `/node`.)
    fn speaks_for(&self, app: &str, origin: &Origin) -> Result<(), String> {
        if self.gate.is_none() || self.keyring.root_belongs(app, &origin.root) {
            return Ok(());
        }
        Err(format!(
            "application {app} cannot speak for {} (not one of its containers)",
            origin.root
        ))
    }
}

// ------------------------------------------------------------------ server

/// Binds `bind` (port 0 for any free one), says that `cluster` serves the actors under `root`
/// at the bound address, and serves them on the current arbiter until the answer's sender
/// flips or is dropped. Answers the bound address and that stop switch.
pub async fn serve_cluster(
    cluster: &Cluster,
    root: ActorPath,
    bind: &str,
    limits: ServerLimits,
) -> Result<(String, watch::Sender<bool>), String> {
    serve_cluster_secured(cluster, root, bind, limits, Security::open()).await
}

/// [`serve_cluster`] under `security`: every connection, in and out, authenticates with its
/// keyring.
pub async fn serve_cluster_secured(
    cluster: &Cluster,
    root: ActorPath,
    bind: &str,
    limits: ServerLimits,
    security: Security,
) -> Result<(String, watch::Sender<bool>), String> {
    let listener = TcpListener::bind(bind)
        .await
        .map_err(|e| format!("cannot listen for actor messages on {bind}: {e}"))?;
    let addr = listener
        .local_addr()
        .map(|a| a.to_string())
        .map_err(|e| format!("cannot read the address bound for {bind}: {e}"))?;
    let origin = Origin {
        root: root.as_str().to_string(),
        addr: addr.clone(),
    };
    let learner: Learn = {
        let (learn, forget) = (cluster.learner(), cluster.forgetter());
        Arc::new(move |event: LinkEvent<'_>| match event {
            LinkEvent::Reached(origin) => learn(origin),
            LinkEvent::Unreachable(addr) => forget(addr),
        })
    };
    let keyring = security.keyring.clone();
    cluster.serve_at(
        root,
        &addr,
        Arc::new(move |peer: &str, serving: &ActorPath| {
            TcpLink::secured(
                peer,
                Some(origin.clone()),
                Some(learner.clone()),
                keyring.clone(),
                Some(serving.as_str().to_string()),
            ) as Arc<dyn RemoteLink>
        }),
    )?;
    let (stop, stopped) = watch::channel(false);
    // Its records (a refused connection) go where the process's own go.
    let ctx = cluster.log_ctx().clone();
    actix::spawn(crate::logs::ctx::Instrumented::new(
        serve_actors_secured(cluster.clone(), listener, stopped, limits, security),
        ctx,
    ));
    Ok((addr, stop))
}

/// Serves `cluster`'s actors to other processes on `listener` until `stop` flips: every
/// message is delivered to the actor its path names, through the protocol it names. Runs
/// on the current thread (inside the actix system). At most `limits.max_connections`
/// connections; a frame above `limits.max_frame` (or [`MAX_FRAME`]) closes its connection.
pub async fn serve_actors(
    cluster: Cluster,
    listener: TcpListener,
    stop: watch::Receiver<bool>,
    limits: ServerLimits,
) {
    serve_actors_secured(cluster, listener, stop, limits, Security::open()).await
}

/// [`serve_actors`] under `security`.
pub async fn serve_actors_secured(
    cluster: Cluster,
    listener: TcpListener,
    mut stop: watch::Receiver<bool>,
    limits: ServerLimits,
    security: Security,
) {
    let security = Arc::new(security);
    let open = std::rc::Rc::new(std::cell::Cell::new(0usize));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            biased;
            _ = stop.wait_for(|stopped| *stopped) => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    if open.get() >= limits.max_connections {
                        tracing::warn!(
                            event = "connection_refused",
                            %peer,
                            max_connections = limits.max_connections,
                            "refusing an actor connection: {} are open",
                            limits.max_connections
                        );
                        continue;
                    }
                    open.set(open.get() + 1);
                    let (cluster, open, max) = (cluster.clone(), open.clone(), limits.max_frame.min(MAX_FRAME));
                    let security = security.clone();
                    // Its records (a refused handshake) go where the process's own go.
                    let ctx = cluster.log_ctx().clone();
                    connections.spawn_local(crate::logs::ctx::Instrumented::new(async move {
                        if let Err(reason) = serve_connection(&cluster, stream, max, &security).await {
                            tracing::warn!(event = "connection_closed", %peer, %reason, "closing an actor connection from {peer}: {reason}");
                        }
                        open.set(open.get() - 1);
                    }, ctx));
                }
                Err(e) => {
                    tracing::warn!(event = "accept_failed", error = %e, "cannot accept an actor connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
        }
    }
    connections.shutdown().await;
}

/// Greets, reads the client's hello, then delivers its frames until it closes.
async fn serve_connection(
    cluster: &Cluster,
    stream: TcpStream,
    max_frame: usize,
    security: &Security,
) -> Result<(), String> {
    let _ = stream.set_nodelay(true);
    let (read, write) = stream.into_split();
    let mut read = BufReader::new(read);
    let mut write = BufWriter::new(write);
    greet(&mut read, &mut write).await?;
    let session = tokio::time::timeout(
        CONNECT_TIMEOUT,
        auth::accept(&mut read, &mut write, &security.keyring),
    )
    .await
    .map_err(|_| "no handshake within the connect time-out".to_string())?
    .map_err(|refusal| refusal.0)?;
    let principal = session.principal;
    let (seal, open) = match session.ciphers {
        Some(c) => (Some(c.seal), Some(c.open)),
        None => (None, None),
    };
    let mut frames: Frames = FrameReader::new(SecureRead::new(read, open), max_frame);
    let mut write = SecureWrite::new(write, seal);
    // The process the client speaks for: its messages carry it again, and it was learned
    // from the hello already (only a message forwarded by a hub brings a new one).
    let hello_origin = match tokio::time::timeout(CONNECT_TIMEOUT, frames.next::<Frame>()).await {
        Ok(Ok(Some(Frame::Hello { origin }))) => {
            if let (Some(origin), Principal::Application(app)) = (&origin, &principal) {
                security.speaks_for(app, origin)?;
            }
            if let Some(origin) = &origin {
                cluster.learn_route(origin);
            }
            let hello = Frame::Hello {
                origin: cluster.origin().cloned(),
            };
            send_hello(&mut write, &hello)
                .await
                .map_err(|e| format!("cannot answer the hello: {e}"))?;
            origin
        }
        Ok(Ok(Some(other))) => {
            return Err(format!(
                "the first frame was not a hello but {}",
                frame_name(&other)
            ))
        }
        Ok(Ok(None)) => return Ok(()),
        Ok(Err(e)) => return Err(format!("cannot read the hello: {e}")),
        Err(_) => return Err("no hello within the connect time-out".into()),
    };
    let replies = Outbox::new();
    let (write, seal) = into_socket(write)?;
    replies.attach(write, seal, tokio::runtime::Handle::current());
    // The asks being answered: a reply goes out when its actor answers, in any order.
    let mut asks = tokio::task::JoinSet::new();
    let result = loop {
        while asks.try_join_next().is_some() {}
        match frames.next::<Frame>().await {
            Ok(None) => break Ok(()),
            Err(e) => break Err(e.to_string()),
            Ok(Some(Frame::Tell(mut message))) => {
                if let Err(reason) = security.admits(&principal, &message) {
                    refused(&message, &reason);
                    continue;
                }
                if message.origin == hello_origin {
                    message.origin = None;
                }
                let (to, name) = (message.to.clone(), message.message.clone());
                match deliver(cluster, message).now_or_never() {
                    Some(Ok(_)) => {}
                    Some(Err(reason)) => tracing::debug!(
                        event = "message_dropped",
                        to = %to,
                        msg_type = %name,
                        "dropped {name} to {to}: {reason}"
                    ),
                    None => {}
                }
            }
            Ok(Some(Frame::Ask { id, mut message })) => {
                if let Err(reason) = security.admits(&principal, &message) {
                    refused(&message, &reason);
                    let _ = queue(
                        &replies,
                        &Frame::Reply {
                            id,
                            reply: Err(reason),
                        },
                    );
                    continue;
                }
                if message.origin == hello_origin {
                    message.origin = None;
                }
                let (reply, replies) = (deliver(cluster, message), replies.clone());
                asks.spawn_local(async move {
                    let _ = queue(
                        &replies,
                        &Frame::Reply {
                            id,
                            reply: reply.await,
                        },
                    );
                });
            }
            Ok(Some(other)) => break Err(format!("unexpected frame from a client: {other:?}")),
        }
    };
    // The asks still running answer; the connection closes once their replies are written.
    while asks.join_next().await.is_some() {}
    replies.close();
    let _ = replies.ended().await;
    result
}

/// The record of a message an application's connection may not deliver here.
fn refused(message: &RemoteMessage, reason: &str) {
    tracing::warn!(
        event = "message_refused",
        to = %message.to,
        msg_type = %message.message,
        protocol = %message.protocol,
        "refused {} to {}: {reason}",
        message.message,
        message.to
    );
}

/// Sends this side's greeting and checks the other's.
async fn greet<R, W>(read: &mut R, write: &mut W) -> Result<(), String>
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let mine = [MAGIC[0], MAGIC[1], MAGIC[2], MAGIC[3], VERSION];
    write
        .write_all(&mine)
        .await
        .map_err(|e| format!("cannot greet: {e}"))?;
    write.flush().await.map_err(|e| format!("cannot greet: {e}"))?;
    let mut theirs = [0u8; 5];
    tokio::time::timeout(CONNECT_TIMEOUT, read.read_exact(&mut theirs))
        .await
        .map_err(|_| "no greeting within the connect time-out".to_string())?
        .map_err(|e| format!("no greeting: {e}"))?;
    if theirs[..4] != MAGIC {
        return Err(format!(
            "it is not a sparkyard actor endpoint (it sent \"{}\")",
            theirs.escape_ascii()
        ));
    }
    if theirs[4] != VERSION {
        return Err(format!(
            "it speaks actor protocol version {} and this side speaks version {VERSION}",
            theirs[4]
        ));
    }
    Ok(())
}

/// Writes a hello through the handshake's writer (it goes before every other frame).
async fn send_hello<W>(write: &mut SecureWrite<W>, hello: &Frame) -> std::io::Result<()>
where
    W: tokio::io::AsyncWrite + Unpin,
{
    let bytes = encode_frame(hello).map_err(std::io::Error::other)?;
    write.write_all(&bytes).await?;
    write.flush().await
}

/// The socket and the sealer of a connection whose handshake is done, for an [`Outbox`]; an
/// error if bytes the handshake wrote were still buffered (it flushes them).
fn into_socket(
    write: SecureWrite<BufWriter<OwnedWriteHalf>>,
) -> Result<(Arc<OwnedWriteHalf>, Option<Sealer>), String> {
    let (write, seal) = write
        .into_parts()
        .map_err(|_| "the hello was not written out".to_string())?;
    if !write.buffer().is_empty() {
        return Err("the hello was not written out".into());
    }
    Ok((Arc::new(write.into_inner()), seal))
}

/// Queues `frame`; a frame that cannot be encoded is answered (an ask's reply becomes the
/// reason) or dropped with a record. The error: the connection is closed, and why.
fn queue(outbox: &Arc<Outbox>, frame: &Frame) -> Result<(), String> {
    queue_with(outbox, frame, true)
}

/// [`queue`], leaving the frame unwritten (`write` false) until the next frame or a flush.
fn queue_with(outbox: &Arc<Outbox>, frame: &Frame, write: bool) -> Result<(), String> {
    let pushed = if write {
        outbox.push(frame, MAX_FRAME_BYTES)
    } else {
        outbox.push_deferred(frame, MAX_FRAME_BYTES)
    };
    let e = match pushed {
        Ok(()) => return Ok(()),
        Err(PushError::Closed(reason)) => return Err(reason),
        Err(PushError::Encode(e)) => e,
    };
    match frame {
        Frame::Reply { id, .. } => {
            let failed = Frame::Reply {
                id: *id,
                reply: Err(format!("the answer cannot be sent: {e}")),
            };
            match outbox.push(&failed, MAX_FRAME_BYTES) {
                Err(PushError::Closed(reason)) => Err(reason),
                _ => Ok(()),
            }
        }
        other => {
            tracing::warn!(
                event = "message_dropped",
                "cannot send a frame ({e}): {}",
                frame_name(other)
            );
            Ok(())
        }
    }
}

fn frame_name(frame: &Frame) -> String {
    match frame {
        Frame::Hello { .. } => "hello".into(),
        Frame::Tell(m) | Frame::Ask { message: m, .. } => format!("{} to {}", m.message, m.to),
        Frame::Reply { id, .. } => format!("reply {id}"),
    }
}

// ------------------------------------------------------------------ link

/// A link to the process serving actors at `addr`: one connection, opened at the first
/// message and again after a break, carrying every message in order.
pub struct TcpLink {
    addr: String,
    /// The process this link speaks for, sent in its hello.
    origin: Option<Origin>,
    /// Where the connection's tasks run (the runtime the link was made on).
    runtime: Option<tokio::runtime::Handle>,
    /// Told the origin the server's hello names.
    learn: Option<Learn>,
    /// The secrets this side proves, and the root of the process it reaches (which realm it
    /// offers: a container is offered its application's secret).
    keyring: Arc<Keyring>,
    root: Option<String>,
    conn: Mutex<Option<Arc<Conn>>>,
}

/// What a link tells the process it speaks for about the other end.
pub enum LinkEvent<'a> {
    /// It reached the process `origin` names (the server's hello).
    Reached(&'a Origin),
    /// Nothing listens at its address any more (a refused connection), or the process there
    /// closed the connection.
    Unreachable(&'a str),
}

/// What a link does with a [`LinkEvent`].
pub type Learn = Arc<dyn Fn(LinkEvent<'_>) + Send + Sync>;

/// One connection: its outgoing frames and the asks waiting for their replies.
struct Conn {
    /// Frames queued and not yet written (a process flushes its links before it exits).
    outbox: Arc<Outbox>,
    pending: Mutex<HashMap<u64, oneshot::Sender<RemoteReply>>>,
    next_id: AtomicU64,
    /// Set when the connection broke; no new ask waits on it.
    broken: AtomicBool,
}

impl Drop for Conn {
    /// The link let the connection go: it closes once what was sent is written.
    fn drop(&mut self) {
        self.outbox.close();
    }
}

impl TcpLink {
    /// A link that speaks for no process (a client that serves no actors).
    pub fn new(addr: &str) -> Arc<TcpLink> {
        TcpLink::with_origin(addr, None)
    }

    /// A link that speaks for the process `origin` names.
    pub fn with_origin(addr: &str, origin: Option<Origin>) -> Arc<TcpLink> {
        TcpLink::speaking_for(addr, origin, None)
    }

    /// A link that speaks for the process `origin` names and hands the origin of the process
    /// it reaches to `learn`.
    pub fn speaking_for(addr: &str, origin: Option<Origin>, learn: Option<Learn>) -> Arc<TcpLink> {
        TcpLink::secured(addr, origin, learn, Keyring::open(), None)
    }

    /// A link that proves `keyring`'s secret for the process serving `root` (see
    /// [`Keyring::offer`]).
    pub fn secured(
        addr: &str,
        origin: Option<Origin>,
        learn: Option<Learn>,
        keyring: Arc<Keyring>,
        root: Option<String>,
    ) -> Arc<TcpLink> {
        Arc::new(TcpLink {
            addr: addr.to_string(),
            origin,
            runtime: tokio::runtime::Handle::try_current().ok(),
            learn,
            keyring,
            root,
            conn: Mutex::new(None),
        })
    }

    /// The open connection, or a new one being opened.
    fn conn(&self) -> Result<Arc<Conn>, String> {
        let mut slot = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(conn) = slot.as_ref() {
            if !conn.broken.load(Ordering::Acquire) {
                return Ok(conn.clone());
            }
        }
        let runtime = tokio::runtime::Handle::try_current()
            .ok()
            .or_else(|| self.runtime.clone())
            .ok_or_else(|| {
                format!(
                    "cannot connect to {}: no runtime to run the connection on",
                    self.addr
                )
            })?;
        let conn = Arc::new(Conn {
            outbox: Outbox::new(),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            broken: AtomicBool::new(false),
        });
        *slot = Some(conn.clone());
        let hello = Frame::Hello {
            origin: self.origin.clone(),
        };
        runtime.spawn(run_connection(
            self.addr.clone(),
            (self.keyring.clone(), self.root.clone()),
            hello,
            self.learn.clone(),
            Arc::downgrade(&conn),
            conn.outbox.clone(),
        ));
        Ok(conn)
    }
}

/// Connects, greets, then writes the queue and reads the replies until either side fails;
/// then fails every ask in flight with the reason.
async fn run_connection(
    addr: String,
    (keyring, root): (Arc<Keyring>, Option<String>),
    hello: Frame,
    learn: Option<Learn>,
    conn: Weak<Conn>,
    outbox: Arc<Outbox>,
) {
    let reason = match connect(&addr).await {
        Err((reason, refused)) => {
            if let (true, Some(learn)) = (refused, &learn) {
                learn(LinkEvent::Unreachable(&addr));
            }
            reason
        }
        Ok(stream) => {
            let (read, write) = stream.into_split();
            let (mut read, mut write) = (BufReader::new(read), BufWriter::new(write));
            let greeted = async {
                greet(&mut read, &mut write).await?;
                tokio::time::timeout(
                    CONNECT_TIMEOUT,
                    auth::offer(&mut read, &mut write, &keyring, root.as_deref()),
                )
                .await
                .map_err(|_| "no handshake within the connect time-out".to_string())?
            };
            match greeted.await {
                Err(reason) => {
                    tracing::warn!(event = "connection_refused", peer = %addr, %reason, "the actor endpoint at {addr} refused the connection: {reason}");
                    format!("the actor endpoint at {addr} refused the connection: {reason}")
                }
                Ok(session) => {
                    let (seal, open) = match session.ciphers {
                        Some(c) => (Some(c.seal), Some(c.open)),
                        None => (None, None),
                    };
                    let mut frames: Frames = FrameReader::new(SecureRead::new(read, open), MAX_FRAME);
                    let mut write = SecureWrite::new(write, seal);
                    let answered = async {
                        send_hello(&mut write, &hello)
                            .await
                            .map_err(|e| format!("cannot write to {addr}: {e}"))?;
                        match tokio::time::timeout(CONNECT_TIMEOUT, frames.next::<Frame>()).await {
                            Ok(Ok(Some(Frame::Hello { origin }))) => Ok(origin),
                            Ok(Ok(_)) => {
                                Err(format!("the actor endpoint at {addr} did not answer the hello"))
                            }
                            Ok(Err(e)) => Err(format!("cannot read the hello of {addr}: {e}")),
                            Err(_) => Err(format!("no hello from {addr} within the connect time-out")),
                        }
                    };
                    let answered = match answered.await {
                        Ok(origin) => into_socket(write).map(|socket| (origin, socket)),
                        Err(e) => Err(e),
                    };
                    match answered {
                        Err(e) => e,
                        Ok((origin, (write, seal))) => {
                            if let (Some(learn), Some(origin)) = (&learn, &origin) {
                                learn(LinkEvent::Reached(origin));
                            }
                            outbox.attach(write, seal, tokio::runtime::Handle::current());
                            let reader = read_replies(&mut frames, &conn);
                            tokio::select! {
                                written = outbox.ended() => match written {
                                    Ok(()) => "the link was dropped".to_string(),
                                    Err(e) => format!("the connection to {addr} broke ({e})"),
                                },
                                read = reader => {
                                    // The other process closed or lost the connection: it
                                    // ended, or will greet again when it comes back.
                                    if let Some(learn) = &learn {
                                        learn(LinkEvent::Unreachable(&addr));
                                    }
                                    format!("the connection to {addr} was lost ({read})")
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    if let Some(conn) = conn.upgrade() {
        conn.broken.store(true, Ordering::Release);
        let pending: Vec<_> = conn
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .collect();
        if !pending.is_empty() {
            tracing::debug!(event = "link_broken", peer = %addr, asks = pending.len(), "{reason}");
        }
        for (_, waiter) in pending {
            let _ = waiter.send(Err(reason.clone()));
        }
    }
    // What was queued behind the break is lost, as on a network.
    outbox.fail(reason);
}

/// Connects to `addr`; the error says why, and whether nothing listens there.
async fn connect(addr: &str) -> Result<TcpStream, (String, bool)> {
    match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
        Ok(Ok(stream)) => {
            let _ = stream.set_nodelay(true);
            Ok(stream)
        }
        Ok(Err(e)) => Err((
            format!(
                "cannot connect to the actor endpoint at {addr}: {e} (is the process serving these actors running?)"
            ),
            e.kind() == std::io::ErrorKind::ConnectionRefused,
        )),
        Err(_) => Err((
            format!(
                "cannot connect to the actor endpoint at {addr} within {}",
                humantime::format_duration(CONNECT_TIMEOUT)
            ),
            false,
        )),
    }
}

/// Hands each reply to the ask waiting for it, until the stream ends or fails; answers why.
async fn read_replies(frames: &mut Frames, conn: &Weak<Conn>) -> String {
    loop {
        match frames.next::<Frame>().await {
            Ok(None) => return "the other process closed it".into(),
            Err(e) => return e.to_string(),
            Ok(Some(Frame::Reply { id, reply })) => {
                let Some(conn) = conn.upgrade() else {
                    return "the link was dropped".into();
                };
                let waiter = conn.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
                if let Some(waiter) = waiter {
                    let _ = waiter.send(reply);
                }
            }
            Ok(Some(other)) => return format!("unexpected frame from the server: {}", frame_name(&other)),
        }
    }
}

/// Removes an abandoned ask's waiter.
struct Waiting {
    conn: Weak<Conn>,
    id: u64,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.upgrade() {
            conn.pending
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&self.id);
        }
    }
}

impl RemoteLink for TcpLink {
    fn send(&self, message: RemoteMessage) -> ReplyFuture {
        let conn = match self.conn() {
            Ok(conn) => conn,
            Err(e) => return Box::pin(async move { Err(e) }),
        };
        let id = conn.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        conn.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, tx);
        let waiting = Waiting {
            conn: Arc::downgrade(&conn),
            id,
        };
        let sent = queue(&conn.outbox, &Frame::Ask { id, message });
        let addr = self.addr.clone();
        Box::pin(async move {
            let _waiting = waiting;
            if sent.is_err() {
                return Err(format!("the connection to {addr} is closed"));
            }
            match rx.await {
                Ok(reply) => reply,
                Err(_) => Err(format!("the connection to {addr} was lost")),
            }
        })
    }

    fn tell(&self, message: RemoteMessage) -> Result<(), String> {
        let conn = self.conn()?;
        queue(&conn.outbox, &Frame::Tell(message))
            .map_err(|_| format!("the connection to {} is closed", self.addr))
    }

    fn tell_deferred(&self, message: RemoteMessage) -> Result<(), String> {
        let conn = self.conn()?;
        queue_with(&conn.outbox, &Frame::Tell(message), false)
            .map_err(|_| format!("the connection to {} is closed", self.addr))?;
        let writes: Arc<dyn DeferredWrites> = conn.outbox.clone();
        deferred(&writes);
        Ok(())
    }

    fn peer(&self) -> String {
        self.addr.clone()
    }

    fn written(&self) -> bool {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        conn.as_ref()
            .is_none_or(|c| c.broken.load(Ordering::Acquire) || c.outbox.unwritten() == 0)
    }

    fn open(&self) {
        if let Err(e) = self.conn() {
            tracing::warn!(peer = %self.addr, "{e}");
        }
    }
}
