//! The REST half: the corpus sent to every parameter of every GET endpoint
//! the served OpenAPI document lists (and to one no endpoint knows), and
//! pages past any offset, which are empty pages reporting the page used.

use std::collections::BTreeMap;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use vitrina::config::DEFAULT_PRODUCTS_PAGE_WINDOW;

use super::{Hostile, SEED, World, corpus, encode, report, run, world};
#[derive(Clone, Debug)]
enum Kind {
    /// Free text; `max` is its `maxLength`.
    Text {
        max: usize,
    },
    Enum(Vec<String>),
    /// A URL (`url` on `/products` and `/sellers`): text, refused also when
    /// normalizing leaves nothing to match (`?x`, `http://`, blanks).
    Url,
    Uuid,
    DateTime,
    Integer,
}

#[derive(Clone, Debug)]
struct Parameter {
    name: String,
    in_path: bool,
    kind: Kind,
}

#[derive(Clone, Debug)]
struct Endpoint {
    path: String,
    parameters: Vec<Parameter>,
}

/// The kind of a parameter, from its schema in the document.
fn kind(doc: &Value, schema: &Value) -> Kind {
    let schema = match schema["$ref"].as_str() {
        Some(reference) => doc
            .pointer(reference.trim_start_matches('#'))
            .expect("a schema the document defines"),
        None => schema,
    };
    if let Some(values) = schema["enum"].as_array() {
        return Kind::Enum(
            values
                .iter()
                .map(|v| v.as_str().expect("string enum").to_owned())
                .collect(),
        );
    }
    let types = match &schema["type"] {
        Value::Array(types) => types.clone(),
        one => vec![one.clone()],
    };
    if types.contains(&json!("integer")) {
        return Kind::Integer;
    }
    assert!(types.contains(&json!("string")), "parameter type: {schema}");
    match schema["format"].as_str() {
        Some("uuid") => Kind::Uuid,
        Some("date-time") => Kind::DateTime,
        None => Kind::Text {
            max: schema["maxLength"]
                .as_u64()
                .map_or(usize::MAX, |n| n as usize),
        },
        Some(other) => panic!("a string format this test does not know: {other}"),
    }
}

/// Every GET endpoint of the OpenAPI document with its parameters.
async fn endpoints(w: &World) -> Vec<Endpoint> {
    let doc: Value = w
        .app
        .get("/v1/openapi.json")
        .await
        .json()
        .await
        .expect("the document is JSON");
    let paths = doc["paths"].as_object().expect("paths");
    assert!(paths.len() >= 9, "every endpoint is documented");
    paths
        .iter()
        .map(|(path, item)| Endpoint {
            path: path.clone(),
            parameters: item["get"]["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                // HTTP's own headers (If-None-Match) are not ours to refuse:
                // one that does not parse is no match (`conditional.rs`).
                .filter(|p| p["in"] != "header")
                .map(|p| Parameter {
                    name: p["name"].as_str().expect("name").to_owned(),
                    in_path: p["in"] == "path",
                    kind: match p["name"] == "url" {
                        true => Kind::Url,
                        false => kind(&doc, &p["schema"]),
                    },
                })
                .collect(),
        })
        .collect()
}

/// A parameter no endpoint knows: ignored, whatever its value.
const UNKNOWN: &str = "not_a_parameter";

/// What a parameter must do with a value.
#[derive(Debug, PartialEq)]
enum Rule {
    /// 400 `invalid_parameter` naming the parameter.
    Refused,
    /// Served (200), or refused for another documented reason
    /// (`missing_parameter` when the value counts as absent).
    Accepted,
    /// Either, as the parameter decides (a date that may or may not parse,
    /// an id that may or may not exist).
    Either,
    /// 200 with these `meta.page` / `meta.page_size` (paging never fails).
    Paged,
}

fn rule(kind: &Kind, value: &Hostile) -> Rule {
    let empty = value.bytes.is_empty();
    match kind {
        Kind::Integer => Rule::Paged,
        // An empty segment is another path: not found, or not an id.
        Kind::Uuid if empty => Rule::Either,
        _ if empty => Rule::Accepted,
        _ if value.unstorable() => Rule::Refused,
        Kind::Text { max } => match value.text() {
            Some(t) if t.chars().count() > *max => Rule::Refused,
            _ => Rule::Accepted,
        },
        Kind::Enum(allowed) => match value.text() {
            Some(t) if allowed.iter().any(|a| a == t) => Rule::Accepted,
            _ => Rule::Refused,
        },
        Kind::Url => match value.text().and_then(vitrina::text::url_key) {
            Some(_) => Rule::Accepted,
            None => Rule::Refused,
        },
        Kind::Uuid | Kind::DateTime => Rule::Either,
    }
}

/// A valid value of each kind, for the parameters not under test.
fn valid(w: &World, endpoint: &str, kind: &Kind) -> String {
    match kind {
        Kind::Text { .. } | Kind::Url => "x".into(),
        Kind::Enum(allowed) => allowed[0].clone(),
        Kind::Uuid if endpoint.starts_with("/me/scrapes") => w.session.clone(),
        Kind::Uuid => w.product.clone(),
        Kind::DateTime => "2026-01-01T00:00:00Z".into(),
        Kind::Integer => "2".into(),
    }
}

/// The paging rule, as DECISIONS states it: a whole number (one too large
/// for 64 bits saturates) in range, else the default.
fn paging(value: &[u8], default: u64, max: u64) -> u64 {
    let text = std::str::from_utf8(value.trim_ascii()).unwrap_or("");
    let digits = text.strip_prefix('+').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return default;
    }
    let n = digits.parse::<u64>().unwrap_or(u64::MAX);
    if (1..=max).contains(&n) { n } else { default }
}

struct RestCase {
    url: String,
    endpoint: String,
    parameter: String,
    value: Hostile,
    rule: Rule,
    page: (u64, u64),
}

fn rest_case(
    w: &World,
    rng: &mut ChaCha8Rng,
    endpoint: &Endpoint,
    tested: &Parameter,
    value: &Hostile,
) -> RestCase {
    let mut path = endpoint.path.clone();
    let mut others = Vec::new();
    let mut tested_pairs = Vec::new();
    let mut paging_values: BTreeMap<&str, Vec<u8>> = BTreeMap::new();
    let mut rule = if tested.name == UNKNOWN {
        Rule::Accepted
    } else {
        self::rule(&tested.kind, value)
    };
    for parameter in &endpoint.parameters {
        let placeholder = format!("{{{}}}", parameter.name);
        if parameter.in_path {
            let id = match parameter.name == tested.name {
                true => encode(&value.bytes),
                false => valid(w, &endpoint.path, &parameter.kind),
            };
            path = path.replace(&placeholder, &id);
        } else if parameter.name == tested.name {
            // Sometimes a valid first occurrence, which is the one that counts.
            if rng.random_ratio(1, 8) {
                let first = valid(w, &endpoint.path, &parameter.kind);
                tested_pairs.push(format!("{}={first}", parameter.name));
                paging_values.insert(&parameter.name, first.into_bytes());
                if rule != Rule::Paged {
                    rule = Rule::Accepted;
                }
            } else {
                paging_values.insert(&parameter.name, value.bytes.clone());
            }
            tested_pairs.push(format!("{}={}", parameter.name, value.query));
        } else if rng.random_bool(0.5) {
            let other = valid(w, &endpoint.path, &parameter.kind);
            others.push(format!("{}={other}", parameter.name));
            paging_values.insert(&parameter.name, other.into_bytes());
        }
    }
    if tested.name == UNKNOWN {
        tested_pairs.push(format!("{UNKNOWN}={}", value.query));
    }
    others.shuffle(rng);
    let at = rng.random_range(0..=others.len());
    let query: Vec<String> = others[..at]
        .iter()
        .chain(&tested_pairs)
        .chain(&others[at..])
        .cloned()
        .collect();
    let number = |name: &str, default: u64, max: u64| {
        paging_values
            .get(name)
            .map_or(default, |v| paging(v, default, max))
    };
    RestCase {
        url: format!("/v1{path}?{}", query.join("&")),
        endpoint: endpoint.path.clone(),
        parameter: tested.name.clone(),
        value: value.clone(),
        rule,
        page: (number("page", 1, u64::MAX), number("page_size", 100, 500)),
    }
}

/// What is wrong with the answer to `case`, if anything.
async fn check_rest(w: &World, case: &RestCase) -> Option<String> {
    let response = match w
        .app
        .client
        .get(w.app.url(&case.url))
        .bearer_auth(&w.key)
        .send()
        .await
    {
        Ok(response) => response,
        Err(e) => return Some(format!("no answer (connection dropped?): {e}")),
    };
    let status = response.status().as_u16();
    let body: Value = match response.json().await {
        Ok(body) => body,
        Err(e) => return Some(format!("{status} without a JSON body: {e}")),
    };
    let error = |code: &str| {
        let detail = body["error"].as_object()?;
        let message = detail.get("message")?.as_str()?;
        (body.as_object()?.len() == 1
            && detail.len() == 2
            && detail.get("code")?.as_str()? == code
            && message.ends_with('.'))
        .then_some(message)
    };
    let name = &case.parameter;
    let refused = |status| {
        (status == 400)
            .then(|| error("invalid_parameter"))
            .flatten()
            .is_some_and(|m| m.contains(name.as_str()))
    };
    let documented = match status {
        200 => body["data"].is_array() || body["data"].is_object(),
        400 => error("invalid_parameter").is_some() || error("missing_parameter").is_some(),
        404 => error("not_found").is_some(),
        422 => error("page_too_deep").is_some(),
        _ => false,
    };
    if !documented {
        return Some(format!("undocumented answer {status}: {body}"));
    }
    let fine = match case.rule {
        Rule::Refused => refused(status),
        Rule::Accepted => status == 200 || error("missing_parameter").is_some(),
        Rule::Either => status != 400 || refused(status),
        // `/v1/products` pages reach its first rows only (deep_pages.rs).
        Rule::Paged if status == 422 => {
            case.url.starts_with("/v1/products?")
                && case.page.0.saturating_mul(case.page.1) > DEFAULT_PRODUCTS_PAGE_WINDOW
        }
        Rule::Paged => status == 200 && paged(&body, case.page),
    };
    let shown = match case.rule {
        Rule::Paged => format!(
            "meta {} of {} rows",
            body["meta"],
            body["data"].as_array().map_or(0, Vec::len)
        ),
        _ => body.to_string(),
    };
    (!fine).then(|| {
        format!(
            "{:?} {:?} expected, got {status}: {shown}",
            case.rule, case.page
        )
    })
}

/// `meta` reports the paging used, and a page past any list is empty.
fn paged(body: &Value, (page, size): (u64, u64)) -> bool {
    let meta = &body["meta"];
    let past_any_list = (page - 1).saturating_mul(size) >= 1_000_000;
    meta["page"].as_u64() == Some(page)
        && meta["page_size"].as_u64() == Some(size)
        && (!past_any_list
            || (body["data"].as_array().is_some_and(Vec::is_empty)
                && meta["has_more"].as_bool() != Some(true)))
}
// ---------------------------------------------------------------- the tests

#[tokio::test]
async fn every_rest_parameter_refuses_hostile_values_with_a_documented_error() {
    let w = world().await;
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let values = corpus(&w, &mut rng);
    let endpoints = endpoints(&w).await;
    let mut cases = Vec::new();
    for endpoint in &endpoints {
        let unknown = Parameter {
            name: UNKNOWN.into(),
            in_path: false,
            kind: Kind::Text { max: usize::MAX },
        };
        for parameter in endpoint.parameters.iter().chain([&unknown]) {
            for value in values.for_one(&mut rng) {
                cases.push(rest_case(&w, &mut rng, endpoint, parameter, value));
            }
        }
    }
    let total = cases.len();
    let failures = run(cases, |case| {
        let w = &w;
        async move {
            check_rest(w, &case).await.map(|failure| {
                format!(
                    "GET {} [{} = {}]: {failure}",
                    case.endpoint,
                    case.parameter,
                    case.value.describe()
                )
            })
        }
    })
    .await;
    report("REST", total, &failures);
}
#[tokio::test]
async fn a_page_past_every_offset_is_an_empty_page_reporting_the_page_used() {
    let w = world().await;
    // `/v1/products` refuses such pages (deep_pages.rs).
    let lists = [
        format!("/v1/products/{}/price-history", w.product),
        "/v1/me/scrapes".to_owned(),
        format!("/v1/me/scrapes/{}/products", w.session),
    ];
    let pages = [
        ("9223372036854775807".to_owned(), i64::MAX as u64),
        ("18446744073709551615".to_owned(), u64::MAX),
        ("18446744073709551616".to_owned(), u64::MAX),
        ("9".repeat(1000), u64::MAX),
    ];
    for list in &lists {
        let first = w
            .app
            .json_as(&w.key, &format!("{list}?page_size=500"))
            .await;
        assert!(
            !first["data"].as_array().expect("data").is_empty(),
            "{list}"
        );
        for (page, used) in &pages {
            let body = w
                .app
                .json_as(&w.key, &format!("{list}?page={page}&page_size=500"))
                .await;
            assert_eq!(body["data"], json!([]), "{list} page {used}");
            let meta = &body["meta"];
            assert_eq!(meta["page"].as_u64(), Some(*used), "{list}: {meta}");
            assert_eq!(meta["page_size"], 500, "{list}: {meta}");
            match meta.get("total") {
                Some(total) => assert_eq!(total, &first["meta"]["total"], "{list}"),
                None => assert_eq!(meta["has_more"], false, "{list}"),
            }
        }
    }
}
