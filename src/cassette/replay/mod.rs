//! Replay: requests answered from a cassette instead of the upstream, each response at its recorded
//! offsets with its recorded chunk boundaries. The answer goes through the rest of the proxy as an
//! upstream's would (response headers, body plan, rules, snippet, compression for the client).
//!
//! Identical requests (same match key) get their recordings in recorded order; once they are used
//! up, the last one is answered again (a page reload still works, and a UI loop never starves).

pub(crate) mod answer;
mod faults;
mod load;
mod matching;
pub(crate) mod ws;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Deserialize;

pub(crate) use faults::error_body;
pub use faults::{Fault, FaultAction};
pub use load::{read, read_file, CassetteError, Recorded, RecordedChunk, RecordedMessage};
pub use matching::MatchOptions;
use matching::RequestView;

use crate::cassette::format::{Line, VERSION};
use crate::cassette::record::{Learn, Recorder};
use crate::cassette::redact::Redaction;
use crate::error::ConfigError;

/// `replay` as JS gives it (`start()`, a `routes` entry, `server.replay()`), before it is checked.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReplaySpec {
    /// The cassette file.
    pub path: String,
    /// 1 real time (default), 0 as fast as possible, 4 four times faster.
    pub speed: Option<f64>,
    /// `'error'` (default), `'proxy'` or `'record'`.
    pub on_miss: Option<String>,
    /// What matching leaves out.
    #[serde(rename = "match")]
    pub matching: Option<MatchSpec>,
    /// Faults to inject.
    pub faults: Option<Vec<FaultSpec>>,
    /// With `onMiss: 'record'`, as `record.redact`; parsed at the binding edge (JSON paths).
    #[serde(default)]
    pub redact: Option<serde::de::IgnoredAny>,
}

/// `replay.match`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MatchSpec {
    /// Query parameter names.
    pub ignore_query: Option<Vec<String>>,
    /// JSON body fields, dotted paths for nested ones.
    pub ignore_fields: Option<Vec<String>>,
}

/// One `replay.faults` entry.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FaultSpec {
    /// URL glob the fault applies to.
    #[serde(rename = "match")]
    pub matches: Option<String>,
    /// Stall this long...
    pub stall_ms: Option<u64>,
    /// ...before this chunk (default 0).
    pub before_chunk: Option<u64>,
    /// Cut the body after this chunk.
    pub cut_after_chunk: Option<u64>,
    /// Answer this status.
    pub status: Option<u16>,
    /// With this body.
    pub body: Option<String>,
}

/// What a request that no recording matches gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnMiss {
    /// A 404 whose body names the nearest recording and what differs (the default).
    Error,
    /// Forwarded to the target.
    Proxy,
    /// Forwarded and recorded (update mode).
    Record,
}

/// `replay`, checked.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// The cassette, absolute (a relative path is resolved against the working directory).
    pub path: PathBuf,
    /// Offsets are divided by it; 0 sends everything at once.
    pub speed: f64,
    /// See [`OnMiss`].
    pub on_miss: OnMiss,
    /// See [`MatchOptions`].
    pub matching: MatchOptions,
    /// See [`Fault`].
    pub faults: Vec<Fault>,
    /// What a miss recorded with `onMiss: 'record'` has redacted (`replay.redact`).
    pub redact: Redaction,
}

impl ReplayOptions {
    /// Checks a spec; `option` names it in errors (`replay`, `routes['/v1'].replay`).
    pub fn from_spec(spec: ReplaySpec, option: &'static str) -> Result<ReplayOptions, ConfigError> {
        let bad = |reason: String| ConfigError::InvalidOption { name: option, reason };
        if spec.path.is_empty() {
            return Err(bad("`path` must name the cassette file".into()));
        }
        let speed = spec.speed.unwrap_or(1.0);
        if !speed.is_finite() || speed < 0.0 {
            return Err(bad(format!("`speed` must be 0 (no waiting) or a positive number, got {speed}")));
        }
        let on_miss = match spec.on_miss.as_deref().unwrap_or("error") {
            "error" => OnMiss::Error,
            "proxy" => OnMiss::Proxy,
            "record" => OnMiss::Record,
            other => return Err(bad(format!("`onMiss` must be 'error', 'proxy' or 'record', got '{other}'"))),
        };
        let matching = spec.matching.unwrap_or_default();
        let faults = spec
            .faults
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, f)| Fault::new(i, f))
            .collect::<Result<_, _>>()?;
        let path = PathBuf::from(&spec.path);
        let path = if path.is_absolute() { path } else { std::env::current_dir().unwrap_or_default().join(path) };
        Ok(ReplayOptions {
            path,
            speed,
            on_miss,
            matching: MatchOptions {
                ignore_query: matching.ignore_query.unwrap_or_default(),
                ignore_fields: matching.ignore_fields.unwrap_or_default(),
            },
            faults,
            redact: Redaction::default(),
        })
    }
}

/// Recordings that share a match key, in recorded order, and how many were answered.
struct Group {
    exchanges: Vec<usize>,
    next: AtomicUsize,
}

/// A loaded cassette and its options: what a replaying target answers from.
pub struct Player {
    /// The options it was loaded with.
    pub options: ReplayOptions,
    exchanges: Vec<Arc<Recorded>>,
    views: Vec<RequestView>,
    groups: HashMap<String, Group>,
    /// `onMiss: 'record'`: where misses are recorded, appended to the same cassette.
    recorder: Option<Arc<Recorder>>,
    /// Exchanges recorded since it was loaded, by match key: answered like the others.
    learned: Arc<Mutex<HashMap<String, Learned>>>,
}

/// Recordings made by this player (`onMiss: 'record'`) that share a match key.
#[derive(Default)]
struct Learned {
    exchanges: Vec<Arc<Recorded>>,
    next: usize,
}

/// What a request gets from the cassette.
pub enum Lookup {
    /// This recording.
    Hit(Arc<Recorded>),
    /// None: why, with the nearest recording.
    Miss(String),
}

impl Player {
    /// Reads the cassette (blocking: run it off the async workers).
    pub fn load(options: ReplayOptions) -> Result<Player, CassetteError> {
        let exchanges = read_file(&options.path)?;
        Ok(Player::new(options, exchanges))
    }

    /// A player for exchanges already read.
    pub fn new(options: ReplayOptions, mut exchanges: Vec<Recorded>) -> Player {
        // An exchange's lines are written when it ends: a 429 whose body the recorder read on after
        // the client left ends after the retry that followed it. Requests are answered in the order
        // they arrived (ids count arrivals).
        exchanges.sort_by_key(|exchange| exchange.id);
        let mut groups: HashMap<String, Group> = HashMap::new();
        let views: Vec<RequestView> =
            exchanges.iter().map(|e| RequestView::new(&e.method, &e.url, &e.body, &options.matching)).collect();
        for (index, view) in views.iter().enumerate() {
            groups
                .entry(view.key())
                .or_insert_with(|| Group { exchanges: Vec::new(), next: AtomicUsize::new(0) })
                .exchanges
                .push(index);
        }
        let exchanges = exchanges.into_iter().map(Arc::new).collect();
        Player { options, exchanges, views, groups, recorder: None, learned: Arc::default() }
    }

    /// Records misses with `recorder` (update mode).
    pub(crate) fn with_recorder(mut self, recorder: Recorder) -> Player {
        self.recorder = Some(Arc::new(recorder));
        self
    }

    /// What the recorder of misses tells of each exchange it wrote (its cassette lines): the
    /// exchange is answered from then on, so an identical request does not reach the target again.
    pub(crate) fn learner(&self) -> Learn {
        let (learned, matching) = (self.learned.clone(), self.options.matching.clone());
        let name = self.options.path.display().to_string();
        Box::new(move |lines: &[u8]| {
            let head = Line::Cassette { version: VERSION, created_at: String::new() };
            let Ok(mut text) = serde_json::to_vec(&head) else { return };
            text.push(b'\n');
            text.extend_from_slice(lines);
            let Ok(recorded) = read(&text[..], &name) else { return };
            let mut learned = learned.lock().unwrap_or_else(PoisonError::into_inner);
            for exchange in recorded {
                let key = RequestView::new(&exchange.method, &exchange.url, &exchange.body, &matching).key();
                learned.entry(key).or_default().exchanges.push(Arc::new(exchange));
            }
        })
    }

    /// The recorder of misses, with `onMiss: 'record'`.
    pub(crate) fn recorder(&self) -> Option<&Arc<Recorder>> {
        self.recorder.as_ref()
    }

    /// The highest exchange id in the cassette (0 when it has none).
    pub fn last_id(&self) -> u64 {
        self.exchanges.iter().map(|e| e.id).max().unwrap_or(0)
    }

    /// The recording for a request, the next one of its group; or why there is none. The request is
    /// compared as the recorder wrote it, its secrets redacted by the same policy (a key in the query,
    /// `redact.json` fields), so a client that sends its key in the URL matches, and a miss's
    /// explanation never holds the live secret.
    pub fn lookup(&self, method: &str, path_and_query: &str, body: &[u8]) -> Lookup {
        let url = self.options.redact.url(path_and_query);
        let (body, _) = self.options.redact.request_body(body);
        let view = RequestView::new(method, &url, &body, &self.options.matching);
        if let Some(group) = self.groups.get(&view.key()) {
            let turn = group.next.fetch_add(1, Ordering::Relaxed).min(group.exchanges.len() - 1);
            return Lookup::Hit(self.exchanges[group.exchanges[turn]].clone());
        }
        let mut learned = self.learned.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(group) = learned.get_mut(&view.key()) {
            let turn = group.next.min(group.exchanges.len() - 1);
            group.next += 1;
            return Lookup::Hit(group.exchanges[turn].clone());
        }
        drop(learned);
        Lookup::Miss(self.explain_miss(&view))
    }

    /// "no recorded exchange matches POST /v1/x: the nearest (line 2) differs in body field `temperature` (...)".
    fn explain_miss(&self, view: &RequestView) -> String {
        let cassette = self.options.path.display();
        let head = format!("no recorded exchange in '{cassette}' matches {}", view.label());
        let nearest = self
            .views
            .iter()
            .enumerate()
            .filter(|(_, recorded)| recorded.same_resource(view))
            .map(|(index, recorded)| (index, recorded.differences(view)))
            .min_by_key(|(_, differences)| differences.len());
        match nearest {
            Some((index, differences)) => {
                let line = self.exchanges[index].line;
                format!("{head}: the nearest (line {line}) differs in {}", differences.join(", "))
            }
            None => {
                let mut recorded: Vec<String> = self.views.iter().map(RequestView::label).collect();
                recorded.dedup();
                let listed = if recorded.is_empty() { "nothing".to_string() } else { recorded.join(", ") };
                format!("{head}: nothing was recorded for that method and path (recorded: {listed})")
            }
        }
    }

    /// The faults that apply to a request URL.
    pub fn faults_for<'a>(&'a self, path_and_query: &'a str) -> impl Iterator<Item = &'a FaultAction> + 'a {
        self.options.faults.iter().filter(move |f| f.applies_to(path_and_query)).map(|f| &f.action)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(line: usize, body: &str, text: &str) -> Recorded {
        Recorded {
            line,
            id: line as u64,
            method: "POST".into(),
            url: "/v1/chat/completions".into(),
            body: body.as_bytes().to_vec(),
            at: 1.0,
            status: 200,
            headers: Vec::new(),
            encoding: "identity".into(),
            chunks: vec![RecordedChunk { at: 2.0, bytes: text.as_bytes().to_vec().into() }],
            end_at: 3.0,
            error: None,
            ws: Vec::new(),
            close: None,
        }
    }

    fn options() -> ReplayOptions {
        ReplayOptions::from_spec(
            ReplaySpec {
                path: "c.jsonl".into(),
                speed: None,
                on_miss: None,
                matching: None,
                faults: None,
                redact: None,
            },
            "replay",
        )
        .unwrap()
    }

    #[test]
    fn identical_requests_replay_in_order_then_repeat_the_last() {
        let body = r#"{"model":"m","temperature":0.2}"#;
        let player = Player::new(options(), vec![recorded(2, body, "one"), recorded(6, body, "two")]);
        let answer = |body: &str| match player.lookup("POST", "/v1/chat/completions", body.as_bytes()) {
            Lookup::Hit(r) => String::from_utf8(r.chunks[0].bytes.to_vec()).unwrap(),
            Lookup::Miss(why) => why,
        };
        let reordered = r#"{"temperature":0.2,"model":"m"}"#;
        assert_eq!([answer(body), answer(reordered), answer(body)], ["one", "two", "two"]);
        let miss = answer(r#"{"model":"m","temperature":0.7}"#);
        assert!(
            miss.contains("matches POST /v1/chat/completions: the nearest (line 2) differs in body field `temperature` (recorded 0.2, got 0.7)"),
            "{miss}"
        );
        let other = match player.lookup("GET", "/v1/models", b"") {
            Lookup::Miss(why) => why,
            Lookup::Hit(_) => panic!("a hit"),
        };
        assert!(
            other.contains("nothing was recorded for that method and path (recorded: POST /v1/chat/completions)"),
            "{other}"
        );
    }

    #[test]
    fn a_secret_in_the_query_matches_its_redacted_recording_and_no_miss_names_it() {
        let mut exchange = recorded(2, "", "streamed");
        exchange.method = "GET".into();
        exchange.url = "/v1beta/models/g:streamGenerateContent?alt=sse&key=[redacted]".into();
        let player = Player::new(options(), vec![exchange]);
        let key = "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW";
        let hit = player.lookup("GET", &format!("/v1beta/models/g:streamGenerateContent?alt=sse&key={key}"), b"");
        assert!(matches!(hit, Lookup::Hit(_)), "the live key is compared as the recorder wrote it");
        for token in ["api_key", "token", "access_token"] {
            let url = format!("/v1beta/models/g:streamGenerateContent?alt=json&{token}={key}");
            let Lookup::Miss(why) = player.lookup("GET", &url, b"") else { panic!("a hit for {url}") };
            assert!(!why.contains(key), "a miss names no secret: {why}");
            assert!(why.contains("query parameter `alt` (recorded 'sse', got 'json')"), "{why}");
        }
    }

    #[test]
    fn an_exchange_recorded_on_a_miss_is_answered_from_then_on_in_order() {
        let player = Player::new(options(), vec![recorded(2, r#"{"a":1}"#, "one")]);
        assert_eq!(player.last_id(), 2);
        let answer = |body: &str| match player.lookup("POST", "/v1/chat/completions", body.as_bytes()) {
            Lookup::Hit(r) => String::from_utf8(r.chunks[0].bytes.to_vec()).unwrap(),
            Lookup::Miss(_) => "miss".into(),
        };
        assert_eq!(answer(r#"{"a":2}"#), "miss");
        let learn = player.learner();
        let exchange = |id: u64, text: &str| {
            format!(
                concat!(
                    r#"{{"type":"request","id":{id},"method":"POST","url":"/v1/chat/completions","headers":[],"body":{{"text":"{{\"a\":2}}"}}}}"#,
                    "\n",
                    r#"{{"type":"response","id":{id},"at":1.0,"status":200,"headers":[],"encoding":"identity"}}"#,
                    "\n",
                    r#"{{"type":"body","id":{id},"chunk":0,"at":2.0,"text":"{text}"}}"#,
                    "\n",
                    r#"{{"type":"end","id":{id},"at":3.0}}"#,
                    "\n"
                ),
                id = id,
                text = text
            )
        };
        learn(exchange(3, "two").as_bytes());
        learn(exchange(4, "three").as_bytes());
        assert_eq!([answer(r#"{"a":2}"#), answer(r#"{"a":2}"#), answer(r#"{"a":2}"#)], ["two", "three", "three"]);
        assert_eq!(answer(r#"{"a":1}"#), "one");
        learn(b"not a cassette line\n");
        assert_eq!(answer(r#"{"a":3}"#), "miss", "bad lines teach nothing");
    }

    #[test]
    fn bad_options_are_named() {
        let spec = |speed: f64, on_miss: &str| ReplaySpec {
            path: "c".into(),
            speed: Some(speed),
            on_miss: Some(on_miss.into()),
            matching: None,
            faults: Some(vec![FaultSpec { status: Some(200), ..FaultSpec::default() }]),
            redact: None,
        };
        let err = |s| ReplayOptions::from_spec(s, "replay").unwrap_err().to_string();
        assert!(err(spec(-1.0, "error")).contains("`speed`"));
        assert!(err(spec(1.0, "later")).contains("`onMiss`"));
        assert!(err(spec(1.0, "proxy")).contains("replay.faults[0]"), "{}", err(spec(1.0, "proxy")));
    }
}
