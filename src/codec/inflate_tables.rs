//! The decode tables of [`super::Inflate`]: canonical Huffman codes (RFC 1951 §3.2.2) as a root
//! table indexed by a code's first bits plus sub-tables for longer codes, and the entries they hold.

use super::{Tables, BAD, BASE, DIST_BASE, DIST_ROOT, END, LEN_BASE, LEN_EXTRA, LINK, LITERAL, LIT_ROOT};

pub(super) fn low(n: u32) -> u64 {
    (1u64 << n) - 1
}

/// The entry of the code at the bottom of `bb`, through its sub-table if it has one.
pub(super) fn lookup(table: &[u32], root: u32, bb: u64) -> u32 {
    let e = table[(bb & low(root)) as usize];
    if e & LINK == 0 {
        return e;
    }
    table[(e >> 16) as usize + ((bb >> root) & low((e >> 4) & 15)) as usize]
}

pub(super) fn litlen_entry(sym: usize) -> u32 {
    match sym {
        0..=255 => LITERAL | (sym as u32) << 16,
        256 => END,
        257..=285 => BASE | u32::from(LEN_BASE[sym - 257]) << 16 | u32::from(LEN_EXTRA[sym - 257]) << 4,
        _ => BAD,
    }
}

pub(super) fn dist_entry(sym: usize) -> u32 {
    match sym {
        // Codes 4 and up take (code - 2) / 2 extra bits.
        0..=29 => BASE | u32::from(DIST_BASE[sym]) << 16 | ((sym.max(2) as u32 - 2) / 2) << 4,
        _ => BAD,
    }
}

/// The static codes of RFC 1951 §3.2.6 (all 288 and 32 symbols: the last two of each are `BAD`).
pub(super) fn build_static(t: &mut Tables) {
    let mut lens = [8u8; 288];
    lens[144..256].fill(9);
    lens[256..280].fill(7);
    build(&mut t.lit, &lens, LIT_ROOT, litlen_entry, false).expect("the static code is complete");
    build(&mut t.dist, &[5; 32], DIST_ROOT, dist_entry, false).expect("the static code is complete");
}

/// Fills `table` with the canonical code of `lens` (RFC 1951 §3.2.2): `1 << root` entries indexed by
/// the code's first bits, then sub-tables for longer codes (sized as zlib's `inflate_table` does).
/// An over-subscribed code is corrupt, and so is an incomplete one, except (where `lone_ok`, as zlib
/// allows for literal/length and distance codes) a single one-bit code or none at all.
pub(super) fn build(
    table: &mut [u32],
    lens: &[u8],
    root: u32,
    entry: impl Fn(usize) -> u32,
    lone_ok: bool,
) -> Result<(), &'static str> {
    let mut count = [0u16; 16];
    lens.iter().for_each(|&len| count[usize::from(len)] += 1);
    count[0] = 0;
    let mut left = 1i32;
    for &n in &count[1..] {
        left = (left << 1) - i32::from(n);
        if left < 0 {
            return Err("over-subscribed code");
        }
    }
    let max = (1..16).rev().find(|&len| count[len] > 0).unwrap_or(0);
    if left > 0 && !(lone_ok && max <= 1) {
        return Err("incomplete code");
    }
    let root_size = 1usize << root;
    if left > 0 {
        table[..root_size].fill(BAD | 1);
    }
    let mut remaining = count;
    let (mut code, mut free) = (0u32, root_size);
    let (mut sub_prefix, mut sub_start, mut sub_bits) = (usize::MAX, 0, 0);
    // Symbols in canonical order: by length, then by symbol.
    for len in 1..=max {
        for sym in (0..lens.len()).filter(|&sym| usize::from(lens[sym]) == len) {
            let e = entry(sym) | len as u32;
            // Codes are read least significant bit first: index by the code reversed.
            let rev = (code.reverse_bits() >> (32 - len)) as usize;
            if len as u32 <= root {
                (rev..root_size).step_by(1 << len).for_each(|i| table[i] = e);
            } else {
                let prefix = rev & (root_size - 1);
                if prefix != sub_prefix {
                    // The sub-table's size: enough bits for the codes that share this prefix.
                    let mut bits = len as u32 - root;
                    let mut room = 1i32 << bits;
                    while bits + root < max as u32 {
                        room -= i32::from(remaining[(bits + root) as usize]);
                        if room <= 0 {
                            break;
                        }
                        (bits, room) = (bits + 1, room << 1);
                    }
                    if free + (1 << bits) > table.len() {
                        return Err("code table overflow");
                    }
                    (sub_prefix, sub_start, sub_bits) = (prefix, free, bits);
                    free += 1 << bits;
                    table[prefix] = LINK | (sub_start as u32) << 16 | bits << 4 | root;
                }
                let sub = &mut table[sub_start..sub_start + (1 << sub_bits)];
                (rev >> root..sub.len()).step_by(1 << (len as u32 - root)).for_each(|i| sub[i] = e);
            }
            remaining[len] -= 1;
            code += 1;
        }
        code <<= 1;
    }
    Ok(())
}
