//! A revoked key ends the WebSocket connections it opened. An HTTP request
//! has its key checked each time; a WebSocket only when it opens, so each
//! process watches the keys of its open sockets and asks the database every
//! [`POLL`] whether any was revoked. A key revoked anywhere (by the CLI, on
//! another replica, on either database) ends its sockets, and their
//! subscriptions, on every replica within that time. The same poll keeps
//! the keys HTTP requests are admitted with from memory true
//! ([`super::known_keys`]). It reads the watched and remembered keys by
//! primary key, and sends nothing while there are none.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use sea_orm::DatabaseConnection;
use tokio::sync::watch;
use uuid::Uuid;

use super::known_keys::KnownKeys;
use crate::accounts;

/// How often the watched keys are looked up.
pub const POLL: Duration = Duration::from_millis(400);

/// Keys read by one statement of the poll: SQLite takes at most 32,766
/// parameters, and the sockets' keys come on top of the remembered ones.
const POLLED_AT_ONCE: usize = 10_000;

/// The keys this process's open sockets were admitted with, and the keys
/// it remembers.
pub struct Revocations {
    watched: Mutex<HashMap<Uuid, Watched>>,
    known: Arc<KnownKeys>,
}

struct Watched {
    sockets: usize,
    revoked: watch::Sender<bool>,
}

impl Revocations {
    /// Starts watching over `db` until the runtime ends.
    pub fn start(db: &DatabaseConnection, known: Arc<KnownKeys>) -> Arc<Self> {
        let revocations = Arc::new(Revocations {
            watched: Mutex::default(),
            known,
        });
        let weak = Arc::downgrade(&revocations);
        let db = db.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(POLL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(revocations) = weak.upgrade() else {
                    return;
                };
                if let Err(e) = revocations.poll(&db).await {
                    tracing::warn!(error = %e, "could not look up revoked API keys");
                }
            }
        });
        revocations
    }

    /// Watches `key` for as long as the returned value lives.
    pub fn watch(self: &Arc<Self>, key: Uuid) -> Watch {
        let mut watched = self.lock();
        let entry = watched.entry(key).or_insert_with(|| Watched {
            sockets: 0,
            revoked: watch::channel(false).0,
        });
        entry.sockets += 1;
        Watch {
            key,
            revoked: entry.revoked.subscribe(),
            revocations: self.clone(),
        }
    }

    /// Tells the sockets of every watched key revoked since, and forgets
    /// the remembered ones.
    async fn poll(&self, db: &DatabaseConnection) -> Result<(), sea_orm::DbErr> {
        let began = Instant::now();
        let mut keys: Vec<Uuid> = self.lock().keys().copied().collect();
        keys.extend(self.known.in_use());
        keys.sort_unstable();
        keys.dedup();
        let mut revoked = Vec::new();
        for some in keys.chunks(POLLED_AT_ONCE) {
            revoked.extend(accounts::revoked_among(db, some).await?);
        }
        let watched = self.lock();
        for key in &revoked {
            if let Some(entry) = watched.get(key) {
                entry.revoked.send_replace(true);
            }
        }
        self.known.checked(&revoked, began);
        Ok(())
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Uuid, Watched>> {
        // A map of counters: a panicking holder leaves nothing half done.
        self.watched
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// One socket's watch over its key.
pub struct Watch {
    key: Uuid,
    revoked: watch::Receiver<bool>,
    revocations: Arc<Revocations>,
}

impl Watch {
    /// Resolves once the key is revoked.
    pub async fn revoked(&mut self) {
        if self.revoked.wait_for(|revoked| *revoked).await.is_err() {
            // The sender lives as long as this watch: never reached.
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut watched = self.revocations.lock();
        if let Some(entry) = watched.get_mut(&self.key) {
            entry.sockets -= 1;
            if entry.sockets == 0 {
                watched.remove(&self.key);
            }
        }
    }
}
