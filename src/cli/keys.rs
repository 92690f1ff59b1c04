//! `vitrina keys ...`: the operator's view of API keys.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use clap::Subcommand;
use sea_orm::DatabaseConnection;

use crate::accounts::{self, KeyTerms, Revocation, Scope, Scopes};
use crate::clock::Clock;
use crate::error::Error;

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key for an account (created when missing); the key is printed once.
    Create {
        /// The account's name; an account of that name is created when
        /// there is none.
        #[arg(long)]
        account: String,
        /// What the key may do: `read` (REST v1 and GraphQL), `upload`
        /// (scrape uploads), `webhooks` (webhook subscriptions). Repeat the
        /// option or separate by commas; a key made without it has all three.
        #[arg(long = "scope", value_enum, value_delimiter = ',')]
        scopes: Vec<Scope>,
        /// The key stops working this long after it is made, e.g. `30d`,
        /// `12h` or `90m`; without it, the key never expires.
        #[arg(long, value_parser = humantime::parse_duration)]
        expires_in: Option<Duration>,
    },
    /// List keys with their account, prefix, state, scopes and expiry.
    List,
    /// Revoke a key by its id or by the prefix `keys list` shows. Revoking a
    /// revoked key changes nothing and says when it was revoked.
    Revoke {
        /// The key's id, or its prefix as `keys list` shows it (`vtr_0123abcd`).
        key: String,
    },
}

pub async fn run(
    conn: &DatabaseConnection,
    clock: &dyn Clock,
    command: KeysCommand,
) -> Result<(), Error> {
    match command {
        KeysCommand::Create {
            account,
            scopes,
            expires_in,
        } => {
            let now = clock.now();
            let terms = KeyTerms {
                scopes: if scopes.is_empty() {
                    Scopes::ALL
                } else {
                    Scopes::of(&scopes)
                },
                expires_at: expires_in.map(|after| expiry(now, after)).transpose()?,
            };
            let key = accounts::create_key_with(conn, &account, terms, now).await?;
            println!("created API key {} for account {account}", key.key.id);
            println!("{}", key.secret);
            println!(
                "scopes: {}; expires: {}",
                terms.scopes,
                key.key.expires_at.map_or("never".into(), super::rfc3339)
            );
            println!("(shown once: store it now)");
        }
        KeysCommand::List => {
            println!(
                "{:<36}  {:<12}  {:<20}  {:<8}  {:<20}  {:<20}  created",
                "id", "prefix", "account", "state", "scopes", "expires"
            );
            let now = clock.now();
            for row in accounts::list_keys(conn).await? {
                let key = &row.key;
                let state = if key.revoked_at.is_some() {
                    "revoked"
                } else if key.expires_at.is_some_and(|at| at <= now) {
                    "expired"
                } else {
                    "active"
                };
                println!(
                    "{:<36}  {:<12}  {:<20}  {:<8}  {:<20}  {:<20}  {}",
                    key.id,
                    key.prefix,
                    row.account_name,
                    state,
                    Scopes::from_stored(key.scopes.as_deref()).to_string(),
                    key.expires_at.map_or("never".into(), super::rfc3339),
                    super::rfc3339(key.created_at)
                );
            }
        }
        KeysCommand::Revoke { key } => {
            let found = accounts::find_key(conn, &key).await?;
            match accounts::revoke_key(conn, found.id, clock.now()).await? {
                Revocation::Revoked(key) => println!("revoked {} ({})", key.id, key.prefix),
                Revocation::AlreadyRevoked(key) => println!(
                    "already revoked at {}: {} ({})",
                    key.revoked_at.map(super::rfc3339).unwrap_or_default(),
                    key.id,
                    key.prefix
                ),
            }
        }
    }
    Ok(())
}

/// When a key made at `now` that lasts `after` expires.
fn expiry(now: DateTime<Utc>, after: Duration) -> Result<DateTime<Utc>, Error> {
    TimeDelta::from_std(after)
        .ok()
        .and_then(|after| now.checked_add_signed(after))
        .ok_or_else(|| {
            Error::Invalid(format!(
                "--expires-in {} is too far away",
                humantime::format_duration(after)
            ))
        })
}
