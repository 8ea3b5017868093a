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
//! How many inputs: `SPARKYARD_FUZZ_INPUTS` (default 20,000, well under a second),
//! spread over the decoders; `SPARKYARD_FUZZ_LIVE` (default 400) deliveries to real actors
//! and connections to the live servers (half to each). `SPARKYARD_FUZZ_SEED` picks another
//! sequence. The long run is in the README (Security).

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
use sparkyard::rpc::tcp::{
    encode_frame, read_frame, RequestFrame, ResponseFrame, DEFAULT_MAX_REQUEST_FRAME, MAX_FRAME_BYTES,
};
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

/// Makes up a valid input (`None` when none came out).
type Seed = Box<dyn Fn(&mut Rng) -> Option<Vec<u8>>>;
/// Decodes an input, answering whether it was accepted.
type Decode = Box<dyn Fn(&[u8]) -> bool>;

/// One decoder of bytes from another process.
struct Decoder {
    name: String,
    /// The largest allocation one input may cause: the frame limit that governs it.
    limit: usize,
    /// A valid input, made up (`None` when none came out).
    seed: Seed,
    /// Decodes an input, answering whether it was accepted; must not panic and must not wait
    /// (the bytes are all there).
    decode: Decode,
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
/// The record layer of an encrypted connection: what one side opens of the other's sealed
/// records (a made-up stream of a few records under a fixed key; a mutated one must fail
/// its check, never panic or allocate beyond one record).
fn sealed_records() -> Decoder {
    use sparkyard::rpc::auth::{session_ciphers, Secret, SecureRead, SecureWrite, MAX_RECORD};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let keys = || {
        let secret = Secret::from_text("fuzz").unwrap();
        session_ciphers(&secret, &[1; 32], &[2; 32])
    };
    Decoder {
        name: "sealed records".into(),
        limit: MAX_RECORD + 64,
        seed: Box::new(move |rng| {
            let (client, _) = keys();
            let mut out = SecureWrite::new(Vec::new(), Some(client.seal));
            for _ in 0..1 + rng.below(3) {
                let len = rng.below(300);
                let plain = rng.bytes(len);
                out.write_all(&plain).now_or_never()?.ok()?;
                out.flush().now_or_never()?.ok()?;
            }
            Some(out.get_ref().clone())
        }),
        decode: Box::new(move |bytes| {
            let (_, server) = keys();
            let mut read = SecureRead::new(bytes, Some(server.open));
            let mut plain = Vec::new();
            match read.read_to_end(&mut plain).now_or_never() {
                Some(result) => result.is_ok(),
                None => panic!("a read of bytes that have all arrived waits"),
            }
        }),
    }
}

fn launch_file() -> Decoder {
    Decoder {
        name: "launch_container.json".into(),
        limit: 1 << 20,
        seed: Box::new(|rng| serde_json::to_vec(&random_value::<ContainerLaunchFile>(rng)?).ok()),
        decode: Box::new(
            |bytes| match serde_json::from_slice::<ContainerLaunchFile>(bytes) {
                Ok(file) => {
                    let _ = sparkyard::cli::roles::parse_launch_command(&file.context.command, &file.host);
                    let _ = sparkyard::runtime::ActorPath::parse(&file.rm);
                    true
                }
                Err(_) => false,
            },
        ),
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
        frame::<RequestFrame<ClientCall>>("client port request", DEFAULT_MAX_REQUEST_FRAME),
        frame::<sparkyard::rpc::auth::Handshake>("auth handshake", sparkyard::rpc::auth::MAX_HANDSHAKE_FRAME),
        sealed_records(),
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
        .map(|v| {
            v.replace('_', "")
                .parse()
                .expect("SPARKYARD_FUZZ_INPUTS is a count")
        })
        .unwrap_or(20_000)
}

fn seed() -> u64 {
    std::env::var("SPARKYARD_FUZZ_SEED")
        .ok()
        .map(|v| v.parse().expect("SPARKYARD_FUZZ_SEED is a number"))
        .unwrap_or(0x005e_ed15)
}

/// One input for `d`: a mutated valid encoding mostly, sometimes a valid one as is, noise,
/// or nothing.
fn input_for(d: &Decoder, rng: &mut Rng, pool: &[Vec<u8>]) -> Vec<u8> {
    let base = if pool.is_empty() {
        Vec::new()
    } else {
        pool[rng.below(pool.len())].clone()
    };
    match rng.below(16) {
        0 => base,
        1 => msgpack_noise(rng),
        2 => {
            let n = rng.below(64);
            rng.bytes(n)
        }
        3 => (d.seed)(rng).unwrap_or_default(),
        _ => {
            let other = if pool.is_empty() {
                Vec::new()
            } else {
                pool[rng.below(pool.len())].clone()
            };
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
            report.push(format!(
                "{}: no valid seed made up (noise and mutations of noise only)",
                d.name
            ));
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
    assert!(
        seeded * 4 >= all.len() * 3,
        "only {seeded} of {} decoders seeded:\n{}",
        all.len(),
        report.join("\n")
    );
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
        let d = all
            .iter()
            .find(|d| d.name == *name)
            .unwrap_or_else(|| panic!("no decoder {name}"));
        let size = largest_allocation(|| {
            (d.decode)(input);
        });
        assert!(size <= d.limit, "{name}: {size} bytes");
    }
}

// ------------------------------------------------------------------ real actors

/// How many deliveries, and connections to each live server: `SPARKYARD_FUZZ_LIVE`
/// (default 400).
fn live_inputs() -> u64 {
    std::env::var("SPARKYARD_FUZZ_LIVE")
        .ok()
        .map(|v| {
            v.replace('_', "")
                .parse()
                .expect("SPARKYARD_FUZZ_LIVE is a count")
        })
        .unwrap_or(400)
}

/// The `(protocol, message)` of each remote protocol's message decoder (not the replies).
fn message_names(all: &[Decoder]) -> Vec<(String, String, usize)> {
    all.iter()
        .enumerate()
        .filter_map(|(i, d)| {
            let rest = d.name.strip_prefix("body ")?;
            if rest.ends_with(" reply") {
                return None;
            }
            let (protocol, message) = rest.split_once('.')?;
            Some((protocol.to_string(), message.to_string(), i))
        })
        .collect()
}

/// Mutated and random messages of every remote protocol, delivered as `deliver` delivers
/// what another process sends, to the real actors of an embedded node running an
/// application (ResourceManager, NodeManagers, the AM, the driver's endpoints, executors):
/// every delivery answers within its ask's limit, and no actor panics.
#[actix_rt::test]
async fn real_actors_take_mutated_messages_of_every_protocol_without_panicking() {
    use sparkyard::runtime::remote::{deliver, RemoteMessage};
    let node = common::inproc::node().await;
    let conf = common::inproc::conf(&[("spark.executor.instances", "2")]);
    let app = {
        let node_rm = node.rm.clone();
        let cluster = node.cluster.clone();
        let args = sparkyard::deploy::client::ClientArgs {
            conf,
            main_class: "sparkyard.examples.DriverTest".into(),
            primary_resource: "tests.jar".into(),
            app_args: vec!["--sleep".into(), "60s".into()],
            client_mode_driver: None,
        };
        let ctx = cluster.log_ctx().clone();
        sparkyard::logs::ctx::Instrumented::new(
            async move { sparkyard::deploy::client::submit_application(&node_rm, &args).await },
            ctx,
        )
        .await
        .expect("submitted")
    };
    let _ = app;
    common::eventually("the application's executors", || {
        node.cluster
            .actors()
            .iter()
            .filter(|a| a.actor_type.contains("Executor"))
            .count()
            >= 2
    })
    .await;

    let all = decoders();
    let names = message_names(&all);
    let protocols: std::collections::BTreeSet<String> = names.iter().map(|(p, _, _)| p.clone()).collect();
    // Which actor speaks which protocol: its answer to a message the protocol has not.
    let mut targets: Vec<(String, String)> = Vec::new();
    for actor in node.cluster.actors() {
        for protocol in &protocols {
            let probe = RemoteMessage {
                to: actor.path.as_str().to_string(),
                from: None,
                protocol: protocol.clone(),
                message: "NoSuchMessage".into(),
                body: Vec::new(),
                ask: Some(Duration::from_secs(1)),
                origin: None,
                hops: 0,
            };
            if let Err(e) = deliver(&node.cluster, probe).await {
                if e.contains("has no message") {
                    targets.push((actor.path.as_str().to_string(), protocol.clone()));
                }
            }
        }
    }
    let spoken: std::collections::BTreeSet<&str> = targets.iter().map(|(_, p)| p.as_str()).collect();
    assert!(spoken.len() >= 8, "the actors speak only {spoken:?}");

    let mut rng = Rng::new(seed() ^ 0xde11);
    let pools: Vec<Vec<Vec<u8>>> = names
        .iter()
        .map(|(_, _, i)| (0..8).filter_map(|_| (all[*i].seed)(&mut rng)).collect())
        .collect();
    let n = live_inputs();
    let started = Instant::now();
    let mut answered = 0;
    for _ in 0..n {
        let (to, protocol) = targets[rng.below(targets.len())].clone();
        let candidates: Vec<usize> = (0..names.len()).filter(|k| names[*k].0 == protocol).collect();
        let k = candidates[rng.below(candidates.len())];
        let body = input_for(&all[names[k].2], &mut rng, &pools[k]);
        let ask = (!rng.chance(3)).then(|| Duration::from_millis(rng.below(300) as u64));
        let message = RemoteMessage {
            to,
            from: rng.chance(2).then(|| "/node/nm-host1/fuzz".to_string()),
            protocol,
            message: names[k].1.clone(),
            body,
            ask,
            origin: None,
            hops: rng.below(6) as u8,
        };
        let what = format!("{} {} to {}", message.protocol, message.message, message.to);
        let bound = ask.unwrap_or_default() + Duration::from_secs(5);
        match tokio::time::timeout(bound, deliver(&node.cluster, message)).await {
            Ok(Ok(_)) => answered += 1,
            Ok(Err(_)) => {}
            Err(_) => panic!("{what}: no answer within {bound:?}"),
        }
    }
    let panics: Vec<String> = common::inproc::events(&node, "actor_failed")
        .iter()
        .filter(|r| r["reason"].as_str().is_some_and(|s| s.starts_with("panic")))
        .map(|r| r.to_string())
        .collect();
    eprintln!(
        "fuzz_wire: {n} deliveries to {} (actor, protocol) pairs in {:.1?}, {answered} answered",
        targets.len(),
        started.elapsed()
    );
    assert!(panics.is_empty(), "actors panicked:\n{}", panics.join("\n"));
}

// ------------------------------------------------------------------ live servers

/// One request to the client port at `addr`, as a good client makes it.
fn call(addr: &str, request: ClientRequest) -> Result<ClientResponse, String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut greeting = sparkyard::rpc::tcp::MAGIC.to_vec();
    greeting.push(<ClientProtocol as sparkyard::rpc::tcp::WireProtocol>::VERSION);
    s.write_all(&greeting).map_err(|e| e.to_string())?;
    s.write_all(&sparkyard::rpc::auth::plain_hello())
        .map_err(|e| e.to_string())?;
    let call = ClientCall::current(request);
    s.write_all(&encode_frame(&RequestFrame { id: 7, request: call }).unwrap())
        .map_err(|e| e.to_string())?;
    let mut theirs = [0u8; 5];
    s.read_exact(&mut theirs).map_err(|e| e.to_string())?;
    let mut answer = vec![0u8; sparkyard::rpc::auth::plain_answer().len()];
    s.read_exact(&mut answer).map_err(|e| e.to_string())?;
    let mut prefix = [0u8; 4];
    s.read_exact(&mut prefix).map_err(|e| e.to_string())?;
    let mut body = vec![0u8; u32::from_be_bytes(prefix) as usize];
    s.read_exact(&mut body).map_err(|e| e.to_string())?;
    let frame: ResponseFrame<ClientResponse> = rmp_serde::from_slice(&body).map_err(|e| e.to_string())?;
    Ok(frame.response)
}

/// Sends `bytes` on a new connection to `addr`, then (with `half_close`) ends its side;
/// answers how long the server took to close the connection, failing past `bound`.
fn send_and_wait_close(addr: &str, bytes: &[u8], half_close: bool, bound: Duration) -> Duration {
    use std::io::{Read, Write};
    let started = Instant::now();
    let mut s = std::net::TcpStream::connect(addr).expect("the server accepts");
    s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    // The server may close before it has read everything: the write then fails.
    let _ = s.write_all(bytes);
    if half_close {
        let _ = s.shutdown(std::net::Shutdown::Write);
    }
    let mut buf = [0u8; 8192];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return started.elapsed(),
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return started.elapsed(),
        }
        assert!(
            started.elapsed() < bound,
            "{addr} kept a connection open past {bound:?} after {} bytes ({}): {:02x?}",
            bytes.len(),
            if half_close { "half-closed" } else { "left idle" },
            &bytes[..bytes.len().min(256)]
        );
    }
}

/// A greeting, sometimes mutated.
fn greeting(rng: &mut Rng, version: u8) -> Vec<u8> {
    let mut g = sparkyard::rpc::tcp::MAGIC.to_vec();
    g.push(version);
    if rng.chance(8) {
        g = mutate(rng, &g, &[]);
    }
    g
}

/// Mutated connections to a running `sparkyard node`'s client port and actor endpoint: each
/// is closed within a bound once the client ends its side (or, on the client port, once it
/// has sat idle past the idle time-out), and afterwards the node still answers a good
/// client, with no panic on its console.
#[test]
fn the_live_servers_close_bad_connections_in_time_and_still_answer_a_good_client() {
    use std::process::Stdio;
    let (node, err) =
        common::process::start_node_with(&["yarn.sparkyard.client-port.idle-timeout=1s"], Stdio::piped());
    let n = live_inputs();
    let mut rng = Rng::new(seed() ^ 0x50c4);
    let all = decoders();

    // The client port: requests that change nothing on the node (no submissions, no admin
    // calls: a valid fault plan would stop what the test checks), then mutations of them.
    let harmless: Vec<Vec<u8>> = (0..64)
        .filter_map(|_| random_value::<RequestFrame<ClientCall>>(&mut rng))
        .filter(|f| {
            !matches!(
                f.request.request,
                ClientRequest::Admin(_) | ClientRequest::SubmitApplication(_)
            )
        })
        .map(|f| encode_frame(&f).unwrap())
        .collect();
    assert!(harmless.len() >= 8);
    let version = <ClientProtocol as sparkyard::rpc::tcp::WireProtocol>::VERSION;
    let client_decoder = all
        .iter()
        .find(|d| d.name == "frame client port request")
        .unwrap();
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    for _ in 0..n / 2 {
        let mut bytes = greeting(&mut rng, version);
        // Mostly past the handshake (a client that does not authenticate), sometimes a
        // handshake frame mutated with the rest.
        if !rng.chance(8) {
            bytes.extend(sparkyard::rpc::auth::plain_hello());
        }
        for _ in 0..1 + rng.below(3) {
            bytes.extend(input_for(client_decoder, &mut rng, &harmless));
        }
        // One in ten is left open: the idle time-out (1 s here) must end it.
        let half_close = !rng.chance(10);
        let bound = if half_close {
            Duration::from_secs(10)
        } else {
            Duration::from_secs(6)
        };
        slowest = slowest.max(send_and_wait_close(&node.addr, &bytes, half_close, bound));
    }
    let client_port = started.elapsed();

    // The actor endpoint: a hello, then tells and asks of every protocol's messages to the
    // node's actors, mutated.
    let actors = match call(
        &node.addr,
        ClientRequest::Admin(AdminRequest::ListActors { app: None }),
    ) {
        Ok(ClientResponse::Admin(AdminResponse::Actors(actors))) => actors,
        other => panic!("the node lists its actors: {other:?}"),
    };
    let names = message_names(&all);
    let mut frames: Vec<Vec<u8>> = Vec::new();
    for _ in 0..64 {
        let (protocol, message, i) = names[rng.below(names.len())].clone();
        let Some(body) = (all[i].seed)(&mut rng) else {
            continue;
        };
        let to = actors[rng.below(actors.len())].path.as_str().to_string();
        let remote = sparkyard::runtime::remote::RemoteMessage {
            to,
            from: None,
            protocol,
            message,
            body,
            ask: Some(Duration::from_millis(rng.below(500) as u64)),
            origin: None,
            hops: 0,
        };
        let frame = if rng.chance(2) {
            Frame::Tell(sparkyard::runtime::remote::RemoteMessage { ask: None, ..remote })
        } else {
            Frame::Ask {
                id: rng.next(),
                message: remote,
            }
        };
        frames.push(encode_frame(&frame).unwrap());
    }
    let hello = encode_frame(&Frame::Hello { origin: None }).unwrap();
    let actor_decoder = all.iter().find(|d| d.name == "frame actor endpoint").unwrap();
    let started = Instant::now();
    for _ in 0..n / 2 {
        let mut bytes = greeting(&mut rng, sparkyard::rpc::remote::VERSION);
        if !rng.chance(8) {
            bytes.extend(sparkyard::rpc::auth::plain_hello());
        }
        if !rng.chance(8) {
            bytes.extend(&hello);
        }
        for _ in 0..1 + rng.below(3) {
            bytes.extend(input_for(actor_decoder, &mut rng, &frames));
        }
        slowest = slowest.max(send_and_wait_close(
            &node.actors,
            &bytes,
            true,
            Duration::from_secs(15),
        ));
    }
    let actor_endpoint = started.elapsed();

    // Still serving, and nothing panicked.
    match call(&node.addr, ClientRequest::GetClusterNodes(GetClusterNodes)) {
        Ok(ClientResponse::ClusterNodes(nodes)) => assert!(!nodes.is_empty()),
        other => panic!("a good client is answered after the fuzzing: {other:?}"),
    }
    let mut node = node;
    assert!(
        node.child.try_wait().unwrap().is_none(),
        "the node is still running"
    );
    eprintln!(
        "fuzz_wire: {} connections to the client port in {client_port:.1?}, {} to the actor endpoint in {actor_endpoint:.1?}; slowest close {slowest:.1?}",
        n / 2,
        n / 2
    );
    let logs = node.logs.path().to_path_buf();
    let panics: Vec<String> = walk_files(&logs)
        .into_iter()
        .flat_map(|p| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|l| l.contains("\"reason\":\"panic"))
        .collect();
    drop(node);
    let console = common::process::drain(err.unwrap());
    assert!(!console.contains("panicked"), "{console}");
    assert!(panics.is_empty(), "actors panicked:\n{}", panics.join("\n"));
}

fn walk_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.extend(walk_files(&p));
        } else {
            out.push(p);
        }
    }
    out
}
