//! Actor timers on the cluster clock.
//!
//! Layer: runtime (above logs, under everything else).
//!
//! actix's `run_interval` reads tokio's clock; these read the cluster's [`Clock`], so a test
//! with a manual clock steps them explicitly. Each timer is an actor future spawned into the
//! actor's context: its closure runs on the actor with `&mut self` and the context, inside
//! the actor's cell (a panic in it is the actor's failure), and it dies with the incarnation,
//! so register timers in `started()` and every new incarnation gets them again.
//!
//! - [`run_at_fixed_rate`]: ticks at `initial + k·period` (Spark's `scheduleAtFixedRate`);
//!   late ticks fire back to back, as actix's interval does.
//! - [`run_with_fixed_delay`]: the next tick is `period` after the previous one ran (Spark's
//!   `scheduleWithFixedDelay`).
//! - [`run_later`]: one tick after a delay.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use actix::fut::ActorFuture;
use actix::{Actor, AsyncContext, Context, SpawnHandle};

use super::clock::{Clock, Sleep};

/// How a periodic timer re-arms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rearm {
    FixedRate,
    FixedDelay,
}

struct Periodic<A, F> {
    clock: Clock,
    period: Duration,
    next: Duration,
    sleep: Sleep,
    rearm: Rearm,
    f: Box<F>,
    _actor: std::marker::PhantomData<fn(&mut A)>,
}

impl<A, F> ActorFuture<A> for Periodic<A, F>
where
    A: Actor<Context = Context<A>>,
    F: FnMut(&mut A, &mut Context<A>) + 'static,
{
    type Output = ();

    fn poll(self: Pin<&mut Self>, act: &mut A, ctx: &mut Context<A>, task: &mut TaskContext<'_>) -> Poll<()> {
        let this = self.get_mut();
        loop {
            match Pin::new(&mut this.sleep).poll(task) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(()) => {
                    (this.f)(act, ctx);
                    this.next = match this.rearm {
                        Rearm::FixedRate => this.next.saturating_add(this.period),
                        Rearm::FixedDelay => this.clock.now().saturating_add(this.period),
                    };
                    this.sleep = this.clock.sleep_until(this.next);
                }
            }
        }
    }
}

impl<A, F> Unpin for Periodic<A, F> {}

fn periodic<A, F>(
    ctx: &mut Context<A>,
    clock: &Clock,
    initial: Duration,
    period: Duration,
    rearm: Rearm,
    f: F,
) -> SpawnHandle
where
    A: Actor<Context = Context<A>>,
    F: FnMut(&mut A, &mut Context<A>) + 'static,
{
    // A zero period would spin; the smallest period is one millisecond, tokio's resolution.
    let period = period.max(Duration::from_millis(1));
    let next = clock.now().saturating_add(initial);
    ctx.spawn(Periodic {
        clock: clock.clone(),
        period,
        next,
        sleep: clock.sleep_until(next),
        rearm,
        f: Box::new(f),
        _actor: std::marker::PhantomData,
    })
}

/// Calls `f` at `now + initial`, then every `period` after that deadline.
pub fn run_at_fixed_rate<A, F>(
    ctx: &mut Context<A>,
    clock: &Clock,
    initial: Duration,
    period: Duration,
    f: F,
) -> SpawnHandle
where
    A: Actor<Context = Context<A>>,
    F: FnMut(&mut A, &mut Context<A>) + 'static,
{
    periodic(ctx, clock, initial, period, Rearm::FixedRate, f)
}

/// Calls `f` after `initial`, then `period` after each call returned.
pub fn run_with_fixed_delay<A, F>(
    ctx: &mut Context<A>,
    clock: &Clock,
    initial: Duration,
    period: Duration,
    f: F,
) -> SpawnHandle
where
    A: Actor<Context = Context<A>>,
    F: FnMut(&mut A, &mut Context<A>) + 'static,
{
    periodic(ctx, clock, initial, period, Rearm::FixedDelay, f)
}

struct Once<A, F> {
    sleep: Sleep,
    f: Option<Box<F>>,
    _actor: std::marker::PhantomData<fn(&mut A)>,
}

impl<A, F> Unpin for Once<A, F> {}

impl<A, F> ActorFuture<A> for Once<A, F>
where
    A: Actor<Context = Context<A>>,
    F: FnOnce(&mut A, &mut Context<A>) + 'static,
{
    type Output = ();

    fn poll(self: Pin<&mut Self>, act: &mut A, ctx: &mut Context<A>, task: &mut TaskContext<'_>) -> Poll<()> {
        let this = self.get_mut();
        match Pin::new(&mut this.sleep).poll(task) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(()) => {
                if let Some(f) = this.f.take() {
                    f(act, ctx);
                }
                Poll::Ready(())
            }
        }
    }
}

/// Calls `f` once, `delay` from now. Cancel with `ctx.cancel_future(handle)`.
pub fn run_later<A, F>(ctx: &mut Context<A>, clock: &Clock, delay: Duration, f: F) -> SpawnHandle
where
    A: Actor<Context = Context<A>>,
    F: FnOnce(&mut A, &mut Context<A>) + 'static,
{
    ctx.spawn(Once {
        sleep: clock.sleep(delay),
        f: Some(Box::new(f)),
        _actor: std::marker::PhantomData,
    })
}
