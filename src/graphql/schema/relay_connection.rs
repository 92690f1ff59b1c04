//! Relay connections built from the query layer's keyset slices.

use std::borrow::Cow;

use async_graphql::connection::{EmptyFields, PageInfo};
use async_graphql::{Context, Lookahead, Object, ObjectType, OutputType, SimpleObject, TypeName};

use super::inline::Inline;

use crate::query::QueryError;
use crate::query::keyset::{DEFAULT_PAGE, Key, MAX_PAGE, Slice, Window};

/// The complexity a `totalCount` reports: not its cost, which depends on
/// the list it counts (its filter, its table), but a mark its connection
/// finds in the sum of its fields' complexities ([`page_cost`]).
/// async-graphql hands a field only that sum, and a count runs once per
/// list, not once per row, so it must not be multiplied by the page size
/// as the rows' fields are. Sound while a list's fields add up to less than
/// the mark: at most `config::MAX_FIELDS_LIMIT` fields of at most [`MOST`].
pub const COUNTED: usize = 1 << 44;

/// The highest complexity a list reports: anything more is over every
/// complexity limit anyway (`config::MAX_COMPLEXITY_LIMIT`).
pub const MOST: usize = crate::config::MAX_COMPLEXITY_LIMIT + 1;

/// Complexity of a connection field whose fields add up to `child`: the
/// rows' fields times the page size, and `count` for each `totalCount`
/// asked (once, whatever the page size, even 0).
pub fn page_cost(first: Option<i32>, last: Option<i32>, child: usize, count: usize) -> usize {
    let size = first
        .or(last)
        .unwrap_or(DEFAULT_PAGE as i32)
        .clamp(0, MAX_PAGE as i32) as usize;
    let (counts, fields) = (child / COUNTED, child % COUNTED);
    size.saturating_mul(fields)
        .saturating_add(1)
        .saturating_add(counts.saturating_mul(count))
        .min(MOST)
}

/// Relay arguments of a connection field.
#[derive(Debug, Clone, Default)]
pub struct Args {
    pub first: Option<i32>,
    pub after: Option<String>,
    pub last: Option<i32>,
    pub before: Option<String>,
}

impl Args {
    fn window<K: Key>(&self) -> Result<Window<K>, QueryError> {
        Window::new(
            self.after.as_deref(),
            self.before.as_deref(),
            self.first.map(i64::from),
            self.last.map(i64::from),
        )
    }

    /// The window of the connection field `ctx` resolves: it reads one row
    /// past the page only when the query asks whether more rows follow.
    pub fn window_in<K: Key>(&self, ctx: &Context<'_>) -> Result<Window<K>, QueryError> {
        let mut window = self.window()?;
        window.peek = asks_more(&ctx.look_ahead());
        Ok(window)
    }

    /// Only `first` (or nothing): the shape a batched "first N" loader can answer.
    pub fn simple_first(&self) -> Option<u64> {
        let window = self.window::<NoKey>().ok()?;
        (self.after.is_none() && self.before.is_none() && window.last.is_none())
            .then(|| window.first.unwrap_or(crate::query::keyset::DEFAULT_PAGE))
    }
}

/// Whether a connection's selection asks `pageInfo { hasNextPage }` or
/// `hasPreviousPage`: only they need the row past a page (cursors do not).
pub fn asks_more(connection: &Lookahead<'_>) -> bool {
    let info = connection.field("pageInfo");
    info.field("hasNextPage").exists() || info.field("hasPreviousPage").exists()
}

/// Key type for validating sizes when no cursor is involved.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct NoKey;

impl Key for NoKey {
    const LIST: &'static str = "none";

    fn values(&self) -> Vec<sea_orm::Value> {
        Vec::new()
    }
}

/// `totalCount` counted with the page, whether asked or not (the list's
/// field costs the count).
#[derive(SimpleObject)]
pub struct Total {
    /// Rows in the whole list, across all pages (counted with every page of
    /// it: its cost is the list's).
    pub total_count: u64,
}

/// A row's cursor: its ordering key, encoded only if the client asks for
/// `cursor`, `startCursor` or `endCursor` (most pages never do). Cursors
/// come back as strings and are decoded by [`Args::window`] with the
/// list's own key type.
pub struct Cursor(Box<dyn Fn() -> String + Send + Sync>);

impl Cursor {
    fn encode(&self) -> String {
        (self.0)()
    }
}

/// One page of a list as a Relay connection, named after its nodes
/// (`ProductConnection`, with `ProductEdge`s) as async-graphql names its
/// own; `A` adds the list's fields (its `totalCount`). Unlike
/// async-graphql's, the connection and its edges are resolved in place
/// ([`Inline`]): a page of prices is hundreds of edges, each of which
/// async-graphql would resolve as a set of boxed field futures.
pub struct Connection<N, A> {
    edges: Vec<Edge<N>>,
    additional: A,
    has_previous_page: bool,
    has_next_page: bool,
}

/// A connection, resolved in place.
pub type Conn<N, A = EmptyFields> = Inline<Connection<N, A>>;

#[Object(name_type)]
impl<N: OutputType, A: ObjectType> Connection<N, A> {
    /// Information to aid in pagination.
    async fn page_info(&self) -> PageInfo {
        PageInfo {
            has_previous_page: self.has_previous_page,
            has_next_page: self.has_next_page,
            start_cursor: self.edges.first().map(|edge| edge.cursor.encode()),
            end_cursor: self.edges.last().map(|edge| edge.cursor.encode()),
        }
    }

    /// A list of edges.
    async fn edges(&self) -> Vec<Inline<&Edge<N>>> {
        self.edges.iter().map(Inline).collect()
    }

    /// A list of nodes.
    async fn nodes(&self) -> Vec<&N> {
        self.edges.iter().map(|edge| &edge.node).collect()
    }

    #[graphql(flatten)]
    async fn additional_fields(&self) -> &A {
        &self.additional
    }
}

impl<N: OutputType, A: ObjectType> TypeName for Connection<N, A> {
    fn type_name() -> Cow<'static, str> {
        format!("{}Connection", N::type_name()).into()
    }
}

/// A node of a connection with its cursor.
pub struct Edge<N> {
    cursor: Cursor,
    node: N,
}

/// An edge in a connection.
#[Object(name_type)]
impl<N: OutputType> Edge<N> {
    /// The item at the end of the edge
    async fn node(&self) -> &N {
        &self.node
    }

    /// A cursor for use in pagination
    async fn cursor(&self) -> String {
        self.cursor.encode()
    }
}

impl<N: OutputType> TypeName for Edge<N> {
    fn type_name() -> Cow<'static, str> {
        format!("{}Edge", N::type_name()).into()
    }
}

/// Turns a slice into a connection; `key` gives each row's cursor key.
pub fn from_slice<T, K, N, A>(
    slice: Slice<T>,
    additional: A,
    key: impl Fn(&T) -> K,
    node: impl Fn(T) -> N,
) -> Conn<N, A>
where
    K: Key + Send + Sync + 'static,
{
    let edges = slice
        .items
        .into_iter()
        .map(|item| {
            let key = key(&item);
            Edge {
                cursor: Cursor(Box::new(move || key.encode())),
                node: node(item),
            }
        })
        .collect();
    Inline(Connection {
        edges,
        additional,
        has_previous_page: slice.has_previous,
        has_next_page: slice.has_next,
    })
}

/// A "first N" batch answer as a connection slice: it has a next page when
/// the batch read a row past the N.
pub fn first_n<T>(mut rows: Vec<T>, n: u64) -> Slice<T> {
    let has_next = rows.len() as u64 > n;
    rows.truncate(n as usize);
    Slice {
        items: rows,
        has_previous: false,
        has_next,
    }
}
