//! `vitrina webhooks ...`: the operator's view of webhook subscriptions.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use clap::Subcommand;
use entity::account;
use sea_orm::{DatabaseConnection, EntityTrait};
use uuid::Uuid;

use crate::accounts;
use crate::clock::Clock;
use crate::config::{
    WebhookConfig, WebhookRedelivery, WebhookRotation, WebhookSending, WebhookTargets,
};
use crate::error::Error;
use crate::webhooks::retry::Outcome;
use crate::webhooks::subscriptions::{self, Disabling, Interests, SubscriptionError};
use crate::webhooks::target::TargetPolicy;
use crate::webhooks::{Sender, ping, redelivery, rotation};

#[derive(Debug, Subcommand)]
pub enum WebhooksCommand {
    /// Subscribe an account's URL to `scrape_session.completed`; the signing
    /// secret is printed once.
    Create {
        /// The account's name.
        #[arg(long)]
        account: String,
        /// The target: a public https:// URL.
        #[arg(long)]
        url: String,
        /// The development switch for local targets applies here too.
        #[command(flatten)]
        config: WebhookTargets,
    },
    /// List subscriptions (never their secrets), of every account or of one.
    List {
        /// Only this account's (its name).
        #[arg(long)]
        account: Option<String>,
    },
    /// Disable a subscription by its id (final: it cannot be re-enabled).
    /// Disabling a disabled one changes nothing and says when it was.
    Disable {
        /// The subscription's id, as `webhooks list` shows it.
        id: Uuid,
    },
    /// Give a subscription a new signing secret, printed once; the old one
    /// keeps signing next to it for the overlap.
    RotateSecret {
        /// The subscription's id.
        id: Uuid,
        /// The overlap setting applies here.
        #[command(flatten)]
        config: WebhookRotation,
    },
    /// Send a finished delivery of a subscription again, as a new delivery
    /// that the server's delivery job sends like any other.
    Redeliver {
        /// The subscription.
        id: Uuid,
        /// The delivery to send again.
        delivery_id: Uuid,
        /// The limit on redeliveries waiting to be sent applies here.
        #[command(flatten)]
        config: WebhookRedelivery,
    },
    /// Send a signed `ping` event to a subscription now and print the
    /// outcome; fails unless the receiver answers 2xx.
    Test {
        /// The subscription's id.
        id: Uuid,
        /// Deliveries' settings (time limit, the development switch) apply here.
        #[command(flatten)]
        sending: WebhookSending,
        #[command(flatten)]
        targets: WebhookTargets,
    },
}

pub async fn run(
    conn: &DatabaseConnection,
    clock: &dyn Clock,
    command: WebhooksCommand,
) -> Result<(), Error> {
    let now = clock.now();
    match command {
        WebhooksCommand::Create {
            account,
            url,
            config,
        } => create(conn, now, &account, &url, &config).await,
        WebhooksCommand::List { account } => list(conn, account.as_deref()).await,
        WebhooksCommand::Disable { id } => disable(conn, now, id).await,
        WebhooksCommand::RotateSecret { id, config } => rotate_secret(conn, now, id, &config).await,
        WebhooksCommand::Redeliver {
            id,
            delivery_id,
            config,
        } => redeliver(conn, now, id, delivery_id, &config).await,
        WebhooksCommand::Test {
            id,
            sending,
            targets,
        } => {
            let config = WebhookConfig {
                sending,
                targets,
                ..WebhookConfig::default()
            };
            test(conn, now, id, &config).await
        }
    }
}

async fn create(
    conn: &DatabaseConnection,
    now: DateTime<Utc>,
    account: &str,
    url: &str,
    config: &WebhookTargets,
) -> Result<(), Error> {
    let owner = account_named(conn, account).await?;
    let policy = TargetPolicy::from(config);
    let created = subscriptions::create(conn, owner.id, url, Interests::default(), policy, now)
        .await
        .map_err(operator_error)?;
    println!(
        "created webhook subscription {} for account {} -> {}",
        created.id, owner.name, created.target_url
    );
    println!("{}", created.secret);
    println!("(signing secret, shown once: store it now)");
    if policy.allow_insecure && STRICT.check_target(url).await.is_err() {
        eprintln!(
            "warning: this target is allowed only by --webhook-allow-insecure-targets: \
             the server must run with the same switch \
             (VITRINA_WEBHOOK_ALLOW_INSECURE_TARGETS=true), or every delivery to it fails"
        );
    }
    Ok(())
}

async fn list(conn: &DatabaseConnection, account: Option<&str>) -> Result<(), Error> {
    let only = match account {
        Some(name) => Some(account_named(conn, name).await?.id),
        None => None,
    };
    let names: HashMap<Uuid, String> = account::Entity::find()
        .all(conn)
        .await?
        .into_iter()
        .map(|a| (a.id, a.name))
        .collect();
    println!(
        "{:<36}  {:<20}  {:<8}  {:>8}  {:<20}  url",
        "id", "account", "state", "failures", "created"
    );
    for s in subscriptions::list_for_operator(conn, only).await? {
        println!(
            "{:<36}  {:<20}  {:<8}  {:>8}  {:<20}  {}",
            s.id,
            names.get(&s.account_id).map_or("", String::as_str),
            s.status,
            s.consecutive_failures,
            s.created_at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            s.target_url
        );
    }
    Ok(())
}

async fn disable(conn: &DatabaseConnection, now: DateTime<Utc>, id: Uuid) -> Result<(), Error> {
    match subscriptions::disable_for_operator(conn, id, now)
        .await
        .map_err(operator_error)?
    {
        Disabling::Disabled(s) => println!("disabled {} ({})", s.id, s.target_url),
        Disabling::AlreadyDisabled(s) => println!(
            "already disabled at {}: {} ({})",
            s.disabled_at
                .map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
                .unwrap_or_default(),
            s.id,
            s.target_url
        ),
    }
    Ok(())
}

async fn rotate_secret(
    conn: &DatabaseConnection,
    now: DateTime<Utc>,
    id: Uuid,
    config: &WebhookRotation,
) -> Result<(), Error> {
    let overlap = config.secret_overlap();
    let rotated = rotation::rotate_for_operator(conn, id, overlap, now)
        .await
        .map_err(operator_error)?;
    println!(
        "rotated the signing secret of {} ({})",
        rotated.id, rotated.target_url
    );
    println!("{}", rotated.secret);
    println!(
        "(new signing secret, shown once: store it now; the old one also signs until {})",
        (now + overlap).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    Ok(())
}

async fn redeliver(
    conn: &DatabaseConnection,
    now: DateTime<Utc>,
    id: Uuid,
    delivery_id: Uuid,
    config: &WebhookRedelivery,
) -> Result<(), Error> {
    let queued = redelivery::redeliver_for_operator(
        conn,
        id,
        delivery_id,
        config.webhook_max_pending_redeliveries,
        now,
    )
    .await
    .map_err(operator_error)?;
    println!(
        "queued delivery {} (a redelivery of {delivery_id}); the server's delivery job sends it",
        queued.id
    );
    Ok(())
}

/// Sends a ping now; an error unless the receiver answered 2xx.
async fn test(
    conn: &DatabaseConnection,
    now: DateTime<Utc>,
    id: Uuid,
    config: &WebhookConfig,
) -> Result<(), Error> {
    let sender = Sender::new(config)?;
    let report = ping::ping_for_operator(conn, &sender, id, now)
        .await
        .map_err(operator_error)?;
    let answer = match &report.outcome {
        Outcome::Answered { status, .. } => format!("the receiver answered HTTP {status}"),
        Outcome::NoAnswer(why) => format!("no answer: {why}"),
        Outcome::NotAllowed(why) => format!("not sent: {why}"),
    };
    if !report.delivered {
        return Err(Error::Invalid(format!(
            "the ping {} was not delivered: {answer} ({} ms)",
            report.id, report.duration_ms
        )));
    }
    println!(
        "ping {} delivered: {answer} ({} ms)",
        report.id, report.duration_ms
    );
    Ok(())
}

async fn account_named(conn: &DatabaseConnection, name: &str) -> Result<account::Model, Error> {
    accounts::find_account(conn, name)
        .await?
        .ok_or_else(|| Error::Invalid(format!("no account named {name:?}")))
}

/// The target rules a server runs with unless started with the development switch.
const STRICT: TargetPolicy = TargetPolicy {
    allow_insecure: false,
};

fn operator_error(err: SubscriptionError) -> Error {
    match err {
        SubscriptionError::Database(e) => Error::Database(e),
        other => Error::Invalid(other.to_string()),
    }
}
