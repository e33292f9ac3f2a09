//! `onRequest(entry)`: finished exchange records handed to JS in batches, off the hot path. A
//! response's end only `try_send`s the record into a bounded channel (never waits); one task drains
//! it, serialises up to [`BATCH`] records to JSON off the JS thread and calls lib/start.js's
//! dispatcher, which parses them and calls the user's function once per record. The next batch goes
//! only when JS has run the last one, so a slow callback backs records up into the channel, and what
//! does not fit there is dropped and counted (`stats().droppedRecords`), never waited for.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::ValueType;
use tokio::sync::mpsc;

use super::args::{get, type_name};
use super::invalid;
use super::outcome::{self, Outcome, SlicedFn};
use crate::config::ProxyConfig;
use crate::observe::{ExchangeRecord, RecordSink};

/// Records waiting for JS at most; more are dropped.
const QUEUE: usize = 4096;
/// Records per call into JS at most.
const BATCH: usize = 256;

/// Resolves once the batch's records have been handed to the user's function, each in a slice.
type Dispatcher = SlicedFn<String, ()>;

struct OnRequestSink {
    queue: mpsc::Sender<Arc<ExchangeRecord>>,
    dropped: AtomicU64,
}

impl RecordSink for OnRequestSink {
    fn push(&self, record: Arc<ExchangeRecord>) {
        if self.queue.try_send(record).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Reads the JS side's `onRequest` dispatcher (`(batch: string) => void`, a JSON array) into `config`.
pub(super) fn apply(js: &Object, config: &mut ProxyConfig) -> Result<()> {
    let Some(value) = get(js, "onRequest")? else { return Ok(()) };
    if value.get_type()? != ValueType::Function {
        return Err(invalid(format!("the JS side's `onRequest` must be a function, got {}", type_name(&value))));
    }
    let function: Function<String, Promise<Outcome<()>>> = Function::from_unknown(value)?;
    // Weak: pending records must not keep Node alive after `stop()` or `unref()`.
    let dispatcher: Dispatcher = function
        .build_threadsafe_function::<String>()
        .callee_handled::<false>()
        .weak::<true>()
        .build_callback(|ctx| Ok(ctx.value))?;
    let (queue, records) = mpsc::channel(QUEUE);
    napi::bindgen_prelude::spawn(drain(records, dispatcher));
    config.observe.sinks.push(Arc::new(OnRequestSink { queue, dropped: AtomicU64::new(0) }));
    Ok(())
}

/// Hands queued records to JS until the server (the channel's sender) is gone.
async fn drain(mut records: mpsc::Receiver<Arc<ExchangeRecord>>, dispatcher: Dispatcher) {
    let mut batch = Vec::with_capacity(BATCH);
    while records.recv_many(&mut batch, BATCH).await > 0 {
        let records: Vec<&ExchangeRecord> = batch.iter().map(|record| &**record).collect();
        let json = serde_json::to_string(&records).unwrap_or_else(|_| String::from("[]"));
        batch.clear();
        // The dispatcher catches what the user's function throws; an error here means Node is
        // shutting down, and nobody is left to tell.
        if outcome::call(&dispatcher, json).await.is_err() {
            return;
        }
    }
}
