//! Huffman code construction for the DEFLATE encoder (deflate.rs): length-limited code lengths from
//! a histogram, canonical codes from lengths, and the run-length coding of code lengths (RFC 1951).

/// The largest alphabet coded: DEFLATE's 286 literal/length symbols.
const MAX_SYMBOLS: usize = 286;

/// Codes for `lens`; every length counts, even of symbols past `codes`' end (the static code's 286, 287).
pub(super) fn canonical_codes(lens: &[u8], codes: &mut [(u32, u32)]) {
    let mut count = [0u32; 16];
    for &len in lens {
        count[usize::from(len)] += 1;
    }
    count[0] = 0;
    let mut next = [0u32; 16];
    let mut code = 0;
    for bits in 1..16 {
        code = (code + count[bits - 1]) << 1;
        next[bits] = code;
    }
    for (entry, &len) in codes.iter_mut().zip(lens) {
        if len > 0 {
            let len = u32::from(len);
            *entry = (next[len as usize].reverse_bits() >> (32 - len), len);
            next[len as usize] += 1;
        }
    }
}

/// Code lengths for `freq`, none longer than `max_len` (Moffat and Katajainen's in-place
/// minimum-redundancy lengths, then miniz's fix-up of lengths past the limit). Unused symbols get 0;
/// at least two symbols get a code, so every code is complete.
pub(super) fn huffman_lengths(freq: &[u32], max_len: usize, lens: &mut [u8]) {
    lens.fill(0);
    let mut used = [(0u32, 0u16); MAX_SYMBOLS];
    let mut n = 0;
    for (symbol, &f) in freq.iter().enumerate() {
        if f > 0 {
            used[n] = (f, symbol as u16);
            n += 1;
        }
    }
    if n < 2 {
        let only = if n == 1 { usize::from(used[0].1) } else { 0 };
        lens[only] = 1;
        lens[if only == 0 { 1 } else { 0 }] = 1;
        return;
    }
    let used = &mut used[..n];
    used.sort_unstable();
    let mut a: Vec<u32> = used.iter().map(|&(f, _)| f).collect();
    minimum_redundancy(&mut a);
    // Depths per length, the deepest folded into `max_len`, then the Kraft sum brought back to one.
    let mut count = [0u32; 33];
    for &depth in &a {
        count[(depth as usize).min(32)] += 1;
    }
    for depth in max_len + 1..=32 {
        count[max_len] += std::mem::take(&mut count[depth]);
    }
    let mut total: u32 = (1..=max_len).map(|i| count[i] << (max_len - i)).sum();
    while total != 1 << max_len {
        count[max_len] -= 1;
        if let Some(i) = (1..max_len).rev().find(|&i| count[i] > 0) {
            count[i] -= 1;
            count[i + 1] += 2;
        }
        total -= 1;
    }
    // The least frequent symbols get the longest codes.
    let mut next = 0;
    for len in (1..=max_len).rev() {
        for _ in 0..count[len] {
            lens[usize::from(used[next].1)] = len as u8;
            next += 1;
        }
    }
}

/// Moffat and Katajainen (1995), in place: `a` holds frequencies in ascending order (at least two)
/// and comes out holding each one's code length.
fn minimum_redundancy(a: &mut [u32]) {
    let n = a.len();
    a[0] += a[1];
    let (mut root, mut leaf) = (0, 2);
    for next in 1..n - 1 {
        if leaf >= n || a[root] < a[leaf] {
            a[next] = a[root];
            a[root] = next as u32;
            root += 1;
        } else {
            a[next] = a[leaf];
            leaf += 1;
        }
        if leaf >= n || (root < next && a[root] < a[leaf]) {
            a[next] += a[root];
            a[root] = next as u32;
            root += 1;
        } else {
            a[next] += a[leaf];
            leaf += 1;
        }
    }
    a[n - 2] = 0;
    for next in (0..n.saturating_sub(2)).rev() {
        a[next] = a[a[next] as usize] + 1;
    }
    let (mut avail, mut used, mut depth) = (1i64, 0i64, 0u32);
    let (mut root, mut next) = (n as isize - 2, n as isize - 1);
    while avail > 0 {
        while root >= 0 && a[root as usize] == depth {
            used += 1;
            root -= 1;
        }
        while avail > used {
            a[next as usize] = depth;
            next -= 1;
            avail -= 1;
        }
        avail = 2 * used;
        depth += 1;
        used = 0;
    }
}

/// Code lengths as code-length symbols: 16 repeats the previous length 3-6 times, 17 and 18 give
/// runs of 3-10 and 11-138 zeros.
pub(super) fn run_lengths(lens: &[u8]) -> Vec<(u8, u8)> {
    let mut runs = Vec::with_capacity(lens.len());
    let mut i = 0;
    while i < lens.len() {
        let value = lens[i];
        let run = lens[i..].iter().take_while(|&&l| l == value).count();
        let mut left = run;
        if value == 0 {
            while left >= 11 {
                let k = left.min(138);
                runs.push((18, (k - 11) as u8));
                left -= k;
            }
            if left >= 3 {
                runs.push((17, (left - 3) as u8));
                left = 0;
            }
        } else {
            runs.push((value, 0));
            left -= 1;
            while left >= 3 {
                let k = left.min(6);
                runs.push((16, (k - 3) as u8));
                left -= k;
            }
        }
        runs.extend(std::iter::repeat_n((value, 0), left));
        i += run;
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huffman_lengths_make_complete_codes_within_the_limit() {
        // Skewed frequencies (powers of two) make the tallest trees: they must fold into 15 bits.
        let mut skewed = [0u32; 286];
        for (i, f) in skewed.iter_mut().enumerate().take(40) {
            *f = 1 << (i % 31);
        }
        let mut uniform = [7u32; 286];
        uniform[100] = 1_000_000;
        let mut one = [0u32; 30];
        one[29] = 5;
        let none = [0u32; 30];
        for (freq, max) in [(&skewed[..], 15), (&uniform[..], 15), (&one[..], 15), (&none[..], 15), (&skewed[..19], 7)]
        {
            let mut lens = vec![0u8; freq.len()];
            huffman_lengths(freq, max, &mut lens);
            let kraft: f64 = lens.iter().filter(|&&l| l > 0).map(|&l| 0.5f64.powi(i32::from(l))).sum();
            assert_eq!(kraft, 1.0, "complete code for {freq:?}: {lens:?}");
            assert!(lens.iter().all(|&l| usize::from(l) <= max), "{lens:?}");
            assert!(freq.iter().zip(&lens).all(|(&f, &l)| f == 0 || l > 0), "every used symbol has a code");
        }
    }
}
