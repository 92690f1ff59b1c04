//! The application state every request handler reaches, and the
//! process-wide watches it holds: the server draining, revoked keys and
//! the keys admitted lately.

mod draining;
pub mod known_keys;
pub mod revocations;

pub use draining::Draining;

use std::sync::Arc;

use sea_orm::DatabaseConnection;

use crate::cache::ResponseCache;
use crate::clock::SharedClock;
use crate::config::Settings;
use crate::events::Events;
use crate::limits::{DbTimeBudget, RateLimiter};
use crate::webhooks::Sender;
use known_keys::KnownKeys;
use revocations::Revocations;

/// What every request handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub db: DatabaseConnection,
    pub clock: SharedClock,
    /// Base address clients reach the service at, without a trailing slash.
    pub public_url: String,
    pub settings: Settings,
    pub rate_limiter: Arc<RateLimiter>,
    /// The database time each account used this minute.
    pub db_time: Arc<DbTimeBudget>,
    /// Live session progress for GraphQL subscriptions.
    pub events: Events,
    /// The keys of open WebSockets, watched for revocation.
    pub revocations: Arc<Revocations>,
    /// The keys admitted lately, kept true by the revocation poll.
    pub known_keys: Arc<KnownKeys>,
    /// Answers kept until the data they were worked out from changes.
    pub cache: Arc<ResponseCache>,
    /// Under `serve --demo`: the demo key, filled into GraphiQL and the
    /// dashboard (which is served only then).
    pub demo_key: Option<String>,
    /// Set once the server starts shutting down.
    pub draining: Draining,
    /// Sends webhook test events (the delivery job shares it).
    pub webhook_sender: Sender,
}

impl AppState {
    /// Fails when the sizes do not fit together (`SizeConfig::check`) or
    /// the webhook client cannot be built.
    pub fn new(
        db: DatabaseConnection,
        clock: SharedClock,
        public_url: String,
        settings: Settings,
    ) -> Result<Self, crate::Error> {
        settings.sizes.check().map_err(crate::Error::Invalid)?;
        let known_keys = Arc::new(KnownKeys::new(usize::from(settings.http.key_cache_entries)));
        let events = Events::default();
        events.listen(&db);
        Ok(AppState {
            webhook_sender: Sender::new(&settings.webhooks)?,
            clock,
            public_url,
            rate_limiter: Arc::new(RateLimiter::new(
                settings.limits.rate_per_minute,
                &settings.redis,
            )),
            db_time: Arc::new(DbTimeBudget::new(
                settings.limits.db_time_per_minute_ms,
                settings.limits.db_time_burst_ms,
            )),
            cache: Arc::new(ResponseCache::new(
                settings.http.cache_mb,
                settings.http.cache_share_percent,
                events.versions().clone(),
            )),
            events,
            revocations: Revocations::start(&db, known_keys.clone()),
            known_keys,
            db,
            settings,
            demo_key: None,
            draining: Draining::default(),
        })
    }

    /// The state of `serve --demo`, whose pages carry `key`.
    pub fn with_demo_key(self, key: String) -> Self {
        AppState {
            demo_key: Some(key),
            ..self
        }
    }
}
