//! Live session progress: "session X changed" events for GraphQL
//! subscriptions. On PostgreSQL they cross processes with LISTEN/NOTIFY (the
//! worker that merges and the replica that serves the subscriber may differ);
//! on SQLite, which has one process, an in-process channel serves.

use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, Statement};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, watch};
use uuid::Uuid;

const CHANNEL: &str = "vitrina_sessions";

/// How long a subscriber waits for the PostgreSQL listener to be in place.
const READY_WAIT: Duration = Duration::from_secs(10);

/// The event bus of this process.
#[derive(Debug, Clone)]
pub struct SessionEvents {
    tx: broadcast::Sender<Uuid>,
    /// Whether events of every process arrive (always, on SQLite).
    listening: watch::Receiver<bool>,
    listening_tx: Arc<watch::Sender<bool>>,
}

impl Default for SessionEvents {
    fn default() -> Self {
        let (listening_tx, listening) = watch::channel(true);
        SessionEvents {
            tx: broadcast::channel(1024).0,
            listening,
            listening_tx: Arc::new(listening_tx),
        }
    }
}

impl SessionEvents {
    /// Waits until events from every process arrive, so a subscriber that
    /// starts now misses nothing published after it.
    pub async fn ready(&self) {
        let mut listening = self.listening.clone();
        if tokio::time::timeout(READY_WAIT, listening.wait_for(|ready| *ready))
            .await
            .is_err()
        {
            tracing::warn!("session events are not being received yet");
        }
    }

    /// Receives the ids of sessions that changed from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Uuid> {
        self.tx.subscribe()
    }

    /// Announces, after its transaction committed, that a session changed.
    pub async fn publish(&self, db: &DatabaseConnection, session: Uuid) {
        if db.get_database_backend() == DbBackend::Postgres {
            let notify = Statement::from_sql_and_values(
                DbBackend::Postgres,
                "SELECT pg_notify($1, $2)",
                [CHANNEL.into(), session.to_string().into()],
            );
            if let Err(e) = db.execute_raw(notify).await {
                tracing::warn!(error = %e, "session event not published");
            }
        } else {
            let _ = self.tx.send(session);
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
        let listening = self.listening_tx.clone();
        listening.send_replace(false);
        tokio::spawn(async move {
            let mut listener = match sea_orm::sqlx::postgres::PgListener::connect_with(&pool).await
            {
                Ok(l) => l,
                Err(e) => return tracing::error!(error = %e, "cannot listen for session events"),
            };
            if let Err(e) = listener.listen(CHANNEL).await {
                return tracing::error!(error = %e, "cannot listen for session events");
            }
            listening.send_replace(true);
            loop {
                match listener.recv().await {
                    Ok(note) => {
                        if let Ok(id) = note.payload().parse() {
                            let _ = tx.send(id);
                        }
                    }
                    // The listener reconnects by itself on the next recv.
                    Err(e) => tracing::warn!(error = %e, "session event listener interrupted"),
                }
            }
        });
    }
}
