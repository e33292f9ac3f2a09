//! Where a server is in its life: plain data the listener, the tunnels and the inspector watch.

/// Where a server is in its life; connections and tunnels watch it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Serving,
    /// `stop()` called: finish in-flight responses, take no new requests.
    Draining,
    /// Grace period over: close everything.
    Cut,
}
