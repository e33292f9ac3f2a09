//! The recording's writer thread: it decodes each exchange's bodies, splits SSE bodies into
//! events, redacts, scans for keys, and keeps the exchange's lines (in memory, then in a spill
//! file) until its end, when they are appended whole to the cassette.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;

use super::{Msg, RecordStatus, REQUEST_BODY_LIMIT, SPOOL_MEMORY};
use crate::cassette::format::{Data, Line};
use crate::cassette::redact::{Redaction, SEAM};
use crate::codec::{Decoder, Encoding};
use crate::stats::Stats;
use ws_lines::{ws_end, ws_lines, WsOpen};

mod ws_lines;

/// The writer thread's state.
pub(super) struct Writer {
    pub(super) file: File,
    pub(super) path: PathBuf,
    pub(super) redact: Redaction,
    pub(super) open: HashMap<u64, Open>,
    pub(super) status: Arc<RecordStatus>,
    pub(super) stats: Arc<Stats>,
    /// Told of each exchange written, as its lines (`onMiss: 'record'` replays it from then on).
    pub(super) learn: Option<Learn>,
    /// Buffers of finished exchanges' lines, reused: a page's ~100 KB buffer would otherwise be
    /// mapped and unmapped by malloc for every exchange (page faults; benches/RESULTS.md, "Module notes").
    pub(super) spare: Vec<Vec<u8>>,
}

/// Spare line buffers kept: one per exchange in flight at a time, for the usual few.
const SPARE_BUFFERS: usize = 8;

/// What is told of each exchange written: its lines as they are in the cassette.
pub(crate) type Learn = Box<dyn Fn(&[u8]) + Send>;

/// An exchange whose end has not come yet.
pub(super) struct Open {
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    body_len: u64,
    body_crc: crc32fast::Hasher,
    decoder: Option<Decoder>,
    sse: bool,
    chunk: u64,
    events: u64,
    refused: Option<String>,
    /// The end of the body's last piece, to find a key that the next piece's start completes.
    seam: Vec<u8>,
    spool: Spool,
    /// An upgraded exchange's frame parsers (from its 101 on).
    ws: Option<Box<WsOpen>>,
}

/// How long the writer waits for more once its queue is empty, before it parks. Each wake-up of
/// the writer takes a core from a proxy worker, so the wait adapts so that it ends with the channel
/// between a quarter and half full: under load the writer then wakes once for a few exchanges, and
/// a stream fast enough to fill the channel shortens the wait, so that senders seldom wait for room.
/// An idle recording parks. Measurements: benches/RESULTS.md, "Module notes".
struct BatchWait {
    wait: Duration,
}

impl BatchWait {
    const FIRST: Duration = Duration::from_micros(200);
    const SHORTEST: Duration = Duration::from_micros(50);
    const LONGEST: Duration = Duration::from_millis(1);

    /// The next message; `None` once every sender is gone.
    fn next_message(&mut self, rx: &mut mpsc::Receiver<Msg>) -> Option<Msg> {
        let mut waited = false;
        loop {
            match rx.try_recv() {
                Ok(msg) => return Some(msg),
                Err(mpsc::error::TryRecvError::Disconnected) => return None,
                Err(mpsc::error::TryRecvError::Empty) if !waited => {
                    std::thread::sleep(self.wait);
                    waited = true;
                    self.adapt(rx.len(), rx.max_capacity());
                }
                Err(mpsc::error::TryRecvError::Empty) => return rx.blocking_recv(),
            }
        }
    }

    /// Halves the wait when it ended with the channel over half full; lengthens it by a quarter
    /// when under a quarter full.
    fn adapt(&mut self, queued: usize, capacity: usize) {
        if queued > capacity / 2 {
            self.wait = (self.wait / 2).max(Self::SHORTEST);
        } else if queued < capacity / 4 {
            self.wait = (self.wait * 5 / 4).min(Self::LONGEST);
        }
    }
}

impl Writer {
    pub(super) fn run(mut self, mut rx: mpsc::Receiver<Msg>) {
        let mut batch = BatchWait { wait: BatchWait::FIRST };
        while let Some(msg) = batch.next_message(&mut rx) {
            if self.status.failed.lock().unwrap_or_else(PoisonError::into_inner).is_some() {
                continue; // drained, so that the proxy never waits on a dead recording
            }
            if let Err(e) = self.handle(msg) {
                let reason = format!("recording to {} failed: {e}; nothing more is recorded", self.path.display());
                self.stats.log_error(&reason);
                *self.status.failed.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason);
                for (_, open) in self.open.drain() {
                    open.spool.discard();
                }
            }
        }
        for (_, open) in self.open.drain() {
            open.spool.discard();
        }
    }

    pub(super) fn handle(&mut self, msg: Msg) -> std::io::Result<()> {
        match msg {
            Msg::Request { id, method, url, headers } => {
                let memory = self.spare.pop().unwrap_or_default();
                let spool = Spool::new(self.path.with_extension(format!("{id}.part")), memory);
                self.open.insert(
                    id,
                    Open {
                        method,
                        url,
                        headers,
                        body: Vec::new(),
                        body_len: 0,
                        body_crc: crc32fast::Hasher::new(),
                        decoder: None,
                        sse: false,
                        chunk: 0,
                        events: 0,
                        refused: None,
                        seam: Vec::new(),
                        spool,
                        ws: None,
                    },
                );
            }
            Msg::RequestBody { id, bytes } => {
                let Some(open) = self.open.get_mut(&id) else { return Ok(()) };
                open.body_len += bytes.len() as u64;
                open.body_crc.update(&bytes);
                if open.body.len() + bytes.len() <= REQUEST_BODY_LIMIT {
                    open.body.extend_from_slice(&bytes);
                }
            }
            Msg::Response { id, at, status, headers, encoding } => {
                let Some(open) = self.open.get_mut(&id) else { return Ok(()) };
                if status == 101 {
                    open.ws = Some(WsOpen::new());
                }
                let coding = Encoding::from_content_encoding(Some(&encoding));
                // Identity needs no decoder: its chunks are written as they came, not copied first.
                open.decoder = coding.filter(|c| *c != Encoding::Identity).map(Decoder::new);
                open.sse = headers.iter().any(|(n, v)| n == "content-type" && v.contains("text/event-stream"));
                let headers = self.redact.headers(&headers);
                // An unknown coding is stored as it came (base64), and says so.
                let encoding = if coding.is_none() { format!("{encoding} (not decoded)") } else { encoding };
                let line = Line::Response { id, at, status, headers, encoding };
                open.spool.push(&line)?;
            }
            Msg::Body { id, at, bytes } => {
                let Some(open) = self.open.get_mut(&id) else { return Ok(()) };
                if open.refused.is_none() {
                    body_lines(open, &self.redact, id, at, &bytes)?;
                }
                open.chunk += 1;
            }
            Msg::Ws { id, at, from_client, bytes } => {
                let Some(open) = self.open.get_mut(&id) else { return Ok(()) };
                if let Some(stop) = ws_lines(open, &self.redact, id, at, from_client, &bytes)? {
                    // The tunnel goes on; this exchange ends here, and what comes after is dropped.
                    let Some(open) = self.open.remove(&id) else { return Ok(()) };
                    self.finish(id, open, at, Some(stop), None)?;
                }
            }
            Msg::End { id, at, error } => {
                let Some(mut open) = self.open.remove(&id) else { return Ok(()) };
                let stop = if error.is_none() { ws_end(&mut open, &self.redact, id, at)? } else { None };
                let error = error.or(stop);
                // A WebSocket ends at its first close frame, with its code.
                let close = open.ws.as_ref().and_then(|ws| ws.close()).filter(|_| error.is_none());
                let at = close.map_or(at, |(close_at, _)| close_at);
                self.finish(id, open, at, error, close.and_then(|(_, code)| code))?;
            }
        }
        Ok(())
    }

    fn finish(
        &mut self,
        id: u64,
        mut open: Open,
        at: f64,
        error: Option<String>,
        close: Option<u16>,
    ) -> std::io::Result<()> {
        let (body, refused) = request_body(&open, &self.redact);
        let refused = refused.or(open.refused.take());
        if let Some(reason) = refused {
            self.reuse(open.spool.discard());
            let message = format!(
                "recording: {} {} not written to {}: {reason} (list it in record.redact.allow to record it)",
                open.method,
                self.redact.url(&open.url),
                self.path.display()
            );
            self.stats.log_error(&message);
            *self.status.last_refusal.lock().unwrap_or_else(PoisonError::into_inner) = Some(message);
            self.status.refused.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let request = Line::Request {
            id,
            method: open.method.clone(),
            url: self.redact.url(&open.url),
            headers: self.redact.headers(&open.headers),
            body,
        };
        let start = self.learn.as_ref().and_then(|_| self.file.metadata().ok()).map(|m| m.len());
        write_line(&mut self.file, &request)?;
        let memory = open.spool.append_to(&mut self.file)?;
        self.reuse(memory);
        let mut end = serde_json::to_vec(&Line::End { id, at, error, close }).map_err(std::io::Error::other)?;
        end.push(b'\n');
        if let (Some(learn), Some(start)) = (&self.learn, start) {
            // Read back rather than kept (the body lines may be in the spill file), and learnt before
            // the end line is written: whoever sees the exchange whole in the file can replay it.
            if let Ok(mut lines) = read_back(&self.path, start, self.file.metadata()?.len()) {
                lines.extend_from_slice(&end);
                learn(&lines);
            }
        }
        self.file.write_all(&end)?;
        self.status.written.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

impl Writer {
    /// Keeps an exchange's line buffer for the next one, emptied, unless enough are kept or it grew
    /// past what an exchange keeps in memory.
    fn reuse(&mut self, mut memory: Vec<u8>) {
        if self.spare.len() < SPARE_BUFFERS && memory.capacity() <= 2 * SPOOL_MEMORY {
            memory.clear();
            self.spare.push(memory);
        }
    }
}

/// The bytes of a file from `start` to `end`.
fn read_back(path: &std::path::Path, start: u64, end: u64) -> std::io::Result<Vec<u8>> {
    let mut file = File::open(path)?;
    file.seek(std::io::SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    file.take(end.saturating_sub(start)).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The request line's body (JSON paths redacted), or why the exchange is refused.
fn request_body(open: &Open, redact: &Redaction) -> (Option<Data>, Option<String>) {
    if open.body_len == 0 {
        return (None, None);
    }
    if open.body_len as usize > open.body.len() {
        let crc = open.body_crc.clone().finalize();
        let text = format!("[request body not kept: {} bytes, crc32 {crc:08x}, over 1 MiB]", open.body_len);
        // What was kept is still scanned: a key in the first MiB refuses the exchange.
        return (Some(Data::Text(text)), redact.scan(&open.body, "request body", None).err());
    }
    let (bytes, json) = redact.request_body(&open.body);
    let refused = redact.scan(&bytes, "request body", json.as_ref()).err();
    (Some(Data::of(&bytes)), refused)
}

/// The most of a chunk decoded at once: a small compressed chunk may decode to a GiB, which goes in
/// pieces of this size (each its own lines, as if the target had sent it in smaller chunks).
const RECORD_PIECE: usize = 1 << 20;

/// Decodes one upstream chunk and spools its lines (one per SSE event piece).
fn body_lines(open: &mut Open, redact: &Redaction, id: u64, at: f64, bytes: &[u8]) -> std::io::Result<()> {
    let Some(mut decoder) = open.decoder.take() else {
        // Identity (what a loopback target sends): the chunk as it is, not a copy.
        return decoded_lines(open, redact, id, at, bytes);
    };
    let mut decoded = Vec::new();
    let mut input = bytes;
    loop {
        let before = decoded.len();
        match decoder.decode(input, &mut decoded) {
            Ok(consumed) => input = &input[consumed..],
            Err(_) => {
                // Stored as it came from here on (no decoder), so the cassette still holds the bytes.
                open.refused = None;
                decoded.extend_from_slice(input);
                return decoded_lines(open, redact, id, at, &decoded);
            }
        }
        let drained = input.is_empty() && decoded.len() - before < crate::codec::DECODED_PIECE;
        let written = if drained || decoded.len() >= RECORD_PIECE {
            let written = decoded_lines(open, redact, id, at, &decoded);
            decoded.clear();
            written
        } else {
            Ok(())
        };
        if drained || open.refused.is_some() || written.is_err() {
            open.decoder = Some(decoder);
            return written;
        }
    }
}

/// Spools the lines of decoded body bytes (one per SSE event piece).
fn decoded_lines(open: &mut Open, redact: &Redaction, id: u64, at: f64, decoded: &[u8]) -> std::io::Result<()> {
    if decoded.is_empty() {
        return Ok(());
    }
    let pieces: Vec<&[u8]> = if open.sse { sse_pieces(decoded) } else { vec![decoded] };
    for piece in pieces {
        let what = if open.sse {
            format!("response body event {}", open.events)
        } else {
            format!("response body chunk {}", open.chunk)
        };
        if open.sse {
            open.events += 1;
        }
        // A key can also be cut by the boundary with the piece before.
        let scanned = redacted(piece, open.sse, redact, &what).and_then(|piece| {
            let head = &piece[..piece.len().min(SEAM)];
            redact.scan_seam(&open.seam, head, &what).map(|()| piece)
        });
        match scanned {
            Ok(piece) => {
                keep_seam(&mut open.seam, &piece);
                super::body_line::push(&mut open.spool.memory, id, open.chunk, at, &piece);
                open.spool.spill_if_full()?;
            }
            Err(reason) => {
                open.refused = Some(reason);
                open.spool.clear();
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Keeps the last [`SEAM`] bytes of the body so far.
fn keep_seam(seam: &mut Vec<u8>, piece: &[u8]) {
    if piece.len() >= SEAM {
        seam.clear();
        seam.extend_from_slice(&piece[piece.len() - SEAM..]);
    } else {
        seam.extend_from_slice(piece);
        let extra = seam.len().saturating_sub(SEAM);
        seam.drain(..extra);
    }
}

/// A body piece (or WebSocket message) with the user's JSON paths redacted, or why the exchange is
/// refused: a key-shaped string in it.
fn redacted<'a>(piece: &'a [u8], sse: bool, redact: &Redaction, what: &str) -> Result<Cow<'a, [u8]>, String> {
    let mut piece = Cow::Borrowed(piece);
    // One scan for key shapes per piece (the body's bytes are the writer's main cost); parsed only
    // to redact JSON paths or to name where a key-shaped string is.
    let key = crate::cassette::redact::find_key(&piece);
    let parse = !redact.json.is_empty() || key.is_some();
    let json = match (parse, sse) {
        (false, _) => None,
        (true, true) => sse_json(&piece),
        (true, false) => serde_json::from_slice::<Value>(&piece).ok(),
    };
    let (json, changed) = match json {
        Some(mut value) => {
            let changed = redact.json(&mut value);
            (Some(value), changed)
        }
        None => (None, false),
    };
    if changed {
        if let Some(value) = &json {
            piece = Cow::Owned(if sse {
                sse_rewrite(&piece, value)
            } else {
                serde_json::to_vec(value).unwrap_or_else(|_| piece.to_vec())
            });
        }
    }
    // Without a key shape found, only a redaction (which may have removed one) needs a new scan.
    let scanned = if key.is_some() || changed { redact.scan(&piece, what, json.as_ref()) } else { Ok(()) };
    scanned.map(|()| piece)
}

/// Splits decoded SSE bytes after each blank line (the end of an event); the rest is a piece too.
pub(super) fn sse_pieces(bytes: &[u8]) -> Vec<&[u8]> {
    let mut pieces = Vec::new();
    let mut start = 0;
    for newline in memchr::memchr_iter(b'\n', bytes) {
        let next = &bytes[newline + 1..];
        let end = if next.starts_with(b"\n") {
            newline + 2
        } else if next.starts_with(b"\r\n") {
            newline + 3
        } else {
            continue;
        };
        if end > start {
            pieces.push(&bytes[start..end]);
            start = end;
        }
    }
    if start < bytes.len() {
        pieces.push(&bytes[start..]);
    }
    pieces
}

/// The JSON of an event's `data:` lines, if they hold JSON.
pub(super) fn sse_json(event: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(event).ok()?;
    let data: Vec<&str> =
        text.lines().filter_map(|l| l.strip_prefix("data:")).map(|d| d.strip_prefix(' ').unwrap_or(d)).collect();
    if data.is_empty() {
        return None;
    }
    serde_json::from_str(&data.join("\n")).ok()
}

/// The event with its `data:` replaced by `value` (one line), other fields kept.
fn sse_rewrite(event: &[u8], value: &Value) -> Vec<u8> {
    let text = String::from_utf8_lossy(event);
    let mut out = String::new();
    let mut done = false;
    for line in text.split_inclusive('\n') {
        if line.starts_with("data:") {
            if !done {
                out.push_str(&format!("data: {}\n", serde_json::to_string(value).unwrap_or_default()));
                done = true;
            }
        } else {
            out.push_str(line);
        }
    }
    out.into_bytes()
}

/// An exchange's lines until its end: in memory, then in a spill file.
struct Spool {
    memory: Vec<u8>,
    spill: Option<File>,
    spill_path: PathBuf,
}

impl Spool {
    fn new(spill_path: PathBuf, memory: Vec<u8>) -> Spool {
        Spool { memory, spill: None, spill_path }
    }

    fn push(&mut self, line: &Line) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.memory, line).map_err(std::io::Error::other)?;
        self.memory.push(b'\n');
        self.spill_if_full()
    }

    /// Moves the lines kept in memory to the spill file once they pass [`SPOOL_MEMORY`].
    fn spill_if_full(&mut self) -> std::io::Result<()> {
        if self.memory.len() > SPOOL_MEMORY {
            if self.spill.is_none() {
                let mut open = std::fs::OpenOptions::new();
                open.create(true).truncate(true).read(true).write(true);
                self.spill = Some(super::open_no_follow(&mut open, &self.spill_path)?);
            }
            if let Some(spill) = &mut self.spill {
                spill.write_all(&self.memory)?;
            }
            self.memory.clear();
        }
        Ok(())
    }

    fn clear(&mut self) {
        self.memory.clear();
        if self.spill.take().is_some() {
            let _ = std::fs::remove_file(&self.spill_path);
        }
    }

    /// Drops the lines; returns the emptied buffer.
    fn discard(mut self) -> Vec<u8> {
        self.clear();
        self.memory
    }

    /// Appends the lines to `file`; returns the buffer.
    fn append_to(mut self, file: &mut File) -> std::io::Result<Vec<u8>> {
        if let Some(mut spill) = self.spill.take() {
            spill.rewind()?;
            let mut buf = vec![0; 256 * 1024];
            loop {
                let n = spill.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                file.write_all(&buf[..n])?;
            }
            drop(spill);
            let _ = std::fs::remove_file(&self.spill_path);
        }
        file.write_all(&self.memory)?;
        Ok(std::mem::take(&mut self.memory))
    }
}

pub(super) fn write_line(file: &mut File, line: &Line) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(line).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    file.write_all(&bytes)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use bytes::Bytes;

    use super::*;
    use crate::cassette::record::tests::{scratch, writer};
    use crate::cassette::redact::parse_json_path;

    #[test]
    fn the_wait_halves_when_the_channel_fills_and_grows_when_it_stays_empty() {
        let mut batch = BatchWait { wait: BatchWait::FIRST };
        batch.adapt(20, 32);
        assert_eq!(batch.wait, Duration::from_micros(100));
        for _ in 0..10 {
            batch.adapt(32, 32);
        }
        assert_eq!(batch.wait, BatchWait::SHORTEST);
        batch.adapt(12, 32);
        assert_eq!(batch.wait, BatchWait::SHORTEST, "between a quarter and half full: kept");
        batch.adapt(7, 32);
        assert_eq!(batch.wait, Duration::from_micros(62) + Duration::from_nanos(500));
        for _ in 0..40 {
            batch.adapt(0, 32);
        }
        assert_eq!(batch.wait, BatchWait::LONGEST);
    }

    #[test]
    fn the_wait_is_kept_at_exactly_a_quarter_or_half_full() {
        let mut batch = BatchWait { wait: BatchWait::FIRST };
        batch.adapt(16, 32);
        assert_eq!(batch.wait, BatchWait::FIRST);
        batch.adapt(8, 32);
        assert_eq!(batch.wait, BatchWait::FIRST);
    }

    fn end(id: u64) -> Msg {
        Msg::End { id, at: 1.0, error: None }
    }

    #[test]
    fn an_empty_queue_is_waited_on_once_then_the_writer_parks_until_a_message_or_the_last_sender_goes() {
        let (tx, mut rx) = mpsc::channel(32);
        let mut batch = BatchWait { wait: BatchWait::FIRST };
        assert!(tx.try_send(end(1)).is_ok());
        assert!(matches!(batch.next_message(&mut rx), Some(Msg::End { id: 1, .. })));
        assert_eq!(batch.wait, BatchWait::FIRST, "a message waiting: no wait");
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            tx.blocking_send(end(2)).unwrap();
        });
        assert!(matches!(batch.next_message(&mut rx), Some(Msg::End { id: 2, .. })));
        // One wait of 200 µs with the channel empty (lengthened by a quarter), then parked.
        assert_eq!(batch.wait, BatchWait::FIRST * 5 / 4);
        sender.join().unwrap();
        assert!(batch.next_message(&mut rx).is_none());
    }

    /// Runs `msgs` through a fresh writer; returns it and the cassette's exchanges.
    fn record(name: &str, redact: Redaction, msgs: Vec<Msg>) -> (Writer, Vec<crate::cassette::read::Exchange>) {
        let (dir, path) = scratch(name);
        let mut w = writer(&path, redact);
        for msg in msgs {
            w.handle(msg).unwrap();
        }
        let exchanges = crate::cassette::read::read(&path).unwrap().exchanges;
        std::fs::remove_dir_all(&dir).unwrap();
        (w, exchanges)
    }

    /// One exchange: a GET whose response has `headers`, `encoding` and body `chunks`.
    fn exchange(id: u64, headers: &[(&str, &str)], encoding: &str, chunks: &[&[u8]]) -> Vec<Msg> {
        let headers = headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
        let mut msgs = vec![
            Msg::Request { id, method: "GET".into(), url: "/".into(), headers: vec![] },
            Msg::Response { id, at: 1.0, status: 200, headers, encoding: encoding.into() },
        ];
        msgs.extend(chunks.iter().map(|c| Msg::Body { id, at: 2.0, bytes: Bytes::copy_from_slice(c) }));
        msgs.push(end(id));
        msgs
    }

    #[test]
    fn a_request_body_over_1_mib_is_recorded_as_its_length_and_crc_and_one_of_1_mib_as_it_is() {
        // 1 MiB written out: the limit itself is a promise (`REQUEST_BODY_LIMIT`).
        let big = vec![b'a'; (1 << 20) + 1];
        let mut msgs = Vec::new();
        let small: [&[u8]; 2] = [b"{\"q\":", b"1}"];
        let whole = [&big[..1 << 20]];
        for (id, chunks) in [(1, vec![&big[..1 << 20], &big[1 << 20..]]), (2, small.to_vec()), (3, whole.to_vec())] {
            msgs.push(Msg::Request { id, method: "POST".into(), url: "/".into(), headers: vec![] });
            msgs.extend(chunks.into_iter().map(|c| Msg::RequestBody { id, bytes: Bytes::copy_from_slice(c) }));
            msgs.push(Msg::Response { id, at: 1.0, status: 204, headers: vec![], encoding: "identity".into() });
            msgs.push(end(id));
        }
        let (_, exchanges) = record("request-body", Redaction::default(), msgs);
        let not_kept =
            format!("[request body not kept: {} bytes, crc32 {:08x}, over 1 MiB]", big.len(), crc32fast::hash(&big));
        assert_eq!(exchanges[0].body, Some(Data::Text(not_kept)));
        assert_eq!(exchanges[1].body, Some(Data::Text("{\"q\":1}".into())));
        assert_eq!(exchanges[2].body, Some(Data::Text(String::from_utf8(big[..1 << 20].to_vec()).unwrap())));
    }

    #[test]
    fn only_an_event_stream_is_split_into_events_and_a_refusal_names_the_event() {
        let json: &[u8] = b"{\"a\":1}\n\n{\"b\":2}";
        let (_, exchanges) = record(
            "not-sse",
            Redaction::default(),
            exchange(1, &[("content-type", "application/json")], "identity", &[json]),
        );
        assert_eq!(exchanges[0].chunks.len(), 1, "one chunk, one line");
        let events: &[u8] = b"data: {\"a\":1}\n\ndata: {\"k\":\"sk-abc123defghijklmnopqrstuvwx\"}\n\n";
        let (w, _) = record(
            "sse-refused",
            Redaction::default(),
            exchange(1, &[("content-type", "text/event-stream")], "identity", &[events]),
        );
        let refusal = w.status.last_refusal.lock().unwrap().clone().unwrap();
        assert!(refusal.contains("response body event 1 field `k`"), "{refusal}");
    }

    #[test]
    fn a_chunk_that_inflates_past_a_record_piece_is_recorded_whole_in_bounded_lines() {
        // 2.5 MiB from a few KiB: decoded and written 1 MiB at a time, never whole.
        let body: Vec<u8> = (0..5 * RECORD_PIECE / 2).map(|i| b"abcdefgh"[i % 8]).collect();
        for (encoding, name) in [(Encoding::Gzip, "gzip"), (Encoding::Brotli, "br"), (Encoding::Zstd, "zstd")] {
            let encoded = crate::codec::encode_all(encoding, &body);
            let (_, exchanges) = record("inflate-big", Redaction::default(), exchange(1, &[], name, &[&encoded[..]]));
            assert!(
                exchanges[0].response_body == body,
                "{name}: {} bytes of {}",
                exchanges[0].response_body.len(),
                body.len()
            );
            let ends = exchanges[0].chunks.iter().map(|&(_, _, end)| end);
            let lines: Vec<usize> =
                ends.clone().zip(std::iter::once(0).chain(ends)).map(|(end, start)| end - start).collect();
            assert!(lines.len() >= 3, "{name}: lines {lines:?}");
            assert!(
                lines.iter().all(|&len| len <= RECORD_PIECE + crate::codec::DECODED_PIECE),
                "{name}: lines {lines:?}"
            );
        }
    }

    #[test]
    fn a_chunk_that_inflates_past_one_piece_is_recorded_whole() {
        let body = vec![b'x'; 200 * 1024];
        // Brotli reads the whole (tiny) input at once and gives the output out a piece at a time:
        // the input is all taken while output is still to come.
        for (encoding, name) in [(Encoding::Gzip, "gzip"), (Encoding::Brotli, "br")] {
            let encoded = crate::codec::encode_all(encoding, &body);
            let (_, exchanges) = record("inflate", Redaction::default(), exchange(1, &[], name, &[&encoded[..]]));
            let got = &exchanges[0].response_body;
            assert!(*got == body, "{name}: {} bytes of {}", got.len(), body.len());
        }
    }

    #[test]
    fn json_paths_are_redacted_in_response_bodies_and_in_each_events_data() {
        let redact = Redaction { json: vec![parse_json_path("$.user").unwrap()], ..Redaction::default() };
        let (_, exchanges) = record(
            "json-paths",
            redact.clone(),
            exchange(1, &[("content-type", "application/json")], "identity", &[&b"{\"user\":\"ada\",\"n\":1}"[..]]),
        );
        let recorded: Value = serde_json::from_slice(&exchanges[0].response_body).unwrap();
        assert_eq!(recorded, serde_json::json!({"user": "[redacted]", "n": 1}));
        let events: &[u8] = b"event: e\ndata: {\"user\":\ndata: \"ada\"}\nid: 1\n\ndata: plain\n\n";
        let (_, exchanges) =
            record("sse-paths", redact, exchange(1, &[("content-type", "text/event-stream")], "identity", &[events]));
        let recorded = String::from_utf8(exchanges[0].response_body.clone()).unwrap();
        assert_eq!(recorded, "event: e\ndata: {\"user\":\"[redacted]\"}\nid: 1\n\ndata: plain\n\n");
    }

    #[test]
    fn line_buffers_are_kept_for_reuse_up_to_eight_of_at_most_2_mib() {
        let (_, path) = scratch("reuse");
        let mut w = writer(&path, Redaction::default());
        // 1 MiB written out: `SPOOL_MEMORY` is a promise too.
        w.reuse(Vec::with_capacity((2 << 20) + 1));
        assert!(w.spare.is_empty(), "over 2 MiB: let go");
        let mut used = Vec::with_capacity(2 << 20);
        used.extend_from_slice(b"old lines");
        w.reuse(used);
        w.reuse(Vec::with_capacity(3 << 19));
        assert_eq!(w.spare.len(), 2);
        assert!(w.spare.iter().all(Vec::is_empty));
        for _ in 0..10 {
            w.reuse(Vec::new());
        }
        assert_eq!(w.spare.len(), SPARE_BUFFERS);
    }

    #[test]
    fn a_finished_or_refused_exchanges_buffer_goes_back_with_its_room() {
        let chunk = [b'x'; 16 * 1024];
        let (w, _) = record("room", Redaction::default(), exchange(1, &[], "identity", &[&chunk[..]]));
        assert!(w.spare[0].capacity() >= chunk.len(), "written");
        let key: &[u8] = b"sk-abc123defghijklmnopqrstuvwx";
        let (w, _) = record("room-refused", Redaction::default(), exchange(1, &[], "identity", &[&chunk[..], key]));
        assert_eq!(w.status.refused.load(Ordering::Relaxed), 1);
        assert!(w.spare[0].capacity() >= chunk.len(), "refused");
    }

    #[test]
    fn learn_is_told_each_exchange_written_as_its_lines_in_the_cassette() {
        let (_, path) = scratch("learn");
        let mut w = writer(&path, Redaction::default());
        let learnt = Arc::new(Mutex::new(Vec::new()));
        let told = learnt.clone();
        w.learn = Some(Box::new(move |lines: &[u8]| told.lock().unwrap().push(lines.to_vec())));
        let mut msgs = exchange(1, &[], "identity", &[&b"hello"[..]]);
        msgs.extend(exchange(2, &[], "identity", &[&b"sk-abc123defghijklmnopqrstuvwx"[..]]));
        for msg in msgs {
            w.handle(msg).unwrap();
        }
        let text = std::fs::read(&path).unwrap();
        let first_line = text.iter().position(|&b| b == b'\n').unwrap() + 1;
        assert_eq!(*learnt.lock().unwrap(), vec![text[first_line..].to_vec()], "the written one, whole");
    }

    #[test]
    fn an_exchange_spills_only_past_1_mib_and_a_refused_one_leaves_no_spill_file() {
        let (dir, path) = scratch("spill-edge");
        let part = dir.join("c.1.part");
        let mut w = writer(&path, Redaction::default());
        for msg in exchange(1, &[], "identity", &[]).into_iter().take(2) {
            w.handle(msg).unwrap();
        }
        // Exactly 1 MiB of lines stays in memory.
        let mut empty_line = Vec::new();
        super::super::body_line::push(&mut empty_line, 1, 0, 2.0, b"");
        let kept = w.open[&1u64].spool.memory.len();
        let fill = vec![b'x'; (1 << 20) - kept - empty_line.len()];
        w.handle(Msg::Body { id: 1, at: 2.0, bytes: Bytes::from(fill) }).unwrap();
        assert_eq!(w.open[&1u64].spool.memory.len(), 1 << 20);
        assert!(!part.exists(), "1 MiB: not spilled");
        w.handle(Msg::Body { id: 1, at: 2.0, bytes: Bytes::from_static(b"y") }).unwrap();
        assert!(part.exists(), "past 1 MiB: spilled");
        // A key now: the exchange is refused, and its spill file goes at once.
        w.handle(Msg::Body { id: 1, at: 3.0, bytes: Bytes::from_static(b"sk-abc123defghijklmnopqrstuvwx") }).unwrap();
        assert!(!part.exists(), "refused: spill file removed");
        w.handle(end(1)).unwrap();
        assert!(!part.exists());
        assert_eq!(w.status.refused.load(Ordering::Relaxed), 1);
        assert!(crate::cassette::read::read(&path).unwrap().exchanges.is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
