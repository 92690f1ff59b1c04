//! Accounts and their API keys.
//!
//! A key is `vtr_` followed by 48 random hex digits. It is shown once; only its
//! SHA-256 hash is stored, looked up through a unique index and compared in
//! constant time. Revoked keys never authenticate; an expired key is known
//! as such, so that its refusal can say it expired. A key's scopes say what
//! it may do ([`scopes`]).

use chrono::{DateTime, TimeDelta, Utc};
use entity::{account, api_key};
use rand::RngCore;
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr,
    EntityTrait, QueryFilter, QueryOrder, QuerySelect,
};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use uuid::Uuid;

use crate::error::Error;

pub mod admin;
pub mod scopes;

pub use scopes::{Scope, Scopes};

const KEY_PREFIX: &str = "vtr_";
/// Characters of the key kept for display (`vtr_` and 8 hex digits).
const DISPLAY_PREFIX_LEN: usize = 12;
/// `last_used_at` is refreshed at most this often, so authentication does not
/// write on every request (a key remembered in memory is looked up again
/// this often, see `state::known_keys`).
pub(crate) const LAST_USED_RESOLUTION: TimeDelta = TimeDelta::minutes(1);

/// The caller behind a valid key.
#[derive(Debug, Clone)]
pub struct Caller {
    pub account_id: Uuid,
    pub key_id: Uuid,
    pub scopes: Scopes,
    pub expires_at: Option<DateTime<Utc>>,
}

impl Caller {
    /// Whether the key has expired at `now`.
    pub fn expired(&self, now: DateTime<Utc>) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }
}

/// What a new key may do, and until when.
#[derive(Debug, Clone, Copy)]
pub struct KeyTerms {
    pub scopes: Scopes,
    /// `None`: the key never expires.
    pub expires_at: Option<DateTime<Utc>>,
}

/// A key that may do everything and never expires, as every key did
/// before keys had scopes.
impl Default for KeyTerms {
    fn default() -> Self {
        KeyTerms {
            scopes: Scopes::ALL,
            expires_at: None,
        }
    }
}

/// A newly created key; `secret` exists only in this value.
#[derive(Debug, Clone)]
pub struct NewKey {
    pub key: api_key::Model,
    pub secret: String,
}

/// A key as listed to an operator.
#[derive(Debug, Clone)]
pub struct KeyListing {
    pub key: api_key::Model,
    pub account_name: String,
}

pub fn hash_key(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

fn generate_secret() -> String {
    let mut bytes = [0u8; 24];
    rand::rng().fill_bytes(&mut bytes);
    format!("{KEY_PREFIX}{}", hex::encode(bytes))
}

/// The account with this name, if there is one.
pub async fn find_account(
    db: &impl ConnectionTrait,
    name: &str,
) -> Result<Option<account::Model>, sea_orm::DbErr> {
    account::Entity::find()
        .filter(account::Column::Name.eq(name.trim()))
        .one(db)
        .await
}

/// Longest account name, in characters: names are typed and listed by
/// operators, one per line of `accounts list`.
pub const MAX_ACCOUNT_NAME_CHARS: usize = 100;

/// Finds the account by name, creating it when missing.
pub async fn ensure_account(
    db: &impl ConnectionTrait,
    name: &str,
    now: DateTime<Utc>,
) -> Result<account::Model, Error> {
    Ok(find_or_create_account(db, name, now).await?.0)
}

/// Finds the account by name, creating it when missing, and says whether
/// it made it. A new name must be 1 to [`MAX_ACCOUNT_NAME_CHARS`]
/// characters, none of them a control character (which would garble the
/// CLI's listings). Of two callers creating one name at once, one makes
/// it and the other finds it.
pub async fn find_or_create_account(
    db: &impl ConnectionTrait,
    name: &str,
    now: DateTime<Utc>,
) -> Result<(account::Model, bool), Error> {
    let name = name.trim();
    if name.is_empty() {
        return Err(Error::Invalid("an account name must not be empty".into()));
    }
    let chars = name.chars().count();
    if chars > MAX_ACCOUNT_NAME_CHARS {
        return Err(Error::Invalid(format!(
            "an account name has at most {MAX_ACCOUNT_NAME_CHARS} characters, not {chars}"
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(Error::Invalid(
            "an account name must not hold control characters".into(),
        ));
    }
    if let Some(found) = find_account(db, name).await? {
        return Ok((found, false));
    }
    // A name made meanwhile is skipped, not a unique violation: on
    // PostgreSQL an error would abort the caller's transaction too.
    let new = account::ActiveModel {
        id: Set(Uuid::new_v4()),
        name: Set(name.to_owned()),
        daily_quota: Set(None),
        created_at: Set(now),
    };
    let skip_taken = OnConflict::column(account::Column::Name)
        .do_nothing()
        .to_owned();
    let inserted = account::Entity::insert(new)
        .on_conflict(skip_taken)
        .exec_without_returning(db)
        .await?;
    // Accounts are never deleted: it is there, made by this call or another.
    let found = find_account(db, name)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(format!("account {name}")))?;
    Ok((found, inserted == 1))
}

/// Creates a key with every scope and no expiry for the named account
/// (creating the account if needed).
pub async fn create_key(
    db: &impl ConnectionTrait,
    account_name: &str,
    now: DateTime<Utc>,
) -> Result<NewKey, Error> {
    create_key_with(db, account_name, KeyTerms::default(), now).await
}

/// Creates a key on `terms` for the named account (creating the account if
/// needed). A key must have a scope, and may not expire before it is made.
pub async fn create_key_with(
    db: &impl ConnectionTrait,
    account_name: &str,
    terms: KeyTerms,
    now: DateTime<Utc>,
) -> Result<NewKey, Error> {
    if terms.scopes.is_empty() {
        return Err(Error::Invalid("a key needs at least one scope".into()));
    }
    if terms.expires_at.is_some_and(|at| at <= now) {
        return Err(Error::Invalid("a key must expire after it is made".into()));
    }
    let account = ensure_account(db, account_name, now).await?;
    let secret = generate_secret();
    let key = api_key::ActiveModel {
        id: Set(Uuid::new_v4()),
        account_id: Set(account.id),
        key_hash: Set(hash_key(&secret)),
        prefix: Set(secret[..DISPLAY_PREFIX_LEN].to_owned()),
        created_at: Set(now),
        revoked_at: Set(None),
        last_used_at: Set(None),
        scopes: Set(Some(terms.scopes.to_string())),
        expires_at: Set(terms.expires_at),
    }
    .insert(db)
    .await?;
    Ok(NewKey { key, secret })
}

/// Every key, oldest first, with its account's name.
pub async fn list_keys(db: &impl ConnectionTrait) -> Result<Vec<KeyListing>, Error> {
    let rows = api_key::Entity::find()
        .find_also_related(account::Entity)
        .order_by_asc(api_key::Column::CreatedAt)
        .order_by_asc(api_key::Column::Id)
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(key, account)| KeyListing {
            key,
            account_name: account.map(|a| a.name).unwrap_or_default(),
        })
        .collect())
}

/// Finds a key by its id or by the prefix `keys list` shows (`vtr_` and 8
/// hex digits); a prefix must belong to exactly one key.
pub async fn find_key(
    db: &impl ConnectionTrait,
    id_or_prefix: &str,
) -> Result<api_key::Model, Error> {
    let given = id_or_prefix.trim();
    if let Ok(id) = Uuid::parse_str(given) {
        return api_key::Entity::find_by_id(id)
            .one(db)
            .await?
            .ok_or_else(|| Error::Invalid(format!("no API key with id {id}")));
    }
    let prefix = given.to_ascii_lowercase();
    let is_prefix = prefix.len() == DISPLAY_PREFIX_LEN
        && prefix
            .strip_prefix(KEY_PREFIX)
            .is_some_and(|digits| digits.bytes().all(|b| b.is_ascii_hexdigit()));
    if !is_prefix {
        return Err(Error::Invalid(format!(
            "{given:?} is neither a key id nor a key prefix such as vtr_0123abcd (see `vitrina keys list`)"
        )));
    }
    let found = api_key::Entity::find()
        .filter(api_key::Column::Prefix.eq(prefix.as_str()))
        .limit(2)
        .all(db)
        .await?;
    match found.as_slice() {
        [key] => Ok(key.clone()),
        [] => Err(Error::Invalid(format!(
            "no API key has the prefix {prefix}"
        ))),
        _ => Err(Error::Invalid(format!(
            "more than one API key has the prefix {prefix}: give the key's id"
        ))),
    }
}

/// What revoking a key did.
#[derive(Debug, Clone)]
pub enum Revocation {
    /// The key was live and is revoked now.
    Revoked(api_key::Model),
    /// The key had been revoked before; its `revoked_at` says when.
    AlreadyRevoked(api_key::Model),
}

/// Revokes a key. Revoking an already revoked key keeps its first revocation time.
pub async fn revoke_key(
    db: &impl ConnectionTrait,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<Revocation, Error> {
    let key = api_key::Entity::find_by_id(id)
        .one(db)
        .await?
        .ok_or_else(|| Error::Invalid(format!("no API key with id {id}")))?;
    if key.revoked_at.is_some() {
        return Ok(Revocation::AlreadyRevoked(key));
    }
    let mut active: api_key::ActiveModel = key.into();
    active.revoked_at = Set(Some(now));
    Ok(Revocation::Revoked(active.update(db).await?))
}

/// Creates a key for the named account and revokes its other live keys, in
/// one transaction: the account is left with exactly one live key. Returns
/// the new key and how many were revoked.
pub async fn replace_keys(
    db: &DatabaseConnection,
    account_name: &str,
    now: DateTime<Utc>,
) -> Result<(NewKey, u64), Error> {
    let txn = crate::db::begin_write(db).await?;
    let created = create_key(&txn, account_name, now).await?;
    let revoked = api_key::Entity::update_many()
        .col_expr(api_key::Column::RevokedAt, Expr::value(now))
        .filter(api_key::Column::AccountId.eq(created.key.account_id))
        .filter(api_key::Column::Id.ne(created.key.id))
        .filter(api_key::Column::RevokedAt.is_null())
        .exec(&txn)
        .await?
        .rows_affected;
    txn.commit().await?;
    Ok((created, revoked))
}

/// Those of `keys` that are revoked.
pub async fn revoked_among(
    db: &impl ConnectionTrait,
    keys: &[Uuid],
) -> Result<Vec<Uuid>, sea_orm::DbErr> {
    api_key::Entity::find()
        .select_only()
        .column(api_key::Column::Id)
        .filter(crate::query::one_of(db, api_key::Column::Id, keys))
        .filter(api_key::Column::RevokedAt.is_not_null())
        .into_tuple()
        .all(db)
        .await
}

/// Resolves a presented key to its caller; `None` for unknown or revoked
/// keys. An expired key resolves, and [`Caller::expired`] says so.
pub async fn authenticate(
    db: &impl ConnectionTrait,
    presented: &str,
    now: DateTime<Utc>,
) -> Result<Option<Caller>, sea_orm::DbErr> {
    authenticate_hashed(db, &hash_key(presented), now).await
}

/// As [`authenticate`], for a key already hashed with [`hash_key`].
pub async fn authenticate_hashed(
    db: &impl ConnectionTrait,
    hash: &str,
    now: DateTime<Utc>,
) -> Result<Option<Caller>, sea_orm::DbErr> {
    let Some(key) = api_key::Entity::find()
        .filter(api_key::Column::KeyHash.eq(hash))
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    let matches: bool = key.key_hash.as_bytes().ct_eq(hash.as_bytes()).into();
    if !matches || key.revoked_at.is_some() {
        return Ok(None);
    }
    let caller = Caller {
        account_id: key.account_id,
        key_id: key.id,
        scopes: Scopes::from_stored(key.scopes.as_deref()),
        expires_at: key.expires_at,
    };
    let stale = key
        .last_used_at
        .is_none_or(|t| now - t >= LAST_USED_RESOLUTION);
    if stale && !caller.expired(now) {
        let mut active: api_key::ActiveModel = key.into();
        active.last_used_at = Set(Some(now));
        active.update(db).await?;
    }
    Ok(Some(caller))
}
