//! `POST /extension/v1/scrapes`: one scraper call becomes one scrape session
//! of the calling key's account, its items `pending` submissions, in one
//! transaction. Items are stored as sent and validated by the merge pass
//! (which rejects bad ones with a reason), so an upload never loses the
//! well-formed items of a batch because of one bad item. Only what could not
//! be stored at all is refused here, naming the field: a NUL in any string
//! or key, a number outside the domain, a text or list over its limit
//! (`jobs::merge::item_limits`).
//!
//! An `Idempotency-Key` (per account) makes a retry answer the session the
//! key first made. A retry is the same body, byte for byte (its SHA-256 is
//! kept on the session): the key with any other body, even the same JSON
//! written differently, is refused (422 `idempotency_key_reused`), as is an
//! unparseable body (400), never answered with the first session. A session
//! stored before bodies were fingerprinted answers every parseable body sent
//! with its key, as it did then.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Extension, Json, Router};
use entity::{scrape_session, submission};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, DatabaseConnection, EntityTrait, NotSet, QueryFilter, SqlErr,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::accounts::Caller;
use crate::cache::versions::Grains;
use crate::http::ApiError;
use crate::http::error::ErrorBody;
use crate::jobs::merge::item::ScrapedItem;
use crate::jobs::merge::{item_limits, size};
use crate::query::sessions;
use crate::state::AppState;
use crate::views::SessionEnvelope;

/// Items one upload may carry.
pub const MAX_ITEMS: usize = 1000;
/// Longest accepted `Idempotency-Key`.
const MAX_IDEMPOTENCY_KEY: usize = 255;

pub fn router() -> Router<AppState> {
    Router::new().route("/scrapes", post(upload))
}

/// What one scraper call uploads.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Upload {
    /// `page` (one product page) or `bulk` (a run over many pages).
    pub source_type: SourceType,
    /// `catalog_import` or `price_monitoring`.
    pub intent: Intent,
    /// URLs the scraper visited; defaults to the number of items.
    pub url_count: Option<u32>,
    /// Scraped items, at most 1000.
    #[schema(value_type = Vec<ScrapedItem>)]
    pub items: Vec<Value>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourceType {
    Page,
    Bulk,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Intent {
    CatalogImport,
    PriceMonitoring,
}

/// The snake_case word serde writes for a unit variant.
fn wire<T: Serialize>(value: T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn parse(body: &[u8]) -> Result<Upload, ApiError> {
    let mut json = serde_json::Deserializer::from_slice(body);
    let mut upload: Upload = serde_path_to_error::deserialize(&mut json).map_err(unreadable)?;
    json.end()
        .map_err(|e| ApiError::InvalidBody(format!("the body is not a valid upload: {e}")))?;
    if upload.items.len() > MAX_ITEMS {
        return Err(ApiError::InvalidBody(format!(
            "an upload holds at most {MAX_ITEMS} items"
        )));
    }
    if let Some(i) = upload.items.iter().position(|item| !item.is_object()) {
        return Err(ApiError::InvalidBody(format!(
            "items[{i}] must be an object"
        )));
    }
    for (i, item) in upload.items.iter_mut().enumerate() {
        item_limits::check_upload(item)
            .map_err(|v| ApiError::InvalidBody(format!("items[{i}].{v}")))?;
    }
    Ok(upload)
}

/// Why the body is not an upload, and where in it.
fn unreadable(e: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let path = e.path().to_string();
    let inner = e.inner();
    // A number beyond a double (`1e309`, 400 digits) never becomes a value
    // to check; serde_json says so in words only.
    if inner.to_string().starts_with("number out of range") {
        let shown = format!(
            "a number beyond what a double holds (at line {}, column {})",
            inner.line(),
            inner.column()
        );
        return ApiError::InvalidBody(item_limits::out_of_domain(path, shown).to_string());
    }
    ApiError::InvalidBody(format!("the body is not a valid upload: {path}: {inner}"))
}

/// The hex SHA-256 of an upload's raw body: what tells a retry (the same
/// bytes) from another upload under the same `Idempotency-Key`.
fn fingerprint(body: &[u8]) -> String {
    hex::encode(Sha256::digest(body))
}

fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let key = value.to_str().map(str::trim).unwrap_or_default();
    if key.is_empty() || key.len() > MAX_IDEMPOTENCY_KEY {
        return Err(ApiError::InvalidParameter(format!(
            "Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY} visible characters"
        )));
    }
    Ok(Some(key.to_owned()))
}

async fn find_by_key(
    db: &DatabaseConnection,
    account: Uuid,
    key: &str,
) -> Result<Option<scrape_session::Model>, ApiError> {
    Ok(scrape_session::Entity::find()
        .filter(scrape_session::Column::AccountId.eq(account))
        .filter(scrape_session::Column::IdempotencyKey.eq(key))
        .one(db)
        .await?)
}

/// Creates a scrape session with its items as pending submissions. With an
/// `Idempotency-Key` already used by this account and the same body, byte for
/// byte, answers the first session (and `Idempotent-Replayed: true`) instead
/// of creating another.
#[utoipa::path(post, operation_id = "uploadScrapes", path = "/scrapes", tag = "extension",
    request_body = Upload,
    params(("Idempotency-Key" = Option<String>, Header, description = "Makes a retried upload (the same body, byte for byte) return the first session; the key with another body is refused (422)")),
    responses(
        (status = 202, body = SessionEnvelope, description = "Accepted; items are merged by a later pass"),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 422, body = ErrorBody, description = "`idempotency_key_reused`: the Idempotency-Key was already used with a different body (the same JSON written differently counts as different)"),
        (status = 429, body = ErrorBody),
    ),
    security(("bearerAuth" = [])))]
pub async fn upload(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let key = idempotency_key(&headers)?;
    let fingerprint = fingerprint(&body);
    if let Some(key) = &key
        && let Some(first) = find_by_key(&state.db, caller.account_id, key).await?
    {
        return retried(&state, key, first, &fingerprint, &body).await;
    }
    let upload = parse(&body)?;
    let now = state.clock.now();
    let max_product = state.settings.sizes.max_product_bytes();
    for (i, item) in upload.items.iter().enumerate() {
        size::check_upload(item, now, max_product)
            .map_err(|reason| ApiError::InvalidBody(format!("items[{i}] {reason}")))?;
    }
    let session_id = Uuid::new_v4();
    let txn = crate::db::begin_write(&state.db).await?;
    let session = scrape_session::ActiveModel {
        id: Set(session_id),
        account_id: Set(caller.account_id),
        api_key_id: Set(caller.key_id),
        source_type: Set(wire(upload.source_type)),
        intent: Set(wire(upload.intent)),
        url_count: Set(i64::from(
            upload.url_count.unwrap_or(upload.items.len() as u32),
        )),
        request_fingerprint: Set(key.as_ref().map(|_| fingerprint.clone())),
        idempotency_key: Set(key.clone()),
        completed_at: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    };
    if let Err(e) = scrape_session::Entity::insert(session)
        .exec_without_returning(&txn)
        .await
    {
        // A concurrent upload with the same key won the race: answer as to
        // a retry after it.
        if let (Some(SqlErr::UniqueConstraintViolation(_)), Some(key)) = (e.sql_err(), &key) {
            drop(txn);
            let first = find_by_key(&state.db, caller.account_id, key)
                .await?
                .ok_or(ApiError::Internal)?;
            return retried(&state, key, first, &fingerprint, &body).await;
        }
        return Err(e.into());
    }
    let rows: Vec<submission::ActiveModel> = upload
        .items
        .into_iter()
        .map(|payload| submission::ActiveModel {
            id: NotSet,
            session_id: Set(session_id),
            status: Set(entity::SubmissionStatus::Pending),
            payload: Set(payload),
            product_id: Set(None),
            reason: Set(None),
            lease_expires_at: Set(None),
            created_at: Set(now),
            updated_at: Set(now),
        })
        .collect();
    crate::db::insert_batched(&txn, rows).await?;
    let versions = state.events.versions();
    versions.commit(txn, Grains::SESSIONS).await?;
    let view = sessions::find_for_account(&state.db, caller.account_id, session_id).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(SessionEnvelope { data: view.into() }),
    )
        .into_response())
}

/// Answers an upload whose `Idempotency-Key` made the session `first`: that
/// session when the body is the one it was made with; otherwise a refusal,
/// 400 for a body that is no upload, else 422. A session stored before
/// bodies were fingerprinted answers any upload.
async fn retried(
    state: &AppState,
    key: &str,
    first: scrape_session::Model,
    fingerprint: &str,
    body: &[u8],
) -> Result<Response, ApiError> {
    if first.request_fingerprint.as_deref() != Some(fingerprint) {
        parse(body)?;
        if first.request_fingerprint.is_some() {
            return Err(ApiError::Unprocessable {
                code: "idempotency_key_reused",
                message: format!(
                    "Idempotency-Key \"{key}\" was already used with a different request body; \
                     retry with the same body, or send a new key for a new upload"
                ),
            });
        }
    }
    replay(state, first.account_id, first.id).await
}

async fn replay(state: &AppState, account: Uuid, id: Uuid) -> Result<Response, ApiError> {
    let view = sessions::find_for_account(&state.db, account, id).await?;
    let mut response = (
        StatusCode::ACCEPTED,
        Json(SessionEnvelope { data: view.into() }),
    )
        .into_response();
    response
        .headers_mut()
        .insert("idempotent-replayed", HeaderValue::from_static("true"));
    Ok(response)
}
