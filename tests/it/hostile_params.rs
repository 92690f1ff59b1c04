//! Every parameter is checked before it reaches the database: hostile values
//! (NUL, invalid UTF-8, over-long text, huge and negative numbers, odd
//! Unicode, SQL and LIKE metacharacters, malformed dates, ids and cursors)
//! sent to every parameter of every REST v1 endpoint, read from the OpenAPI
//! document the app serves, and to every argument of every field reachable
//! from the GraphQL query root, read by introspection: so a new parameter is
//! covered without touching this file. No 5xx, no dropped connection, only
//! documented error shapes; text no database can take is `invalid_parameter`
//! naming the parameter; a page past the end is an empty page.
//!
//! The values are a fixed corpus plus values drawn by a seeded generator,
//! so every run sends the same requests.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::fmt::Write;

use futures_util::stream::{self, StreamExt};
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use vitrina::config::DEFAULT_PRODUCTS_PAGE_WINDOW;
use vitrina::limits::Limits;
use vitrina::query::MAX_TEXT_LEN;
use vitrina::seed::{DEMO_ACCOUNT, SeedOptions};

use crate::helpers::TestApp;

const SEED: u64 = 17;
/// Requests in flight at once.
const CONCURRENCY: usize = 16;
/// A REST value this long still fits in a request line (hyper refuses URIs
/// of 64 KiB and more before the app sees them); GraphQL gets 64 KiB.
const LONG_IN_URL: usize = 60 * 1024;
const LONG_IN_BODY: usize = 64 * 1024;

// ---------------------------------------------------------------- the world

struct World {
    app: TestApp,
    key: String,
    product: String,
    session: String,
}

async fn world() -> World {
    let app = TestApp::spawn_with(Limits {
        rate_per_minute: 1_000_000,
        daily_quota: 1_000_000_000,
        db_time_per_minute_ms: 0,
        db_time_burst_ms: 1,
    })
    .await;
    let options = SeedOptions {
        demo: true,
        products: 30,
        seed: SEED,
    };
    vitrina::seed::seed(&app.db, &options).await.expect("seed");
    let key = app.key(DEMO_ACCOUNT).await;
    let products = app.json_as(&key, "/v1/products?page_size=1").await;
    let product = products["data"][0]["id"].as_str().expect("a product");
    // The session with the most submissions.
    let sessions = app.json_as(&key, "/v1/me/scrapes").await;
    let session = sessions["data"]
        .as_array()
        .expect("sessions")
        .iter()
        .max_by_key(|s| s["stats"]["total"].as_u64())
        .and_then(|s| s["id"].as_str())
        .expect("a session");
    let (product, session) = (product.to_owned(), session.to_owned());
    World {
        app,
        key,
        product,
        session,
    }
}

// ---------------------------------------------------------------- hostile values

/// One hostile value: the bytes it stands for (after URL decoding) and how
/// it is written in a query string.
#[derive(Clone, Debug)]
struct Hostile {
    bytes: Vec<u8>,
    query: String,
}

impl Hostile {
    /// `bytes`, every byte but unreserved ones percent-encoded.
    fn bytes(bytes: impl Into<Vec<u8>>) -> Hostile {
        let bytes = bytes.into();
        Hostile {
            query: encode(&bytes),
            bytes,
        }
    }

    /// A query-string form written as is (`+`, malformed escapes).
    fn raw(query: &str) -> Hostile {
        let bytes = url::form_urlencoded::parse(format!("v={query}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned().into_bytes())
            .unwrap_or_default();
        Hostile {
            bytes,
            query: query.to_owned(),
        }
    }

    fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }

    /// Text no database may be asked to compare: not UTF-8, a NUL, or longer
    /// than every text parameter may be.
    fn unstorable(&self) -> bool {
        self.text()
            .is_none_or(|t| t.contains('\0') || t.chars().count() > MAX_TEXT_LEN)
    }

    fn describe(&self) -> String {
        let mut shown: String = self.query.chars().take(60).collect();
        if self.query.len() > 60 {
            let _ = write!(shown, "...({} bytes)", self.query.len());
        }
        shown
    }
}

fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 3);
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// Base64url (no padding) of `json`, as cursors are written.
fn cursor(json: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
}

/// Hostile values: `core` goes to every parameter, each parameter also
/// gets [`SAMPLE`] of `more`, drawn by the seeded generator.
struct Corpus<T> {
    core: Vec<T>,
    more: Vec<T>,
}

/// Values of `more` each parameter gets.
const SAMPLE: usize = 8;

impl<T> Corpus<T> {
    /// The values one parameter gets.
    fn for_one(&self, rng: &mut ChaCha8Rng) -> Vec<&T> {
        let drawn = self.more.choose_multiple(rng, SAMPLE);
        self.core.iter().chain(drawn).collect()
    }
}

fn texts(values: &[&str]) -> Vec<Hostile> {
    values.iter().map(|v| Hostile::bytes(*v)).collect()
}

/// The corpus, with values made from the world's real ids and a few dozen
/// strings and numbers drawn by `rng`.
fn corpus(world: &World, rng: &mut ChaCha8Rng) -> Corpus<Hostile> {
    let product = &world.product;
    let mut core = texts(&[
        // NUL, control characters, empty and white space.
        "\0",
        "a\0b",
        "ozon\0",
        "\u{1}\u{1f}\u{7f}",
        "",
        " ",
        "\t\r\n",
        // Numbers at and past every edge.
        "0",
        "-0",
        "-1",
        "1.5",
        "9223372036854775807",
        "9223372036854775808",
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999999999999999999999999999999999999999",
        // Unicode: RTL, combining, emoji; SQL and LIKE metacharacters.
        "\u{202e}cba\u{202c}",
        "e\u{301}\u{301}",
        "👨\u{200d}👩\u{200d}👧",
        "%_\\'\"",
        "' OR '1'='1",
        // Times past what RFC 3339 writes once shifted to UTC.
        "9999-12-31T23:59:59-23:59",
        "0000-01-01T00:00:00+23:59",
    ]);
    for unit in ["a", "я", "😀"] {
        core.extend(texts(&[
            &unit.repeat(MAX_TEXT_LEN),
            &unit.repeat(MAX_TEXT_LEN + 1),
        ]));
    }
    core.extend(texts(&[
        &"a".repeat(LONG_IN_URL),
        &format!("{}\0", "я".repeat(MAX_TEXT_LEN - 1)),
        &format!("{product}\0"),
        // Cursors whose times no database holds, and one nested too deep.
        &cursor(
            r#"["products",["+200000-01-01T00:00:00Z","00000000-0000-0000-0000-000000000000"]]"#,
        ),
        &cursor(
            r#"["sessions",["-200000-01-01T00:00:00Z","00000000-0000-0000-0000-000000000000"]]"#,
        ),
        &cursor(r#"["price_history",["-100000-01-01T00:00:00Z",-1]]"#),
        &cursor(&format!("{}1{}", "[".repeat(5000), "]".repeat(5000))),
    ]));
    // Bytes that are not UTF-8: a lone continuation byte, overlong forms of
    // NUL and '/', a surrogate, a code point past U+10FFFF, a cut character.
    for bytes in [
        &b"\xff\xfe"[..],
        b"\x80",
        b"\xc0\x80",
        b"\xc0\xaf",
        b"\xed\xa0\x80",
        b"\xf4\x90\x80\x80",
        b"ozon\xff\xff",
    ] {
        core.push(Hostile::bytes(bytes));
    }
    // Query-string forms: '+', malformed and mixed-case escapes.
    core.extend(["%", "%zz", "a%", "+", "1+", "%00%41", "%c3%A9"].map(Hostile::raw));

    let mut more = texts(&[
        "\0\0\0",
        "\u{a0}\u{3000}",
        "1",
        "2",
        "500",
        "501",
        "+5",
        " 7 ",
        "1e3",
        "0x10",
        "NaN",
        "Infinity",
        "-9223372036854775808",
        "-9223372036854775809",
        "4611686018427387904",
        "340282366920938463463374607431768211456",
        "１２",
        "\u{200f}\u{200e}",
        "😀",
        "\u{feff}ozon",
        "\u{fffe}\u{ffff}\u{10ffff}",
        "İİİ",
        "ẞ",
        "ﬃ",
        "Ω",
        "%",
        "_",
        "\\",
        "'",
        "\"",
        "\\%\\_",
        "'; DROP TABLE products; --",
        "$1",
        "?",
        "[a-z]*",
        "2026-01-01T00:00:00Z",
        "2024-13-45T25:61:61Z",
        "2024-02-30T00:00:00Z",
        "2024-01-01",
        "2024-01-01T00:00:00",
        "2024-01-01T00:00:60Z",
        "0000-01-01T00:00:00Z",
        "9999-12-31T23:59:59Z",
        "+275760-09-13T00:00:00Z",
        "-000001-01-01T00:00:00Z",
        "2024-01-01T00:00:00.99999999999999999999Z",
        "2024-01-01T00:00:00+99:99",
        "00000000-0000-0000-0000-000000000000",
        "ffffffff-ffff-ffff-ffff-ffffffffffff",
        "00000000-0000-0000-0000-00000000000g",
        "00000000000000000000000000000000",
        "Zm9v",
        "====",
        "OZON",
        "ozon",
        "wildberries",
        "ANONYMOUS",
        "authenticated",
        &"a".repeat(201),
        &"я".repeat(200),
        &"%".repeat(300),
        &product.to_uppercase(),
        &product.replace('-', ""),
        &format!("{{{product}}}"),
        &format!("urn:uuid:{product}"),
        &format!("{product} "),
        &format!("{product}/price-history"),
        product,
        &world.session,
    ]);
    // Cursors: another list's, out of range, of the wrong shape.
    for json in [
        r#"["products",["2026-01-01T00:00:00Z","00000000-0000-0000-0000-000000000000"]]"#,
        r#"["sessions",["+262142-12-31T23:59:59Z","ffffffff-ffff-ffff-ffff-ffffffffffff"]]"#,
        r#"["submissions",9223372036854775807]"#,
        r#"["submissions",-9223372036854775808]"#,
        r#"["submissions",18446744073709551616]"#,
        r#"["submissions",1e308]"#,
        r#"["submissions","1"]"#,
        r#"["price_history",["9999-12-31T23:59:59Z",9223372036854775807]]"#,
        r#"["price_history",["2026-01-01T00:00:00\u0000Z",1]]"#,
        r#"["none",null]"#,
        r#"["products"]"#,
        r#"[]"#,
    ] {
        more.push(Hostile::bytes(cursor(json)));
    }
    more.extend(["%%", "%f", "%2", "+1+", "%2B1", "%u0041"].map(Hostile::raw));
    // Drawn: strings of characters from every class above, numbers, bytes.
    let pool: Vec<char> = "a Z0 9%_\\'\"\0\u{1}\t\n+&=#?/.я😀\u{301}\u{202e}\u{feff}\u{ffff}İ-:"
        .chars()
        .collect();
    for _ in 0..24 {
        let len = *[1usize, 2, 5, 40, 300, MAX_TEXT_LEN + 7]
            .choose(rng)
            .expect("lengths");
        let text: String = (0..len).map(|_| *pool.choose(rng).expect("pool")).collect();
        more.push(Hostile::bytes(text));
    }
    for _ in 0..8 {
        more.push(Hostile::bytes(rng.random::<i64>().to_string()));
        more.push(Hostile::bytes(rng.random::<u64>().to_string()));
        let len = rng.random_range(1..12);
        more.push(Hostile::bytes(
            (0..len).map(|_| rng.random::<u8>()).collect::<Vec<_>>(),
        ));
    }
    Corpus { core, more }
}

// ---------------------------------------------------------------- REST

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

// ---------------------------------------------------------------- GraphQL

const INTROSPECTION: &str = r#"{ __schema { queryType { name } types { name kind
    fields { name args { name type { ...T } } type { ...T } }
    inputFields { name type { ...T } }
    enumValues { name } } } }
fragment T on __Type { kind name ofType { kind name ofType { kind name ofType { kind name } } } }"#;

/// A type reference as GraphQL writes it (`[UUID!]!`).
fn written(t: &Value) -> String {
    match t["kind"].as_str() {
        Some("NON_NULL") => format!("{}!", written(&t["ofType"])),
        Some("LIST") => format!("[{}]", written(&t["ofType"])),
        _ => t["name"].as_str().expect("named type").to_owned(),
    }
}

fn named(t: &Value) -> &Value {
    match t["ofType"].is_object() {
        true => named(&t["ofType"]),
        false => t,
    }
}

/// An argument to aim at: `field(argument: $v)`, or
/// `field(argument: {input: $v})`, reached by `path` from the query root.
#[derive(Clone, Debug)]
struct Target {
    /// Selections down to the field's parent, e.g. `me { scrapeSessions(first: 1) { nodes {`.
    path: Vec<String>,
    field: Value,
    argument: Value,
    input: Option<Value>,
}

impl Target {
    fn name(&self) -> String {
        let mut name = format!("{}({}", self.field["name"], self.argument["name"]);
        if let Some(input) = &self.input {
            let _ = write!(name, ".{}", input["name"]);
        }
        name.replace('"', "") + ")"
    }

    /// The type the value is sent as.
    fn value_type(&self) -> &Value {
        match &self.input {
            Some(input) => &input["type"],
            None => &self.argument["type"],
        }
    }
}

/// Every argument of every field reachable from the query root by fields
/// without required arguments (connections read one row).
async fn targets(w: &World) -> (Vec<Target>, BTreeMap<String, Value>) {
    let (status, body) = graphql(w, &json!({ "query": INTROSPECTION }).to_string()).await;
    assert_eq!(status, 200, "{body}");
    let types: BTreeMap<String, Value> = body["data"]["__schema"]["types"]
        .as_array()
        .expect("types")
        .iter()
        .map(|t| (t["name"].as_str().expect("name").to_owned(), t.clone()))
        .collect();
    let root = body["data"]["__schema"]["queryType"]["name"]
        .as_str()
        .expect("query type")
        .to_owned();
    let mut targets = Vec::new();
    let mut seen = HashSet::from([root.clone()]);
    let mut queue = VecDeque::from([(root, Vec::<String>::new())]);
    while let Some((type_name, path)) = queue.pop_front() {
        for field in types[&type_name]["fields"].as_array().into_iter().flatten() {
            let args = field["args"].as_array().expect("args");
            for argument in args {
                let argument_type = &types[named(&argument["type"])["name"].as_str().unwrap()];
                let inputs = argument_type["inputFields"].as_array();
                match inputs {
                    Some(inputs) => targets.extend(inputs.iter().map(|input| Target {
                        path: path.clone(),
                        field: field.clone(),
                        argument: argument.clone(),
                        input: Some(input.clone()),
                    })),
                    None => targets.push(Target {
                        path: path.clone(),
                        field: field.clone(),
                        argument: argument.clone(),
                        input: None,
                    }),
                }
            }
            let next = named(&field["type"]);
            let next_name = next["name"].as_str().unwrap_or_default().to_owned();
            let required = args.iter().any(|a| a["type"]["kind"] == "NON_NULL");
            if next["kind"] == "OBJECT" && !required && seen.insert(next_name.clone()) {
                let name = field["name"].as_str().expect("field name");
                let first = args.iter().any(|a| a["name"] == "first");
                let mut path = path.clone();
                path.push(match first {
                    true => format!("{name}(first: 1) {{"),
                    false => format!("{name} {{"),
                });
                queue.push_back((next_name, path));
            }
        }
    }
    (targets, types)
}

/// A valid value of a required argument not under test.
fn required_value(
    w: &World,
    field: &Value,
    argument: &Value,
    types: &BTreeMap<String, Value>,
) -> String {
    let t = named(&argument["type"]);
    let name = t["name"].as_str().unwrap_or_default();
    match t["kind"].as_str() {
        Some("ENUM") => types[name]["enumValues"][0]["name"]
            .as_str()
            .expect("a value")
            .to_owned(),
        Some("INPUT_OBJECT") => "{}".into(),
        _ if name == "UUID" && named(&field["type"])["name"] == "ScrapeSession" => {
            format!("\"{}\"", w.session)
        }
        _ if name == "UUID" => format!("\"{}\"", w.product),
        _ if name == "String" && argument["name"] == "currency" => "\"RUB\"".into(),
        _ if name == "DateTime" => "\"2026-01-01T00:00:00Z\"".into(),
        _ => panic!("a required argument this test cannot fill: {argument}"),
    }
}

/// A hostile GraphQL value: JSON text for a variable, the literal to write
/// it inline (when it has one), and whether it is text no database may be
/// asked to compare.
#[derive(Clone, Debug)]
struct GqlValue {
    json: String,
    literal: Option<String>,
    unstorable: bool,
}

impl GqlValue {
    fn text(text: &str) -> GqlValue {
        GqlValue {
            json: serde_json::to_string(text).expect("a string"),
            literal: (text.len() < 1024).then(|| graphql_string(text)),
            unstorable: text.contains('\0') || text.chars().count() > MAX_TEXT_LEN,
        }
    }

    /// JSON text, written the same way inline when `inline`.
    fn json(json: &str, inline: bool) -> GqlValue {
        GqlValue {
            json: json.into(),
            literal: inline.then(|| json.into()),
            unstorable: false,
        }
    }
}

/// The REST corpus's text, 64 KiB strings, and values only JSON can send.
fn gql_values(corpus: &Corpus<Hostile>) -> Corpus<GqlValue> {
    let texts = |values: &[Hostile]| -> Vec<GqlValue> {
        values
            .iter()
            .filter_map(Hostile::text)
            .map(GqlValue::text)
            .collect()
    };
    let mut core = texts(&corpus.core);
    core.push(GqlValue::text(&"a".repeat(LONG_IN_BODY)));
    core.push(GqlValue::text(&format!(
        "{}\0",
        "я".repeat(LONG_IN_BODY / 2)
    )));
    // What no string type can hold: lone surrogates.
    core.extend([r#""\ud800""#, r#""a\udbff""#].map(|j| GqlValue::json(j, true)));
    // Numbers past every edge, and shapes of every other kind.
    core.extend(
        [
            "-1",
            "1.5",
            "1e400",
            "2147483648",
            "-2147483649",
            "18446744073709551616",
        ]
        .map(|j| GqlValue::json(j, true)),
    );
    core.extend(["[\"a\\u0000\"]", "{\"a\": \"\\u0000\"}"].map(|j| GqlValue::json(j, false)));
    let mut more = texts(&corpus.more);
    more.push(GqlValue::json(r#""\udc00abc""#, true));
    more.extend(
        [
            "0",
            "-0",
            "-0.0",
            "1",
            "1e3",
            "-1e400",
            "2147483647",
            "9223372036854775807",
            "-9223372036854775808",
            "18446744073709551615",
            "340282366920938463463374607431768211456",
        ]
        .map(|j| GqlValue::json(j, true)),
    );
    more.extend(["true", "null", "[]", "{}"].map(|j| GqlValue::json(j, false)));
    Corpus { core, more }
}

/// A GraphQL string literal.
fn graphql_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The body of one request: the value as a variable, or inline.
fn gql_body(
    w: &World,
    target: &Target,
    value: &GqlValue,
    inline: bool,
    types: &BTreeMap<String, Value>,
) -> String {
    let tested = target.argument["name"].as_str().expect("name");
    let slot = match (inline, &value.literal) {
        (true, Some(literal)) => literal.clone(),
        _ => "$v".into(),
    };
    let mut args: Vec<String> = Vec::new();
    for argument in target.field["args"].as_array().expect("args") {
        let name = argument["name"].as_str().expect("name");
        if name == tested {
            let given = match &target.input {
                Some(input) => format!("{{{}: {slot}}}", input["name"].as_str().expect("name")),
                None => slot.clone(),
            };
            args.push(format!("{name}: {given}"));
        } else if argument["type"]["kind"] == "NON_NULL" {
            args.push(format!(
                "{name}: {}",
                required_value(w, &target.field, argument, types)
            ));
        }
    }
    let field = target.field["name"].as_str().expect("name");
    let composite = matches!(
        named(&target.field["type"])["kind"].as_str(),
        Some("OBJECT" | "INTERFACE" | "UNION")
    );
    let mut selection = format!(
        "{field}({}){}",
        args.join(", "),
        if composite { " { __typename }" } else { "" }
    );
    for step in target.path.iter().rev() {
        selection = format!("{step} {selection} }}");
    }
    match slot.as_str() {
        "$v" => {
            let query = format!(
                "query Hostile($v: {}) {{ {selection} }}",
                written(target.value_type())
            );
            format!(
                "{{\"query\": {}, \"variables\": {{\"v\": {}}}}}",
                serde_json::to_string(&query).expect("a string"),
                value.json
            )
        }
        _ => json!({ "query": format!("{{ {selection} }}") }).to_string(),
    }
}

async fn graphql(w: &World, body: &str) -> (u16, Value) {
    let response = w
        .app
        .client
        .post(w.app.url("/graphql"))
        .bearer_auth(&w.key)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .expect("an answer (the connection was dropped?)");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// What is wrong with the answer, if anything.
fn check_graphql(status: u16, body: &Value, target: &Target, value: &GqlValue) -> Option<String> {
    if status >= 500 {
        return Some(format!("{status}: {body}"));
    }
    let Some(errors) = body.get("errors") else {
        return match (status, body.get("data")) {
            (200, Some(_)) if !value.unstorable || !takes_text(target) => None,
            _ => Some(format!("{status}, no errors: {body}")),
        };
    };
    let codes: Vec<&str> = errors
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            e["extensions"]["code"]
                .as_str()
                .filter(|_| e["message"].is_string())
                .unwrap_or("<none>")
        })
        .collect();
    if codes.is_empty() || codes.iter().any(|c| !DOCUMENTED_GRAPHQL_CODES.contains(c)) {
        return Some(format!("{status}, undocumented errors: {body}"));
    }
    if value.unstorable && takes_text(target) && !codes.contains(&"INVALID_PARAMETER") {
        return Some(format!("expected INVALID_PARAMETER, got {status}: {body}"));
    }
    None
}

/// Codes a GraphQL error may carry (DECISIONS, and async-graphql's own
/// refusals as `graphql/codes.rs` names them).
const DOCUMENTED_GRAPHQL_CODES: &[&str] = &[
    "INVALID_PARAMETER",
    "MISSING_PARAMETER",
    "NOT_FOUND",
    "GRAPHQL_VALIDATION_FAILED",
    "QUERY_TOO_COMPLEX",
    "BAD_REQUEST",
];

/// Whether the argument is a `String` or `ID`, which must refuse text no
/// database can take.
fn takes_text(target: &Target) -> bool {
    matches!(
        named(target.value_type())["name"].as_str(),
        Some("String" | "ID")
    )
}

// ---------------------------------------------------------------- the tests

/// Runs `cases` `CONCURRENCY` at a time; returns the failures.
async fn run<C, F>(cases: Vec<C>, check: impl Fn(C) -> F) -> Vec<String>
where
    F: std::future::Future<Output = Option<String>>,
{
    stream::iter(cases)
        .map(check)
        .buffer_unordered(CONCURRENCY)
        .filter_map(|failure| async move { failure })
        .collect()
        .await
}

fn report(kind: &str, total: usize, failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} of {total} {kind} requests answered wrongly; the first:\n{}",
        failures.len(),
        failures
            .iter()
            .take(25)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

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
async fn every_graphql_argument_refuses_hostile_values_with_a_documented_error() {
    let w = world().await;
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let values = gql_values(&corpus(&w, &mut rng));
    let (targets, types) = targets(&w).await;
    let root_arguments = targets.iter().filter(|t| t.path.is_empty()).count();
    assert!(root_arguments >= 20, "the query root's arguments are found");
    let mut cases = Vec::new();
    for target in &targets {
        for value in values.for_one(&mut rng) {
            let inline = value.literal.is_some() && rng.random_ratio(1, 3);
            let body = gql_body(&w, target, value, inline, &types);
            cases.push((target, value, body));
        }
    }
    let total = cases.len();
    let failures = run(cases, |(target, value, body)| {
        let w = &w;
        async move {
            let (status, answer) = graphql(w, &body).await;
            check_graphql(status, &answer, target, value).map(|failure| {
                let shown: String = value.json.chars().take(60).collect();
                format!("{} = {shown}: {failure}", target.name())
            })
        }
    })
    .await;
    report("GraphQL", total, &failures);
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
