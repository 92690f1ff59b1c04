//! How resolvers reach the database: every statement a field may run and
//! every dataloader call goes through [`Reads`], whose futures are boxed.
//!
//! A field's future is as big as its object's biggest field future (see
//! `inline.rs`), and resolving a page joins and moves every one. Boxed, the
//! work of a field that may run a statement is a pointer, which most fields
//! of a page never follow (their rows come read with the page). A resolver
//! gets the database and the loaders only from here, so a new field cannot
//! forget the box, nor the request's share of the pool (`request/pool_share.rs`):
//! the connection here is the request's [`SharedConnection`].

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::Arc;

use async_graphql::Context;
use tokio::sync::OnceCell;

use super::loaders::{Load, Loaders};
use crate::graphql::request::pool_share::SharedConnection;
use crate::query::QueryError;
use crate::query::budget::ResponseBudget;

/// A boxed future that may run statements.
pub type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The database, the request's loaders and its answer's byte budget, as
/// resolvers use them.
#[derive(Clone, Copy)]
pub struct Reads<'a> {
    db: &'a SharedConnection,
    loaders: &'a Loaders,
    budget: &'a ResponseBudget,
}

impl<'a> Reads<'a> {
    pub fn new(db: &'a SharedConnection, loaders: &'a Loaders, budget: &'a ResponseBudget) -> Self {
        Reads {
            db,
            loaders,
            budget,
        }
    }

    /// The byte budget of the answer, which reads of products count against.
    pub fn budget(self) -> &'a ResponseBudget {
        self.budget
    }

    /// Those of the request `ctx` belongs to.
    pub fn of(ctx: &Context<'a>) -> Self {
        super::context::reads(ctx)
    }

    /// Runs `statements`, a query-layer call, over the request's share of
    /// the database pool.
    pub fn run<T, F>(self, statements: impl FnOnce(&'a SharedConnection) -> F) -> Boxed<'a, T>
    where
        F: Future<Output = T> + Send + 'a,
    {
        Box::pin(statements(self.db))
    }

    /// The value of `key` in the loader `which` picks.
    pub fn load<K, V>(
        self,
        which: fn(&Loaders) -> &Load<K, V>,
        key: K,
    ) -> Boxed<'a, Result<Option<V>, Arc<QueryError>>>
    where
        K: Send + Sync + Hash + Eq + Clone + 'static,
        V: Send + Sync + Clone + 'static,
    {
        Box::pin(which(self.loaders).load_one(key))
    }

    /// The values of every one of `keys` in the loader `which` picks, put
    /// into `cell` by the first caller, whom the others wait for.
    pub fn load_once<K, V>(
        self,
        cell: &'a OnceCell<HashMap<K, V>>,
        which: fn(&Loaders) -> &Load<K, V>,
        keys: &'a [K],
    ) -> Boxed<'a, Result<&'a HashMap<K, V>, Arc<QueryError>>>
    where
        K: Send + Sync + Hash + Eq + Clone + 'static,
        V: Send + Sync + Clone + 'static,
    {
        let loader = which(self.loaders);
        Box::pin(cell.get_or_try_init(move || loader.load_many(keys.iter().cloned())))
    }

    /// The values of `keys` in the loader `which` picks.
    pub fn load_many<K, V>(
        self,
        which: fn(&Loaders) -> &Load<K, V>,
        keys: Vec<K>,
    ) -> Boxed<'a, Result<HashMap<K, V>, Arc<QueryError>>>
    where
        K: Send + Sync + Hash + Eq + Clone + 'static,
        V: Send + Sync + Clone + 'static,
    {
        Box::pin(which(self.loaders).load_many(keys))
    }
}
