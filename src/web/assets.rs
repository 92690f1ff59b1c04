//! The browser packages of GraphiQL and of the API reference: the files each
//! page loads, pinned by version and Subresource Integrity hash
//! (`web/graphiql/pinned-assets.json`, written from the files npm installs).
//! build.rs built the files into the binary when npm could install them;
//! they are served at `/graphiql/assets/<package>@<version>/<file>`, the
//! layout of npm CDNs such as unpkg, so a page loads the same files from
//! either place under one hash. A binary built without npm has the manifest
//! alone and 404s here.

use axum::extract::Path;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::http::ApiError;

/// A page that loads pinned packages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Page {
    /// GraphiQL, at `GET /graphql`.
    Graphiql,
    /// The OpenAPI documents rendered by Swagger UI, at `GET /docs`.
    ApiReference,
}

impl Page {
    /// The page's name in a sentence.
    pub fn name(self) -> &'static str {
        match self {
            Page::Graphiql => "GraphiQL",
            Page::ApiReference => "the API reference",
        }
    }
}

/// One file of an npm package, pinned.
pub struct Asset {
    /// The page that loads it.
    pub page: Page,
    pub package: &'static str,
    pub version: &'static str,
    pub file: &'static str,
    pub content_type: &'static str,
    /// `sha384-...`, the Subresource Integrity value of the file's bytes.
    pub integrity: &'static str,
}

/// Whether this binary carries the files.
pub enum BuiltIn {
    /// The bodies of [`ASSETS`], in the same order.
    Files(&'static [&'static [u8]]),
    /// Built without them; why, in a few words (npm missing, or `npm ci` failed).
    Missing(&'static str),
}

// `ASSETS`, the files of every page, each page's in the order it loads
// them, and `BUILT_IN`.
include!(concat!(env!("OUT_DIR"), "/web_assets.rs"));

/// Name, version and licence of every package the assets are built from
/// (or, without them, of the packages the page loads from a CDN).
const LICENSES: &str = include_str!(concat!(env!("OUT_DIR"), "/LICENSES.txt"));

impl Asset {
    /// Where the asset lives under an assets base: `<package>@<version>/<file>`.
    pub fn path(&self) -> String {
        format!("{}@{}/{}", self.package, self.version, self.file)
    }
}

/// The `<link>` and `<script>` elements that load `page`'s files from
/// `base`, each with its integrity hash.
pub fn tags(page: Page, base: &str) -> (String, String) {
    let (mut styles, mut scripts) = (String::new(), String::new());
    for asset in ASSETS.iter().filter(|a| a.page == page) {
        let url = html_escape(&format!("{base}/{}", asset.path()));
        let integrity = asset.integrity;
        if asset.content_type == "text/css" {
            styles.push_str(&format!(
                "<link rel=\"stylesheet\" href=\"{url}\" integrity=\"{integrity}\" crossorigin=\"anonymous\">\n"
            ));
        } else {
            scripts.push_str(&format!(
                "<script src=\"{url}\" integrity=\"{integrity}\" crossorigin=\"anonymous\"></script>\n"
            ));
        }
    }
    (styles, scripts)
}

/// Text safe inside an HTML element or a quoted attribute.
pub fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `GET /graphiql/assets/{path}`. A path names one version for good, so
/// browsers may keep the file as long as they like.
pub async fn serve(Path(path): Path<String>) -> Response {
    let BuiltIn::Files(bodies) = BUILT_IN else {
        return ApiError::NotFound.into_response();
    };
    match ASSETS
        .iter()
        .zip(bodies.iter())
        .find(|(a, _)| a.path() == path)
    {
        Some((asset, body)) => (
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
            *body,
        )
            .into_response(),
        None => ApiError::NotFound.into_response(),
    }
}

/// `GET /graphiql/assets/LICENSES.txt`.
pub async fn licences() -> Response {
    super::own_file("text/plain; charset=utf-8", LICENSES)
}
