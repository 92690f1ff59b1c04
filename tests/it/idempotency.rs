//! `Idempotency-Key` on uploads: a retry is the same body, byte for byte,
//! and answers the first session; the key with any other body is refused
//! 422 `idempotency_key_reused` naming the key, an unparseable body 400, and
//! neither stores anything, however many arrive at once.

use entity::{scrape_session, submission};
use futures_util::future::join_all;
use sea_orm::{EntityTrait, PaginatorTrait};
use serde_json::{Value, json};

use crate::helpers::uploads::{item, post_raw, upload, with};
use crate::helpers::{TestApp, header, migrate_down_through};

const KEY: &str = "run-7";

/// Status, error code (or `replayed` / `created`), session id and message.
async fn answer(response: reqwest::Response) -> (u16, String, String, String) {
    let status = response.status().as_u16();
    let replayed = header(&response, "idempotent-replayed") == Some("true");
    let body: Value = response.json().await.unwrap();
    let code = match (body["error"]["code"].as_str(), replayed) {
        (Some(code), _) => code.to_owned(),
        (None, true) => "replayed".to_owned(),
        (None, false) => "created".to_owned(),
    };
    let id = body["data"]["id"].as_str().unwrap_or_default().to_owned();
    let message = body["error"]["message"].as_str().unwrap_or_default();
    (status, code, id, message.to_owned())
}

async fn stored(app: &TestApp) -> (u64, u64) {
    (
        scrape_session::Entity::find().count(&app.db).await.unwrap(),
        submission::Entity::find().count(&app.db).await.unwrap(),
    )
}

/// Bodies that differ from `first` (the JSON of one item) and are uploads:
/// other items, one byte changed, the same JSON with keys reordered or
/// spaced differently.
fn other_bodies(first: &str) -> Vec<(&'static str, String)> {
    let reordered = format!(
        r#"{{"items":{},"intent":"catalog_import","source_type":"bulk"}}"#,
        serde_json::to_string(&[item("1")]).unwrap()
    );
    vec![
        ("another item", upload(vec![item("2")]).to_string()),
        (
            "one more item",
            upload(vec![item("1"), item("2")]).to_string(),
        ),
        ("no item", upload(vec![]).to_string()),
        ("one byte changed", first.replacen("1000", "1001", 1)),
        ("keys reordered", reordered),
        ("a space more", format!("{first} ")),
        ("a newline more", format!("{first}\n")),
        (
            "pretty-printed",
            serde_json::to_string_pretty(&upload(vec![item("1")])).unwrap(),
        ),
    ]
}

#[tokio::test]
async fn the_key_with_any_other_body_is_refused_naming_the_key_and_the_same_bytes_replay() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let first = upload(vec![item("1")]).to_string();
    let (status, code, session, _) =
        answer(post_raw(&app, &key, first.clone(), Some(KEY)).await).await;
    assert_eq!((status, code.as_str()), (202, "created"));

    for (what, body) in other_bodies(&first) {
        assert_ne!(body, first, "{what}");
        let (status, code, _, message) = answer(post_raw(&app, &key, body, Some(KEY)).await).await;
        assert_eq!(
            (status, code.as_str()),
            (422, "idempotency_key_reused"),
            "{what}"
        );
        assert_eq!(
            message,
            format!(
                "Idempotency-Key \"{KEY}\" was already used with a different request body; \
                 retry with the same body, or send a new key for a new upload."
            ),
            "{what}"
        );
    }
    assert_eq!(stored(&app).await, (1, 1), "nothing stored by a refusal");

    let (status, code, again, _) = answer(post_raw(&app, &key, first, Some(KEY)).await).await;
    assert_eq!((status, code.as_str(), again), (202, "replayed", session));
}

#[tokio::test]
async fn an_unparseable_body_with_a_used_key_is_refused_as_unparseable_not_replayed() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let first = upload(vec![item("1")]).to_string();
    post_raw(&app, &key, first.clone(), Some(KEY)).await;
    let nul = upload(vec![with(item("1"), &["name"], json!("a\u{0}b"))]).to_string();
    let huge = upload(vec![with(item("1"), &["stats"], json!({ "x": 1e300 }))]).to_string();
    let unparseable = [
        String::new(),
        "{not json".to_owned(),
        first[..first.len() / 2].to_owned(),
        format!("{first}{first}"),
        r#"{"items": 5}"#.to_owned(),
        r#"{"source_type":"page","intent":"catalog_import","items":[1]}"#.to_owned(),
        nul,
        huge,
    ];
    for body in unparseable {
        let (status, code, _, _) =
            answer(post_raw(&app, &key, body.clone(), Some(KEY)).await).await;
        assert_eq!((status, code.as_str()), (400, "invalid_body"), "{body:.80}");
    }
    assert_eq!(stored(&app).await, (1, 1));
}

#[tokio::test]
async fn concurrent_uploads_under_one_key_make_one_session_and_refuse_every_other_body() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    // Sixteen different bodies at once, and four copies of one of them.
    let mut bodies: Vec<String> = (0..16)
        .map(|i| upload(vec![item(&i.to_string())]).to_string())
        .collect();
    bodies.extend(std::iter::repeat_n(bodies[0].clone(), 4));
    let answers =
        join_all(bodies.iter().map(|body| async {
            answer(post_raw(&app, &key, body.clone(), Some(KEY)).await).await
        }))
        .await;

    let created: Vec<usize> = (0..answers.len())
        .filter(|&i| answers[i].1 == "created")
        .collect();
    assert_eq!(created.len(), 1, "{answers:?}");
    let winner = &bodies[created[0]];
    for (body, (status, code, id, _)) in bodies.iter().zip(&answers) {
        if body == winner && code != "created" {
            assert_eq!((*status, code.as_str()), (202, "replayed"));
            assert_eq!(id, &answers[created[0]].2);
        } else if body != winner {
            assert_eq!((*status, code.as_str()), (422, "idempotency_key_reused"));
        }
    }
    assert_eq!(stored(&app).await, (1, 1));
}

#[tokio::test]
async fn a_session_stored_before_bodies_were_fingerprinted_answers_any_upload_with_its_key() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let first = upload(vec![item("1")]).to_string();
    let (_, _, session, _) = answer(post_raw(&app, &key, first, Some(KEY)).await).await;
    // Back to the schema without fingerprints, then forward: the session
    // has none, as one stored before the migration.
    migrate_down_through(&app.db, "m20261128_000017_idempotency_fingerprint").await;
    vitrina::db::migrate(&app.db).await.expect("up again");

    let other = upload(vec![item("2")]).to_string();
    let (status, code, id, _) = answer(post_raw(&app, &key, other, Some(KEY)).await).await;
    assert_eq!((status, code.as_str(), id), (202, "replayed", session));
    let (status, code, _, _) = answer(post_raw(&app, &key, "{not json", Some(KEY)).await).await;
    assert_eq!((status, code.as_str()), (400, "invalid_body"));
    assert_eq!(stored(&app).await, (1, 1));
}
