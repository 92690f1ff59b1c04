//! `GET/POST /extension/v1/webhooks`, `DELETE /extension/v1/webhooks/{id}`,
//! `GET /extension/v1/webhooks/{id}/deliveries`,
//! `POST /extension/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver`,
//! `POST /extension/v1/webhooks/{id}/rotate-secret`,
//! `POST /extension/v1/webhooks/{id}/test`: the settings page's webhook
//! section. Every call is scoped to the caller's account; a signing
//! secret appears only in the answer to the POST that creates it (creating
//! the subscription, or rotating its secret).

use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use axum::{Extension, Json, Router};
use chrono::{DateTime, Utc};
use entity::{
    DeliveryStatus, PriceFilter, SubscriptionStatus, webhook_attempt, webhook_subscription,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::accounts::Caller;
use crate::http::ApiError;
use crate::http::error::ErrorBody;
use crate::rest::params::{self, PathId, PathIds};
use crate::state::AppState;
use crate::views::envelope;
use crate::webhooks::ping::{self, PingReport};
use crate::webhooks::subscriptions::{self, DeliveryLog, Interests, SubscriptionError};
use crate::webhooks::target::TargetPolicy;
use crate::webhooks::{redelivery, rotation};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/webhooks", get(list).post(create))
        .route("/webhooks/{id}", delete(disable))
        .route("/webhooks/{id}/deliveries", get(deliveries))
        .route(
            "/webhooks/{id}/deliveries/{delivery_id}/redeliver",
            post(redeliver),
        )
        .route("/webhooks/{id}/rotate-secret", post(rotate_secret))
        .route("/webhooks/{id}/test", post(test))
}

envelope!(
    /// `GET /webhooks`
    SubscriptionList { data: Vec<Subscription> }
);
envelope!(
    /// `DELETE /webhooks/{id}`
    SubscriptionEnvelope { data: Subscription }
);
envelope!(
    /// `POST /webhooks`
    CreatedEnvelope { data: Created }
);
envelope!(
    /// `POST /webhooks/{id}/rotate-secret`
    RotatedEnvelope { data: Rotated }
);
envelope!(
    /// `GET /webhooks/{id}/deliveries`
    DeliveryList { data: Vec<Delivery> }
);
envelope!(
    /// `POST /webhooks/{id}/deliveries/{delivery_id}/redeliver`
    DeliveryEnvelope { data: Delivery }
);
envelope!(
    /// `POST /webhooks/{id}/test`
    PingEnvelope { data: PingResult }
);

/// A subscription as shown to its owner: never the secret. Fields that
/// may be null are always sent, so the document marks them required.
#[derive(Debug, Serialize, ToSchema)]
pub struct Subscription {
    id: Uuid,
    url: String,
    /// The events it receives: `scrape_session.completed`, `product.price_changed`.
    events: Vec<&'static str>,
    /// Which price changes it receives; null when it receives none.
    #[schema(required = true)]
    filter: Option<PriceFilter>,
    status: SubscriptionStatus,
    consecutive_failures: i32,
    created_at: DateTime<Utc>,
    #[schema(required = true)]
    disabled_at: Option<DateTime<Utc>>,
}

impl From<webhook_subscription::Model> for Subscription {
    fn from(s: webhook_subscription::Model) -> Self {
        Subscription {
            events: Interests::events_of(&s),
            filter: s.price_filter.filter(|_| s.price_events),
            id: s.id,
            url: s.target_url,
            status: s.status,
            consecutive_failures: s.consecutive_failures,
            created_at: s.created_at,
            disabled_at: s.disabled_at,
        }
    }
}

/// The answer to creation: the subscription and, this once, its secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct Created {
    #[serde(flatten)]
    subscription: Subscription,
    /// Signs every delivery (HMAC-SHA256, see the `X-Service-Signature` header); shown only here.
    secret: String,
}

/// The answer to a rotation: the subscription, this once its new secret,
/// and when the old secret stops signing.
#[derive(Debug, Serialize, ToSchema)]
pub struct Rotated {
    #[serde(flatten)]
    subscription: Subscription,
    /// The new signing secret; shown only here.
    secret: String,
    /// Until then every delivery carries two `v1` signatures, with the new secret and then the old one.
    previous_secret_expires_at: DateTime<Utc>,
}

/// One event sent to the subscription, with every attempt to send it.
#[derive(Debug, Serialize, ToSchema)]
pub struct Delivery {
    id: Uuid,
    event: String,
    scrape_session_id: Uuid,
    status: DeliveryStatus,
    attempt_count: i32,
    #[schema(required = true)]
    next_attempt_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
    #[schema(required = true)]
    finished_at: Option<DateTime<Utc>>,
    /// A redelivery: the id of the delivery whose event it sends again (which
    /// may since have been purged by retention); null for an event's own delivery.
    #[schema(required = true)]
    redelivery_of: Option<Uuid>,
    attempts: Vec<Attempt>,
}

/// One attempt: the receiver's status code, or why there was none.
#[derive(Debug, Serialize, ToSchema)]
pub struct Attempt {
    attempted_at: DateTime<Utc>,
    #[schema(required = true)]
    status_code: Option<i32>,
    #[schema(required = true)]
    error: Option<String>,
    duration_ms: i64,
}

impl From<DeliveryLog> for Delivery {
    fn from(log: DeliveryLog) -> Self {
        let d = log.delivery;
        Delivery {
            id: d.id,
            event: d.event,
            scrape_session_id: d.session_id,
            status: d.status,
            attempt_count: d.attempts,
            next_attempt_at: d.next_attempt_at,
            created_at: d.created_at,
            finished_at: d.finished_at,
            redelivery_of: d.redelivery_of,
            attempts: log.attempts.into_iter().map(Attempt::from).collect(),
        }
    }
}

impl From<webhook_attempt::Model> for Attempt {
    fn from(a: webhook_attempt::Model) -> Self {
        Attempt {
            attempted_at: a.attempted_at,
            status_code: a.status_code,
            error: a.error,
            duration_ms: a.duration_ms,
        }
    }
}

/// The outcome of a test event: sent once, at once, and not stored.
#[derive(Debug, Serialize, ToSchema)]
pub struct PingResult {
    /// The `X-Vitrina-Delivery` header the ping carried.
    delivery_id: Uuid,
    /// The receiver answered 2xx, as a delivery must to succeed.
    delivered: bool,
    /// The receiver's status code; null when it did not answer.
    #[schema(required = true)]
    status_code: Option<u16>,
    /// Why there was no answer (a timeout, a refused connection, a refused
    /// target), as the delivery log words it; null when it answered.
    #[schema(required = true)]
    error: Option<String>,
    duration_ms: i64,
}

impl From<PingReport> for PingResult {
    fn from(report: PingReport) -> Self {
        let (status_code, error) = report.outcome.status_or_error();
        PingResult {
            delivery_id: report.id,
            delivered: report.delivered,
            status_code,
            error: error.map(str::to_owned),
            duration_ms: report.duration_ms,
        }
    }
}

/// How a refused subscription call is answered.
impl From<SubscriptionError> for ApiError {
    fn from(err: SubscriptionError) -> Self {
        match err {
            SubscriptionError::Target(e) => ApiError::InvalidParameter(format!("url refused: {e}")),
            SubscriptionError::UrlTooLong { .. } | SubscriptionError::Invalid(_) => {
                ApiError::InvalidParameter(err.to_string())
            }
            SubscriptionError::LimitReached => ApiError::Conflict {
                code: "subscription_limit",
                message: err.to_string(),
            },
            SubscriptionError::NotFound | SubscriptionError::DeliveryNotFound => ApiError::NotFound,
            SubscriptionError::Disabled => ApiError::Conflict {
                code: "subscription_disabled",
                message: err.to_string(),
            },
            SubscriptionError::DeliveryNotFinished => ApiError::Conflict {
                code: "delivery_not_finished",
                message: err.to_string(),
            },
            SubscriptionError::RedeliveryLimit { .. } => ApiError::Conflict {
                code: "redelivery_limit",
                message: err.to_string(),
            },
            SubscriptionError::Database(e) => e.into(),
        }
    }
}

/// A new subscription.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateBody {
    /// Where deliveries are POSTed: a public `https` address, at most 2,048 characters.
    #[schema(max_length = 2048)]
    url: String,
    /// The events to receive: `scrape_session.completed` (the account's
    /// sessions completing) and `product.price_changed` (a merge moving a
    /// product's lowest current price in a currency, whoever uploaded it).
    /// Default `["scrape_session.completed"]`.
    #[serde(default)]
    events: Option<Vec<String>>,
    /// For `product.price_changed`: only products of these brands, ids
    /// and marketplaces (an absent or empty list does not narrow), moved
    /// by at least `min_change_percent` either way. At most 100 brands and
    /// 500 ids.
    #[serde(default)]
    filter: Option<PriceFilter>,
}

/// The caller's subscriptions, oldest first.
#[utoipa::path(get, operation_id = "listWebhooks", path = "/webhooks", tag = "webhooks",
    responses(
        (status = 200, body = SubscriptionList),
        (status = 401, body = ErrorBody), (status = 429, body = ErrorBody),
    ),
    security(("bearerAuth" = [])))]
pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<SubscriptionList>, ApiError> {
    let rows = subscriptions::list(&state.db, caller.account_id).await?;
    Ok(Json(SubscriptionList {
        data: rows.into_iter().map(Subscription::from).collect(),
    }))
}

/// Creates a subscription: 201 with its secret, shown only here.
#[utoipa::path(post, operation_id = "createWebhook", path = "/webhooks", tag = "webhooks",
    request_body = CreateBody,
    responses(
        (status = 201, body = CreatedEnvelope),
        (status = 400, body = ErrorBody, description = "Not JSON, a target that is not a public https address, a URL longer than 2,048 characters, an unknown event, or a filter without product.price_changed or past its limits"),
        (status = 401, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "The account already has 5 active subscriptions"),
        (status = 429, body = ErrorBody),
    ),
    security(("bearerAuth" = [])))]
pub async fn create(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    body: Result<Json<CreateBody>, JsonRejection>,
) -> Result<(StatusCode, Json<CreatedEnvelope>), ApiError> {
    let Json(body) = body.map_err(|e| ApiError::InvalidBody(e.body_text()))?;
    let interests = Interests::of(body.events.as_deref(), body.filter)?;
    let policy = TargetPolicy::from(&state.settings.webhooks.targets);
    let created = subscriptions::create(
        &state.db,
        caller.account_id,
        &body.url,
        interests,
        policy,
        state.clock.now(),
    )
    .await?;
    let secret = created.secret.clone();
    Ok((
        StatusCode::CREATED,
        Json(CreatedEnvelope {
            data: Created {
                subscription: created.into(),
                secret,
            },
        }),
    ))
}

/// Disables a subscription (final; repeating it changes nothing).
#[utoipa::path(delete, operation_id = "disableWebhook", path = "/webhooks/{id}", tag = "webhooks",
    params(("id" = Uuid, Path, description = "The subscription")),
    responses(
        (status = 200, body = SubscriptionEnvelope),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "No such subscription of the caller's account"),
        (status = 429, body = ErrorBody),
    ),
    security(("bearerAuth" = [])))]
pub async fn disable(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    PathId(id): PathId,
) -> Result<Json<SubscriptionEnvelope>, ApiError> {
    let id = params::uuid(&id)?;
    let disabled =
        subscriptions::disable(&state.db, caller.account_id, id, state.clock.now()).await?;
    Ok(Json(SubscriptionEnvelope {
        data: disabled.into(),
    }))
}

/// The subscription's newest deliveries, newest first, with every attempt.
#[utoipa::path(get, operation_id = "listWebhookDeliveries", path = "/webhooks/{id}/deliveries", tag = "webhooks",
    params(("id" = Uuid, Path, description = "The subscription")),
    responses(
        (status = 200, body = DeliveryList),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "No such subscription of the caller's account"),
        (status = 429, body = ErrorBody),
    ),
    security(("bearerAuth" = [])))]
pub async fn deliveries(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    PathId(id): PathId,
) -> Result<Json<DeliveryList>, ApiError> {
    let id = params::uuid(&id)?;
    let logs = subscriptions::deliveries(&state.db, caller.account_id, id).await?;
    Ok(Json(DeliveryList {
        data: logs.into_iter().map(Delivery::from).collect(),
    }))
}

/// Replaces the subscription's signing secret: the new one is in the answer,
/// shown only there. The old one keeps signing next to it for the overlap
/// (24 hours unless configured otherwise).
#[utoipa::path(post, operation_id = "rotateWebhookSecret", path = "/webhooks/{id}/rotate-secret", tag = "webhooks",
    params(("id" = Uuid, Path, description = "The subscription")),
    responses(
        (status = 200, body = RotatedEnvelope),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "No such subscription of the caller's account"),
        (status = 429, body = ErrorBody),
    ),
    security(("bearerAuth" = [])))]
pub async fn rotate_secret(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    PathId(id): PathId,
) -> Result<Json<RotatedEnvelope>, ApiError> {
    let id = params::uuid(&id)?;
    let now = state.clock.now();
    let overlap = state.settings.webhooks.rotation.secret_overlap();
    let rotated = rotation::rotate(&state.db, caller.account_id, id, overlap, now).await?;
    let secret = rotated.secret.clone();
    Ok(Json(RotatedEnvelope {
        data: Rotated {
            previous_secret_expires_at: now + overlap,
            subscription: rotated.into(),
            secret,
        },
    }))
}

/// Sends a finished delivery (succeeded or failed) again, as a new delivery:
/// the same event body, a new id (`X-Vitrina-Delivery`) and `redelivery_of`
/// naming the one it repeats. It is queued and then sent, signed and retried
/// like any delivery, and listed under `deliveries`.
#[utoipa::path(post, operation_id = "redeliverWebhookDelivery",
    path = "/webhooks/{id}/deliveries/{delivery_id}/redeliver", tag = "webhooks",
    params(
        ("id" = Uuid, Path, description = "The subscription"),
        ("delivery_id" = Uuid, Path, description = "The delivery to send again"),
    ),
    responses(
        (status = 202, body = DeliveryEnvelope, description = "The new delivery, queued"),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "No such subscription of the caller's account, or no such delivery of it"),
        (status = 409, body = ErrorBody, description = "`delivery_not_finished`: the delivery is still pending; `subscription_disabled`: the subscription is disabled; `redelivery_limit`: the subscription's redeliveries waiting to be sent are at their limit (20 unless configured otherwise)"),
        (status = 429, body = ErrorBody),
    ),
    security(("bearerAuth" = [])))]
pub async fn redeliver(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    PathIds(id, delivery_id): PathIds,
) -> Result<(StatusCode, Json<DeliveryEnvelope>), ApiError> {
    let (id, delivery_id) = (params::uuid(&id)?, params::uuid(&delivery_id)?);
    let queued = redelivery::redeliver(
        &state.db,
        caller.account_id,
        id,
        delivery_id,
        state
            .settings
            .webhooks
            .redelivery
            .webhook_max_pending_redeliveries,
        state.clock.now(),
    )
    .await?;
    let log = DeliveryLog {
        delivery: queued,
        attempts: Vec::new(),
    };
    Ok((
        StatusCode::ACCEPTED,
        Json(DeliveryEnvelope { data: log.into() }),
    ))
}

/// Sends a signed `ping` event to the subscription now, once, and answers
/// with the outcome, so a receiver's signature check can be tried before a
/// session completes. Signed, checked and timed like a delivery attempt;
/// not stored, not retried, and not counted towards auto-disable. The
/// answer is 200 whether or not the receiver took it: see `delivered`.
#[utoipa::path(post, operation_id = "testWebhook", path = "/webhooks/{id}/test", tag = "webhooks",
    params(("id" = Uuid, Path, description = "The subscription")),
    responses(
        (status = 200, body = PingEnvelope),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "No such subscription of the caller's account"),
        (status = 409, body = ErrorBody, description = "`subscription_disabled`: the subscription is disabled"),
        (status = 429, body = ErrorBody),
    ),
    security(("bearerAuth" = [])))]
pub async fn test(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    PathId(id): PathId,
) -> Result<Json<PingEnvelope>, ApiError> {
    let id = params::uuid(&id)?;
    let report = ping::ping(
        &state.db,
        &state.webhook_sender,
        caller.account_id,
        id,
        state.clock.now(),
    )
    .await?;
    Ok(Json(PingEnvelope {
        data: report.into(),
    }))
}
