//! Each GraphQL request's share of the database pool. One request can run
//! many statements at once (each alias, each list's loaders), so left alone
//! it could hold every connection of the pool while other tenants' requests
//! wait for one (a hundred aliased counts did). Every statement a request
//! runs goes through its [`SharedConnection`] (the only connection
//! `RequestData` hands to resolvers and loaders), which holds a permit of
//! the request's share and one of its account's share for as long as the
//! statement runs:
//! - a request (an HTTP request, a batch, or a WebSocket connection with
//!   all its operations) never holds more than
//!   `--db-max-connections-per-request` connections;
//! - an account's requests together never hold more than
//!   `--db-max-connections-per-account`, so a tenant sending many requests
//!   at once waits for its own connections too, and the rest of the pool
//!   stays free for the others.
//!
//! Permits are taken in that order (the request's, then the account's) and
//! given back when the statement ends, so waiting for one never holds up a
//! statement that has both. The time a statement holds them, from its
//! permits to its last row, is charged to the account's database-time
//! budget (`limits::db_time`). REST handlers run one statement at a time, so a
//! REST request holds at most one connection and needs no share.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Instant;

use futures_util::Stream;
use sea_orm::{
    ConnectionTrait, DatabaseConnection, DbBackend, DbErr, ExecResult, QueryResult, QueryStream,
    Statement, StreamTrait,
};
use tokio::sync::{Semaphore, SemaphorePermit};
use uuid::Uuid;

use crate::accounts::Caller;
use crate::clock::SharedClock;
use crate::config::GraphqlConfig;
use crate::limits::DbTimeBudget;
use crate::state::AppState;

/// The shares of the pool, and the share each account with requests in
/// flight holds (in this process).
pub struct PoolShares {
    per_request: usize,
    per_account: usize,
    /// An account's share lives as long as one of its requests does.
    accounts: Mutex<HashMap<Uuid, Weak<Semaphore>>>,
}

impl PoolShares {
    /// The shares of a pool of `pool` connections: as configured, or a
    /// quarter of the pool per request and half of it per account (at least
    /// one connection each, at most the pool).
    pub fn new(pool: u32, config: &GraphqlConfig) -> Self {
        let pool = pool.max(1);
        let share = |configured: Option<u32>, divisor: u32| {
            configured.unwrap_or(pool / divisor).clamp(1, pool) as usize
        };
        PoolShares {
            per_request: share(config.db_max_connections_per_request, 4),
            per_account: share(config.db_max_connections_per_account, 2),
            accounts: Mutex::default(),
        }
    }

    /// The connection of a new request of `caller`, with a share of its own.
    pub fn connection(&self, state: &AppState, caller: &Caller) -> SharedConnection {
        SharedConnection {
            db: state.db.clone(),
            request: Arc::new(Semaphore::new(self.per_request)),
            account: self.account(caller.account_id),
            charged: Charged {
                budget: state.db_time.clone(),
                clock: state.clock.clone(),
                account: caller.account_id,
            },
        }
    }

    fn account(&self, account: Uuid) -> Arc<Semaphore> {
        // A poisoned map still holds whole entries.
        let mut accounts = self.accounts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(share) = accounts.get(&account).and_then(Weak::upgrade) {
            return share;
        }
        // Shares of accounts with no request left are dropped here, so the
        // map holds about the accounts with requests in flight.
        accounts.retain(|_, share| share.strong_count() > 0);
        let share = Arc::new(Semaphore::new(self.per_account));
        accounts.insert(account, Arc::downgrade(&share));
        share
    }
}

/// The database as one request reaches it: each statement waits for a
/// permit of the request's share and of its account's.
#[derive(Clone)]
pub struct SharedConnection {
    db: DatabaseConnection,
    request: Arc<Semaphore>,
    account: Arc<Semaphore>,
    charged: Charged,
}

/// Where a statement's time is charged: its account's database-time budget.
#[derive(Clone)]
struct Charged {
    budget: Arc<DbTimeBudget>,
    clock: SharedClock,
    account: Uuid,
}

/// A statement's permits; its time is charged when they are given back.
struct Permits<'a> {
    _held: [SemaphorePermit<'a>; 2],
    since: Instant,
    charged: &'a Charged,
}

impl Drop for Permits<'_> {
    fn drop(&mut self) {
        let Charged {
            budget,
            clock,
            account,
        } = self.charged;
        budget.charge(*account, clock.now(), self.since.elapsed());
    }
}

impl SharedConnection {
    async fn permits(&self) -> Result<Permits<'_>, DbErr> {
        // The semaphores are never closed; an error would be a bug here.
        let closed = |_| DbErr::Custom("a share of the connection pool was closed".into());
        let request = self.request.acquire().await.map_err(closed)?;
        let account = self.account.acquire().await.map_err(closed)?;
        Ok(Permits {
            _held: [request, account],
            since: Instant::now(),
            charged: &self.charged,
        })
    }
}

#[async_trait::async_trait]
impl ConnectionTrait for SharedConnection {
    fn get_database_backend(&self) -> DbBackend {
        self.db.get_database_backend()
    }

    async fn execute_raw(&self, stmt: Statement) -> Result<ExecResult, DbErr> {
        let _permits = self.permits().await?;
        self.db.execute_raw(stmt).await
    }

    async fn execute_unprepared(&self, sql: &str) -> Result<ExecResult, DbErr> {
        let _permits = self.permits().await?;
        self.db.execute_unprepared(sql).await
    }

    async fn query_one_raw(&self, stmt: Statement) -> Result<Option<QueryResult>, DbErr> {
        let _permits = self.permits().await?;
        self.db.query_one_raw(stmt).await
    }

    async fn query_all_raw(&self, stmt: Statement) -> Result<Vec<QueryResult>, DbErr> {
        let _permits = self.permits().await?;
        self.db.query_all_raw(stmt).await
    }
}

/// Rows read one by one (a page counted against its byte budget as it
/// arrives): the statement holds its permits until its last row is read.
impl StreamTrait for SharedConnection {
    type Stream<'a> = SharedStream<'a>;

    fn get_database_backend(&self) -> DbBackend {
        self.db.get_database_backend()
    }

    fn stream_raw<'a>(
        &'a self,
        stmt: Statement,
    ) -> Pin<Box<dyn Future<Output = Result<SharedStream<'a>, DbErr>> + 'a + Send>> {
        Box::pin(async move {
            let permits = self.permits().await?;
            let rows = self.db.stream_raw(stmt).await?;
            Ok(SharedStream {
                rows,
                _permits: permits,
            })
        })
    }
}

/// The rows of one statement and the permits it holds while they last.
pub struct SharedStream<'a> {
    rows: QueryStream,
    _permits: Permits<'a>,
}

impl Stream for SharedStream<'_> {
    type Item = Result<QueryResult, DbErr>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.get_mut().rows).poll_next(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(per_request: Option<u32>, per_account: Option<u32>) -> GraphqlConfig {
        GraphqlConfig {
            db_max_connections_per_request: per_request,
            db_max_connections_per_account: per_account,
            ..GraphqlConfig::default()
        }
    }

    #[test]
    fn the_default_shares_are_a_quarter_and_half_of_the_pool() {
        let shares = PoolShares::new(16, &config(None, None));
        assert_eq!((shares.per_request, shares.per_account), (4, 8));
        let small = PoolShares::new(2, &config(None, None));
        assert_eq!((small.per_request, small.per_account), (1, 1));
        let capped = PoolShares::new(8, &config(Some(20), Some(0)));
        assert_eq!((capped.per_request, capped.per_account), (8, 1));
    }

    #[test]
    fn an_accounts_requests_share_one_share_while_any_is_in_flight() {
        let shares = PoolShares::new(8, &config(None, None));
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let first = shares.account(a);
        assert!(Arc::ptr_eq(&first, &shares.account(a)));
        assert!(!Arc::ptr_eq(&first, &shares.account(b)));
        drop(first);
        // Nothing holds a's share now: the next request gets a fresh one
        // and the dead entries are gone.
        let again = shares.account(a);
        assert_eq!(again.available_permits(), 4);
        let live = shares.accounts.lock().unwrap().len();
        assert_eq!(live, 1);
    }
}
