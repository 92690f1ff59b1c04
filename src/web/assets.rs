//! GraphiQL's browser packages, built into the binary: build.rs installed
//! them at the exact versions of `web/package-lock.json`. They are served at
//! `/graphiql/assets/<package>@<version>/<file>`, the layout of npm CDNs such
//! as unpkg, so the page loads the same files from either place and can pin
//! both with one Subresource Integrity hash.

use std::sync::LazyLock;

use axum::extract::Path;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use sha2::{Digest, Sha384};

use crate::http::ApiError;

/// One embedded file of an npm package.
pub struct Asset {
    pub package: &'static str,
    pub version: &'static str,
    pub file: &'static str,
    pub content_type: &'static str,
    pub body: &'static [u8],
}

/// The files GraphiQL loads, in the order the page loads them.
pub static ASSETS: &[Asset] = include!(concat!(env!("OUT_DIR"), "/web_assets.rs"));

/// Name, version and licence of every package the assets are built from.
const LICENSES: &str = include_str!(concat!(env!("OUT_DIR"), "/LICENSES.txt"));

/// Each asset's `sha384-...` integrity value, computed once.
static INTEGRITY: LazyLock<Vec<String>> = LazyLock::new(|| {
    ASSETS
        .iter()
        .map(|asset| {
            let digest = Sha384::digest(asset.body);
            format!(
                "sha384-{}",
                base64::engine::general_purpose::STANDARD.encode(digest)
            )
        })
        .collect()
});

impl Asset {
    /// Where the asset lives under an assets base: `<package>@<version>/<file>`.
    pub fn path(&self) -> String {
        format!("{}@{}/{}", self.package, self.version, self.file)
    }
}

/// The assets with their integrity values, in load order.
pub fn with_integrity() -> impl Iterator<Item = (&'static Asset, &'static str)> {
    ASSETS.iter().zip(INTEGRITY.iter().map(String::as_str))
}

/// `GET /graphiql/assets/{path}`. A path names one version for good, so
/// browsers may keep the file as long as they like.
pub async fn serve(Path(path): Path<String>) -> Response {
    match ASSETS.iter().find(|asset| asset.path() == path) {
        Some(asset) => (
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static(asset.content_type),
                ),
                (
                    header::CACHE_CONTROL,
                    HeaderValue::from_static("public, max-age=31536000, immutable"),
                ),
            ],
            asset.body,
        )
            .into_response(),
        None => ApiError::NotFound.into_response(),
    }
}

/// `GET /graphiql/assets/LICENSES.txt`.
pub async fn licences() -> Response {
    super::own_file("text/plain; charset=utf-8", LICENSES)
}
