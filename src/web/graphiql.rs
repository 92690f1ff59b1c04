//! The GraphiQL page answered to browsers at `GET /graphql`. Its packages
//! are the ones built into the binary ([`super::assets`]) unless an npm CDN
//! is configured, or the binary was built without them (no npm); then the
//! same versions load from a CDN, pinned with Subresource Integrity, and the
//! page says so. The page's behaviour (persisted headers, the schema fetched
//! again when they change, the explorer plugin, the demo key) lives in
//! `web/graphiql/vitrina-graphiql.js`.

use axum::response::Response;
use serde::Serialize;

use super::assets::{self, BuiltIn, Page, html_escape};
use crate::config::GraphqlConfig;
use crate::state::AppState;

/// The query GraphiQL opens with.
pub const EXAMPLE_QUERY: &str = r#"# Your API key goes in the Headers tab below:
# {"Authorization": "Bearer <API_KEY>"}
query Dashboard {
  products(filter: { brand: "Samsung" }, first: 20) {
    totalCount
    pageInfo { hasNextPage endCursor }
    edges {
      node {
        id
        name
        marketplace
        seller { name tin productCount }
        translations { language name }
        prices { countryCode price currency }
        priceHistory(first: 5) { edges { node { price recordedAt } } }
      }
    }
  }
}
"#;

/// Where the built-in packages are served.
const BUILT_IN_BASE: &str = "/graphiql/assets";

/// Where a binary built without the packages loads them from, unless
/// `VITRINA_GRAPHIQL_ASSETS` names another CDN in the same layout.
pub const DEFAULT_CDN: &str = "https://unpkg.com";

const SCRIPT: &str = include_str!("../../web/graphiql/vitrina-graphiql.js");

/// Where the page loads GraphiQL's packages from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssetSource<'a> {
    /// This binary, under `/graphiql/assets`.
    BuiltIn,
    /// The CDN `VITRINA_GRAPHIQL_ASSETS` names.
    Configured(&'a str),
    /// [`DEFAULT_CDN`]: the binary was built without the packages, for this reason.
    NotBuiltIn(&'static str),
}

impl AssetSource<'_> {
    /// The base the page puts before `<package>@<version>/<file>`.
    pub fn base(&self) -> &str {
        match self {
            AssetSource::BuiltIn => BUILT_IN_BASE,
            AssetSource::Configured(cdn) => cdn.trim_end_matches('/'),
            AssetSource::NotBuiltIn(_) => DEFAULT_CDN,
        }
    }

    /// What `page` says when its packages come from a CDN; `None` when
    /// they come from this binary. (The start-up log adds why a binary has
    /// none: that is the operator's business, not the visitor's.)
    pub fn notice(&self, page: Page) -> Option<String> {
        let (base, name) = (self.base(), page.name());
        match self {
            AssetSource::BuiltIn => None,
            AssetSource::Configured(_) => Some(format!(
                "This page ({name}) loads its packages from {base} \
                 (VITRINA_GRAPHIQL_ASSETS) at the pinned versions, each checked by \
                 Subresource Integrity."
            )),
            AssetSource::NotBuiltIn(_) => Some(format!(
                "This Vitrina was built without npm, so this page ({name}) loads its \
                 packages from {base} at the pinned versions, each checked by \
                 Subresource Integrity; a build with npm serves them itself, offline."
            )),
        }
    }

    /// The notice as a paragraph at the top of `page`, or nothing.
    pub fn notice_html(&self, page: Page) -> String {
        self.notice(page).map_or_else(String::new, |text| {
            format!(
                "<p id=\"vitrina-assets-notice\">{}</p>\n",
                html_escape(&text)
            )
        })
    }
}

/// `built-in`, or the CDN's base: the start-up summary's `graphiql_assets`.
impl std::fmt::Display for AssetSource<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AssetSource::BuiltIn => f.write_str("built-in"),
            _ => f.write_str(self.base()),
        }
    }
}

/// Says at start-up, as a warning, that this binary was built without the
/// pages' packages, why, and where the pages load them from instead.
pub fn warn_if_not_built_in(config: &GraphqlConfig) {
    if let AssetSource::NotBuiltIn(why) = asset_source(config) {
        tracing::warn!(
            "the browser packages of GraphiQL and the API reference are not built into this \
             binary ({why}): the pages at /graphql and /docs load them from {DEFAULT_CDN} at \
             the pinned versions, each checked by Subresource Integrity \
             (VITRINA_GRAPHIQL_ASSETS names another CDN)"
        );
    }
}

/// Where this server's page loads GraphiQL's packages from.
pub fn asset_source(config: &GraphqlConfig) -> AssetSource<'_> {
    match (&config.graphiql_assets, &assets::BUILT_IN) {
        (Some(cdn), _) => AssetSource::Configured(cdn),
        (None, BuiltIn::Files(_)) => AssetSource::BuiltIn,
        (None, BuiltIn::Missing(why)) => AssetSource::NotBuiltIn(why),
    }
}

/// What the page's script reads from `#vitrina-config`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PageConfig<'a> {
    assets: &'a str,
    built_in: bool,
    default_query: &'a str,
    default_headers: String,
    demo_key: Option<&'a str>,
}

/// The page for this server: its asset base, and the demo key under `--demo`.
pub fn page(state: &AppState) -> String {
    let source = asset_source(&state.settings.graphql);
    let base = source.base();
    let key = state.demo_key.as_deref();
    let headers =
        serde_json::json!({ "Authorization": format!("Bearer {}", key.unwrap_or("<API_KEY>")) });
    let config = PageConfig {
        assets: base,
        built_in: matches!(assets::BUILT_IN, BuiltIn::Files(_)),
        default_query: EXAMPLE_QUERY,
        default_headers: serde_json::to_string_pretty(&headers).unwrap_or_default(),
        demo_key: key,
    };
    let (styles, scripts) = assets::tags(Page::Graphiql, base);
    let notice = source.notice_html(Page::Graphiql);
    let config = script_json(&config);
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Vitrina GraphiQL</title>
<!-- GraphiQL and the packages it is built from: /graphiql/assets/LICENSES.txt -->
{styles}<style>
body {{ margin: 0; height: 100vh; display: flex; flex-direction: column; }}
#graphiql {{ flex: 1; min-height: 0; }}
#vitrina-assets-notice {{ margin: 0; padding: 4px 8px; font: 13px/1.4 system-ui, sans-serif; background: #fff8e1; border-bottom: 1px solid #e0c97f; }}
.vitrina-failed {{ font: 16px/1.5 system-ui, sans-serif; padding: 2rem; color: #b00020; }}
</style>
</head>
<body>
{notice}<div id="graphiql">Loading GraphiQL...</div>
<noscript>GraphiQL needs JavaScript.</noscript>
<script id="vitrina-config" type="application/json">{config}</script>
{scripts}<script src="/graphiql/vitrina-graphiql.js"></script>
</body>
</html>
"#
    )
}

/// `GET /graphiql/vitrina-graphiql.js`.
pub async fn script() -> Response {
    super::own_file("text/javascript; charset=utf-8", SCRIPT)
}

/// A value as JSON that is safe inside an HTML `<script>` element: no `<`,
/// so no `</script>` or `<!--` can end or bend the element.
pub fn script_json(value: &impl Serialize) -> String {
    serde_json::to_string(value)
        .unwrap_or_default()
        .replace('<', "\\u003c")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_json_cannot_close_the_script_element() {
        let json = script_json(&"</script><!--");
        assert!(!json.contains('<'), "{json}");
        assert_eq!(
            serde_json::from_str::<String>(&json).unwrap(),
            "</script><!--"
        );
    }
}
