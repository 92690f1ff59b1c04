//! GraphQL (`/graphql`): the same data as REST v1 through the same query
//! layer, with dataloaders, Relay connections over keyset cursors, depth and
//! complexity limits, and GraphiQL for browsers.
//!
//! The schema and what executes it are built here. The rest is in three
//! folders, by purpose:
//!
//! | folder | what it holds |
//! |---|---|
//! | `schema/` | the types and how their fields read: roots, products, sellers, sessions, `Node`, connections, dataloaders, the resolvers' context |
//! | `request/` | what happens to a request before and around execution: the HTTP and WebSocket endpoints, the document's limits, parse cache, persisted queries, pool shares, error codes and field order of answers |
//! | `cost/` | what a request costs: its complexity found before it runs, the quota rows it read, and `extensions.cost` |

mod cost;
mod error;
mod request;
mod schema;

use std::sync::Arc;

use async_graphql::{EmptyMutation, Schema, SchemaBuilder, ValidationMode};

use crate::state::AppState;

use cost::quota_charge::Meter;
use cost::scans::CostBook;
pub use error::gql;
use request::document_limits::{self, IntrospectionSizes, RequestLimits};
use request::parsed::ParsedQueries;
use request::persisted::PersistedQueries;
use request::pool_share::PoolShares;
pub use request::transport::router;
use request::{error_codes, field_order, response};
pub use schema::context::RequestData;
use schema::query::QueryRoot;
use schema::subscription::SubscriptionRoot;

pub type VitrinaSchema = Schema<QueryRoot, EmptyMutation, SubscriptionRoot>;

/// The schema's types. Limits are not async-graphql's own (its checks
/// follow each fragment spread anew): the extensions of `cost/analysis.rs` and
/// `request/response.rs` apply [`RequestLimits`] to every request before it runs.
fn builder() -> SchemaBuilder<QueryRoot, EmptyMutation, SubscriptionRoot> {
    Schema::build(QueryRoot, EmptyMutation, SubscriptionRoot)
        .limit_recursive_depth(document_limits::MAX_NESTING)
}

/// What executes GraphQL requests: the schemas, the parsed queries they
/// share, and the persisted queries clients may name by hash.
pub struct Schemas {
    /// Executes requests the cost analysis has validated in full and found
    /// within the limits. It has no extensions, so every field takes
    /// async-graphql's fast path.
    run: VitrinaSchema,
    /// Validates requests and finds their cost without executing them
    /// (`cost/analysis.rs`).
    analysis: VitrinaSchema,
    /// Serves subscriptions, which have no cost analysis: validated in full,
    /// errors coded and the cost reported as over HTTP.
    pub subscriptions: VitrinaSchema,
    parsed: ParsedQueries,
    persisted: PersistedQueries,
    limits: RequestLimits,
    /// The costs of reads that scan rows, which grow with the tables.
    scan_costs: Arc<CostBook>,
    /// Each request's share of the database pool.
    shares: PoolShares,
}

impl Schemas {
    pub fn new(state: &AppState) -> Self {
        let config = &state.settings.graphql;
        let sizes = IntrospectionSizes::of_schema(&sdl());
        let limits = RequestLimits::new(config, sizes);
        let scan_costs = Arc::new(CostBook::new(
            state.db.clone(),
            state.settings.lists.count_bound,
        ));
        Schemas {
            run: builder().validation_mode(ValidationMode::Fast).finish(),
            analysis: builder()
                .extension(cost::analysis::CostOnly(limits, scan_costs.clone()))
                .finish(),
            subscriptions: builder()
                .extension(response::OverWebSocket(limits, scan_costs.clone()))
                .finish(),
            scan_costs,
            parsed: ParsedQueries::default(),
            persisted: PersistedQueries::new(state),
            limits,
            shares: PoolShares::new(crate::db::pool_info(&state.db).max_connections, config),
        }
    }

    /// Validates one request and finds its cost (no database work, but for the
    /// text of a persisted query's hash and the table estimates when they
    /// are due): what [`Schemas::run`] runs, or the response refusing it.
    /// Both passes share one parse of its query, and a request whose cost
    /// was found before at the same scan costs is not analysed again.
    async fn cost(&self, request: async_graphql::Request) -> Costed {
        let mut request = match self.persisted.resolve(request).await {
            Ok(request) => request,
            Err(refusal) => return Costed::Refused(refusal),
        };
        self.scan_costs.refresh_if_due().await;
        // Read before the analysis: a cost remembered under this generation
        // was found at these scan costs or later ones.
        let (_, generation) = self.scan_costs.current();
        // The text is checked before the parse cache parses it (the
        // cost analysis checks the rest of the limits).
        let recalled = match self
            .parsed
            .recall(&request, generation, |query| self.limits.check_text(query))
        {
            Ok(recalled) => recalled,
            Err(refusal) => {
                return Costed::Refused(async_graphql::Response::from_errors(vec![refusal]));
            }
        };
        let document = recalled.document;
        request.set_parsed_query((*document).clone());
        if let Some(cost) = recalled.cost {
            return Costed::Ready {
                request,
                document,
                cost: Cost::Remembered(cost),
            };
        }
        let mut probe =
            async_graphql::Request::new(request.query.clone()).variables(request.variables.clone());
        probe.operation_name = request.operation_name.clone();
        probe.set_parsed_query((*document).clone());
        let mut analysed = self.analysis.execute(probe).await;
        if analysed.is_err() {
            // Invalid, over a limit or no such operation.
            return Costed::Refused(analysed);
        }
        let cost = analysed.extensions.remove("analyzer").unwrap_or_default();
        Costed::Ready {
            request,
            document,
            cost: Cost::FoundNow { cost, generation },
        }
    }

    /// Runs a costed request; the quota its metered lists read is charged
    /// by the caller ([`Meter::charge`]).
    async fn run(
        &self,
        costed: Costed,
        data: &Arc<RequestData>,
    ) -> (async_graphql::Response, Arc<Meter>) {
        let (request, document, cost) = match costed {
            Costed::Refused(response) => return (response, Arc::default()),
            Costed::Ready {
                request,
                document,
                cost,
            } => {
                let cost = match cost {
                    Cost::Remembered(cost) => cost,
                    // Kept only now that the caller is admitted, as parsed
                    // queries are.
                    Cost::FoundNow { cost, generation } => {
                        self.parsed.remember_cost(&request, generation, &cost);
                        cost
                    }
                };
                (request, document, cost)
            }
        };
        self.persisted
            .keep(&request, data.caller().account_id)
            .await;
        let operation = request.operation_name.clone();
        crate::metrics::graphql::operation(operation.as_deref(), Some(&document), &cost);
        // Taken before the request, which takes its variables, runs.
        let missing =
            error_codes::missing_variables(&document, operation.as_deref(), &request.variables);
        let meter = Arc::new(Meter::default());
        let request = request.data(data.clone()).data(meter.clone());
        let mut response = self.run.execute(request).await;
        response::refuse_past_budget(&mut response, data.budget(), &meter);
        error_codes::code_execution(&mut response.errors, &document, &missing);
        field_order::restore(&document, operation.as_deref(), &mut response.data);
        response.extensions.insert("analyzer".to_owned(), cost);
        (response, meter)
    }
}

/// A request after its cost analysis.
#[allow(
    clippy::large_enum_variant,
    reason = "one per request, moved once: boxing would only add an allocation"
)]
enum Costed {
    Refused(async_graphql::Response),
    Ready {
        request: async_graphql::Request,
        document: Arc<async_graphql::parser::types::ExecutableDocument>,
        cost: Cost,
    },
}

impl Costed {
    /// The complexity of what runs: none for a refused request.
    fn complexity(&self) -> usize {
        let cost = match self {
            Costed::Refused(_) => return 0,
            Costed::Ready { cost, .. } => match cost {
                Cost::Remembered(cost) | Cost::FoundNow { cost, .. } => cost,
            },
        };
        let complexity = match cost {
            async_graphql::Value::Object(fields) => fields.get("complexity"),
            _ => None,
        };
        match complexity {
            Some(async_graphql::Value::Number(n)) => n.as_u64().map_or(0, |n| n as usize),
            _ => 0,
        }
    }
}

/// A request's cost (`extensions.analyzer`).
enum Cost {
    /// Found for an identical request before.
    Remembered(async_graphql::Value),
    /// Found by this request's analysis, at the scan costs' `generation`.
    FoundNow {
        cost: async_graphql::Value,
        generation: u64,
    },
}

/// The SDL checked in as `schema.graphql`.
pub fn sdl() -> String {
    builder().finish().sdl()
}
