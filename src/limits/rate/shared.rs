//! Rate windows in Redis, shared by every replica. One Lua script per request
//! reads the account's window, counts the request when it fits and sets the
//! key to expire (or only reads), atomically, so replicas racing on one
//! window never let more than the limit through.
//!
//! Redis is asked with a deadline; a request it does not answer in time is
//! counted in process memory by the caller. After a failure Redis rests for
//! a second (requests go straight to process memory, so an outage costs one
//! timeout a second, not one per request); an outage is logged when it
//! starts, at most once a minute while it lasts, and when it ends.

use std::fmt::Display;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, ConnectionInfo, Script};
use uuid::Uuid;

use super::{Counted, Tally, Window};

/// KEYS[1]: the account's window; ARGV[1]: the limit; ARGV[2]: seconds the
/// key lives after its first request; ARGV[3]: the [`Tally`] (`count` counts
/// ARGV[4] requests when they all fit, `peek` only reads).
/// Answers {allowed (0 or 1), used}.
const TALLY: &str = r"
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local tally = ARGV[3]
if tally == 'peek' then
  return {used < tonumber(ARGV[1]) and 1 or 0, used}
end
local units = tonumber(ARGV[4])
if used + units > tonumber(ARGV[1]) then
  return {0, used}
end
used = redis.call('INCRBY', KEYS[1], units)
if used == units then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
end
return {1, used}
";

/// A window's key outlives its minute, with a minute of slack for replicas
/// whose clocks disagree; then Redis drops it on its own.
const KEY_TTL_SECS: u64 = 120;

/// How long Redis rests after a failure before it is asked again.
const REST_AFTER_FAILURE: Duration = Duration::from_secs(1);

/// Least time between two warnings of one outage.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// Longest a new connection may take; requests do not wait for it longer
/// than their own deadline.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub(super) struct SharedWindows {
    connection: ConnectionManager,
    script: Script,
    /// Where Redis is, for logs (no credentials).
    address: String,
    timeout: Duration,
    outage: Mutex<Outage>,
}

/// What is known of a Redis that failed.
#[derive(Debug, Default)]
struct Outage {
    /// Redis is not asked before this instant; `None` while it answers.
    rest_until: Option<Instant>,
    /// When this outage was last logged.
    warned_at: Option<Instant>,
}

impl SharedWindows {
    /// Does not connect: the connection opens on first use and reopens by
    /// itself after Redis went away.
    pub(super) fn new(url: ConnectionInfo, timeout: Duration) -> redis::RedisResult<Self> {
        let address = url.addr().to_string();
        let client = Client::open(url)?;
        // One attempt per try: the rest after a failure paces the retries.
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_number_of_retries(0);
        let connection = client.get_connection_manager_lazy(config)?;
        Ok(SharedWindows {
            connection,
            script: Script::new(TALLY),
            address,
            timeout,
            outage: Mutex::default(),
        })
    }

    /// Tallies one request in Redis; `None` when Redis is resting or did not
    /// answer in time, and the request must be tallied locally.
    pub(super) async fn tally(
        &self,
        account: Uuid,
        window: Window,
        limit: u32,
        tally: Tally,
    ) -> Option<Counted> {
        if self.resting() {
            return None;
        }
        let mut connection = self.connection.clone();
        let mut invocation = self
            .script
            .key(format!("vitrina:rate:{account}:{}", window.minute));
        let units = match tally {
            Tally::Count(units) => units,
            Tally::Peek => 1,
        };
        invocation
            .arg(limit)
            .arg(KEY_TTL_SECS)
            .arg(tally.name())
            .arg(units);
        let answer = invocation.invoke_async::<(i64, i64)>(&mut connection);
        match tokio::time::timeout(self.timeout, answer).await {
            Ok(Ok((counted, used))) => {
                self.answered();
                Some(Counted {
                    allowed: counted == 1,
                    used: u32::try_from(used).unwrap_or(u32::MAX),
                })
            }
            Ok(Err(error)) => {
                self.failed(error);
                None
            }
            Err(_) => {
                self.failed(format_args!("no answer within {:?}", self.timeout));
                None
            }
        }
    }

    fn outage(&self) -> std::sync::MutexGuard<'_, Outage> {
        self.outage.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn resting(&self) -> bool {
        self.outage()
            .rest_until
            .is_some_and(|until| Instant::now() < until)
    }

    fn answered(&self) {
        let mut outage = self.outage();
        if outage.rest_until.is_some() {
            *outage = Outage::default();
            tracing::info!(
                redis = %self.address,
                "Redis answers again: the per-minute rate limit is shared by the replicas again"
            );
        }
    }

    fn failed(&self, cause: impl Display) {
        let now = Instant::now();
        let mut outage = self.outage();
        outage.rest_until = Some(now + REST_AFTER_FAILURE);
        if outage
            .warned_at
            .is_none_or(|warned| now.duration_since(warned) >= WARN_EVERY)
        {
            outage.warned_at = Some(now);
            tracing::warn!(
                redis = %self.address,
                %cause,
                "Redis is unavailable: the per-minute rate limit is counted in this process \
                 (each replica allows the full limit) until Redis answers"
            );
        }
    }
}
