//! Compressor states (and our inflater's) kept between responses: setting one up costs more than resetting
//! it (a DEFLATE state is ~350 KiB with its block of tokens, a zstd one more, an inflater ~93 KiB). At most
//! [`IDLE_STATES`] wait per kind, so an idle proxy holds a few MiB at most. Only states whose stream was
//! finished go back: a response cut off mid-way is rare, and a reset after a half-written stream is where
//! compressors go wrong (zlib-rs 0.6.8's leaves its quick strategy's open block behind, and the next stream
//! comes out corrupt).

use std::sync::Mutex;

pub(super) const IDLE_STATES: usize = 4;

/// A compressor state that can start a new stream.
pub(super) trait Reusable: Send + 'static {
    /// Makes the state ready for a new stream; `false` if it cannot be reused.
    fn reset(&mut self) -> bool;
}

impl Reusable for super::deflate::FastDeflate {
    fn reset(&mut self) -> bool {
        super::deflate::FastDeflate::reset(self);
        true
    }
}

impl Reusable for super::Inflate {
    /// Nothing here: `Decoder::new` restarts every state it takes, in its body's coding.
    fn reset(&mut self) -> bool {
        true
    }
}

impl Reusable for zstd::stream::raw::Encoder<'static> {
    fn reset(&mut self) -> bool {
        zstd::stream::raw::Operation::reinit(self).is_ok()
    }
}

pub(super) struct Pool<T> {
    idle: Mutex<Vec<T>>,
}

impl<T: Reusable> Pool<T> {
    pub(super) const fn new() -> Pool<T> {
        Pool { idle: Mutex::new(Vec::new()) }
    }

    pub(super) fn take(&'static self, make: impl FnOnce() -> T) -> Pooled<T> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        Pooled { state: Some(idle.unwrap_or_else(make)), home: self, stream_finished: false }
    }

    /// Makes one state ahead of the first stream when none waits (a new state is ~350 KiB of fresh pages:
    /// made at start, its cost is not the first response's).
    pub(super) fn prepare(&'static self, make: impl FnOnce() -> T) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.is_empty() {
            idle.push(make());
        }
    }

    #[cfg(test)]
    pub(super) fn idle(&self) -> usize {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// A state on loan from a pool; dropping it after [`Pooled::stream_finished`] resets it and gives
/// it back.
pub(super) struct Pooled<T: Reusable> {
    state: Option<T>,
    home: &'static Pool<T>,
    stream_finished: bool,
}

impl<T: Reusable> Pooled<T> {
    /// The stream ended cleanly: the state may serve another one.
    pub(super) fn stream_finished(&mut self) {
        self.stream_finished = true;
    }
}

impl<T: Reusable> std::ops::Deref for Pooled<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.state.as_ref().expect("present until dropped")
    }
}

impl<T: Reusable> std::ops::DerefMut for Pooled<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.state.as_mut().expect("present until dropped")
    }
}

impl<T: Reusable> Drop for Pooled<T> {
    fn drop(&mut self) {
        let Some(mut state) = self.state.take() else { return };
        if !self.stream_finished || !state.reset() {
            return;
        }
        let mut idle = self.home.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < IDLE_STATES {
            idle.push(state);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_take_back_only_finished_states_and_only_a_few() {
        use std::sync::atomic::{AtomicU32, Ordering};
        struct Counted(u32);
        impl Reusable for Counted {
            fn reset(&mut self) -> bool {
                self.0 != 0 // state 0 stands for one that cannot be reset
            }
        }
        static POOL: Pool<Counted> = Pool::new();
        static MADE: AtomicU32 = AtomicU32::new(0);
        let make = || Counted(MADE.fetch_add(1, Ordering::Relaxed) + 1);
        let finished = |mut state: Pooled<Counted>| state.stream_finished();
        finished(POOL.take(make));
        finished(POOL.take(make));
        assert_eq!(MADE.load(Ordering::Relaxed), 1, "the second response reuses the first one's state");
        drop(POOL.take(make));
        assert_eq!(POOL.idle(), 0, "a stream cut off mid-way does not give its state back");
        let busy: Vec<_> = (0..IDLE_STATES + 3).map(|_| POOL.take(make)).collect();
        busy.into_iter().for_each(finished);
        assert_eq!(POOL.idle(), IDLE_STATES, "only a few states wait");
        let busy: Vec<_> = (0..IDLE_STATES).map(|_| POOL.take(make)).collect();
        finished(POOL.take(|| Counted(0)));
        assert_eq!(POOL.idle(), 0, "a state that cannot be reset is not kept");
        busy.into_iter().for_each(finished);
        assert_eq!(POOL.idle(), IDLE_STATES);
    }

    #[test]
    fn a_prepared_state_serves_the_first_stream_and_only_an_empty_pool_gets_one() {
        struct Plain;
        impl Reusable for Plain {
            fn reset(&mut self) -> bool {
                true
            }
        }
        static POOL: Pool<Plain> = Pool::new();
        POOL.prepare(|| Plain);
        POOL.prepare(|| Plain);
        assert_eq!(POOL.idle(), 1, "a pool with a waiting state gets no other");
        let mut first = POOL.take(|| panic!("the first stream makes a state although one was prepared"));
        first.stream_finished();
        drop(first);
        assert_eq!(POOL.idle(), 1);
    }
}
