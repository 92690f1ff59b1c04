//! The GraphQL, JSON and HTTP examples: queries are sent and must answer
//! without errors; bodies a client sends are sent; what the server sends
//! (an answer's `extensions`, webhook deliveries) is compared, key by key
//! and type by type, with the real thing.

use serde_json::{Value, json};

use super::shell::Stage;
use super::{Block, Check, blocks, blocks_checked_by};
use crate::helpers::receiver::Received;
use crate::helpers::uploads::{item, send, with};

/// The documented global ids, shortened with `...`, by the type they name.
const DOCUMENTED_IDS: [(&str, &str); 2] = [
    ("\"UHJvZHVjdDo...\"", "product"),
    ("\"U2VsbGVyOi...\"", "seller"),
];

/// Where `documented` and `real` differ in shape: object keys, and the
/// JSON type of every value (a placeholder string stands for any string).
fn shape_differences(documented: &Value, real: &Value, at: &str, out: &mut Vec<String>) {
    match (documented, real) {
        (Value::Object(d), Value::Object(r)) => {
            let (dk, rk): (Vec<&String>, Vec<&String>) = (d.keys().collect(), r.keys().collect());
            if dk != rk {
                out.push(format!("{at}: keys {dk:?}, really {rk:?}"));
            }
            for (key, value) in d {
                if let Some(real) = r.get(key) {
                    shape_differences(value, real, &format!("{at}.{key}"), out);
                }
            }
        }
        (Value::Array(d), Value::Array(r)) => {
            if let (Some(d), Some(r)) = (d.first(), r.first()) {
                shape_differences(d, r, &format!("{at}[0]"), out);
            }
        }
        (d, r) if std::mem::discriminant(d) == std::mem::discriminant(r) => {}
        (d, r) => out.push(format!("{at}: {d}, really {r}")),
    }
}

fn assert_same_shape(documented: &Value, real: &Value, at: &str) {
    let mut differences = Vec::new();
    shape_differences(documented, real, "", &mut differences);
    assert!(
        differences.is_empty(),
        "{at} differs from the real one: {differences:#?}"
    );
}

/// An HTTP request as the docs show it: its headers, lower-cased, and body.
fn request_of(block: &Block) -> (Vec<(String, String)>, Value) {
    let (head, body) = block
        .text
        .split_once("\n\n")
        .expect("headers, a blank line, a body");
    let headers = head
        .lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(name, value)| (name.to_ascii_lowercase(), value.to_owned()))
        .collect();
    let body = serde_json::from_str(body).unwrap_or_else(|e| panic!("{}: body: {e}", block.at));
    (headers, body)
}

fn vitrina_headers(headers: impl Iterator<Item = String>) -> Vec<String> {
    let mut names: Vec<String> = headers.filter(|n| n.starts_with("x-vitrina-")).collect();
    names.sort();
    names
}

/// A delivered request matches the documented one: the same `X-Vitrina-*`
/// headers, the same content type if shown, and a body of the same shape.
fn assert_like_delivery(block: &Block, real: &Received) {
    let (headers, body) = request_of(block);
    let real_names = real.headers.keys().map(|n| n.as_str().to_owned());
    assert_eq!(
        vitrina_headers(headers.iter().map(|(n, _)| n.clone())),
        vitrina_headers(real_names),
        "{}",
        block.at
    );
    if let Some((_, shown)) = headers.iter().find(|(n, _)| n == "content-type") {
        assert_eq!(real.header("content-type"), shown, "{}", block.at);
    }
    let real_body: Value = serde_json::from_slice(&real.body).expect("a JSON delivery");
    assert_same_shape(&body, &real_body, &block.at);
}

impl Stage {
    async fn graphql(&self, query: &str) -> Value {
        let body = json!({ "query": query });
        let answer = self.app.post_as(&self.key, "/graphql", &body).await;
        answer.json().await.expect("a JSON answer")
    }

    /// A query as documented, with real ids for the shortened ones.
    async fn with_real_ids(&self, query: &str) -> String {
        let found = self
            .graphql("{ products(first: 1) { edges { node { globalId seller { globalId } } } } }")
            .await;
        let node = &found["data"]["products"]["edges"][0]["node"];
        let mut query = query.to_owned();
        for (documented, kind) in DOCUMENTED_IDS {
            let real = match kind {
                "product" => &node["globalId"],
                _ => &node["seller"]["globalId"],
            };
            query = query.replace(documented, &real.to_string());
        }
        query
    }

    /// Deliveries of `event` the receiver has had since the last look.
    fn received(&mut self, event: &str) -> Vec<Received> {
        let all = self.receiver.take();
        all.into_iter()
            .filter(|r| r.header("x-vitrina-event") == event)
            .collect()
    }

    /// A real `product.price_changed` delivery: a subscription to it, and
    /// the demo upload's product merged again cheaper.
    async fn price_change(&mut self) -> Received {
        let subscription = json!({ "url": self.receiver.hook("/prices"),
                                   "events": ["product.price_changed"] });
        let created = self
            .app
            .post_as(&self.key, "/extension/v1/webhooks", &subscription)
            .await;
        assert_eq!(created.status(), 201);
        let cheaper = with(item("doc-example"), &["prices", "0", "price"], json!(1.0));
        send(&self.app, &self.key, vec![cheaper]).await;
        self.app.jobs().tick().await.expect("merge and deliver");
        self.received("product.price_changed")
            .pop()
            .expect("a price change delivered")
    }
}

async fn check_graphql(stage: &Stage, block: &Block) {
    let answer = stage.graphql(&stage.with_real_ids(&block.text).await).await;
    assert!(answer["errors"].is_null(), "{}: {answer}", block.at);
    let data = answer["data"].as_object().expect("data");
    assert!(
        data.values().all(|v| !v.is_null()),
        "{}: {answer}",
        block.at
    );
}

/// The GraphQL example just before `block` in its file.
fn query_before(block: &Block) -> Block {
    let file = block.at.split(':').next().unwrap_or_default();
    let all = blocks();
    let at = all
        .iter()
        .position(|b| b.at == block.at)
        .expect("the block itself");
    all[..at]
        .iter()
        .rev()
        .find(|b| b.kind == "graphql" && b.at.starts_with(&format!("{file}:")))
        .cloned()
        .unwrap_or_else(|| panic!("{}: no query before it", block.at))
}

async fn check_json(stage: &mut Stage, block: &Block) {
    let shown = || -> Value {
        serde_json::from_str(&block.text)
            .or_else(|_| serde_json::from_str(&format!("{{{}}}", block.text)))
            .unwrap_or_else(|e| panic!("{}: not JSON, whole or as members: {e}", block.at))
    };
    let documented = shown();
    if documented.get("extensions").is_some() {
        let answer = stage.graphql(&query_before(block).text).await;
        let real = json!({ "extensions": answer["extensions"] });
        assert_same_shape(&documented, &real, &block.at);
    } else if documented.get("url").is_some() && documented.get("events").is_some() {
        let body: Value = serde_json::from_str(&stage.addressed(&block.text)).expect("JSON");
        let created = stage
            .app
            .post_as(&stage.key, "/extension/v1/webhooks", &body)
            .await;
        let status = created.status();
        let created: Value = created.json().await.expect("an answer");
        assert_eq!(status, 201, "{}: {created}", block.at);
        assert_eq!(
            created["data"]["events"], documented["events"],
            "{}",
            block.at
        );
    } else if documented["event"] == "product.price_changed" {
        let real = stage.price_change().await;
        let real: Value = serde_json::from_slice(&real.body).expect("JSON");
        assert_same_shape(&documented, &real, &block.at);
    } else {
        panic!("{}: a JSON example no check knows", block.at);
    }
}

async fn check_http(stage: &mut Stage, block: &Block, completed: &Received) {
    let (headers, _) = request_of(block);
    let event = headers
        .iter()
        .find(|(n, _)| n == "x-vitrina-event")
        .map(|(_, v)| v.as_str());
    match event {
        Some("scrape_session.completed") => assert_like_delivery(block, completed),
        Some("ping") => {
            let test = format!("/extension/v1/webhooks/{}/test", stage.variable("WEBHOOK"));
            let answer = stage.app.post_as(&stage.key, &test, &json!({})).await;
            assert_eq!(answer.status(), 200, "{}", block.at);
            let ping = stage.received("ping").pop().expect("a ping delivered");
            assert_like_delivery(block, &ping);
        }
        other => panic!("{}: a request of event {other:?} no check knows", block.at),
    }
}

#[tokio::test]
async fn every_payload_example_is_sent_or_matches_a_real_one() {
    let mut stage = Stage::set_up().await;
    let completed = stage
        .received("scrape_session.completed")
        .pop()
        .expect("the set-up's session delivered");
    for block in blocks_checked_by(Check::Payload) {
        match block.kind.as_str() {
            "graphql" => check_graphql(&stage, &block).await,
            "json" => check_json(&mut stage, &block).await,
            "http" => check_http(&mut stage, &block, &completed).await,
            other => panic!("{}: a {other} payload no check knows", block.at),
        }
    }
}

#[test]
fn shapes_compare_keys_and_types() {
    let documented = json!({ "a": "...", "b": [{ "c": 1.0 }], "d": null });
    let same = json!({ "a": "x", "b": [{ "c": 2 }], "d": null });
    let mut out = Vec::new();
    shape_differences(&documented, &same, "", &mut out);
    assert!(out.is_empty(), "{out:?}");
    let other = json!({ "a": 1, "b": [{ "e": 1 }], "d": null, "f": true });
    shape_differences(&documented, &other, "", &mut out);
    assert_eq!(out.len(), 3, "{out:?}");
}
