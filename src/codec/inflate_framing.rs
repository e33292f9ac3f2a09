//! What wraps a DEFLATE stream (RFC 1951) in a body: a gzip member's header and trailer (RFC 1952), a
//! zlib stream's (RFC 1950), or nothing (raw DEFLATE, which some servers send as `deflate`). The header
//! is read a byte at a time, so that any chunking of the body works; the trailer's check covers the
//! decoded bytes.

/// The body's coding, as `Content-Encoding` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Framing {
    /// Any number of gzip members, one after another.
    Gzip,
    /// RFC 9110's `deflate` is zlib-wrapped, but some servers send raw DEFLATE: the first two bytes tell.
    Deflate,
}

impl Framing {
    /// The coding's name in errors.
    pub(super) fn name(self) -> &'static str {
        match self {
            Framing::Gzip => "gzip",
            Framing::Deflate => "deflate",
        }
    }
}

/// The optional parts of a gzip member's header in their order, with the flag that announces each.
const PARTS: [(Part, u8); 5] =
    [(Part::ExtraLen, 4), (Part::Extra, 4), (Part::Name, 8), (Part::Comment, 16), (Part::Crc, 2)];

/// The parts of a gzip member's header (RFC 1952 §2.3), or a zlib stream's two bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Fixed,
    ExtraLen,
    Extra,
    Name,
    Comment,
    Crc,
    Zlib,
}

/// A header being read.
pub(super) struct Header {
    part: Part,
    /// Bytes of the part so far, the first ten of them kept.
    n: usize,
    buf: [u8; 10],
    flags: u8,
    /// FEXTRA's length.
    extra_len: usize,
    crc: crc32fast::Hasher,
}

/// What a header's byte made of it.
pub(super) enum HeaderStep {
    More,
    /// The header is read; the DEFLATE stream follows, checked at its end by this.
    Done(Check),
    /// No zlib header: these two bytes were the start of a raw DEFLATE stream.
    Raw([u8; 2]),
}

impl Header {
    pub(super) fn new(framing: Framing) -> Header {
        let part = match framing {
            Framing::Gzip => Part::Fixed,
            Framing::Deflate => Part::Zlib,
        };
        Header { part, n: 0, buf: [0; 10], flags: 0, extra_len: 0, crc: crc32fast::Hasher::new() }
    }

    /// Takes the header's next byte.
    pub(super) fn byte(&mut self, byte: u8) -> Result<HeaderStep, &'static str> {
        let part = self.part;
        if part != Part::Crc {
            self.crc.update(&[byte]);
        }
        self.buf[self.n.min(9)] = byte;
        self.n += 1;
        let done = match part {
            Part::Zlib if self.n == 2 => return zlib_header([self.buf[0], byte]),
            Part::Zlib => false,
            Part::Fixed if self.n <= 2 && byte != [0x1f, 0x8b][self.n - 1] => return Err("incorrect header check"),
            Part::Fixed if self.n == 3 && byte != 8 => return Err("unknown compression method"),
            Part::Fixed if self.n == 4 && byte & 0xe0 != 0 => return Err("unknown header flags set"),
            Part::Fixed => self.n == 10,
            Part::ExtraLen | Part::Crc => self.n == 2,
            Part::Extra => self.n == self.extra_len,
            Part::Name | Part::Comment => byte == 0,
        };
        if !done {
            return Ok(HeaderStep::More);
        }
        let [b0, b1, _, flags, ..] = self.buf;
        match part {
            Part::Fixed => self.flags = flags,
            Part::ExtraLen => self.extra_len = usize::from(u16::from_le_bytes([b0, b1])),
            Part::Crc if u16::from_le_bytes([b0, b1]) != self.crc.clone().finalize() as u16 => {
                return Err("header crc mismatch")
            }
            _ => {}
        }
        // On to the next part the flags announce (FEXTRA's data only when there is some).
        let from = PARTS.iter().position(|&(p, _)| p == part).map_or(0, |i| i + 1);
        let next =
            PARTS[from..].iter().find(|&&(p, flag)| self.flags & flag != 0 && (p != Part::Extra || self.extra_len > 0));
        self.n = 0;
        Ok(match next {
            Some(&(next, _)) => {
                self.part = next;
                HeaderStep::More
            }
            None => HeaderStep::Done(Check::gzip()),
        })
    }
}

/// A zlib header (RFC 1950 §2.2), or the start of a raw stream where the two bytes are none.
fn zlib_header([b0, b1]: [u8; 2]) -> Result<HeaderStep, &'static str> {
    if b0 & 0x0f != 8 || (u16::from(b0) << 8 | u16::from(b1)) % 31 != 0 {
        return Ok(HeaderStep::Raw([b0, b1]));
    }
    if b0 >> 4 > 7 {
        return Err("invalid window size");
    }
    if b1 & 0x20 != 0 {
        // A preset dictionary: no browser has one to give.
        return Err("a preset dictionary is needed");
    }
    Ok(HeaderStep::Done(Check::zlib()))
}

/// The check a stream's trailer holds of its bytes: what our decoder verifies and our encoder writes.
pub(in crate::codec) enum Check {
    /// gzip: CRC-32, then the length modulo 2^32, both little-endian.
    Crc32 { crc: crc32fast::Hasher, len: u32 },
    /// zlib: Adler-32, big-endian.
    Adler32(u32),
    /// Raw DEFLATE: no trailer.
    None,
}

impl Check {
    pub(in crate::codec) fn gzip() -> Check {
        Check::Crc32 { crc: crc32fast::Hasher::new(), len: 0 }
    }

    pub(in crate::codec) fn zlib() -> Check {
        Check::Adler32(1)
    }

    pub(in crate::codec) fn update(&mut self, decoded: &[u8]) {
        match self {
            Check::Crc32 { crc, len } => {
                crc.update(decoded);
                *len = len.wrapping_add(decoded.len() as u32);
            }
            Check::Adler32(adler) => *adler = zlib_rs::adler32::adler32(*adler, decoded),
            Check::None => {}
        }
    }

    /// The trailer's length in bytes.
    pub(super) fn trailer_len(&self) -> usize {
        match self {
            Check::Crc32 { .. } => 8,
            Check::Adler32(_) => 4,
            Check::None => 0,
        }
    }

    /// The trailer of the bytes so far: the check's first 4 bytes, then gzip's length.
    pub(in crate::codec) fn trailer(&self) -> Vec<u8> {
        match self {
            Check::Crc32 { crc, len } => [crc.clone().finalize().to_le_bytes(), len.to_le_bytes()].concat(),
            Check::Adler32(adler) => adler.to_be_bytes().to_vec(),
            Check::None => Vec::new(),
        }
    }

    /// Compares the trailer with what was decoded.
    pub(super) fn verify(&self, trailer: &[u8]) -> Result<(), &'static str> {
        let expected = self.trailer();
        if trailer[..expected.len().min(4)] != expected[..expected.len().min(4)] {
            return Err("incorrect data check");
        }
        if trailer[..expected.len()] != expected[..] {
            return Err("incorrect length check");
        }
        Ok(())
    }
}
