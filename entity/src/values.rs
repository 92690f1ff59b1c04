//! JSON-backed column types.

use sea_orm::FromJsonQueryResult;
use serde::{Deserialize, Serialize};

/// A JSON array of strings (category paths, image and video galleries).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, FromJsonQueryResult)]
#[serde(transparent)]
pub struct StringList(pub Vec<String>);

impl From<Vec<String>> for StringList {
    fn from(v: Vec<String>) -> Self {
        StringList(v)
    }
}
