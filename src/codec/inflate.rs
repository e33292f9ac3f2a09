//! Our own gzip and deflate decoder: streaming DEFLATE (RFC 1951) inside gzip members, a zlib stream
//! or nothing (`inflate_framing.rs`), in bounded pieces like the other decoders of `decode.rs`, that
//! also reports every back-reference (LZ77 match) of the stream as a [`Repeat`]. Why ours: re-encoding
//! a rewritten page with the upstream's own matches (found by its gzip -6) reaches the upstream's size
//! without a match search, and no inflate crate tells what the matches were.
//!
//! Decoded bytes go into one linear buffer holding the last 32 KiB (every distance reaches into it)
//! plus room for new output; each call copies its new bytes out, and the buffer slides its last
//! 32 KiB back to the start when the room runs low. Bits come through a 64-bit buffer, refilled 8
//! bytes at a time while 8 input bytes remain, then byte by byte; an item (a literal, a whole match)
//! is decoded from the bits at hand and kept only if they were enough, so the bits a call cannot use
//! yet stay in the buffer, and a call that runs out of input has always taken all of it.

use std::convert::Infallible;

use super::CodecError;

#[path = "inflate_framing.rs"]
pub(super) mod framing;
#[path = "inflate_tables.rs"]
mod tables;
use super::Encoding;
use framing::{Check, Framing, Header, HeaderStep};
use tables::{build, build_static, dist_entry, litlen_entry, lookup, low};

/// The DEFLATE window: the farthest a distance reaches.
const WSIZE: usize = 32 * 1024;
/// The buffer: the window plus room for new output (each slide, a 32 KiB copy, frees 48 KiB).
const BUF: usize = WSIZE + 48 * 1024;
/// Past `BUF`, for the match copies that write up to 15 bytes past a match.
const SLACK: usize = 16;
/// Below this much room a call slides the window first.
const MIN_ROOM: usize = 4096;
/// Index bits of the root tables; longer codes go through a sub-table.
const LIT_ROOT: u32 = 10;
const DIST_ROOT: u32 = 8;
/// Root plus sub-tables: zlib's `enough` bounds them at 1332 and about 400 entries (`build` checks).
const LIT_TABLE: usize = 2048;
const DIST_TABLE: usize = 1024;

// Table entries (u32): bits 0-3 the bits the code takes (a sub-table's entries hold the whole code's
// length, a link the root's), bits 4-7 the extra bits after it (a link: its sub-table's index bits),
// one kind flag, bits 16-31 the value (a literal or code-length symbol, a length or distance base, a
// sub-table's start).
const LITERAL: u32 = 1 << 8;
const BASE: u32 = 1 << 9;
const END: u32 = 1 << 10;
const LINK: u32 = 1 << 11;
/// The unused code of an incomplete code (one bit long), or symbols 286, 287, 30 and 31.
const BAD: u32 = 1 << 12;

const LEN_BASE: [u16; 29] =
    [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
const LEN_EXTRA: [u8; 29] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
    8193, 12289, 16385, 24577,
];
/// A dynamic header's code-length code lengths come in this order.
const CODELEN_ORDER: [usize; 19] = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];

/// One back-reference of the decoded stream: the `length` bytes at decoded position `at` (counted from the
/// body's first decoded byte, across gzip members) repeat those `distance` bytes before them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repeat {
    /// Decoded position of the match's first byte.
    pub at: u64,
    /// How far back the repeated bytes are (1..=32768).
    pub distance: u16,
    /// How many bytes repeat (3..=258).
    pub length: u16,
}

/// A streaming gzip or deflate decoder that reports the stream's matches (see the module's doc).
pub struct Inflate {
    framing: Framing,
    /// `BUF + SLACK` bytes: the next decoded byte goes at `pos`, the current member's first one was
    /// at `wstart` (0 once slid past), `win[crc_pos..pos]` is not in its check yet, and `win[0]` is
    /// decoded position `origin`.
    win: Box<[u8]>,
    pos: usize,
    wstart: usize,
    crc_pos: usize,
    origin: u64,
    /// One set (a boxed slice, so that [`Inflate::restart`] can take it, leaving an empty one).
    tables: Box<[Tables]>,
    /// The tables hold the static codes (kept for the next static block: a stream flushed often has many).
    static_tables: bool,
    stage: Stage,
    /// The bit buffer, least significant bit first, with `bc` bits (the bits above are zero outside
    /// `codes`).
    bb: u64,
    bc: u32,
    last_block: bool,
    /// The rest of a match cut by the output limit.
    copy_left: usize,
    copy_dist: usize,
    /// The header being read, then the check of the stream's decoded bytes so far.
    header: Header,
    check: Check,
    /// The stage's count (bytes of the trailer, code lengths read) and the trailer's bytes.
    n: usize,
    buf: [u8; 8],
    /// A dynamic header's HLIT + HDIST; its HLIT and HCLEN.
    value: usize,
    hlit: usize,
    hclen: usize,
}

struct Tables {
    lit: [u32; LIT_TABLE],
    dist: [u32; DIST_TABLE],
    codelen: [u32; 128],
    /// A dynamic block's code-length code lengths, then its literal/length and distance code lengths.
    lens: [u8; 320],
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    Header,
    BlockHeader,
    StoredLen,
    Stored(usize),
    DynamicHeader,
    CodeLenLens,
    CodeLens,
    Codes,
    Trailer,
    /// A member ended: another may follow.
    Done,
    /// Bytes after the last member, ignored.
    Ignore,
    Failed(&'static str),
}

/// Why decoding stops: the output reached the call's limit, the input ran out (all of it taken), or
/// the stream is corrupt.
enum Halt {
    Full,
    Stall,
    Corrupt(&'static str),
}

/// One call's input, how far it was taken, the output limit in `win`, and where repeats go.
struct Io<'a> {
    input: &'a [u8],
    ip: usize,
    limit: usize,
    repeats: &'a mut Vec<Repeat>,
}

impl Inflate {
    /// A decoder for one gzip body (any number of members); about 93 KiB.
    pub fn gzip() -> Inflate {
        Inflate::new(Framing::Gzip)
    }

    /// A decoder for one `deflate` body, zlib-wrapped or raw (its first two bytes tell).
    pub fn deflate() -> Inflate {
        Inflate::new(Framing::Deflate)
    }

    /// Ready for a new body in `encoding` (gzip, else deflate) on this state's buffers: see [`Inflate::restart`].
    pub(super) fn restart_as(&mut self, encoding: Encoding) {
        self.restart(if encoding == Encoding::Gzip { Framing::Gzip } else { Framing::Deflate });
    }

    fn new(framing: Framing) -> Inflate {
        let tables = Tables { lit: [0; LIT_TABLE], dist: [0; DIST_TABLE], codelen: [0; 128], lens: [0; 320] };
        Inflate::with_buffers(framing, vec![0; BUF + SLACK].into_boxed_slice(), Box::new([tables]))
    }

    /// Ready for a new body in `framing`, on this state's buffers (a new state is ~93 KiB of zeroed memory).
    /// Nothing of the last body can be read again: a distance that reaches before the new body's first byte
    /// is refused as too far back.
    fn restart(&mut self, framing: Framing) {
        let (win, tables) = (std::mem::take(&mut self.win), std::mem::take(&mut self.tables));
        *self = Inflate::with_buffers(framing, win, tables);
    }

    fn with_buffers(framing: Framing, win: Box<[u8]>, tables: Box<[Tables]>) -> Inflate {
        Inflate {
            framing,
            win,
            pos: 0,
            wstart: 0,
            crc_pos: 0,
            origin: 0,
            tables,
            static_tables: false,
            stage: Stage::Header,
            bb: 0,
            bc: 0,
            last_block: false,
            copy_left: 0,
            copy_dist: 0,
            header: Header::new(framing),
            check: Check::None,
            n: 0,
            buf: [0; 8],
            value: 0,
            hlit: 0,
            hclen: 0,
        }
    }

    /// Decodes from `input`, appending at most `max_out` new bytes to `out`, and one `Repeat` per match to
    /// `repeats` (a match is reported once, at its start, even when its bytes are split across two calls);
    /// returns how many bytes of `input` it took.
    pub fn decode(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        max_out: usize,
        repeats: &mut Vec<Repeat>,
    ) -> Result<usize, CodecError> {
        let mut io = Io { input, ip: 0, limit: 0, repeats };
        let mut produced = 0;
        while produced < max_out {
            if BUF - self.pos < MIN_ROOM {
                self.slide();
            }
            let start = self.pos;
            io.limit = start + (max_out - produced).min(BUF - start);
            let Err(halt) = self.run(&mut io);
            self.hash();
            out.extend_from_slice(&self.win[start..self.pos]);
            produced += self.pos - start;
            match halt {
                Halt::Full => {}
                Halt::Stall => break,
                Halt::Corrupt(reason) => {
                    self.stage = Stage::Failed(reason);
                    return Err(CodecError::Corrupt(self.framing.name(), reason.into()));
                }
            }
        }
        Ok(io.ip)
    }

    /// Checks at the end of the body that the stream was complete (`CodecError::Truncated` otherwise).
    pub fn finish(&self) -> Result<(), CodecError> {
        match self.stage {
            Stage::Done | Stage::Ignore => Ok(()),
            _ => Err(CodecError::Truncated(self.framing.name())),
        }
    }

    /// Decoded bytes produced so far.
    pub fn total_out(&self) -> u64 {
        self.origin + self.pos as u64 // every decoded byte is out by the end of a call
    }

    /// Moves the last 32 KiB to the start of the buffer (all before is in `out` and in the CRC).
    fn slide(&mut self) {
        let shift = self.pos - WSIZE;
        self.win.copy_within(shift..self.pos, 0);
        (self.pos, self.crc_pos) = (WSIZE, WSIZE);
        self.wstart = self.wstart.saturating_sub(shift);
        self.origin += shift as u64;
    }

    /// Adds the bytes decoded since the last call to the stream's check.
    fn hash(&mut self) {
        self.check.update(&self.win[self.crc_pos..self.pos]);
        self.crc_pos = self.pos;
    }

    /// Runs the stages until the output reaches `io.limit`, the input runs out or the stream is corrupt.
    fn run(&mut self, io: &mut Io) -> Result<Infallible, Halt> {
        loop {
            match self.stage {
                Stage::Header => {
                    let byte = self.byte(io)?;
                    match self.header.byte(byte).map_err(Halt::Corrupt)? {
                        HeaderStep::More => {}
                        HeaderStep::Done(check) => (self.check, self.stage) = (check, Stage::BlockHeader),
                        HeaderStep::Raw([b0, b1]) => {
                            // Both came from the input (nothing is in the bits before a stream's start).
                            (self.bb, self.bc) = (u64::from(b0) | u64::from(b1) << 8, 16);
                            self.stage = Stage::BlockHeader;
                        }
                    }
                }
                Stage::BlockHeader => {
                    self.need(3, io)?;
                    let bits = self.take(3);
                    self.last_block = bits & 1 == 1;
                    self.stage = match bits >> 1 {
                        0 => Stage::StoredLen,
                        1 => {
                            if !std::mem::replace(&mut self.static_tables, true) {
                                build_static(&mut self.tables[0]);
                            }
                            Stage::Codes
                        }
                        2 => Stage::DynamicHeader,
                        _ => return Err(Halt::Corrupt("invalid block type")),
                    };
                }
                Stage::StoredLen => {
                    self.take(self.bc & 7);
                    self.need(32, io)?;
                    let (len, nlen) = (self.take(16), self.take(16));
                    if len != !nlen & 0xffff {
                        return Err(Halt::Corrupt("invalid stored block lengths"));
                    }
                    self.stage = Stage::Stored(len as usize);
                }
                Stage::Stored(mut left) => {
                    while left > 0 {
                        self.stage = Stage::Stored(left);
                        if self.pos == io.limit {
                            return Err(Halt::Full);
                        }
                        let n = if self.bc >= 8 {
                            self.win[self.pos] = self.take(8) as u8;
                            1
                        } else {
                            let n = left.min(io.limit - self.pos).min(io.input.len() - io.ip);
                            if n == 0 {
                                return Err(Halt::Stall);
                            }
                            self.win[self.pos..self.pos + n].copy_from_slice(&io.input[io.ip..io.ip + n]);
                            io.ip += n;
                            n
                        };
                        (self.pos, left) = (self.pos + n, left - n);
                    }
                    self.end_block();
                }
                Stage::DynamicHeader => {
                    self.need(14, io)?;
                    self.hlit = self.take(5) as usize + 257;
                    self.value = self.hlit + self.take(5) as usize + 1;
                    self.hclen = self.take(4) as usize + 4;
                    if self.hlit > 286 || self.value - self.hlit > 30 {
                        return Err(Halt::Corrupt("too many length or distance symbols"));
                    }
                    self.tables[0].lens[..19].fill(0);
                    (self.n, self.stage) = (0, Stage::CodeLenLens);
                }
                Stage::CodeLenLens => {
                    while self.n < self.hclen {
                        self.need(3, io)?;
                        self.tables[0].lens[CODELEN_ORDER[self.n]] = self.take(3) as u8;
                        self.n += 1;
                    }
                    let t = &mut self.tables[0];
                    build(&mut t.codelen, &t.lens[..19], 7, |sym| LITERAL | (sym as u32) << 16, false)
                        .map_err(|_| Halt::Corrupt("invalid code lengths set"))?;
                    (self.n, self.stage) = (0, Stage::CodeLens);
                }
                Stage::CodeLens => {
                    self.code_lengths(io)?;
                    let t = &mut self.tables[0];
                    let (lit, dist) = t.lens[..self.value].split_at(self.hlit);
                    if lit[256] == 0 {
                        return Err(Halt::Corrupt("missing end-of-block code"));
                    }
                    build(&mut t.lit, lit, LIT_ROOT, litlen_entry, true)
                        .map_err(|_| Halt::Corrupt("invalid literal/lengths set"))?;
                    build(&mut t.dist, dist, DIST_ROOT, dist_entry, true)
                        .map_err(|_| Halt::Corrupt("invalid distances set"))?;
                    (self.static_tables, self.stage) = (false, Stage::Codes);
                }
                Stage::Codes => {
                    self.codes(io)?;
                    self.end_block();
                }
                Stage::Trailer => {
                    self.take(self.bc & 7);
                    while self.n < self.check.trailer_len() {
                        self.buf[self.n] = self.byte(io)?;
                        self.n += 1;
                    }
                    self.hash();
                    std::mem::replace(&mut self.check, Check::None).verify(&self.buf).map_err(Halt::Corrupt)?;
                    self.stage = Stage::Done;
                }
                Stage::Done => {
                    // RFC 1952 §2.2: gzip members follow one another; other bytes after one are ignored,
                    // as browsers do (a lone 0x1f at the end of the input is taken for a member's start),
                    // and so is all after a zlib or raw stream.
                    let &first = io.input.get(io.ip).ok_or(Halt::Stall)?;
                    let member = first == 0x1f && io.input.get(io.ip + 1).is_none_or(|&b| b == 0x8b);
                    self.stage = if self.framing == Framing::Gzip && member {
                        (self.n, self.wstart) = (0, self.pos);
                        self.header = Header::new(Framing::Gzip);
                        Stage::Header
                    } else {
                        Stage::Ignore
                    };
                }
                Stage::Ignore => {
                    io.ip = io.input.len();
                    return Err(Halt::Stall);
                }
                Stage::Failed(reason) => return Err(Halt::Corrupt(reason)),
            }
        }
    }

    fn end_block(&mut self) {
        self.n = 0;
        self.stage = if self.last_block { Stage::Trailer } else { Stage::BlockHeader };
    }

    /// The next byte of a byte-aligned part (header, trailer): from the bit buffer first.
    fn byte(&mut self, io: &mut Io) -> Result<u8, Halt> {
        if self.bc >= 8 {
            return Ok(self.take(8) as u8);
        }
        let &byte = io.input.get(io.ip).ok_or(Halt::Stall)?;
        io.ip += 1;
        Ok(byte)
    }

    /// Brings the bit buffer to `n` bits (at most 56), taking input byte by byte.
    fn need(&mut self, n: u32, io: &mut Io) -> Result<(), Halt> {
        while self.bc < n {
            let &byte = io.input.get(io.ip).ok_or(Halt::Stall)?;
            self.bb |= u64::from(byte) << self.bc;
            (self.bc, io.ip) = (self.bc + 8, io.ip + 1);
        }
        Ok(())
    }

    fn take(&mut self, n: u32) -> u32 {
        let bits = self.bb & low(n);
        (self.bb, self.bc) = (self.bb >> n, self.bc - n);
        bits as u32
    }

    /// Reads a dynamic block's code lengths (`self.n` of `self.value` so far).
    fn code_lengths(&mut self, io: &mut Io) -> Result<(), Halt> {
        while self.n < self.value {
            // Decoded from the bits at hand, the missing ones as zeros: right if it takes no more.
            let e = lookup(&self.tables[0].codelen, 7, self.bb);
            let sym = e >> 16;
            let extra = [0, 2, 3, 7][(sym as usize).saturating_sub(15)]; // symbols 16, 17, 18
            if (e & 15) + extra > self.bc {
                self.need(self.bc + 1, io)?;
                continue;
            }
            self.take(e & 15);
            let x = self.take(extra) as usize;
            let (len, run) = match sym {
                0..=15 => (sym as u8, 1),
                16 if self.n > 0 => (self.tables[0].lens[self.n - 1], 3 + x),
                17 => (0, 3 + x),
                18 => (0, 11 + x),
                _ => return Err(Halt::Corrupt("invalid bit length repeat")),
            };
            if self.n + run > self.value {
                return Err(Halt::Corrupt("invalid bit length repeat"));
            }
            self.tables[0].lens[self.n..self.n + run].fill(len);
            self.n += run;
        }
        Ok(())
    }

    /// Decodes a block's codes to its end (`Ok`), or until the output limit or the end of the input.
    fn codes(&mut self, io: &mut Io) -> Result<(), Halt> {
        if self.copy_left > 0 {
            let n = self.copy_left.min(io.limit - self.pos);
            copy_slow(&mut self.win, self.pos, self.copy_dist, n);
            (self.pos, self.copy_left) = (self.pos + n, self.copy_left - n);
            if self.copy_left > 0 {
                return Err(Halt::Full);
            }
        }
        let (t, win, repeats, input, limit) =
            (&self.tables[0], &mut self.win[..], &mut *io.repeats, io.input, io.limit);
        let (mut bb, mut bc, mut pos, mut ip) = (self.bb, self.bc, self.pos, io.ip);
        let result = loop {
            if ip + 8 <= input.len() {
                // 8 bytes at a time while they last: 56 bits at least, a whole match (15 + 5 + 15 + 13).
                // The bits this leaves above `bc` are the next input's, which the next refill ORs in again.
                bb |= u64::from_le_bytes(input[ip..ip + 8].try_into().expect("8 bytes")) << bc;
                ip += (63 - bc as usize) >> 3;
                bc |= 56;
            }
            // Literals while the buffer holds them: the common case, in a short loop.
            let mut e = t.lit[(bb & low(LIT_ROOT)) as usize];
            while e & LITERAL != 0 && e & 15 <= bc && pos < limit {
                (bb, bc) = (bb >> (e & 15), bc - (e & 15));
                win[pos] = (e >> 16) as u8;
                pos += 1;
                e = t.lit[(bb & low(LIT_ROOT)) as usize];
            }
            if pos == limit {
                break Err(Halt::Full);
            }
            // One item, decoded from the bits at hand (above `bc`: the next input's, or zeros): right
            // if it takes no more than `bc`, else the input is near its end, and comes byte by byte
            // (an item takes 48 bits at most: the buffer has room).
            let e = lookup(&t.lit, LIT_ROOT, bb);
            let (mut used, mut d, mut length, mut distance) = (e & 15, BASE, 0, 0);
            if e & BASE != 0 {
                let extra = (e >> 4) & 15;
                length = (e >> 16) as usize + ((bb >> used) & low(extra)) as usize;
                d = lookup(&t.dist, DIST_ROOT, bb >> (used + extra));
                used += extra + (d & 15);
                distance = (d >> 16) as usize + ((bb >> used) & low((d >> 4) & 15)) as usize;
                used += (d >> 4) & 15;
            }
            if used > bc {
                let Some(&byte) = input.get(ip) else { break Err(Halt::Stall) };
                (bb, bc, ip) = (bb | u64::from(byte) << bc, bc + 8, ip + 1);
                continue;
            }
            (bb, bc) = (bb >> used, bc - used);
            if e & BASE == 0 {
                if e & LITERAL != 0 {
                    win[pos] = (e >> 16) as u8;
                    pos += 1;
                    continue;
                }
                break if e & END != 0 { Ok(()) } else { Err(Halt::Corrupt("invalid literal/length code")) };
            }
            if d & BASE == 0 {
                break Err(Halt::Corrupt("invalid distance code"));
            }
            if distance > pos - self.wstart {
                break Err(Halt::Corrupt("invalid distance too far back"));
            }
            repeats.push(Repeat { at: self.origin + pos as u64, distance: distance as u16, length: length as u16 });
            if length <= limit - pos {
                copy_fast(win, pos, distance, length);
                pos += length;
            } else {
                copy_slow(win, pos, distance, limit - pos);
                (self.copy_left, self.copy_dist, pos) = (length - (limit - pos), distance, limit);
            }
        };
        (self.bb, self.bc, self.pos, io.ip) = (bb & low(bc), bc, pos, ip);
        result
    }
}

/// Copies a match of `len` bytes from `dist` back, 16 or 8 bytes at a time where the distance allows
/// (writing up to 15 bytes past the match, past the output limit even: `SLACK`).
#[inline(always)]
fn copy_fast(win: &mut [u8], pos: usize, dist: usize, len: usize) {
    if dist >= 8 {
        // Each chunk's source lies wholly before its destination, in bytes already written.
        if dist >= 16 {
            chunks::<16>(win, pos - dist, pos, pos + len)
        } else {
            chunks::<8>(win, pos - dist, pos, pos + len)
        }
    } else if dist == 1 {
        let byte = win[pos - 1];
        win[pos..pos + len].fill(byte);
    } else {
        copy_slow(win, pos, dist, len);
    }
}

#[inline(always)]
fn chunks<const N: usize>(win: &mut [u8], mut src: usize, mut dst: usize, end: usize) {
    while dst < end {
        let chunk: [u8; N] = win[src..src + N].try_into().expect("N bytes");
        win[dst..dst + N].copy_from_slice(&chunk);
        (src, dst) = (src + N, dst + N);
    }
}

/// Copies a match byte by byte (an overlapping copy repeats its pattern), writing nothing past it.
fn copy_slow(win: &mut [u8], pos: usize, dist: usize, len: usize) {
    for k in pos..pos + len {
        win[k] = win[k - dist];
    }
}

#[cfg(test)]
#[path = "inflate_deflate_tests.rs"]
mod deflate_tests;
#[cfg(test)]
#[path = "inflate_tests.rs"]
mod tests;
