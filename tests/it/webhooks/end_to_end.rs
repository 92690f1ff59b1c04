//! Webhooks end to end: an upload merged, completed and delivered by one
//! job tick; every endpoint as the extension document says; retention.

use chrono::TimeDelta;
use entity::DeliveryStatus;
use serde_json::{Value, json};
use uuid::Uuid;

use super::{Hooks, WEBHOOKS, call, create, disable, verify};
use crate::helpers::receiver::Reply;

#[tokio::test]
async fn an_upload_is_merged_completed_and_delivered_by_one_job_tick() {
    let mut h = Hooks::start().await;
    let (_, secret) = h.subscribe().await;
    let item = json!({
        "marketplace": "wildberries", "external_id": "77", "url": "https://www.wildberries.ru/catalog/77/detail.aspx",
        "language": "ru", "name": "Наушники", "seller": { "id": "9", "name": "ИП Иванов", "code": "A-1" },
        "prices": [{ "country_code": "ru", "user_auth_status": "anonymous", "price": 990, "currency": "RUB" }]
    });
    let upload = json!({ "source_type": "page", "intent": "price_monitoring", "items": [item] });
    let created: Value = h
        .app
        .post_as(&h.key, "/extension/v1/scrapes", &upload)
        .await
        .json()
        .await
        .unwrap();
    let session = created["data"]["id"].as_str().unwrap().to_owned();

    let tick = h.app.jobs().tick().await.expect("tick");
    assert_eq!(
        (
            tick.merge.merged,
            tick.merge.completed_sessions,
            tick.deliveries.succeeded
        ),
        (1, 1, 1)
    );
    let received = h.receiver.take_one();
    verify(
        &secret,
        received.header("x-vitrina-signature"),
        &received.body,
    );
    let payload: Value = serde_json::from_slice(&received.body).unwrap();
    assert_eq!(payload["scrape_session_id"], session);
    assert_eq!(payload["stats"]["merged"], 1);

    // The payload's url is the session products endpoint, fetched with the key.
    let url = payload["url"].as_str().unwrap();
    let products: Value = h
        .app
        .client
        .get(url)
        .bearer_auth(&h.key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(products["data"][0]["product"]["external_id"], "77");
    assert_eq!(
        h.app.jobs().tick().await.unwrap().deliveries.attempted,
        0,
        "delivered once"
    );
}

#[tokio::test]
async fn every_webhook_endpoint_answers_as_the_extension_document_says() {
    let h = Hooks::start().await;
    let doc: Value = h
        .app
        .get("/extension/v1/openapi.json")
        .await
        .json()
        .await
        .unwrap();
    let check = |method: &str, template: &str, status: u16, body: &Value| {
        crate::helpers::openapi::validate_operation(&doc, method, template, status, body)
    };
    let (status, created) =
        create(&h.app, &h.key, json!({ "url": h.receiver.hook("/hook") })).await;
    assert_eq!(status, 201, "{created}");
    check("post", "/webhooks", 201, &created);
    let id: Uuid = created["data"]["id"].as_str().unwrap().parse().unwrap();

    h.complete_session().await;
    h.receiver.script([Reply::Status(500)]);
    h.deliver().await;
    let (status, list) = call(&h.app, &h.key, reqwest::Method::GET, WEBHOOKS).await;
    assert_eq!(status, 200, "{list}");
    check("get", "/webhooks", 200, &list);
    let path = format!("{WEBHOOKS}/{id}/deliveries");
    let (status, deliveries) = call(&h.app, &h.key, reqwest::Method::GET, &path).await;
    assert_eq!(status, 200, "{deliveries}");
    assert_eq!(deliveries["data"][0]["attempts"][0]["status_code"], 500);
    check("get", "/webhooks/{id}/deliveries", 200, &deliveries);

    let pending = deliveries["data"][0]["id"].as_str().unwrap();
    let redeliver = format!("{WEBHOOKS}/{id}/deliveries/{pending}/redeliver");
    let redeliver_template = "/webhooks/{id}/deliveries/{delivery_id}/redeliver";
    let (status, refused) = call(&h.app, &h.key, reqwest::Method::POST, &redeliver).await;
    assert_eq!(status, 409, "{refused}");
    check("post", redeliver_template, 409, &refused);
    h.advance(TimeDelta::minutes(1));
    h.receiver.script([Reply::Status(400)]);
    h.deliver().await;
    let (status, queued) = call(&h.app, &h.key, reqwest::Method::POST, &redeliver).await;
    assert_eq!(status, 202, "{queued}");
    check("post", redeliver_template, 202, &queued);
    let ping = format!("{WEBHOOKS}/{id}/test");
    let (status, pinged) = call(&h.app, &h.key, reqwest::Method::POST, &ping).await;
    assert_eq!(status, 200, "{pinged}");
    check("post", "/webhooks/{id}/test", 200, &pinged);

    let (status, disabled) = disable(&h.app, &h.key, id).await;
    assert_eq!(status, 200, "{disabled}");
    check("delete", "/webhooks/{id}", 200, &disabled);

    let unknown = format!("{WEBHOOKS}/{}/deliveries", Uuid::nil());
    let (status, missing) = call(&h.app, &h.key, reqwest::Method::GET, &unknown).await;
    assert_eq!(status, 404, "{missing}");
    check("get", "/webhooks/{id}/deliveries", 404, &missing);
    let (status, refused) = create(&h.app, &h.key, json!({ "url": "ftp://example.com/" })).await;
    assert_eq!(status, 400, "{refused}");
    check("post", "/webhooks", 400, &refused);
}

#[tokio::test]
async fn retention_deletes_finished_deliveries_with_their_attempts_and_keeps_unfinished_ones() {
    let h = Hooks::start().await;
    h.subscribe().await;
    h.complete_session().await;
    h.receiver.script([Reply::Status(200)]);
    h.deliver().await;
    let finished = h.only_delivery().await;
    assert_eq!(finished.status, DeliveryStatus::Succeeded);
    h.complete_session().await;
    h.receiver.script([Reply::Status(500)]);
    h.deliver().await;
    let retrying = h
        .deliveries()
        .await
        .into_iter()
        .find(|d| d.id != finished.id)
        .expect("the second delivery");
    assert!(retrying.finished_at.is_none());

    h.advance(TimeDelta::days(91));
    h.complete_session().await;
    let purged = h
        .app
        .jobs()
        .retention
        .purge(&h.app.db, h.now(), h.app.state.events.versions())
        .await
        .unwrap();
    assert_eq!(purged.deliveries, 1);
    let kept: Vec<Uuid> = h.deliveries().await.iter().map(|d| d.id).collect();
    assert_eq!(kept.len(), 2, "the one being retried and the new one");
    assert!(!kept.contains(&finished.id));
    assert!(
        h.attempts(finished.id).await.is_empty(),
        "attempts go with it"
    );
    assert_eq!(h.attempts(retrying.id).await.len(), 1);
}
