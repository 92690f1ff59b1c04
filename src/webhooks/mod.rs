//! Webhook subscriptions and delivery of `scrape_session.completed` events.
//!
//! The outbox contract: the merge pass writes one `webhook_deliveries` row per
//! active subscription of the session's account, in the same transaction
//! that completes the session ([`outbox::enqueue_session_completed`]), with
//! `payload` holding the exact body bytes, `status = pending`, `attempts = 0`
//! and `next_attempt_at = now`. Delivery ([`delivery::deliver_due`]) claims
//! due rows, signs and sends them, logs each attempt and reschedules or
//! finishes them.
//!
//! | file | what it owns |
//! |---|---|
//! | `outbox.rs` | the payload and enqueueing |
//! | `subscriptions.rs` | subscriptions of an account, the 5-active cap, the delivery log |
//! | `delivery.rs` | the delivery job: claiming, sending in waves, the attempt log |
//! | `allowance.rs` | exact auto-disable: attempts reserved against the threshold |
//! | `sender.rs` | the HTTP client and one signed POST |
//! | `retry.rs` | what an attempt's outcome means: success, retry when, or failure |
//! | `signature.rs` | secrets and the `X-Vitrina-Signature` header |
//! | `rotation.rs` | secret rotation and the secrets in force during its overlap |
//! | `redelivery.rs` | sending a finished delivery again, as a new delivery |
//! | `ping.rs` | the `ping` test event, sent at once and not stored |
//! | `target.rs` | which targets may be dialled (SSRF guard in the DNS resolver) |

mod allowance;
pub mod delivery;
pub mod outbox;
pub mod ping;
pub mod redelivery;
pub mod retry;
pub mod rotation;
pub mod sender;
pub mod signature;
pub mod subscriptions;
pub mod target;

pub use delivery::{DeliveryReport, deliver_due};
pub use outbox::enqueue_session_completed;
pub use sender::Sender;
