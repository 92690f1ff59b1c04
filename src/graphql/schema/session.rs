//! The caller's own scrape sessions, reached only through `me`.

use std::sync::Arc;

use async_graphql::{Context, ID, Object, Result};
use entity::{SessionStatus, SubmissionStatus, product, scrape_session};
use uuid::Uuid;

use super::context::caller;
use super::inline::Inline;
use super::node::GlobalId;
use super::page::{MergedProducts, Page};
use super::product::{Product, ProductConnection, ProductTotal};
use super::reads::Reads;
use super::relay_connection::{self, Args, Conn, Total};
use crate::graphql::cost::quota_charge::Meter;
use crate::graphql::error::gql;
use crate::query::keyset::Slice;
use crate::query::products::Related;
use crate::query::sessions::{self, SessionKey, SessionStats, SubmissionKey, SubmissionState};
use crate::views::{SessionMetadata, Timestamp};

/// The calling account.
pub struct Me;

/// The calling account and its own scrape sessions.
#[Object]
impl Me {
    /// The account's id.
    async fn id(&self, ctx: &Context<'_>) -> Uuid {
        caller(ctx).account_id
    }

    /// The account's scrape sessions, most recent first. Every page counts
    /// them (its `totalCount`): 1 complexity point, plus 1 per 1,000
    /// sessions an account has on average.
    #[graphql(
        complexity = "crate::graphql::cost::scans::scrape_sessions(first, last, child_complexity)"
    )]
    async fn scrape_sessions(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> Result<Conn<ScrapeSession, Total>> {
        let account = caller(ctx).account_id;
        let window = Args {
            first,
            after,
            last,
            before,
        }
        .window_in(ctx)?;
        let (slice, total) = Reads::of(ctx)
            .run(|db| sessions::connection_for_account(db, account, &window))
            .await?;
        Ok(relay_connection::from_slice(
            slice,
            Total { total_count: total },
            SessionKey::of,
            ScrapeSession,
        ))
    }

    /// One of the account's sessions; another account's session is NOT_FOUND.
    async fn scrape_session(&self, ctx: &Context<'_>, id: Uuid) -> Result<ScrapeSession> {
        let account = caller(ctx).account_id;
        let session = Reads::of(ctx)
            .run(|db| sessions::session_for_account(db, account, id))
            .await?;
        Ok(ScrapeSession(session))
    }
}

/// One scraper call (a page or a bulk run).
pub struct ScrapeSession(pub scrape_session::Model);

impl ScrapeSession {
    async fn load_stats(&self, ctx: &Context<'_>) -> Result<SessionStats> {
        let stats = Reads::of(ctx)
            .load(|l| &l.session_stats, self.0.id)
            .await
            .map_err(gql)?;
        Ok(stats.unwrap_or_default())
    }
}

/// One scraper call (a page or a bulk run) of the calling account.
#[Object]
impl ScrapeSession {
    /// Scrape session id.
    async fn id(&self) -> Uuid {
        self.0.id
    }
    /// Global id (Relay's `Node`): opaque, for `node(id:)`, which finds
    /// only the caller's own sessions.
    pub(super) async fn global_id(&self) -> ID {
        GlobalId::ScrapeSession(self.0.id).into()
    }
    /// Computed live from the submissions: completed once none is pending or
    /// processing (and there is at least one).
    async fn status(&self, ctx: &Context<'_>) -> Result<SessionStatus> {
        Ok(self.load_stats(ctx).await?.status())
    }
    /// Live per-status counts of the submissions.
    async fn stats(&self, ctx: &Context<'_>) -> Result<SessionStats> {
        self.load_stats(ctx).await
    }
    /// What the scraper said about the call: source type, intent, URL count.
    async fn metadata(&self) -> SessionMetadata {
        SessionMetadata {
            source_type: self.0.source_type.clone(),
            intent: self.0.intent.clone(),
            url_count: self.0.url_count,
        }
    }
    /// When the scraper uploaded the session.
    async fn created_at(&self) -> Timestamp {
        self.0.created_at.into()
    }
    /// When one of its submissions last changed.
    async fn updated_at(&self) -> Timestamp {
        self.0.updated_at.into()
    }
    /// Every submission in submission order, with its product once merged.
    /// Rows with a product count against the daily quota, as on REST; a
    /// request whose rows would pass it fails whole with QUOTA_EXCEEDED
    /// (no data) and costs nothing. Every page counts them (its
    /// `totalCount`): 1 complexity point, plus 1 per 1,000 submissions a
    /// session has on average.
    #[graphql(
        complexity = "crate::graphql::cost::scans::submissions(first, last, child_complexity)"
    )]
    async fn submissions(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> Result<Conn<Submission, Total>> {
        let args = Args {
            first,
            after,
            last,
            before,
        };
        let (slice, total, merged) = self.metered_page(ctx, false, &args).await?;
        let products = MergedProducts::new(merged);
        Ok(relay_connection::from_slice(
            slice,
            Total { total_count: total },
            |s| SubmissionKey(s.id),
            |s| Submission(s, products.clone()),
        ))
    }

    /// The merged products of the session, in submission order; charged to
    /// the daily quota like `submissions`, and counted like them.
    #[graphql(
        complexity = "crate::graphql::cost::scans::submissions(first, last, child_complexity)"
    )]
    async fn products(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> Result<ProductConnection> {
        let args = Args {
            first,
            after,
            last,
            before,
        };
        let (slice, total, merged) = self.metered_page(ctx, true, &args).await?;
        let reads = Reads::of(ctx);
        let found = reads
            .load_many(|l| &l.products, merged.clone())
            .await
            .map_err(gql)?;
        reads
            .budget()
            .charge_repeats(&merged, |id| found.get(id).map(|p| p.stored_size))?;
        let models: Vec<product::Model> = merged
            .iter()
            .filter_map(|id| found.get(id).cloned())
            .collect();
        let page = Page::new(&models, Related::default());
        let items = slice
            .items
            .iter()
            .filter_map(|s| {
                let model = sessions::merged_product(s).and_then(|id| found.get(&id).cloned())?;
                Some((SubmissionKey(s.id), Inline(Product(model, page.clone()))))
            })
            .collect();
        let slice = Slice {
            items,
            has_previous: slice.has_previous,
            has_next: slice.has_next,
        };
        Ok(relay_connection::from_slice(
            slice,
            ProductTotal::exact(total),
            |(cursor, _)| cursor.clone(),
            |(_, p)| p,
        ))
    }
}

impl ScrapeSession {
    /// A page of the session's submissions (merged ones only when asked), its
    /// total and its merged product ids, counted against the daily quota
    /// (charged with the operation's other metered rows once it ran).
    async fn metered_page(
        &self,
        ctx: &Context<'_>,
        merged_only: bool,
        args: &Args,
    ) -> Result<(Slice<SubmissionState>, u64, Vec<Uuid>)> {
        let account = caller(ctx).account_id;
        let window = args.window_in(ctx)?;
        let (slice, total) = Reads::of(ctx)
            .run(|db| {
                sessions::submissions_for_account(db, account, self.0.id, merged_only, &window)
            })
            .await?;
        let merged: Vec<Uuid> = slice
            .items
            .iter()
            .filter_map(sessions::merged_product)
            .collect();
        Meter::count(ctx, merged.len());
        Ok((slice, total, merged))
    }
}

/// One scraped item of a session, with the merged products of its page.
pub struct Submission(pub SubmissionState, Arc<MergedProducts>);

/// One scraped item of a session.
#[Object]
impl Submission {
    /// Where the item stands: pending, processing, merged, rejected or flagged.
    async fn status(&self) -> SubmissionStatus {
        self.0.status
    }
    /// The merged product; null until the submission is merged.
    async fn product(&self, ctx: &Context<'_>) -> Result<Option<Inline<Product>>> {
        let Some(id) = sessions::merged_product(&self.0) else {
            return Ok(None);
        };
        let found = self.1.product(Reads::of(ctx), id).await.map_err(gql)?;
        Ok(found.map(|(model, page)| Inline(Product(model, page))))
    }
}
