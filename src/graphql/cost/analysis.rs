//! The cost of a request, found in a pass that stops before execution.
//!
//! Every response reports its cost in `extensions.analyzer`, and only an
//! async-graphql extension sees the validation result that holds it. But
//! while any extension is registered, async-graphql resolves every field on
//! a slower path (a fifth of a dashboard's work). So a twin schema carrying
//! this extension parses and validates each request and finds its cost, then stops;
//! the request itself runs on the schema without extensions.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextExecute, NextParseQuery, NextPrepareRequest,
    NextRequest, NextValidation,
};
use async_graphql::parser::types::ExecutableDocument;
use async_graphql::{
    Request, Response, ServerError, ServerResult, ValidationResult, Value, Variables, value,
};

use super::scans::{self, CostBook};
use crate::graphql::request::document_limits::RequestLimits;
use crate::graphql::request::error_codes::{ErrorClass, Kept};

/// Validates a request and finds its cost, and never executes it.
pub struct CostOnly(pub RequestLimits, pub Arc<CostBook>);

impl ExtensionFactory for CostOnly {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(CostOnlyExtension {
            validated: Validated::new(self.0, self.1.clone()),
        })
    }
}

struct CostOnlyExtension {
    validated: Validated,
}

/// The limits of one request and what validating it found, kept for its
/// response. Every schema that validates requests goes through these
/// steps, so none can skip a limit, and each codes the errors it reports
/// (`request/error_codes.rs`).
#[derive(Clone)]
pub struct Validated {
    limits: RequestLimits,
    /// The costs of reads that scan, which the complexity includes.
    scan_costs: Arc<CostBook>,
    result: Arc<Mutex<Option<ValidationResult>>>,
    /// The request as admitted, to place the errors of later steps.
    kept: Arc<OnceLock<Kept>>,
}

impl Validated {
    pub fn new(limits: RequestLimits, scan_costs: Arc<CostBook>) -> Self {
        Validated {
            limits,
            scan_costs,
            result: Arc::default(),
            kept: Arc::default(),
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
        let request = next.run(ctx, request).await?;
        // Set once: each request gets extensions of its own.
        let _ = self.kept.set(Kept::of(&request));
        Ok(request)
    }

    /// An extension's parse step. The document comes parsed
    /// (`parsed::parse`), so async-graphql only checks how deeply its
    /// selections nest through the fragments they spread: what it refuses
    /// is too complex.
    pub async fn parse(
        &self,
        ctx: &ExtensionContext<'_>,
        query: &str,
        variables: &Variables,
        next: NextParseQuery<'_>,
    ) -> ServerResult<ExecutableDocument> {
        next.run(ctx, query, variables).await.map_err(|mut error| {
            ErrorClass::TooComplex.mark(&mut error);
            error
        })
    }

    /// An extension's validation step: costs the reads that scan at the
    /// scan costs in force (`scans.rs`), codes what the validator refuses,
    /// refuses a request over the complexity limit, and keeps the result.
    pub async fn validate(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<ServerError>> {
        self.scan_costs.refresh_if_due().await;
        let (costs, _) = self.scan_costs.current();
        let validated = scans::with_costs(costs, next.run(ctx)).await;
        let mut result = validated.map_err(|mut errors| {
            if let Some(kept) = self.kept.get() {
                kept.code_validation(&mut errors, &ctx.schema_env.registry);
            }
            errors
        })?;
        result.complexity = scans::settle(result.complexity, &costs);
        self.limits
            .check_complexity(result.complexity)
            .map_err(|e| vec![e])?;
        *self.lock() = Some(result);
        Ok(result)
    }

    /// Codes the errors of a response to the request that no step coded:
    /// those raised while executing, and choosing the operation to run.
    pub fn code_rest(&self, errors: &mut [ServerError]) {
        if let Some(kept) = self.kept.get() {
            kept.code_execution(errors);
        }
        errors.iter_mut().for_each(|e| ErrorClass::Invalid.mark(e));
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
impl Extension for CostOnlyExtension {
    async fn request(&self, ctx: &ExtensionContext<'_>, next: NextRequest<'_>) -> Response {
        let mut response = next.run(ctx).await;
        self.validated.code_rest(&mut response.errors);
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

    async fn parse_query(
        &self,
        ctx: &ExtensionContext<'_>,
        query: &str,
        variables: &Variables,
        next: NextParseQuery<'_>,
    ) -> ServerResult<ExecutableDocument> {
        self.validated.parse(ctx, query, variables, next).await
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
