//! Response fields in the order the query asks for them. async-graphql
//! collects an object's fields as they finish, so a field that waits for the
//! database lands after one asked for later; the GraphQL spec asks for the
//! query's order. This puts every object of an answer back in that order.

use async_graphql::indexmap::IndexMap;
use async_graphql::parser::types::{
    DocumentOperations, ExecutableDocument, Selection, SelectionSet,
};
use async_graphql::{Name, Value};

/// The response keys of a selection, in query order, each with what is
/// selected below it (fragments flattened, repeated keys merged). Built once
/// per request from the query, then laid over the answer.
struct Fields<'a>(Vec<(&'a str, Fields<'a>)>);

/// Orders every object of `data`, the answer to `operation` of `document`.
pub fn restore(document: &ExecutableDocument, operation: Option<&str>, data: &mut Value) {
    let operation = match (&document.operations, operation) {
        (DocumentOperations::Single(operation), _) => operation,
        (DocumentOperations::Multiple(operations), Some(name)) => match operations.get(name) {
            Some(operation) => operation,
            None => return,
        },
        (DocumentOperations::Multiple(_), None) => return,
    };
    let fields = Fields::of(document, &[&operation.node.selection_set.node]);
    fields.order(data);
}

impl<'a> Fields<'a> {
    fn of(document: &'a ExecutableDocument, sets: &[&'a SelectionSet]) -> Fields<'a> {
        let mut keys: Vec<(&str, Vec<&SelectionSet>)> = Vec::new();
        for set in sets {
            collect(document, set, &mut keys);
        }
        Fields(
            keys.into_iter()
                .map(|(key, below)| (key, Fields::of(document, &below)))
                .collect(),
        )
    }

    fn order(&self, value: &mut Value) {
        match value {
            Value::List(items) => {
                for item in items {
                    self.order(item);
                }
            }
            // No selection below a field: an object there is data (JSON).
            Value::Object(_) if self.0.is_empty() => {}
            Value::Object(fields) => {
                if !self.in_order(fields) {
                    // A stable sort that reuses the stored hashes; anything
                    // not asked for (nothing should be) keeps its turn at the end.
                    fields
                        .sort_by_cached_key(|name, _| self.position(name, 0).unwrap_or(usize::MAX));
                }
                let mut from = 0;
                for (name, field) in fields.iter_mut() {
                    if let Some(at) = self.position(name, from) {
                        self.0[at].1.order(field);
                        from = at + 1;
                    }
                }
            }
            _ => {}
        }
    }

    /// Whether `fields` already come in query order (most objects do: only
    /// fields that wait can finish out of turn).
    fn in_order(&self, fields: &IndexMap<Name, Value>) -> bool {
        let mut from = 0;
        fields.keys().all(|name| match self.position(name, from) {
            Some(at) => {
                from = at + 1;
                true
            }
            None => false,
        })
    }

    /// Where `name` is among the keys, looking from `from` on.
    fn position(&self, name: &Name, from: usize) -> Option<usize> {
        self.0[from..]
            .iter()
            .position(|(key, _)| *key == name.as_str())
            .map(|i| from + i)
    }
}

/// Adds the response keys of `set` to `keys`, fragments flattened in place.
fn collect<'a>(
    document: &'a ExecutableDocument,
    set: &'a SelectionSet,
    keys: &mut Vec<(&'a str, Vec<&'a SelectionSet>)>,
) {
    for selection in &set.items {
        match &selection.node {
            Selection::Field(field) => {
                let key = field.node.response_key().node.as_str();
                let below = &field.node.selection_set.node;
                match keys.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, sets)) => sets.push(below),
                    None => keys.push((key, vec![below])),
                }
            }
            Selection::FragmentSpread(spread) => {
                if let Some(fragment) = document.fragments.get(&spread.node.fragment_name.node) {
                    collect(document, &fragment.node.selection_set.node, keys);
                }
            }
            Selection::InlineFragment(inline) => {
                collect(document, &inline.node.selection_set.node, keys);
            }
        }
    }
}
