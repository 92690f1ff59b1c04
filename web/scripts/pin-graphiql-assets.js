// Writes graphiql/pinned-assets.json: the files GraphiQL (GET /graphql) and
// the API reference (GET /docs) load, each with the page that loads it, the
// version npm installed (web/package-lock.json) and the
// Subresource Integrity hash of its bytes. build.rs embeds these files when
// npm is there and checks them against this manifest; without npm the page
// loads them from a CDN under the same versions and hashes, so the hashes
// must come from the files themselves, never from a hand.
//
//   node scripts/pin-graphiql-assets.js          rewrite the manifest
//   node scripts/pin-graphiql-assets.js --check  exit 1 when it is stale
//
// Both read node_modules: run `npm ci` first.
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The files each page loads, in the order it loads them. */
const FILES = [
  ["graphiql", "react", "umd/react.production.min.js", "text/javascript"],
  ["graphiql", "react-dom", "umd/react-dom.production.min.js", "text/javascript"],
  ["graphiql", "graphiql", "graphiql.min.js", "text/javascript"],
  ["graphiql", "@graphiql/plugin-explorer", "dist/index.umd.js", "text/javascript"],
  ["graphiql", "graphiql", "graphiql.min.css", "text/css"],
  ["graphiql", "@graphiql/plugin-explorer", "dist/style.css", "text/css"],
  ["docs", "swagger-ui-dist", "swagger-ui-bundle.js", "text/javascript"],
  ["docs", "swagger-ui-dist", "swagger-ui-standalone-preset.js", "text/javascript"],
  ["docs", "swagger-ui-dist", "swagger-ui.css", "text/css"],
];

const web = new URL("../", import.meta.url);
const manifestPath = fileURLToPath(new URL("graphiql/pinned-assets.json", web));

/** One entry of the manifest, read from the installed package. */
function pin([page, name, file, contentType]) {
  const dir = new URL(`node_modules/${name}/`, web);
  const manifest = JSON.parse(readFileSync(new URL("package.json", dir), "utf8"));
  const body = readFileSync(new URL(file, dir));
  const integrity = `sha384-${createHash("sha384").update(body).digest("base64")}`;
  return {
    page,
    package: name,
    version: manifest.version,
    file,
    contentType,
    license: manifest.license,
    integrity,
  };
}

const text = `${JSON.stringify(
  {
    generatedBy: "web/scripts/pin-graphiql-assets.js from web/package-lock.json; do not edit",
    assets: FILES.map(pin),
  },
  null,
  2,
)}\n`;

if (process.argv.includes("--check")) {
  let committed = "";
  try {
    committed = readFileSync(manifestPath, "utf8");
  } catch {
    // Missing counts as stale.
  }
  if (committed !== text) {
    console.error(
      "web/graphiql/pinned-assets.json does not match the packages npm installed: " +
        "run `npm run pin` in web/ and commit the result.",
    );
    process.exit(1);
  }
  console.log("web/graphiql/pinned-assets.json matches the installed packages");
} else {
  writeFileSync(manifestPath, text);
  console.log(`wrote ${manifestPath}`);
}
