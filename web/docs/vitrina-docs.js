// Starts Swagger UI for Vitrina's API reference (GET /docs). The page that
// loads this script carries its settings in
// <script id="vitrina-config" type="application/json">: { assets, documents }
// (documents: the OpenAPI documents to show, each { url, name }).
//
// Swagger UI is told not to send the documents to its public validator, so
// the page talks only to this server (and, without a built-in copy, to the
// CDN its packages come from).
"use strict";

const config = JSON.parse(document.getElementById("vitrina-config").textContent);
const root = document.getElementById("swagger-ui");

if (!("SwaggerUIBundle" in window) || !("SwaggerUIStandalonePreset" in window)) {
  root.className = "vitrina-failed";
  root.textContent =
    `The API reference could not load Swagger UI from ${config.assets}. ` +
    "The documents themselves are at " +
    config.documents.map((d) => d.url).join(" and ") +
    ".";
} else {
  SwaggerUIBundle({
    urls: config.documents,
    dom_id: "#swagger-ui",
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    layout: "StandaloneLayout",
    deepLinking: true,
    validatorUrl: null,
    queryConfigEnabled: false,
    persistAuthorization: true,
  });
}
