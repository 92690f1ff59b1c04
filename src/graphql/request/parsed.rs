//! Parsed query documents, kept by query text, with the costs of the
//! requests that passed validation. Clients send the same few queries over
//! and over: parsing is the dearest step before execution (a third of the
//! server's work for a product by id with its fragments), and the full
//! validation that finds a request's cost the next third.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, MutexGuard};

use async_graphql::parser::{self, parse_query, types::ExecutableDocument};
use async_graphql::{Request, ServerError, Value};
use lru::LruCache;

use super::error_codes::ErrorClass;

/// Distinct queries kept; the least recently used goes first.
const CAPACITY: NonZeroUsize = NonZeroUsize::new(256).unwrap();
/// Longer queries are parsed for each request and not kept, so the cache
/// stays small (at most a few MB) whatever clients send.
const MAX_QUERY_LEN: usize = 8 * 1024;
/// Costs kept per query (the latest operations and variables costed).
const COSTS_PER_QUERY: usize = 4;
/// Variables heavier than this (in bytes of names and scalars) are costed
/// each time and not kept.
const MAX_VARIABLES_WEIGHT: usize = 2 * 1024;

pub struct ParsedQueries(Mutex<LruCache<String, Known>>);

struct Known {
    document: Arc<ExecutableDocument>,
    /// Requests of this query that passed validation, newest first. Their
    /// cost depends on the operation and the variables (page sizes, and
    /// whether the values fit their types), so both are part of the key.
    costs: Vec<CostedRequest>,
}

/// A request that passed validation, and what it cost.
struct CostedRequest {
    operation: Option<String>,
    variables: async_graphql::Variables,
    /// The generation of the scan costs it was found at
    /// (`scans::CostBook`): a cost found at others is found anew.
    generation: u64,
    cost: Value,
}

impl Default for ParsedQueries {
    fn default() -> Self {
        ParsedQueries(Mutex::new(LruCache::new(CAPACITY)))
    }
}

/// What the cache knows of a request.
pub struct Recalled {
    /// The parsed query.
    pub document: Arc<ExecutableDocument>,
    /// Its cost, when the same operation with the same variables passed
    /// validation before, at the same scan costs.
    pub cost: Option<Value>,
}

impl ParsedQueries {
    /// The parsed document of `request`'s query (from the cache, or parsed
    /// now and kept unless the query is too long to keep) and its cost if
    /// known at the scan costs' `generation` in force.
    ///
    /// `admit` checks a query's text before it is parsed; a query in the
    /// cache passed it when it was parsed, so it is not checked again. A
    /// query that does not parse is refused ([`parse`]).
    pub fn recall(
        &self,
        request: &Request,
        generation: u64,
        admit: impl FnOnce(&str) -> Result<(), ServerError>,
    ) -> Result<Recalled, ServerError> {
        let query = &request.query;
        if query.len() > MAX_QUERY_LEN {
            admit(query)?;
            return Ok(Recalled {
                document: Arc::new(parse(query)?),
                cost: None,
            });
        }
        if let Some(known) = self.lock().get(query) {
            let cost = known
                .costs
                .iter()
                .find(|c| {
                    c.generation == generation
                        && c.operation == request.operation_name
                        && c.variables == request.variables
                })
                .map(|c| c.cost.clone());
            return Ok(Recalled {
                document: known.document.clone(),
                cost,
            });
        }
        admit(query)?;
        let document = Arc::new(parse(query)?);
        let known = Known {
            document: document.clone(),
            costs: Vec::new(),
        };
        self.lock().put(query.to_owned(), known);
        Ok(Recalled {
            document,
            cost: None,
        })
    }

    /// Keeps the cost of a request that passed validation at the scan costs'
    /// generation, if its query is kept and its variables are light enough.
    pub fn remember_cost(&self, request: &Request, generation: u64, cost: &Value) {
        let variables = request.variables.iter();
        if variables.map(|(k, v)| k.len() + weight(v)).sum::<usize>() > MAX_VARIABLES_WEIGHT {
            return;
        }
        let mut cache = self.lock();
        let Some(known) = cache.peek_mut(&request.query) else {
            return;
        };
        known.costs.truncate(COSTS_PER_QUERY - 1);
        known.costs.insert(
            0,
            CostedRequest {
                operation: request.operation_name.clone(),
                variables: request.variables.clone(),
                generation,
                cost: cost.clone(),
            },
        );
    }

    /// Whether `query` is in the cache (looked up without counting as a use).
    pub fn contains(&self, query: &str) -> bool {
        self.lock().contains(query)
    }

    fn lock(&self) -> MutexGuard<'_, LruCache<String, Known>> {
        // The cache holds no invariant a panicking holder could break.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Parses a query; a failure is coded by its kind: past the parser's
/// recursion limit is too complex, anything else invalid.
pub fn parse(query: &str) -> Result<ExecutableDocument, ServerError> {
    parse_query(query).map_err(|error| {
        let class = match error {
            parser::Error::RecursionLimitExceeded => ErrorClass::TooComplex,
            _ => ErrorClass::Invalid,
        };
        let mut error = ServerError::from(error);
        class.mark(&mut error);
        error
    })
}

/// Roughly the bytes `value` holds: its names, strings and scalars.
fn weight(value: &Value) -> usize {
    match value {
        Value::String(s) => s.len(),
        Value::Binary(bytes) => bytes.len(),
        Value::Enum(name) => name.len(),
        Value::List(items) => items.iter().map(|item| 1 + weight(item)).sum(),
        Value::Object(fields) => fields.iter().map(|(k, v)| k.len() + weight(v)).sum(),
        Value::Null | Value::Number(_) | Value::Boolean(_) => 8,
    }
}
