//! Webhook subscriptions and delivery of `scrape_session.completed` events.
//!
//! The outbox contract: the merge pass writes one `webhook_deliveries` row per
//! active subscription of the session's account, in the same transaction
//! that completes the session (`crate::jobs::completion`), with `payload`
//! holding the exact body bytes, `status = pending`, `attempts = 0` and
//! `next_attempt_at = now`. Delivery (this module) claims due rows, signs and
//! sends them, logs each attempt and reschedules or finishes them.

pub mod delivery;
pub mod outbox;
