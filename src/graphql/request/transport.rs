//! GraphQL over HTTP and WebSocket: the routes, the handlers, and a
//! request's way from admission through cost analysis to its response.
//!
//! Over HTTP: POST with JSON, GET for queries; the response is
//! `application/graphql-response+json` when the client accepts it (then a
//! request that cannot run is a 400), else `application/json`. Batching is
//! off unless enabled. A request without a valid key is refused with HTTP 401
//! and `extensions.code = "UNAUTHORIZED"`; every request counts against the
//! per-minute rate limit.

use std::sync::Arc;

use async_graphql::http::ALL_WEBSOCKET_PROTOCOLS;
use async_graphql::{BatchRequest, BatchResponse, Data, ParseRequestError};
use async_graphql_axum::rejection::GraphQLRejection;
use async_graphql_axum::{GraphQLBatchRequest, GraphQLProtocol, GraphQLWebSocket};
use axum::Router;
use axum::extract::WebSocketUpgrade;
use axum::extract::ws::{CloseFrame, Message, close_code};
use axum::extract::{FromRequest, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use futures_util::future::join_all;
use futures_util::{SinkExt, StreamExt};

use super::cached;
use super::document_limits;
use super::persisted;
use super::response::{self, accepts, api_error, refused_whole, request_error, respond};
use crate::accounts::Scope;
use crate::cache::versions::Stamp;
use crate::cache::{self, Answer, Sharing};
use crate::graphql::cost::quota_charge::Meter;
use crate::graphql::{Costed, RequestData, Schemas, cost, gql};
use crate::http::conditional::{mark, not_modified_if_fresh};
use crate::http::{ApiError, access};
use crate::limits::RateDecision;
use crate::state::AppState;

/// What the GraphQL endpoints serve with: the application state, and the
/// schemas that execute requests (built once per router).
#[derive(Clone)]
struct Endpoint {
    state: AppState,
    schemas: Arc<Schemas>,
}

/// `/graphql` and `/graphql/ws`.
pub fn router(state: AppState) -> Router<AppState> {
    let schemas = Arc::new(Schemas::new(&state));
    Router::new()
        .route(
            "/graphql",
            get(get_graphql)
                .post(post_graphql)
                .fallback(|headers: HeaderMap| async move { wrong_method(&headers, "GET, POST") }),
        )
        .route(
            "/graphql/ws",
            get(subscribe)
                .fallback(|headers: HeaderMap| async move { wrong_method(&headers, "GET") }),
        )
        .with_state(Endpoint { state, schemas })
}

/// A method the GraphQL endpoints do not take: a GraphQL error, as every
/// other refusal there (axum would answer an empty 405).
fn wrong_method(headers: &HeaderMap, allow: &'static str) -> Response {
    api_error(headers, &ApiError::MethodNotAllowed { allow: Some(allow) })
}

/// Subscriptions over WebSocket. The key comes in the `Authorization` header
/// of the upgrade request or, from browsers, in the `connection_init`
/// payload (`{"Authorization": "Bearer <key>"}`); opening a connection counts
/// as one request against the rate limit, and so does each operation sent
/// on it (`response::OverWebSocket`). Once its key is revoked, the
/// connection is closed with code 4403 and its subscriptions end; once its
/// key expires, with 4401; when the server shuts down, with 1001 (going
/// away).
async fn subscribe(
    State(Endpoint { state, schemas }): State<Endpoint>,
    headers: HeaderMap,
    protocol: GraphQLProtocol,
    upgrade: WebSocketUpgrade,
) -> Response {
    let schema = schemas.subscriptions.clone();
    upgrade
        .protocols(ALL_WEBSOCKET_PROTOCOLS)
        .on_upgrade(move |socket| async move {
            let revocations = state.revocations.clone();
            let clock = state.clock.clone();
            let draining = state.draining.started();
            let (admitted_tx, admitted) = tokio::sync::oneshot::channel();
            let (mut sink, stream) = socket.split();
            let served = GraphQLWebSocket::new_with_pair(&mut sink, stream, schema, protocol)
                .on_connection_init(move |payload| async move {
                    let mut headers = headers;
                    if let Some(value) = payload
                        .get("Authorization")
                        .and_then(|v| v.as_str())
                        .and_then(|v| HeaderValue::from_str(v).ok())
                    {
                        headers.insert(header::AUTHORIZATION, value);
                    }
                    let admission = access::admit(&state, &headers, Scope::Read)
                        .await
                        .map_err(|(error, _)| gql(error))?;
                    let _ = admitted_tx.send(admission.caller.clone());
                    let mut data = Data::default();
                    let caller = admission.caller;
                    data.insert(Arc::new(RequestData::new(state, caller, &schemas.shares)));
                    Ok(data)
                })
                .serve();
            let ended = async {
                // Never admitted: the protocol closes the socket.
                let Ok(caller) = admitted.await else {
                    return std::future::pending().await;
                };
                let expires = caller.expires_at.map(|at| (at - clock.now()).to_std());
                let expired = async {
                    match expires {
                        Some(left) => tokio::time::sleep(left.unwrap_or_default()).await,
                        None => std::future::pending().await,
                    }
                };
                let mut watch = revocations.watch(caller.key_id);
                tokio::select! {
                    () = watch.revoked() => CloseFrame {
                        code: 4403,
                        reason: "The API key of this connection was revoked.".into(),
                    },
                    () = expired => CloseFrame {
                        code: 4401,
                        reason: "The API key of this connection expired.".into(),
                    },
                }
            };
            let close = tokio::select! {
                () = served => return,
                frame = ended => frame,
                () = draining => CloseFrame {
                    code: close_code::AWAY,
                    reason: "The server is shutting down.".into(),
                },
            };
            let _ = sink.send(Message::Close(Some(close))).await;
        })
}

/// Browsers get GraphiQL; a query string is executed as a query.
async fn get_graphql(State(endpoint): State<Endpoint>, headers: HeaderMap, uri: Uri) -> Response {
    let query = uri.query().unwrap_or_default();
    if query.is_empty() && accepts(&headers, "text/html") {
        return Html(crate::web::graphiql::page(&endpoint.state)).into_response();
    }
    match async_graphql::http::parse_query_string(query) {
        Ok(request) => execute(&endpoint, &headers, BatchRequest::Single(request), true).await,
        Err(e) => request_error(
            &headers,
            StatusCode::BAD_REQUEST,
            &format!("Unreadable GraphQL request: {e}."),
        ),
    }
}

/// A POST body is JSON (the GraphQL-over-HTTP spec's `application/json`):
/// anything else is refused with 415 before its body is read (a multipart
/// body would otherwise be spooled as uploads).
async fn post_graphql(
    State(endpoint): State<Endpoint>,
    request: axum::extract::Request,
) -> Response {
    let headers = request.headers().clone();
    if !is_json(&headers) {
        let error = ApiError::UnsupportedMediaType {
            expected: "application/json",
        };
        return api_error(&headers, &error);
    }
    match GraphQLBatchRequest::from_request(request, &endpoint).await {
        Ok(batch) => execute(&endpoint, &headers, batch.into_inner(), false).await,
        // async-graphql-axum would answer in plain text.
        Err(GraphQLRejection(ParseRequestError::PayloadTooLarge)) => {
            api_error(&headers, &ApiError::PayloadTooLarge)
        }
        Err(GraphQLRejection(e)) => request_error(
            &headers,
            StatusCode::BAD_REQUEST,
            &format!("Unreadable GraphQL request: {e}."),
        ),
    }
}

/// Whether the request's body is declared `application/json`.
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

/// Answers a request within its deadline; past it, the request's work
/// (the key check, cost analysis, execution and the database statements they
/// wait on) is dropped and it is answered `TIMEOUT`. A `conditional`
/// request (a GET) is tagged, and answered `304 Not Modified` when the
/// client holds its answer already (`http::conditional`): counted like any
/// request, since its answer was worked out, but its rows not charged.
async fn execute(
    endpoint: &Endpoint,
    headers: &HeaderMap,
    batch: BatchRequest,
    conditional: bool,
) -> Response {
    // JSON that is not a GraphQL request (`{}`, `[]`, `{"foo": 1}`)
    // deserializes to requests without a query.
    let empty = match &batch {
        BatchRequest::Single(request) => persisted::lacks_query(request),
        BatchRequest::Batch(requests) => {
            requests.is_empty() || requests.iter().any(persisted::lacks_query)
        }
    };
    if empty {
        return request_error(
            headers,
            StatusCode::BAD_REQUEST,
            "Not a GraphQL request: each request needs a non-empty query.",
        );
    }
    let deadline = endpoint.schemas.limits.deadline;
    let mut rate = None;
    let answered =
        tokio::time::timeout(deadline, answer(endpoint, headers, batch, &mut rate)).await;
    let mut http = match answered {
        Ok(Answered::Done(http)) => return http,
        Ok(Answered::Kept(answer, admitted)) => {
            let limits = &endpoint.schemas.limits;
            cached::respond(headers, &answer, (limits, &admitted), conditional)
        }
        // Charged once the deadline no longer applies: the rows are sent,
        // so they are paid for, and a charge is never cut half way.
        Ok(Answered::Ran {
            responses,
            data,
            single,
            keep,
        }) => {
            let tag = match responses.as_slice() {
                [(response, _)] if conditional => response::tag(headers, response),
                _ => None,
            };
            if let Some(mut http) = tag
                .as_ref()
                .and_then(|tag| not_modified_if_fresh(headers, tag))
            {
                // The client holds this answer: its rows are not sent, so
                // not charged. The request counts: it was worked out.
                if let Some(rate) = &rate {
                    access::rate_headers(rate, http.headers_mut());
                }
                return http;
            }
            let (data, limits) = (&data, &endpoint.schemas.limits);
            let rate = rate.as_ref();
            let charges = responses.into_iter().map(|(response, meter)| async move {
                let (mut response, quota) = meter.charge(data, response).await;
                if let Some(rate) = rate {
                    cost::report(&mut response, limits, rate, quota.as_ref());
                }
                (response, quota.is_some())
            });
            let (mut responses, metered): (Vec<_>, Vec<_>) =
                join_all(charges).await.into_iter().unzip();
            if let ([response], [false], Some((key, stamp)), Some(sharing)) = (
                responses.as_slice(),
                metered.as_slice(),
                keep,
                data.sharing(),
            ) {
                let (cache, payer) = (&endpoint.state.cache, data.caller().account_id);
                cached::keep(cache, (key, sharing), (stamp, payer), headers, response);
            }
            // A refusal for the quota is no answer to keep.
            let tag = tag.filter(|_| responses.iter().all(|r| r.errors.is_empty()));
            let response = match single {
                true => BatchResponse::Single(responses.pop().unwrap_or_default()),
                false => BatchResponse::Batch(responses),
            };
            let limit = endpoint.state.settings.sizes.max_response_bytes();
            let mut http = respond(headers, response, limit);
            if let Some(tag) = tag {
                mark(http.headers_mut(), tag);
            }
            http
        }
        Err(_) => api_error(headers, &document_limits::timeout(deadline)),
    };
    if let Some(rate) = &rate {
        access::rate_headers(rate, http.headers_mut());
    }
    http
}

/// A request's work within its deadline.
enum Answered {
    /// Refused, or answered with nothing to charge: the response as sent.
    Done(Response),
    /// Answered from the response cache, for a caller standing there
    /// against the rate limit.
    Kept(Arc<Answer>, RateDecision),
    /// Ran, each response with what its metered lists read.
    Ran {
        responses: Vec<(async_graphql::Response, Arc<Meter>)>,
        data: Arc<RequestData>,
        single: bool,
        /// Where its answer would be kept: the key of a single query and
        /// the data versions it began at.
        keep: Option<(cache::Request, Stamp)>,
    },
}

/// Admits a request, finds its cost and runs it; `rate` is where the caller stands
/// against the rate limit once admitted.
async fn answer(
    endpoint: &Endpoint,
    headers: &HeaderMap,
    batch: BatchRequest,
    rate: &mut Option<RateDecision>,
) -> Answered {
    let Endpoint { state, schemas } = endpoint;
    let (requests, single) = match batch {
        BatchRequest::Single(request) => (vec![request], true),
        BatchRequest::Batch(requests) => match refused_batch(endpoint, headers, requests.len()) {
            None => (requests, false),
            Some(mut refusal) => {
                // The key first, as for any request: a caller without one
                // learns only that. Counted as one request.
                return Answered::Done(match access::admit(state, headers, Scope::Read).await {
                    Ok(admission) => {
                        access::rate_headers(&admission.rate, refusal.headers_mut());
                        refusal
                    }
                    Err(refusal) => refused(headers, refusal),
                });
            }
        },
    };
    let key = match requests.as_slice() {
        [request] if state.cache.enabled() => cached::request_key(request, headers),
        _ => None,
    };
    // An answer for everyone is found before the document is even costed.
    if let Some(answer) = key.and_then(|key| state.cache.get(key, Sharing::Everyone)) {
        return match access::admit(state, headers, Scope::Read).await {
            Ok(admission) => {
                *rate = Some(admission.rate);
                Answered::Kept(answer, admission.rate)
            }
            Err(refusal) => Answered::Done(refused(headers, refusal)),
        };
    }
    // Each operation of a batch is a request against the rate limit: all
    // are counted, or the batch is refused whole and none is.
    let operations = u32::try_from(requests.len()).unwrap_or(u32::MAX);
    // Queries the server has seen before (which only keyed requests put in
    // the parse cache) are costed while the key is checked: cost analysis is CPU
    // work, the key check a wait on the database. Others wait for the key,
    // so a caller without one cannot make the server parse what it sends.
    let known = requests.iter().all(|r| schemas.parsed.contains(&r.query));
    let costing = join_all(requests.into_iter().map(|r| schemas.cost(r)));
    let admit = access::admit_many(state, headers, Scope::Read, operations);
    let (admission, costed) = if known {
        tokio::join!(admit, costing)
    } else {
        match admit.await {
            Ok(admission) => (Ok(admission), costing.await),
            Err(refusal) => (Err(refusal), Vec::new()),
        }
    };
    let admission = match admission {
        Ok(admission) => admission,
        Err(refusal) => return Answered::Done(refused(headers, refusal)),
    };
    *rate = Some(admission.rate);
    if !single {
        // Costed as a whole: its operations run in one request.
        let complexity = costed.iter().map(Costed::complexity).sum();
        if let Err(error) = schemas.limits.check_batch_complexity(complexity) {
            let mut refusal = refused_whole(headers, error);
            access::rate_headers(&admission.rate, refusal.headers_mut());
            return Answered::Done(refusal);
        }
    }
    let own = Sharing::Account(admission.caller.account_id);
    if let Some(answer) = key.and_then(|key| state.cache.get(key, own)) {
        return Answered::Kept(answer, admission.rate);
    }
    if key.is_some() {
        state.cache.missed();
    }
    // Taken before it runs: a write committed while it runs retires it.
    let keep = key.zip(state.cache.stamp());
    let data = RequestData::new(state.clone(), admission.caller, &schemas.shares);
    let data = Arc::new(data);
    let responses = join_all(costed.into_iter().map(|p| schemas.run(p, &data))).await;
    Answered::Ran {
        responses,
        data,
        single,
        keep,
    }
}

/// Why a batch of `operations` is refused before any of it is costed:
/// batching is off, or the batch is over its limit.
fn refused_batch(endpoint: &Endpoint, headers: &HeaderMap, operations: usize) -> Option<Response> {
    if !endpoint.state.settings.graphql.batching {
        return Some(request_error(
            headers,
            StatusCode::BAD_REQUEST,
            "Batched requests are not enabled on this server.",
        ));
    }
    let error = endpoint.schemas.limits.check_batch_size(operations).err()?;
    Some(refused_whole(headers, error))
}

/// A request refused before it ran (no valid key, rate limited).
fn refused(headers: &HeaderMap, (error, rate): access::Refusal) -> Response {
    let mut response = api_error(headers, &error);
    if let Some(rate) = rate {
        access::rate_headers(&rate, response.headers_mut());
    }
    response
}
