//! Global object identification (Relay's `Node`, as GitHub serves it):
//! products, sellers and scrape sessions carry an opaque global id that
//! `node(id:)` and `nodes(ids:)` fetch them by, with the permissions of
//! their own queries (a session only for its account).
//!
//! The spec names the field `id`, which these types already use for the
//! UUID that REST shows: the global id is `globalId` instead, so neither
//! surface changes what `id` means.

use std::borrow::Cow;
use std::collections::HashMap;

use async_graphql::parser::types::Field;
use async_graphql::registry::Registry;
use async_graphql::{
    Context, ContextSelectionSet, ID, Interface, OutputType, Positioned, Result, ServerResult,
    Value,
};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use uuid::Uuid;

use super::context::caller;
use super::inline::in_place;
use super::page::Page;
use super::product::Product;
use super::reads::Reads;
use super::seller::{self, Seller};
use super::session::ScrapeSession;
use crate::graphql::error::gql;
use crate::query::keyset::MAX_PAGE;
use crate::query::products::Related;
use crate::query::{QueryError, sessions};

/// What a global id names: base64url of `<type>:<UUID>`, which clients
/// should not take apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GlobalId {
    Product(Uuid),
    Seller(Uuid),
    ScrapeSession(Uuid),
}

impl GlobalId {
    fn parts(self) -> (&'static str, Uuid) {
        match self {
            GlobalId::Product(id) => ("Product", id),
            GlobalId::Seller(id) => ("Seller", id),
            GlobalId::ScrapeSession(id) => ("ScrapeSession", id),
        }
    }

    /// The id `text` stands for; INVALID_PARAMETER when this server never
    /// issued it.
    fn parse(text: &str) -> Result<GlobalId, QueryError> {
        let invalid = || {
            QueryError::Invalid(
                "an id must be the globalId of a Product, Seller or ScrapeSession".into(),
            )
        };
        let decoded = URL_SAFE_NO_PAD.decode(text).map_err(|_| invalid())?;
        let decoded = String::from_utf8(decoded).map_err(|_| invalid())?;
        let (kind, id) = decoded.split_once(':').ok_or_else(invalid)?;
        let id = Uuid::parse_str(id).map_err(|_| invalid())?;
        match kind {
            "Product" => Ok(GlobalId::Product(id)),
            "Seller" => Ok(GlobalId::Seller(id)),
            "ScrapeSession" => Ok(GlobalId::ScrapeSession(id)),
            _ => Err(invalid()),
        }
    }
}

impl From<GlobalId> for ID {
    fn from(id: GlobalId) -> ID {
        let (kind, id) = id.parts();
        ID(URL_SAFE_NO_PAD.encode(format!("{kind}:{id}")))
    }
}

/// An object with a global id (Relay's `Node`). Its field is `globalId`,
/// not the spec's `id`: `id` is the UUID REST also shows.
#[derive(Interface)]
#[graphql(field(
    name = "global_id",
    ty = "ID",
    desc = "Opaque global id, for `node(id:)` and `nodes(ids:)`."
))]
#[allow(
    clippy::large_enum_variant,
    reason = "one per id asked for, built once: boxing would only add an allocation"
)]
pub enum Node {
    Product(Product),
    Seller(Seller),
    ScrapeSession(ScrapeSession),
}

/// What `node` and `nodes` answer for one id: the object, resolved in
/// place as its own queries resolve it, or null with NOT_FOUND.
pub struct Found(Option<Node>);

impl OutputType for Found {
    fn type_name() -> Cow<'static, str> {
        Node::type_name()
    }

    // Nullable, as Relay's `node` is: one unknown id of `nodes` does not
    // void the others.
    fn qualified_type_name() -> String {
        Node::type_name().into_owned()
    }

    fn create_type_info(registry: &mut Registry) -> String {
        Node::create_type_info(registry);
        Node::type_name().into_owned()
    }

    async fn resolve(
        &self,
        ctx: &ContextSelectionSet<'_>,
        field: &Positioned<Field>,
    ) -> ServerResult<Value> {
        match &self.0 {
            Some(Node::Product(product)) => in_place(product, ctx).await,
            Some(Node::Seller(seller)) => in_place(seller, ctx).await,
            Some(Node::ScrapeSession(session)) => in_place(session, ctx).await,
            None => {
                let error = gql(QueryError::NotFound).into_server_error(field.pos);
                ctx.add_error(ctx.set_error_path(error));
                Ok(Value::Null)
            }
        }
    }
}

/// Complexity of `nodes`: each id costs what `node` would.
pub fn nodes_cost(ids: usize, child: usize) -> usize {
    ids.min(MAX_PAGE as usize)
        .saturating_mul(child)
        .saturating_add(1)
        .min(super::relay_connection::MOST)
}

/// The objects `ids` name, in their order: every id is checked before any
/// statement runs, and each type is fetched in one statement.
pub async fn fetch(ctx: &Context<'_>, ids: &[ID]) -> Result<Vec<Found>> {
    if ids.len() > MAX_PAGE as usize {
        return Err(QueryError::Invalid(format!("ids takes at most {MAX_PAGE} ids")).into());
    }
    let ids = ids
        .iter()
        .map(|id| GlobalId::parse(id))
        .collect::<Result<Vec<_>, _>>()?;
    let of = |kind: fn(GlobalId) -> Option<Uuid>| -> Vec<Uuid> {
        ids.iter().copied().filter_map(kind).collect()
    };
    let product_ids = of(|id| match id {
        GlobalId::Product(id) => Some(id),
        _ => None,
    });
    let seller_ids = of(|id| match id {
        GlobalId::Seller(id) => Some(id),
        _ => None,
    });
    let session_ids = of(|id| match id {
        GlobalId::ScrapeSession(id) => Some(id),
        _ => None,
    });

    let reads = Reads::of(ctx);
    let account = caller(ctx).account_id;
    let products = if product_ids.is_empty() {
        HashMap::new()
    } else {
        reads
            .load_many(|l| &l.products, product_ids)
            .await
            .map_err(gql)?
    };
    let sellers = if seller_ids.is_empty() {
        HashMap::new()
    } else {
        reads
            .load_many(|l| &l.sellers, seller_ids)
            .await
            .map_err(gql)?
    };
    let sessions = if session_ids.is_empty() {
        HashMap::new()
    } else {
        reads
            .run(|db| sessions::sessions_for_account(db, account, &session_ids))
            .await
            .map_err(QueryError::from)?
    };

    // The products form one page, the sellers one batch, so what their
    // fields load is loaded for all of them at once.
    let models: Vec<_> = products.values().cloned().collect();
    let page = Page::new(&models, Related::default());
    let fetched = seller::Fetched::new(sellers.keys().copied().collect());
    // An id asked for twice gets the object twice.
    Ok(ids
        .into_iter()
        .map(|id| {
            Found(match id {
                GlobalId::Product(id) => products
                    .get(&id)
                    .cloned()
                    .map(|model| Node::Product(Product(model, page.clone()))),
                GlobalId::Seller(id) => sellers
                    .get(&id)
                    .cloned()
                    .map(|model| Node::Seller(Seller::fetched(model, fetched.clone()))),
                GlobalId::ScrapeSession(id) => sessions
                    .get(&id)
                    .cloned()
                    .map(|model| Node::ScrapeSession(ScrapeSession(model))),
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_global_id_round_trips_and_names_its_type() {
        let uuid = Uuid::new_v4();
        for id in [
            GlobalId::Product(uuid),
            GlobalId::Seller(uuid),
            GlobalId::ScrapeSession(uuid),
        ] {
            let ID(text) = id.into();
            assert_eq!(GlobalId::parse(&text).unwrap(), id);
        }
        let ID(product) = GlobalId::Product(uuid).into();
        let ID(seller) = GlobalId::Seller(uuid).into();
        assert_ne!(product, seller);
    }

    #[test]
    fn text_this_server_never_issued_is_not_a_global_id() {
        let uuid = Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
        for text in [
            String::new(),
            "not base64!".into(),
            uuid.to_string(),
            URL_SAFE_NO_PAD.encode(format!("Account:{uuid}")),
            URL_SAFE_NO_PAD.encode("Product:not-a-uuid"),
            URL_SAFE_NO_PAD.encode([0xff, 0xfe]),
        ] {
            assert!(matches!(
                GlobalId::parse(&text),
                Err(QueryError::Invalid(_))
            ));
        }
    }
}
