//! `routes`: which target a request goes to. A path under a route's prefix goes to the route's
//! target (longest prefix first), anything else to `proxy`'s; each target has its own client, so a
//! route's `secure` is its own, and its own view of the config, so headers are rewritten for it.

use std::sync::Arc;

use rustls::client::danger::ServerCertVerifier;
use rustls::ClientConfig;

use crate::cassette::record::Recorder;
use crate::cassette::replay::Player;
use crate::config::{ProxyConfig, Route};
use crate::proxy::forward::{self, UpstreamClient};
use crate::rewrite::Rule;

/// Where one request is forwarded: a target's config, its pooled client and its WebSocket TLS.
#[derive(Clone, Copy)]
pub(crate) struct Upstream<'a> {
    /// The server's config as this target sees it ([`ProxyConfig::for_route`] for a route).
    pub config: &'a ProxyConfig,
    pub client: &'a UpstreamClient,
    pub websocket_tls: &'a Arc<ClientConfig>,
    /// The route's own cassette (`routes[prefix].replay`); `None`: the server's mode decides.
    pub replay: Option<&'a Arc<Player>>,
    /// The route's own recording (`routes[prefix].record`); `None`: the server's.
    pub recorder: Option<&'a Arc<Recorder>>,
}

struct RouteTarget {
    route: Route,
    config: ProxyConfig,
    client: UpstreamClient,
    websocket_tls: Arc<ClientConfig>,
    replay: Option<Arc<Player>>,
    recorder: Option<Arc<Recorder>>,
}

/// The routes of one server, longest prefix first, and the link rules of their targets.
pub(crate) struct Routes {
    targets: Vec<RouteTarget>,
    links: Vec<Rule>,
}

impl Routes {
    /// `verifier`: the process's upstream verifier; the server builds it whenever a route verifies.
    /// `players`: the routes' loaded cassettes, by prefix; `recorders`: their recordings.
    pub(crate) fn new(
        config: &ProxyConfig,
        verifier: Option<Arc<dyn ServerCertVerifier>>,
        players: &[(String, Arc<Player>)],
        recorders: &[(String, Arc<Recorder>)],
    ) -> Routes {
        let mut routes = config.routes.clone();
        routes.sort_by_key(|route| std::cmp::Reverse(route.prefix.len()));
        let targets: Vec<RouteTarget> = routes
            .into_iter()
            .map(|route| {
                let verifier = verifier.clone().filter(|_| route.verify_tls.is_on());
                RouteTarget {
                    replay: players.iter().find(|(prefix, _)| *prefix == route.prefix).map(|(_, p)| p.clone()),
                    recorder: recorders.iter().find(|(prefix, _)| *prefix == route.prefix).map(|(_, r)| r.clone()),
                    config: config.for_route(&route),
                    client: forward::client(verifier.clone()),
                    websocket_tls: forward::tls_config(verifier, &[b"http/1.1"]),
                    route,
                }
            })
            .collect();
        // Pages link to every target, whichever served them: one link rule per other host.
        let mut hosts = vec![config.target.link_host()];
        for target in &targets {
            let host = target.route.target.link_host();
            if !hosts.contains(&host) {
                hosts.push(host);
            }
        }
        let scheme = config.local_scheme();
        let links = hosts
            .iter()
            .skip(1)
            .flat_map(|host| [Rule::links(host, scheme), Rule::encoded_origin(host, scheme)])
            .collect();
        Routes { targets, links }
    }

    /// The route whose prefix is the longest one `path` starts with (at a segment boundary), if any.
    pub(crate) fn resolve(&self, path: &str) -> Option<Upstream<'_>> {
        self.targets.iter().find(|t| t.route.matches(path)).map(|t| Upstream {
            config: &t.config,
            client: &t.client,
            websocket_tls: &t.websocket_tls,
            replay: t.replay.as_ref(),
            recorder: t.recorder.as_ref(),
        })
    }

    /// The routes' own recordings, by prefix.
    pub(crate) fn recorders(&self) -> impl Iterator<Item = (&str, &Arc<Recorder>)> {
        self.targets.iter().filter_map(|t| t.recorder.as_ref().map(|r| (t.route.prefix.as_str(), r)))
    }

    /// The routes' targets, longest prefix first.
    pub(crate) fn targets(&self) -> impl Iterator<Item = &crate::config::Target> {
        self.targets.iter().map(|t| &t.route.target)
    }

    /// The link rules for the routes' targets, plain and percent-encoded (the main target's are
    /// [`crate::proxy::state::Shared::links`]).
    pub(crate) fn links(&self) -> &[Rule] {
        &self.links
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Target;

    fn route(prefix: &str, target: &str) -> Route {
        Route::new(prefix, Target::parse(target).unwrap()).unwrap()
    }

    #[test]
    fn longest_prefix_at_a_segment_boundary_wins() {
        let mut config = ProxyConfig::new(Target::parse("http://127.0.0.1:1000").unwrap());
        config.routes = vec![route("/api", "http://127.0.0.1:2000"), route("/api/v2/", "http://127.0.0.1:3000")];
        let routes = Routes::new(&config, None, &[], &[]);
        let port = |path: &str| routes.resolve(path).map(|u| u.config.target.port);
        assert_eq!(port("/api"), Some(2000));
        assert_eq!(port("/api/x?y"), Some(2000));
        assert_eq!(port("/api/v2"), Some(3000));
        assert_eq!(port("/api/v2/users"), Some(3000));
        assert_eq!(port("/api/v2x"), Some(2000));
        assert_eq!(port("/apix"), None);
        assert_eq!(port("/"), None);
        assert_eq!(routes.links().len(), 4, "the plain and the percent-encoded link rule of each other host");
    }

    #[test]
    fn bad_prefixes_are_named() {
        let target = || Target::parse("http://127.0.0.1:2000").unwrap();
        for (prefix, says) in [("api", "path prefix"), ("/", "every request"), ("/a?b", "path prefix")] {
            let err = Route::new(prefix, target()).unwrap_err().to_string();
            assert!(err.contains(&format!("routes['{prefix}']")) && err.contains(says), "{err}");
        }
    }
}
