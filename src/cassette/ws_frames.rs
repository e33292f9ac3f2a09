//! RFC 6455 framing, one parser for replay (which reads the client's frames) and recording (which
//! reads copies of both directions' bytes): fed bytes however the reads cut them, it gives whole
//! messages (fragments joined, masks removed) and the control frames met between them.

/// Largest message kept; a longer one is reported as [`Event::TooLarge`], its bytes not held.
pub const MAX_MESSAGE: usize = 16 * 1024 * 1024;

const CONTINUATION: u8 = 0x0;
const TEXT: u8 = 0x1;
const BINARY: u8 = 0x2;
/// Close.
pub const CLOSE: u8 = 0x8;
/// Ping.
pub const PING: u8 = 0x9;
/// Pong.
pub const PONG: u8 = 0xA;

/// What the parser found.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A whole message (text or binary), unmasked and joined.
    Message {
        /// A text message (opcode 1).
        text: bool,
        /// Its bytes.
        data: Vec<u8>,
    },
    /// A message longer than the parser's cap: its bytes were dropped as they came.
    TooLarge {
        /// A text message.
        text: bool,
        /// Its length in bytes.
        len: u64,
    },
    /// A ping and its payload.
    Ping(Vec<u8>),
    /// A pong.
    Pong(Vec<u8>),
    /// A close frame: its code (when it has one) and reason.
    Close {
        /// The status code.
        code: Option<u16>,
        /// The reason (lossy UTF-8).
        reason: String,
    },
    /// Bytes that are not RFC 6455 frames (or use an extension): the parser reads nothing more.
    Invalid(String),
}

/// The frame whose payload is being read.
struct Frame {
    fin: bool,
    opcode: u8,
    mask: Option<[u8; 4]>,
    remaining: u64,
    /// Payload bytes read so far (where the mask is).
    offset: usize,
    /// A control frame's payload (at most 125 bytes).
    control: Vec<u8>,
}

/// The data message being joined.
struct Message {
    text: bool,
    data: Vec<u8>,
    len: u64,
    /// Over the cap: bytes are counted, not kept.
    dropped: bool,
}

/// An incremental frame parser for one direction of a WebSocket.
pub struct Parser {
    max: usize,
    head: [u8; 14],
    head_len: usize,
    frame: Option<Frame>,
    message: Option<Message>,
    broken: bool,
}

impl Parser {
    /// A parser that keeps messages up to `max` bytes.
    pub fn new(max: usize) -> Parser {
        Parser { max, head: [0; 14], head_len: 0, frame: None, message: None, broken: false }
    }

    /// Reads `input`, appending what it completes to `events`.
    pub fn push(&mut self, mut input: &[u8], events: &mut Vec<Event>) {
        while !self.broken {
            if self.frame.is_none() {
                let needed = self.head_needed();
                if self.head_len < needed {
                    let take = (needed - self.head_len).min(input.len());
                    self.head[self.head_len..self.head_len + take].copy_from_slice(&input[..take]);
                    self.head_len += take;
                    input = &input[take..];
                    // The first two bytes say how long the head is: go round again.
                    if self.head_len < self.head_needed() {
                        if input.is_empty() {
                            return;
                        }
                        continue;
                    }
                }
                self.start_frame(events);
                continue;
            }
            let Some(frame) = self.frame.as_mut() else { return };
            if frame.remaining > 0 {
                if input.is_empty() {
                    return;
                }
                let take = (frame.remaining.min(input.len() as u64)) as usize;
                let (chunk, rest) = input.split_at(take);
                input = rest;
                let sink = if frame.opcode >= CLOSE {
                    Some(&mut frame.control)
                } else {
                    self.message.as_mut().filter(|m| !m.dropped).map(|m| &mut m.data)
                };
                if let Some(sink) = sink {
                    let start = sink.len();
                    sink.extend_from_slice(chunk);
                    if let Some(mask) = frame.mask {
                        for (i, byte) in sink[start..].iter_mut().enumerate() {
                            *byte ^= mask[(frame.offset + i) % 4];
                        }
                    }
                }
                frame.offset += take;
                frame.remaining -= take as u64;
            }
            if frame.remaining == 0 {
                self.end_frame(events);
            }
        }
    }

    /// Takes the data message whose fragments have come so far but not its last (at a close frame
    /// of its sender, or the stream's end): [`Event::Message`] with its bytes so far, or
    /// [`Event::TooLarge`] when over the cap (at a stream's end, the bytes may end inside a frame).
    pub fn unfinished(&mut self) -> Option<Event> {
        let message = self.message.take()?;
        Some(if message.dropped {
            Event::TooLarge { text: message.text, len: message.len }
        } else {
            Event::Message { text: message.text, data: message.data }
        })
    }

    /// The head's length so far known: 2, then with its extended length and mask.
    fn head_needed(&self) -> usize {
        if self.head_len < 2 {
            return 2;
        }
        let extended = match self.head[1] & 0x7F {
            126 => 2,
            127 => 8,
            _ => 0,
        };
        2 + extended + if self.head[1] & 0x80 != 0 { 4 } else { 0 }
    }

    fn start_frame(&mut self, events: &mut Vec<Event>) {
        let head = &self.head[..self.head_len];
        let (fin, opcode, masked) = (head[0] & 0x80 != 0, head[0] & 0x0F, head[1] & 0x80 != 0);
        let (len, rest) = match head[1] & 0x7F {
            126 => (u64::from(u16::from_be_bytes([head[2], head[3]])), &head[4..]),
            127 => (u64::from_be_bytes(head[2..10].try_into().unwrap_or_default()), &head[10..]),
            len => (u64::from(len), &head[2..]),
        };
        let mask = masked.then(|| [rest[0], rest[1], rest[2], rest[3]]);
        self.head_len = 0;
        let invalid = if head[0] & 0x70 != 0 {
            Some("a frame with RSV bits set (an extension such as permessage-deflate)".to_string())
        } else if len >> 63 != 0 {
            Some("a frame length with its most significant bit set".to_string())
        } else if opcode >= CLOSE {
            match opcode {
                CLOSE | PING | PONG if !fin => Some(format!("a fragmented control frame (opcode {opcode})")),
                CLOSE | PING | PONG if len > 125 => Some(format!("a control frame of {len} bytes (at most 125)")),
                CLOSE | PING | PONG => None,
                _ => Some(format!("unknown opcode {opcode}")),
            }
        } else {
            match (opcode, &self.message) {
                (CONTINUATION, None) => Some("a continuation frame outside a fragmented message".to_string()),
                (TEXT | BINARY, Some(_)) => Some("a new message inside a fragmented one".to_string()),
                (CONTINUATION | TEXT | BINARY, _) => None,
                _ => Some(format!("unknown opcode {opcode}")),
            }
        };
        if let Some(reason) = invalid {
            self.broken = true;
            events.push(Event::Invalid(reason));
            return;
        }
        if opcode == TEXT || opcode == BINARY {
            self.message = Some(Message { text: opcode == TEXT, data: Vec::new(), len: 0, dropped: false });
        }
        if opcode < CLOSE {
            if let Some(message) = self.message.as_mut() {
                message.len += len;
                if message.len > self.max as u64 && !message.dropped {
                    message.dropped = true;
                    message.data = Vec::new();
                }
            }
        }
        let control = if opcode >= CLOSE { Vec::with_capacity(len as usize) } else { Vec::new() };
        self.frame = Some(Frame { fin, opcode, mask, remaining: len, offset: 0, control });
    }

    fn end_frame(&mut self, events: &mut Vec<Event>) {
        let Some(frame) = self.frame.take() else { return };
        match frame.opcode {
            PING => events.push(Event::Ping(frame.control)),
            PONG => events.push(Event::Pong(frame.control)),
            CLOSE => {
                let payload = frame.control;
                let code = (payload.len() >= 2).then(|| u16::from_be_bytes([payload[0], payload[1]]));
                let reason = String::from_utf8_lossy(payload.get(2..).unwrap_or_default()).into_owned();
                events.push(Event::Close { code, reason });
            }
            _ if frame.fin => {
                if let Some(message) = self.message.take() {
                    events.push(if message.dropped {
                        Event::TooLarge { text: message.text, len: message.len }
                    } else {
                        Event::Message { text: message.text, data: message.data }
                    });
                }
            }
            _ => {}
        }
    }
}

/// One frame: `fin`, `opcode`, masked with `mask` when given (a client's frames are).
pub fn encode(fin: bool, opcode: u8, mask: Option<[u8; 4]>, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(payload.len() + 14);
    frame.push(if fin { 0x80 } else { 0 } | opcode);
    let masked = if mask.is_some() { 0x80 } else { 0 };
    match payload.len() {
        len if len < 126 => frame.push(masked | len as u8),
        len if len <= 0xFFFF => {
            frame.push(masked | 126);
            frame.extend_from_slice(&(len as u16).to_be_bytes());
        }
        len => {
            frame.push(masked | 127);
            frame.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    match mask {
        Some(mask) => {
            frame.extend_from_slice(&mask);
            frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        }
        None => frame.extend_from_slice(payload),
    }
    frame
}

#[cfg(test)]
mod tests {
    use super::*;

    const MASK: Option<[u8; 4]> = Some([0x37, 0xfa, 0x21, 0x3d]);

    /// Every way of cutting `bytes` in two, and byte by byte: the same events as whole.
    fn parse_split(bytes: &[u8], max: usize) -> Vec<Event> {
        let mut whole = Vec::new();
        Parser::new(max).push(bytes, &mut whole);
        for cut in 0..=bytes.len() {
            let mut events = Vec::new();
            let mut parser = Parser::new(max);
            parser.push(&bytes[..cut], &mut events);
            parser.push(&bytes[cut..], &mut events);
            assert_eq!(events, whole, "cut at {cut}");
        }
        let mut events = Vec::new();
        let mut parser = Parser::new(max);
        for byte in bytes {
            parser.push(std::slice::from_ref(byte), &mut events);
        }
        assert_eq!(events, whole, "byte by byte");
        whole
    }

    fn message(text: bool, data: &[u8]) -> Event {
        Event::Message { text, data: data.to_vec() }
    }

    #[test]
    fn masked_and_unmasked_frames_give_the_same_messages() {
        for mask in [None, MASK] {
            let mut bytes = encode(true, TEXT, mask, b"hello");
            bytes.extend(encode(true, BINARY, mask, &[0, 1, 2, 255]));
            bytes.extend(encode(true, TEXT, mask, b""));
            assert_eq!(
                parse_split(&bytes, MAX_MESSAGE),
                vec![message(true, b"hello"), message(false, &[0, 1, 2, 255]), message(true, b"")]
            );
        }
    }

    #[test]
    fn fragments_are_joined_and_control_frames_between_them_stay_apart() {
        let mut bytes = encode(false, TEXT, MASK, b"frag");
        bytes.extend(encode(true, PING, MASK, b"are you there"));
        bytes.extend(encode(false, CONTINUATION, MASK, b"men"));
        bytes.extend(encode(true, PONG, MASK, b""));
        bytes.extend(encode(true, CONTINUATION, MASK, b"ted"));
        bytes.extend(encode(true, CLOSE, MASK, &[0x03, 0xE8, b'b', b'y', b'e']));
        assert_eq!(
            parse_split(&bytes, MAX_MESSAGE),
            vec![
                Event::Ping(b"are you there".to_vec()),
                Event::Pong(Vec::new()),
                message(true, b"fragmented"),
                Event::Close { code: Some(1000), reason: "bye".into() },
            ]
        );
    }

    #[test]
    fn sixteen_and_sixty_four_bit_lengths() {
        let medium: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
        let large: Vec<u8> = (0..70_000u32).map(|i| (i * 7) as u8).collect();
        let mut bytes = encode(true, BINARY, None, &medium);
        assert_eq!((bytes[1], &bytes[2..4]), (126, &300u16.to_be_bytes()[..]));
        bytes.extend(encode(true, BINARY, MASK, &large));
        let mut events = Vec::new();
        Parser::new(MAX_MESSAGE).push(&bytes, &mut events);
        assert_eq!(events, vec![message(false, &medium), message(false, &large)]);
        // Cut everywhere in the heads and around them (every cut of 70 KB is slow in debug builds).
        let second = medium.len() + 4;
        for cut in (0..=20).chain(second - 2..=second + 20) {
            let mut split = Vec::new();
            let mut parser = Parser::new(MAX_MESSAGE);
            parser.push(&bytes[..cut], &mut split);
            parser.push(&bytes[cut..], &mut split);
            assert_eq!(split, events, "cut at {cut}");
        }
        assert_eq!(parse_split(&encode(true, TEXT, MASK, &[b'a'; 126]), 200), vec![message(true, &[b'a'; 126])]);
    }

    #[test]
    fn a_message_over_the_cap_is_counted_not_kept() {
        let mut bytes = encode(false, BINARY, MASK, &[1; 40]);
        bytes.extend(encode(true, CONTINUATION, MASK, &[2; 40]));
        bytes.extend(encode(true, TEXT, MASK, b"next"));
        assert_eq!(parse_split(&bytes, 64), vec![Event::TooLarge { text: false, len: 80 }, message(true, b"next")]);
    }

    #[test]
    fn a_close_between_fragments_leaves_the_message_unfinished() {
        let mut bytes = encode(false, TEXT, MASK, b"hel");
        bytes.extend(encode(false, CONTINUATION, MASK, b"lo "));
        bytes.extend(encode(true, CLOSE, MASK, &1001u16.to_be_bytes()));
        let mut parser = Parser::new(MAX_MESSAGE);
        let mut events = Vec::new();
        parser.push(&bytes, &mut events);
        assert_eq!(events, vec![Event::Close { code: Some(1001), reason: String::new() }]);
        assert_eq!(parser.unfinished(), Some(message(true, b"hello ")));
        assert_eq!(parser.unfinished(), None, "taken");
        let mut parser = Parser::new(4);
        parser.push(&encode(false, BINARY, None, &[1; 6]), &mut events);
        assert_eq!(parser.unfinished(), Some(Event::TooLarge { text: false, len: 6 }));
    }

    proptest::proptest! {
        /// Any messages, fragmented anyhow with pings between the fragments, masked or not, read in
        /// any pieces: the same messages and pings, in order.
        #[test]
        fn any_fragmentation_and_any_reads_give_the_messages_back(
            messages in proptest::collection::vec(
                (proptest::bool::ANY, proptest::collection::vec(proptest::num::u8::ANY, 0..400), 1usize..4, proptest::bool::ANY),
                1..6,
            ),
            masked in proptest::bool::ANY,
            cuts in proptest::collection::vec(1usize..200, 0..20),
        ) {
            let mask = masked.then_some([9, 8, 7, 6]);
            let (mut bytes, mut expected) = (Vec::new(), Vec::new());
            for (text, data, pieces, ping) in &messages {
                let size = data.len().div_ceil(*pieces).max(1);
                let fragments: Vec<&[u8]> = if data.is_empty() { vec![&[][..]] } else { data.chunks(size).collect() };
                for (i, fragment) in fragments.iter().enumerate() {
                    let opcode = if i > 0 { CONTINUATION } else if *text { TEXT } else { BINARY };
                    bytes.extend(encode(i + 1 == fragments.len(), opcode, mask, fragment));
                    if *ping && i + 1 < fragments.len() {
                        bytes.extend(encode(true, PING, mask, b"p"));
                        expected.push(Event::Ping(b"p".to_vec()));
                    }
                }
                expected.push(message(*text, data));
            }
            let mut events = Vec::new();
            let mut parser = Parser::new(MAX_MESSAGE);
            let mut rest = &bytes[..];
            for cut in cuts {
                let (piece, tail) = rest.split_at(cut.min(rest.len()));
                parser.push(piece, &mut events);
                rest = tail;
            }
            parser.push(rest, &mut events);
            proptest::prop_assert_eq!(events, expected);
        }
    }

    #[test]
    fn broken_framing_is_reported_once_and_ends_the_parse() {
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (encode(true, CONTINUATION, None, b"x"), "continuation frame outside"),
            ([encode(false, TEXT, None, b"a"), encode(true, BINARY, None, b"b")].concat(), "new message inside"),
            (encode(false, PING, None, b""), "fragmented control frame"),
            (encode(true, PING, None, &[0; 126]), "control frame of 126 bytes"),
            (encode(true, 0x3, None, b""), "unknown opcode 3"),
            (vec![0xC1, 0x00], "RSV bits"),
        ];
        for (mut bytes, expected) in cases {
            bytes.extend(encode(true, TEXT, None, b"after"));
            let events = parse_split(&bytes, MAX_MESSAGE);
            assert!(
                matches!(events.as_slice(), [Event::Invalid(reason)] if reason.contains(expected)),
                "{expected}: {events:?}"
            );
        }
    }
}
