//! `vitrina accounts ...`: the operator's view of accounts.

use clap::Subcommand;
use sea_orm::DatabaseConnection;

use crate::accounts::admin::{self, Creation, QuotaChange};
use crate::clock::Clock;
use crate::error::Error;

/// The largest daily quota: 2^53 - 1.
const MAX_QUOTA: i64 = (1 << 53) - 1;

#[derive(Debug, Subcommand)]
pub enum AccountsCommand {
    /// Create an account. Creating one that exists changes nothing and
    /// says so.
    Create {
        /// The account's name (unique).
        name: String,
    },
    /// List accounts by name, with their daily quota and keys.
    List,
    /// Show one account: its id, creation, daily quota and keys.
    Show {
        /// The account's name.
        name: String,
    },
    /// Give an account a daily quota of its own (rows per UTC day), or the
    /// server's default (`VITRINA_DAILY_QUOTA`) again. It applies from the
    /// next request, on every replica.
    SetQuota {
        /// The account's name.
        name: String,
        /// Rows per UTC day, at most 2^53 - 1 (the largest integer every
        /// JSON reader holds exactly, as `GET /v1/rate_limit` reports it).
        #[arg(long, conflicts_with = "default", required_unless_present = "default",
            value_parser = clap::value_parser!(i64).range(0..=MAX_QUOTA))]
        rows: Option<i64>,
        /// Back to the server's default.
        #[arg(long)]
        default: bool,
    },
}

pub async fn run(
    conn: &DatabaseConnection,
    clock: &dyn Clock,
    command: AccountsCommand,
) -> Result<(), Error> {
    match command {
        AccountsCommand::Create { name } => match admin::create(conn, &name, clock.now()).await? {
            Creation::Created(account) => {
                println!("created account {} ({})", account.name, account.id)
            }
            Creation::AlreadyExists(account) => println!(
                "already exists since {}: account {} ({})",
                super::rfc3339(account.created_at),
                account.name,
                account.id
            ),
        },
        AccountsCommand::List => {
            println!(
                "{:<20}  {:<36}  {:<12}  {:>6}  {:>7}  {:>7}",
                "name", "id", "daily quota", "keys", "expired", "revoked"
            );
            for row in admin::list(conn, clock.now()).await? {
                println!(
                    "{:<20}  {:<36}  {:<12}  {:>6}  {:>7}  {:>7}",
                    row.account.name,
                    row.account.id,
                    quota(row.account.daily_quota),
                    row.keys.active,
                    row.keys.expired,
                    row.keys.revoked
                );
            }
        }
        AccountsCommand::Show { name } => {
            let row = admin::show(conn, &name, clock.now()).await?;
            let (account, keys) = (row.account, row.keys);
            println!("name:        {}", account.name);
            println!("id:          {}", account.id);
            println!("created:     {}", super::rfc3339(account.created_at));
            println!("daily quota: {}", quota(account.daily_quota));
            println!(
                "keys:        {} active, {} expired, {} revoked",
                keys.active, keys.expired, keys.revoked
            );
        }
        AccountsCommand::SetQuota { name, rows, .. } => {
            match admin::set_daily_quota(conn, &name, rows).await? {
                QuotaChange::Changed { account, from } => println!(
                    "daily quota of {}: {} (was {})",
                    account.name,
                    quota(account.daily_quota),
                    quota(from)
                ),
                QuotaChange::Unchanged(account) => println!(
                    "already so: daily quota of {} is {}",
                    account.name,
                    quota(account.daily_quota)
                ),
            }
        }
    }
    Ok(())
}

/// A daily quota as an operator reads it.
fn quota(rows: Option<i64>) -> String {
    rows.map_or_else(|| "default".to_owned(), |rows| format!("{rows} rows"))
}
