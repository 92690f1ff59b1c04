//! The GraphiQL page served at `GET /graphql` to browsers, pre-filled with a
//! dashboard query and a header editor for the Bearer key. Its assets come
//! from a configurable base address, so an operator without internet access
//! can serve them from a local folder.

/// The query GraphiQL opens with.
pub const EXAMPLE_QUERY: &str = r#"# Send your key in the Headers tab: {"Authorization": "Bearer <API_KEY>"}
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

/// The page, with assets under `assets` (an unpkg-style layout:
/// `<assets>/react@18/umd/...`, `<assets>/graphiql@3/...`).
pub fn page(assets: &str) -> String {
    let assets = assets.trim_end_matches('/');
    let query = serde_json::to_string(EXAMPLE_QUERY).unwrap_or_default();
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Vitrina GraphiQL</title>
<link rel="stylesheet" href="{assets}/graphiql@3/graphiql.min.css">
</head>
<body style="margin:0">
<div id="graphiql" style="height:100vh"></div>
<script src="{assets}/react@18/umd/react.production.min.js"></script>
<script src="{assets}/react-dom@18/umd/react-dom.production.min.js"></script>
<script src="{assets}/graphiql@3/graphiql.min.js"></script>
<script>
const ws = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/graphql/ws";
const fetcher = GraphiQL.createFetcher({{ url: "/graphql", subscriptionUrl: ws }});
ReactDOM.createRoot(document.getElementById("graphiql")).render(
  React.createElement(GraphiQL, {{
    fetcher,
    defaultQuery: {query},
    defaultHeaders: JSON.stringify({{ Authorization: "Bearer <API_KEY>" }}, null, 2),
    headerEditorEnabled: true,
    shouldPersistHeaders: false,
  }})
);
</script>
</body>
</html>
"#
    )
}
