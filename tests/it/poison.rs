//! One item never blocks others. What cannot be stored is refused at upload,
//! naming its field; stored anyway (by an older release, or straight into
//! the database as here), it is rejected alone by the merge pass, which goes
//! on with the rest of its batch. A database that fails rejects nothing, and
//! a submission whose merges never finish is rejected after a few attempts.

use entity::{SubmissionStatus, product, product_category, seller, submission};
use sea_orm::{ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Map, Value, json};
use uuid::Uuid;
use vitrina::config::{JobsConfig, Settings, SizeConfig};
use vitrina::jobs::merge::item_limits;

use crate::helpers::uploads::{attempts, item, send, store, submissions, upload, with};
use crate::helpers::{TestApp, pin_sqlite_file, refuse_product};

/// A fixed xorshift sequence from `seed`: values in no pattern a compressor
/// (PostgreSQL compresses long index entries) could use.
fn noise(seed: u64) -> impl Iterator<Item = usize> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    std::iter::repeat_with(move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state as usize
    })
}

/// `len` bytes of letters and digits in no pattern.
fn random_text(len: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    noise(1)
        .take(len)
        .map(|n| ALPHABET[n % ALPHABET.len()] as char)
        .collect()
}

/// `bytes` (an even number) bytes of two-byte letters in no pattern, one in
/// eight `İ`, which folds to three bytes; `seed` tells texts apart.
fn random_letters(bytes: usize, seed: u64) -> String {
    noise(seed)
        .take(bytes / 2)
        .map(|n| match n % 8 {
            0 => 'İ',
            _ => char::from_u32('А' as u32 + (n / 8 % 64) as u32).unwrap_or('Я'),
        })
        .collect()
}

async fn session_status(app: &TestApp, key: &str, session: Uuid) -> String {
    let view = app.json_as(key, &format!("/v1/me/scrapes/{session}")).await;
    view["data"]["status"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Makes the database itself fail while a product row is written, as a full
/// disk does, the connection staying usable: SQLite's file may no longer
/// grow, and writing a product first writes a megabyte elsewhere
/// (SQLITE_FULL); PostgreSQL answers with its own code for it (`disk_full`,
/// SQLSTATE 53100). Everything before that write still works.
/// Makes the database fail every product insert with an error that is
/// nobody's known fault, as a schema out of step with the code would (or,
/// `broken` false, stop failing).
async fn break_product_writes(app: &TestApp, broken: bool) {
    let statements: &[&str] = match (app.db.get_database_backend(), broken) {
        (DbBackend::Postgres, false) => &["DROP TRIGGER broken ON products"],
        (_, false) => &["DROP TRIGGER broken"],
        (DbBackend::Postgres, true) => &[
            "CREATE FUNCTION broken() RETURNS trigger LANGUAGE plpgsql \
             AS $$ BEGIN RAISE EXCEPTION 'out of step' USING ERRCODE = 'undefined_column'; END $$",
            "CREATE TRIGGER broken BEFORE INSERT ON products \
             FOR EACH ROW EXECUTE FUNCTION broken()",
        ],
        (_, true) => &[
            "CREATE TABLE gone (x INTEGER)",
            "CREATE TRIGGER broken BEFORE INSERT ON products \
             BEGIN INSERT INTO gone VALUES (1); END",
            "DROP TABLE gone",
        ],
    };
    for sql in statements {
        app.db.execute_unprepared(sql).await.unwrap();
    }
}

async fn fail_product_writes(app: &TestApp, failing: bool) {
    let statements: &[&str] = match (app.db.get_database_backend(), failing) {
        (DbBackend::Postgres, true) => &[
            "CREATE OR REPLACE FUNCTION disk_full() RETURNS trigger LANGUAGE plpgsql \
             AS $$ BEGIN RAISE EXCEPTION 'no space left' USING ERRCODE = 'disk_full'; END $$",
            "CREATE TRIGGER disk_full BEFORE INSERT ON products \
             FOR EACH ROW EXECUTE FUNCTION disk_full()",
        ],
        (DbBackend::Postgres, false) => &["DROP TRIGGER disk_full ON products"],
        (_, true) => &[
            "CREATE TABLE IF NOT EXISTS filler (bytes BLOB)",
            "CREATE TRIGGER fill_disk BEFORE INSERT ON products \
             BEGIN INSERT INTO filler VALUES (randomblob(1000000)); END",
        ],
        (_, false) => &["DROP TRIGGER fill_disk"],
    };
    for sql in statements {
        app.db.execute_unprepared(sql).await.unwrap();
    }
    if app.db.get_database_backend() == DbBackend::Sqlite {
        pin_sqlite_file(app, failing).await;
    }
}

fn status_and_reason(row: &submission::Model) -> (SubmissionStatus, &str) {
    (row.status, row.reason.as_deref().unwrap_or_default())
}

#[tokio::test]
async fn a_poison_item_is_rejected_alone_and_another_accounts_session_completes_in_one_tick() {
    let app = TestApp::spawn().await;
    let (alpha, beta) = (app.key("alpha").await, app.key("beta").await);
    // As a constraint would.
    refuse_product(&app, "poison", "poisoned", Some("check_violation")).await;
    let poison = with(item("poison"), &["seller", "id"], json!("s-poison"));
    let poisoned = send(&app, &alpha, vec![item("1"), poison, item("2")]).await;
    for (path, field) in [
        (&["external_id"][..], "external_id"),
        (&["brand"], "brand"),
        (&["category_path", "1"], "category_path[1]"),
    ] {
        let payload = with(item(field), path, json!(random_text(4096)));
        store(&app, poisoned, payload).await.unwrap();
    }
    // Its reason would quote the whole value.
    let marketplace = with(item("m"), &["marketplace"], json!(random_text(4096)));
    store(&app, poisoned, marketplace).await.unwrap();
    let nul = store(&app, poisoned, with(item("n"), &["name"], json!("a\u{0}b"))).await;
    let postgres = app.db.get_database_backend() == DbBackend::Postgres;
    // PostgreSQL's jsonb cannot hold U+0000: there no such payload is ever stored.
    assert_eq!(nul.is_err(), postgres, "{nul:?}");
    // Uploaded after the poison, by another account.
    let other = send(&app, &beta, vec![item("3")]).await;

    let report = app.jobs().tick().await.expect("the tick completes").merge;
    assert_eq!(
        (report.merged, report.rejected),
        (3, if postgres { 5 } else { 6 })
    );
    assert_eq!(session_status(&app, &beta, other).await, "completed");
    assert_eq!(session_status(&app, &alpha, poisoned).await, "completed");
    let rows = submissions(&app, poisoned).await;
    let mut expected = vec![
        (SubmissionStatus::Merged, ""),
        (SubmissionStatus::Rejected, "could not be stored: "),
        (SubmissionStatus::Merged, ""),
        (
            SubmissionStatus::Rejected,
            "external_id is longer than 512 bytes (it has 4096)",
        ),
        (
            SubmissionStatus::Rejected,
            "brand is longer than 512 bytes (it has 4096)",
        ),
        (
            SubmissionStatus::Rejected,
            "category_path[1] is longer than 512 bytes (it has 4096)",
        ),
        (
            SubmissionStatus::Rejected,
            "not a valid item: unknown variant",
        ),
    ];
    if !postgres {
        expected.push((
            SubmissionStatus::Rejected,
            "name contains a NUL character (U+0000)",
        ));
    }
    assert_eq!(rows.len(), expected.len());
    for (row, (status, reason)) in rows.iter().zip(expected) {
        let (got, got_reason) = status_and_reason(row);
        assert_eq!(got, status, "{row:?}");
        assert!(got_reason.starts_with(reason), "{got_reason:?}");
    }
    assert!(rows[1].reason.as_deref().unwrap().contains("poisoned"));
    let quoted = rows[6].reason.as_deref().unwrap();
    assert!(quoted.len() <= 1024 && quoted.ends_with('…'), "{quoted}");
    assert_eq!(
        seller::Entity::find()
            .filter(seller::Column::SellerId.eq("s-poison"))
            .count(&app.db)
            .await
            .unwrap(),
        0,
        "the rejected item's writes are rolled back with it"
    );
    assert_eq!(product::Entity::find().count(&app.db).await.unwrap(), 3);
}

#[tokio::test]
async fn a_failing_database_rejects_nothing_and_the_item_merges_once_it_is_back() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let session = send(&app, &key, vec![item("1")]).await;
    fail_product_writes(&app, true).await;
    assert!(
        app.jobs().tick().await.is_err(),
        "the pass stops at the database's fault"
    );
    let row = &submissions(&app, session).await[0];
    assert_eq!(
        status_and_reason(row),
        (SubmissionStatus::Pending, ""),
        "handed back for the next pass"
    );
    // Not the item's doing: the attempt does not count, however long the
    // database fails.
    assert_eq!(attempts(&app, session).await, [0]);
    for _ in 0..JobsConfig::default().merge_max_attempts + 1 {
        assert!(app.jobs().tick().await.is_err());
    }
    assert_eq!(attempts(&app, session).await, [0]);

    fail_product_writes(&app, false).await;
    let report = app.jobs().tick().await.expect("the tick completes").merge;
    assert_eq!((report.merged, report.rejected), (1, 0));
    assert_eq!(session_status(&app, &key, session).await, "completed");
}

#[tokio::test]
async fn a_submission_whose_merges_never_finish_is_rejected_after_the_configured_attempts() {
    let app = TestApp::spawn_with_settings(Settings {
        jobs: JobsConfig {
            merge_max_attempts: 2,
            ..JobsConfig::default()
        },
        ..Settings::default()
    })
    .await;
    let (alpha, beta) = (app.key("alpha").await, app.key("beta").await);
    let stuck = send(&app, &alpha, vec![item("1")]).await;
    break_product_writes(&app, true).await;
    for attempt in 1..=2 {
        assert!(app.jobs().tick().await.is_err());
        assert_eq!(attempts(&app, stuck).await, [attempt]);
    }
    break_product_writes(&app, false).await;
    let other = send(&app, &beta, vec![item("2")]).await;

    let report = app.jobs().tick().await.expect("the tick completes").merge;
    assert_eq!((report.merged, report.rejected), (1, 1));
    let row = &submissions(&app, stuck).await[0];
    assert_eq!(row.status, SubmissionStatus::Rejected);
    assert!(
        row.reason
            .as_deref()
            .unwrap()
            .starts_with("not merged after 2 attempts"),
        "{row:?}"
    );
    assert_eq!(attempts(&app, stuck).await, [2], "not begun a third time");
    assert_eq!(session_status(&app, &alpha, stuck).await, "completed");
    assert_eq!(session_status(&app, &beta, other).await, "completed");
}

/// An item with every optional text and list present, to change one at a time.
fn full_item() -> Value {
    let mut full = item("1");
    full["image_gallery"] = json!(["https://img.example/2.webp"]);
    full["video_cover"] = json!("https://video.example/1.mp4");
    full["video_gallery"] = json!(["https://video.example/2.mp4"]);
    full["seller"]["psrn"] = json!("1027700000000");
    full["seller"]["address"] = json!("г. Москва, ул. Ленина, д. 1");
    full["seller"]["url"] = json!("https://www.ozon.ru/seller/1");
    full["prices"][0]["region_code"] = json!("msk");
    full["stats"] = json!({ "rating": 4.8 });
    full
}

/// Uploads `bad` after a good item; answers the status and the error message.
async fn upload_second(app: &TestApp, key: &str, bad: Value) -> (u16, String) {
    let response = app
        .post_as(
            key,
            "/extension/v1/scrapes",
            &upload(vec![full_item(), bad]),
        )
        .await;
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap_or_default();
    if status == 400 {
        assert_eq!(body["error"]["code"], "invalid_body", "{body}");
    }
    (status, message.to_owned())
}

#[tokio::test]
async fn each_upload_limit_passes_at_its_value_and_refuses_one_byte_or_entry_more_naming_the_field()
{
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let texts: &[(&[&str], &str, usize)] = &[
        (&["external_id"], "external_id", item_limits::EXTERNAL_ID),
        (&["name"], "name", item_limits::NAME),
        (&["brand"], "brand", item_limits::BRAND),
        (
            &["category_path", "1"],
            "category_path[1]",
            item_limits::CATEGORY_LEVEL,
        ),
        (
            &["attributes", "цвет"],
            "attributes.цвет",
            item_limits::ATTRIBUTE_VALUE,
        ),
        (&["image_cover"], "image_cover", item_limits::MEDIA_URL),
        (
            &["image_gallery", "0"],
            "image_gallery[0]",
            item_limits::MEDIA_URL,
        ),
        (&["video_cover"], "video_cover", item_limits::MEDIA_URL),
        (
            &["video_gallery", "0"],
            "video_gallery[0]",
            item_limits::MEDIA_URL,
        ),
        (&["seller", "id"], "seller.id", item_limits::SELLER_ID),
        (&["seller", "name"], "seller.name", item_limits::SELLER_NAME),
        (&["seller", "code"], "seller.code", item_limits::SELLER_CODE),
        (
            &["seller", "tin"],
            "seller.tin",
            item_limits::SELLER_REGISTRATION,
        ),
        (
            &["seller", "psrn"],
            "seller.psrn",
            item_limits::SELLER_REGISTRATION,
        ),
        (
            &["seller", "address"],
            "seller.address",
            item_limits::SELLER_ADDRESS,
        ),
        (
            &["prices", "0", "country_code"],
            "prices[0].country_code",
            item_limits::COUNTRY_CODE,
        ),
        (
            &["prices", "0", "region_code"],
            "prices[0].region_code",
            item_limits::REGION_CODE,
        ),
        (
            &["prices", "0", "currency"],
            "prices[0].currency",
            item_limits::CURRENCY,
        ),
        (
            &["prices", "0", "stock_status"],
            "prices[0].stock_status",
            item_limits::STOCK_STATUS,
        ),
        (
            &["special_price", "0", "country_code"],
            "special_price[0].country_code",
            item_limits::COUNTRY_CODE,
        ),
        (
            &["special_price", "0", "region_code"],
            "special_price[0].region_code",
            item_limits::REGION_CODE,
        ),
    ];
    for &(path, field, limit) in texts {
        // Bytes, not characters: `limit` bytes of two-byte letters pass...
        let exact = "я".repeat(limit / 2);
        let (status, message) =
            upload_second(&app, &key, with(full_item(), path, json!(exact))).await;
        assert_eq!(status, 202, "{field} at {limit} bytes: {message}");
        // ...and `limit` characters whose last letter takes two bytes do not.
        let over = format!("{}я", "a".repeat(limit - 1));
        let (status, message) =
            upload_second(&app, &key, with(full_item(), path, json!(over))).await;
        assert_eq!(status, 400, "{field} at {} bytes", limit + 1);
        assert_eq!(
            message,
            format!(
                "items[1].{field} is longer than {limit} bytes (it has {}).",
                limit + 1
            )
        );
    }

    for (path, field) in [(&["url"][..], "url"), (&["seller", "url"], "seller.url")] {
        let address = |len: usize| format!("https://ozon.ru/{}", "a".repeat(len - 16));
        let (status, _) = upload_second(
            &app,
            &key,
            with(full_item(), path, json!(address(item_limits::URL))),
        )
        .await;
        assert_eq!(status, 202, "{field} at {} bytes", item_limits::URL);
        let (status, message) = upload_second(
            &app,
            &key,
            with(full_item(), path, json!(address(item_limits::URL + 1))),
        )
        .await;
        assert_eq!(
            (status, message.as_str()),
            (
                400,
                &*format!(
                    "items[1].{field} is longer than {} bytes (it has {}).",
                    item_limits::URL,
                    item_limits::URL + 1
                )
            )
        );
        // Short enough as sent, too long as stored: each letter is percent-encoded.
        let cyrillic = format!("https://ozon.ru/{}", "я".repeat(item_limits::URL / 4));
        let (status, message) =
            upload_second(&app, &key, with(full_item(), path, json!(cyrillic))).await;
        assert_eq!(status, 400);
        assert!(
            message.starts_with(&format!(
                "items[1].{field} is longer than {} bytes once normalized",
                item_limits::URL
            )),
            "{message}"
        );
    }

    let key_of = |len: usize| "к".repeat(len / 2) + &"k".repeat(len % 2);
    let base = full_item();
    let lists = [
        (
            "category_path",
            item_limits::CATEGORY_LEVELS,
            json!("Чайники"),
        ),
        (
            "image_gallery",
            item_limits::GALLERY,
            json!("https://img.example/1.webp"),
        ),
        (
            "video_gallery",
            item_limits::GALLERY,
            json!("https://video.example/1.mp4"),
        ),
        ("prices", item_limits::PRICES, base["prices"][0].clone()),
        (
            "special_price",
            item_limits::PRICES,
            base["special_price"][0].clone(),
        ),
    ];
    let attributes = |n: usize| -> Value {
        (0..n)
            .map(|i| (format!("key {i}"), json!("value")))
            .collect::<Map<_, _>>()
            .into()
    };
    let cases = lists
        .into_iter()
        .map(|(field, limit, entry)| {
            let list = move |n: usize| Value::Array(vec![entry.clone(); n]);
            (field, limit, list(limit), list(limit + 1))
        })
        .chain([(
            "attributes",
            item_limits::ATTRIBUTES,
            attributes(item_limits::ATTRIBUTES),
            attributes(item_limits::ATTRIBUTES + 1),
        )]);
    for (field, limit, at_limit, over) in cases {
        let (status, message) =
            upload_second(&app, &key, with(full_item(), &[field], at_limit)).await;
        assert_eq!(status, 202, "{field} with {limit} entries: {message}");
        let (status, message) = upload_second(&app, &key, with(full_item(), &[field], over)).await;
        assert_eq!(
            (status, message),
            (
                400,
                format!(
                    "items[1].{field} has more than {limit} entries (it has {}).",
                    limit + 1
                )
            )
        );
    }

    let attribute = |key: String| json!({ key: "value" });
    let (status, _) = upload_second(
        &app,
        &key,
        with(
            full_item(),
            &["attributes"],
            attribute(key_of(item_limits::ATTRIBUTE_KEY)),
        ),
    )
    .await;
    assert_eq!(status, 202);
    let (status, message) = upload_second(
        &app,
        &key,
        with(
            full_item(),
            &["attributes"],
            attribute(key_of(item_limits::ATTRIBUTE_KEY + 1)),
        ),
    )
    .await;
    assert_eq!(
        (status, message),
        (
            400,
            format!(
                "items[1].attributes has a key longer than {} bytes (it has {}).",
                item_limits::ATTRIBUTE_KEY,
                item_limits::ATTRIBUTE_KEY + 1
            )
        )
    );

    // `{"s":"…"}` is 8 bytes of JSON around the text.
    let stats = |len: usize| json!({ "s": "x".repeat(len - 8) });
    let (status, _) = upload_second(
        &app,
        &key,
        with(full_item(), &["stats"], stats(item_limits::STATS)),
    )
    .await;
    assert_eq!(status, 202);
    let (status, message) = upload_second(
        &app,
        &key,
        with(full_item(), &["stats"], stats(item_limits::STATS + 1)),
    )
    .await;
    assert_eq!(
        (status, message),
        (
            400,
            format!(
                "items[1].stats is longer than {} bytes of JSON (it has {}).",
                item_limits::STATS,
                item_limits::STATS + 1
            )
        )
    );
}

#[tokio::test]
async fn a_nul_anywhere_in_an_upload_is_refused_naming_the_field() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let nul = "a\u{0}b";
    let cases: Vec<(Value, &str)> = vec![
        (
            with(full_item(), &["name"], json!(nul)),
            "items[1].name contains",
        ),
        (
            with(full_item(), &["external_id"], json!(nul)),
            "items[1].external_id contains",
        ),
        (
            with(full_item(), &["category_path", "0"], json!(nul)),
            "items[1].category_path[0] contains",
        ),
        (
            with(full_item(), &["attributes"], json!({ nul: true })),
            "items[1].attributes.a\\0b is a key containing",
        ),
        (
            with(full_item(), &["attributes", "цвет"], json!(nul)),
            "items[1].attributes.цвет contains",
        ),
        (
            with(full_item(), &["seller", "name"], json!(nul)),
            "items[1].seller.name contains",
        ),
        (
            with(full_item(), &["prices", "0", "currency"], json!(nul)),
            "items[1].prices[0].currency contains",
        ),
        (
            with(
                full_item(),
                &["stats"],
                json!({ "reviews": [{ "text": "ok" }, { "text": nul }] }),
            ),
            "items[1].stats.reviews[1].text contains",
        ),
        // A field the item does not know is stored with it all the same.
        (
            with(full_item(), &["extra"], json!({ "deep": [nul] })),
            "items[1].extra.deep[0] contains",
        ),
        // Not even a valid item: the merge would reject it, but it is never stored.
        (
            with(json!({ "marketplace": "amazon" }), &["name"], json!(nul)),
            "items[1].name contains",
        ),
    ];
    for (bad, field) in cases {
        let (status, message) = upload_second(&app, &key, bad).await;
        assert_eq!(status, 400, "{field}");
        assert_eq!(message, format!("{field} a NUL character (U+0000)."));
    }
    assert_eq!(submission::Entity::find().count(&app.db).await.unwrap(), 0);
}

/// The item limits against what the database's indexes hold: a product
/// this large is over the default per-product limit (`hostile_sizes.rs`),
/// so this server allows products of up to 1 MiB.
#[tokio::test]
async fn an_item_with_every_text_and_list_at_its_limit_merges() {
    let app = TestApp::spawn_with_settings(Settings {
        sizes: SizeConfig {
            max_product_kb: 1024,
            max_response_mb: 128,
        },
        ..Settings::default()
    })
    .await;
    let key = app.key("acme").await;
    // Texts in no pattern, so no index entry is compressed below its size,
    // with `İ`s that the folded twins lengthen.
    let text = |bytes: usize, tag: usize| random_letters(bytes, tag as u64 + 1);
    let address = |path: &str| {
        let head = format!("https://ozon.ru/{path}/");
        head.clone() + &random_text(item_limits::URL - head.len())
    };
    let mut big = full_item();
    big["external_id"] = json!(text(item_limits::EXTERNAL_ID, 0));
    big["url"] = json!(address("product"));
    big["name"] = json!(text(item_limits::NAME, 0));
    big["brand"] = json!(text(item_limits::BRAND, 0));
    big["category_path"] = (0..item_limits::CATEGORY_LEVELS)
        .map(|i| json!(text(item_limits::CATEGORY_LEVEL, i)))
        .collect();
    // Every list at its length, one entry of each at its longest: all at
    // once would pass the upload's body limit.
    let value = |i: usize| match i {
        0 => text(item_limits::ATTRIBUTE_VALUE, 0),
        _ => format!("значение {i}"),
    };
    big["attributes"] = (0..item_limits::ATTRIBUTES)
        .map(|i| (text(item_limits::ATTRIBUTE_KEY, i), json!(value(i))))
        .collect::<Map<_, _>>()
        .into();
    big["image_cover"] = json!(text(item_limits::MEDIA_URL, 0));
    let media = |i: usize| match i {
        0 => text(item_limits::MEDIA_URL, 0),
        _ => format!("https://img.example/{i}"),
    };
    big["image_gallery"] = (0..item_limits::GALLERY).map(|i| json!(media(i))).collect();
    big["video_cover"] = json!(text(item_limits::MEDIA_URL, 1));
    big["video_gallery"] = (0..item_limits::GALLERY).map(|i| json!(media(i))).collect();
    let seller = &mut big["seller"];
    seller["id"] = json!(text(item_limits::SELLER_ID, 0));
    seller["name"] = json!(text(item_limits::SELLER_NAME, 0));
    seller["code"] = json!(text(item_limits::SELLER_CODE, 0));
    seller["tin"] = json!(text(item_limits::SELLER_REGISTRATION, 0));
    seller["psrn"] = json!(text(item_limits::SELLER_REGISTRATION, 1));
    seller["address"] = json!(text(item_limits::SELLER_ADDRESS, 0));
    seller["url"] = json!(address("seller"));
    let country = text(item_limits::COUNTRY_CODE, 0);
    big["prices"] = (0..item_limits::PRICES)
        .map(|i| json!({ "country_code": country, "region_code": text(item_limits::REGION_CODE, i), "user_auth_status": "anonymous", "price": 10, "currency": text(item_limits::CURRENCY, 0), "stock_status": text(item_limits::STOCK_STATUS, 0) }))
        .collect();
    big["special_price"] = (0..item_limits::PRICES)
        .map(|i| json!({ "country_code": country, "region_code": text(item_limits::REGION_CODE, i), "user_auth_status": "anonymous", "min": 1, "max": 2 }))
        .collect();
    big["stats"] = json!({ "s": "x".repeat(item_limits::STATS - 8) });
    let session = send(&app, &key, vec![big]).await;

    let report = app.jobs().tick().await.expect("the tick completes").merge;
    assert_eq!(
        (report.merged, report.rejected),
        (1, 0),
        "{:?}",
        submissions(&app, session).await[0].reason
    );
    assert_eq!(
        product_category::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        item_limits::CATEGORY_LEVELS as u64
    );
}

#[tokio::test]
async fn a_product_keeps_a_bounded_number_of_languages() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    send(&app, &key, vec![item("1")]).await;
    app.jobs().tick().await.unwrap();
    // Two-letter codes from `aa` on: none is `ru`, the default.
    let language = |i: usize| {
        format!(
            "{}{}",
            (b'a' + (i / 26) as u8) as char,
            (b'a' + (i % 26) as u8) as char
        )
    };
    let in_language = |i: usize| with(item("1"), &["language"], json!(language(i)));
    let session = send(
        &app,
        &key,
        (0..=item_limits::TRANSLATIONS).map(in_language).collect(),
    )
    .await;
    let report = app.jobs().tick().await.unwrap().merge;
    assert_eq!(
        (report.merged, report.rejected),
        (item_limits::TRANSLATIONS as u64, 1)
    );
    let last = submissions(&app, session).await.pop().unwrap();
    assert_eq!(
        status_and_reason(&last),
        (
            SubmissionStatus::Rejected,
            &*format!(
                "language {} would be one more than the {} translations a product keeps",
                language(item_limits::TRANSLATIONS),
                item_limits::TRANSLATIONS
            )
        )
    );
    // A language the product has, and its default, still merge.
    send(&app, &key, vec![in_language(0), item("1")]).await;
    let report = app.jobs().tick().await.unwrap().merge;
    assert_eq!((report.merged, report.rejected), (2, 0));

    // Russian is never refused, however many languages the product has: it
    // becomes the default, and the old default one more translation.
    let of_two = |language: &str| with(item("2"), &["language"], json!(language));
    let mut first = vec![of_two("en")];
    first.extend((0..item_limits::TRANSLATIONS).map(|i| of_two(&language(i))));
    send(&app, &key, first).await;
    app.jobs().tick().await.unwrap();
    send(&app, &key, vec![of_two("ru")]).await;
    let report = app.jobs().tick().await.unwrap().merge;
    assert_eq!((report.merged, report.rejected), (1, 0));
    let two = product::Entity::find()
        .filter(product::Column::ExternalId.eq("2"))
        .one(&app.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(two.default_language, "ru");
}
