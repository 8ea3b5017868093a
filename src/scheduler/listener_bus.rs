//! LiveListenerBus: carries SparkListener events from the DAGScheduler, the DriverEndpoint
//! and the SparkContext to the listeners (the event log, the application's own listeners,
//! later the ExecutorAllocationManager), in order, on its own actor.
//!
//! Posting goes through a [`ListenerBusRef`] into the bus's queue (Spark's
//! AsyncEventQueue), bounded by `spark.scheduler.listenerbus.eventqueue.capacity` (10000):
//! as Spark does, an event is dropped when the queue is full (logged as it happens, then at
//! each power of two), so a slow listener never holds up the schedulers. With no listener
//! for an event nothing is queued. A `Drain` message wakes the bus, which delivers the
//! queue in order, in batches.
//!
//! The queue and the listeners are kept by the supervisor: a restarted bus keeps its
//! listeners (the event log goes on in the same file) and delivers what was queued while it
//! was down, so no event is lost to a restart. (The event a listener was handling when it
//! panicked is not delivered again.)

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use actix::{Actor, AsyncContext, Context, Handler};

use super::events::SparkListenerEvent;
use crate::rpc::EndpointRef;
use crate::runtime::{Kept, Me};

/// Something that wants the bus's events (Spark's SparkListenerInterface).
pub trait SparkListener: Send {
    /// Its name in logs.
    fn name(&self) -> &str;
    fn on_event(&mut self, event: &SparkListenerEvent);
    /// The bus stops (the application ends): flush, close files.
    fn on_stop(&mut self) {}
    /// Whether this listener needs only executor events (added, removed) and the
    /// application's start and end. When every listener says so, posters skip the job,
    /// stage and task events, the per-task cost of the bus (the HeartbeatReceiver's
    /// listener is always there; the event log and the allocation manager are not).
    fn only_executor_events(&self) -> bool {
        false
    }
}

/// A listener that keeps every event (for tests and for applications that inspect a run).
#[derive(Clone, Default)]
pub struct CollectingListener {
    events: Arc<Mutex<Vec<SparkListenerEvent>>>,
}

impl CollectingListener {
    pub fn new() -> Self {
        Self::default()
    }
    /// The events so far.
    pub fn events(&self) -> Vec<SparkListenerEvent> {
        self.events.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl SparkListener for CollectingListener {
    fn name(&self) -> &str {
        "CollectingListener"
    }
    fn on_event(&mut self, event: &SparkListenerEvent) {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(event.clone());
    }
}

/// The events waiting for the bus.
#[derive(Debug, Default)]
struct BusQueue {
    events: VecDeque<SparkListenerEvent>,
    /// A `Drain` is on its way.
    wake_sent: bool,
}

/// What posters share with the bus (kept across its restarts): the queue, whether anyone
/// listens, how many events were dropped.
#[derive(Debug, Default)]
pub struct BusCounters {
    queue: Mutex<BusQueue>,
    listeners: AtomicUsize,
    /// Listeners that want every event (not only executor events).
    all_event_listeners: AtomicUsize,
    dropped: AtomicU64,
}

/// The listeners, kept across restarts of the bus.
#[derive(Default)]
pub struct BusState {
    listeners: Vec<Box<dyn SparkListener>>,
    stopped: bool,
}

impl BusState {
    /// A bus that starts with these listeners (the driver's own: the HeartbeatReceiver's,
    /// the ExecutorAllocationManager's).
    pub fn with_listeners(listeners: Vec<Box<dyn SparkListener>>) -> Self {
        BusState {
            listeners,
            stopped: false,
        }
    }

    fn count(&self, counters: &BusCounters) {
        counters.listeners.store(self.listeners.len(), Ordering::Release);
        let all = self
            .listeners
            .iter()
            .filter(|l| !l.only_executor_events())
            .count();
        counters.all_event_listeners.store(all, Ordering::Release);
    }
}

impl std::fmt::Debug for BusState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.listeners.iter().map(|l| l.name()).collect();
        write!(f, "BusState({names:?}, stopped={})", self.stopped)
    }
}

/// Wakes the bus to deliver its queue.
#[derive(actix::Message)]
#[rtype(result = "()")]
pub struct Drain;

/// How many events one `Drain` delivers before letting other messages in.
const DRAIN_BATCH: usize = 512;

/// Registers a listener (answers once it will see every later event).
#[derive(actix::Message)]
#[rtype(result = "()")]
pub struct AddListener(pub Box<dyn SparkListener>);

/// Delivers what is queued, then stops every listener (answers when they have stopped).
#[derive(actix::Message)]
#[rtype(result = "()")]
pub struct StopBus;

/// The LiveListenerBus actor; see the module docs.
pub struct LiveListenerBus {
    me: Me,
    state: Kept<BusState>,
    counters: Arc<BusCounters>,
}

impl LiveListenerBus {
    pub fn new(me: Me, state: Kept<BusState>, counters: Arc<BusCounters>) -> Self {
        LiveListenerBus { me, state, counters }
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, BusQueue> {
        self.counters.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Delivers up to `limit` queued events; answers whether the queue is empty.
    fn deliver(&mut self, limit: usize) -> bool {
        for _ in 0..limit {
            let next = {
                let mut q = self.queue();
                let e = q.events.pop_front();
                if e.is_none() {
                    q.wake_sent = false;
                }
                e
            };
            let Some(event) = next else { return true };
            let mut st = self.state.lock();
            if st.stopped {
                continue;
            }
            for l in st.listeners.iter_mut() {
                l.on_event(&event);
            }
        }
        false
    }

    /// Delivers everything queued now (before a listener is added or the bus stops).
    fn deliver_all(&mut self) {
        while !self.deliver(usize::MAX) {}
    }
}

impl Actor for LiveListenerBus {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let n = {
            let st = self.state.lock();
            st.count(&self.counters);
            st.listeners.len()
        };
        // A wake sent to the previous incarnation died with its mailbox.
        let queued = {
            let mut q = self.queue();
            q.wake_sent = true;
            q.events.len()
        };
        ctx.notify(Drain);
        if self.me.incarnation() > 1 {
            tracing::info!(
                event = "reconciled",
                listeners = n as u64,
                queued_events = queued as u64,
                "Listener bus restarted with its {n} listeners and {queued} queued event(s)"
            );
        }
    }
}

impl Handler<Drain> for LiveListenerBus {
    type Result = ();

    fn handle(&mut self, _: Drain, ctx: &mut Context<Self>) {
        if !self.deliver(DRAIN_BATCH) {
            ctx.notify(Drain);
        }
    }
}

impl Handler<AddListener> for LiveListenerBus {
    type Result = ();

    fn handle(&mut self, msg: AddListener, _: &mut Context<Self>) {
        // It sees the events posted from now on, not those queued before.
        self.deliver_all();
        let mut st = self.state.lock();
        tracing::info!(listener = msg.0.name(), "Registered listener {}", msg.0.name());
        st.listeners.push(msg.0);
        st.count(&self.counters);
    }
}

impl Handler<StopBus> for LiveListenerBus {
    type Result = ();

    fn handle(&mut self, _: StopBus, _: &mut Context<Self>) {
        self.deliver_all();
        let mut st = self.state.lock();
        if st.stopped {
            return;
        }
        st.stopped = true;
        for l in st.listeners.iter_mut() {
            l.on_stop();
        }
        self.counters.listeners.store(0, Ordering::Release);
        self.counters.all_event_listeners.store(0, Ordering::Release);
        let dropped = self.counters.dropped.load(Ordering::Acquire);
        tracing::info!(dropped_events = dropped, "Stopped the listener bus");
    }
}

/// How posters reach the bus.
#[derive(Clone)]
pub struct ListenerBusRef {
    bus: EndpointRef<ListenerBusProtocol>,
    counters: Arc<BusCounters>,
    capacity: usize,
}

impl std::fmt::Debug for ListenerBusRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ListenerBusRef({})", self.bus.path())
    }
}

impl ListenerBusRef {
    pub fn new(bus: EndpointRef<ListenerBusProtocol>, counters: Arc<BusCounters>, capacity: usize) -> Self {
        ListenerBusRef {
            bus,
            counters,
            capacity: capacity.max(1),
        }
    }

    /// Whether any listener wants job, stage and task events (posters may skip building
    /// them otherwise).
    pub fn has_listeners(&self) -> bool {
        self.counters.all_event_listeners.load(Ordering::Acquire) > 0
    }

    /// Posts `event` unless nobody listens for it or the queue is full.
    pub fn post(&self, event: SparkListenerEvent) {
        let wanted = match event {
            SparkListenerEvent::ExecutorAdded { .. }
            | SparkListenerEvent::ExecutorRemoved { .. }
            | SparkListenerEvent::ApplicationStart { .. }
            | SparkListenerEvent::ApplicationEnd { .. } => {
                self.counters.listeners.load(Ordering::Acquire) > 0
            }
            _ => self.has_listeners(),
        };
        if !wanted {
            return;
        }
        let wake = {
            let mut q = self.counters.queue.lock().unwrap_or_else(|p| p.into_inner());
            if q.events.len() >= self.capacity {
                drop(q);
                let dropped = self.counters.dropped.fetch_add(1, Ordering::AcqRel);
                if dropped == 0 || dropped.is_power_of_two() {
                    tracing::error!(
                        dropped_events = dropped + 1,
                        capacity = self.capacity,
                        "Dropping event from queue appStatus. This likely means one of the listeners is too slow \
                         and cannot keep up with the rate at which tasks are being started by the scheduler."
                    );
                }
                return;
            }
            q.events.push_back(event);
            !std::mem::replace(&mut q.wake_sent, true)
        };
        if wake && self.bus.tell(Drain).is_err() {
            // Not running: its next incarnation delivers the queue when it starts.
            let mut q = self.counters.queue.lock().unwrap_or_else(|p| p.into_inner());
            q.wake_sent = false;
        }
    }

    pub fn endpoint(&self) -> &EndpointRef<ListenerBusProtocol> {
        &self.bus
    }
}

crate::protocol! {
    /// What the LiveListenerBus is asked: add a listener, drain the queue, stop.
    pub ListenerBusProtocol { AddListener, Drain, StopBus }
}

crate::speaks!(LiveListenerBus: ListenerBusProtocol);
