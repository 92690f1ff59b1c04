//! The caller's scrape sessions (`/me/scrapes*`). Every function takes the
//! account, so another account's session is unreachable: it is simply not found.
//!
//! Status and stats are computed live from the submissions with one grouped
//! statement per page of sessions, never stored.

use std::collections::HashMap;

use entity::{SessionStatus, SubmissionStatus, scrape_session, submission};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, DerivePartialModel, EntityTrait, ExprTrait,
    PaginatorTrait, QueryFilter, QuerySelect, StreamTrait,
};
use uuid::Uuid;

use super::budget::ResponseBudget;
use super::offset_page;

use super::keyset::{self, Key, Slice, Window};
use super::order;
use super::products::{self, ProductView};
use super::{Page, QueryError};

/// Live per-status counts of a session's submissions.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    utoipa::ToSchema,
    async_graphql::SimpleObject,
)]
#[serde(deny_unknown_fields)]
pub struct SessionStats {
    /// All submissions.
    pub total: i64,
    /// Waiting for the merge pass.
    pub pending: i64,
    /// Being merged now.
    pub processing: i64,
    /// Merged into a product.
    pub merged: i64,
    /// Refused by validation.
    pub rejected: i64,
    /// Merged, but looked wrong.
    pub flagged: i64,
}

impl SessionStats {
    fn add(&mut self, status: SubmissionStatus, n: i64) {
        self.total += n;
        let slot = match status {
            SubmissionStatus::Pending => &mut self.pending,
            SubmissionStatus::Processing => &mut self.processing,
            SubmissionStatus::Merged => &mut self.merged,
            SubmissionStatus::Rejected => &mut self.rejected,
            SubmissionStatus::Flagged => &mut self.flagged,
        };
        *slot += n;
    }

    /// Completed once every submission has left pending and processing; a
    /// session with no submissions is always processing.
    pub fn status(&self) -> SessionStatus {
        if self.total > 0 && self.pending == 0 && self.processing == 0 {
            SessionStatus::Completed
        } else {
            SessionStatus::Processing
        }
    }
}

/// A session with its live stats.
#[derive(Debug, Clone)]
pub struct SessionView {
    pub session: scrape_session::Model,
    pub stats: SessionStats,
}

/// A submission as the session endpoints show it. Never its stored item:
/// they do not need it, and a row nothing can read must not fail its
/// owner's session.
#[derive(Debug, Clone, PartialEq, DerivePartialModel)]
#[sea_orm(entity = "submission::Entity")]
pub struct SubmissionState {
    pub id: i64,
    pub status: SubmissionStatus,
    pub product_id: Option<Uuid>,
}

/// One submission of a session; `product` is set only once it is merged.
#[derive(Debug, Clone)]
pub struct SessionEntry {
    pub submission: SubmissionState,
    pub product: Option<ProductView>,
}

/// Stats of several sessions in one grouped statement.
pub async fn stats(
    db: &impl ConnectionTrait,
    session_ids: &[Uuid],
) -> Result<HashMap<Uuid, SessionStats>, DbErr> {
    let mut out: HashMap<Uuid, SessionStats> = session_ids
        .iter()
        .map(|id| (*id, SessionStats::default()))
        .collect();
    if session_ids.is_empty() {
        return Ok(out);
    }
    let rows: Vec<(Uuid, SubmissionStatus, i64)> = submission::Entity::find()
        .select_only()
        .column(submission::Column::SessionId)
        .column(submission::Column::Status)
        .column_as(Expr::col(submission::Column::Id).count(), "n")
        .filter(super::one_of(
            db,
            submission::Column::SessionId,
            session_ids,
        ))
        .group_by(submission::Column::SessionId)
        .group_by(submission::Column::Status)
        .into_tuple()
        .all(db)
        .await?;
    for (session_id, status, n) in rows {
        out.entry(session_id).or_default().add(status, n);
    }
    Ok(out)
}

async fn owned_session(
    db: &impl ConnectionTrait,
    account_id: Uuid,
    id: Uuid,
) -> Result<scrape_session::Model, QueryError> {
    scrape_session::Entity::find_by_id(id)
        .filter(scrape_session::Column::AccountId.eq(account_id))
        .one(db)
        .await?
        .ok_or(QueryError::NotFound)
}

/// One session of the account.
pub async fn find_for_account(
    db: &impl ConnectionTrait,
    account_id: Uuid,
    id: Uuid,
) -> Result<SessionView, QueryError> {
    let session = owned_session(db, account_id, id).await?;
    let stats = stats(db, &[id]).await?.remove(&id).unwrap_or_default();
    Ok(SessionView { session, stats })
}

/// The account's sessions, most recent first, and their total.
pub async fn list_for_account(
    db: &impl ConnectionTrait,
    account_id: Uuid,
    page: Page,
) -> Result<(Vec<SessionView>, u64), QueryError> {
    let select =
        scrape_session::Entity::find().filter(scrape_session::Column::AccountId.eq(account_id));
    let (sessions, total): (Vec<scrape_session::Model>, _) = offset_page(db, select, page).await?;
    let ids: Vec<Uuid> = sessions.iter().map(|s| s.id).collect();
    let mut stats = stats(db, &ids).await?;
    let views = sessions
        .into_iter()
        .map(|session| SessionView {
            stats: stats.remove(&session.id).unwrap_or_default(),
            session,
        })
        .collect();
    Ok((views, total))
}

/// Every submission of one of the account's sessions in submission order, with
/// the merged product of each merged one, and the total. Each product is
/// counted against `budget` once per entry that shows it.
pub async fn entries_for_account(
    db: &(impl ConnectionTrait + StreamTrait),
    account_id: Uuid,
    session_id: Uuid,
    page: Page,
    budget: &ResponseBudget,
) -> Result<(Vec<SessionEntry>, u64), QueryError> {
    owned_session(db, account_id, session_id).await?;
    let select = submission::Entity::find().filter(submission::Column::SessionId.eq(session_id));
    let (submissions, total): (Vec<SubmissionState>, _) = offset_page(db, select, page).await?;
    let merged_ids: Vec<Uuid> = submissions.iter().filter_map(merged_product).collect();
    let mut views: HashMap<Uuid, ProductView> = products::get_many(db, &merged_ids, budget)
        .await?
        .into_iter()
        .map(|v| (v.product.id, v))
        .collect();
    budget.charge_repeats(&merged_ids, |id| {
        views.get(id).map(|v| v.product.stored_size)
    })?;
    let entries = submissions
        .into_iter()
        .map(|submission| SessionEntry {
            product: merged_product(&submission).and_then(|id| views.get(&id).cloned()),
            submission,
        })
        .collect();
    views.clear();
    Ok((entries, total))
}

/// The product a submission shows: only merged submissions have one.
pub fn merged_product(submission: &SubmissionState) -> Option<Uuid> {
    (submission.status == SubmissionStatus::Merged)
        .then_some(submission.product_id)
        .flatten()
}

/// The ordering key of sessions: most recent first, ties by id.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct SessionKey(pub chrono::DateTime<chrono::Utc>, pub Uuid);

impl Key for SessionKey {
    const LIST: &'static str = "sessions";

    fn values(&self) -> Vec<sea_orm::Value> {
        vec![self.0.into(), self.1.into()]
    }
}

impl SessionKey {
    pub fn of(s: &scrape_session::Model) -> Self {
        SessionKey(s.created_at, s.id)
    }
}

/// The ordering key of submissions: submission order.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct SubmissionKey(pub i64);

impl Key for SubmissionKey {
    const LIST: &'static str = "submissions";

    fn values(&self) -> Vec<sea_orm::Value> {
        vec![self.0.into()]
    }
}

/// A keyset page of the account's sessions, and their total.
pub async fn connection_for_account(
    db: &impl ConnectionTrait,
    account_id: Uuid,
    window: &Window<SessionKey>,
) -> Result<(Slice<scrape_session::Model>, u64), QueryError> {
    let select =
        scrape_session::Entity::find().filter(scrape_session::Column::AccountId.eq(account_id));
    let total = select.clone().count(db).await?;
    let (columns, direction) = order::keyset::<scrape_session::Entity>();
    Ok((
        keyset::fetch(db, select, &columns, direction, window).await?,
        total,
    ))
}

/// One session of the account, without stats (GraphQL loads stats in batches).
pub async fn session_for_account(
    db: &impl ConnectionTrait,
    account_id: Uuid,
    id: Uuid,
) -> Result<scrape_session::Model, QueryError> {
    owned_session(db, account_id, id).await
}

/// The account's sessions among `ids`, keyed by id, in one statement;
/// another account's are absent, as unknown ones are.
pub async fn sessions_for_account(
    db: &impl ConnectionTrait,
    account_id: Uuid,
    ids: &[Uuid],
) -> Result<HashMap<Uuid, scrape_session::Model>, DbErr> {
    Ok(scrape_session::Entity::find()
        .filter(super::one_of(db, scrape_session::Column::Id, ids))
        .filter(scrape_session::Column::AccountId.eq(account_id))
        .all(db)
        .await?
        .into_iter()
        .map(|s| (s.id, s))
        .collect())
}

/// A keyset page of the submissions of one of the account's sessions (only
/// those with a merged product when `merged_only`), and their total.
pub async fn submissions_for_account(
    db: &impl ConnectionTrait,
    account_id: Uuid,
    session_id: Uuid,
    merged_only: bool,
    window: &Window<SubmissionKey>,
) -> Result<(Slice<SubmissionState>, u64), QueryError> {
    owned_session(db, account_id, session_id).await?;
    let mut select =
        submission::Entity::find().filter(submission::Column::SessionId.eq(session_id));
    if merged_only {
        select = select
            .filter(submission::Column::Status.eq(SubmissionStatus::Merged))
            .filter(submission::Column::ProductId.is_not_null());
    }
    let total = select.clone().count(db).await?;
    let (columns, direction) = order::keyset::<submission::Entity>();
    let rows = window
        .bound(select, &columns, direction)
        .into_partial_model()
        .all(db)
        .await?;
    Ok((window.cut(rows), total))
}
