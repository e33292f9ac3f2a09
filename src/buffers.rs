//! Byte buffers kept between bodies. A page's pipeline works in a few buffers of a chunk's size (the
//! decoded piece, each stage's output, the rewritten chunk). Fresh from the allocator they are fresh
//! pages, and a server's first page paid for them in page faults (~23% of what it cost more than the
//! second, `perf`): each worker thread's heap grows for its first body. Spares made and touched at start
//! serve the first page; at most [`SPARE_BUFFERS`] wait, of at most [`KEPT_BYTES_MAX`] each: an idle
//! proxy holds 576 KiB of them, 2.3 MiB at the very most.

use std::sync::{Mutex, PoisonError};

/// What a spare holds: a decoded piece (32 KiB) and what rules usually add to it.
pub const BUFFER_BYTES: usize = 48 * 1024;

/// Spares kept: a page takes about six (its stages' outputs among them), so two pages at once find theirs.
const SPARE_BUFFERS: usize = 12;

/// A buffer that grew past this for some body goes back to the allocator, not to the spares.
const KEPT_BYTES_MAX: usize = 4 * BUFFER_BYTES;

static SPARES: Spares = Spares(Mutex::new(Vec::new()));

/// An empty buffer of at least [`BUFFER_BYTES`]: a spare when one waits.
pub fn take() -> Vec<u8> {
    SPARES.take()
}

/// Gives `buffer` back: kept (emptied) while there is room and it did not grow too large, else freed.
pub fn give(buffer: Vec<u8>) {
    SPARES.give(buffer)
}

/// Makes the spares that are missing, each written once so that its pages are there before the first
/// body (called at start, off the async workers).
pub fn prepare() {
    SPARES.prepare()
}

struct Spares(Mutex<Vec<Vec<u8>>>);

impl Spares {
    fn take(&self) -> Vec<u8> {
        let spare = self.0.lock().unwrap_or_else(PoisonError::into_inner).pop();
        spare.unwrap_or_else(|| Vec::with_capacity(BUFFER_BYTES))
    }

    fn give(&self, mut buffer: Vec<u8>) {
        if !(BUFFER_BYTES..=KEPT_BYTES_MAX).contains(&buffer.capacity()) {
            return;
        }
        buffer.clear();
        let mut spares = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if spares.len() < SPARE_BUFFERS {
            spares.push(buffer);
        }
    }

    fn prepare(&self) {
        let missing = SPARE_BUFFERS.saturating_sub(self.0.lock().unwrap_or_else(PoisonError::into_inner).len());
        for _ in 0..missing {
            let mut buffer = vec![0u8; BUFFER_BYTES];
            // `vec![0; n]` may come from calloc's untouched zero pages: write them.
            buffer.fill(1);
            self.give(buffer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spares_are_reused_bounded_and_only_of_a_kept_size() {
        // Its own spares: the process's are shared with the tests that run alongside.
        let pool = Spares(Mutex::new(Vec::new()));
        pool.prepare();
        let spares = || pool.0.lock().unwrap().len();
        assert_eq!(spares(), SPARE_BUFFERS, "prepare fills the spares");
        let first = pool.take();
        assert!(first.is_empty() && first.capacity() >= BUFFER_BYTES);
        let address = first.as_ptr();
        pool.give(first);
        let again = pool.take();
        assert_eq!(again.as_ptr(), address, "the buffer given back is the next one taken");
        drop(again);
        pool.give(Vec::with_capacity(KEPT_BYTES_MAX * 2));
        pool.give(Vec::with_capacity(16));
        assert_eq!(spares(), SPARE_BUFFERS - 1, "a buffer too large or too small is freed");
        let mut grown = pool.take();
        grown.extend_from_slice(&[7; 100]);
        pool.give(grown);
        assert!(pool.take().is_empty(), "a spare comes back empty");
        for _ in 0..SPARE_BUFFERS * 2 {
            pool.give(Vec::with_capacity(BUFFER_BYTES));
        }
        assert_eq!(spares(), SPARE_BUFFERS, "never more than SPARE_BUFFERS wait");
        let empty = Spares(Mutex::new(Vec::new()));
        assert!(empty.take().capacity() >= BUFFER_BYTES, "with no spare, a new buffer of the size");
    }
}
