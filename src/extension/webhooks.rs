//! `GET/POST /extension/v1/webhooks`, `DELETE /extension/v1/webhooks/{id}`,
//! `GET /extension/v1/webhooks/{id}/deliveries`,
//! `POST /extension/v1/webhooks/{id}/rotate-secret`: the settings page's
//! webhook section. Every call is scoped to the caller's account; a signing
//! secret appears only in the answer to the POST that creates it (creating
//! the subscription, or rotating its secret).

use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use axum::{Extension, Json, Router};
use chrono::{DateTime, Utc};
use entity::{DeliveryStatus, SubscriptionStatus, webhook_attempt, webhook_subscription};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::accounts::Caller;
use crate::http::ApiError;
use crate::http::error::ErrorBody;
use crate::rest::params::{self, PathId};
use crate::state::AppState;
use crate::views::envelope;
use crate::webhooks::rotation;
use crate::webhooks::subscriptions::{self, DeliveryLog, SubscriptionError};
use crate::webhooks::target::TargetPolicy;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/webhooks", get(list).post(create))
        .route("/webhooks/{id}", delete(disable))
        .route("/webhooks/{id}/deliveries", get(deliveries))
        .route("/webhooks/{id}/rotate-secret", post(rotate_secret))
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

/// A subscription as shown to its owner: never the secret. Fields that
/// may be null are always sent, so the document marks them required.
#[derive(Debug, Serialize, ToSchema)]
pub struct Subscription {
    id: Uuid,
    url: String,
    status: SubscriptionStatus,
    consecutive_failures: i32,
    created_at: DateTime<Utc>,
    #[schema(required = true)]
    disabled_at: Option<DateTime<Utc>>,
}

impl From<webhook_subscription::Model> for Subscription {
    fn from(s: webhook_subscription::Model) -> Self {
        Subscription {
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

/// How a refused subscription call is answered.
impl From<SubscriptionError> for ApiError {
    fn from(err: SubscriptionError) -> Self {
        match err {
            SubscriptionError::Target(e) => ApiError::InvalidParameter(format!("url refused: {e}")),
            SubscriptionError::LimitReached => ApiError::Conflict {
                code: "subscription_limit",
                message: err.to_string(),
            },
            SubscriptionError::NotFound => ApiError::NotFound,
            SubscriptionError::Database(e) => ApiError::internal(e),
        }
    }
}

/// A new subscription.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateBody {
    /// Where deliveries are POSTed: a public `https` address.
    url: String,
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
        (status = 400, body = ErrorBody, description = "Not JSON, or a target that is not a public https address"),
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
    let policy = TargetPolicy::from(&state.settings.webhooks);
    let created = subscriptions::create(
        &state.db,
        caller.account_id,
        &body.url,
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
    let overlap = state.settings.webhooks.secret_overlap();
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
