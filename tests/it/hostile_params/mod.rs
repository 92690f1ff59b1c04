//! Every parameter is checked before it reaches the database: hostile values
//! (NUL, invalid UTF-8, over-long text, huge and negative numbers, odd
//! Unicode, SQL and LIKE metacharacters, malformed dates, ids and cursors)
//! sent to every parameter of every REST v1 endpoint, read from the OpenAPI
//! document the app serves, and to every argument of every field reachable
//! from the GraphQL query root, read by introspection: so a new parameter is
//! covered without touching these tests. No 5xx, no dropped connection, only
//! documented error shapes; text no database can take is `invalid_parameter`
//! naming the parameter; a page past the end is an empty page.
//!
//! The values are a fixed corpus plus values drawn by a seeded generator,
//! so every run sends the same requests. This module holds what both halves
//! share (the seeded world, the corpus, the runner); `rest` and `graphql`
//! aim it at each API.

use std::fmt::Write;

use futures_util::stream::{self, StreamExt};
use rand::Rng;
use rand::seq::IndexedRandom;
use rand_chacha::ChaCha8Rng;
use vitrina::limits::Limits;
use vitrina::query::MAX_TEXT_LEN;
use vitrina::seed::{DEMO_ACCOUNT, SeedOptions};

use crate::helpers::TestApp;

mod graphql;
mod rest;
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
// ---------------------------------------------------------------- running cases

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
