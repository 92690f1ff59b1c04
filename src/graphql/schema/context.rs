//! What resolvers reach through async-graphql's context: the request's
//! caller, where it stands against its limits, and the database and
//! dataloaders through [`Reads`] only, whose futures are boxed (see
//! `reads.rs`) and whose statements run within the request's share of the
//! pool (`request/pool_share.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use async_graphql::Context;

use super::loaders::Loaders;
use super::reads::{Boxed, Reads};
use crate::accounts::Caller;
use crate::cache::Sharing;
use crate::config::ListConfig;
use crate::graphql::request::pool_share::{PoolShares, SharedConnection};
use crate::http::{ApiError, access, sized};
use crate::limits::RateDecision;
use crate::query::budget::ResponseBudget;
use crate::state::AppState;
use crate::views::Allowance;

/// One request's caller, state, share of the pool, dataloaders, and the
/// byte budget of its answer (one for all operations of a request over
/// HTTP, one per operation over the WebSocket).
pub struct RequestData {
    state: AppState,
    caller: Caller,
    connection: SharedConnection,
    loaders: Loaders,
    budget: Arc<ResponseBudget>,
    /// What the answer read besides the catalog, as a [`Reached`].
    reached: AtomicU8,
}

/// What an answer read besides the catalog, which decides whom it may be
/// shared with. Resolvers reach the caller and its limits only through the
/// functions of this module, which record it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
enum Reached {
    /// Nothing: the answer is the same for every caller.
    Catalog = 0,
    /// The caller's own data (`me`, its sessions).
    Caller = 1,
    /// Where the caller stands against its limits, which every request changes.
    Limits = 2,
}

impl RequestData {
    /// The data of a request by `caller`, with a share of the pool
    /// (`shares`), loaders and a budget of its own.
    pub fn new(state: AppState, caller: Caller, shares: &PoolShares) -> Self {
        let connection = shares.connection(&state, &caller);
        RequestData::with_connection(state, caller, connection)
    }

    fn with_connection(state: AppState, caller: Caller, connection: SharedConnection) -> Self {
        let budget = Arc::new(sized::budget(&state));
        let loaders = Loaders::new(&connection, &budget);
        RequestData {
            state,
            caller,
            connection,
            loaders,
            budget,
            reached: AtomicU8::new(Reached::Catalog as u8),
        }
    }

    /// The data of one more operation by the same caller (on a WebSocket):
    /// loaders and a budget of its own, within the share of the pool the
    /// whole connection has.
    pub fn for_operation(&self) -> Self {
        RequestData::with_connection(
            self.state.clone(),
            self.caller.clone(),
            self.connection.clone(),
        )
    }

    /// The byte budget of the answer.
    pub fn budget(&self) -> &ResponseBudget {
        &self.budget
    }

    /// The database and the loaders, for work outside a field (the updates
    /// of a subscription).
    pub fn reads(&self) -> Reads<'_> {
        Reads::new(&self.connection, &self.loaders, &self.budget)
    }

    /// The application state, for the transport, the extensions around
    /// the resolvers and subscription streams (which outlive any field).
    pub fn state(&self) -> &AppState {
        &self.state
    }

    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// Whom the answer worked out so far may be served to again: `None`
    /// when it read where the caller stands against its limits.
    pub fn sharing(&self) -> Option<Sharing> {
        match self.reached.load(Ordering::Acquire) {
            r if r == Reached::Catalog as u8 => Some(Sharing::Everyone),
            r if r == Reached::Caller as u8 => Some(Sharing::Account(self.caller.account_id)),
            _ => None,
        }
    }

    fn reach(&self, reached: Reached) {
        self.reached.fetch_max(reached as u8, Ordering::AcqRel);
    }
}

/// The caller of the request `ctx` belongs to.
pub(super) fn caller<'a>(ctx: &Context<'a>) -> &'a Caller {
    let data = data(ctx);
    data.reach(Reached::Caller);
    &data.caller
}

/// How many entries the lists of the server hold.
pub(super) fn lists<'a>(ctx: &Context<'a>) -> &'a ListConfig {
    &data(ctx).state.settings.lists
}

/// The database and the loaders of the request `ctx` belongs to.
pub(super) fn reads<'a>(ctx: &Context<'a>) -> Reads<'a> {
    data(ctx).reads()
}

/// Where the caller of `ctx` stands against the rate limit, counting nothing.
pub(super) fn rate_limit<'a>(ctx: &Context<'a>) -> Boxed<'a, RateDecision> {
    let data = data(ctx);
    data.reach(Reached::Limits);
    Box::pin(access::rate_standing(&data.state, &data.caller))
}

/// Where the caller of `ctx` stands against the daily quota, charging nothing.
pub(super) fn quota<'a>(ctx: &Context<'a>) -> Boxed<'a, Result<Allowance, ApiError>> {
    let data = data(ctx);
    data.reach(Reached::Limits);
    let quota = access::quota_standing(&data.state, &data.connection, &data.caller);
    Box::pin(quota)
}

fn data<'a>(ctx: &Context<'a>) -> &'a RequestData {
    ctx.data_unchecked::<Arc<RequestData>>()
}
