//! One connection's outgoing frames, shared by every thread that sends on it. Rpc layer: the
//! actor links and endpoints ([`super::remote`]) write through it; it knows frames and the
//! record layer ([`super::auth`]), no protocol.
//!
//! A sender encodes its frame straight into the connection's pending bytes (with encryption,
//! into the sealed record being filled, which is sealed where it lies). Whoever finds no write
//! under way becomes the writer and writes everything pending with one `write`; frames pushed
//! while it writes wait and go together in its next one. So a burst of frames costs one
//! system call, and no frame is copied between its encoding and the socket.
//!
//! Where the writing happens depends on the sender's thread:
//! - on a runtime's thread (an actor's handler, a reply task) the write is left to a task
//!   spawned there, which runs once the current turn yields: everything the turn sends (the
//!   LaunchTasks of one round of offers, say) goes out in one write, and no other thread is
//!   woken;
//! - on any other thread (an executor's task thread reporting its status) the sender writes
//!   itself, without blocking: the socket takes the bytes at once, or the rest is handed to a
//!   task on the connection's runtime that waits until the socket takes more. No runtime
//!   thread is woken for a frame the socket takes at once.
//!
//! Frames go out in the order they were pushed: a sender that finds a write under way only
//! appends, and a writer takes the pending bytes in order.
//!
//! A sender may also defer a frame ([`Outbox::push_deferred`]): it is queued in its place but
//! starts no write, and goes out with the next frame pushed (by anyone), at
//! [`Outbox::flush_deferred`], or when the outbox closes. An executor's task thread defers a
//! task's final status so that the next task's RUNNING takes it along (`runtime::deferred`
//! says who owes the flush).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;
use tokio::runtime::Handle;
use tokio::sync::Notify;

use super::auth::{Sealer, MAX_RECORD};
use super::tcp::{encode_frame_into, TransportError};
use crate::runtime::deferred::DeferredWrites;

/// A buffer that grew past this while a burst went out is not kept for the next one.
const KEEP_CAPACITY: usize = 1 << 20;

/// How many writes in a row a sender that is not on a runtime makes for others' frames before
/// it hands the writing to the connection's runtime (it has its own work to go back to).
const MAX_SYNC_ROUNDS: usize = 8;

/// A socket written without waiting: tokio's write halves (and, in tests, a recorder).
pub trait Socket: Send + Sync + 'static {
    /// Writes what the socket takes now; `WouldBlock` when it takes nothing.
    fn try_write(&self, buf: &[u8]) -> io::Result<usize>;
    /// Waits until the socket may take more.
    fn writable(&self) -> Pin<Box<dyn Future<Output = io::Result<()>> + Send + '_>>;
}

impl Socket for tokio::net::tcp::OwnedWriteHalf {
    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        tokio::net::tcp::OwnedWriteHalf::try_write(self, buf)
    }

    fn writable(&self) -> Pin<Box<dyn Future<Output = io::Result<()>> + Send + '_>> {
        Box::pin(tokio::net::tcp::OwnedWriteHalf::writable(self))
    }
}

/// Why a frame was not queued.
#[derive(Debug)]
pub enum PushError {
    /// The connection failed or closed; the reason.
    Closed(String),
    /// The frame cannot be encoded (or is over the frame limit); nothing was queued.
    Encode(TransportError),
}

/// The pending bytes and who writes them.
struct State {
    /// Encoded frames waiting for a writer: sealed records, then the record being filled.
    pending: Vec<u8>,
    /// Frames in `pending`.
    pending_frames: usize,
    /// Frames a writer has taken and not yet written out.
    taken_frames: usize,
    /// Where the record being filled starts (its 4-byte head), when encrypting.
    open: Option<usize>,
    seal: Option<Sealer>,
    /// Encrypting: frames go into sealed records.
    encrypt: bool,
    /// A writer holds the socket (or the connection is not open yet): pushed frames wait.
    writing: bool,
    socket: Option<Arc<dyn Socket>>,
    /// Where a write the socket could not take at once goes on.
    runtime: Option<Handle>,
    /// Why nothing more goes out.
    failed: Option<String>,
    /// No more frames come: the connection ends once the pending ones are written.
    closing: bool,
    /// A buffer kept for the next writer.
    spare: Vec<u8>,
}

impl State {
    /// Seals the record being filled.
    fn close_record(&mut self) {
        if let (Some(start), Some(seal)) = (self.open.take(), self.seal.as_mut()) {
            seal.seal_tail(&mut self.pending, start);
        }
    }

    /// Nothing pending, nothing being written.
    fn idle(&self) -> bool {
        !self.writing && self.pending_frames == 0 && self.taken_frames == 0
    }
}

/// The bytes one writer took and how far it got.
#[derive(Default)]
pub struct Batch {
    bytes: Vec<u8>,
    at: usize,
    frames: usize,
    socket: Option<Arc<dyn Socket>>,
}

/// One connection's outgoing frames; see the module docs.
pub struct Outbox {
    state: Mutex<State>,
    /// Told when the outbox fails, or closes with nothing left to write.
    ended: Notify,
}

impl Outbox {
    /// An outbox whose connection is still opening: frames pushed now wait for
    /// [`Outbox::attach`].
    pub fn new() -> Arc<Outbox> {
        Arc::new(Outbox {
            state: Mutex::new(State {
                pending: Vec::new(),
                pending_frames: 0,
                taken_frames: 0,
                open: None,
                seal: None,
                encrypt: false,
                writing: true,
                socket: None,
                runtime: None,
                failed: None,
                closing: false,
                spare: Vec::new(),
            }),
            ended: Notify::new(),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The connection is open: frames go to `socket`, sealed by `seal` when it is given (it
    /// goes on counting records from where the handshake left it). Continuations of writes
    /// run on `runtime`. What was pushed before goes out first. Call it on a runtime's thread.
    pub fn attach(self: &Arc<Self>, socket: Arc<dyn Socket>, seal: Option<Sealer>, runtime: Handle) {
        let mut state = self.state();
        if state.failed.is_some() {
            return;
        }
        state.encrypt = seal.is_some();
        state.seal = seal;
        state.socket = Some(socket);
        state.runtime = Some(runtime);
        if state.encrypt && state.pending_frames > 0 {
            // Frames pushed before the ciphers were known were written in the clear: seal
            // them now, as one record.
            let plain = std::mem::take(&mut state.pending);
            let mut sealed = Vec::with_capacity(plain.len() + 64);
            sealed.extend_from_slice(&[0; 4]);
            sealed.extend_from_slice(&plain);
            if let Some(seal) = state.seal.as_mut() {
                seal.seal_tail(&mut sealed, 0);
            }
            state.pending = sealed;
        }
        if state.pending_frames == 0 {
            state.writing = false;
            let ended = state.closing;
            drop(state);
            if ended {
                self.ended.notify_one();
            }
            return;
        }
        drop(state);
        // This thread held the writer's part while connecting; it hands it to a task.
        tokio::spawn(self.clone().flush(Batch::default()));
    }

    /// Queues `frame`; starts a write if none is under way (see the module docs).
    pub fn push<T: Serialize>(self: &Arc<Self>, frame: &T, max: usize) -> Result<(), PushError> {
        self.push_with(frame, max, true)
    }

    /// Queues `frame` without starting a write: it goes out with the next frame pushed, or
    /// at [`Outbox::flush_deferred`], whichever comes first (see the module docs).
    pub fn push_deferred<T: Serialize>(self: &Arc<Self>, frame: &T, max: usize) -> Result<(), PushError> {
        self.push_with(frame, max, false)
    }

    /// Starts a write of the frames pending, if there are any and no write is under way.
    pub fn flush_deferred(self: &Arc<Self>) {
        let mut state = self.state();
        if state.writing || state.pending_frames == 0 || state.failed.is_some() {
            return;
        }
        state.writing = true;
        drop(state);
        self.start_writing();
    }

    fn push_with<T: Serialize>(
        self: &Arc<Self>,
        frame: &T,
        max: usize,
        write: bool,
    ) -> Result<(), PushError> {
        let mut guard = self.state();
        let state = &mut *guard;
        if let Some(reason) = &state.failed {
            return Err(PushError::Closed(reason.clone()));
        }
        if state.encrypt && state.open.is_none() {
            state.open = Some(state.pending.len());
            state.pending.extend_from_slice(&[0; 4]);
        }
        if let Err(e) = encode_frame_into(&mut state.pending, frame, max) {
            if state.open.is_some_and(|start| start + 4 == state.pending.len()) {
                state.pending.truncate(state.open.take().unwrap_or(0));
            }
            return Err(PushError::Encode(e));
        }
        state.pending_frames += 1;
        if state
            .open
            .is_some_and(|start| state.pending.len() - start - 4 >= MAX_RECORD)
        {
            state.close_record();
        }
        if state.writing || !write {
            return Ok(());
        }
        state.writing = true;
        drop(guard);
        self.start_writing();
        Ok(())
    }

    /// This thread has become the writer: it writes now, or leaves it to a task of its
    /// runtime.
    fn start_writing(self: &Arc<Self>) {
        if Handle::try_current().is_ok() {
            tokio::spawn(self.clone().flush(Batch::default()));
            return;
        }
        let mut batch = Batch::default();
        for _ in 0..MAX_SYNC_ROUNDS {
            match self.write_some(&mut batch) {
                Ok(Some(true)) => return,
                Ok(Some(false)) => {}
                Ok(None) => break,
                Err(e) => {
                    self.fail(format!("cannot write: {e}"));
                    return;
                }
            }
        }
        // The socket takes no more now (or this thread wrote enough for others): the
        // connection's runtime goes on.
        let runtime = self.state().runtime.clone();
        match runtime {
            Some(runtime) => {
                runtime.spawn(self.clone().flush(batch));
            }
            None => self.fail("the connection has no runtime to write on".into()),
        }
    }

    /// Writes what was taken, then takes what is pending, once. `Some(true)`: nothing is
    /// left and the writer's part is given up; `Some(false)`: a batch went out and more
    /// may be pending; `None`: the socket takes no more now.
    fn write_some(&self, batch: &mut Batch) -> io::Result<Option<bool>> {
        if batch.at == batch.bytes.len() {
            let mut state = self.state();
            state.taken_frames -= batch.frames;
            batch.frames = 0;
            batch.at = 0;
            batch.bytes.clear();
            if batch.bytes.capacity() > KEEP_CAPACITY {
                batch.bytes = Vec::new();
            }
            if state.failed.is_some() {
                return Ok(Some(true));
            }
            if state.pending_frames == 0 {
                // Give the writer's part up, and the buffer to the next writer.
                state.writing = false;
                if batch.bytes.capacity() > state.spare.capacity() {
                    state.spare = std::mem::take(&mut batch.bytes);
                }
                let ended = state.closing;
                drop(state);
                if ended {
                    self.ended.notify_one();
                }
                return Ok(Some(true));
            }
            state.close_record();
            if batch.bytes.capacity() == 0 {
                batch.bytes = std::mem::take(&mut state.spare);
            }
            // The writer's empty buffer takes the place of the pending bytes it takes.
            std::mem::swap(&mut state.pending, &mut batch.bytes);
            batch.frames = std::mem::take(&mut state.pending_frames);
            state.taken_frames += batch.frames;
            if batch.socket.is_none() {
                batch.socket = state.socket.clone();
            }
        }
        let Some(socket) = batch.socket.as_ref() else {
            return Err(io::Error::other("the connection is not open"));
        };
        loop {
            match socket.try_write(&batch.bytes[batch.at..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    batch.at += n;
                    if batch.at == batch.bytes.len() {
                        return Ok(Some(false));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) => return Err(e),
            }
        }
    }

    /// Writes until nothing is pending, waiting for the socket when it takes no more.
    async fn flush(self: Arc<Self>, mut batch: Batch) {
        loop {
            match self.write_some(&mut batch) {
                Ok(Some(true)) => return,
                Ok(Some(false)) => {}
                Ok(None) => {
                    let Some(socket) = batch.socket.clone() else {
                        return;
                    };
                    if let Err(e) = socket.writable().await {
                        self.fail(format!("cannot write: {e}"));
                        return;
                    }
                }
                Err(e) => {
                    self.fail(format!("cannot write: {e}"));
                    return;
                }
            }
        }
    }

    /// Nothing more goes out: pending frames are dropped (as on a network), later pushes
    /// fail with `reason`.
    pub fn fail(&self, reason: String) {
        let mut state = self.state();
        if state.failed.is_none() {
            state.failed = Some(reason);
        }
        state.pending = Vec::new();
        state.pending_frames = 0;
        state.open = None;
        // The socket closes once the writer holding it (if any) lets it go.
        state.socket = None;
        drop(state);
        self.ended.notify_one();
    }

    /// No more frames will be pushed: [`Outbox::ended`] returns once the pending ones are
    /// written.
    pub fn close(self: &Arc<Self>) {
        let mut state = self.state();
        state.closing = true;
        let idle = state.idle();
        drop(state);
        if idle {
            self.ended.notify_one();
        } else {
            // Deferred frames go out now: nobody else may push to start their write.
            self.flush_deferred();
        }
    }

    /// Waits until the outbox fails (the reason) or is closed with everything written.
    pub async fn ended(&self) -> Result<(), String> {
        loop {
            let notified = self.ended.notified();
            {
                let state = self.state();
                if let Some(reason) = &state.failed {
                    return Err(reason.clone());
                }
                if state.closing && state.idle() {
                    return Ok(());
                }
            }
            notified.await;
        }
    }

    /// Frames pushed and not yet written out (0 once the outbox failed).
    pub fn unwritten(&self) -> usize {
        let state = self.state();
        if state.failed.is_some() {
            return 0;
        }
        state.pending_frames + state.taken_frames
    }
}

impl DeferredWrites for Outbox {
    fn flush(self: Arc<Self>) {
        self.flush_deferred();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::auth::{session_ciphers, Secret, SecureRead};
    use crate::rpc::tcp::FrameReader;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// A socket that records each write, taking at most `budget` bytes until more is given.
    #[derive(Default)]
    struct Recorder {
        writes: Mutex<Vec<Vec<u8>>>,
        /// Bytes it takes before it would block; `None`: any number.
        budget: Mutex<Option<usize>>,
        more: Notify,
        tries: AtomicUsize,
    }

    impl Recorder {
        fn limited(budget: usize) -> Arc<Recorder> {
            let r = Recorder::default();
            *r.budget.lock().unwrap() = Some(budget);
            Arc::new(r)
        }

        fn give(&self, bytes: Option<usize>) {
            *self.budget.lock().unwrap() = bytes;
            self.more.notify_one();
        }

        fn writes(&self) -> Vec<Vec<u8>> {
            self.writes.lock().unwrap().clone()
        }

        fn bytes(&self) -> Vec<u8> {
            self.writes().concat()
        }
    }

    impl Socket for Recorder {
        fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
            self.tries.fetch_add(1, Ordering::SeqCst);
            let mut budget = self.budget.lock().unwrap();
            let n = match *budget {
                None => buf.len(),
                Some(0) => return Err(io::ErrorKind::WouldBlock.into()),
                Some(left) => {
                    let n = left.min(buf.len());
                    *budget = Some(left - n);
                    n
                }
            };
            self.writes.lock().unwrap().push(buf[..n].to_vec());
            Ok(n)
        }

        fn writable(&self) -> Pin<Box<dyn Future<Output = io::Result<()>> + Send + '_>> {
            Box::pin(async move {
                loop {
                    let more = self.more.notified();
                    if *self.budget.lock().unwrap() != Some(0) {
                        return Ok(());
                    }
                    more.await;
                }
            })
        }
    }

    fn frames_in(bytes: &[u8]) -> Vec<u32> {
        let mut out = Vec::new();
        let mut rest = bytes;
        while let Some(prefix) = rest.first_chunk::<4>() {
            let len = u32::from_be_bytes(*prefix) as usize;
            out.push(rmp_serde::from_slice(&rest[4..4 + len]).unwrap());
            rest = &rest[4 + len..];
        }
        assert!(rest.is_empty());
        out
    }

    async fn wait_for(what: &str, cond: impl Fn() -> bool) {
        tokio::time::timeout(Duration::from_secs(10), async {
            while !cond() {
                tokio::task::yield_now().await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{what} within 10 s"));
    }

    fn attached(socket: Arc<Recorder>, seal: Option<Sealer>) -> Arc<Outbox> {
        let outbox = Outbox::new();
        outbox.attach(socket, seal, Handle::current());
        outbox
    }

    #[tokio::test]
    async fn frames_sent_in_one_turn_go_out_in_one_write() {
        let socket = Arc::new(Recorder::default());
        let outbox = attached(socket.clone(), None);
        for i in 0..100u32 {
            outbox.push(&i, 1 << 20).unwrap();
        }
        assert_eq!(outbox.unwritten(), 100);
        assert!(
            socket.writes().is_empty(),
            "nothing is written before the turn yields"
        );
        wait_for("the frames written", || outbox.unwritten() == 0).await;
        assert_eq!(socket.writes().len(), 1);
        assert_eq!(frames_in(&socket.bytes()), (0..100).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn a_deferred_frame_goes_out_with_the_next_frame_or_at_a_flush() {
        let socket = Arc::new(Recorder::default());
        let outbox = attached(socket.clone(), None);
        // Off the runtime, as an executor's task thread: the deferred frame is not written...
        let sender = outbox.clone();
        std::thread::spawn(move || {
            sender.push_deferred(&1u32, 1 << 20).unwrap();
            assert!(socket_untouched(&sender));
            // ... until the thread's next frame, which takes it along in one write.
            sender.push(&2u32, 1 << 20).unwrap();
        })
        .join()
        .unwrap();
        assert_eq!(socket.writes().len(), 1, "both frames in one write");
        assert_eq!(frames_in(&socket.bytes()), vec![1, 2]);
        // A deferred frame with no frame after it goes out at the flush.
        let sender = outbox.clone();
        std::thread::spawn(move || {
            sender.push_deferred(&3u32, 1 << 20).unwrap();
            sender.push_deferred(&4u32, 1 << 20).unwrap();
            assert_eq!(sender.unwritten(), 2);
            sender.flush_deferred();
        })
        .join()
        .unwrap();
        assert_eq!(socket.writes().len(), 2);
        assert_eq!(frames_in(&socket.bytes()), vec![1, 2, 3, 4]);
        // Closing writes what was deferred before the outbox ends.
        outbox.push_deferred(&5u32, 1 << 20).unwrap();
        outbox.close();
        tokio::time::timeout(Duration::from_secs(10), outbox.ended())
            .await
            .expect("the outbox ends within 10 s")
            .unwrap();
        assert_eq!(frames_in(&socket.bytes()), vec![1, 2, 3, 4, 5]);
    }

    /// Nothing of the outbox's pending frames was written yet.
    fn socket_untouched(outbox: &Arc<Outbox>) -> bool {
        let state = outbox.state();
        !state.writing && state.pending_frames == 1
    }

    #[tokio::test]
    async fn a_sender_off_the_runtime_writes_itself_and_frames_queued_meanwhile_follow_together() {
        let socket = Recorder::limited(0);
        let outbox = attached(socket.clone(), None);
        // The socket takes nothing: the first sender hands the write to the runtime...
        let first = outbox.clone();
        std::thread::spawn(move || first.push(&0u32, 1 << 20).unwrap())
            .join()
            .unwrap();
        assert!(
            socket.tries.load(Ordering::SeqCst) >= 1,
            "the sender tried to write itself"
        );
        // ... and what others send meanwhile waits behind it.
        let others = outbox.clone();
        std::thread::spawn(move || {
            for i in 1..50u32 {
                others.push(&i, 1 << 20).unwrap();
            }
        })
        .join()
        .unwrap();
        assert!(socket.writes().is_empty());
        socket.give(None);
        wait_for("the frames written", || outbox.unwritten() == 0).await;
        assert_eq!(
            socket.writes().len(),
            2,
            "the first frame, then the rest in one write"
        );
        assert_eq!(frames_in(&socket.bytes()), (0..50).collect::<Vec<_>>());
        // With the socket free, a sender off the runtime writes before its push returns.
        let last = outbox.clone();
        std::thread::spawn(move || last.push(&50u32, 1 << 20).unwrap())
            .join()
            .unwrap();
        assert_eq!(socket.writes().len(), 3);
        assert_eq!(outbox.unwritten(), 0);
    }

    #[tokio::test]
    async fn partial_writes_go_on_in_order() {
        let socket = Recorder::limited(7);
        let outbox = attached(socket.clone(), None);
        for i in 0..300u32 {
            outbox.push(&(i * 1000), 1 << 20).unwrap();
        }
        for _ in 0..2000 {
            if outbox.unwritten() == 0 {
                break;
            }
            tokio::task::yield_now().await;
            socket.give(Some(7));
        }
        wait_for("the frames written", || outbox.unwritten() == 0).await;
        assert!(socket.writes().iter().all(|w| w.len() <= 7));
        assert_eq!(
            frames_in(&socket.bytes()),
            (0..300).map(|i| i * 1000).collect::<Vec<_>>()
        );
    }

    #[tokio::test]
    async fn frames_pushed_before_the_connection_opens_go_first() {
        let socket = Arc::new(Recorder::default());
        let outbox = Outbox::new();
        outbox.push(&1u32, 1 << 20).unwrap();
        outbox.push(&2u32, 1 << 20).unwrap();
        assert_eq!(outbox.unwritten(), 2);
        outbox.attach(socket.clone(), None, Handle::current());
        outbox.push(&3u32, 1 << 20).unwrap();
        wait_for("the frames written", || outbox.unwritten() == 0).await;
        assert_eq!(frames_in(&socket.bytes()), vec![1, 2, 3]);
    }

    #[tokio::test]
    async fn a_frame_over_the_limit_is_refused_and_nothing_is_queued() {
        let socket = Arc::new(Recorder::default());
        let outbox = attached(socket.clone(), None);
        let big = vec![7u8; 100];
        assert!(matches!(
            outbox.push(&serde_bytes::ByteBuf::from(big), 50),
            Err(PushError::Encode(TransportError::TooLarge { .. }))
        ));
        outbox.push(&9u32, 50).unwrap();
        wait_for("the frame written", || outbox.unwritten() == 0).await;
        assert_eq!(frames_in(&socket.bytes()), vec![9]);
    }

    #[tokio::test]
    async fn a_failed_outbox_refuses_frames_and_ends_with_the_reason() {
        let socket = Recorder::limited(0);
        let outbox = attached(socket.clone(), None);
        outbox.push(&1u32, 1 << 20).unwrap();
        outbox.fail("the peer went away".into());
        assert_eq!(outbox.unwritten(), 0);
        assert!(
            matches!(outbox.push(&2u32, 1 << 20), Err(PushError::Closed(r)) if r == "the peer went away")
        );
        assert_eq!(outbox.ended().await, Err("the peer went away".into()));
    }

    #[tokio::test]
    async fn a_closed_outbox_ends_once_its_frames_are_written() {
        let socket = Recorder::limited(0);
        let outbox = attached(socket.clone(), None);
        outbox.push(&1u32, 1 << 20).unwrap();
        outbox.close();
        let ended = tokio::spawn({
            let outbox = outbox.clone();
            async move { outbox.ended().await }
        });
        tokio::task::yield_now().await;
        assert!(!ended.is_finished());
        socket.give(None);
        assert_eq!(ended.await.unwrap(), Ok(()));
        assert_eq!(frames_in(&socket.bytes()), vec![1]);
    }

    #[tokio::test]
    async fn sealed_frames_are_gathered_in_one_record_and_open_to_the_same_frames() {
        let secret = Secret::from_text("s3cret").unwrap();
        let (client, server) = session_ciphers(&secret, &[1; 32], &[2; 32]);
        let socket = Arc::new(Recorder::default());
        let outbox = attached(socket.clone(), Some(client.seal));
        let frames: Vec<u32> = (0..200).map(|i| i * 7919).collect();
        for f in &frames {
            outbox.push(f, 1 << 20).unwrap();
        }
        wait_for("the frames written", || outbox.unwritten() == 0).await;
        let wire = socket.bytes();
        // One write, one record: a head, the frames' plaintext, a tag.
        assert_eq!(socket.writes().len(), 1);
        let plain_len: usize = frames
            .iter()
            .map(|f| 4 + rmp_serde::to_vec(f).unwrap().len())
            .sum();
        assert_eq!(wire.len(), 4 + plain_len + 16);
        let mut read = FrameReader::new(SecureRead::new(&wire[..], Some(server.open)), 1 << 20);
        let mut got = Vec::new();
        while let Some(f) = read.next::<u32>().await.unwrap() {
            got.push(f);
        }
        assert_eq!(got, frames);
    }

    #[tokio::test]
    async fn sealed_frames_larger_than_a_record_are_split_into_records() {
        let secret = Secret::from_text("s3cret").unwrap();
        let (client, server) = session_ciphers(&secret, &[3; 32], &[4; 32]);
        let socket = Arc::new(Recorder::default());
        let outbox = attached(socket.clone(), Some(client.seal));
        let big = serde_bytes::ByteBuf::from((0..3 * MAX_RECORD + 5).map(|i| i as u8).collect::<Vec<_>>());
        outbox.push(&1u32, 1 << 24).unwrap();
        outbox.push(&big, 1 << 24).unwrap();
        outbox.push(&2u32, 1 << 24).unwrap();
        wait_for("the frames written", || outbox.unwritten() == 0).await;
        let wire = socket.bytes();
        let mut read = FrameReader::new(SecureRead::new(&wire[..], Some(server.open)), 1 << 24);
        assert_eq!(read.next::<u32>().await.unwrap(), Some(1));
        assert_eq!(read.next::<serde_bytes::ByteBuf>().await.unwrap(), Some(big));
        assert_eq!(read.next::<u32>().await.unwrap(), Some(2));
        assert_eq!(read.next::<u32>().await.unwrap(), None);
    }
}
