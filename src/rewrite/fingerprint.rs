//! Where a literal set's match may start, 32 positions at a time: Teddy's idea (aho-corasick's packed
//! searcher) with the candidates handed out as a bit mask instead of one search per match. The needles'
//! first bytes (up to three) go in at most 8 buckets, each compared byte position a pair of nibble
//! tables whose lookups (`pshufb`, wasm `swizzle`) give the buckets a byte may belong to; a position where
//! every compared byte shares a bucket is a candidate. Candidates are a superset of the match starts
//! (nibbles of different needles may combine), never missing one. Where matches are dense (a word list
//! over text, one match every ~10 bytes), aho-corasick's search restarted after each match cost ~18 ns
//! a match, these masks under 2 (benches/rules.rs `rules/words`).

/// Needles' starts as bucket bits per nibble, for each compared position.
#[derive(Debug, Clone)]
pub(super) struct Fingerprints {
    /// Bytes compared from each position: the shortest needle's length, at most [`MAX_LEN`].
    len: usize,
    lo: [[u8; 16]; MAX_LEN],
    hi: [[u8; 16]; MAX_LEN],
    simd: Simd,
}

const MAX_LEN: usize = 3;
// The vector code compares the three positions written out.
const _: () = assert!(MAX_LEN == 3);
const BUCKETS: usize = 8;
/// Positions a [`Fingerprints::block`] covers.
pub(super) const BLOCK: usize = 32;

/// The vector instructions this machine has for [`Fingerprints::block`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Simd {
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Ssse3,
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    Simd128,
    /// None: one position at a time (far slower than aho-corasick's own search).
    Scalar,
}

impl Simd {
    fn detect() -> Simd {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                return Simd::Avx2;
            }
            if std::arch::is_x86_feature_detected!("ssse3") {
                return Simd::Ssse3;
            }
        }
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        return Simd::Simd128;
        #[allow(unreachable_code)]
        Simd::Scalar
    }
}

impl Fingerprints {
    /// `None` for an empty needle (a match may start anywhere) or no needle.
    pub(super) fn new(needles: &[&[u8]]) -> Option<Fingerprints> {
        Fingerprints::of_starts(needles, false)
    }

    /// For needles whose ASCII letters match in either case: a letter's two cases differ only in their
    /// high nibble, so both go in its bucket. Needles given in one case keep a needle's variants in one
    /// bucket (other needles sort between them otherwise, which only adds candidates).
    pub(super) fn any_case(needles: &[&[u8]]) -> Option<Fingerprints> {
        Fingerprints::of_starts(needles, true)
    }

    fn of_starts(needles: &[&[u8]], any_case: bool) -> Option<Fingerprints> {
        let len = needles.iter().map(|n| n.len()).min()?.min(MAX_LEN);
        if len == 0 {
            return None;
        }
        let mut starts: Vec<&[u8]> = needles.iter().map(|n| &n[..len]).collect();
        starts.sort_unstable();
        starts.dedup();
        let (mut lo, mut hi) = ([[0u8; 16]; MAX_LEN], [[0u8; 16]; MAX_LEN]);
        for (i, start) in starts.iter().enumerate() {
            // Sorted starts in contiguous buckets: neighbours share leading bytes, so fewer nibble mixes
            // of different needles come out as candidates.
            let bit = 1u8 << (i * BUCKETS / starts.len());
            for (k, &b) in start.iter().enumerate() {
                let cases = if any_case { [b.to_ascii_lowercase(), b.to_ascii_uppercase()] } else { [b, b] };
                for b in cases {
                    lo[k][usize::from(b & 15)] |= bit;
                    hi[k][usize::from(b >> 4)] |= bit;
                }
            }
        }
        // Past the compared bytes every byte is in every bucket: the vector code compares all three.
        for k in len..MAX_LEN {
            (lo[k], hi[k]) = ([0xff; 16], [0xff; 16]);
        }
        Some(Fingerprints { len, lo, hi, simd: Simd::detect() })
    }

    /// Whether [`Fingerprints::block`] runs on vector instructions here.
    pub(super) fn vectorised(&self) -> bool {
        self.simd != Simd::Scalar
    }

    /// Where a block may be read from `p`: `p` and the [`BLOCK`] positions after it, each with the bytes
    /// it compares.
    #[cfg(test)]
    fn block_fits(&self, hay: &[u8], p: usize) -> bool {
        p + BLOCK + self.len - 1 <= hay.len()
    }

    /// The candidates among positions `p..p + BLOCK`, bit `i` for `p + i`. Needs [`Fingerprints::block_fits`].
    #[cfg(test)]
    fn block(&self, hay: &[u8], p: usize) -> u32 {
        self.next_block(hay, p, p + 1).1
    }

    /// From `p` on, block after block, the first block with a candidate, as (its first position, its
    /// candidates); stops at a block that would start at `stop` or after or not fit in `hay` (then with no
    /// candidates). Where candidates are rare the loop stays in vector code.
    pub(super) fn next_block(&self, hay: &[u8], p: usize, stop: usize) -> (usize, u32) {
        // Where the last block that fits starts.
        let Some(fits) = (hay.len() + 1).checked_sub(BLOCK + self.len) else { return (p, 0) };
        self.drive(hay, NextBlock { p, stop: stop.min(fits + 1) })
    }

    /// Runs `body` with the block function of this machine's vector instructions, its tables loaded once.
    /// `body` is inlined into a function compiled for those instructions, so a loop that does its own work
    /// between blocks (`literal_run` replaces matches) pays no call per block.
    pub(super) fn drive<L: BlockLoop>(&self, hay: &[u8], body: L) -> L::Output {
        // Where the last block that fits starts, for the vector code, which reads all [`MAX_LEN`] bytes.
        let fits = (hay.len() + 1).checked_sub(BLOCK + MAX_LEN);
        match self.simd {
            // SAFETY: `detect` found the instructions on this CPU.
            #[cfg(target_arch = "x86_64")]
            Simd::Avx2 => unsafe { self.drive_avx2(hay, fits, body) },
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            Simd::Ssse3 => unsafe { self.drive_ssse3(hay, fits, body) },
            #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
            Simd::Simd128 => body.run(Simd128Blocks { fingerprints: self, hay, fits }),
            Simd::Scalar => body.run(ScalarBlocks { fingerprints: self, hay }),
        }
    }

    /// The candidates among `p..p + BLOCK`, one position at a time (past the blocks that fit in the hay).
    pub(super) fn scalar_block(&self, hay: &[u8], p: usize) -> u32 {
        (0..BLOCK).fold(0, |bits, i| bits | (u32::from(self.candidate(hay, p + i)) << i))
    }

    /// Whether a needle may start at `p`.
    pub(super) fn candidate(&self, hay: &[u8], p: usize) -> bool {
        let Some(bytes) = hay.get(p..p + self.len) else { return false };
        let mut buckets = 0xff;
        for (k, &b) in bytes.iter().enumerate() {
            buckets &= self.lo[k][usize::from(b & 15)] & self.hi[k][usize::from(b >> 4)];
        }
        buckets != 0
    }

    /// The first candidate at or after `from`.
    pub(super) fn find(&self, hay: &[u8], from: usize) -> Option<usize> {
        let (p, bits) = self.next_block(hay, from, usize::MAX);
        if bits != 0 {
            return Some(p + bits.trailing_zeros() as usize);
        }
        (p..hay.len()).find(|&p| self.candidate(hay, p))
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn drive_avx2<L: BlockLoop>(&self, hay: &[u8], fits: Option<usize>, body: L) -> L::Output {
        use std::arch::x86_64::*;
        // SAFETY: a table is 16 bytes, the load's width.
        let table = |t: &[u8; 16]| _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(t.as_ptr().cast()) });
        let lo = std::array::from_fn(|k| table(&self.lo[k]));
        let hi = std::array::from_fn(|k| table(&self.hi[k]));
        body.run(Avx2Blocks { fingerprints: self, hay, fits, lo, hi })
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "ssse3")]
    unsafe fn drive_ssse3<L: BlockLoop>(&self, hay: &[u8], fits: Option<usize>, body: L) -> L::Output {
        use std::arch::x86_64::*;
        // SAFETY: a table is 16 bytes, the load's width.
        let table = |t: &[u8; 16]| unsafe { _mm_loadu_si128(t.as_ptr().cast()) };
        let lo = std::array::from_fn(|k| table(&self.lo[k]));
        let hi = std::array::from_fn(|k| table(&self.hi[k]));
        body.run(Ssse3Blocks { fingerprints: self, hay, fits, lo, hi })
    }
}

/// A loop that takes a block of candidates at a time, from wherever it stands (see [`Fingerprints::drive`]).
pub(super) trait BlockLoop {
    type Output;
    /// Runs the loop with `blocks`; implementations are `#[inline(always)]`, so that the loop is compiled
    /// with the vector instructions of the block function it is given.
    fn run<B: Blocks>(self, blocks: B) -> Self::Output;
}

/// The candidates of a block of positions.
pub(super) trait Blocks {
    /// Bit `i` for position `p + i`, for any `p` (one by one where the block does not fit in the hay).
    fn block(&self, p: usize) -> u32;
}

/// [`Fingerprints::next_block`]'s loop.
struct NextBlock {
    p: usize,
    stop: usize,
}

impl BlockLoop for NextBlock {
    type Output = (usize, u32);

    #[inline(always)]
    fn run<B: Blocks>(self, blocks: B) -> (usize, u32) {
        let mut p = self.p;
        while p < self.stop {
            let bits = blocks.block(p);
            if bits != 0 {
                return (p, bits);
            }
            p += BLOCK;
        }
        (p, 0)
    }
}

struct ScalarBlocks<'a> {
    fingerprints: &'a Fingerprints,
    hay: &'a [u8],
}

impl Blocks for ScalarBlocks<'_> {
    #[inline(always)]
    fn block(&self, p: usize) -> u32 {
        self.fingerprints.scalar_block(self.hay, p)
    }
}

/// The tables in AVX2 registers; made only where the CPU has AVX2 (`drive_avx2`).
#[cfg(target_arch = "x86_64")]
struct Avx2Blocks<'a> {
    fingerprints: &'a Fingerprints,
    hay: &'a [u8],
    /// Where the last block that fits starts.
    fits: Option<usize>,
    lo: [std::arch::x86_64::__m256i; MAX_LEN],
    hi: [std::arch::x86_64::__m256i; MAX_LEN],
}

#[cfg(target_arch = "x86_64")]
impl Blocks for Avx2Blocks<'_> {
    #[inline(always)]
    fn block(&self, p: usize) -> u32 {
        use std::arch::x86_64::*;
        let (fingerprints, hay) = (self.fingerprints, self.hay);
        if self.fits.is_none_or(|fits| p > fits) {
            return fingerprints.scalar_block(hay, p);
        }
        // SAFETY: this is made only where the CPU has AVX2 (`drive_avx2`); a block that starts at or before
        // `fits` loads `hay[p + k..p + k + 32]` for `k` below [`MAX_LEN`], all inside `hay`.
        unsafe {
            let bytes = hay.as_ptr().add(p);
            let first = avx2_buckets(bytes, self.lo[0], self.hi[0]);
            let second = avx2_buckets(bytes.add(1), self.lo[1], self.hi[1]);
            let third = avx2_buckets(bytes.add(2), self.lo[2], self.hi[2]);
            let buckets = _mm256_and_si256(_mm256_and_si256(first, second), third);
            !(_mm256_movemask_epi8(_mm256_cmpeq_epi8(buckets, _mm256_setzero_si256())) as u32)
        }
    }
}

/// The buckets of the 32 bytes at `bytes` by one position's tables.
///
/// # Safety
/// The CPU has AVX2 and 32 bytes are readable at `bytes`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn avx2_buckets(
    bytes: *const u8,
    lo: std::arch::x86_64::__m256i,
    hi: std::arch::x86_64::__m256i,
) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::*;
    // SAFETY: as the caller promises.
    unsafe {
        let nibble = _mm256_set1_epi8(15);
        let bytes = _mm256_loadu_si256(bytes.cast());
        let low = _mm256_shuffle_epi8(lo, _mm256_and_si256(bytes, nibble));
        let high = _mm256_shuffle_epi8(hi, _mm256_and_si256(_mm256_srli_epi16(bytes, 4), nibble));
        _mm256_and_si256(low, high)
    }
}

/// The same for the 16 bytes at `bytes` with SSSE3.
///
/// # Safety
/// The CPU has SSSE3 and 16 bytes are readable at `bytes`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn ssse3_buckets(
    bytes: *const u8,
    lo: std::arch::x86_64::__m128i,
    hi: std::arch::x86_64::__m128i,
) -> std::arch::x86_64::__m128i {
    use std::arch::x86_64::*;
    // SAFETY: as the caller promises.
    unsafe {
        let nibble = _mm_set1_epi8(15);
        let bytes = _mm_loadu_si128(bytes.cast());
        let low = _mm_shuffle_epi8(lo, _mm_and_si128(bytes, nibble));
        let high = _mm_shuffle_epi8(hi, _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble));
        _mm_and_si128(low, high)
    }
}

/// The tables in SSSE3 registers; made only where the CPU has SSSE3 (`drive_ssse3`).
#[cfg(target_arch = "x86_64")]
struct Ssse3Blocks<'a> {
    fingerprints: &'a Fingerprints,
    hay: &'a [u8],
    fits: Option<usize>,
    lo: [std::arch::x86_64::__m128i; MAX_LEN],
    hi: [std::arch::x86_64::__m128i; MAX_LEN],
}

#[cfg(target_arch = "x86_64")]
impl Blocks for Ssse3Blocks<'_> {
    #[inline(always)]
    fn block(&self, p: usize) -> u32 {
        use std::arch::x86_64::*;
        let (fingerprints, hay) = (self.fingerprints, self.hay);
        if self.fits.is_none_or(|fits| p > fits) {
            return fingerprints.scalar_block(hay, p);
        }
        let mut bits = 0u32;
        for half in [0, 16] {
            // SAFETY: made only where the CPU has SSSE3 (`drive_ssse3`); the loads stay inside `hay` as in
            // `Avx2Blocks`.
            let empty = unsafe {
                let bytes = hay.as_ptr().add(p + half);
                let first = ssse3_buckets(bytes, self.lo[0], self.hi[0]);
                let second = ssse3_buckets(bytes.add(1), self.lo[1], self.hi[1]);
                let third = ssse3_buckets(bytes.add(2), self.lo[2], self.hi[2]);
                let buckets = _mm_and_si128(_mm_and_si128(first, second), third);
                _mm_movemask_epi8(_mm_cmpeq_epi8(buckets, _mm_setzero_si128())) as u32
            };
            bits |= (!empty & 0xffff) << half;
        }
        bits
    }
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
struct Simd128Blocks<'a> {
    fingerprints: &'a Fingerprints,
    hay: &'a [u8],
    fits: Option<usize>,
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
impl Blocks for Simd128Blocks<'_> {
    #[inline(always)]
    fn block(&self, p: usize) -> u32 {
        let (fingerprints, hay) = (self.fingerprints, self.hay);
        if self.fits.is_none_or(|fits| p > fits) {
            return fingerprints.scalar_block(hay, p);
        }
        fingerprints.half_simd128(hay, p) | (fingerprints.half_simd128(hay, p + 16) << 16)
    }
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
impl Fingerprints {
    #[inline(always)]
    fn half_simd128(&self, hay: &[u8], p: usize) -> u32 {
        use core::arch::wasm32::*;
        let load = |bytes: &[u8]| {
            assert!(bytes.len() >= 16);
            // SAFETY: 16 bytes are there (asserted); `v128` may be read unaligned.
            unsafe { core::ptr::read_unaligned(bytes.as_ptr().cast::<v128>()) }
        };
        let nibble = u8x16_splat(15);
        let mut buckets = u8x16_splat(0xff);
        for k in 0..self.len {
            let bytes = load(&hay[p + k..]);
            let found = v128_and(
                u8x16_swizzle(load(&self.lo[k]), v128_and(bytes, nibble)),
                u8x16_swizzle(load(&self.hi[k]), u8x16_shr(bytes, 4)),
            );
            buckets = v128_and(buckets, found);
        }
        u32::from(u8x16_bitmask(u8x16_ne(buckets, u8x16_splat(0))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rewrite::seeded::seeded;

    /// Every real start is a candidate, and the first candidate is no later than the first real start.
    #[test]
    fn candidates_never_miss_a_start() {
        let mut random = seeded(0x2545_f491_4f6c_dd1du64);
        let mut next = |n: u64| random(n as usize) as u8;
        for _ in 0..2000 {
            let needles: Vec<Vec<u8>> =
                (0..1 + next(20)).map(|_| (0..1 + next(5)).map(|_| b'a' + next(4)).collect()).collect();
            let refs: Vec<&[u8]> = needles.iter().map(|n| &n[..]).collect();
            let fp = Fingerprints::new(&refs).unwrap();
            let hay: Vec<u8> = (0..next(120)).map(|_| b'a' + next(5)).collect();
            // Every kind of vector this machine has gives the same blocks as the scalar code.
            for simd in available() {
                let other = Fingerprints { simd, ..fp.clone() };
                for p in 0..hay.len() {
                    assert_eq!(other.next_block(&hay, p, hay.len()), fp.next_block(&hay, p, hay.len()), "{simd:?}");
                }
            }
            let starts: Vec<usize> = (0..hay.len()).filter(|&p| refs.iter().any(|n| hay[p..].starts_with(n))).collect();
            for &s in &starts {
                assert_eq!(fp.find(&hay, s), Some(s), "{needles:?} in {hay:?} at {s}");
            }
            if let Some(c) = fp.find(&hay, 0) {
                assert!(starts.first().is_none_or(|&s| c <= s));
            }
            // A block's bits are the positions' own answers.
            for p in (0..hay.len()).filter(|&p| fp.block_fits(&hay, p)) {
                let one_by_one = fp.scalar_block(&hay, p);
                assert_eq!(fp.block(&hay, p), one_by_one, "{needles:?} in {hay:?} from {p}");
            }
        }
        assert!(Fingerprints::new(&[b"", b"ab"]).is_none());
    }

    fn available() -> Vec<Simd> {
        let mut kinds = vec![Simd::Scalar, Simd::detect()];
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("ssse3") {
            kinds.push(Simd::Ssse3);
        }
        kinds
    }

    #[test]
    fn candidates_are_rare_where_the_starts_are() {
        let fp = Fingerprints::new(&[b"legacy-host", b"content-block", b"throughput"]).unwrap();
        let hay = b"the cat of a page: lengthy text, then throughput";
        assert_eq!(fp.find(hay, 0), Some(hay.len() - 10));
    }

    #[test]
    fn this_machine_has_vectors() {
        // The build machines (x86-64 with AVX2 or SSSE3, wasm with simd128) all do.
        assert!(Fingerprints::new(&[b"abc"]).unwrap().vectorised());
    }
}
