//! A stored row the merge cannot read, or cannot write, is rejected alone
//! with a reason, one attempt counted. It never holds up the rest of its
//! batch: beside it another account's 50 items merge in the same pass, that
//! session completes and its webhook goes out, and both owners can read
//! their sessions (REST and GraphQL).

use entity::{SubmissionStatus, submission};
use sea_orm::sea_query::{Expr, Query};
use sea_orm::{ConnectionTrait, DbBackend};
use serde_json::{Value, json};
use uuid::Uuid;
use vitrina::clock::Clock;

use crate::helpers::graphql;
use crate::helpers::receiver::TestReceiver;
use crate::helpers::uploads::{attempts, item, outcomes, send};
use crate::helpers::{TestApp, loopback_webhooks, refuse_product};

/// Two accounts: `alpha` owns the row the merge cannot take, `beta` 50 good
/// items uploaded after it, and a webhook subscription.
struct Neighbours {
    app: TestApp,
    alpha: String,
    beta: String,
    receiver: TestReceiver,
}

impl Neighbours {
    async fn start() -> Neighbours {
        let app = TestApp::spawn_with_settings(loopback_webhooks()).await;
        let (alpha, beta) = (app.key("alpha").await, app.key("beta").await);
        let receiver = TestReceiver::start().await;
        let created = app
            .post_as(
                &beta,
                "/extension/v1/webhooks",
                &json!({ "url": receiver.hook("/hook") }),
            )
            .await;
        assert_eq!(created.status(), 201);
        Neighbours {
            app,
            alpha,
            beta,
            receiver,
        }
    }

    /// Beta's 50 items, uploaded now.
    async fn beta_uploads_fifty(&self) -> Uuid {
        let items = (0..50).map(|i| item(&format!("b{i}"))).collect();
        send(&self.app, &self.beta, items).await
    }

    /// One job tick: every row of `alpha_session` but its first is rejected
    /// alone, each with a reason starting with one of `reasons` and one
    /// attempt; the first and beta's 50 merge, both sessions complete, beta's
    /// webhook is delivered, and both owners read their sessions.
    async fn one_tick_rejects_alone(
        &mut self,
        alpha_session: Uuid,
        beta_session: Uuid,
        reasons: &[&str],
    ) {
        let tick = self.app.jobs().tick().await.expect("the tick completes");
        assert_eq!(
            (
                tick.merge.merged,
                tick.merge.rejected,
                tick.merge.completed_sessions
            ),
            (51, reasons.len() as u64, 2)
        );
        let rows = outcomes(&self.app, alpha_session).await;
        assert_eq!(rows[0].0, SubmissionStatus::Merged);
        assert_eq!(rows.len(), reasons.len() + 1);
        for ((status, got), reason) in rows[1..].iter().zip(reasons) {
            assert_eq!(*status, SubmissionStatus::Rejected, "{got:?}");
            let got = got.as_deref().unwrap_or_default();
            assert!(got.starts_with(reason), "{got:?} is not {reason:?}");
        }
        assert_eq!(
            attempts(&self.app, alpha_session).await[1..],
            vec![1; reasons.len()],
            "each rejected row counted one attempt"
        );
        assert!(
            outcomes(&self.app, beta_session)
                .await
                .iter()
                .all(|(status, _)| *status == SubmissionStatus::Merged)
        );
        assert_eq!(tick.deliveries.succeeded, 1);
        let delivered: Value = serde_json::from_slice(&self.receiver.take_one().body).unwrap();
        assert_eq!(delivered["scrape_session_id"], beta_session.to_string());
        assert_eq!(delivered["stats"]["merged"], 50);

        for (key, session, total) in [
            (&self.alpha, alpha_session, rows.len()),
            (&self.beta, beta_session, 50),
        ] {
            let view = self
                .app
                .json_as(key, &format!("/v1/me/scrapes/{session}"))
                .await;
            assert_eq!(view["data"]["status"], "completed");
            let entries = self
                .app
                .json_as(
                    key,
                    &format!("/v1/me/scrapes/{session}/products?page_size=500"),
                )
                .await;
            assert_eq!(entries["meta"]["total"], total);
            let query = "query($id: UUID!) { me { scrapeSession(id: $id) { submissions(first: 100) { edges { node { status } } } } } }";
            let data = graphql::data(&self.app, key, query, json!({ "id": session })).await;
            let edges = &data["me"]["scrapeSession"]["submissions"]["edges"];
            assert_eq!(edges.as_array().map(Vec::len), Some(total));
        }
    }
}

/// Stores a pending submission of `session` whose payload is the SQL
/// expression `payload`, straight into the table: past the upload and past
/// serde_json, as another program or an older release could.
async fn store_raw(app: &TestApp, session: Uuid, payload: &str) {
    let now = app.clock.now();
    let insert = Query::insert()
        .into_table(submission::Entity)
        .columns([
            submission::Column::SessionId,
            submission::Column::Status,
            submission::Column::Payload,
            submission::Column::CreatedAt,
            submission::Column::UpdatedAt,
        ])
        .values_panic([
            session.into(),
            SubmissionStatus::Pending.as_str().into(),
            Expr::cust(payload.to_owned()),
            now.into(),
            now.into(),
        ])
        .to_owned();
    app.db.execute(&insert).await.unwrap();
}

#[tokio::test]
async fn a_row_the_database_cannot_give_back_is_rejected_alone_and_holds_up_no_one() {
    let mut n = Neighbours::start().await;
    let alpha_session = send(&n.app, &n.alpha, vec![item("a1")]).await;
    // A number beyond a double: jsonb takes it (numeric), and so does a
    // SQLite text column, but serde_json cannot read it back.
    let beyond =
        json!({ "marketplace": "ozon", "external_id": "p", "attributes": { "weight": "@" } })
            .to_string()
            .replace("\"@\"", "1e400");
    let mut poisoned = vec![format!("'{beyond}'")];
    let mut reasons = vec!["the stored item cannot be read: number out of range"];
    match n.app.db.get_database_backend() {
        DbBackend::Postgres => poisoned[0].push_str("::jsonb"),
        _ => {
            // Text that is not JSON, and bytes that are not even UTF-8.
            poisoned.push("'{\"marketplace\": \"oz'".into());
            poisoned.push("X'FF7B'".into());
            reasons.push("the stored item cannot be read: EOF while parsing");
            reasons.push("the stored item cannot be read: expected value");
        }
    }
    for payload in &poisoned {
        store_raw(&n.app, alpha_session, payload).await;
    }
    let beta_session = n.beta_uploads_fifty().await;

    n.one_tick_rejects_alone(alpha_session, beta_session, &reasons)
        .await;
}

#[tokio::test]
async fn a_row_the_database_refuses_to_write_is_rejected_alone_and_holds_up_no_one() {
    let mut n = Neighbours::start().await;
    // A plain RAISE EXCEPTION on PostgreSQL (SQLSTATE P0001), RAISE(ABORT) on SQLite.
    refuse_product(&n.app, "marker", "the marker is refused", None).await;
    let alpha_session = send(&n.app, &n.alpha, vec![item("a1"), item("marker")]).await;
    let beta_session = n.beta_uploads_fifty().await;

    n.one_tick_rejects_alone(alpha_session, beta_session, &["could not be stored: "])
        .await;
    let rows = outcomes(&n.app, alpha_session).await;
    let reason = rows[1].1.as_deref().unwrap_or_default();
    assert!(reason.contains("the marker is refused"), "{reason}");
}
