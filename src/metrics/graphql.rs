//! GraphQL operations by name, with their cost.
//!
//! Operation names are chosen by clients, so they are bounded before they
//! become labels: a name of at most 64 letters, digits and underscores is
//! kept as it is while fewer than 100 names are known; any other name, and
//! every new name once 100 are known, counts as `(other)`. A client sending
//! a new name with each request adds at most 100 series, ever.

use std::collections::HashSet;
use std::sync::{Arc, LazyLock, RwLock};

use async_graphql::Value;
use async_graphql::parser::types::ExecutableDocument;
use metrics::{SharedString, counter, histogram};

use super::{GRAPHQL_COST, GRAPHQL_OPERATIONS, enabled};

/// Distinct operation names kept as labels.
pub const MAX_NAMES: usize = 100;
/// Longest operation name kept as a label.
pub const MAX_NAME_LEN: usize = 64;
/// The label of an operation without a name.
pub const ANONYMOUS: &str = "(anonymous)";
/// The label of every name not kept.
pub const OTHER: &str = "(other)";

static NAMES: LazyLock<OperationNames> = LazyLock::new(|| OperationNames::new(MAX_NAMES));

/// Counts an operation about to run: `requested` is the request's
/// `operationName`, `document` its parsed query and `cost` what its pricing
/// found (`{"complexity": n, "depth": n}`, as `extensions.analyzer`).
pub fn operation(requested: Option<&str>, document: Option<&ExecutableDocument>, cost: &Value) {
    if !enabled() {
        return;
    }
    // Without `operationName`, a valid document has one operation.
    let name = requested.or_else(|| {
        let (name, _) = document?.operations.iter().next()?;
        name.map(|name| name.as_str())
    });
    let label = NAMES.label(name);
    counter!(GRAPHQL_OPERATIONS, "operation" => label.clone()).increment(1);
    if let Some(complexity) = complexity(cost) {
        histogram!(GRAPHQL_COST, "operation" => label).record(complexity);
    }
}

fn complexity(cost: &Value) -> Option<f64> {
    match cost {
        Value::Object(fields) => match fields.get("complexity")? {
            Value::Number(n) => n.as_f64(),
            _ => None,
        },
        _ => None,
    }
}

/// The operation names kept as labels, up to a number.
struct OperationNames {
    most: usize,
    known: RwLock<HashSet<Arc<str>>>,
}

impl OperationNames {
    fn new(most: usize) -> Self {
        OperationNames {
            most,
            known: RwLock::default(),
        }
    }

    /// The label `name` counts under.
    fn label(&self, name: Option<&str>) -> SharedString {
        let Some(name) = name else {
            return SharedString::const_str(ANONYMOUS);
        };
        let plain = |c: char| c.is_ascii_alphanumeric() || c == '_';
        if name.is_empty() || name.len() > MAX_NAME_LEN || !name.chars().all(plain) {
            return SharedString::const_str(OTHER);
        }
        // A set of labels stays whole if a panic poisoned its lock.
        if let Some(known) = self
            .known
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
        {
            return known.clone().into();
        }
        let mut known = self.known.write().unwrap_or_else(|p| p.into_inner());
        if let Some(name) = known.get(name) {
            return name.clone().into();
        }
        if known.len() >= self.most {
            return SharedString::const_str(OTHER);
        }
        let name: Arc<str> = name.into();
        known.insert(name.clone());
        name.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(names: &OperationNames, name: &str) -> String {
        names.label(Some(name)).to_string()
    }

    #[test]
    fn names_beyond_the_cap_count_as_other_and_known_names_keep_theirs() {
        let names = OperationNames::new(2);
        assert_eq!(label(&names, "First"), "First");
        assert_eq!(label(&names, "Second"), "Second");
        assert_eq!(label(&names, "Third"), OTHER);
        assert_eq!(label(&names, "First"), "First");
    }

    #[test]
    fn long_or_unusual_names_count_as_other_without_taking_a_place() {
        let names = OperationNames::new(1);
        assert_eq!(label(&names, &"a".repeat(MAX_NAME_LEN + 1)), OTHER);
        assert_eq!(label(&names, "café"), OTHER);
        assert_eq!(label(&names, ""), OTHER);
        assert_eq!(
            label(&names, &"a".repeat(MAX_NAME_LEN)),
            "a".repeat(MAX_NAME_LEN)
        );
    }

    #[test]
    fn an_operation_without_a_name_is_anonymous() {
        assert_eq!(OperationNames::new(1).label(None).to_string(), ANONYMOUS);
    }
}
