//! Live events for GraphQL subscriptions: "session X changed" and "a
//! product's price moved", both announced after the merge's transaction
//! committed. On PostgreSQL they cross processes with LISTEN/NOTIFY (the
//! worker that merges and the replica that serves the subscriber may
//! differ); on SQLite, which has one process, an in-process channel serves.
//! A subscriber that falls more than [`BACKLOG`] events behind misses the
//! oldest of them.

use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, Statement};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, watch};
use uuid::Uuid;

use crate::query::movers::PriceMove;

/// The channel of session events: the session's id as text.
const SESSIONS: &str = "vitrina_sessions";
/// The channel of price moves: a [`PriceMove`] as JSON.
const PRICES: &str = "vitrina_prices";

/// Events a subscriber may fall behind by.
pub const BACKLOG: usize = 1024;

/// How long a subscriber waits for the PostgreSQL listener to be in place.
const READY_WAIT: Duration = Duration::from_secs(10);

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
}

impl Default for Events {
    fn default() -> Self {
        let (listening_tx, listening) = watch::channel(true);
        Events {
            tx: broadcast::channel(BACKLOG).0,
            listening,
            listening_tx: Arc::new(listening_tx),
        }
    }
}

impl Events {
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

    /// On PostgreSQL, forwards NOTIFY events of every process to this
    /// process's subscribers; a no-op on SQLite.
    pub fn listen(&self, db: &DatabaseConnection) {
        if db.get_database_backend() != DbBackend::Postgres {
            return;
        }
        let pool = db.get_postgres_connection_pool().clone();
        let tx = self.tx.clone();
        let listening = self.listening_tx.clone();
        listening.send_replace(false);
        tokio::spawn(async move {
            let mut listener = match sea_orm::sqlx::postgres::PgListener::connect_with(&pool).await
            {
                Ok(l) => l,
                Err(e) => return tracing::error!(error = %e, "cannot listen for events"),
            };
            if let Err(e) = listener.listen_all([SESSIONS, PRICES]).await {
                return tracing::error!(error = %e, "cannot listen for events");
            }
            listening.send_replace(true);
            loop {
                match listener.recv().await {
                    Ok(note) => {
                        if let Some(event) = parse(note.channel(), note.payload()) {
                            let _ = tx.send(event);
                        }
                    }
                    // The listener reconnects by itself on the next recv.
                    Err(e) => tracing::warn!(error = %e, "event listener interrupted"),
                }
            }
        });
    }
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
