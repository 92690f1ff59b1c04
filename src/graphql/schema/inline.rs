//! Objects whose fields are resolved in place, in query order.
//!
//! async-graphql resolves an object by boxing each selected field's future
//! and driving them all through a `FuturesUnordered`: two allocations, a
//! copy of the future and a task wake-up per field. On a page of products
//! with their prices that is thousands of fields (and hundreds of edges,
//! which is why connections are Vitrina's own), and once a page's
//! relations are loaded every one of them is ready when first polled.
//! [`Inline`] resolves the wrapped object's fields as one joined set of
//! futures (one allocation per object): ready fields finish on their first
//! poll, fields that wait for the database still wait together, and the
//! answer's keys come out in the order the query asks for them.
//!
//! Each field's future is as big as the object's biggest (a product's was
//! 3.3 KB), and joining them moves every one: so the work of a field that
//! may run a statement of its own is boxed, as everything resolvers read
//! through `reads.rs` is, and most fields of a page never reach it (a
//! product's is now 0.8 KB).
//!
//! The schema sees the wrapped type itself: same name, fields and
//! descriptions, since registration is delegated to it. An extension's
//! `resolve` hook does not see these fields; the schemas register none
//! that has one.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;

use async_graphql::indexmap::IndexMap;
use async_graphql::parser::types::{Field, Selection, SelectionSet};
use async_graphql::registry::Registry;
use async_graphql::{
    ContextSelectionSet, Name, ObjectType, OutputType, Positioned, ServerError, ServerResult, Value,
};
use futures_util::future::join_all;

/// An object of type `T`, resolved in place (see the module).
pub struct Inline<T>(pub T);

impl<T: ObjectType> OutputType for Inline<T> {
    fn type_name() -> Cow<'static, str> {
        T::type_name()
    }

    fn create_type_info(registry: &mut Registry) -> String {
        T::create_type_info(registry)
    }

    async fn resolve(
        &self,
        ctx: &ContextSelectionSet<'_>,
        _field: &Positioned<Field>,
    ) -> ServerResult<Value> {
        in_place(&self.0, ctx).await
    }
}

/// Resolves `object`'s fields in place (see the module): what [`Inline`]
/// does, for a value it cannot own (a variant of an interface).
pub async fn in_place<T: ObjectType>(
    object: &T,
    ctx: &ContextSelectionSet<'_>,
) -> ServerResult<Value> {
    let mut fields = Vec::new();
    collect::<T>(ctx, &ctx.item.node, &mut fields);
    let answers = join_all(fields.into_iter().map(|field| async move {
        let key = field.node.response_key().node.clone();
        if field.node.name.node == "__typename" {
            return Ok((key, Value::String(T::type_name().into_owned())));
        }
        let ctx_field = ctx.with_field(field);
        let value = object.resolve_field(&ctx_field).await?;
        Ok::<_, ServerError>((key, value.unwrap_or_default()))
    }))
    .await;
    let mut answer = IndexMap::with_capacity(answers.len());
    for field in answers {
        match field {
            Ok((key, value)) => merge(&mut answer, key, value),
            // As async-graphql does: the error is reported, the field left out.
            Err(error) => ctx.add_error(error),
        }
    }
    Ok(if answer.is_empty() {
        Value::Null
    } else {
        Value::Object(answer)
    })
}

/// A value of type `T` whose resolution is boxed. A list that can hold its
/// own ancestors' type (a seller's products, under a product's seller)
/// needs one box on the way: objects resolved in place nest their fields'
/// futures, and a future cannot contain itself.
pub struct Boxed<T>(pub T);

impl<T: OutputType> OutputType for Boxed<T> {
    fn type_name() -> Cow<'static, str> {
        T::type_name()
    }

    fn create_type_info(registry: &mut Registry) -> String {
        T::create_type_info(registry)
    }

    async fn resolve(
        &self,
        ctx: &ContextSelectionSet<'_>,
        field: &Positioned<Field>,
    ) -> ServerResult<Value> {
        boxed(&self.0, ctx, field).await
    }
}

type Resolving<'a> = Pin<Box<dyn Future<Output = ServerResult<Value>> + Send + 'a>>;

fn boxed<'a, T: OutputType>(
    value: &'a T,
    ctx: &'a ContextSelectionSet<'a>,
    field: &'a Positioned<Field>,
) -> Resolving<'a> {
    Box::pin(value.resolve(ctx, field))
}

/// The fields of `set` that apply to `T`, fragments flattened in place.
/// (Skipped and excluded selections are already gone: async-graphql removes
/// them before execution; validation has checked every fragment exists.)
fn collect<'a, T: ObjectType>(
    ctx: &ContextSelectionSet<'a>,
    set: &'a SelectionSet,
    fields: &mut Vec<&'a Positioned<Field>>,
) {
    let applies = |condition: &str| {
        condition == T::type_name()
            || ctx
                .schema_env
                .registry
                .implements
                .get(T::type_name().as_ref())
                .is_some_and(|interfaces| interfaces.contains(condition))
    };
    for selection in &set.items {
        match &selection.node {
            Selection::Field(field) => fields.push(field),
            Selection::FragmentSpread(spread) => {
                let fragment = ctx.query_env.fragments.get(&spread.node.fragment_name.node);
                if let Some(fragment) = fragment
                    && applies(&fragment.node.type_condition.node.on.node)
                {
                    collect::<T>(ctx, &fragment.node.selection_set.node, fields);
                }
            }
            Selection::InlineFragment(fragment) => {
                let condition = fragment.node.type_condition.as_ref();
                if condition.is_none_or(|c| applies(&c.node.on.node)) {
                    collect::<T>(ctx, &fragment.node.selection_set.node, fields);
                }
            }
        }
    }
}

/// Adds a field's answer; a key asked for twice merges its selections.
fn merge(object: &mut IndexMap<Name, Value>, key: Name, value: Value) {
    match (object.get_mut(&key), value) {
        (Some(Value::Object(into)), Value::Object(from)) => {
            for (key, value) in from {
                merge(into, key, value);
            }
        }
        (Some(Value::List(into)), Value::List(from)) => {
            for (into, from) in into.iter_mut().zip(from) {
                if let (Value::Object(into), Value::Object(from)) = (into, from) {
                    for (key, value) in from {
                        merge(into, key, value);
                    }
                }
            }
        }
        (Some(_), _) => {}
        (None, value) => {
            object.insert(key, value);
        }
    }
}
