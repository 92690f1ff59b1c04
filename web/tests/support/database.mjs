// A fresh, empty database for one server: a SQLite file in the run's temp
// folder, or, when TEST_DATABASE_URL names a PostgreSQL server, a database
// of its own on that server (created here, dropped by `drop`).

import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * @param {string} dir a temp folder that lives as long as the server
 * @returns {Promise<{ url: string, drop: () => Promise<void> }>}
 */
export async function freshDatabase(dir) {
  const server = process.env.TEST_DATABASE_URL;
  if (!server) {
    return { url: `sqlite://${join(dir, "vitrina.db")}`, drop: async () => {} };
  }
  const name = `vitrina_web_${randomBytes(6).toString("hex")}`;
  // createdb/dropdb take a connection string as the maintenance database,
  // so the server's address, port and user come from TEST_DATABASE_URL.
  const maintenance = `--maintenance-db=${withDatabase(server, "postgres")}`;
  await run("createdb", [maintenance, name]);
  return {
    url: withDatabase(server, name),
    drop: async () => {
      await run("dropdb", [maintenance, "--if-exists", "--force", name]);
    },
  };
}

/** The same server URL naming another database. */
function withDatabase(serverUrl, name) {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.href;
}
