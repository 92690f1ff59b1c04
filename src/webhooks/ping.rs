//! The test event: a signed `ping` sent to a subscription at once, so its
//! receiver's signature check can be tried before a real session completes.
//!
//! It goes out exactly like a delivery attempt (same headers, signed with the
//! secrets in force, the same target check in the same HTTP client, the same
//! time limit), but only once, and it is not stored: it is not a delivery,
//! shows nowhere in the delivery log, and its outcome neither retries nor
//! counts towards auto-disable. The caller gets the outcome instead.

use chrono::{DateTime, Utc};
use sea_orm::DatabaseConnection;
use uuid::Uuid;

use super::retry::{self, Outcome};
use super::rotation::signing_secrets;
use super::sender::{Message, Sender};
use super::subscriptions::{self, SubscriptionError};

/// The test event's kind (`X-Vitrina-Event` and `event`).
pub const PING: &str = "ping";

/// What became of a ping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PingReport {
    /// The `X-Vitrina-Delivery` header it carried.
    pub id: Uuid,
    /// Answered 2xx, as a delivery must be to succeed.
    pub delivered: bool,
    /// The answer, or why there was none (worded as in the delivery log).
    pub outcome: Outcome,
    pub duration_ms: i64,
}

/// Sends a ping to one of the account's active subscriptions now and
/// reports its outcome.
pub async fn ping(
    db: &DatabaseConnection,
    sender: &Sender,
    account_id: Uuid,
    subscription_id: Uuid,
    now: DateTime<Utc>,
) -> Result<PingReport, SubscriptionError> {
    let subscription = subscriptions::find_active(db, account_id, subscription_id).await?;
    // The delivery payload's `event` and `user_id`, and the subscription it
    // tests in place of a session.
    let body = serde_json::json!({
        "event": PING,
        "user_id": account_id,
        "webhook_id": subscription_id,
    })
    .to_string();
    let message = Message {
        id: Uuid::new_v4(),
        event: PING,
        body: &body,
    };
    let secrets = signing_secrets(&subscription, now);
    let (outcome, duration_ms) = sender
        .send(&subscription.target_url, &secrets, message, now)
        .await;
    Ok(PingReport {
        id: message.id,
        delivered: retry::judge(&outcome, 1, now).is_success(),
        outcome,
        duration_ms,
    })
}

/// Pings a subscription of any account (the operator's CLI).
pub async fn ping_for_operator(
    db: &DatabaseConnection,
    sender: &Sender,
    subscription_id: Uuid,
    now: DateTime<Utc>,
) -> Result<PingReport, SubscriptionError> {
    let owner = subscriptions::owner_for_operator(db, subscription_id).await?;
    ping(db, sender, owner, subscription_id, now).await
}
