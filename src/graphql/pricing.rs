//! The cost of a request, found in a pass that stops before execution.
//!
//! Every response reports its cost in `extensions.analyzer`, and only an
//! async-graphql extension sees the validation result that holds it. But
//! while any extension is registered, async-graphql resolves every field on
//! a slower path (a fifth of a dashboard's work). So a twin schema carrying
//! this extension parses, validates and prices each request, then stops;
//! the request itself runs on the schema without extensions.

use std::sync::{Arc, Mutex, MutexGuard};

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextExecute, NextPrepareRequest, NextRequest,
    NextValidation,
};
use async_graphql::{Request, Response, ServerError, ServerResult, ValidationResult, Value, value};

use super::limits::RequestLimits;

/// Validates and prices a request, and never executes it.
pub struct PriceOnly(pub RequestLimits);

impl ExtensionFactory for PriceOnly {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(PriceOnlyExtension {
            validated: Validated::new(self.0),
        })
    }
}

struct PriceOnlyExtension {
    validated: Validated,
}

/// The limits of one request and what validating it found, kept for its
/// response. Every schema that validates requests goes through these two
/// steps, so none can skip a limit.
#[derive(Clone)]
pub struct Validated {
    limits: RequestLimits,
    result: Arc<Mutex<Option<ValidationResult>>>,
}

impl Validated {
    pub fn new(limits: RequestLimits) -> Self {
        Validated {
            limits,
            result: Arc::default(),
        }
    }

    pub fn limits(&self) -> &RequestLimits {
        &self.limits
    }

    /// An extension's `prepare_request` step: refuses a document over the
    /// limits before async-graphql parses or walks it.
    pub async fn admit(
        &self,
        ctx: &ExtensionContext<'_>,
        mut request: Request,
        next: NextPrepareRequest<'_>,
    ) -> ServerResult<Request> {
        self.limits.admit(&mut request)?;
        next.run(ctx, request).await
    }

    /// An extension's validation step: refuses a request over the
    /// complexity limit, and keeps the result.
    pub async fn validate(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<ServerError>> {
        let result = next.run(ctx).await?;
        self.limits
            .check_complexity(result.complexity)
            .map_err(|e| vec![e])?;
        *self.lock() = Some(result);
        Ok(result)
    }

    /// The request's cost as `extensions.analyzer` reports it; `None` before
    /// validation or when it failed.
    pub fn cost(&self) -> Option<Value> {
        self.lock()
            .map(|v| value!({ "complexity": v.complexity, "depth": v.depth }))
    }

    fn lock(&self) -> MutexGuard<'_, Option<ValidationResult>> {
        // One request's result: a poisoned lock still holds a whole value.
        self.result
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait::async_trait]
impl Extension for PriceOnlyExtension {
    async fn request(&self, ctx: &ExtensionContext<'_>, next: NextRequest<'_>) -> Response {
        let response = next.run(ctx).await;
        match self.validated.cost() {
            Some(cost) => response.extension("analyzer", cost),
            None => response,
        }
    }

    async fn prepare_request(
        &self,
        ctx: &ExtensionContext<'_>,
        request: Request,
        next: NextPrepareRequest<'_>,
    ) -> ServerResult<Request> {
        self.validated.admit(ctx, request, next).await
    }

    async fn validation(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<ServerError>> {
        self.validated.validate(ctx, next).await
    }

    async fn execute(
        &self,
        _ctx: &ExtensionContext<'_>,
        _operation_name: Option<&str>,
        _next: NextExecute<'_>,
    ) -> Response {
        Response::default()
    }
}
