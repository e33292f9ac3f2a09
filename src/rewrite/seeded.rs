//! The seeded random numbers the engine's randomized tests draw their cases from: the same cases on every
//! run, and more of them where a test reads a case count from the environment.

/// Numbers below `n`, from a xorshift64 generator started at `seed`.
pub(super) fn seeded(mut seed: u64) -> impl FnMut(usize) -> usize {
    move |n| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    }
}

/// `len` characters drawn from `letters`.
pub(super) fn text(len: usize, letters: &[u8], next: &mut dyn FnMut(usize) -> usize) -> String {
    (0..len).map(|_| letters[next(letters.len())] as char).collect()
}
