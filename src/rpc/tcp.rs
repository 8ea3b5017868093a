//! One TCP transport for any request/response protocol: framing, greeting, limits and
//! time-outs written once. Rpc layer: above the runtime, below YARN; it knows no protocol.
//! A [`WireProtocol`] names its request and response types (serde) and how errors and records
//! name its server, its requests and the configuration keys of its limits; today it carries
//! YARN's client protocol (`yarn::protocol::ClientProtocol`) between `sparkyard submit` and a
//! running `sparkyard node`.
//!
//! # Wire format
//!
//! A connection opens with a greeting from each side: the four bytes [`MAGIC`] followed by one
//! byte of the protocol's [`WireProtocol::VERSION`]. Both sides send theirs at once and check the
//! other's, so a client that reached something other than a sparkyard server of its
//! protocol, or one of another version, says so instead of timing out.
//!
//! Then comes the [`auth`] handshake: the client's hello, and under `spark.authenticate` a
//! challenge and a proof each way; with encryption, everything after it travels in sealed
//! records.
//!
//! After the handshake every message is a frame: a `u32` big-endian length followed by that
//! many bytes of rmp-serde body (compact form, as `rmp_serde::to_vec` writes it). The client
//! sends [`RequestFrame`]s and the server answers with [`ResponseFrame`]s carrying the same
//! id. A frame body is at most [`MAX_FRAME_BYTES`].
//!
//! # Server
//!
//! [`serve`] accepts connections until its stop signal flips. It runs on the current thread
//! (inside the actix system: the handler forwards each request to an actor and need not be
//! `Send`). Per connection, a reader loop decodes requests and runs each through
//! the handler as a local task, so a slow request (a long-polling application report) does
//! not hold up the others; answers go through a bounded queue to a writer that owns the
//! socket's write half. The reader stops reading while [`MAX_IN_FLIGHT`] requests are
//! unanswered, and answers wait while the queue is full, so a client that stops reading
//! its answers is eventually stopped from sending more by TCP itself.
//!
//! A bad greeting, an undecodable body, a stream that ends inside a frame or a length prefix
//! above the limit closes that connection (a `connection_closed` warning with the peer and
//! the reason); the server carries on. An end of stream between frames is a normal close:
//! the requests still running are answered, then the connection closes.
//!
//! # Client
//!
//! [`ClientConnection`] makes one call at a time, each with its own time limit. Reading its
//! answer is safe to abandon: a call that timed out leaves its answer to be skipped by the
//! next call. A call abandoned while its request was still being written leaves half a frame
//! on the wire, so the connection refuses further calls.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::io;
use std::marker::PhantomData;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::{JoinError, JoinSet};
use tokio::time::Instant;

use super::auth::{self, Keyring, SecureRead, SecureWrite};
use crate::logs::ctx::Instrumented;

/// The largest frame body either side sends or accepts.
pub const MAX_FRAME_BYTES: usize = 64 << 20;

/// How many requests of one connection the server runs at once before it stops reading.
pub const MAX_IN_FLIGHT: usize = 64;

/// How many encoded answers wait for a connection's writer before the answering tasks wait.
pub const WRITE_QUEUE_FRAMES: usize = 64;

/// How long the server waits for a new connection's greeting.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The first four bytes each side sends.
pub const MAGIC: [u8; 4] = *b"SPKY";

/// How long the accept loop pauses after a failed accept (e.g. out of file descriptors).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The initial buffer for a frame body; it grows as the body arrives, never ahead of it, so a
/// large length prefix costs no memory until its bytes come.
const INITIAL_BODY_CAPACITY: usize = 8 << 10;

/// A conversation the transport carries: its messages, and how the transport's errors and
/// records name its server, its requests and the keys its server's limits come from.
pub trait WireProtocol: 'static {
    /// What a client sends.
    type Request: Serialize + DeserializeOwned + 'static;
    /// What the server answers.
    type Response: Serialize + DeserializeOwned + 'static;
    /// The version sent after [`MAGIC`]; both sides must send the same one.
    const VERSION: u8;
    /// [`MAGIC`] and [`Self::VERSION`], as sent.
    const GREETING: [u8; 5] = [MAGIC[0], MAGIC[1], MAGIC[2], MAGIC[3], Self::VERSION];
    /// What serves it, as a client's errors name it ("ResourceManager").
    const SERVER: &'static str;
    /// What a client that cannot connect should check ("is 'sparkyard node' running?").
    const CONNECT_HINT: &'static str;
    /// The protocol as the server's records name it ("client protocol").
    const NAME: &'static str;
    /// The configuration keys of the server's limits, named when a connection hits one.
    const LIMIT_KEYS: LimitKeys;
    /// A request's name in records and errors.
    fn request_name(request: &Self::Request) -> &'static str;
    /// The answer sent in place of one that cannot be sent (over the frame limit).
    fn failure(reason: String) -> Self::Response;
}

/// The configuration keys of a server's [`ServerLimits`] (see [`WireProtocol::LIMIT_KEYS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LimitKeys {
    pub idle_timeout: &'static str,
    pub max_frame: &'static str,
    pub max_buffered: &'static str,
}

/// A request from the client, with the id its answer will carry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestFrame<Req> {
    pub id: u64,
    pub request: Req,
}

/// The server's answer to the request with the same id.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResponseFrame<Resp> {
    pub id: u64,
    pub response: Resp,
}

/// The answer the server's handler produces for one request.
pub type ResponseFuture<P> = Pin<Box<dyn Future<Output = <P as WireProtocol>::Response>>>;

/// What the server calls for each request (on the server's thread; it need not be `Send`);
/// cheap to clone.
pub struct RequestHandler<P: WireProtocol>(Rc<dyn Fn(P::Request) -> ResponseFuture<P>>);

impl<P: WireProtocol> Clone for RequestHandler<P> {
    fn clone(&self) -> Self {
        RequestHandler(self.0.clone())
    }
}

impl<P: WireProtocol> RequestHandler<P> {
    /// A handler answering each request with the future `f` returns.
    pub fn new(f: impl Fn(P::Request) -> ResponseFuture<P> + 'static) -> RequestHandler<P> {
        RequestHandler(Rc::new(f))
    }

    fn call(&self, request: P::Request) -> ResponseFuture<P> {
        (self.0)(request)
    }
}

/// Wraps an async closure as a [`RequestHandler`].
pub fn handler_fn<P, F, Fut>(f: F) -> RequestHandler<P>
where
    P: WireProtocol,
    F: Fn(P::Request) -> Fut + 'static,
    Fut: Future<Output = P::Response> + 'static,
{
    RequestHandler::new(move |request| Box::pin(f(request)) as ResponseFuture<P>)
}

// ------------------------------------------------------------------ errors

/// Why a frame could not be read.
#[derive(Debug)]
pub enum FrameError {
    /// The read itself failed.
    Io(io::Error),
    /// The stream ended inside a frame: `received` of the `expected` bytes of its `part`
    /// ("length prefix" or "body") arrived.
    Truncated {
        part: &'static str,
        expected: usize,
        received: usize,
    },
    /// The length prefix announces more than the limit.
    TooLarge { len: usize, max: usize },
    /// The body is not the rmp-serde encoding of the expected message.
    Malformed(String),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Io(e) => write!(f, "read failed: {}", io_text(e)),
            FrameError::Truncated {
                part,
                expected,
                received,
            } => write!(
                f,
                "the stream ended in the middle of a frame ({received} of the {expected} bytes of its {part})"
            ),
            FrameError::TooLarge { len, max } => {
                write!(f, "a frame of {len} bytes is over the limit of {max} bytes")
            }
            FrameError::Malformed(reason) => write!(f, "malformed frame body: {reason}"),
        }
    }
}

impl std::error::Error for FrameError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FrameError::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// The server a client connection talks to, as its errors name it: "the ResourceManager at
/// 127.0.0.1:8032".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    /// The address the connection was opened with.
    pub addr: String,
    /// What serves the protocol ([`WireProtocol::SERVER`]).
    pub server: &'static str,
    /// What to check when it cannot be reached ([`WireProtocol::CONNECT_HINT`]).
    pub hint: &'static str,
}

impl Peer {
    fn of<P: WireProtocol>(addr: &str) -> Peer {
        Peer {
            addr: addr.to_string(),
            server: P::SERVER,
            hint: P::CONNECT_HINT,
        }
    }

    /// " (hint)", or nothing when the protocol gives none.
    fn hint(&self) -> String {
        if self.hint.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.hint)
        }
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the {} at {}", self.server, self.addr)
    }
}

/// Why a client connection or call failed. Each names the server and the address it was
/// given.
#[derive(Debug)]
pub enum TransportError {
    /// The TCP connection could not be opened.
    Connect { peer: Peer, source: io::Error },
    /// The TCP connection did not open within the time limit.
    ConnectTimeout { peer: Peer, after: Duration },
    /// The peer is not a sparkyard server of the protocol, speaks another protocol version,
    /// or did not greet in time.
    Handshake { peer: Peer, reason: String },
    /// No answer to a call within its time limit.
    Timeout {
        peer: Peer,
        request: &'static str,
        after: Duration,
    },
    /// The server closed the connection.
    Closed { peer: Peer },
    /// Reading from or writing to the connection failed.
    Io { peer: Peer, source: io::Error },
    /// A frame from the server could not be decoded or is over the limit.
    Malformed { peer: Peer, reason: String },
    /// An answer carried an id other than the pending request's (or an earlier one's).
    UnexpectedResponse {
        peer: Peer,
        expected: u64,
        received: u64,
    },
    /// An earlier failure (or a call abandoned while its request was being written) left the
    /// connection unusable.
    Unusable { peer: Peer, reason: String },
    /// A value could not be encoded as a frame.
    Encode(String),
    /// An encoded frame would be over [`MAX_FRAME_BYTES`].
    TooLarge { len: usize, max: usize },
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportError::Connect { peer, source } => {
                write!(f, "cannot connect to {peer}: {}{}", io_text(source), peer.hint())
            }
            TransportError::ConnectTimeout { peer, after } => {
                write!(f, "cannot connect to {peer} within {after:?}{}", peer.hint())
            }
            TransportError::Handshake { peer, reason } => {
                write!(f, "cannot talk to {peer}: {reason}")
            }
            TransportError::Timeout { peer, request, after } => {
                write!(f, "no answer from {peer} to {request} within {after:?}")
            }
            TransportError::Closed { peer } => write!(f, "{peer} closed the connection"),
            TransportError::Io { peer, source } => {
                write!(f, "lost the connection to {peer}: {}", io_text(source))
            }
            TransportError::Malformed { peer, reason } => {
                write!(f, "malformed frame from {}: {reason}", peer.addr)
            }
            TransportError::UnexpectedResponse {
                peer,
                expected,
                received,
            } => write!(
                f,
                "{peer} answered request {received} while request {expected} was pending"
            ),
            TransportError::Unusable { peer, reason } => {
                write!(f, "the connection to {peer} cannot be used any more: {reason}")
            }
            TransportError::Encode(reason) => write!(f, "cannot encode a frame: {reason}"),
            TransportError::TooLarge { len, max } => {
                write!(f, "a frame of {len} bytes is over the limit of {max} bytes")
            }
        }
    }
}

impl std::error::Error for TransportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TransportError::Connect { source, .. } | TransportError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// An I/O error's text without the " (os error N)" that std appends to OS errors.
fn io_text(e: &io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(at) if e.raw_os_error().is_some() && text.ends_with(')') => text[..at].to_string(),
        _ => text,
    }
}

// ------------------------------------------------------------------ frames

/// Encodes `value` as one frame: the length prefix and the rmp-serde body.
pub fn encode_frame<T: Serialize>(value: &T) -> Result<Vec<u8>, TransportError> {
    encode_frame_within(value, MAX_FRAME_BYTES)
}

fn encode_frame_within<T: Serialize>(value: &T, max: usize) -> Result<Vec<u8>, TransportError> {
    let mut frame = Vec::new();
    encode_frame_into(&mut frame, value, max)?;
    Ok(frame)
}

/// Appends `value` to `buf` as one frame of at most `max` body bytes, encoded where it will
/// be sent from (no buffer of its own). On an error `buf` is as it was.
pub fn encode_frame_into<T: Serialize>(
    buf: &mut Vec<u8>,
    value: &T,
    max: usize,
) -> Result<(), TransportError> {
    let start = buf.len();
    buf.extend_from_slice(&[0; 4]);
    if let Err(e) = rmp_serde::encode::write(buf, value) {
        buf.truncate(start);
        return Err(TransportError::Encode(e.to_string()));
    }
    let len = buf.len() - start - 4;
    let prefix = match u32::try_from(len) {
        Ok(prefix) if len <= max => prefix,
        _ => {
            buf.truncate(start);
            return Err(TransportError::TooLarge { len, max });
        }
    };
    buf[start..start + 4].copy_from_slice(&prefix.to_be_bytes());
    Ok(())
}

/// How many bytes a [`FrameReader`] asks for at each read (at least).
const READ_CHUNK: usize = 32 << 10;

/// Reads frames off a stream, as many bytes at each read as have arrived: every whole frame
/// among them is decoded where it lies (no buffer per frame), and a frame cut by a read waits
/// for its rest. Safe to abandon at any point: what was read stays for the next call.
pub struct FrameReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Where the first frame not yet taken starts.
    start: usize,
    max: usize,
}

impl<R> FrameReader<R> {
    /// Frames of at most `max` body bytes from `inner`.
    pub fn new(inner: R, max: usize) -> FrameReader<R> {
        FrameReader {
            inner,
            buf: Vec::new(),
            start: 0,
            max,
        }
    }

    /// Bytes read and not yet taken as frames.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The whole frame at the front, decoded, if it has arrived.
    pub fn take<T: DeserializeOwned>(&mut self) -> Result<Option<T>, FrameError> {
        let ahead = &self.buf[self.start..];
        let Some(prefix) = ahead.first_chunk::<4>() else {
            return Ok(None);
        };
        let len = body_len(*prefix, self.max)?;
        let Some(body) = ahead.get(4..4 + len) else {
            return Ok(None);
        };
        let value = decode_body(body)?;
        self.start += 4 + len;
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
            if self.buf.capacity() > 4 * READ_CHUNK {
                self.buf.shrink_to(READ_CHUNK);
            }
        }
        Ok(Some(value))
    }

    /// Moves the frame in progress to the front and makes room to read: at least a chunk,
    /// and for a large frame room that doubles with what has arrived of it (never ahead of
    /// its bytes by more than that).
    fn make_room(&mut self) -> Result<(), FrameError> {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        let need = match self.buf.first_chunk::<4>() {
            Some(prefix) => 4 + body_len(*prefix, self.max)? - self.buf.len(),
            None => 4 - self.buf.len(),
        };
        let room = if need > READ_CHUNK {
            need.min(self.buf.len().max(READ_CHUNK))
        } else {
            READ_CHUNK
        };
        if self.buf.capacity() - self.buf.len() < room {
            self.buf.reserve(room);
        }
        Ok(())
    }

    /// What a stream that ended inside a frame left.
    fn truncated(&self) -> FrameError {
        let ahead = &self.buf[self.start..];
        match ahead.first_chunk::<4>() {
            Some(prefix) => FrameError::Truncated {
                part: "body",
                expected: u32::from_be_bytes(*prefix) as usize,
                received: ahead.len() - 4,
            },
            None => FrameError::Truncated {
                part: "length prefix",
                expected: 4,
                received: ahead.len(),
            },
        }
    }
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// The next frame; `None` when the stream ends cleanly between frames.
    pub async fn next<T: DeserializeOwned>(&mut self) -> Result<Option<T>, FrameError> {
        loop {
            if let Some(frame) = self.take()? {
                return Ok(Some(frame));
            }
            self.make_room()?;
            if self.inner.read_buf(&mut self.buf).await.map_err(FrameError::Io)? == 0 {
                if self.buffered() == 0 {
                    return Ok(None);
                }
                return Err(self.truncated());
            }
        }
    }
}

/// Reads one frame of at most `max` body bytes and decodes its body. `None` when the stream
/// ends cleanly before a frame. Not safe to abandon halfway: a dropped read loses its bytes.
pub async fn read_frame<R, T>(r: &mut R, max: usize) -> Result<Option<T>, FrameError>
where
    R: AsyncRead + Unpin,
    T: DeserializeOwned,
{
    let mut prefix = [0u8; 4];
    match read_full(r, &mut prefix).await.map_err(FrameError::Io)? {
        0 => return Ok(None),
        4 => {}
        received => {
            return Err(FrameError::Truncated {
                part: "length prefix",
                expected: 4,
                received,
            })
        }
    }
    let len = body_len(prefix, max)?;
    let mut body = Vec::with_capacity(len.min(INITIAL_BODY_CAPACITY));
    let received = (&mut *r)
        .take(len as u64)
        .read_to_end(&mut body)
        .await
        .map_err(FrameError::Io)?;
    if received < len {
        return Err(FrameError::Truncated {
            part: "body",
            expected: len,
            received,
        });
    }
    decode_body(&body).map(Some)
}

/// The body length a prefix announces, if within `max`.
fn body_len(prefix: [u8; 4], max: usize) -> Result<usize, FrameError> {
    let announced = u32::from_be_bytes(prefix);
    match usize::try_from(announced) {
        Ok(len) if len <= max => Ok(len),
        _ => Err(FrameError::TooLarge {
            len: announced as usize,
            max,
        }),
    }
}

/// Decodes a whole frame body; bytes left over after the value make it malformed.
fn decode_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, FrameError> {
    let mut de = rmp_serde::Deserializer::new(io::Cursor::new(body));
    let value = T::deserialize(&mut de).map_err(|e| FrameError::Malformed(e.to_string()))?;
    let used = de.position();
    if used != body.len() as u64 {
        return Err(FrameError::Malformed(format!(
            "{} bytes left over after the message",
            body.len() as u64 - used
        )));
    }
    Ok(value)
}

/// Reads until `buf` is full or the stream ends; returns how many bytes arrived.
async fn read_full<R: AsyncRead + Unpin>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]).await? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// Checks the peer's greeting against this side's `version`; the error says what the peer
/// is instead.
fn check_greeting(received: &[u8; 5], what: &str, version: u8) -> Result<(), String> {
    if received[..4] != MAGIC {
        return Err(format!(
            "it is not a sparkyard {what} (it sent \"{}\")",
            received.escape_ascii()
        ));
    }
    if received[4] != version {
        return Err(format!(
            "it speaks protocol version {} and this side speaks version {version}",
            received[4]
        ));
    }
    Ok(())
}

// ------------------------------------------------------------------ server

/// A server's bounds: how many connections it holds, how long one may sit idle, how large a
/// request frame may be and how many bytes of frames in progress it holds across all its
/// connections. Whoever serves a protocol reads them from its configuration (the node's
/// client port from `yarn.sparkyard.client-port.*`, the keys its errors name); tests shrink
/// them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerLimits {
    /// Open connections at most. At the limit a new connection replaces the one that has
    /// been idle longest (no request in flight); when every connection has a request in
    /// flight, the new one is closed at once.
    pub max_connections: usize,
    /// A connection with no request in flight that sends nothing for this long is closed; a
    /// frame must arrive whole within this long of its first byte; answers the client does
    /// not read for this long close the connection.
    pub idle_timeout: Duration,
    /// The largest request frame body accepted.
    pub max_frame: usize,
    /// The largest answer frame body sent (an answer over it becomes the protocol's
    /// [`WireProtocol::failure`]).
    pub max_answer: usize,
    /// Bytes of frames in progress the port holds across all its connections, beyond the
    /// [`SMALL_FRAME_BYTES`] each connection may always hold.
    pub max_buffered: usize,
    /// Requests of one connection run at once before the server stops reading it.
    pub max_in_flight: usize,
    /// Encoded answers waiting for a connection's writer before the answering tasks wait.
    pub write_queue: usize,
    /// How long a new connection has to greet (at most the idle time-out).
    pub handshake: Duration,
}

/// Default of [`ServerLimits::max_connections`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// Default of [`ServerLimits::idle_timeout`].
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Default of [`ServerLimits::max_frame`]: far above any request a client sends (a
/// submission is a few KiB), far below [`MAX_FRAME_BYTES`].
pub const DEFAULT_MAX_REQUEST_FRAME: usize = 8 << 20;
/// Default of [`ServerLimits::max_buffered`].
pub const DEFAULT_MAX_BUFFERED: usize = 64 << 20;
/// A frame of at most this many bytes (length prefix included) needs no share of
/// [`ServerLimits::max_buffered`]: every connection may hold one.
pub const SMALL_FRAME_BYTES: usize = 64 << 10;

impl Default for ServerLimits {
    fn default() -> ServerLimits {
        ServerLimits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_frame: DEFAULT_MAX_REQUEST_FRAME,
            max_answer: MAX_FRAME_BYTES,
            max_buffered: DEFAULT_MAX_BUFFERED,
            max_in_flight: MAX_IN_FLIGHT,
            write_queue: WRITE_QUEUE_FRAMES,
            handshake: HANDSHAKE_TIMEOUT,
        }
    }
}

impl ServerLimits {
    /// The most memory the port's frames in progress take: each connection's small frame
    /// plus the shared budget.
    pub fn frame_memory_bound(&self) -> usize {
        self.max_connections
            .saturating_mul(SMALL_FRAME_BYTES)
            .saturating_add(self.max_buffered)
    }
}

/// Serves protocol `P` on `listener` with the default limits until `stop` turns true (or its
/// sender is dropped), then closes the listener and every open connection. Each request goes
/// through `handler`; its answer goes back with the request's id.
///
/// Runs on the current thread: call it inside the actix system (or another `LocalSet`).
pub async fn serve<P: WireProtocol>(
    listener: TcpListener,
    handler: RequestHandler<P>,
    stop: watch::Receiver<bool>,
) {
    serve_limited::<P>(listener, handler, stop, ServerLimits::default()).await
}

/// One open connection as the accept loop sees it (to choose whom to close at the limit).
struct Slot {
    peer: SocketAddr,
    /// When bytes last arrived or an answer was last finished.
    last_active: Cell<Instant>,
    in_flight: Cell<usize>,
    /// Answers queued or being written: a connection whose answers have not gone out is not
    /// idle.
    unsent: Cell<usize>,
    /// The writer sent answers (the reader looks at the idle deadline again).
    sent: tokio::sync::Notify,
    /// Asked to close, to make room for a new connection.
    evicted: Cell<bool>,
    evict: tokio::sync::Notify,
}

impl Slot {
    fn touch(&self) {
        self.last_active.set(Instant::now());
    }

    /// No request in flight and no answer waiting to go out.
    fn is_idle(&self) -> bool {
        self.in_flight.get() == 0 && self.unsent.get() == 0
    }
}

/// The open connections and the bytes their frames in progress hold (one thread: the
/// server's).
#[derive(Default)]
struct Port {
    slots: RefCell<Vec<Rc<Slot>>>,
    buffered: Cell<usize>,
}

/// A connection's place in [`Port`]; dropping it (however the connection's task ends)
/// removes the slot.
struct Registered {
    port: Rc<Port>,
    slot: Rc<Slot>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.port
            .slots
            .borrow_mut()
            .retain(|s| !Rc::ptr_eq(s, &self.slot));
    }
}

/// A share of [`ServerLimits::max_buffered`], given back when dropped.
struct Reservation {
    port: Rc<Port>,
    bytes: usize,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.port
            .buffered
            .set(self.port.buffered.get().saturating_sub(self.bytes));
    }
}

impl Port {
    fn open(&self) -> usize {
        self.slots.borrow().iter().filter(|s| !s.evicted.get()).count()
    }

    /// The connection idle longest (no request in flight), marked evicted.
    fn evict_idlest(&self) -> Option<Rc<Slot>> {
        let slots = self.slots.borrow();
        let victim = slots
            .iter()
            .filter(|s| !s.evicted.get() && s.is_idle())
            .min_by_key(|s| s.last_active.get())?
            .clone();
        victim.evicted.set(true);
        victim.evict.notify_one();
        Some(victim)
    }

    fn reserve(self: &Rc<Self>, bytes: usize, max: usize) -> Result<Reservation, String> {
        let held = self.buffered.get();
        match held.checked_add(bytes) {
            Some(total) if total <= max => {
                self.buffered.set(total);
                Ok(Reservation {
                    port: self.clone(),
                    bytes,
                })
            }
            _ => Err(format!(
                "a frame of {bytes} bytes does not fit: frames in progress on this port hold {held} of the {max} bytes it buffers"
            )),
        }
    }
}

/// [`serve`] within `limits`.
pub async fn serve_limited<P: WireProtocol>(
    listener: TcpListener,
    handler: RequestHandler<P>,
    stop: watch::Receiver<bool>,
    limits: ServerLimits,
) {
    serve_secured(listener, handler, stop, limits, Keyring::open()).await
}

/// [`serve_limited`], every connection first proving `keyring`'s secret ([`auth`]).
pub async fn serve_secured<P: WireProtocol>(
    listener: TcpListener,
    handler: RequestHandler<P>,
    mut stop: watch::Receiver<bool>,
    limits: ServerLimits,
    keyring: Arc<Keyring>,
) {
    let local = listener.local_addr().ok();
    tracing::debug!(event = "serving", addr = ?local, "serving the {}", P::NAME);
    let port = Rc::new(Port::default());
    let log_ctx = crate::logs::ctx::current();
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            biased;
            _ = stop.wait_for(|stopped| *stopped) => break,
            Some(done) = connections.join_next(), if !connections.is_empty() => note_task_end(done, "connection"),
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    if port.open() >= limits.max_connections {
                        match port.evict_idlest() {
                            Some(victim) => tracing::info!(
                                event = "connection_evicted",
                                peer = %victim.peer,
                                for_peer = %peer,
                                idle_ms = victim.last_active.get().elapsed().as_millis() as u64,
                                max_connections = limits.max_connections,
                                "closing the client connection idle longest to make room (at the limit of {} connections)",
                                limits.max_connections
                            ),
                            None => {
                                tracing::warn!(
                                    event = "connection_refused",
                                    %peer,
                                    max_connections = limits.max_connections,
                                    "refusing a client connection: {} are open, each with a request in flight",
                                    limits.max_connections
                                );
                                drop(stream);
                                continue;
                            }
                        }
                    }
                    tracing::debug!(event = "connection_accepted", %peer, "accepted a client connection");
                    let slot = Rc::new(Slot {
                        peer,
                        last_active: Cell::new(Instant::now()),
                        in_flight: Cell::new(0),
                        unsent: Cell::new(0),
                        sent: tokio::sync::Notify::new(),
                        evicted: Cell::new(false),
                        evict: tokio::sync::Notify::new(),
                    });
                    port.slots.borrow_mut().push(slot.clone());
                    let registered = Registered { port: port.clone(), slot };
                    let connection = serve_connection::<P>(stream, registered, handler.clone(), limits, keyring.clone());
                    // Its records (a refused handshake) carry the server's log context.
                    match &log_ctx {
                        Some(ctx) => connections.spawn_local(Instrumented::new(connection, ctx.clone())),
                        None => connections.spawn_local(connection),
                    };
                }
                Err(e) => {
                    tracing::warn!(event = "accept_failed", error = %e, "cannot accept a connection");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
        }
    }
    drop(listener);
    tracing::debug!(
        event = "stopped",
        addr = ?local,
        open_connections = connections.len(),
        "stopped serving the {}",
        P::NAME
    );
    connections.shutdown().await;
}

/// Logs a task that panicked (a cancelled one ended on purpose).
fn note_task_end(done: Result<(), JoinError>, what: &str) {
    if let Err(e) = done {
        if e.is_panic() {
            tracing::warn!(event = "task_panicked", task = what, "a {what} task panicked");
        }
    }
}

/// How a connection's reading ended.
enum End {
    /// The stream ended between frames; the requests read were answered.
    PeerClosed,
    /// Closed by the server on purpose (idle, or to make room), with the reason.
    Closed(String),
    /// A protocol or I/O failure, with its reason.
    Failed(String),
}

async fn serve_connection<P: WireProtocol>(
    mut stream: TcpStream,
    registered: Registered,
    handler: RequestHandler<P>,
    limits: ServerLimits,
    keyring: Arc<Keyring>,
) {
    let peer = registered.slot.peer;
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!(%peer, error = %e, "cannot set TCP_NODELAY");
    }
    let end = match open_session::<P>(&mut stream, limits, &registered.slot, &keyring).await {
        Err(end) => end,
        Ok(session) => {
            let (seal, open) = match session.ciphers {
                Some(c) => (Some(c.seal), Some(c.open)),
                None => (None, None),
            };
            let (read_half, write_half) = stream.split();
            let (queue, queued) = mpsc::channel(limits.write_queue);
            let writer = write_frames(
                SecureWrite::new(write_half, seal),
                queued,
                limits.idle_timeout,
                registered.slot.clone(),
            );
            tokio::pin!(writer);
            let mut reader = ConnectionReader {
                stream: SecureRead::new(read_half, open),
                buf: Vec::new(),
                reservation: None,
                frame_started: None,
                registered: &registered,
                limits,
                keys: P::LIMIT_KEYS,
            };
            let end = tokio::select! {
                end = reader.run::<P>(&handler, queue) => end,
                written = &mut writer => End::Failed(match written {
                    Ok(()) => "the answer queue closed".to_string(),
                    Err(e) => format!("cannot write to the client: {}", io_text(&e)),
                }),
            };
            drop(reader);
            if let End::PeerClosed = end {
                // Every sender is gone now: the writer sends what is queued and shuts down.
                if let Err(e) = writer.await {
                    tracing::debug!(%peer, error = %e, "could not send the last answers");
                }
            }
            end
        }
    };
    match end {
        End::PeerClosed => {
            tracing::debug!(event = "connection_closed", %peer, reason = "closed by the client", "client connection closed");
        }
        End::Closed(reason) => {
            tracing::debug!(event = "connection_closed", %peer, %reason, "closing a client connection");
        }
        End::Failed(reason) => {
            tracing::warn!(event = "connection_closed", %peer, %reason, "closing a client connection");
        }
    }
}

/// Greets the client, checks its greeting and runs the [`auth`] handshake, within the
/// handshake time (at most the idle time); a connection evicted meanwhile ends.
async fn open_session<P: WireProtocol>(
    stream: &mut TcpStream,
    limits: ServerLimits,
    slot: &Slot,
    keyring: &Keyring,
) -> Result<auth::Session, End> {
    let limit = limits.handshake.min(limits.idle_timeout);
    let (mut read, mut write) = stream.split();
    let work = async {
        write
            .write_all(&P::GREETING)
            .await
            .map_err(|e| End::Failed(format!("cannot greet: {}", io_text(&e))))?;
        let mut greeting = [0u8; 5];
        match read_full(&mut read, &mut greeting).await {
            Err(e) => return Err(End::Failed(format!("read failed: {}", io_text(&e)))),
            Ok(0) => return Err(End::PeerClosed),
            Ok(5) => {}
            Ok(n) => {
                return Err(End::Failed(format!(
                    "the stream ended after {n} bytes of the greeting"
                )))
            }
        }
        slot.touch();
        check_greeting(&greeting, "client", P::VERSION).map_err(End::Failed)?;
        auth::accept(&mut read, &mut write, keyring)
            .await
            .map_err(|refusal| End::Failed(refusal.0))
    };
    tokio::select! {
        biased;
        _ = slot.evict.notified() => {
            Err(End::Closed("closed to make room for a new connection before it greeted".to_string()))
        }
        done = tokio::time::timeout(limit, work) => match done {
            Ok(result) => result,
            Err(_) => Err(End::Failed(format!("no greeting within {limit:?}"))),
        },
    }
}

/// The reading side of one connection: its bytes read but not yet taken as frames, and the
/// share of the port's buffer budget its frame in progress holds.
struct ConnectionReader<'a, R> {
    stream: R,
    buf: Vec<u8>,
    reservation: Option<Reservation>,
    /// When the first byte of the frame in progress arrived.
    frame_started: Option<Instant>,
    registered: &'a Registered,
    limits: ServerLimits,
    /// The keys of `limits`, named when the connection hits one.
    keys: LimitKeys,
}

impl<R: AsyncRead + Unpin> ConnectionReader<'_, R> {
    fn slot(&self) -> &Slot {
        &self.registered.slot
    }

    /// Greets, then reads requests and answers each in its own local task until the stream
    /// ends, fails, stays idle or is evicted. Returning drops the unfinished tasks, which
    /// cancels them.
    async fn run<P: WireProtocol>(
        &mut self,
        handler: &RequestHandler<P>,
        queue: mpsc::Sender<Vec<u8>>,
    ) -> End {
        let mut in_flight = JoinSet::new();
        let mut ended = false;
        loop {
            // Frames already here go first.
            loop {
                if in_flight.len() >= self.limits.max_in_flight {
                    break;
                }
                match self.take_frame() {
                    Ok(Some(frame)) => {
                        in_flight.spawn_local(answer::<P>(
                            frame,
                            handler.clone(),
                            queue.clone(),
                            self.registered.slot.clone(),
                            self.limits.max_answer,
                        ));
                    }
                    Ok(None) => break,
                    Err(reason) => return End::Failed(reason),
                }
            }
            self.slot().in_flight.set(in_flight.len());
            if ended && in_flight.is_empty() {
                return End::PeerClosed;
            }
            if let Err(reason) = self.make_room() {
                return End::Failed(reason);
            }
            // Back-pressure: nothing more is read while max_in_flight requests are unanswered.
            let reading = !ended && in_flight.len() < self.limits.max_in_flight;
            let deadline = self.deadline(reading, in_flight.is_empty() && self.slot().unsent.get() == 0);
            tokio::select! {
                biased;
                _ = self.registered.slot.evict.notified() => {
                    return End::Closed("closed to make room for a new connection (the oldest idle one at the connection limit)".to_string());
                }
                _ = self.registered.slot.sent.notified(), if self.slot().unsent.get() > 0 => {}
                Some(done) = in_flight.join_next(), if !in_flight.is_empty() => {
                    note_task_end(done, "request");
                    self.slot().touch();
                    // A frame held back while requests were in flight gets its time again.
                    if !self.buf.is_empty() {
                        self.frame_started = Some(Instant::now());
                    }
                }
                read = self.stream.read_buf(&mut self.buf), if reading => match read {
                    Ok(0) => {
                        if !self.buf.is_empty() {
                            return End::Failed(self.truncated().to_string());
                        }
                        ended = true;
                    }
                    Ok(_) => {
                        self.slot().touch();
                        if self.frame_started.is_none() {
                            self.frame_started = Some(Instant::now());
                        }
                    }
                    Err(e) => return End::Failed(FrameError::Io(e).to_string()),
                },
                _ = sleep_until_opt(deadline) => return self.timed_out(),
            }
        }
    }

    /// The length of the frame at the front of the buffer, checked against the limit.
    fn frame_len(&self) -> Result<Option<usize>, String> {
        let Some(prefix) = self.buf.first_chunk::<4>() else {
            return Ok(None);
        };
        body_len(*prefix, self.limits.max_frame)
            .map(Some)
            .map_err(|e| format!("{e} ({})", self.keys.max_frame))
    }

    /// Takes a whole request off the front of the buffer, if there is one.
    fn take_frame<T: DeserializeOwned>(&mut self) -> Result<Option<T>, String> {
        let Some(len) = self.frame_len()? else {
            return Ok(None);
        };
        let total = 4 + len;
        let Some(body) = self.buf.get(4..total) else {
            return Ok(None);
        };
        let frame = decode_body(body).map_err(|e| e.to_string())?;
        self.buf.drain(..total);
        self.frame_started = (!self.buf.is_empty()).then(Instant::now);
        self.reservation = None;
        if self.buf.capacity() > SMALL_FRAME_BYTES && self.buf.len() <= SMALL_FRAME_BYTES {
            self.buf.shrink_to(INITIAL_BODY_CAPACITY.max(self.buf.len()));
        }
        Ok(Some(frame))
    }

    /// Makes room in the buffer for the rest of the frame in progress: a large frame first
    /// takes its share of the port's budget (or the connection fails), so memory only grows
    /// within the limits.
    fn make_room(&mut self) -> Result<(), String> {
        let wanted = match self.frame_len()? {
            None => INITIAL_BODY_CAPACITY,
            Some(len) => {
                let total = 4 + len;
                if total > SMALL_FRAME_BYTES && self.reservation.is_none() {
                    let port = &self.registered.port;
                    let key = self.keys.max_buffered;
                    self.reservation = Some(
                        port.reserve(total, self.limits.max_buffered)
                            .map_err(|e| format!("{e} ({key})"))?,
                    );
                }
                total
            }
        };
        if self.buf.capacity() < wanted {
            self.buf.reserve_exact(wanted - self.buf.len());
        }
        Ok(())
    }

    /// When the connection times out: a frame in progress must be whole within the idle
    /// time-out of its first byte; with nothing in flight and nothing in progress, the
    /// connection may be idle that long. `None`: no deadline (requests are running and the
    /// server is not reading).
    fn deadline(&self, reading: bool, nothing_in_flight: bool) -> Option<Instant> {
        let idle = self.limits.idle_timeout;
        if !reading {
            return None;
        }
        match self.frame_started {
            Some(started) if !self.buf.is_empty() => Some(started + idle),
            _ if nothing_in_flight => Some(self.slot().last_active.get() + idle),
            _ => None,
        }
    }

    fn timed_out(&self) -> End {
        let idle = humantime::format_duration(self.limits.idle_timeout);
        if self.buf.is_empty() {
            return End::Closed(format!("idle for {idle} ({})", self.keys.idle_timeout));
        }
        let expected = match self.frame_len() {
            Ok(Some(len)) => format!("{} bytes", 4 + len),
            _ => "a length prefix".to_string(),
        };
        End::Failed(format!(
            "a frame did not arrive within {idle} of its first byte ({} of {expected}; {})",
            self.buf.len(),
            self.keys.idle_timeout
        ))
    }

    /// What a stream that ended inside a frame left.
    fn truncated(&self) -> FrameError {
        match self.frame_len() {
            Ok(Some(len)) => FrameError::Truncated {
                part: "body",
                expected: len,
                received: self.buf.len() - 4,
            },
            _ => FrameError::Truncated {
                part: "length prefix",
                expected: 4,
                received: self.buf.len().min(4),
            },
        }
    }
}

/// Sleeps until `deadline`; never ends without one.
async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

tokio::task_local! {
    /// The peer whose request the handler is serving (see [`request_peer`]).
    static REQUEST_PEER: SocketAddr;
}

/// The address of the peer whose request is being served, when called from a
/// [`RequestHandler`]'s future (the node's ACLs check `hadoop.proxyuser.<user>.hosts`
/// against it); `None` elsewhere.
pub fn request_peer() -> Option<SocketAddr> {
    REQUEST_PEER.try_with(|p| *p).ok()
}

/// Runs one request through the handler and queues its answer.
async fn answer<P: WireProtocol>(
    frame: RequestFrame<P::Request>,
    handler: RequestHandler<P>,
    queue: mpsc::Sender<Vec<u8>>,
    slot: Rc<Slot>,
    max_frame: usize,
) {
    let peer = slot.peer;
    let RequestFrame { id, request } = frame;
    let name = P::request_name(&request);
    let response = REQUEST_PEER.scope(peer, handler.call(request)).await;
    let encoded = match encode_frame_within(&ResponseFrame { id, response }, max_frame) {
        Ok(encoded) => encoded,
        Err(e) => {
            tracing::warn!(event = "answer_not_sent", %peer, request = name, id, error = %e, "cannot send an answer");
            let failed = P::failure(format!("the answer to {name} cannot be sent: {e}"));
            match encode_frame_within(&ResponseFrame { id, response: failed }, max_frame) {
                Ok(encoded) => encoded,
                Err(_) => return,
            }
        }
    };
    // Counted before it is queued, so the connection never looks idle in between.
    slot.unsent.set(slot.unsent.get() + 1);
    // Fails only when the connection is closing, and then nobody waits for the answer.
    let _ = queue.send(encoded).await;
}

/// Writes queued frames to the socket, flushing when the queue runs dry, until every sender
/// is gone; then shuts the write side down. A client that reads none of its answers for
/// `stall` fails the writer (and so the connection).
async fn write_frames<W: AsyncWrite + Unpin>(
    w: W,
    mut queued: mpsc::Receiver<Vec<u8>>,
    stall: Duration,
    slot: Rc<Slot>,
) -> io::Result<()> {
    let mut w = BufWriter::new(w);
    let stalled = || {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the client read none of its answers for {}",
                humantime::format_duration(stall)
            ),
        )
    };
    while let Some(frame) = queued.recv().await {
        let mut frames = 1;
        let batch = async {
            w.write_all(&frame).await?;
            while let Ok(frame) = queued.try_recv() {
                frames += 1;
                w.write_all(&frame).await?;
            }
            w.flush().await
        };
        tokio::time::timeout(stall, batch)
            .await
            .map_err(|_| stalled())??;
        slot.unsent.set(slot.unsent.get().saturating_sub(frames));
        slot.touch();
        slot.sent.notify_one();
    }
    tokio::time::timeout(stall, w.shutdown())
        .await
        .map_err(|_| stalled())?
}

// ------------------------------------------------------------------ client

/// A client's connection to a server of protocol `P`: one call at a time.
pub struct ClientConnection<P: WireProtocol> {
    peer: Peer,
    read: SecureRead<tokio::net::tcp::OwnedReadHalf>,
    write: SecureWrite<tokio::net::tcp::OwnedWriteHalf>,
    /// The secret it proved, to prove again when it connects again.
    keyring: Arc<Keyring>,
    next_id: u64,
    /// Bytes read but not yet taken as frames (kept across calls, so reading is safe to
    /// abandon).
    received: Vec<u8>,
    /// Why the connection cannot be used any more. Set while a request is being written, so a
    /// call abandoned mid-write leaves it set.
    broken: Option<String>,
    _protocol: PhantomData<fn() -> P>,
}

impl<P: WireProtocol> fmt::Debug for ClientConnection<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConnection")
            .field("addr", &self.peer.addr)
            .field("next_id", &self.next_id)
            .field("broken", &self.broken)
            .finish_non_exhaustive()
    }
}

const INTERRUPTED_WRITE: &str = "an earlier call was abandoned while its request was being sent";

impl<P: WireProtocol> ClientConnection<P> {
    /// Connects to the server of `P` at `addr` (`host:port`) and exchanges greetings, all
    /// within `timeout`.
    pub async fn connect(addr: &str, timeout: Duration) -> Result<ClientConnection<P>, TransportError> {
        ClientConnection::connect_secured(addr, timeout, Keyring::open()).await
    }

    /// [`ClientConnection::connect`], proving `keyring`'s secret to the server ([`auth`]).
    pub async fn connect_secured(
        addr: &str,
        timeout: Duration,
        keyring: Arc<Keyring>,
    ) -> Result<ClientConnection<P>, TransportError> {
        let deadline = Instant::now() + timeout;
        let peer = Peer::of::<P>(addr);
        let stream = match tokio::time::timeout_at(deadline, TcpStream::connect(addr)).await {
            Err(_) => return Err(TransportError::ConnectTimeout { peer, after: timeout }),
            Ok(Err(source)) => return Err(TransportError::Connect { peer, source }),
            Ok(Ok(stream)) => stream,
        };
        if let Err(source) = stream.set_nodelay(true) {
            return Err(TransportError::Io { peer, source });
        }
        let (read, write) = stream.into_split();
        let mut connection = ClientConnection {
            peer,
            read: SecureRead::new(read, None),
            write: SecureWrite::new(write, None),
            keyring,
            next_id: 1,
            received: Vec::new(),
            broken: None,
            _protocol: PhantomData,
        };
        match tokio::time::timeout_at(deadline, connection.greet()).await {
            Ok(result) => result?,
            Err(_) => {
                return Err(TransportError::Handshake {
                    peer: connection.peer,
                    reason: format!("no greeting within {timeout:?}"),
                })
            }
        }
        Ok(connection)
    }

    /// The address this connection was opened with.
    pub fn addr(&self) -> &str {
        &self.peer.addr
    }

    async fn greet(&mut self) -> Result<(), TransportError> {
        let closed = "it closed the connection before greeting (a node at its connection limit does that when every connection has a request in flight)";
        let refused = |e: &io::Error| {
            matches!(
                e.kind(),
                io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
            )
        };
        if let Err(e) = self.write.write_all(&P::GREETING).await {
            return Err(if refused(&e) {
                TransportError::Handshake {
                    peer: self.peer.clone(),
                    reason: closed.to_string(),
                }
            } else {
                self.io_error(e)
            });
        }
        let mut greeting = [0u8; 5];
        let received = match read_full(&mut self.read, &mut greeting).await {
            Ok(n) => n,
            Err(e) if refused(&e) => 0,
            Err(e) => return Err(self.io_error(e)),
        };
        let checked = if received < greeting.len() {
            Err(closed.to_string())
        } else {
            check_greeting(&greeting, P::SERVER, P::VERSION)
        };
        checked.map_err(|reason| TransportError::Handshake {
            peer: self.peer.clone(),
            reason,
        })?;
        let session = auth::offer(&mut self.read, &mut self.write, &self.keyring, None)
            .await
            .map_err(|reason| TransportError::Handshake {
                peer: self.peer.clone(),
                reason,
            })?;
        if let Some(ciphers) = session.ciphers {
            self.read.start(ciphers.open);
            self.write.start(ciphers.seal);
        }
        Ok(())
    }

    /// Sends `request` and waits up to `timeout` for its answer. After a failure other than a
    /// time-out (or an encoding error) the connection refuses further calls.
    pub async fn call(
        &mut self,
        request: P::Request,
        timeout: Duration,
    ) -> Result<P::Response, TransportError> {
        if let Some(reason) = &self.broken {
            return Err(TransportError::Unusable {
                peer: self.peer.clone(),
                reason: reason.clone(),
            });
        }
        if self.closed_by_peer() {
            // The server closes connections left idle (or makes room at its connection
            // limit) before any request of ours was sent: connect again, quietly.
            tracing::debug!(
                addr = %self.peer.addr,
                "the {} closed the idle connection; connecting again",
                P::SERVER
            );
            let fresh =
                ClientConnection::connect_secured(&self.peer.addr, timeout, self.keyring.clone()).await?;
            let next_id = self.next_id;
            *self = fresh;
            self.next_id = next_id;
        }
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        let name = P::request_name(&request);
        let frame = encode_frame(&RequestFrame { id, request })?;
        match tokio::time::timeout(timeout, self.exchange(id, &frame)).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(e)) => {
                self.broken = Some(e.to_string());
                Err(e)
            }
            Err(_) => Err(TransportError::Timeout {
                peer: self.peer.clone(),
                request: name,
                after: timeout,
            }),
        }
    }

    /// Whether the server has closed this connection (bytes it sent before closing, late
    /// answers to abandoned calls, are kept). Does not wait.
    fn closed_by_peer(&mut self) -> bool {
        use futures_util::FutureExt;
        loop {
            // One poll: a read that would wait leaves its partial record in the reader.
            match self.read.read_buf(&mut self.received).now_or_never() {
                None => return false,
                Some(Ok(0)) => return true,
                Some(Ok(_)) => {}
                Some(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Some(Err(_)) => return true,
            }
        }
    }

    async fn exchange(&mut self, id: u64, frame: &[u8]) -> Result<P::Response, TransportError> {
        self.broken = Some(INTERRUPTED_WRITE.to_string());
        self.write.write_all(frame).await.map_err(|e| self.io_error(e))?;
        self.write.flush().await.map_err(|e| self.io_error(e))?;
        self.broken = None;
        loop {
            let answer: ResponseFrame<P::Response> = self.next_frame().await?;
            if answer.id == id {
                return Ok(answer.response);
            }
            if answer.id < id {
                tracing::debug!(addr = %self.peer.addr, id = answer.id, "skipped the late answer to an abandoned call");
                continue;
            }
            return Err(TransportError::UnexpectedResponse {
                peer: self.peer.clone(),
                expected: id,
                received: answer.id,
            });
        }
    }

    /// The next frame from the server. Safe to abandon: bytes read stay in `received`.
    async fn next_frame<T: DeserializeOwned>(&mut self) -> Result<T, TransportError> {
        loop {
            let missing = match self.take_frame() {
                Ok(Some(value)) => return Ok(value),
                Ok(None) => self.missing_bytes(),
                Err(e) => {
                    return Err(TransportError::Malformed {
                        peer: self.peer.clone(),
                        reason: e.to_string(),
                    })
                }
            };
            self.received
                .reserve(missing.clamp(INITIAL_BODY_CAPACITY, 1 << 20));
            match self.read.read_buf(&mut self.received).await {
                Ok(0) => {
                    return Err(TransportError::Closed {
                        peer: self.peer.clone(),
                    })
                }
                Ok(_) => {}
                Err(e) => return Err(self.io_error(e)),
            }
        }
    }

    /// Takes a whole frame off the front of `received`, if there is one.
    fn take_frame<T: DeserializeOwned>(&mut self) -> Result<Option<T>, FrameError> {
        let Some(prefix) = self.received.first_chunk::<4>() else {
            return Ok(None);
        };
        let len = body_len(*prefix, MAX_FRAME_BYTES)?;
        let Some(body) = self.received.get(4..4 + len) else {
            return Ok(None);
        };
        let value = decode_body(body)?;
        self.received.drain(..4 + len);
        Ok(Some(value))
    }

    /// How many more bytes the frame at the front of `received` needs (at least one).
    fn missing_bytes(&self) -> usize {
        let total = match self.received.first_chunk::<4>() {
            Some(prefix) => (u32::from_be_bytes(*prefix) as usize).saturating_add(4),
            None => 4,
        };
        total.saturating_sub(self.received.len()).max(1)
    }

    fn io_error(&self, source: io::Error) -> TransportError {
        TransportError::Io {
            peer: self.peer.clone(),
            source,
        }
    }
}

// ------------------------------------------------------------------ tests

/// What the transport's tests and the tests of the protocols it carries share: a log
/// capture, a server on a free port with a handler the test controls, raw connections.
#[cfg(test)]
pub mod testkit {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};

    use tokio::sync::oneshot;
    use tracing::field::{Field, Visit};
    use tracing::span;
    use tracing::subscriber::Interest;
    use tracing::{Event, Level, Metadata};

    use super::*;

    pub const WAIT: Duration = Duration::from_secs(5);

    pub async fn within<F: Future>(what: &str, f: F) -> F::Output {
        match tokio::time::timeout(WAIT, f).await {
            Ok(out) => out,
            Err(_) => panic!("timed out: {what}"),
        }
    }

    // ---- log capture: a minimal subscriber that keeps every event's level and fields.

    pub type Records = Arc<Mutex<Vec<(Level, BTreeMap<String, String>)>>>;

    #[derive(Clone, Default)]
    pub struct Capture(pub Records);

    struct Fields<'a>(&'a mut BTreeMap<String, String>);

    impl Visit for Fields<'_> {
        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.insert(field.name().to_string(), value.to_string());
        }
        fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
            self.0.insert(field.name().to_string(), format!("{value:?}"));
        }
    }

    impl tracing::Subscriber for Capture {
        fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
            Interest::sometimes()
        }
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
            span::Id::from_u64(1)
        }
        fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
        fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
        fn event(&self, event: &Event<'_>) {
            let mut fields = BTreeMap::new();
            event.record(&mut Fields(&mut fields));
            self.0.lock().unwrap().push((*event.metadata().level(), fields));
        }
        fn enter(&self, _: &span::Id) {}
        fn exit(&self, _: &span::Id) {}
    }

    impl Capture {
        /// Waits for a `connection_closed` warning whose reason contains `text`.
        pub async fn closed_warning(&self, text: &str) -> BTreeMap<String, String> {
            self.record(Level::WARN, "connection_closed", "reason", text)
                .await
        }

        /// Waits for a record of `level` and `event` whose `field` contains `text`.
        pub async fn record(
            &self,
            level: Level,
            event: &str,
            field: &str,
            text: &str,
        ) -> BTreeMap<String, String> {
            within(
                &format!("a {level} {event} record with {field} '{text}'"),
                async {
                    loop {
                        let found = self.0.lock().unwrap().iter().find_map(|(l, fields)| {
                            let wanted = *l == level
                                && fields.get("event").map(String::as_str) == Some(event)
                                && fields.get(field).is_some_and(|r| r.contains(text));
                            wanted.then(|| fields.clone())
                        });
                        if let Some(fields) = found {
                            return fields;
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                },
            )
            .await
        }
    }

    // ---- servers and connections

    /// A request that reached a [`controlled_handler`], with the way to answer it.
    pub type Arrival<P> = (
        <P as WireProtocol>::Request,
        oneshot::Sender<<P as WireProtocol>::Response>,
    );

    /// A handler that hands every request to the test, which answers it when it likes.
    pub fn controlled_handler<P: WireProtocol>() -> (RequestHandler<P>, mpsc::UnboundedReceiver<Arrival<P>>) {
        let (arrived, arrivals) = mpsc::unbounded_channel();
        let handler = handler_fn::<P, _, _>(move |request| {
            let arrived = arrived.clone();
            async move {
                let (answer, answered) = oneshot::channel();
                let _ = arrived.send((request, answer));
                answered
                    .await
                    .unwrap_or_else(|_| P::failure("dropped by the test".to_string()))
            }
        });
        (handler, arrivals)
    }

    pub struct Server {
        pub addr: SocketAddr,
        pub stop: watch::Sender<bool>,
        pub task: tokio::task::JoinHandle<()>,
    }

    pub async fn start<P: WireProtocol>(handler: RequestHandler<P>, limits: ServerLimits) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = watch::channel(false);
        let task = actix_rt::spawn(serve_limited::<P>(listener, handler, stopped, limits));
        Server { addr, stop, task }
    }

    /// A raw connection that has exchanged `P`'s greetings.
    pub async fn raw_connect<P: WireProtocol>(addr: SocketAddr) -> TcpStream {
        let mut stream = within("raw connect", TcpStream::connect(addr)).await.unwrap();
        stream.write_all(&P::GREETING).await.unwrap();
        stream.write_all(&auth::plain_hello()).await.unwrap();
        let mut greeting = [0u8; 5];
        within("server greeting", stream.read_exact(&mut greeting))
            .await
            .unwrap();
        assert_eq!(greeting, P::GREETING);
        let mut answer = vec![0u8; auth::plain_answer().len()];
        within("server handshake", stream.read_exact(&mut answer))
            .await
            .unwrap();
        assert_eq!(answer, auth::plain_answer());
        stream
    }

    pub async fn send_request<Req: Serialize>(stream: &mut TcpStream, id: u64, request: Req) {
        stream
            .write_all(&encode_frame(&RequestFrame { id, request }).unwrap())
            .await
            .unwrap();
    }

    pub async fn read_response<Resp: DeserializeOwned>(stream: &mut TcpStream) -> ResponseFrame<Resp> {
        within("a response frame", read_frame(stream, MAX_FRAME_BYTES))
            .await
            .unwrap()
            .expect("a frame, not the end of the stream")
    }

    /// Waits until the server closes `stream` (end of stream or a reset), reading what comes.
    pub async fn expect_closed(stream: &mut TcpStream) {
        within("the server to close the connection", async {
            let mut sink = [0u8; 256];
            loop {
                match stream.read(&mut sink).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use tracing::Level;

    use super::testkit::*;
    use super::*;

    // ---- a protocol of the tests' own: the transport knows none

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    enum Ask {
        Nodes,
        Report(u32),
        Output(u64),
    }

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    enum Answer {
        Nodes(Vec<String>),
        NotFound(u32),
        Output(String),
        Failed(String),
    }

    struct TestProtocol;

    impl WireProtocol for TestProtocol {
        type Request = Ask;
        type Response = Answer;
        const VERSION: u8 = 7;
        const SERVER: &'static str = "test server";
        const CONNECT_HINT: &'static str = "is the test server up?";
        const NAME: &'static str = "test protocol";
        const LIMIT_KEYS: LimitKeys = LimitKeys {
            idle_timeout: "test.idle-timeout",
            max_frame: "test.max-frame",
            max_buffered: "test.max-buffered",
        };

        fn request_name(request: &Ask) -> &'static str {
            match request {
                Ask::Nodes => "Nodes",
                Ask::Report(_) => "Report",
                Ask::Output(_) => "Output",
            }
        }

        fn failure(reason: String) -> Answer {
            Answer::Failed(reason)
        }
    }

    type T = TestProtocol;
    const GREETING: [u8; 5] = T::GREETING;

    fn nodes() -> Answer {
        Answer::Nodes(vec!["n1".to_string(), "n2".to_string()])
    }

    /// Answers nodes and "not found"; anything else fails.
    fn fixed_handler() -> RequestHandler<T> {
        handler_fn::<T, _, _>(|request| async move {
            match request {
                Ask::Nodes => nodes(),
                Ask::Report(app) => Answer::NotFound(app),
                other => Answer::Failed(format!("unexpected {}", T::request_name(&other))),
            }
        })
    }

    async fn connect(addr: &str) -> ClientConnection<T> {
        ClientConnection::<T>::connect(addr, WAIT).await.unwrap()
    }

    /// A fresh client still gets answers.
    async fn assert_serving(addr: SocketAddr) {
        let mut client = connect(&addr.to_string()).await;
        let response = client.call(Ask::Nodes, WAIT).await.unwrap();
        assert_eq!(response, nodes());
    }

    // ---- frames

    #[actix_rt::test]
    async fn frames_round_trip_and_report_each_fault() {
        let frame = RequestFrame {
            id: 42,
            request: Ask::Output(7),
        };
        let encoded = encode_frame(&frame).unwrap();
        assert_eq!(encoded[..4], ((encoded.len() - 4) as u32).to_be_bytes());
        assert_eq!(encoded[4..], rmp_serde::to_vec(&frame).unwrap()[..]);

        let mut two = encoded.clone();
        two.extend_from_slice(&encoded);
        let mut input = &two[..];
        for _ in 0..2 {
            let read: Option<RequestFrame<Ask>> = read_frame(&mut input, MAX_FRAME_BYTES).await.unwrap();
            assert_eq!(read, Some(frame.clone()));
        }
        let end: Option<RequestFrame<Ask>> = read_frame(&mut input, MAX_FRAME_BYTES).await.unwrap();
        assert_eq!(end, None);

        async fn fault(bytes: &[u8], max: usize) -> String {
            let mut input = bytes;
            match read_frame::<_, RequestFrame<Ask>>(&mut input, max).await {
                Err(e) => e.to_string(),
                Ok(frame) => panic!("expected an error, read {frame:?}"),
            }
        }
        assert_eq!(
            fault(&[0, 0], MAX_FRAME_BYTES).await,
            "the stream ended in the middle of a frame (2 of the 4 bytes of its length prefix)"
        );
        assert_eq!(
            fault(&[0, 0, 0, 10, 1, 2, 3], MAX_FRAME_BYTES).await,
            "the stream ended in the middle of a frame (3 of the 10 bytes of its body)"
        );
        assert_eq!(
            fault(&[0xff; 4], MAX_FRAME_BYTES).await,
            format!("a frame of 4294967295 bytes is over the limit of {MAX_FRAME_BYTES} bytes")
        );
        assert_eq!(
            fault(&encoded, encoded.len() - 5).await,
            format!(
                "a frame of {} bytes is over the limit of {} bytes",
                encoded.len() - 4,
                encoded.len() - 5
            )
        );
        assert!(fault(&[0, 0, 0, 1, 0xc1], MAX_FRAME_BYTES)
            .await
            .starts_with("malformed frame body: "));
        assert!(fault(&[0, 0, 0, 0], MAX_FRAME_BYTES)
            .await
            .starts_with("malformed frame body: "));
        let mut trailing = encoded.clone();
        trailing.push(0);
        trailing[..4].copy_from_slice(&((encoded.len() - 3) as u32).to_be_bytes());
        assert_eq!(
            fault(&trailing, MAX_FRAME_BYTES).await,
            "malformed frame body: 1 bytes left over after the message"
        );

        match encode_frame_within(&frame, 8) {
            Err(TransportError::TooLarge { len, max: 8 }) => assert_eq!(len, encoded.len() - 4),
            other => panic!("expected TooLarge, got {other:?}"),
        }
    }

    // ---- server and client together

    #[actix_rt::test]
    async fn round_trip_through_serve_and_client() {
        let server = start(fixed_handler(), ServerLimits::default()).await;
        let addr = server.addr.to_string();
        let mut client = connect(&addr).await;
        assert_eq!(client.addr(), addr);

        let nodes_answer = client.call(Ask::Nodes, WAIT).await.unwrap();
        assert_eq!(nodes_answer, nodes());

        let report = client.call(Ask::Report(9), WAIT).await.unwrap();
        assert_eq!(report, Answer::NotFound(9));
        assert_eq!(client.next_id, 3);
        server.stop.send_replace(true);
    }

    #[actix_rt::test]
    async fn concurrent_requests_on_one_connection_are_answered_by_id() {
        let (handler, mut arrivals) = controlled_handler::<T>();
        let server = start(handler, ServerLimits::default()).await;
        let mut stream = raw_connect::<T>(server.addr).await;
        for (id, c) in [(10, 1), (11, 2), (12, 3)] {
            send_request(&mut stream, id, Ask::Output(c)).await;
        }
        // All three reach the handler before any is answered: they run concurrently.
        let mut pending = BTreeMap::new();
        for _ in 0..3 {
            let (request, answer) = within("a request", arrivals.recv()).await.unwrap();
            let Ask::Output(c) = request else {
                panic!("unexpected {request:?}")
            };
            pending.insert(c, answer);
        }
        // Answered out of order, each answer carries its own request's id.
        for (c, id) in [(3, 12), (1, 10), (2, 11)] {
            let text = format!("stdout of {c}");
            pending
                .remove(&c)
                .unwrap()
                .send(Answer::Output(text.clone()))
                .unwrap();
            let frame = read_response::<Answer>(&mut stream).await;
            assert_eq!(frame.id, id);
            assert_eq!(frame.response, Answer::Output(text));
        }
        server.stop.send_replace(true);
    }

    #[actix_rt::test]
    async fn the_reader_waits_while_max_in_flight_requests_are_unanswered() {
        let (handler, mut arrivals) = controlled_handler::<T>();
        let limits = ServerLimits {
            max_in_flight: 4,
            ..ServerLimits::default()
        };
        let server = start(handler, limits).await;
        let mut stream = raw_connect::<T>(server.addr).await;
        for id in 1..=6 {
            send_request(&mut stream, id, Ask::Output(id)).await;
        }
        let mut held = Vec::new();
        for _ in 0..4 {
            held.push(within("a request", arrivals.recv()).await.unwrap());
        }
        // The fifth stays unread while four are in flight.
        let fifth = tokio::time::timeout(Duration::from_millis(300), arrivals.recv()).await;
        assert!(
            fifth.is_err(),
            "a fifth request was read while four were unanswered"
        );

        let (_, answer) = held.remove(0);
        answer.send(Answer::Output("one".into())).unwrap();
        assert_eq!(read_response::<Answer>(&mut stream).await.id, 1);
        let (request, _answer) = within("the fifth request", arrivals.recv()).await.unwrap();
        assert_eq!(request, Ask::Output(5));
        server.stop.send_replace(true);
    }

    #[actix_rt::test]
    async fn a_malformed_body_closes_only_that_connection() {
        let capture = Capture::default();
        let _guard = tracing::subscriber::set_default(capture.clone());
        let server = start(fixed_handler(), ServerLimits::default()).await;
        let mut good = connect(&server.addr.to_string()).await;

        let mut bad = raw_connect::<T>(server.addr).await;
        bad.write_all(&[0, 0, 0, 3, 0xc1, 0xc1, 0xc1]).await.unwrap();
        expect_closed(&mut bad).await;
        let fields = capture.closed_warning("malformed frame body").await;
        assert_eq!(fields.get("peer"), Some(&bad.local_addr().unwrap().to_string()));

        let answer = good.call(Ask::Nodes, WAIT).await.unwrap();
        assert_eq!(answer, nodes());
        server.stop.send_replace(true);
    }

    #[actix_rt::test]
    async fn a_truncated_frame_closes_the_connection_with_its_reason() {
        let capture = Capture::default();
        let _guard = tracing::subscriber::set_default(capture.clone());
        let server = start(fixed_handler(), ServerLimits::default()).await;

        let mut body_cut = raw_connect::<T>(server.addr).await;
        body_cut
            .write_all(&[0, 0, 0, 100, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
            .await
            .unwrap();
        body_cut.shutdown().await.unwrap();
        expect_closed(&mut body_cut).await;
        capture.closed_warning("(10 of the 100 bytes of its body)").await;

        let mut prefix_cut = raw_connect::<T>(server.addr).await;
        prefix_cut.write_all(&[0, 0]).await.unwrap();
        prefix_cut.shutdown().await.unwrap();
        expect_closed(&mut prefix_cut).await;
        capture
            .closed_warning("(2 of the 4 bytes of its length prefix)")
            .await;

        assert_serving(server.addr).await;
        server.stop.send_replace(true);
    }

    #[actix_rt::test]
    async fn a_clean_close_answers_the_requests_already_read() {
        let (handler, mut arrivals) = controlled_handler::<T>();
        let capture = Capture::default();
        let _guard = tracing::subscriber::set_default(capture.clone());
        let server = start(handler, ServerLimits::default()).await;
        let mut stream = raw_connect::<T>(server.addr).await;
        send_request(&mut stream, 1, Ask::Output(1)).await;
        stream.shutdown().await.unwrap();
        let (_, answer) = within("the request", arrivals.recv()).await.unwrap();
        answer.send(Answer::Output("late".into())).unwrap();
        assert_eq!(read_response::<Answer>(&mut stream).await.id, 1);
        let end: Option<ResponseFrame<Answer>> = within("end", read_frame(&mut stream, MAX_FRAME_BYTES))
            .await
            .unwrap();
        assert_eq!(end, None);
        // Quietly: no warning.
        let warned = capture
            .0
            .lock()
            .unwrap()
            .iter()
            .any(|(level, _)| *level == Level::WARN);
        assert!(!warned);
        server.stop.send_replace(true);
    }

    #[actix_rt::test]
    async fn a_protocol_names_its_server_calls_and_limit_keys() {
        let capture = Capture::default();
        let _guard = tracing::subscriber::set_default(capture.clone());

        // The server it cannot reach, and what to check.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let closed = listener.local_addr().unwrap().to_string();
        drop(listener);
        let err = ClientConnection::<T>::connect(&closed, WAIT).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "cannot connect to the test server at {closed}: Connection refused (is the test server up?)"
            )
        );

        // The key of the limit a connection hits.
        let server = start(fixed_handler(), ServerLimits::default()).await;
        let max = DEFAULT_MAX_REQUEST_FRAME;
        let mut stream = raw_connect::<T>(server.addr).await;
        stream.write_all(&(max as u32 + 1).to_be_bytes()).await.unwrap();
        expect_closed(&mut stream).await;
        capture
            .closed_warning(&format!(
                "a frame of {} bytes is over the limit of {max} bytes (test.max-frame)",
                max + 1
            ))
            .await;
        server.stop.send_replace(true);

        // The call whose answer cannot be sent, in the protocol's own failure.
        let big = handler_fn::<T, _, _>(|_| async { Answer::Output("x".repeat(500)) });
        let limits = ServerLimits {
            max_answer: 200,
            ..ServerLimits::default()
        };
        let server = start(big, limits).await;
        let mut client = connect(&server.addr.to_string()).await;
        match client.call(Ask::Output(1), WAIT).await.unwrap() {
            Answer::Failed(text) => assert!(
                text.starts_with("the answer to Output cannot be sent: a frame of "),
                "{text}"
            ),
            other => panic!("expected Failed, got {other:?}"),
        }
        server.stop.send_replace(true);
    }

    // ---- the port's bounds

    fn short_idle(idle_ms: u64) -> ServerLimits {
        ServerLimits {
            idle_timeout: Duration::from_millis(idle_ms),
            ..ServerLimits::default()
        }
    }

    /// One call on a raw connection, answered by the fixed handler.
    async fn round_trip(stream: &mut TcpStream, id: u64) {
        send_request(stream, id, Ask::Nodes).await;
        assert_eq!(read_response::<Answer>(stream).await.id, id);
    }

    #[actix_rt::test]
    async fn an_idle_connection_is_closed_and_the_client_connects_again_quietly() {
        let capture = Capture::default();
        let _guard = tracing::subscriber::set_default(capture.clone());
        let server = start(fixed_handler(), short_idle(200)).await;
        let mut client = connect(&server.addr.to_string()).await;
        assert_eq!(client.call(Ask::Nodes, WAIT).await.unwrap(), nodes());

        let closed = capture
            .record(Level::DEBUG, "connection_closed", "reason", "idle for 200ms")
            .await;
        assert_eq!(
            closed.get("peer"),
            Some(&client.write.get_ref().local_addr().unwrap().to_string())
        );
        // The next call finds the connection closed and opens another one by itself.
        within("the close to reach the client", async {
            while !client.closed_by_peer() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        assert_eq!(client.call(Ask::Nodes, WAIT).await.unwrap(), nodes());
        server.stop.send_replace(true);
    }

    #[actix_rt::test]
    async fn a_silent_connection_and_a_stalled_frame_are_closed_after_the_idle_time() {
        let capture = Capture::default();
        let _guard = tracing::subscriber::set_default(capture.clone());
        let server = start(fixed_handler(), short_idle(200)).await;

        // Never greets: closed after the handshake time (at most the idle time).
        let mut silent = TcpStream::connect(server.addr).await.unwrap();
        expect_closed(&mut silent).await;
        capture.closed_warning("no greeting within 200ms").await;

        // A frame of 1,000 bytes of which 10 come.
        let mut stalled = raw_connect::<T>(server.addr).await;
        stalled.write_all(&1000u32.to_be_bytes()).await.unwrap();
        stalled.write_all(&[0; 10]).await.unwrap();
        expect_closed(&mut stalled).await;
        capture
            .closed_warning("a frame did not arrive within 200ms of its first byte (14 of 1004 bytes")
            .await;

        assert_serving(server.addr).await;
        server.stop.send_replace(true);
    }

    #[actix_rt::test]
    async fn at_the_connection_limit_the_idlest_connection_makes_room() {
        let capture = Capture::default();
        let _guard = tracing::subscriber::set_default(capture.clone());
        let limits = ServerLimits {
            max_connections: 2,
            ..ServerLimits::default()
        };
        let server = start(fixed_handler(), limits).await;
        let mut first = raw_connect::<T>(server.addr).await;
        round_trip(&mut first, 1).await;
        let mut second = raw_connect::<T>(server.addr).await;
        round_trip(&mut second, 1).await;

        // A third connection: the first, idle longest, is closed to make room.
        assert_serving(server.addr).await;
        expect_closed(&mut first).await;
        let evicted = capture
            .record(
                Level::INFO,
                "connection_evicted",
                "peer",
                &first.local_addr().unwrap().to_string(),
            )
            .await;
        assert_eq!(evicted.get("max_connections").map(String::as_str), Some("2"));
        round_trip(&mut second, 2).await;
        server.stop.send_replace(true);
    }

    #[actix_rt::test]
    async fn at_the_connection_limit_with_every_connection_busy_a_new_one_is_refused() {
        let capture = Capture::default();
        let _guard = tracing::subscriber::set_default(capture.clone());
        let (handler, mut arrivals) = controlled_handler::<T>();
        let limits = ServerLimits {
            max_connections: 1,
            ..ServerLimits::default()
        };
        let server = start(handler, limits).await;
        let mut busy = raw_connect::<T>(server.addr).await;
        send_request(&mut busy, 1, Ask::Output(1)).await;
        let (_, answer) = within("the request", arrivals.recv()).await.unwrap();

        let err = ClientConnection::<T>::connect(&server.addr.to_string(), WAIT)
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("it closed the connection before greeting"),
            "{err}"
        );
        capture
            .record(Level::WARN, "connection_refused", "max_connections", "1")
            .await;

        // The busy connection is untouched.
        answer.send(Answer::Output("kept".into())).unwrap();
        assert_eq!(read_response::<Answer>(&mut busy).await.id, 1);
        server.stop.send_replace(true);
    }

    #[actix_rt::test]
    async fn a_client_that_reads_no_answers_is_closed_after_the_idle_time() {
        let capture = Capture::default();
        let _guard = tracing::subscriber::set_default(capture.clone());
        let handler = handler_fn::<T, _, _>(|request| async move {
            match request {
                Ask::Output(_) => Answer::Output("x".repeat(1 << 20)),
                _ => nodes(),
            }
        });
        let server = start(handler, short_idle(300)).await;
        let mut greedy = raw_connect::<T>(server.addr).await;
        // Far more answer bytes than the socket buffers hold; none is read.
        for id in 1..=48 {
            send_request(&mut greedy, id, Ask::Output(id)).await;
        }
        capture
            .closed_warning("the client read none of its answers for 300ms")
            .await;
        assert_serving(server.addr).await;
        server.stop.send_replace(true);
    }

    // ---- greetings

    #[actix_rt::test]
    async fn the_server_refuses_a_client_that_does_not_greet_as_sparkyard() {
        let capture = Capture::default();
        let _guard = tracing::subscriber::set_default(capture.clone());
        let server = start(fixed_handler(), ServerLimits::default()).await;

        let mut http = TcpStream::connect(server.addr).await.unwrap();
        http.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        expect_closed(&mut http).await;
        capture
            .closed_warning("it is not a sparkyard client (it sent \"GET /\")")
            .await;

        let mut newer = TcpStream::connect(server.addr).await.unwrap();
        newer
            .write_all(&[MAGIC[0], MAGIC[1], MAGIC[2], MAGIC[3], T::VERSION + 1])
            .await
            .unwrap();
        expect_closed(&mut newer).await;
        capture
            .closed_warning(&format!(
                "it speaks protocol version {} and this side speaks version {}",
                T::VERSION + 1,
                T::VERSION
            ))
            .await;

        assert_serving(server.addr).await;
        server.stop.send_replace(true);
    }

    // ---- stopping

    #[actix_rt::test]
    async fn the_stop_signal_ends_serve_and_its_connections() {
        let (handler, mut arrivals) = controlled_handler::<T>();
        let server = start(handler, ServerLimits::default()).await;
        let mut open = raw_connect::<T>(server.addr).await;
        send_request(&mut open, 1, Ask::Output(1)).await;
        let (_, _unanswered) = within("the request", arrivals.recv()).await.unwrap();

        server.stop.send_replace(true);
        within("serve to end", server.task).await.unwrap();
        expect_closed(&mut open).await;
        let err = ClientConnection::<T>::connect(&server.addr.to_string(), WAIT)
            .await
            .unwrap_err();
        assert!(matches!(err, TransportError::Connect { .. }), "{err:?}");
    }

    #[actix_rt::test]
    async fn dropping_the_stop_sender_also_ends_serve() {
        let server = start(fixed_handler(), ServerLimits::default()).await;
        assert_serving(server.addr).await;
        drop(server.stop);
        within("serve to end", server.task).await.unwrap();
    }

    #[test]
    fn a_protocols_greeting_is_the_magic_and_its_version() {
        assert_eq!(GREETING, [b'S', b'P', b'K', b'Y', 7]);
    }
}

#[cfg(test)]
mod frame_reader_tests {
    use std::collections::VecDeque;
    use std::task::{Context, Poll};

    use tokio::io::ReadBuf;

    use super::*;

    /// A stream that hands its bytes out in the given pieces, at most one piece a read, and
    /// counts the reads.
    struct Pieces {
        pieces: VecDeque<Vec<u8>>,
        reads: usize,
    }

    impl Pieces {
        fn new(pieces: impl IntoIterator<Item = Vec<u8>>) -> Pieces {
            Pieces {
                pieces: pieces.into_iter().collect(),
                reads: 0,
            }
        }
    }

    impl AsyncRead for Pieces {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            self.reads += 1;
            if let Some(mut piece) = self.pieces.pop_front() {
                let n = piece.len().min(buf.remaining());
                buf.put_slice(&piece[..n]);
                if n < piece.len() {
                    self.pieces.push_front(piece.split_off(n));
                }
            }
            Poll::Ready(Ok(()))
        }
    }

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    struct Message {
        id: u64,
        to: String,
        #[serde(with = "serde_bytes")]
        body: Vec<u8>,
    }

    fn messages(n: u64) -> Vec<Message> {
        (0..n)
            .map(|id| Message {
                id,
                to: format!("/apps/app-1/container-{id}/executor-1"),
                body: vec![id as u8; (id as usize * 37) % 300],
            })
            .collect()
    }

    fn wire(messages: &[Message]) -> Vec<u8> {
        let mut out = Vec::new();
        for m in messages {
            encode_frame_into(&mut out, m, MAX_FRAME_BYTES).unwrap();
        }
        out
    }

    async fn read_all(reader: &mut FrameReader<Pieces>) -> Result<Vec<Message>, FrameError> {
        let mut got = Vec::new();
        while let Some(m) = reader.next::<Message>().await? {
            got.push(m);
        }
        Ok(got)
    }

    #[tokio::test]
    async fn frames_encoded_into_one_buffer_are_what_encode_frame_gives() {
        let sent = messages(5);
        let one_by_one: Vec<u8> = sent.iter().flat_map(|m| encode_frame(m).unwrap()).collect();
        assert_eq!(wire(&sent), one_by_one);
        // An encoding over the limit leaves the buffer as it was.
        let mut buf = wire(&sent[..1]);
        let before = buf.clone();
        assert!(matches!(
            encode_frame_into(&mut buf, &sent[4], 10),
            Err(TransportError::TooLarge { max: 10, .. })
        ));
        assert_eq!(buf, before);
    }

    #[tokio::test]
    async fn many_frames_that_arrived_together_are_taken_from_one_read() {
        let sent = messages(100);
        let mut reader = FrameReader::new(Pieces::new([wire(&sent)]), MAX_FRAME_BYTES);
        for m in &sent {
            assert_eq!(reader.next::<Message>().await.unwrap().as_ref(), Some(m));
        }
        assert_eq!(reader.inner.reads, 1, "one read brought all 100 frames");
        assert_eq!(reader.next::<Message>().await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_frame_split_at_every_byte_boundary_decodes_the_same() {
        let sent = messages(4);
        let bytes = wire(&sent);
        // (A read of no bytes is the end of the stream, so each piece holds one at least.)
        for cut in 1..bytes.len() {
            let pieces = Pieces::new([bytes[..cut].to_vec(), bytes[cut..].to_vec()]);
            let mut reader = FrameReader::new(pieces, MAX_FRAME_BYTES);
            assert_eq!(read_all(&mut reader).await.unwrap(), sent, "cut at byte {cut}");
        }
        // And every byte alone.
        let mut reader = FrameReader::new(Pieces::new(bytes.iter().map(|b| vec![*b])), MAX_FRAME_BYTES);
        assert_eq!(read_all(&mut reader).await.unwrap(), sent);
    }

    #[tokio::test]
    async fn a_large_frame_arrives_in_pieces_between_small_ones() {
        let mut sent = messages(3);
        sent[1].body = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let bytes = wire(&sent);
        let pieces = bytes.chunks(1000).map(<[u8]>::to_vec);
        let mut reader = FrameReader::new(Pieces::new(pieces), MAX_FRAME_BYTES);
        assert_eq!(read_all(&mut reader).await.unwrap(), sent);
    }

    #[tokio::test]
    async fn a_stream_that_ends_inside_a_frame_or_announces_too_much_says_so() {
        let bytes = wire(&messages(2));
        let first = 4 + u32::from_be_bytes(*bytes.first_chunk::<4>().unwrap()) as usize;
        // Three bytes into the second frame's body.
        let cut = first + 4 + 3;
        let mut reader = FrameReader::new(Pieces::new([bytes[..cut].to_vec()]), MAX_FRAME_BYTES);
        assert!(reader.next::<Message>().await.unwrap().is_some());
        let err = reader.next::<Message>().await.unwrap_err();
        let second = u32::from_be_bytes(*bytes[first..].first_chunk::<4>().unwrap());
        assert_eq!(
            err.to_string(),
            format!("the stream ended in the middle of a frame (3 of the {second} bytes of its body)")
        );
        let mut reader = FrameReader::new(Pieces::new([bytes[..2].to_vec()]), MAX_FRAME_BYTES);
        assert_eq!(
            reader.next::<Message>().await.unwrap_err().to_string(),
            "the stream ended in the middle of a frame (2 of the 4 bytes of its length prefix)"
        );
        let mut reader = FrameReader::new(Pieces::new([bytes.clone()]), 10);
        assert_eq!(
            reader.next::<Message>().await.unwrap_err().to_string(),
            format!("a frame of {} bytes is over the limit of 10 bytes", first - 4)
        );
    }
}
