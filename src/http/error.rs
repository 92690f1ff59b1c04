//! The error of the HTTP layer and the one place it becomes a response.
//!
//! Which error type belongs where:
//! - handlers and resolvers return [`ApiError`];
//! - the query layer returns [`crate::query::QueryError`], converted here;
//! - webhook subscriptions return `SubscriptionError`, converted where the
//!   extension API serves them (`extension/webhooks.rs`);
//! - jobs and the CLI use [`crate::Error`].
//!
//! REST answers `{"error": {"code", "message"}}` with the documented status;
//! GraphQL puts the same code, upper-cased, in `extensions.code`. Internal
//! causes are logged, never sent: `ApiError` is deliberately not `Display`,
//! so it cannot become a message by accident.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::accounts::Scope;
use crate::query::QueryError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// Missing, malformed, unknown or revoked API key.
    Unauthorized,
    /// A key past its expiry: 401 like any key that no longer works, with
    /// a message that says why.
    KeyExpired {
        at: DateTime<Utc>,
    },
    /// A valid key without the scope the route needs.
    InsufficientScope {
        needed: Scope,
    },
    MissingParameter(String),
    InvalidParameter(String),
    NotFound,
    /// The path takes other methods: `allow` when known here (otherwise
    /// the router adds the `Allow` header).
    MethodNotAllowed {
        allow: Option<&'static str>,
    },
    /// A request body that is not what the endpoint takes (extension API).
    InvalidBody(String),
    /// A request body over the size bound.
    PayloadTooLarge,
    /// A request body slower than the minimum rate; its connection is closed.
    RequestTimeout {
        received_bytes: u64,
        after_ms: u64,
        allowed_ms: u64,
    },
    /// A request body in a media type the endpoint does not read.
    UnsupportedMediaType {
        expected: &'static str,
    },
    /// The request did not finish within its deadline; its work was stopped.
    Timeout {
        after_ms: u64,
        setting: &'static str,
    },
    /// The answer would pass the response size limit: the products it read
    /// reached `reached` bytes of `limit`.
    ResponseTooLarge {
        limit: u64,
        reached: u64,
    },
    /// The request conflicts with the account's state, e.g. the subscription cap.
    Conflict {
        code: &'static str,
        message: String,
    },
    /// The request is understood but cannot be done as sent, e.g. an
    /// `Idempotency-Key` already used with another body.
    Unprocessable {
        code: &'static str,
        message: String,
    },
    RateLimited {
        retry_after: i64,
    },
    QuotaExceeded {
        retry_after: i64,
    },
    /// The account used more database time than its budget lets it (`limits::db_time`).
    DbTimeExceeded {
        limit_ms: u64,
        retry_after: i64,
    },
    /// A client address with its most connections open opened another.
    TooManyConnections {
        open: u64,
        max: u64,
    },
    /// The service cannot answer now, for a reason that soon passes.
    Unavailable(Unavailable),
    /// Something unexpected; the cause is logged where it is created.
    Internal,
}

impl ApiError {
    /// The snake_case error code of the REST body.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Unauthorized | ApiError::KeyExpired { .. } => "unauthorized",
            ApiError::InsufficientScope { .. } => "insufficient_scope",
            ApiError::MissingParameter(_) => "missing_parameter",
            ApiError::InvalidParameter(_) => "invalid_parameter",
            ApiError::NotFound => "not_found",
            ApiError::MethodNotAllowed { .. } => "method_not_allowed",
            ApiError::InvalidBody(_) => "invalid_body",
            ApiError::PayloadTooLarge => "payload_too_large",
            ApiError::RequestTimeout { .. } => "request_timeout",
            ApiError::UnsupportedMediaType { .. } => "unsupported_media_type",
            ApiError::Timeout { .. } => "timeout",
            ApiError::ResponseTooLarge { .. } => "response_too_large",
            ApiError::Conflict { code, .. } | ApiError::Unprocessable { code, .. } => code,
            ApiError::RateLimited { .. } | ApiError::DbTimeExceeded { .. } => "rate_limited",
            ApiError::QuotaExceeded { .. } => "quota_exceeded",
            ApiError::TooManyConnections { .. } => "too_many_connections",
            ApiError::Unavailable(_) => "unavailable",
            ApiError::Internal => "internal_error",
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Unauthorized | ApiError::KeyExpired { .. } => StatusCode::UNAUTHORIZED,
            ApiError::InsufficientScope { .. } => StatusCode::FORBIDDEN,
            ApiError::MissingParameter(_)
            | ApiError::InvalidParameter(_)
            | ApiError::InvalidBody(_) => StatusCode::BAD_REQUEST,
            // The request is well formed; what it asks for is too large.
            ApiError::ResponseTooLarge { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::RequestTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            ApiError::UnsupportedMediaType { .. } => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Timeout { .. } | ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Conflict { .. } => StatusCode::CONFLICT,
            ApiError::Unprocessable { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::RateLimited { .. }
            | ApiError::DbTimeExceeded { .. }
            | ApiError::QuotaExceeded { .. }
            | ApiError::TooManyConnections { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// One human sentence.
    pub fn message(&self) -> String {
        match self {
            ApiError::Unauthorized => {
                "A valid API key is required: send Authorization: Bearer <API_KEY>.".into()
            }
            ApiError::KeyExpired { at } => format!(
                "The API key expired at {}; ask for a new one.",
                at.to_rfc3339_opts(SecondsFormat::Secs, true)
            ),
            ApiError::InsufficientScope { needed } => format!(
                "This API key lacks the {needed} scope, which this request needs; use a key \
                 made with it."
            ),
            ApiError::MissingParameter(m)
            | ApiError::InvalidParameter(m)
            | ApiError::InvalidBody(m) => sentence(m),
            ApiError::Conflict { message, .. } | ApiError::Unprocessable { message, .. } => {
                sentence(message)
            }
            ApiError::PayloadTooLarge => {
                "The request body is larger than this endpoint accepts.".into()
            }
            ApiError::RequestTimeout {
                received_bytes,
                after_ms,
                allowed_ms,
            } => format!(
                "The request body arrived too slowly: {received_bytes} bytes in {after_ms} ms, \
                 where {allowed_ms} ms were allowed for them (VITRINA_HTTP_BODY_TIMEOUT_MS plus \
                 1 s per VITRINA_HTTP_BODY_MIN_RATE bytes)."
            ),
            ApiError::UnsupportedMediaType { expected } => {
                format!("The request body must be sent as {expected}.")
            }
            ApiError::Timeout { after_ms, setting } => {
                format!(
                    "The request did not finish within its deadline of {after_ms} ms ({setting})."
                )
            }
            ApiError::ResponseTooLarge { limit, reached } => format!(
                "The answer would be larger than the response limit of {limit} bytes \
                 (VITRINA_MAX_RESPONSE_MB): it reached {reached} bytes when it was stopped; ask \
                 for fewer products (a smaller page_size, or first in GraphQL)."
            ),
            ApiError::NotFound => "The requested resource does not exist.".into(),
            ApiError::MethodNotAllowed { allow: Some(allow) } => {
                format!("Only {allow} is allowed here.")
            }
            ApiError::MethodNotAllowed { allow: None } => {
                "This method is not allowed here; the Allow header lists those that are.".into()
            }
            ApiError::RateLimited { retry_after } => {
                format!("The per-minute rate limit is exceeded; retry in {retry_after} seconds.")
            }
            ApiError::QuotaExceeded { .. } => {
                "The daily data quota is exceeded; it resets at 00:00 UTC.".into()
            }
            ApiError::DbTimeExceeded {
                limit_ms,
                retry_after,
            } => format!(
                "This account's requests used more database time than its {limit_ms} ms a \
                 minute allow (VITRINA_DB_TIME_PER_MINUTE_MS, at most VITRINA_DB_TIME_BURST_MS \
                 at once); retry in {retry_after} seconds."
            ),
            ApiError::TooManyConnections { open, max } => format!(
                "This client address has {open} connections open, the most one address may have \
                 (VITRINA_HTTP_MAX_CONNECTIONS_PER_CLIENT is {max}); reuse or close one."
            ),
            ApiError::Unavailable(Unavailable::Database) => format!(
                "The database is briefly unavailable; retry in {UNAVAILABLE_RETRY_AFTER} seconds."
            ),
            ApiError::Unavailable(Unavailable::ConnectionCap { max }) => format!(
                "The server has all its {max} connections open (VITRINA_HTTP_MAX_CONNECTIONS), \
                 so this connection answers only /healthz and /readyz; retry in \
                 {UNAVAILABLE_RETRY_AFTER} seconds."
            ),
            ApiError::Internal => "An unexpected error occurred.".into(),
        }
    }

    /// Seconds a client is told to wait (`Retry-After`) before it asks again.
    pub fn retry_after(&self) -> Option<i64> {
        match self {
            ApiError::RateLimited { retry_after }
            | ApiError::QuotaExceeded { retry_after }
            | ApiError::DbTimeExceeded { retry_after, .. } => Some(*retry_after),
            ApiError::TooManyConnections { .. } | ApiError::Unavailable(_) => {
                Some(UNAVAILABLE_RETRY_AFTER)
            }
            _ => None,
        }
    }

    /// Logs an unexpected failure and hides it behind [`ApiError::Internal`].
    pub fn internal(cause: impl std::fmt::Display) -> ApiError {
        tracing::error!(error = %cause, "request failed");
        ApiError::Internal
    }
}

/// Why the service cannot answer now ([`ApiError::Unavailable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unavailable {
    /// The database cannot be reached, refuses connections, is locked by
    /// another process, or the pool has no connection to give in time.
    Database,
    /// Every connection slot is taken: the connection was admitted on the
    /// slice kept for the probes.
    ConnectionCap { max: u64 },
}

/// The `Retry-After` of the refusals that pass within seconds: the database
/// restarting or locked, connections held.
pub const UNAVAILABLE_RETRY_AFTER: i64 = 1;

fn sentence(text: &str) -> String {
    let mut out = text.to_owned();
    if !out.ends_with('.') {
        out.push('.');
    }
    out
}

impl From<&QueryError> for ApiError {
    fn from(err: &QueryError) -> Self {
        match err {
            QueryError::Missing(m) => ApiError::MissingParameter(m.clone()),
            QueryError::Invalid(m) => ApiError::InvalidParameter(m.clone()),
            QueryError::NotFound => ApiError::NotFound,
            QueryError::TooLarge { limit, reached } => ApiError::ResponseTooLarge {
                limit: *limit,
                reached: *reached,
            },
            QueryError::Database(e) => e.into(),
        }
    }
}

impl From<QueryError> for ApiError {
    fn from(err: QueryError) -> Self {
        ApiError::from(&err)
    }
}

/// A query-layer error shared by the requests a dataloader batched.
impl From<std::sync::Arc<QueryError>> for ApiError {
    fn from(err: std::sync::Arc<QueryError>) -> Self {
        ApiError::from(&*err)
    }
}

/// A database that is briefly out of reach is 503 `unavailable` (logged as
/// a warning); any other database error is unexpected.
impl From<sea_orm::DbErr> for ApiError {
    fn from(err: sea_orm::DbErr) -> Self {
        ApiError::from(&err)
    }
}

impl From<&sea_orm::DbErr> for ApiError {
    fn from(err: &sea_orm::DbErr) -> Self {
        if crate::db::is_unavailable(err) {
            tracing::warn!(error = %err, "the database is unavailable; answered 503");
            ApiError::Unavailable(Unavailable::Database)
        } else {
            ApiError::internal(err)
        }
    }
}

/// The body of every REST error.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorDetail {
    /// snake_case code, e.g. `invalid_parameter`.
    pub code: String,
    /// One human sentence.
    pub message: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code().into(),
                message: self.message(),
            },
        };
        let mut response = (self.status(), Json(body)).into_response();
        let headers = response.headers_mut();
        match self {
            ApiError::Unauthorized => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            // RFC 6750, section 3.
            ApiError::KeyExpired { .. } => {
                let challenge =
                    r#"Bearer error="invalid_token", error_description="The API key expired""#;
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static(challenge),
                );
            }
            ApiError::InsufficientScope { needed } => {
                let challenge = format!(r#"Bearer error="insufficient_scope", scope="{needed}""#);
                if let Ok(value) = HeaderValue::from_str(&challenge) {
                    headers.insert(header::WWW_AUTHENTICATE, value);
                }
            }
            ApiError::MethodNotAllowed { allow: Some(allow) } => {
                headers.insert(header::ALLOW, HeaderValue::from_static(allow));
            }
            ApiError::RequestTimeout { .. } | ApiError::TooManyConnections { .. } => {
                headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            _ => {}
        }
        if let Some(seconds) = self.retry_after() {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}
