//! What an API key may do. A key holds one or more scopes; a route asks for
//! exactly one (`http::access`), and a key without it is refused
//! with 403 `insufficient_scope`.

use std::fmt;

/// One thing a key may be allowed to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Scope {
    /// Read data: REST v1 and GraphQL (queries and subscriptions).
    Read,
    /// Upload scrapes: `POST /extension/v1/scrapes`.
    Upload,
    /// Manage webhook subscriptions: `/extension/v1/webhooks...`.
    Webhooks,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Scope::Read, Scope::Upload, Scope::Webhooks];

    pub fn name(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Upload => "upload",
            Scope::Webhooks => "webhooks",
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of scopes, stored as their names separated by spaces
/// (`read upload webhooks`), always in the order of [`Scope::ALL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scopes(u8);

impl Scopes {
    /// Everything a key could do before keys had scopes, and what a key
    /// gets when none are named.
    pub const ALL: Scopes = Scopes(0b111);

    pub fn of(scopes: &[Scope]) -> Scopes {
        Scopes(scopes.iter().fold(0, |bits, scope| bits | scope.bit()))
    }

    /// The scopes a stored value names; `None` (a key made before keys had
    /// scopes) is all of them. A name this version does not know grants
    /// nothing, so a value written by a newer version never widens what a
    /// key may do here.
    pub fn from_stored(stored: Option<&str>) -> Scopes {
        let Some(stored) = stored else {
            return Scopes::ALL;
        };
        let named = |scope: &Scope| stored.split_ascii_whitespace().any(|n| n == scope.name());
        let bits = Scope::ALL
            .iter()
            .filter(|s| named(s))
            .fold(0, |bits, s| bits | s.bit());
        Scopes(bits)
    }

    pub fn allows(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    fn iter(self) -> impl Iterator<Item = Scope> {
        Scope::ALL.into_iter().filter(move |s| self.allows(*s))
    }
}

impl fmt::Display for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.iter().map(Scope::name).collect();
        f.write_str(&names.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_names_round_trip_in_one_order() {
        let some = Scopes::of(&[Scope::Webhooks, Scope::Read]);
        assert_eq!(some.to_string(), "read webhooks");
        assert_eq!(Scopes::from_stored(Some("webhooks  read")), some);
        assert_eq!(Scopes::ALL.to_string(), "read upload webhooks");
        let all = Scopes::ALL.to_string();
        assert_eq!(Scopes::from_stored(Some(&all)), Scopes::ALL);
        assert_eq!(
            Scopes::from_stored(None),
            Scopes::ALL,
            "a key from before scopes"
        );
    }

    #[test]
    fn unknown_names_grant_nothing() {
        let stored = Scopes::from_stored(Some("admin READ upload"));
        assert_eq!(stored, Scopes::of(&[Scope::Upload]));
        assert!(!stored.allows(Scope::Read));
        assert!(Scopes::from_stored(Some("")).is_empty());
    }
}
