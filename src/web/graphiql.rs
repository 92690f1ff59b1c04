//! The GraphiQL page answered to browsers at `GET /graphql`. Its packages
//! are the ones built into the binary ([`super::assets`]) unless an npm CDN
//! is configured, in which case the same versions load from there, pinned
//! with Subresource Integrity. The page's behaviour (persisted headers, the
//! schema fetched again when they change, the explorer plugin, the demo key)
//! lives in `web/graphiql/vitrina-graphiql.js`.

use axum::response::Response;
use serde::Serialize;

use super::assets;
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
const BUILT_IN: &str = "/graphiql/assets";

const SCRIPT: &str = include_str!("../../web/graphiql/vitrina-graphiql.js");

/// What the page's script reads from `#vitrina-config`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PageConfig<'a> {
    assets: &'a str,
    default_query: &'a str,
    default_headers: String,
    demo_key: Option<&'a str>,
}

/// The page for this server: its asset base, and the demo key under `--demo`.
pub fn page(state: &AppState) -> String {
    let assets = match &state.settings.graphql.graphiql_assets {
        Some(cdn) => cdn.trim_end_matches('/'),
        None => BUILT_IN,
    };
    let key = state.demo_key.as_deref();
    let headers =
        serde_json::json!({ "Authorization": format!("Bearer {}", key.unwrap_or("<API_KEY>")) });
    let config = PageConfig {
        assets,
        default_query: EXAMPLE_QUERY,
        default_headers: serde_json::to_string_pretty(&headers).unwrap_or_default(),
        demo_key: key,
    };
    let mut styles = String::new();
    let mut scripts = String::new();
    for (asset, integrity) in assets::with_integrity() {
        let url = format!("{assets}/{}", asset.path());
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
    let config = script_json(&config);
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Vitrina GraphiQL</title>
<!-- GraphiQL and the packages it is built from: /graphiql/assets/LICENSES.txt -->
{styles}<style>
body {{ margin: 0; }}
#graphiql {{ height: 100vh; }}
.vitrina-failed {{ font: 16px/1.5 system-ui, sans-serif; padding: 2rem; color: #b00020; }}
</style>
</head>
<body>
<div id="graphiql">Loading GraphiQL...</div>
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
