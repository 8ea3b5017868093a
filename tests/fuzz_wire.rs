//! Untrusted bytes (issue 15): every decoder of what another process sends is fed random and
//! mutated inputs, starting from valid encodings (bits flipped, bytes set, inserted, deleted
//! and duplicated, cuts, MessagePack headers and length prefixes at and above the limits).
//! No input may panic, allocate more than the frame limit that governs it at once, or leave
//! a read pending on bytes that have all arrived; the live servers (the client port, the
//! actor endpoint) must close a bad connection within a bound and still answer a good
//! client; real actors must take mutated messages without panicking.
//!
//! The decoders:
//! - the client port's frames (`rpc::tcp::read_frame` with `RequestFrame<ClientRequest>`
//!   and `ResponseFrame<ClientResponse>`), and its server reader over a live connection;
//! - the actor endpoint's `rpc::remote::Frame`, and its server over a live connection
//!   (the greeting, the hello, then frames);
//! - every message of every remote protocol as `runtime::remote::deliver` decodes it, and
//!   every reply as the sender decodes it; the admin service's calls;
//! - the container launch file (`launch_container.json`) and its launch command.
//!
//! Adding a decoder is one line in [`decoders`] (a frame, a body, a text file) or in
//! [`protocol_messages`] (a remote protocol's message).
//!
//! How many inputs: `SPARKYARD_FUZZ_INPUTS` (default 20,000, a few seconds in the suite),
//! spread over the decoders; the live tests use a fiftieth of it (at least 200 connections
//! or deliveries). `SPARKYARD_FUZZ_SEED` picks another sequence. The long run is in the
//! README (Security).

mod common;
#[path = "fuzz/gen.rs"]
mod gen;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use serde::de::DeserializeOwned;
use serde::Serialize;

use gen::{msgpack_noise, mutate, random_value, Rng};
use sparkyard::rpc::remote::{Frame, MAX_FRAME};
use sparkyard::rpc::tcp::{encode_frame, read_frame, RequestFrame, ResponseFrame, DEFAULT_MAX_REQUEST_FRAME, MAX_FRAME_BYTES};
use sparkyard::scheduler::heartbeat_receiver::Heartbeat;
use sparkyard::scheduler::messages::*;
use sparkyard::yarn::launcher::ContainerLaunchFile;
use sparkyard::yarn::protocol::*;

// ------------------------------------------------------------------ allocation watch

/// The system allocator, watching the largest single allocation of the thread that asks.
struct Watch;

thread_local! {
    static WATCHING: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    let _ = WATCHING.try_with(|w| {
        if w.get() {
            let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
        }
    });
}

unsafe impl GlobalAlloc for Watch {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Watch = Watch;

/// Runs `f`, answering the largest single allocation it made on this thread.
fn largest_allocation(f: impl FnOnce()) -> usize {
    LARGEST.with(|l| l.set(0));
    WATCHING.with(|w| w.set(true));
    f();
    WATCHING.with(|w| w.set(false));
    LARGEST.with(|l| l.get())
}

// ------------------------------------------------------------------ the decoders

/// One decoder of bytes from another process.
struct Decoder {
    name: String,
    /// The largest allocation one input may cause: the frame limit that governs it.
    limit: usize,
    /// A valid input, made up (`None` when none came out).
    seed: Box<dyn Fn(&mut Rng) -> Option<Vec<u8>>>,
    /// Decodes an input, answering whether it was accepted; must not panic and must not wait
    /// (the bytes are all there).
    decode: Box<dyn Fn(&[u8]) -> bool>,
}

/// Every frame in `bytes`, read as a server or client reads its peer's, until an error or
/// the end: each read must complete at once (the input has all arrived).
fn read_frames<T: DeserializeOwned>(bytes: &[u8], max: usize) -> bool {
    let mut r = bytes;
    let mut read = 0;
    loop {
        match read_frame::<_, T>(&mut r, max).now_or_never() {
            None => panic!("a frame read waits on an input that has all arrived"),
            Some(Ok(Some(_))) => read += 1,
            Some(Ok(None) | Err(_)) => return read > 0,
        }
    }
}

/// Frames of `T` as read within `max` bytes: seeded with a valid frame or two.
fn frame<T: DeserializeOwned + Serialize + 'static>(name: &str, max: usize) -> Decoder {
    Decoder {
        name: format!("frame {name}"),
        limit: max,
        seed: Box::new(|rng| {
            let mut out = encode_frame(&random_value::<T>(rng)?).ok()?;
            if rng.chance(3) {
                out.extend(encode_frame(&random_value::<T>(rng)?).ok()?);
            }
            Some(out)
        }),
        decode: Box::new(move |bytes| read_frames::<T>(bytes, max)),
    }
}

/// A body of `T` as the runtime decodes a remote message or reply (rmp-serde from a slice),
/// within an actor frame.
fn body<T: DeserializeOwned + Serialize + 'static>(name: &str) -> Decoder {
    Decoder {
        name: format!("body {name}"),
        limit: MAX_FRAME,
        seed: Box::new(|rng| rmp_serde::to_vec(&random_value::<T>(rng)?).ok()),
        decode: Box::new(|bytes| rmp_serde::from_slice::<T>(bytes).is_ok()),
    }
}

/// A remote message and its reply, as `deliver` and the sender decode them.
fn message<M>(protocol: &str, name: &str) -> Vec<Decoder>
where
    M: actix::Message + DeserializeOwned + Serialize + 'static,
    M::Result: DeserializeOwned + Serialize + 'static,
{
    vec![
        body::<M>(&format!("{protocol}.{name}")),
        body::<M::Result>(&format!("{protocol}.{name} reply")),
    ]
}

/// The container launch file as a container process reads it, and its command as the
/// process parses it.
fn launch_file() -> Decoder {
    Decoder {
        name: "launch_container.json".into(),
        limit: 1 << 20,
        seed: Box::new(|rng| serde_json::to_vec(&random_value::<ContainerLaunchFile>(rng)?).ok()),
        decode: Box::new(|bytes| match serde_json::from_slice::<ContainerLaunchFile>(bytes) {
            Ok(file) => {
                let _ = sparkyard::cli::roles::parse_launch_command(&file.context.command, &file.host);
                let _ = sparkyard::runtime::ActorPath::parse(&file.rm);
                true
            }
            Err(_) => false,
        }),
    }
}

/// Every remote protocol's messages: `(protocol, message)` decoders, one line per protocol.
macro_rules! protocol_messages {
    ($($protocol:literal: [$($m:ident),+ $(,)?]),+ $(,)?) => {
        vec![$($(message::<$m>($protocol, stringify!($m))),+),+].into_iter().flatten().collect::<Vec<Decoder>>()
    };
}

fn protocol_messages() -> Vec<Decoder> {
    protocol_messages![
        "DriverProtocol": [RetrieveSparkAppConfig, RegisterExecutor, LaunchedExecutor, StatusUpdate,
            ExecutorDecommissioning, RemoveExecutor, RetrieveLastAllocatedExecutorId, KillExecutorsOnHost,
            DecommissionExecutorsOnHost, ResetSchedulerBackend, ReviveOffers, KillTask, GetExecutors,
            AwaitExecutors, ClientRequestTotalExecutors, ClientKillExecutors, ClientDecommissionExecutors,
            StopExecutors, StopDriver],
        "ExecutorProtocol": [RegisteredExecutor, LaunchTask, KillTask, StopExecutor, Shutdown,
            DecommissionExecutor, ExecutorDecommissionSigReceived, ReportTaskStatuses],
        "ShuffleProtocol": [FetchShuffleBlocks],
        "YarnSchedulerProtocol": [RegisterClusterManager, RetrieveLastAllocatedExecutorId, RequestExecutors,
            KillExecutors, RemoveExecutor, ExecutorDisconnected, DecommissionExecutorsOnHost, Shutdown],
        "AmProtocol": [RequestExecutors, KillExecutors, GetExecutorLossReason, Shutdown],
        "HeartbeatProtocol": [Heartbeat],
        "ApplicationClientProtocol": [GetNewApplication, SubmitApplication, GetApplicationReport,
            KillApplication, GetClusterNodes, GetContainerOutput],
        "ApplicationMasterProtocol": [RegisterApplicationMaster, Allocate, FinishApplicationMaster],
        "ResourceTracker": [RegisterNode, NodeHeartbeat, NodeStatusUpdate],
        "ResourceManagerAdministrationProtocol": [RefreshNodes, ListNodes],
        "ContainerManagementProtocol": [StartContainer, StopContainer, ReadContainerOutput],
        "NodeActionProtocol": [Resync],
    ]
}

/// Every decoder; add one here (the lead: the authentication handshake's messages, e.g.
/// `body::<rpc::auth::Challenge>("auth Challenge")` or a `Decoder` around `rpc::auth::decode_*`).
fn decoders() -> Vec<Decoder> {
    let mut all = vec![
        frame::<RequestFrame<ClientRequest>>("client port request", DEFAULT_MAX_REQUEST_FRAME),
        frame::<ResponseFrame<ClientResponse>>("client port response", MAX_FRAME_BYTES),
        frame::<Frame>("actor endpoint", MAX_FRAME),
        body::<sparkyard::runtime::remote::RemoteMessage>("RemoteMessage"),
        body::<sparkyard::runtime::remote::WatchEnded>("sparkyard.watch reply"),
        body::<AdminRequest>("admin call"),
        body::<AdminResponse>("admin answer"),
        launch_file(),
    ];
    all.extend(protocol_messages());
    all
}

// ------------------------------------------------------------------ the runs

fn inputs() -> u64 {
    std::env::var("SPARKYARD_FUZZ_INPUTS")
        .ok()
        .map(|v| v.replace('_', "").parse().expect("SPARKYARD_FUZZ_INPUTS is a count"))
        .unwrap_or(20_000)
}

fn seed() -> u64 {
    std::env::var("SPARKYARD_FUZZ_SEED")
        .ok()
        .map(|v| v.parse().expect("SPARKYARD_FUZZ_SEED is a number"))
        .unwrap_or(0x5eed_15)
}

/// One input for `d`: a mutated valid encoding mostly, sometimes a valid one as is, noise,
/// or nothing.
fn input_for(d: &Decoder, rng: &mut Rng, pool: &[Vec<u8>]) -> Vec<u8> {
    let base = if pool.is_empty() { Vec::new() } else { pool[rng.below(pool.len())].clone() };
    match rng.below(16) {
        0 => base,
        1 => msgpack_noise(rng),
        2 => {
            let n = rng.below(64);
            rng.bytes(n)
        }
        3 => (d.seed)(rng).unwrap_or_default(),
        _ => {
            let other = if pool.is_empty() { Vec::new() } else { pool[rng.below(pool.len())].clone() };
            mutate(rng, &base, &other)
        }
    }
}

/// Runs `d` on `n` inputs; a panic names the decoder and the input (kept as a regression
/// case in [`regressions`]).
/// Answers the largest allocation and how many inputs were accepted.
fn fuzz(d: &Decoder, n: u64, rng: &mut Rng) -> (usize, u64) {
    let pool: Vec<Vec<u8>> = (0..32).filter_map(|_| (d.seed)(rng)).collect();
    let (mut largest, mut accepted) = (0, 0);
    for _ in 0..n {
        let input = input_for(d, rng, &pool);
        let mut ok = false;
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            largest_allocation(|| ok = (d.decode)(&input))
        }));
        accepted += u64::from(ok);
        match result {
            Ok(size) => {
                assert!(
                    size <= d.limit,
                    "{}: one input allocated {size} bytes at once, over the limit of {}: {input:02x?}",
                    d.name,
                    d.limit
                );
                largest = largest.max(size);
            }
            Err(_) => panic!("{}: the decoder panicked on {input:02x?}", d.name),
        }
    }
    (largest, accepted)
}

#[test]
fn every_wire_decoder_takes_random_and_mutated_inputs_without_panicking_or_overallocating() {
    let all = decoders();
    let total = inputs();
    let per = (total / all.len() as u64).max(1);
    let started = Instant::now();
    let mut rng = Rng::new(seed());
    let mut seeded = 0;
    let mut report = Vec::new();
    for d in &all {
        if (d.seed)(&mut rng).is_some() {
            seeded += 1;
        } else {
            report.push(format!("{}: no valid seed made up (noise and mutations of noise only)", d.name));
        }
        let (largest, accepted) = fuzz(d, per, &mut rng);
        report.push(format!(
            "{}: {per} inputs, {accepted} accepted, largest allocation {largest} bytes",
            d.name
        ));
    }
    eprintln!(
        "fuzz_wire: {} decoders, {} inputs in {:.1?} (seed {:#x})\n  {}",
        all.len(),
        per * all.len() as u64,
        started.elapsed(),
        seed(),
        report.join("\n  ")
    );
    // Most decoders start from valid encodings (a type that checks its text, as a path
    // does, may refuse what the generator makes up).
    assert!(seeded * 4 >= all.len() * 3, "only {seeded} of {} decoders seeded:\n{}", all.len(), report.join("\n"));
}

/// Inputs that once broke a decoder, each with the decoder it broke.
#[test]
fn regressions() {
    let all = decoders();
    let cases: &[(&str, &[u8])] = &[
        // A length prefix of u32::MAX, one over every limit.
        ("frame actor endpoint", &[0xff, 0xff, 0xff, 0xff, 0x00]),
        ("frame client port request", &[0x00, 0x80, 0x00, 0x01]),
        // A body that announces a 4 GiB string.
        ("body RemoteMessage", &[0x98, 0xdb, 0xff, 0xff, 0xff, 0xf0]),
    ];
    for (name, input) in cases {
        let d = all.iter().find(|d| d.name == *name).unwrap_or_else(|| panic!("no decoder {name}"));
        let size = largest_allocation(|| {
            (d.decode)(input);
        });
        assert!(size <= d.limit, "{name}: {size} bytes");
    }
}
