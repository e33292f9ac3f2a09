//! Where a literal set's match may start, for WebAssembly: aho-corasick's Teddy (the candidate search
//! of [`super::literals`] natively) is x86/ARM SIMD only, and without it the automaton walks every byte,
//! 3-4x slower than native. This is Teddy's idea on wasm `simd128`: the needles' first bytes (up to
//! three) in at most 8 buckets, each byte position a pair of nibble tables whose lookups (`swizzle`) give
//! the buckets a byte may belong to; a position where every compared byte shares a bucket is a candidate,
//! which the automaton then confirms anchored. Candidates are a superset of the match starts (nibbles
//! of different needles may combine), never missing one.

/// Needles' starts as bucket bits per nibble, for each compared position.
#[derive(Debug, Clone)]
pub(super) struct Fingerprints {
    /// Bytes compared from each position: the shortest needle's length, at most [`MAX_LEN`].
    len: usize,
    lo: [[u8; 16]; MAX_LEN],
    hi: [[u8; 16]; MAX_LEN],
}

const MAX_LEN: usize = 3;
const BUCKETS: usize = 8;

impl Fingerprints {
    /// `None` for an empty needle (a match may start anywhere) or no needle.
    pub(super) fn new(needles: &[&[u8]]) -> Option<Fingerprints> {
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
                lo[k][usize::from(b & 15)] |= bit;
                hi[k][usize::from(b >> 4)] |= bit;
            }
        }
        Some(Fingerprints { len, lo, hi })
    }

    /// The first position at or after `from` where a needle may start and fit in `hay`.
    pub(super) fn find(&self, hay: &[u8], from: usize) -> Option<usize> {
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        return self.find_simd(hay, from);
        #[allow(unreachable_code)]
        self.find_scalar(hay, from)
    }

    fn find_scalar(&self, hay: &[u8], from: usize) -> Option<usize> {
        let last = hay.len().checked_sub(self.len)?;
        (from..=last).find(|&p| {
            let mut buckets = 0xff;
            for k in 0..self.len {
                let b = hay[p + k];
                buckets &= self.lo[k][usize::from(b & 15)] & self.hi[k][usize::from(b >> 4)];
            }
            buckets != 0
        })
    }

    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    fn find_simd(&self, hay: &[u8], from: usize) -> Option<usize> {
        use core::arch::wasm32::*;
        let load = |bytes: &[u8]| {
            assert!(bytes.len() >= 16);
            // SAFETY: 16 bytes are there to read (checked above, and the loop's bound keeps it true).
            unsafe { core::ptr::read_unaligned(bytes.as_ptr().cast::<v128>()) }
        };
        let lo: [v128; MAX_LEN] = core::array::from_fn(|k| load(&self.lo[k]));
        let hi: [v128; MAX_LEN] = core::array::from_fn(|k| load(&self.hi[k]));
        let nibble = u8x16_splat(15);
        let mut p = from;
        // 16 positions a step; the last compared byte of the last position is p + 15 + len - 1.
        while p + 15 + self.len <= hay.len() {
            let mut buckets = u8x16_splat(0xff);
            for k in 0..self.len {
                let bytes = load(&hay[p + k..]);
                let found =
                    v128_and(u8x16_swizzle(lo[k], v128_and(bytes, nibble)), u8x16_swizzle(hi[k], u8x16_shr(bytes, 4)));
                buckets = v128_and(buckets, found);
            }
            let lanes = u8x16_bitmask(u8x16_ne(buckets, u8x16_splat(0)));
            if lanes != 0 {
                return Some(p + lanes.trailing_zeros() as usize);
            }
            p += 16;
        }
        self.find_scalar(hay, p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every real start is a candidate, and the first candidate is no later than the first real start.
    #[test]
    fn candidates_never_miss_a_start() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n) as u8
        };
        for _ in 0..2000 {
            let needles: Vec<Vec<u8>> =
                (0..1 + next(20)).map(|_| (0..1 + next(5)).map(|_| b'a' + next(4)).collect()).collect();
            let refs: Vec<&[u8]> = needles.iter().map(|n| &n[..]).collect();
            let fp = Fingerprints::new(&refs).unwrap();
            let hay: Vec<u8> = (0..next(60)).map(|_| b'a' + next(5)).collect();
            let starts: Vec<usize> = (0..hay.len()).filter(|&p| refs.iter().any(|n| hay[p..].starts_with(n))).collect();
            for &s in &starts {
                assert_eq!(fp.find(&hay, s), Some(s), "{needles:?} in {hay:?} at {s}");
            }
            if let Some(c) = fp.find(&hay, 0) {
                assert!(starts.first().is_none_or(|&s| c <= s));
            }
        }
        assert!(Fingerprints::new(&[b"", b"ab"]).is_none());
    }

    #[test]
    fn candidates_are_rare_where_the_starts_are() {
        let fp = Fingerprints::new(&[b"legacy-host", b"content-block", b"throughput"]).unwrap();
        let hay = b"the cat of a page: lengthy text, then throughput";
        assert_eq!(fp.find(hay, 0), Some(hay.len() - 10));
    }
}
