//! Data versions: counters that change whenever a write may change an
//! answer, so that a cached answer is served only while the data it was
//! worked out from is current.
//!
//! Two grains: the catalog (products, prices, sellers, snapshots: what every
//! account reads alike) and the scrape sessions (what each account reads of
//! its own). A write bumps the grains it touched once its transaction
//! committed, never before: a read that starts between a commit and its bump
//! may store what it found under the old version, which the bump then
//! retires; a read that saw the old data and ends after the bump is not
//! stored at all (its stamp no longer matches, see [`super::ResponseCache`]).
//!
//! Other processes learn of a write as follows. On PostgreSQL the writing
//! transaction itself sends `NOTIFY vitrina_data` ([`announce`]), which is
//! delivered when, and only if, it commits; each process's event listener
//! (`events.rs`) bumps its versions on receipt. A listener that loses its
//! connection may have missed notifications: the versions then read as
//! unknown ([`DataVersions::stamp`] is `None`, nothing is served or stored
//! from the cache) until it listens again, and every grain is bumped then.
//! On SQLite, where the service is one process, its own writes bump at
//! once, and a watch on the file's `PRAGMA data_version` (see `events.rs`)
//! bumps every grain within [`FOREIGN_WRITES_POLL`] of a commit made by any
//! other connection (the CLI's `jobs run-once`, `seed`, a hand-run SQL).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use sea_orm::{ConnectionTrait, DatabaseTransaction, DbBackend, DbErr, Statement};

/// The PostgreSQL channel writes are announced on; the payload names the
/// grains ([`Grains::payload`]).
pub const CHANNEL: &str = "vitrina_data";

/// How often a SQLite process looks for commits made by other connections.
pub const FOREIGN_WRITES_POLL: Duration = Duration::from_millis(250);

/// The grains a write touched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grains {
    pub catalog: bool,
    pub sessions: bool,
}

impl Grains {
    pub const CATALOG: Grains = Grains {
        catalog: true,
        sessions: false,
    };
    pub const SESSIONS: Grains = Grains {
        catalog: false,
        sessions: true,
    };
    pub const ALL: Grains = Grains {
        catalog: true,
        sessions: true,
    };
    pub const NONE: Grains = Grains {
        catalog: false,
        sessions: false,
    };

    /// These grains if `wrote`, else none.
    pub fn when(self, wrote: bool) -> Grains {
        if wrote { self } else { Grains::NONE }
    }

    /// The NOTIFY payload naming these grains.
    fn payload(self) -> &'static str {
        match (self.catalog, self.sessions) {
            (true, true) => "all",
            (true, false) => "catalog",
            (false, true) => "sessions",
            (false, false) => "",
        }
    }

    /// The grains a NOTIFY payload names; an unknown payload (a newer
    /// replica's grain) is read as every grain, which is never stale.
    pub fn of_payload(payload: &str) -> Grains {
        match payload {
            "catalog" => Grains::CATALOG,
            "sessions" => Grains::SESSIONS,
            _ => Grains::ALL,
        }
    }
}

/// The versions of each grain as a read found them when it began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub catalog: u64,
    pub sessions: u64,
}

/// This process's versions of the data.
#[derive(Debug)]
pub struct DataVersions {
    catalog: AtomicU64,
    sessions: AtomicU64,
    /// Whether every write's bump reaches this process now (false while a
    /// PostgreSQL listener is not listening).
    known: AtomicBool,
}

impl DataVersions {
    /// Versions that are `known` from the start (SQLite), or only once
    /// [`DataVersions::restored`] is called (a listener is in place).
    pub fn new(known: bool) -> Self {
        DataVersions {
            catalog: AtomicU64::new(0),
            sessions: AtomicU64::new(0),
            known: AtomicBool::new(known),
        }
    }

    /// The current versions, or `None` while they cannot be known.
    pub fn stamp(&self) -> Option<Stamp> {
        if !self.known.load(Ordering::Acquire) {
            return None;
        }
        let stamp = Stamp {
            catalog: self.catalog.load(Ordering::Acquire),
            sessions: self.sessions.load(Ordering::Acquire),
        };
        // A loss between the loads bumped both: read as unknown.
        self.known.load(Ordering::Acquire).then_some(stamp)
    }

    /// Retires every answer worked out from the grains before now.
    pub fn bump(&self, grains: Grains) {
        if grains.catalog {
            self.catalog.fetch_add(1, Ordering::AcqRel);
        }
        if grains.sessions {
            self.sessions.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Bumps might be missed from now on (the listener lost its connection).
    pub fn lost(&self) {
        self.known.store(false, Ordering::Release);
        self.bump(Grains::ALL);
    }

    /// Every bump arrives again; what was kept before may be stale.
    pub fn restored(&self) {
        self.bump(Grains::ALL);
        self.known.store(true, Ordering::Release);
    }

    /// Commits `txn`, which wrote `grains`, telling every process: the
    /// announcement goes with the transaction (PostgreSQL delivers it on
    /// commit), the bump of this process follows the commit.
    pub async fn commit(&self, txn: DatabaseTransaction, grains: Grains) -> Result<(), DbErr> {
        announce(&txn, grains).await?;
        txn.commit().await?;
        self.bump(grains);
        Ok(())
    }
}

/// Tells every other process, once the transaction `conn` is in commits,
/// that it wrote `grains` (PostgreSQL's NOTIFY); nothing to send on SQLite.
pub async fn announce(conn: &impl ConnectionTrait, grains: Grains) -> Result<(), DbErr> {
    if conn.get_database_backend() != DbBackend::Postgres || grains == Grains::NONE {
        return Ok(());
    }
    let notify = Statement::from_sql_and_values(
        DbBackend::Postgres,
        "SELECT pg_notify($1, $2)",
        [CHANNEL.into(), grains.payload().into()],
    );
    conn.execute_raw(notify).await.map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bump_retires_only_its_grains() {
        let versions = DataVersions::new(true);
        let before = versions.stamp().unwrap();
        versions.bump(Grains::SESSIONS);
        let after = versions.stamp().unwrap();
        assert_eq!(after.catalog, before.catalog);
        assert_ne!(after.sessions, before.sessions);
    }

    #[test]
    fn while_lost_nothing_is_known_and_after_it_everything_changed() {
        let versions = DataVersions::new(true);
        let before = versions.stamp().unwrap();
        versions.lost();
        assert_eq!(versions.stamp(), None);
        versions.restored();
        let after = versions.stamp().unwrap();
        assert_ne!(after.catalog, before.catalog);
        assert_ne!(after.sessions, before.sessions);
    }

    #[test]
    fn every_payload_reads_back_as_its_grains() {
        for grains in [Grains::CATALOG, Grains::SESSIONS, Grains::ALL] {
            assert_eq!(Grains::of_payload(grains.payload()), grains);
        }
        assert_eq!(Grains::of_payload("future"), Grains::ALL);
    }
}
