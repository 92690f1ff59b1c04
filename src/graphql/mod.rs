//! GraphQL (`/graphql`): the same data as REST v1 through the same query
//! layer, with dataloaders, Relay connections over keyset cursors, depth and
//! complexity limits, and GraphiQL for browsers.
//!
//! Over HTTP: POST with JSON, GET for queries; the response is
//! `application/graphql-response+json` when the client accepts it (then a
//! request that cannot run is a 400), else `application/json`. Batching is
//! off unless enabled. A request without a valid key is refused with HTTP 401
//! and `extensions.code = "UNAUTHORIZED"`; every request counts against the
//! per-minute rate limit.

mod connection;
mod error;
mod graphiql;
mod loaders;
mod page;
mod product;
mod query;
mod scalars;
mod seller;
mod session;
mod subscription;

use std::sync::Arc;

use async_graphql::extensions::Analyzer;
use async_graphql::http::ALL_WEBSOCKET_PROTOCOLS;
use async_graphql::{BatchRequest, BatchResponse, Data, EmptyMutation, Schema};
use async_graphql_axum::{GraphQLBatchRequest, GraphQLProtocol, GraphQLWebSocket};
use axum::Router;
use axum::extract::State;
use axum::extract::WebSocketUpgrade;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;

use crate::accounts::Caller;
use crate::config::GraphqlConfig;
use crate::http::{ApiError, access};
use crate::query::keyset::{DEFAULT_PAGE, MAX_PAGE};
use crate::server::AppState;

pub use error::gql;
use loaders::Loaders;
use query::QueryRoot;
pub use scalars::Timestamp;
use subscription::SubscriptionRoot;

pub type VitrinaSchema = Schema<QueryRoot, EmptyMutation, SubscriptionRoot>;

/// What resolvers reach through the context.
pub struct RequestData {
    pub state: AppState,
    pub caller: Caller,
    pub loaders: Loaders,
}

fn request<'a>(ctx: &async_graphql::Context<'a>) -> &'a RequestData {
    ctx.data_unchecked::<Arc<RequestData>>()
}

/// Complexity of a connection field: its children times the page size.
pub fn connection_cost(first: Option<i32>, last: Option<i32>, child: usize) -> usize {
    let size = first
        .or(last)
        .unwrap_or(DEFAULT_PAGE as i32)
        .clamp(0, MAX_PAGE as i32) as usize;
    size.saturating_mul(child).saturating_add(1)
}

/// The schema with the configured limits. The cost of each query is reported
/// in `extensions.analyzer` (`complexity`, `depth`).
pub fn schema(config: &GraphqlConfig) -> VitrinaSchema {
    Schema::build(QueryRoot, EmptyMutation, SubscriptionRoot)
        .limit_depth(config.max_depth)
        .limit_complexity(config.max_complexity)
        .extension(Analyzer)
        .finish()
}

/// The SDL checked in as `schema.graphql`.
pub fn sdl() -> String {
    schema(&GraphqlConfig::default()).sdl()
}

/// Where a local copy of the GraphiQL assets is served, when configured.
const LOCAL_ASSETS: &str = "/graphiql/assets";

pub fn router(config: &GraphqlConfig) -> Router<AppState> {
    let router = Router::new()
        .route("/graphql", get(get_graphql).post(post_graphql))
        .route("/graphql/ws", get(subscribe));
    match &config.graphiql_assets_dir {
        Some(dir) => router.nest_service(LOCAL_ASSETS, tower_http::services::ServeDir::new(dir)),
        None => router,
    }
}

/// The base address GraphiQL loads its assets from.
fn graphiql_assets(config: &GraphqlConfig) -> &str {
    if config.graphiql_assets_dir.is_some() {
        LOCAL_ASSETS
    } else {
        &config.graphiql_assets
    }
}

/// Subscriptions over WebSocket. The key comes in the `Authorization` header
/// of the upgrade request or, from browsers, in the `connection_init`
/// payload (`{"Authorization": "Bearer <key>"}`); a connection counts as one
/// request against the rate limit.
async fn subscribe(
    State(state): State<AppState>,
    headers: HeaderMap,
    protocol: GraphQLProtocol,
    upgrade: WebSocketUpgrade,
) -> Response {
    let schema = (*state.graphql).clone();
    upgrade
        .protocols(ALL_WEBSOCKET_PROTOCOLS)
        .on_upgrade(move |socket| {
            GraphQLWebSocket::new(socket, schema, protocol)
                .on_connection_init(move |payload| async move {
                    let mut headers = headers;
                    if let Some(value) = payload
                        .get("Authorization")
                        .and_then(|v| v.as_str())
                        .and_then(|v| HeaderValue::from_str(v).ok())
                    {
                        headers.insert(header::AUTHORIZATION, value);
                    }
                    let admission = access::admit(&state, &headers)
                        .await
                        .map_err(|(error, _)| gql(error))?;
                    let loaders = Loaders::new(&state.db);
                    let mut data = Data::default();
                    data.insert(Arc::new(RequestData {
                        state,
                        caller: admission.caller,
                        loaders,
                    }));
                    Ok(data)
                })
                .serve()
        })
}

fn accepts(headers: &HeaderMap, media: &str) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains(media))
}

const GRAPHQL_RESPONSE: &str = "application/graphql-response+json";

/// Browsers get GraphiQL; a query string is executed as a query.
async fn get_graphql(State(state): State<AppState>, headers: HeaderMap, uri: Uri) -> Response {
    let query = uri.query().unwrap_or_default();
    if query.is_empty() && accepts(&headers, "text/html") {
        return Html(graphiql::page(graphiql_assets(&state.settings.graphql))).into_response();
    }
    match async_graphql::http::parse_query_string(query) {
        Ok(request) => execute(&state, &headers, BatchRequest::Single(request)).await,
        Err(e) => request_error(
            &headers,
            StatusCode::BAD_REQUEST,
            &format!("Unreadable GraphQL request: {e}."),
        ),
    }
}

async fn post_graphql(
    State(state): State<AppState>,
    headers: HeaderMap,
    batch: GraphQLBatchRequest,
) -> Response {
    execute(&state, &headers, batch.into_inner()).await
}

async fn execute(state: &AppState, headers: &HeaderMap, batch: BatchRequest) -> Response {
    if matches!(batch, BatchRequest::Batch(_)) && !state.settings.graphql.batching {
        return request_error(
            headers,
            StatusCode::BAD_REQUEST,
            "Batched requests are not enabled on this server.",
        );
    }
    let admission = match access::admit(state, headers).await {
        Ok(admission) => admission,
        Err((error, rate)) => {
            let mut response = api_error(headers, &error);
            if let Some(rate) = rate {
                access::rate_headers(&rate, response.headers_mut());
            }
            return response;
        }
    };
    let data = Arc::new(RequestData {
        state: state.clone(),
        caller: admission.caller,
        loaders: Loaders::new(&state.db),
    });
    let batch = match batch {
        BatchRequest::Single(r) => BatchRequest::Single(r.data(data)),
        BatchRequest::Batch(rs) => {
            BatchRequest::Batch(rs.into_iter().map(|r| r.data(data.clone())).collect())
        }
    };
    let response = state.graphql.execute_batch(batch).await;
    let mut http = respond(headers, &response);
    access::rate_headers(&admission.rate, http.headers_mut());
    http
}

/// Whether the request never reached execution (unparsable, or refused by
/// validation, depth or complexity). Such errors carry no `path`; an error
/// raised while executing always names its field, even when it nulls `data`.
fn request_failed(response: &async_graphql::Response) -> bool {
    response.data == async_graphql::Value::Null
        && !response.errors.is_empty()
        && response.errors.iter().all(|e| e.path.is_empty())
}

/// A response as JSON; a request that never executed has no `data` entry,
/// and every error carries an `extensions.code`.
fn response_json(response: &async_graphql::Response) -> serde_json::Value {
    let mut json = serde_json::to_value(response).unwrap_or_default();
    if let Some(errors) = json.get_mut("errors").and_then(|e| e.as_array_mut()) {
        errors.iter_mut().for_each(add_missing_code);
    }
    if request_failed(response)
        && let Some(object) = json.as_object_mut()
    {
        object.remove("data");
    }
    json
}

/// async-graphql's own errors (parsing, validation, limits) have no code:
/// a malformed argument is INVALID_PARAMETER as on REST, a query over the
/// depth or complexity limit QUERY_TOO_COMPLEX, any other malformed request
/// GRAPHQL_VALIDATION_FAILED.
fn add_missing_code(error: &mut serde_json::Value) {
    if error.pointer("/extensions/code").is_some() {
        return;
    }
    let message = error["message"].as_str().unwrap_or_default();
    let code = if message.starts_with("Invalid value for argument")
        || message.contains("Failed to parse")
    {
        "INVALID_PARAMETER"
    } else if message.contains("too deep") || message.contains("too complex") {
        "QUERY_TOO_COMPLEX"
    } else {
        "GRAPHQL_VALIDATION_FAILED"
    };
    if let Some(object) = error.as_object_mut() {
        let extensions = object
            .entry("extensions")
            .or_insert_with(|| serde_json::json!({}));
        extensions["code"] = code.into();
    }
}

/// Serializes a response in the media type the client accepts. With
/// `application/graphql-response+json` a request that never executed is a
/// 400; errors during execution stay a 200 with partial (or null) data.
fn respond(headers: &HeaderMap, response: &BatchResponse) -> Response {
    let modern = accepts(headers, GRAPHQL_RESPONSE);
    let (failed_whole, body) = match response {
        BatchResponse::Single(r) => (request_failed(r), response_json(r)),
        BatchResponse::Batch(rs) => (false, rs.iter().map(response_json).collect()),
    };
    let status = if modern && failed_whole {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    let media = if modern {
        GRAPHQL_RESPONSE
    } else {
        "application/json"
    };
    let mut http = (
        status,
        [(header::CONTENT_TYPE, HeaderValue::from_static(media))],
        body.to_string(),
    )
        .into_response();
    // Headers resolvers set, such as the quota of metered fields.
    http.headers_mut().extend(response.http_headers());
    http
}

fn error_body(message: &str, code: &str) -> serde_json::Value {
    serde_json::json!({ "errors": [{ "message": message, "extensions": { "code": code } }] })
}

/// A refusal before execution (auth, rate limit), with REST's status and headers.
fn api_error(headers: &HeaderMap, error: &ApiError) -> Response {
    let mut response = error.clone().into_response();
    let body = error_body(&error.message(), &error.code().to_uppercase());
    let media = if accepts(headers, GRAPHQL_RESPONSE) {
        GRAPHQL_RESPONSE
    } else {
        "application/json"
    };
    *response.body_mut() = body.to_string().into();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(media));
    response
}

fn request_error(headers: &HeaderMap, status: StatusCode, message: &str) -> Response {
    let body = error_body(message, "BAD_REQUEST");
    let media = if accepts(headers, GRAPHQL_RESPONSE) {
        GRAPHQL_RESPONSE
    } else {
        "application/json"
    };
    (
        status,
        [(header::CONTENT_TYPE, HeaderValue::from_static(media))],
        body.to_string(),
    )
        .into_response()
}
