// The real binary, `vitrina serve --demo`, on a free loopback port with a
// fresh database. Its address and demo key are read from what it prints;
// its log goes to a file in its temp folder, whose end a failed start shows.

import { spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

import { freshDatabase } from "./database.mjs";

const BINARY = fileURLToPath(new URL("../../../target/debug/vitrina", import.meta.url));
const STARTUP_TIMEOUT_MS = 60_000;

/**
 * @param {Record<string, string>} [env] settings (`VITRINA_...`); the
 *   database is always a fresh one, the port a free one unless VITRINA_BIND
 *   names it
 * @returns {Promise<{ url: string, demoKey: string, stop: () => Promise<void> }>}
 */
export async function startServer(env = {}) {
  const dir = mkdtempSync(join(tmpdir(), "vitrina-web-"));
  const database = await freshDatabase(dir).catch((error) => {
    rmSync(dir, { recursive: true });
    throw error;
  });
  const logFile = join(dir, "server.log");
  const log = openSync(logFile, "w");
  const child = spawn(BINARY, ["serve", "--demo"], {
    env: { ...process.env, DATABASE_URL: database.url, VITRINA_BIND: "127.0.0.1:0", ...env },
    stdio: ["ignore", "pipe", log],
  });
  closeSync(log);
  // Whatever ends this process (a crash, a failed hook), the server ends too.
  const killOnExit = () => child.kill("SIGKILL");
  process.on("exit", killOnExit);

  const stop = async () => {
    process.off("exit", killOnExit);
    await terminate(child);
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const { url, demoKey } = await announced(child, logFile);
    return { url, demoKey, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Reads the address and the demo key from the server's stdout. */
function announced(child, logFile) {
  return new Promise((resolve, reject) => {
    const found = {};
    const settle = (error) => {
      clearTimeout(timer);
      child.off("error", onError).off("exit", onExit);
      if (error) reject(new Error(`vitrina serve --demo ${error}; its log:\n${tail(logFile)}`));
      else resolve(found);
    };
    const onError = (error) => settle(`could not run ${BINARY}: ${error.message}`);
    const onExit = (code, signal) => settle(`exited (${signal ?? code})`);
    const timer = setTimeout(() => settle("did not start in time"), STARTUP_TIMEOUT_MS);
    child.on("error", onError).on("exit", onExit);
    createInterface({ input: child.stdout }).on("line", (line) => {
      found.url ??= line.match(/^listening on (http:\/\/\S+)$/)?.[1];
      found.demoKey ??= line.match(/^demo API key: (\S+)$/)?.[1];
      if (found.url && found.demoKey) settle();
    });
  });
}

/** SIGTERM, then SIGKILL if it has not exited within 5 s. */
async function terminate(child) {
  const running = child.pid !== undefined && child.exitCode === null && child.signalCode === null;
  if (!running) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}

function tail(file) {
  return readFileSync(file, "utf8").split("\n").slice(-30).join("\n");
}
