//! Price history of one product (`GET /products/{id}/price-history`).

use chrono::{DateTime, Utc};
use entity::{UserAuthStatus, price_observation};
use sea_orm::sea_query::{Expr, Func};
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, EntityTrait, ExprTrait, PaginatorTrait, QueryFilter,
};
use uuid::Uuid;

use super::offset_page;

use super::keyset::{self, Key, Slice, Window};
use super::order;
use super::{Page, QueryError, check_range, check_texts};
use crate::text;

/// Filters of the price history, combined with AND; `from` and `to` are inclusive.
#[derive(Debug, Clone, Default)]
pub struct PriceHistoryFilter {
    /// Compared case-insensitively.
    pub country_code: Option<String>,
    pub region_code: Option<String>,
    pub user_auth_status: Option<UserAuthStatus>,
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
}

impl PriceHistoryFilter {
    /// Texts pass [`check_text`](super::check_text); `from` is not after `to`.
    pub fn validate(&self) -> Result<(), QueryError> {
        let PriceHistoryFilter {
            country_code,
            region_code,
            user_auth_status: _,
            from,
            to,
        } = self;
        check_texts(&[("country_code", country_code), ("region_code", region_code)])?;
        check_range(*from, *to)
    }

    fn condition(&self, product_id: Uuid) -> Condition {
        let mut cond = Condition::all().add(price_observation::Column::ProductId.eq(product_id));
        if let Some(country) = self.country_code.as_deref().filter(|c| !c.is_empty()) {
            cond = cond.add(
                Expr::expr(Func::lower(Expr::col(
                    price_observation::Column::CountryCode,
                )))
                .eq(text::fold(country)),
            );
        }
        if let Some(region) = self.region_code.as_deref().filter(|r| !r.is_empty()) {
            cond = cond.add(price_observation::Column::RegionCode.eq(region));
        }
        if let Some(auth) = self.user_auth_status {
            cond = cond.add(price_observation::Column::UserAuthStatus.eq(auth));
        }
        if let Some(from) = self.from {
            cond = cond.add(price_observation::Column::RecordedAt.gte(from));
        }
        if let Some(to) = self.to {
            cond = cond.add(price_observation::Column::RecordedAt.lte(to));
        }
        cond
    }
}

/// One page of observations, newest first (ties by id, newest first), and the
/// total matching the filter.
pub async fn history(
    db: &impl ConnectionTrait,
    product_id: Uuid,
    filter: &PriceHistoryFilter,
    page: Page,
) -> Result<(Vec<price_observation::Model>, u64), QueryError> {
    filter.validate()?;
    if !super::products::exists(db, product_id).await? {
        return Err(QueryError::NotFound);
    }
    let select = price_observation::Entity::find().filter(filter.condition(product_id));
    Ok(offset_page(db, select, page).await?)
}

/// The ordering key of a price history: newest first, ties by id.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ObservationKey(pub DateTime<Utc>, pub i64);

impl Key for ObservationKey {
    const LIST: &'static str = "price_history";

    fn values(&self) -> Vec<sea_orm::Value> {
        vec![self.0.into(), self.1.into()]
    }
}

impl ObservationKey {
    pub fn of(o: &price_observation::Model) -> Self {
        ObservationKey(o.recorded_at, o.id)
    }
}

/// A keyset page of one product's price history (GraphQL connections).
pub async fn connection(
    db: &impl ConnectionTrait,
    product_id: Uuid,
    filter: &PriceHistoryFilter,
    window: &Window<ObservationKey>,
) -> Result<Slice<price_observation::Model>, QueryError> {
    filter.validate()?;
    let select = price_observation::Entity::find().filter(filter.condition(product_id));
    let (columns, direction) = order::keyset::<price_observation::Entity>();
    Ok(keyset::fetch(db, select, &columns, direction, window).await?)
}

/// How many observations of the product match the filter.
pub async fn count(
    db: &impl ConnectionTrait,
    product_id: Uuid,
    filter: &PriceHistoryFilter,
) -> Result<u64, QueryError> {
    filter.validate()?;
    Ok(price_observation::Entity::find()
        .filter(filter.condition(product_id))
        .count(db)
        .await?)
}

/// The latest `n` observations of each product, newest first, in one statement.
pub async fn latest(
    db: &impl ConnectionTrait,
    product_ids: &[Uuid],
    n: u64,
) -> Result<std::collections::HashMap<Uuid, Vec<price_observation::Model>>, sea_orm::DbErr> {
    let rows: Vec<price_observation::Model> =
        super::top::first_n_per_parent::<price_observation::Entity, _>(
            db,
            price_observation::Column::ProductId,
            product_ids,
            n,
            "t.*",
        )
        .await?;
    let mut out: std::collections::HashMap<Uuid, Vec<price_observation::Model>> =
        Default::default();
    for row in rows {
        out.entry(row.product_id).or_default().push(row);
    }
    Ok(out)
}
