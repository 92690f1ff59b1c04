//! GraphQL responses over HTTP: status, media type and a JSON body written in
//! one pass straight from async-graphql's values (field order kept); and
//! the quota, error codes and cost of responses sent over the WebSocket.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextExecute, NextParseQuery, NextPrepareRequest,
    NextSubscribe, NextValidation,
};
use async_graphql::parser::types::ExecutableDocument;
use async_graphql::{BatchResponse, ServerError, ServerResult, ValidationResult, Value, Variables};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{BoxStream, StreamExt};
use headers::ETag;
use serde::Serialize;

use super::document_limits::{self, RequestLimits};
use super::parsed;
use crate::graphql::cost::analysis::Validated;
use crate::graphql::cost::quota_charge::Meter;
use crate::graphql::cost::scans::CostBook;
use crate::graphql::{RequestData, cost};
use crate::http::error::Unavailable;
use crate::http::{ApiError, access, conditional};
use crate::limits::RateDecision;
use crate::query::budget::ResponseBudget;
use crate::views::size::to_json_within;

const GRAPHQL_RESPONSE: &str = "application/graphql-response+json";

pub fn accepts(headers: &HeaderMap, media: &str) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains(media))
}

/// The media type the client accepts.
pub(super) fn media_type(headers: &HeaderMap) -> &'static str {
    if accepts(headers, GRAPHQL_RESPONSE) {
        GRAPHQL_RESPONSE
    } else {
        "application/json"
    }
}

/// One response's JSON; a request that never executed has no `data` entry.
#[derive(Serialize)]
struct Body<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a Value>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    errors: &'a [ServerError],
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    extensions: &'a BTreeMap<String, Value>,
}

impl<'a> Body<'a> {
    fn of(response: &'a async_graphql::Response) -> Self {
        Body {
            data: (!request_failed(response)).then_some(&response.data),
            errors: &response.errors,
            extensions: &response.extensions,
        }
    }
}

/// The tag of an answer without errors, in the media type the client
/// accepts (`http::conditional`); `extensions` are left out, since they
/// report the caller's budget, which every request changes.
pub fn tag(headers: &HeaderMap, response: &async_graphql::Response) -> Option<ETag> {
    if !response.errors.is_empty() {
        return None;
    }
    tag_of_data(headers, &response.data)
}

/// The tag of an answer whose `data` is `data`, as [`tag`] has it: `data`
/// may be the value or its JSON already written (a `RawValue`), which
/// give the same bytes.
pub fn tag_of_data<T: Serialize + ?Sized>(headers: &HeaderMap, data: &T) -> Option<ETag> {
    #[derive(Serialize)]
    struct DataOnly<'a, T: ?Sized> {
        data: &'a T,
    }
    let mut representation = media_type(headers).as_bytes().to_vec();
    serde_json::to_writer(&mut representation, &DataOnly { data }).ok()?;
    conditional::tag(&representation)
}

/// An operation whose products passed its answer's byte budget is refused
/// whole, as one over the quota is: no data, one `RESPONSE_TOO_LARGE` error,
/// and no quota charged for rows it does not send. Its products were
/// counted as they were read, so it held at most one more than the budget.
pub fn refuse_past_budget(
    response: &mut async_graphql::Response,
    budget: &ResponseBudget,
    meter: &Meter,
) {
    if let Some(refusal) = budget.exceeded() {
        meter.discard();
        response.data = Value::Null;
        response.errors = vec![server_error(&ApiError::from(refusal))];
    }
}

/// Whether the request never reached execution (unparsable, or refused by
/// validation, depth or complexity). Such errors carry no `path`; an error
/// raised while executing always names its field, even when it nulls `data`.
fn request_failed(response: &async_graphql::Response) -> bool {
    response.data == Value::Null
        && !response.errors.is_empty()
        && response.errors.iter().all(|e| e.path.is_empty())
}

/// What every operation sent over the WebSocket gets, as over HTTP: it
/// counts against the caller's per-minute rate limit, its document is held
/// to the same limits, a query runs within the same deadline, the daily
/// quota is charged for its metered lists at once ([`Meter`]), each error
/// carries an `extensions.code` and each response the request's cost in
/// `extensions.analyzer` and `extensions.cost` (`cost/mod.rs`). A subscription's every update is charged as a
/// response of its own.
pub struct OverWebSocket(pub RequestLimits, pub Arc<CostBook>);

impl ExtensionFactory for OverWebSocket {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(OverWebSocketExtension {
            validated: Validated::new(self.0, self.1.clone()),
            meter: Arc::default(),
            rate: Arc::default(),
            operation: Arc::default(),
        })
    }
}

struct OverWebSocketExtension {
    validated: Validated,
    meter: Arc<Meter>,
    /// Where the caller stood once this operation was counted.
    rate: Arc<Mutex<Option<RateDecision>>>,
    /// The operation's own request data (its loaders and byte budget).
    operation: Arc<Mutex<Option<Arc<RequestData>>>>,
}

#[async_trait::async_trait]
impl Extension for OverWebSocketExtension {
    async fn prepare_request(
        &self,
        ctx: &ExtensionContext<'_>,
        request: async_graphql::Request,
        next: NextPrepareRequest<'_>,
    ) -> ServerResult<async_graphql::Request> {
        // The connection's caller, admitted when it opened; an operation
        // sent before that is refused.
        let data = ctx
            .data_opt::<Arc<RequestData>>()
            .ok_or_else(|| server_error(&ApiError::Unauthorized))?;
        let rate = access::count(data.state(), data.caller())
            .await
            .map_err(|(error, _)| server_error(&error))?;
        *lock(&self.rate) = Some(rate);
        // Loaders and a byte budget of the operation's own, in place of
        // the connection's.
        let operation = Arc::new(data.for_operation());
        *lock(&self.operation) = Some(operation.clone());
        let mut request = request.data(self.meter.clone()).data(operation);
        // Parsed here, as the parse cache parses over HTTP, so that a
        // document that does not parse is coded by why.
        self.validated.limits().check_text(&request.query)?;
        request.set_parsed_query(parsed::parse(&request.query)?);
        self.validated.admit(ctx, request, next).await
    }

    async fn parse_query(
        &self,
        ctx: &ExtensionContext<'_>,
        query: &str,
        variables: &Variables,
        next: NextParseQuery<'_>,
    ) -> ServerResult<ExecutableDocument> {
        self.validated.parse(ctx, query, variables, next).await
    }

    async fn execute(
        &self,
        ctx: &ExtensionContext<'_>,
        operation_name: Option<&str>,
        next: NextExecute<'_>,
    ) -> async_graphql::Response {
        let deadline = self.validated.limits().deadline;
        match tokio::time::timeout(deadline, next.run(ctx, operation_name)).await {
            Ok(mut response) => {
                if let Some(operation) = lock(&self.operation).as_ref() {
                    refuse_past_budget(&mut response, operation.budget(), &self.meter);
                }
                response
            }
            Err(_) => {
                // Cut off: it sends no rows, so it is charged none.
                self.meter.discard();
                let timeout = server_error(&document_limits::timeout(deadline));
                async_graphql::Response::from_errors(vec![timeout])
            }
        }
    }

    async fn validation(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<ServerError>> {
        self.validated.validate(ctx, next).await
    }

    fn subscribe<'s>(
        &self,
        ctx: &ExtensionContext<'_>,
        stream: BoxStream<'s, async_graphql::Response>,
        next: NextSubscribe<'_>,
    ) -> BoxStream<'s, async_graphql::Response> {
        // The stream validates its request when first polled, after this.
        let validated = self.validated.clone();
        let meter = self.meter.clone();
        let rate = self.rate.clone();
        // The connection's caller, which every operation on it runs as.
        let data = ctx.data_opt::<Arc<RequestData>>().cloned();
        let operation = lock(&self.operation).clone();
        next.run(ctx, stream)
            .then(move |mut response| {
                let (validated, meter, data) = (validated.clone(), meter.clone(), data.clone());
                let rate = *lock(&rate);
                // Each update is an answer of its own, within its own budget.
                if let Some(budget) = operation.as_ref().map(|o| o.budget()) {
                    refuse_past_budget(&mut response, budget, &meter);
                    budget.renew();
                }
                async move {
                    let (mut response, quota) = match &data {
                        Some(data) => meter.charge(data, response).await,
                        None => (response, None),
                    };
                    validated.code_rest(&mut response.errors);
                    if let Some(analyzer) = validated.cost() {
                        response.extensions.insert("analyzer".to_owned(), analyzer);
                    }
                    if let Some(rate) = &rate {
                        let limits = validated.limits();
                        cost::report(&mut response, limits, rate, quota.as_ref());
                    }
                    response
                }
            })
            .boxed()
    }
}

/// Serializes a response in the media type the client accepts; every error
/// carries an `extensions.code`, set where it arose (`error_codes.rs`). With
/// `application/graphql-response+json` a request that never executed is a
/// 400; errors during execution stay a 200 with partial (or null) data,
/// unless the database was unavailable for one of them: then the answer is
/// 503 with `Retry-After`, as a request past its deadline, so that clients
/// and proxies retry it. The body is written only up to `limit` bytes: past
/// it, the answer is one `RESPONSE_TOO_LARGE` error (its products were
/// counted as they were read; this holds the rest of what it shows to the
/// limit too).
pub fn respond(headers: &HeaderMap, response: BatchResponse, limit: u64) -> Response {
    let (failed_whole, unavailable, body) = match &response {
        BatchResponse::Single(r) => (
            request_failed(r),
            unavailable(r),
            to_json_within(&Body::of(r), limit),
        ),
        BatchResponse::Batch(rs) => (
            false,
            rs.iter().any(unavailable),
            to_json_within(&rs.iter().map(Body::of).collect::<Vec<_>>(), limit),
        ),
    };
    let body = body.unwrap_or_else(|reached| {
        let refusal = ApiError::ResponseTooLarge { limit, reached };
        let refused = Body {
            data: Some(&Value::Null),
            errors: &[server_error(&refusal)],
            extensions: &BTreeMap::new(),
        };
        serde_json::to_vec(&refused).unwrap_or_default()
    });
    let media = media_type(headers);
    let unavailable = unavailable.then_some(ApiError::Unavailable(Unavailable::Database));
    let status = if let Some(error) = &unavailable {
        error.status()
    } else if media == GRAPHQL_RESPONSE && failed_whole {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    let mut http = (
        status,
        [(header::CONTENT_TYPE, HeaderValue::from_static(media))],
        body,
    )
        .into_response();
    // Headers resolvers set, such as the quota of metered fields.
    http.headers_mut().extend(response.http_headers());
    if let Some(seconds) = unavailable.and_then(|error| error.retry_after()) {
        http.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    http
}

/// Whether an error of `response` is the database being unavailable.
fn unavailable(response: &async_graphql::Response) -> bool {
    let code = ApiError::Unavailable(Unavailable::Database)
        .code()
        .to_uppercase();
    response.errors.iter().any(|error| {
        error
            .extensions
            .as_ref()
            .and_then(|extensions| extensions.get("code"))
            .is_some_and(|value| *value == Value::String(code.clone()))
    })
}

/// One operation's value: a poisoned lock still holds a whole value.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A refusal as a GraphQL error with its code (and `retryAfter`).
pub fn server_error(error: &ApiError) -> ServerError {
    let error = crate::graphql::gql(error.clone());
    let mut server_error = ServerError::new(error.message, None);
    server_error.extensions = error.extensions;
    server_error
}

fn error_body(message: &str, code: &str) -> String {
    serde_json::json!({ "errors": [{ "message": message, "extensions": { "code": code } }] })
        .to_string()
}

/// A refusal before execution (auth, rate limit), with REST's status and headers.
pub fn api_error(headers: &HeaderMap, error: &ApiError) -> Response {
    let mut response = error.clone().into_response();
    // The same error as a refusal during execution: code and `retryAfter`.
    let body = serde_json::json!({ "errors": [server_error(error)] }).to_string();
    *response.body_mut() = body.into();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(media_type(headers)),
    );
    response
}

/// A request refused whole before any of its operations was costed or run
/// (a batch over a limit): HTTP 400 whatever the media type, with the one
/// error that says why.
pub fn refused_whole(headers: &HeaderMap, error: ServerError) -> Response {
    let body = serde_json::json!({ "errors": [error] }).to_string();
    let media = HeaderValue::from_static(media_type(headers));
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, media)],
        body,
    )
        .into_response()
}

pub fn request_error(headers: &HeaderMap, status: StatusCode, message: &str) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static(media_type(headers)),
        )],
        error_body(message, "BAD_REQUEST"),
    )
        .into_response()
}
