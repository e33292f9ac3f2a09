//! The skip table end to end (src/skip.rs): a real upstream on 127.0.0.1 whose body and validator the
//! test sets, the proxy in front. A rule that found nothing is skipped only for the same URL with the
//! same validator under the same rule set. To see a skip from outside, the upstream lies: it changes
//! the body under an unchanged ETag, and a skipped rule leaves the new match unreplaced.

mod common;

use std::sync::{Arc, Mutex};

use devproxy_native::ProxyServer;

/// What the upstream answers: a body and its validator headers.
#[derive(Clone, Default)]
struct Answer {
    body: String,
    etag: Option<String>,
    last_modified: Option<String>,
}

struct Setup {
    answer: Arc<Mutex<Answer>>,
    proxy: ProxyServer,
}

impl Setup {
    /// Two literal rules that share one search (a group): each is skipped on its own.
    async fn new() -> Setup {
        Setup::with_rules(vec![common::global_rule("beta", "BETA"), common::global_rule("alpha", "ALPHA")]).await
    }

    async fn with_rules(rules: Vec<devproxy_native::Rule>) -> Setup {
        let answer = Arc::new(Mutex::new(Answer::default()));
        let serving = answer.clone();
        let up = common::upstream(move |_, _| {
            let answer = serving.lock().unwrap().clone();
            let mut response = common::html(answer.body);
            let headers = response.headers_mut();
            if let Some(etag) = answer.etag {
                headers.insert("etag", etag.parse().unwrap());
            }
            if let Some(date) = answer.last_modified {
                headers.insert("last-modified", date.parse().unwrap());
            }
            response
        })
        .await;
        let mut config = common::proxy_config(up);
        config.rules = rules;
        let proxy = ProxyServer::start(config).await.unwrap();
        Setup { answer, proxy }
    }

    fn serve(&self, body: &str, etag: Option<&str>, last_modified: Option<&str>) {
        *self.answer.lock().unwrap() = Answer {
            body: format!("<html><body>{body}</body></html>"),
            etag: etag.map(str::to_string),
            last_modified: last_modified.map(str::to_string),
        };
    }

    /// The page through the proxy, its body between the body tags.
    async fn get(&self, path: &str) -> String {
        let url = format!("http://{}{path}", self.proxy.local_addr());
        let response = common::client().request(common::get_page(&url, None)).await.unwrap();
        let body = common::body(response).await;
        let body = String::from_utf8(body.to_vec()).unwrap();
        body.trim_start_matches("<html><body>").trim_end_matches("</body></html>").to_string()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_that_found_nothing_is_skipped_for_the_same_validator_only() {
    let s = Setup::new().await;
    s.serve("alpha", Some("\"v1\""), None);
    assert_eq!(s.get("/").await, "ALPHA", "first response: both rules run, `beta` finds nothing");
    // Same URL and ETag, a body that now has `beta` (a lying upstream): the rule is skipped.
    s.serve("alpha beta", Some("\"v1\""), None);
    assert_eq!(s.get("/").await, "ALPHA beta", "the rule that found nothing was skipped");
    // Another URL has its own entry.
    assert_eq!(s.get("/other").await, "ALPHA BETA");
    // A changed validator: the rules run again.
    s.serve("alpha beta", Some("\"v2\""), None);
    assert_eq!(s.get("/").await, "ALPHA BETA");
    // Last-Modified serves as the validator when there is no ETag.
    s.serve("alpha", None, Some("Mon, 30 Nov 2026 10:00:00 GMT"));
    assert_eq!(s.get("/lm").await, "ALPHA");
    s.serve("alpha beta", None, Some("Mon, 30 Nov 2026 10:00:00 GMT"));
    assert_eq!(s.get("/lm").await, "ALPHA beta");
    s.serve("alpha beta", None, Some("Mon, 30 Nov 2026 10:00:01 GMT"));
    assert_eq!(s.get("/lm").await, "ALPHA BETA");
    s.proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_of_a_group_of_regex_rules_is_skipped_on_its_own() {
    // Independent regex rules run as one stage with one automaton (regex_groups.rs).
    let rules = vec![common::global_rule("be+t", "BET"), common::global_rule("al+p", "ALP")];
    assert_eq!(devproxy_native::Rule::grouped(&rules).len(), 1, "the two rules share a stage");
    let s = Setup::with_rules(rules).await;
    s.serve("alpha", Some("\"v1\""), None);
    assert_eq!(s.get("/").await, "ALPha");
    s.serve("alpha beeta", Some("\"v1\""), None);
    assert_eq!(s.get("/").await, "ALPha beeta", "the member that found nothing was skipped");
    s.serve("alpha beeta", Some("\"v2\""), None);
    assert_eq!(s.get("/").await, "ALPha BETa");
    s.proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_validator_nothing_is_skipped() {
    let s = Setup::new().await;
    s.serve("alpha", None, None);
    assert_eq!(s.get("/").await, "ALPHA");
    s.serve("alpha beta", None, None);
    assert_eq!(s.get("/").await, "ALPHA BETA");
    s.proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adding_or_removing_a_rule_makes_every_rule_run_again() {
    let s = Setup::new().await;
    s.serve("alpha", Some("\"v1\""), None);
    assert_eq!(s.get("/").await, "ALPHA");
    s.serve("alpha beta", Some("\"v1\""), None);
    assert_eq!(s.get("/").await, "ALPHA beta", "skipped before the rule set changes");
    let id = s.proxy.add_rule(common::global_rule("gamma", "GAMMA")).unwrap();
    assert_eq!(s.get("/").await, "ALPHA BETA", "a rule added: the table's entry is stale");
    s.serve("alpha", Some("\"v1\""), None);
    assert_eq!(s.get("/").await, "ALPHA");
    s.serve("alpha beta", Some("\"v1\""), None);
    assert_eq!(s.get("/").await, "ALPHA beta");
    assert!(s.proxy.remove_rule(id));
    assert_eq!(s.get("/").await, "ALPHA BETA", "a rule removed: the table's entry is stale");
    s.proxy.stop().await;
}
