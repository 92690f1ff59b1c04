//! The demo account: an API key and a few scrape sessions whose submissions
//! are in every status, so `/me/scrapes` has something to show.

use chrono::TimeDelta;
use entity::{SubmissionStatus, scrape_session, submission};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, DatabaseConnection, EntityTrait, NotSet, TransactionTrait,
};
use serde_json::Value;
use uuid::Uuid;

use super::catalog::{Catalog, item_payload};
use super::{DEMO_ACCOUNT, anchor};
use crate::accounts;
use crate::db::insert_batched;
use crate::error::Error;

use SubmissionStatus::{Flagged, Merged, Pending, Processing, Rejected};

/// (source_type, intent, statuses of its submissions in order)
const PLANS: &[(&str, &str, &[SubmissionStatus])] = &[
    (
        "bulk",
        "catalog_import",
        &[Merged, Merged, Merged, Merged, Merged, Merged],
    ),
    (
        "page",
        "price_monitoring",
        &[Merged, Merged, Merged, Rejected, Flagged],
    ),
    (
        "bulk",
        "price_monitoring",
        &[Merged, Merged, Processing, Pending, Pending, Pending],
    ),
    ("page", "catalog_import", &[]),
];

pub struct DemoSeed {
    pub sessions: u64,
    pub key: String,
}

pub async fn seed_demo_account(
    db: &DatabaseConnection,
    rng: &mut ChaCha8Rng,
    catalog: &Catalog,
) -> Result<DemoSeed, Error> {
    let now = anchor();
    let key = accounts::create_key(db, DEMO_ACCOUNT, now).await?;
    let sample: Vec<_> = catalog
        .sample
        .iter()
        .map(|product| {
            let seller_id = catalog.seller_id(product.seller_ref).unwrap_or_default();
            (product, item_payload(product, seller_id))
        })
        .collect();
    if sample.is_empty() {
        return Ok(DemoSeed {
            sessions: 0,
            key: key.secret,
        });
    }

    let txn = db.begin().await?;
    let mut next = 0usize;
    let mut unknown = 0;
    for (i, (source_type, intent, statuses)) in PLANS.iter().enumerate() {
        let created_at = now - TimeDelta::days((PLANS.len() - i) as i64)
            + TimeDelta::minutes(rng.random_range(0..600));
        let session = scrape_session::Model {
            id: catalog.session_id(i as u64),
            account_id: key.key.account_id,
            api_key_id: key.key.id,
            source_type: (*source_type).to_owned(),
            intent: (*intent).to_owned(),
            url_count: statuses.len() as i64,
            idempotency_key: None,
            request_fingerprint: None,
            completed_at: None,
            created_at,
            updated_at: created_at + TimeDelta::minutes(5),
        };
        scrape_session::Entity::insert(
            sea_orm::IntoActiveModel::into_active_model(session.clone()).reset_all(),
        )
        .exec_without_returning(&txn)
        .await?;
        let mut rows = Vec::new();
        for status in statuses.iter().copied() {
            let (product, payload) = &sample[next % sample.len()];
            next += 1;
            let (payload, product_id, reason) =
                outcome(status, product.id, payload, catalog, &mut unknown);
            rows.push(submission::ActiveModel {
                id: NotSet,
                session_id: Set(session.id),
                status: Set(status),
                payload: Set(payload),
                product_id: Set(product_id),
                reason: Set(reason),
                lease_expires_at: Set((status == Processing).then(|| now + TimeDelta::minutes(5))),
                created_at: Set(session.created_at),
                updated_at: Set(session.updated_at),
            });
        }
        insert_batched(&txn, rows).await?;
    }
    txn.commit().await?;
    Ok(DemoSeed {
        sessions: PLANS.len() as u64,
        key: key.secret,
    })
}

/// A demo submission of `status` for the item `payload` of `product`: the
/// payload stored, the product merged into and the reason given. Pending
/// and processing ones name products the catalog does not hold, the
/// `unknown`-th next.
fn outcome(
    status: SubmissionStatus,
    product: Uuid,
    payload: &Value,
    catalog: &Catalog,
    unknown: &mut u64,
) -> (Value, Option<Uuid>, Option<String>) {
    match status {
        Merged => (payload.clone(), Some(product), None),
        Flagged => (
            payload.clone(),
            Some(product),
            Some("price differs from its recent history by more than 50%".to_owned()),
        ),
        Rejected => (
            with_field(payload, "name", Value::String(String::new())),
            None,
            Some("name must not be empty".to_owned()),
        ),
        Pending | Processing => {
            let external_id = catalog.unknown_external_id(*unknown);
            *unknown += 1;
            (
                with_field(payload, "external_id", Value::String(external_id)),
                None,
                None,
            )
        }
    }
}

fn with_field(payload: &Value, field: &str, value: Value) -> Value {
    let mut out = payload.clone();
    if let Some(object) = out.as_object_mut() {
        object.insert(field.to_owned(), value);
    }
    out
}
