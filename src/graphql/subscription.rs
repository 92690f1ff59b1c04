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

use super::RequestData;
use super::reads::Reads;
use super::session::ScrapeSession;
use crate::query::sessions;

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
                    Ok(changed) if changed == id => {
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
}
