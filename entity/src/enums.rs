//! Closed vocabularies of the spec, defined once and shared by the database
//! (stored as their lowercase wire names), REST (serde) and GraphQL.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// Declares a text-backed enum whose database, JSON and parameter spelling is
/// the same snake_case word, and which GraphQL exposes as an enum type.
macro_rules! wire_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $wire:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, EnumIter, DeriveActiveEnum,
            Serialize, Deserialize, async_graphql::Enum, utoipa::ToSchema,
        )]
        #[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $(
                $(#[$vmeta])*
                #[sea_orm(string_value = $wire)]
                $variant,
            )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The wire spelling (the same in the database, JSON and query strings).
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire,)+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = UnknownValue;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($wire => Ok($name::$variant),)+
                    _ => Err(UnknownValue),
                }
            }
        }
    };
}

/// A string that is not one of an enum's wire names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownValue;

impl std::fmt::Display for UnknownValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("unknown value")
    }
}

impl std::error::Error for UnknownValue {}

wire_enum! {
    /// One of the four supported marketplaces.
    Marketplace {
        Wildberries = "wildberries",
        Ozon = "ozon",
        YandexMarket = "yandex_market",
        Megamarket = "megamarket",
    }
}

wire_enum! {
    /// How far a product's data is trusted.
    TrustStatus {
        Unverified = "unverified",
        Verified = "verified",
        Flagged = "flagged",
    }
}

wire_enum! {
    /// Where one scraped item stands in the merge pipeline.
    SubmissionStatus {
        Pending = "pending",
        Processing = "processing",
        Merged = "merged",
        Rejected = "rejected",
        Flagged = "flagged",
    }
}

wire_enum! {
    /// A scrape session's status, derived live from its submissions (never stored).
    SessionStatus {
        Processing = "processing",
        Completed = "completed",
    }
}

wire_enum! {
    /// Whether a price was seen by a guest or by a logged-in shopper.
    UserAuthStatus {
        Anonymous = "anonymous",
        Authenticated = "authenticated",
    }
}

wire_enum! {
    /// A webhook subscription is active until disabled; disabling is final.
    SubscriptionStatus {
        Active = "active",
        Disabled = "disabled",
    }
}

wire_enum! {
    /// Outcome of one webhook delivery (all its attempts together).
    DeliveryStatus {
        Pending = "pending",
        Succeeded = "succeeded",
        Failed = "failed",
    }
}
