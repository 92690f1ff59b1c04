//! A merge batch cut short by a database fault goes back to `pending` at
//! once, not after its lease, even when the fault outlasts the hand-back:
//! the worker remembers the batch and hands it back first thing in its next
//! tick, once the database answers again, taking back the attempt the fault
//! interrupted. Only rows still leased to it under that claim go back.

use chrono::TimeDelta;
use entity::SubmissionStatus;
use sea_orm::{ConnectionTrait, DbBackend};
use vitrina::clock::Clock;
use vitrina::jobs::merge;

use crate::helpers::uploads::{attempts, item, outcomes, send};
use crate::helpers::{TestApp, pin_sqlite_file};

/// From the first product write on, the database fails with a fault of its
/// own (a full disk on SQLite; a shutdown, SQLSTATE 57P01, on PostgreSQL),
/// and still fails when the worker hands its batch back; the claim and the
/// attempt count before them go through. `false` heals it.
async fn outage(app: &TestApp, down: bool) {
    let postgres = app.db.get_database_backend() == DbBackend::Postgres;
    let statements: &[&str] = match (postgres, down) {
        (true, true) => &[
            "CREATE FUNCTION shutting_down() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
             RAISE EXCEPTION 'the database system is shutting down' USING ERRCODE = 'admin_shutdown'; \
             END $$",
            "CREATE TRIGGER outage BEFORE INSERT ON products \
             FOR EACH ROW EXECUTE FUNCTION shutting_down()",
            "CREATE TRIGGER outage BEFORE UPDATE ON submissions FOR EACH ROW \
             WHEN (OLD.status = 'processing' AND NEW.status = 'pending') \
             EXECUTE FUNCTION shutting_down()",
        ],
        (true, false) => &[
            "DROP TRIGGER outage ON products",
            "DROP TRIGGER outage ON submissions",
        ],
        (false, true) => &[
            "CREATE TABLE filler (bytes BLOB)",
            "CREATE TRIGGER outage_products BEFORE INSERT ON products \
             BEGIN INSERT INTO filler VALUES (randomblob(1000000)); END",
            "CREATE TRIGGER outage_submissions BEFORE UPDATE ON submissions \
             WHEN OLD.status = 'processing' AND NEW.status = 'pending' \
             BEGIN INSERT INTO filler VALUES (randomblob(1000000)); END",
        ],
        (false, false) => &[
            "DROP TRIGGER outage_products",
            "DROP TRIGGER outage_submissions",
        ],
    };
    for sql in statements {
        app.db.execute_unprepared(sql).await.unwrap();
    }
    if !postgres {
        pin_sqlite_file(app, down).await;
    }
}

fn statuses(rows: &[(SubmissionStatus, Option<String>)]) -> Vec<SubmissionStatus> {
    rows.iter().map(|(status, _)| *status).collect()
}

#[tokio::test]
async fn a_batch_cut_short_by_a_lasting_fault_goes_back_to_pending_as_soon_as_the_database_answers()
{
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let session = send(&app, &key, vec![item("1"), item("2"), item("3")]).await;
    let worker = app.jobs();
    outage(&app, true).await;
    assert!(worker.tick().await.is_err(), "the pass stops at the fault");
    assert_eq!(
        statuses(&outcomes(&app, session).await),
        [SubmissionStatus::Processing; 3],
        "the hand-back failed too"
    );
    assert_eq!(attempts(&app, session).await, [1, 0, 0]);

    outage(&app, false).await;
    // The lease (5 minutes) has not run out: the clock has not moved.
    let report = worker.tick().await.expect("the tick completes").merge;
    assert_eq!((report.released, report.merged, report.rejected), (3, 3, 0));
    assert_eq!(
        statuses(&outcomes(&app, session).await),
        [SubmissionStatus::Merged; 3]
    );
    assert_eq!(
        attempts(&app, session).await,
        [1, 1, 1],
        "the interrupted attempt was taken back: each counts its one merge"
    );
    let view = app
        .json_as(&key, &format!("/v1/me/scrapes/{session}"))
        .await;
    assert_eq!(view["data"]["status"], "completed");
}

#[tokio::test]
async fn a_late_hand_back_leaves_rows_another_worker_has_claimed_since() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let session = send(&app, &key, vec![item("1"), item("2")]).await;
    let worker = app.jobs();
    outage(&app, true).await;
    assert!(worker.tick().await.is_err());
    outage(&app, false).await;

    // Its lease runs out, and another worker claims the rows anew.
    app.clock.advance(TimeDelta::minutes(6));
    let other = app.jobs().merge;
    merge::release_expired(&app.db, app.clock.now())
        .await
        .unwrap();
    let taken = merge::claim(&app.db, app.clock.now(), &other)
        .await
        .unwrap();
    assert_eq!(taken.len(), 2);

    let report = worker.tick().await.expect("the tick completes").merge;
    assert_eq!((report.released, report.merged), (0, 0));
    assert_eq!(
        statuses(&outcomes(&app, session).await),
        [SubmissionStatus::Processing; 2],
        "still the other worker's"
    );
    assert_eq!(
        attempts(&app, session).await,
        [1, 0],
        "nothing of the other worker's claim is touched, its counted attempts included"
    );
}
