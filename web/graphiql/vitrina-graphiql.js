// Starts GraphiQL for Vitrina. The page that loads this script carries its
// settings in <script id="vitrina-config" type="application/json">:
// { assets, builtIn, defaultQuery, defaultHeaders, demoKey } (builtIn: the
// binary carries GraphiQL's packages, which a build without npm does not).
//
// What it adds to a stock GraphiQL:
// - the headers typed in the Headers tab persist across reloads (GraphiQL
//   keeps them in localStorage); GraphiQL sends them with every request and
//   in the WebSocket's connection_init, so subscriptions use the same key;
// - editing the headers builds a new fetcher, which makes GraphiQL fetch the
//   schema again; an error left by an earlier schema fetch is then cleared;
// - the explorer plugin (click to build a query) is on;
// - under `serve --demo` a stored header with an older demo key gets the
//   current one (each demo database has its own key).
"use strict";

const config = JSON.parse(document.getElementById("vitrina-config").textContent);
const root = document.getElementById("graphiql");

const missing = ["React", "ReactDOM", "GraphiQL", "GraphiQLPluginExplorer"].filter(
  (name) => !(name in window),
);
if (missing.length > 0) {
  root.className = "vitrina-failed";
  root.textContent =
    `GraphiQL could not load its scripts (${missing.join(", ")} missing) from ` +
    `${config.assets}. ` +
    (config.assets.startsWith("/")
      ? "Vitrina serves them itself: something between it and this browser blocked them."
      : "Check that this address is reachable from your browser, or " +
        (config.builtIn
          ? "start Vitrina without VITRINA_GRAPHIQL_ASSETS to use the copy built into it."
          : "build Vitrina with npm, which puts a copy into the binary."));
} else {
  start();
}

function start() {
  const h = React.createElement;
  const endpoint = new URL("/graphql", location.href).href;
  const subscriptionUrl = endpoint.replace(/^http/, "ws") + "/ws";
  const explorer = GraphiQLPluginExplorer.explorerPlugin();
  const initialHeaders = withCurrentDemoKey(localStorage.getItem("graphiql:headers"));
  if (initialHeaders !== null) localStorage.setItem("graphiql:headers", initialHeaders);

  function Playground() {
    const [headers, setHeaders] = React.useState(
      canonical(initialHeaders ?? config.defaultHeaders) ?? "{}",
    );
    // A new fetcher for new headers: GraphiQL fetches the schema again
    // whenever its fetcher changes.
    const fetcher = React.useMemo(
      () => GraphiQL.createFetcher({ url: endpoint, subscriptionUrl }),
      [headers],
    );
    const onEditHeaders = (text) => {
      const next = canonical(text);
      if (next !== null) setHeaders(next);
    };
    return h(
      GraphiQL,
      {
        fetcher,
        plugins: [explorer],
        defaultQuery: config.defaultQuery,
        defaultHeaders: config.defaultHeaders,
        defaultEditorToolsVisibility: "headers",
        shouldPersistHeaders: true,
        onEditHeaders,
      },
      h(GraphiQL.Footer, null, h(ClearStaleSchemaError)),
    );
  }

  ReactDOM.createRoot(root).render(h(Playground));
}

// GraphiQL writes a failed schema fetch into the result pane and leaves it
// there; once the schema loads (say, after the key was fixed) it is stale.
function ClearStaleSchemaError() {
  const { schema, fetchError } = GraphiQL.React.useSchemaContext({ nonNull: true });
  const { responseEditor } = GraphiQL.React.useEditorContext({ nonNull: true });
  const shown = React.useRef(null);
  React.useEffect(() => {
    if (fetchError) shown.current = fetchError;
  }, [fetchError]);
  React.useEffect(() => {
    if (schema && shown.current && responseEditor?.getValue() === shown.current) {
      responseEditor.setValue("");
    }
    if (schema) shown.current = null;
  }, [schema, responseEditor]);
  return null;
}

// The headers as compact JSON, or null while they are not a JSON object
// (half-typed): only a complete edit changes the fetcher.
function canonical(text) {
  try {
    const value = JSON.parse(text || "{}");
    return value && typeof value === "object" && !Array.isArray(value)
      ? JSON.stringify(value)
      : null;
  } catch {
    return null;
  }
}

// Stored headers that hold the demo key of an earlier demo database get the
// current one; any other stored headers are the user's and stay as they are.
function withCurrentDemoKey(stored) {
  const previous = localStorage.getItem("vitrina:demo-key");
  if (config.demoKey) localStorage.setItem("vitrina:demo-key", config.demoKey);
  if (stored === null || !config.demoKey || !previous || previous === config.demoKey) {
    return stored;
  }
  return stored.split(previous).join(config.demoKey);
}
