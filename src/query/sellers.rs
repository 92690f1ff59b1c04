//! Seller lookup (`GET /sellers`): by TIN, PSRN, storefront URL, or
//! marketplace together with the marketplace's seller id.
//!
//! A URL that normalizes to nothing (`?`, `#x`, `http://`) is refused: a
//! seller stored without a URL has NULL there, which no lookup matches. A
//! lookup returns at most the sellers its caller allows
//! (`VITRINA_MAX_SELLERS_PER_LOOKUP`), in its order; the caller is told
//! when more matched ([`SellerMatches::truncated`]).

use entity::{Marketplace, product, seller};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, EntityTrait, ExprTrait, QueryFilter, QueryOrder,
    QuerySelect,
};
use uuid::Uuid;

use super::{QueryError, check_texts, check_url};
use crate::text;

/// Identifying parameters of a seller lookup: at least one of tin; psrn; url;
/// marketplace together with seller id. Every one given must match.
#[derive(Debug, Clone, Default, async_graphql::InputObject)]
#[graphql(name = "SellerLookupInput")]
pub struct SellerLookup {
    /// Tax identification number.
    pub tin: Option<String>,
    /// State registration number.
    pub psrn: Option<String>,
    /// Storefront URL; query string and fragment are ignored. One that is
    /// nothing without them (`?x`, `#`, `http://`) is refused.
    pub url: Option<String>,
    /// One of the four marketplaces; identifies together with seller id.
    pub marketplace: Option<Marketplace>,
    /// Used together with marketplace.
    pub seller_id: Option<String>,
}

/// The sellers a lookup found, at most the number asked for; `truncated`
/// when more matched.
#[derive(Debug, Clone)]
pub struct SellerMatches {
    pub sellers: Vec<SellerView>,
    pub truncated: bool,
}

/// A seller with the number of its products.
#[derive(Debug, Clone)]
pub struct SellerView {
    pub seller: seller::Model,
    pub product_count: i64,
}

fn given(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|v| !v.is_empty())
}

impl SellerLookup {
    /// Every text passes [`check_text`](super::check_text), and at least one
    /// identifying parameter is given: tin; psrn; url; or marketplace
    /// together with seller_id.
    pub fn validate(&self) -> Result<(), QueryError> {
        let SellerLookup {
            tin,
            psrn,
            url,
            marketplace: _,
            seller_id,
        } = self;
        check_texts(&[
            ("tin", tin),
            ("psrn", psrn),
            ("url", url),
            ("seller_id", seller_id),
        ])?;
        check_url("url", url)?;
        let pair = self.marketplace.is_some() && given(&self.seller_id).is_some();
        if given(&self.tin).is_none()
            && given(&self.psrn).is_none()
            && given(&self.url).is_none()
            && !pair
        {
            return Err(QueryError::Missing(
                "an identifying parameter is required: tin, psrn, url, or marketplace with seller_id".into(),
            ));
        }
        Ok(())
    }

    fn condition(&self) -> Condition {
        let mut cond = Condition::all();
        if let Some(tin) = given(&self.tin) {
            cond = cond.add(seller::Column::Tin.eq(tin));
        }
        if let Some(psrn) = given(&self.psrn) {
            cond = cond.add(seller::Column::Psrn.eq(psrn));
        }
        if let Some(url) = given(&self.url) {
            cond = cond.add(seller::Column::Url.eq(text::normalize_url(url)));
        }
        if let Some(m) = self.marketplace {
            cond = cond.add(seller::Column::Marketplace.eq(m));
        }
        if let Some(id) = given(&self.seller_id) {
            cond = cond.add(seller::Column::SellerId.eq(id));
        }
        cond
    }
}

/// Matching sellers ordered by marketplace, then seller id: the first
/// `most` of them.
pub async fn find(
    db: &impl ConnectionTrait,
    lookup: &SellerLookup,
    most: u64,
) -> Result<SellerMatches, QueryError> {
    lookup.validate()?;
    // The marketplace is stored as its wire name, so the database orders
    // as `Marketplace::as_str` does.
    let mut sellers = seller::Entity::find()
        .filter(lookup.condition())
        .order_by_asc(seller::Column::Marketplace)
        .order_by_asc(seller::Column::SellerId)
        .limit(super::one_past(most))
        .all(db)
        .await?;
    let truncated = sellers.len() as u64 > most;
    sellers.truncate(usize::try_from(most).unwrap_or(usize::MAX));
    let ids: Vec<Uuid> = sellers.iter().map(|s| s.id).collect();
    let counts = product_counts(db, &ids).await?;
    let sellers = sellers
        .into_iter()
        .map(|seller| SellerView {
            product_count: counts.get(&seller.id).copied().unwrap_or(0),
            seller,
        })
        .collect();
    Ok(SellerMatches { sellers, truncated })
}

/// Products per seller, in one grouped statement.
pub async fn product_counts(
    db: &impl ConnectionTrait,
    seller_ids: &[Uuid],
) -> Result<std::collections::HashMap<Uuid, i64>, sea_orm::DbErr> {
    if seller_ids.is_empty() {
        return Ok(Default::default());
    }
    let rows: Vec<(Uuid, i64)> = product::Entity::find()
        .select_only()
        .column(product::Column::SellerRef)
        .column_as(Expr::col(product::Column::Id).count(), "n")
        .filter(super::one_of(db, product::Column::SellerRef, seller_ids))
        .group_by(product::Column::SellerRef)
        .into_tuple()
        .all(db)
        .await?;
    Ok(rows.into_iter().collect())
}
