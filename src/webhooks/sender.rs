//! The HTTP side of delivery: one signed POST per attempt.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use entity::webhook_delivery;
use reqwest::header::{CONTENT_TYPE, RETRY_AFTER};
use uuid::Uuid;

use super::retry::Outcome;
use super::signature::signature_header;
use super::target::{PublicResolver, TargetError, TargetPolicy};
use crate::config::WebhookConfig;
use crate::error::Error;

/// Header names of a delivery (the spec's neutral "Service" is our brand).
pub const EVENT_HEADER: &str = "x-vitrina-event";
pub const SIGNATURE_HEADER: &str = "x-vitrina-signature";
/// The delivery's id: the same on every retry, so receivers can deduplicate.
pub const DELIVERY_HEADER: &str = "x-vitrina-delivery";

/// What one POST carries: a stored delivery, or a test event.
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    /// Sent as the delivery id header.
    pub id: Uuid,
    pub event: &'a str,
    /// The exact body bytes.
    pub body: &'a str,
}

impl<'a> From<&'a webhook_delivery::Model> for Message<'a> {
    fn from(delivery: &'a webhook_delivery::Model) -> Self {
        Message {
            id: delivery.id,
            event: &delivery.event,
            body: &delivery.payload,
        }
    }
}

/// Sends delivery attempts. Built once from [`WebhookConfig`]: the HTTP
/// client and the delivery rules (target policy, timeout, auto-disable).
#[derive(Debug, Clone)]
pub struct Sender {
    client: reqwest::Client,
    policy: TargetPolicy,
    timeout: Duration,
    disable_after: u32,
}

impl Sender {
    pub fn new(config: &WebhookConfig) -> Result<Sender, Error> {
        if config.sending.webhook_disable_after == 0 {
            // No attempt could ever be reserved (see allowance.rs).
            return Err(Error::Invalid(
                "VITRINA_WEBHOOK_DISABLE_AFTER must be at least 1, got 0".into(),
            ));
        }
        let policy = TargetPolicy::from(&config.targets);
        if policy.allow_insecure {
            tracing::warn!(
                "webhook targets are NOT checked (development switch on): http:// and private or loopback addresses are allowed"
            );
        }
        let timeout = Duration::from_millis(config.sending.webhook_timeout_ms);
        let client = reqwest::Client::builder()
            // Redirects are a failure, not something to follow to wherever they point.
            .redirect(reqwest::redirect::Policy::none())
            // A proxy would dial the target itself and bypass the address check.
            .no_proxy()
            .dns_resolver(Arc::new(PublicResolver(policy)))
            .https_only(!policy.allow_insecure)
            .timeout(timeout)
            .user_agent(concat!("Vitrina-Webhooks/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::Invalid(format!("cannot build the webhook HTTP client: {e}")))?;
        Ok(Sender {
            client,
            policy,
            timeout,
            disable_after: config.sending.webhook_disable_after,
        })
    }

    /// The per-attempt time limit.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Consecutive failed attempts that disable a subscription.
    pub fn disable_after(&self) -> u32 {
        self.disable_after
    }

    /// POSTs the message's body to `target_url`, signed at `now` with each
    /// of `secrets`: the outcome, and how long it took in milliseconds. The
    /// response body is never read.
    pub async fn send(
        &self,
        target_url: &str,
        secrets: &[&str],
        message: Message<'_>,
        now: DateTime<Utc>,
    ) -> (Outcome, i64) {
        let started = Instant::now();
        let outcome = self.post(target_url, secrets, message, now).await;
        let duration_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        (outcome, duration_ms)
    }

    async fn post(
        &self,
        target_url: &str,
        secrets: &[&str],
        message: Message<'_>,
        now: DateTime<Utc>,
    ) -> Outcome {
        let url = match self.policy.check_url(target_url) {
            Ok(url) => url,
            Err(e) => return Outcome::NotAllowed(e.to_string()),
        };
        let body = message.body.as_bytes();
        let sent = self
            .client
            .post(url)
            .header(CONTENT_TYPE, "application/json")
            .header(EVENT_HEADER, message.event)
            .header(DELIVERY_HEADER, message.id.to_string())
            .header(
                SIGNATURE_HEADER,
                signature_header(secrets, now.timestamp(), body),
            )
            .body(message.body.to_owned())
            .send()
            .await;
        match sent {
            Ok(response) => Outcome::Answered {
                status: response.status().as_u16(),
                retry_after: response
                    .headers()
                    .get(RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned),
            },
            Err(e) => Outcome::NoAnswer(self.describe(&e)),
        }
    }

    /// One line saying why no answer came: the refusal of the address check
    /// when that is the cause, else the innermost errors.
    fn describe(&self, err: &reqwest::Error) -> String {
        if err.is_timeout() {
            return format!("timed out after {} ms", self.timeout.as_millis());
        }
        let mut causes = Vec::new();
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
        while let Some(cause) = source {
            if let Some(refused) = cause.downcast_ref::<TargetError>() {
                return format!("refused: {refused}");
            }
            causes.push(cause.to_string());
            source = cause.source();
        }
        // The outer errors only repeat "error sending request for url (...)".
        causes.split_off(causes.len().saturating_sub(2)).join(": ")
    }
}
