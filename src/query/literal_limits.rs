//! Page sizes written into a statement's text, for PostgreSQL's plan cache.
//!
//! The statements are prepared once per connection, and PostgreSQL plans a
//! prepared statement either for its parameters on each run (a custom
//! plan) or once for any (a generic plan), whichever it estimates cheaper.
//! A generic plan cannot see a `LIMIT` or `OFFSET` given as a parameter
//! and assumes it keeps a tenth of the rows, so as a filter's products
//! grow, the generic plan of a page looks costlier than it is and each run
//! is planned again: at 1,000,000 products the GraphQL dashboard of a brand
//! spent 0.33 ms planning its one statement on every request, where at
//! 100,000 it reused the generic plan (0.04 ms). Written as literals, the
//! limits let the generic plan be priced as what it reads. An offset is
//! written as a literal only when it is 0: a page's size takes a few values,
//! while offsets would make a statement of every page number.

use sea_orm::{DbBackend, Statement, Value, Values};

/// `statement` with every `LIMIT` parameter, and every `OFFSET` parameter
/// of 0, written as a literal and taken out of its values; the other
/// parameters are numbered again in order. Only PostgreSQL plans this
/// way; a statement for another database is returned as it is.
pub fn literal_limits(statement: Statement) -> Statement {
    let (DbBackend::Postgres, Some(Values(values))) = (statement.db_backend, &statement.values)
    else {
        return statement;
    };
    let sql = &statement.sql;
    let mut text = String::with_capacity(sql.len());
    let mut kept = Vec::with_capacity(values.len());
    let mut copied = 0;
    for (at, end, number) in placeholders(sql) {
        let Some(value) = number.checked_sub(1).and_then(|i| values.get(i)) else {
            // Not a placeholder of these values: left as it is.
            continue;
        };
        text.push_str(&sql[copied..at]);
        copied = end;
        match literal(&sql[..at], value) {
            Some(written) => text.push_str(&written.to_string()),
            None => {
                kept.push(value.clone());
                text.push_str(&format!("${}", kept.len()));
            }
        }
    }
    text.push_str(&sql[copied..]);
    Statement {
        sql: text,
        values: Some(Values(kept)),
        db_backend: statement.db_backend,
    }
}

/// The literal that replaces a parameter of `value` following `before`:
/// a `LIMIT`'s count, or an `OFFSET` of 0.
fn literal(before: &str, value: &Value) -> Option<u64> {
    let count = match value {
        Value::BigUnsigned(Some(n)) => *n,
        Value::BigInt(Some(n)) => u64::try_from(*n).ok()?,
        Value::Unsigned(Some(n)) => u64::from(*n),
        Value::Int(Some(n)) => u64::try_from(*n).ok()?,
        _ => return None,
    };
    let before = before.trim_end();
    let follows = |keyword: &str| {
        before
            .strip_suffix(keyword)
            .is_some_and(|rest| rest.ends_with(|c: char| c.is_whitespace() || c == ')'))
    };
    (follows("LIMIT") || (follows("OFFSET") && count == 0)).then_some(count)
}

/// The parameters (`$1`, `$2` ...) of `sql`: where each starts and ends,
/// and its number. Quoted identifiers and strings (with `''`, and in
/// `E'...'` with backslash escapes) are skipped.
fn placeholders(sql: &str) -> Vec<(usize, usize, usize)> {
    let bytes = sql.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            quote @ (b'\'' | b'"') => {
                let escapes = quote == b'\''
                    && i > 0
                    && matches!(bytes[i - 1], b'E' | b'e')
                    && !(i > 1 && (bytes[i - 2].is_ascii_alphanumeric() || bytes[i - 2] == b'_'));
                i += 1;
                while i < bytes.len() {
                    if escapes && bytes[i] == b'\\' {
                        i += 2;
                        continue;
                    }
                    if bytes[i] == quote {
                        if bytes.get(i + 1) == Some(&quote) {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'$' => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
                if let Ok(number) = sql[start + 1..i].parse::<usize>() {
                    found.push((start, i, number));
                }
            }
            _ => i += 1,
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statement(sql: &str, values: Vec<Value>) -> Statement {
        Statement::from_sql_and_values(DbBackend::Postgres, sql, values)
    }

    #[test]
    fn limits_and_a_first_offset_become_literals_and_the_rest_are_numbered_again() {
        let written = literal_limits(statement(
            "SELECT a FROM t WHERE b = $1 AND id IN (SELECT id FROM t WHERE c = $2 \
             LIMIT $3 OFFSET $4) AND d = $5 LIMIT $6 OFFSET $7",
            vec![
                Value::from("x"),
                Value::from(2i64),
                Value::BigUnsigned(Some(101)),
                Value::BigUnsigned(Some(0)),
                Value::from(true),
                Value::BigUnsigned(Some(20)),
                Value::BigUnsigned(Some(40)),
            ],
        ));
        assert_eq!(
            written.sql,
            "SELECT a FROM t WHERE b = $1 AND id IN (SELECT id FROM t WHERE c = $2 \
             LIMIT 101 OFFSET 0) AND d = $3 LIMIT 20 OFFSET $4"
        );
        assert_eq!(
            written.values,
            Some(Values(vec![
                Value::from("x"),
                Value::from(2i64),
                Value::from(true),
                Value::BigUnsigned(Some(40)),
            ]))
        );
    }

    #[test]
    fn quoted_text_and_other_parameters_are_left_alone() {
        let sql = "SELECT 'LIMIT $1', E'\\' LIMIT $2', \"LIMIT $3\" FROM t \
                   WHERE a LIKE $1 ESCAPE E'\\\\' AND b = $2 LIMIT $3";
        let written = literal_limits(statement(
            sql,
            vec![
                Value::from("%x%"),
                Value::BigUnsigned(Some(5)),
                Value::BigUnsigned(Some(7)),
            ],
        ));
        assert_eq!(
            written.sql,
            "SELECT 'LIMIT $1', E'\\' LIMIT $2', \"LIMIT $3\" FROM t \
             WHERE a LIKE $1 ESCAPE E'\\\\' AND b = $2 LIMIT 7"
        );
        assert_eq!(
            written.values,
            Some(Values(vec![
                Value::from("%x%"),
                Value::BigUnsigned(Some(5))
            ]))
        );
    }

    #[test]
    fn a_limit_that_is_not_a_count_stays_a_parameter() {
        let sql = "SELECT a FROM t LIMIT $1";
        let written = literal_limits(statement(sql, vec![Value::from("5")]));
        assert_eq!(written.sql, sql);
    }
}
