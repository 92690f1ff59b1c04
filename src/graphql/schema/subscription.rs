//! `scrapeSessionUpdated(id)`: a session's status and stats pushed as the
//! merge pass moves them, so a dashboard need not poll. Served over
//! WebSocket at `/graphql/ws` (graphql-transport-ws and graphql-ws).

use async_graphql::futures_util::{Stream, StreamExt, stream};
use async_graphql::{Context, Result, Subscription};
use entity::scrape_session;
use sea_orm::EntityTrait;
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;
use uuid::Uuid;

use super::product::{Product, read_with};
use super::reads::Reads;
use super::session::ScrapeSession;
use super::trends::PriceMove;
use crate::events::Event;
use crate::graphql::RequestData;
use crate::query::products::{self, ProductFilter};
use crate::query::{QueryError, movers, sessions};

pub struct SubscriptionRoot;

/// Live updates over WebSocket (`/graphql/ws`).
#[Subscription]
impl SubscriptionRoot {
    /// The session now, then again every time one of its submissions
    /// changes. One of the caller's own sessions; another account's session is
    /// NOT_FOUND.
    async fn scrape_session_updated(
        &self,
        ctx: &Context<'_>,
        id: Uuid,
    ) -> Result<impl Stream<Item = ScrapeSession> + use<>> {
        let data = ctx.data_unchecked::<Arc<RequestData>>().clone();
        let (state, account) = (data.state(), data.caller().account_id);
        let first = Reads::of(ctx)
            .run(|db| sessions::session_for_account(db, account, id))
            .await?;
        state.events.ready().await;
        let events = state.events.subscribe();
        let updates = stream::unfold((data, events), move |(data, mut events)| async move {
            loop {
                match events.recv().await {
                    Ok(Event::Session(changed)) if changed == id => {
                        let session = data
                            .reads()
                            .run(|db| scrape_session::Entity::find_by_id(id).one(db))
                            .await
                            .ok()
                            .flatten()?;
                        return Some((ScrapeSession(session), (data, events)));
                    }
                    Ok(_) | Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return None,
                }
            }
        });
        Ok(stream::once(async move { ScrapeSession(first) }).chain(updates))
    }

    /// Each move a merge makes of the lowest current price, in a currency,
    /// of a product `filter` matches (tested once the move is committed),
    /// by at least `minChangePercent` either way (any move when absent).
    /// `before` is the lowest price before the merge, `changedAt` when the
    /// new one was observed. A subscriber more than 1,024 events behind
    /// misses the oldest.
    async fn price_changed(
        &self,
        ctx: &Context<'_>,
        filter: Option<ProductFilter>,
        min_change_percent: Option<f64>,
    ) -> Result<impl Stream<Item = PriceMove> + use<>> {
        let filter = filter.unwrap_or_default();
        filter.validate()?;
        let least = min_change_percent.unwrap_or(0.0);
        if !least.is_finite() || least < 0.0 {
            return Err(QueryError::Invalid(format!(
                "minChangePercent must be a finite number of at least 0, not {least}"
            ))
            .into());
        }
        let watch = Arc::new(Watch {
            filter,
            least,
            with: read_with(&[ctx.look_ahead().field("product")]),
        });
        let data = ctx.data_unchecked::<Arc<RequestData>>().clone();
        data.state().events.ready().await;
        let events = data.state().events.subscribe();
        let moves = stream::unfold(
            (data, events, watch),
            |(data, mut events, watch)| async move {
                loop {
                    let price = match events.recv().await {
                        Ok(Event::Price(price)) if watch.may_want(&price) => price,
                        Ok(_) | Err(RecvError::Lagged(_)) => continue,
                        Err(RecvError::Closed) => return None,
                    };
                    let reads = data.reads();
                    let (id, with) = (price.product_id, watch.with);
                    let found = reads
                        .run(|db| {
                            products::matching_one(db, &watch.filter, id, with, reads.budget())
                        })
                        .await;
                    match found {
                        Ok(Some((model, related))) => {
                            let product =
                                Product::paged(std::slice::from_ref(&model), related)(model);
                            let price = PriceMove::of((*price).clone(), product);
                            return Some((price, (data, events, watch)));
                        }
                        Ok(None) => continue,
                        Err(e) => tracing::warn!(error = ?e, "a price move was not read"),
                    }
                }
            },
        );
        Ok(moves)
    }
}

/// What a `priceChanged` subscriber watches.
struct Watch {
    filter: ProductFilter,
    least: f64,
    /// What its selection reads with each product.
    with: products::With,
}

impl Watch {
    /// Whether the move is big enough and of a currency and product the
    /// filter may match; the rest of the filter is tested in the database.
    fn may_want(&self, price: &movers::PriceMove) -> bool {
        let currency = self.filter.currency.as_deref().filter(|c| !c.is_empty());
        price.change_percent.abs() >= self.least
            && currency.is_none_or(|c| c == price.currency)
            && (self.filter.ids.as_ref()).is_none_or(|ids| ids.contains(&price.product_id))
    }
}
