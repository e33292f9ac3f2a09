# workerd's configuration for the example: `npx workerd serve examples/edge-worker/config.capnp`, then
# http://127.0.0.1:8787 serves the origin (`ORIGIN` in the environment, else the config's `proxy`)
# rewritten. `--socket-addr http=127.0.0.1:<port>` listens elsewhere.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    # The origin is on this machine in development: let the Worker's fetch() reach loopback.
    (name = "internet", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [(name = "http", address = "127.0.0.1:8787", http = (), service = "main")],
);

const worker :Workerd.Worker = (
  modules = [
    (name = "worker.mjs", esModule = embed "worker.mjs"),
    (name = "devproxy.config.mjs", esModule = embed "devproxy.config.mjs"),
    # The package's `devproxy-native/wasm` (its edge entry) and the files it imports, by the names
    # its relative imports resolve to.
    (name = "devproxy-native/wasm", esModule = embed "../../wasm/edge.mjs"),
    (name = "devproxy-native/rewriter.mjs", esModule = embed "../../wasm/rewriter.mjs"),
    (name = "devproxy-native/pkg/devproxy_native.js", esModule = embed "../../wasm/pkg/devproxy_native.js"),
    (name = "devproxy-native/pkg/devproxy_native_bg.wasm", wasm = embed "../../wasm/pkg/devproxy_native_bg.wasm"),
  ],
  compatibilityDate = "2026-11-01",
  bindings = [(name = "ORIGIN", fromEnvironment = "ORIGIN")],
);
