//! Live events for GraphQL subscriptions: "session X changed" and "a
//! product's price moved", both announced after the merge's transaction
//! committed. On PostgreSQL they cross processes with LISTEN/NOTIFY (the
//! worker that merges and the replica that serves the subscriber may
//! differ); on SQLite, which has one process, an in-process channel serves.
//! A subscriber that falls more than [`BACKLOG`] events behind misses the
//! oldest of them.
//!
//! The same listener carries the data versions of the response cache
//! (`cache/versions.rs`): it bumps them on each `vitrina_data` notification,
//! and reads them as unknown from the moment its connection is lost until
//! it listens again.

use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, Statement};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, watch};
use uuid::Uuid;

use crate::cache::versions::{self, DataVersions, Grains};
use crate::query::movers::PriceMove;

/// The channel of session events: the session's id as text.
const SESSIONS: &str = "vitrina_sessions";
/// The channel of price moves: a [`PriceMove`] as JSON.
const PRICES: &str = "vitrina_prices";

/// Events a subscriber may fall behind by.
pub const BACKLOG: usize = 1024;

/// How long a subscriber waits for the PostgreSQL listener to be in place.
const READY_WAIT: Duration = Duration::from_secs(10);

/// How long a listener that cannot connect waits before it tries again,
/// doubling after each failure up to [`RECONNECT_WAIT_MAX`].
const RECONNECT_WAIT: Duration = Duration::from_millis(200);
const RECONNECT_WAIT_MAX: Duration = Duration::from_secs(5);

/// One event.
#[derive(Debug, Clone)]
pub enum Event {
    /// A session's status or stats changed.
    Session(Uuid),
    /// A merge moved a product's lowest current price in a currency.
    Price(Arc<PriceMove>),
}

/// The event bus of this process.
#[derive(Debug, Clone)]
pub struct Events {
    tx: broadcast::Sender<Event>,
    /// Whether events of every process arrive (always, on SQLite).
    listening: watch::Receiver<bool>,
    listening_tx: Arc<watch::Sender<bool>>,
    /// The versions of the data, as the writes this process learns of left them.
    versions: Arc<DataVersions>,
}

impl Default for Events {
    fn default() -> Self {
        let (listening_tx, listening) = watch::channel(true);
        Events {
            tx: broadcast::channel(BACKLOG).0,
            listening,
            listening_tx: Arc::new(listening_tx),
            versions: Arc::new(DataVersions::new(true)),
        }
    }
}

impl Events {
    /// The versions of the data in this process.
    pub fn versions(&self) -> &Arc<DataVersions> {
        &self.versions
    }

    /// Waits until events from every process arrive, so a subscriber that
    /// starts now misses nothing published after it.
    pub async fn ready(&self) {
        let mut listening = self.listening.clone();
        if tokio::time::timeout(READY_WAIT, listening.wait_for(|ready| *ready))
            .await
            .is_err()
        {
            tracing::warn!("events are not being received yet");
        }
    }

    /// Receives the events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.tx.subscribe()
    }

    /// How many subscribers this process has now (each open subscription).
    pub fn subscribers(&self) -> usize {
        self.tx.receiver_count()
    }

    /// Announces, after its transaction committed, that a session changed.
    pub async fn session_changed(&self, db: &DatabaseConnection, session: Uuid) {
        self.publish(db, SESSIONS, session.to_string(), Event::Session(session))
            .await
    }

    /// Announces, after their transaction committed, the price moves of a merge.
    pub async fn prices_moved(&self, db: &DatabaseConnection, moves: Vec<PriceMove>) {
        for price in moves {
            // Another replica could not read an empty payload: a move that
            // does not serialize is logged and left out, never sent broken.
            match serde_json::to_string(&price) {
                Ok(payload) => {
                    self.publish(db, PRICES, payload, Event::Price(Arc::new(price)))
                        .await;
                }
                Err(error) => tracing::warn!(%error, "a price move was not announced"),
            }
        }
    }

    async fn publish(&self, db: &DatabaseConnection, channel: &str, payload: String, event: Event) {
        if db.get_database_backend() != DbBackend::Postgres {
            let _ = self.tx.send(event);
            return;
        }
        let notify = Statement::from_sql_and_values(
            DbBackend::Postgres,
            "SELECT pg_notify($1, $2)",
            [channel.into(), payload.into()],
        );
        if let Err(e) = db.execute_raw(notify).await {
            tracing::warn!(error = %e, channel, "event not published");
        }
    }

    /// Starts following the writes of every process: on PostgreSQL,
    /// forwards their NOTIFY events to this process's subscribers and data
    /// versions; on SQLite, watches for commits made by other connections.
    pub fn listen(&self, db: &DatabaseConnection) {
        match db.get_database_backend() {
            DbBackend::Postgres => self.listen_postgres(db),
            _ => self.watch_sqlite(db),
        }
    }

    fn listen_postgres(&self, db: &DatabaseConnection) {
        let pool = db.get_postgres_connection_pool().clone();
        let (tx, versions) = (self.tx.clone(), self.versions.clone());
        let listening = self.listening_tx.clone();
        listening.send_replace(false);
        versions.lost();
        tokio::spawn(async move {
            let mut wait = RECONNECT_WAIT;
            loop {
                let mut listener = match listen_to_all(&pool).await {
                    Ok(listener) => listener,
                    Err(e) => {
                        tracing::warn!(error = %e, retry_in = ?wait, "cannot listen for events");
                        tokio::time::sleep(wait).await;
                        wait = (wait * 2).min(RECONNECT_WAIT_MAX);
                        continue;
                    }
                };
                wait = RECONNECT_WAIT;
                versions.restored();
                listening.send_replace(true);
                // `try_recv` answers `None` once the connection is lost:
                // whatever was sent meanwhile never arrives.
                while let Ok(Some(note)) = listener.try_recv().await {
                    match note.channel() {
                        versions::CHANNEL => versions.bump(Grains::of_payload(note.payload())),
                        channel => {
                            if let Some(event) = parse(channel, note.payload()) {
                                let _ = tx.send(event);
                            }
                        }
                    }
                }
                tracing::warn!("event listener lost its connection; listening again");
                listening.send_replace(false);
                versions.lost();
            }
        });
    }

    /// A SQLite process bumps the data versions for its own writes as they
    /// commit; a commit by another process (the CLI, a hand-run statement)
    /// shows in `PRAGMA data_version` of a connection of our own, read
    /// every [`versions::FOREIGN_WRITES_POLL`]. Each change of it bumps
    /// every grain; this process's own commits change it too, which only
    /// retires answers early.
    fn watch_sqlite(&self, db: &DatabaseConnection) {
        use sea_orm::sqlx::{ConnectOptions, Connection};
        let options = db.get_sqlite_connection_pool().connect_options();
        let versions = self.versions.clone();
        tokio::spawn(async move {
            let mut seen = None;
            let mut connection = None;
            let mut tick = tokio::time::interval(versions::FOREIGN_WRITES_POLL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                if connection.is_none() {
                    connection = options.connect().await.ok();
                }
                let Some(conn) = connection.as_mut() else {
                    versions.lost();
                    seen = None;
                    continue;
                };
                let read = sea_orm::sqlx::query_scalar::<_, i64>("PRAGMA data_version")
                    .fetch_one(&mut *conn)
                    .await;
                match (read, seen) {
                    (Ok(now), None) => {
                        seen = Some(now);
                        versions.restored();
                    }
                    (Ok(now), Some(before)) if now != before => {
                        seen = Some(now);
                        versions.bump(Grains::ALL);
                    }
                    (Ok(_), Some(_)) => {}
                    (Err(e), _) => {
                        tracing::warn!(error = %e, "cannot watch the database for writes");
                        versions.lost();
                        seen = None;
                        if let Some(conn) = connection.take() {
                            let _ = conn.close().await;
                        }
                    }
                }
            }
        });
    }
}

/// A listener on every channel of [`Events`] and the data versions.
async fn listen_to_all(
    pool: &sea_orm::sqlx::PgPool,
) -> Result<sea_orm::sqlx::postgres::PgListener, sea_orm::sqlx::Error> {
    let mut listener = sea_orm::sqlx::postgres::PgListener::connect_with(pool).await?;
    listener.eager_reconnect(false);
    listener
        .listen_all([SESSIONS, PRICES, versions::CHANNEL])
        .await?;
    Ok(listener)
}

/// The event a NOTIFY on `channel` carries.
fn parse(channel: &str, payload: &str) -> Option<Event> {
    match channel {
        SESSIONS => payload.parse().ok().map(Event::Session),
        PRICES => serde_json::from_str(payload)
            .ok()
            .map(|price| Event::Price(Arc::new(price))),
        _ => None,
    }
}
