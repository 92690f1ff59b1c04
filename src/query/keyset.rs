//! Keyset ("cursor") paging for the GraphQL connections: a page is found by
//! comparing the ordering key with the cursor's key, so page 10,000 costs what
//! page 1 costs. Cursors are opaque: base64url of the key's JSON.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sea_orm::sea_query::{Expr, SimpleExpr};
use sea_orm::{
    ConnectionTrait, DbErr, EntityTrait, ExprTrait, FromQueryResult, IntoSimpleExpr, Order,
    QueryFilter, QueryOrder, QuerySelect, Select, Value,
};
use serde::{Serialize, de::DeserializeOwned};

use super::{QueryError, check_text_within};

/// Most rows one connection page may hold.
pub const MAX_PAGE: u64 = 500;
/// Rows when neither `first` nor `last` is given.
pub const DEFAULT_PAGE: u64 = 100;
/// Longest cursor accepted, in characters. A cursor of the `NAME` order
/// carries a product's name, which the merge lets be 2,048 bytes
/// (`jobs::merge::item_limits::NAME`, whose tests hold the two together); JSON
/// may write each byte as a six-byte escape (`\u0001`), the rest of the key
/// takes under 256 bytes, and base64 writes 4 characters for every 3 bytes.
/// So every cursor a list gives is accepted back, though it is longer than
/// the other text arguments.
pub const MAX_CURSOR_LEN: usize = (6 * 2048 + 256_usize).div_ceil(3) * 4;

/// The ordering key of a list, which a cursor carries with the name of the
/// kind of list it came from: keys of the same shape (a product's and a
/// session's are both a time and an id) do not pass for each other.
pub trait Key: Serialize + DeserializeOwned + Clone {
    /// The kind of list, written into each cursor.
    const LIST: &'static str;

    /// The key's values, in the order of the list's sort columns.
    fn values(&self) -> Vec<Value>;

    fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&(Self::LIST, self)).unwrap_or_default())
    }

    /// The key of `cursor`, the value of argument `name`, if the cursor is
    /// one this kind of list produced. Opaque as it is, it comes from the
    /// client: its text passes the rule of every text parameter (with room
    /// for the longest key, [`MAX_CURSOR_LEN`]), and its
    /// times must lie in years 0 to 9999 (those RFC 3339 writes, within
    /// every database's range), as the times of every row do.
    fn decode(name: &str, cursor: &str) -> Result<Self, QueryError> {
        check_text_within(name, cursor, MAX_CURSOR_LEN)?;
        URL_SAFE_NO_PAD
            .decode(cursor)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<(String, Self)>(&bytes).ok())
            .filter(|(list, key)| list == Self::LIST && key.values().iter().all(storable))
            .map(|(_, key)| key)
            .ok_or_else(|| QueryError::Invalid(format!("{name} is not a cursor of this list")))
    }
}

/// Whether a cursor's value is one a row can hold.
fn storable(value: &Value) -> bool {
    match value {
        Value::ChronoDateTimeUtc(Some(time)) => super::storable_time(time),
        Value::String(Some(text)) => !text.contains('\0'),
        _ => true,
    }
}

/// Relay arguments, decoded.
#[derive(Debug, Clone)]
pub struct Window<K> {
    pub after: Option<K>,
    pub before: Option<K>,
    pub first: Option<u64>,
    pub last: Option<u64>,
    /// Whether to read one row past the page, which tells whether more
    /// follow (`hasNextPage`, or `hasPreviousPage` with `last`). Without it
    /// the page reads only its own rows and reports no more.
    pub peek: bool,
}

impl<K: Key> Window<K> {
    /// Validates Relay arguments: sizes within 0..=500, not both first and last.
    pub fn new(
        after: Option<&str>,
        before: Option<&str>,
        first: Option<i64>,
        last: Option<i64>,
    ) -> Result<Self, QueryError> {
        let size = |name: &str, v: Option<i64>| -> Result<Option<u64>, QueryError> {
            match v {
                None => Ok(None),
                Some(n) if (0..=MAX_PAGE as i64).contains(&n) => Ok(Some(n as u64)),
                Some(_) => Err(QueryError::Invalid(format!(
                    "{name} must be between 0 and {MAX_PAGE}"
                ))),
            }
        };
        let window = Window {
            after: after.map(|c| K::decode("after", c)).transpose()?,
            before: before.map(|c| K::decode("before", c)).transpose()?,
            first: size("first", first)?,
            last: size("last", last)?,
            peek: true,
        };
        if window.first.is_some() && window.last.is_some() {
            return Err(QueryError::Invalid(
                "pass either first or last, not both".into(),
            ));
        }
        Ok(window)
    }
}

/// One page of a connection.
#[derive(Debug, Clone)]
pub struct Slice<T> {
    pub items: Vec<T>,
    pub has_previous: bool,
    pub has_next: bool,
}

fn tuple(values: Vec<Value>) -> SimpleExpr {
    Expr::tuple(values.into_iter().map(Expr::val))
}

/// Fetches the window of `select`, whose natural order is `columns` (table
/// columns, or any expressions) all in direction `natural`. Rows come back in natural order.
pub async fn fetch<E, K, C>(
    db: &impl ConnectionTrait,
    select: Select<E>,
    columns: &[C],
    natural: Order,
    window: &Window<K>,
) -> Result<Slice<E::Model>, DbErr>
where
    E: EntityTrait,
    E::Model: FromQueryResult + Send + Sync,
    K: Key,
    C: IntoSimpleExpr + Clone,
{
    let rows = window.bound(select, columns, natural).all(db).await?;
    Ok(window.cut(rows))
}

impl<K: Key> Window<K> {
    /// `select` narrowed to this window: rows past the cursors, in the
    /// window's reading order, one more than the page holds when it peeks.
    /// Columns are table-qualified, so the statement can join other tables.
    pub fn bound<E, C>(&self, select: Select<E>, columns: &[C], natural: Order) -> Select<E>
    where
        E: EntityTrait,
        C: IntoSimpleExpr + Clone,
    {
        let keys = || Expr::tuple(columns.iter().map(|c| c.clone().into_simple_expr()));
        let descending = matches!(natural, Order::Desc);
        let mut select = select;
        if let Some(after) = &self.after {
            let bound = tuple(after.values());
            select = select.filter(if descending {
                keys().lt(bound)
            } else {
                keys().gt(bound)
            });
        }
        if let Some(before) = &self.before {
            let bound = tuple(before.values());
            select = select.filter(if descending {
                keys().gt(bound)
            } else {
                keys().lt(bound)
            });
        }
        let order = match (descending, self.last.is_some()) {
            (true, false) | (false, true) => Order::Desc,
            _ => Order::Asc,
        };
        for column in columns {
            select = select.order_by(column.clone(), order.clone());
        }
        select.limit(self.reads())
    }

    /// The page out of the rows [`Window::bound`] read, in natural order.
    pub fn cut<T>(&self, mut rows: Vec<T>) -> Slice<T> {
        let size = self.size();
        let more = rows.len() as u64 > size;
        rows.truncate(size as usize);
        if self.last.is_some() {
            rows.reverse();
            Slice {
                items: rows,
                has_previous: more,
                has_next: self.before.is_some(),
            }
        } else {
            Slice {
                items: rows,
                has_previous: self.after.is_some(),
                has_next: more,
            }
        }
    }

    fn size(&self) -> u64 {
        self.last.or(self.first).unwrap_or(DEFAULT_PAGE)
    }

    /// How many rows [`Window::bound`] reads at most.
    pub fn reads(&self) -> u64 {
        self.size() + u64::from(self.peek)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::product_order::ProductKey;
    use crate::query::sessions::SubmissionKey;

    fn cursor(json: &str) -> String {
        URL_SAFE_NO_PAD.encode(json)
    }

    #[test]
    fn a_cursor_decodes_only_to_a_key_its_list_can_hold() {
        let key = ProductKey::Newest(chrono::Utc::now(), uuid::Uuid::new_v4());
        assert!(ProductKey::decode("after", &key.encode()).is_ok());
        for refused in [
            cursor(
                r#"["products",["+200000-01-01T00:00:00Z","00000000-0000-0000-0000-000000000000"]]"#,
            ),
            cursor(
                r#"["products",["-0001-12-31T00:00:00Z","00000000-0000-0000-0000-000000000000"]]"#,
            ),
            cursor(
                r#"["sessions",["2026-01-01T00:00:00Z","00000000-0000-0000-0000-000000000000"]]"#,
            ),
            cursor(&format!("{}1{}", "[".repeat(5000), "]".repeat(5000))),
            "a\0b".into(),
            "not base64!".into(),
        ] {
            match ProductKey::decode("after", &refused) {
                Err(QueryError::Invalid(message)) => {
                    assert!(message.starts_with("after "), "{message}")
                }
                other => panic!("{refused}: {other:?}"),
            }
        }
        assert!(
            SubmissionKey::decode("before", &cursor(r#"["submissions",9223372036854775807]"#))
                .is_ok()
        );
        assert!(
            SubmissionKey::decode("before", &cursor(r#"["submissions",9223372036854775808]"#))
                .is_err()
        );
    }
}
