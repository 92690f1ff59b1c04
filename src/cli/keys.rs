//! `vitrina keys ...`: the operator's view of API keys.

use clap::Subcommand;
use sea_orm::DatabaseConnection;

use crate::accounts::{self, Revocation};
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
    },
    /// List keys with their account, prefix and state.
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
        KeysCommand::Create { account } => {
            let key = accounts::create_key(conn, &account, clock.now()).await?;
            println!("created API key {} for account {account}", key.key.id);
            println!("{}", key.secret);
            println!("(shown once: store it now)");
        }
        KeysCommand::List => {
            println!(
                "{:<36}  {:<12}  {:<20}  {:<8}  created",
                "id", "prefix", "account", "state"
            );
            for row in accounts::list_keys(conn).await? {
                let state = if row.key.revoked_at.is_some() {
                    "revoked"
                } else {
                    "active"
                };
                println!(
                    "{:<36}  {:<12}  {:<20}  {:<8}  {}",
                    row.key.id,
                    row.key.prefix,
                    row.account_name,
                    state,
                    super::rfc3339(row.key.created_at)
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
