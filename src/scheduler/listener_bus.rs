//! LiveListenerBus: carries SparkListener events from the DAGScheduler, the DriverEndpoint
//! and the SparkContext to the listeners (the event log, the application's own listeners,
//! later the ExecutorAllocationManager), in order, on its own actor.
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).
//!
//! Posting goes through a [`ListenerBusRef`] into the bus's queue (Spark's
//! AsyncEventQueue), a bounded [`DurableInbox`] of
//! `spark.scheduler.listenerbus.eventqueue.capacity` (10000) events: as Spark does, an
//! event is dropped when the queue is full (logged as it happens, then at each power of
//! two), so a slow listener never holds up the schedulers. With no listener for an event
//! nothing is queued. The inbox wakes the bus, which delivers the queue in order, in
//! batches.
//!
//! The inbox and the listeners are kept by the supervisor: a restarted bus keeps its
//! listeners (the event log goes on in the same file) and delivers what was queued while it
//! was down, so no event is lost to a restart. (The event a listener was handling when it
//! panicked is not delivered again.)

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use actix::{Actor, AsyncContext, Context, Handler};

use super::events::SparkListenerEvent;
use crate::rpc::EndpointRef;
use crate::runtime::{ActorPath, Cluster, DurableInbox, InboxSender, Kept, Me, WakeInbox};

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

/// The bus's queue of events (kept across its restarts).
pub type BusInbox = DurableInbox<SparkListenerEvent>;

/// What the bus tells its posters (kept across its restarts): whether anyone listens, how
/// many events were dropped.
#[derive(Debug, Default)]
pub struct BusCounters {
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

/// How many events one wake delivers before letting other messages in.
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
    inbox: BusInbox,
}

impl LiveListenerBus {
    pub fn new(me: Me, state: Kept<BusState>, counters: Arc<BusCounters>, inbox: BusInbox) -> Self {
        LiveListenerBus {
            me,
            state,
            counters,
            inbox,
        }
    }

    /// Delivers up to `limit` queued events; answers whether the queue is empty.
    fn deliver(&mut self, limit: usize) -> bool {
        let state = &self.state;
        !self.inbox.drain(limit, |event| {
            let mut st = state.lock();
            if st.stopped {
                return;
            }
            for l in st.listeners.iter_mut() {
                l.on_event(&event);
            }
        })
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
        let queued = self.inbox.restarted();
        ctx.notify(WakeInbox::new());
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

impl Handler<WakeInbox<SparkListenerEvent>> for LiveListenerBus {
    type Result = ();

    fn handle(&mut self, _: WakeInbox<SparkListenerEvent>, ctx: &mut Context<Self>) {
        if !self.deliver(DRAIN_BATCH) {
            ctx.notify(WakeInbox::new());
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
    inbox: InboxSender<SparkListenerEvent>,
    capacity: usize,
}

impl std::fmt::Debug for ListenerBusRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ListenerBusRef({})", self.bus.path())
    }
}

impl ListenerBusRef {
    /// The bus at `path` and its inbox, bounded by `capacity` events.
    pub fn new(
        cluster: &Cluster,
        path: &ActorPath,
        counters: Arc<BusCounters>,
        inbox: &BusInbox,
        capacity: usize,
    ) -> Self {
        ListenerBusRef {
            bus: cluster.endpoint(path),
            counters,
            inbox: inbox.sender_to::<ListenerBusProtocol>(cluster, path),
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
        // Not running: its next incarnation delivers the queue when it starts.
        if self.inbox.send(event).is_err() {
            let dropped = self.counters.dropped.fetch_add(1, Ordering::AcqRel);
            if dropped == 0 || dropped.is_power_of_two() {
                tracing::error!(
                    dropped_events = dropped + 1,
                    capacity = self.capacity,
                    "Dropping event from queue appStatus. This likely means one of the listeners is too slow \
                     and cannot keep up with the rate at which tasks are being started by the scheduler."
                );
            }
        }
    }

    pub fn endpoint(&self) -> &EndpointRef<ListenerBusProtocol> {
        &self.bus
    }
}

/// The wake of the bus's durable inbox.
pub type BusWake = WakeInbox<SparkListenerEvent>;

crate::protocol! {
    /// What the LiveListenerBus is asked: add a listener, stop, and the
    /// wake of its durable inbox (the events themselves).
    pub ListenerBusProtocol { AddListener, StopBus, BusWake }
}

crate::speaks!(LiveListenerBus: ListenerBusProtocol);
