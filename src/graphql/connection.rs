//! Relay connections built from the query layer's keyset slices.

use async_graphql::connection::{Connection, CursorType, Edge, EmptyFields};
use async_graphql::{Context, Lookahead, OutputType, SimpleObject};

use crate::query::QueryError;
use crate::query::keyset::{Key, Slice, Window};

/// Relay arguments of a connection field.
#[derive(Debug, Clone, Default)]
pub struct Args {
    pub first: Option<i32>,
    pub after: Option<String>,
    pub last: Option<i32>,
    pub before: Option<String>,
}

impl Args {
    pub fn window<K: Key>(&self) -> Result<Window<K>, QueryError> {
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

/// `totalCount` known up front.
#[derive(SimpleObject)]
pub struct Total {
    /// Rows in the whole list, across all pages.
    pub total_count: u64,
}

/// A row's cursor: its ordering key, encoded only if the client asks for
/// `cursor`, `startCursor` or `endCursor` (most pages never do).
pub struct Cursor(Box<dyn Fn() -> String + Send + Sync>);

impl CursorType for Cursor {
    type Error = &'static str;

    /// Cursors come back as strings and are decoded by [`Args::window`]
    /// with the list's own key type; async-graphql decodes one only in its
    /// `query` helper, which Vitrina does not use.
    fn decode_cursor(_: &str) -> Result<Self, Self::Error> {
        Err("the cursor is not one this list produced")
    }

    fn encode_cursor(&self) -> String {
        (self.0)()
    }
}

pub type Conn<N, A = EmptyFields> = Connection<Cursor, N, A, EmptyFields>;

/// Turns a slice into a connection; `key` gives each row's cursor key.
pub fn from_slice<T, K, N, A>(
    slice: Slice<T>,
    additional: A,
    key: impl Fn(&T) -> K,
    node: impl Fn(T) -> N,
) -> Conn<N, A>
where
    K: Key + Send + Sync + 'static,
    N: OutputType,
    A: async_graphql::ObjectType,
{
    let mut connection =
        Connection::with_additional_fields(slice.has_previous, slice.has_next, additional);
    connection.edges.extend(slice.items.into_iter().map(|item| {
        let key = key(&item);
        Edge::new(Cursor(Box::new(move || key.encode())), node(item))
    }));
    connection
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
