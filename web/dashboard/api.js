// @ts-check
// The dashboard's two ways to the API: one GraphQL request over HTTP, and a
// subscription over WebSocket (the graphql-transport-ws protocol), both with
// the key the page was given.

const config = JSON.parse(document.getElementById("vitrina-config")?.textContent ?? "{}");

/**
 * Sends one GraphQL request; GraphQL reports errors in the body, often
 * with HTTP 200, so both are checked.
 * @param {string} query
 * @param {Record<string, unknown>} variables
 * @returns {Promise<any>}
 */
export async function graphql(query, variables) {
  const response = await fetch("/graphql", {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${config.apiKey}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = await response.json();
  /** @type {{ message: string }[] | undefined} */
  const errors = body.errors;
  if (errors?.length) throw new Error(errors.map((e) => e.message).join("; "));
  return body.data;
}

/** How long to wait before opening a dropped subscription again. */
const RECONNECT_MS = 5_000;

/**
 * Runs a subscription until the returned function is called, reopening the
 * socket when the server drops it (a restart, a deploy).
 * @param {string} query
 * @param {Record<string, unknown>} variables
 * @param {{ next: (data: any) => void, state: (state: "connecting" | "live" | "offline", why?: string) => void }} on
 * @returns {() => void} stops the subscription
 */
export function subscribe(query, variables, on) {
  const url = new URL("/graphql/ws", location.href);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  /** @type {WebSocket | undefined} */
  let socket;
  let stopped = false;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let retry;

  const open = () => {
    on.state("connecting");
    const ws = new WebSocket(url, "graphql-transport-ws");
    socket = ws;
    const send = (/** @type {object} */ message) => ws.send(JSON.stringify(message));
    ws.onopen = () =>
      send({ type: "connection_init", payload: { Authorization: `Bearer ${config.apiKey}` } });
    ws.onmessage = (event) => {
      const message = JSON.parse(event.data);
      if (message.type === "connection_ack") {
        send({ id: "1", type: "subscribe", payload: { query, variables } });
        on.state("live");
      } else if (message.type === "next") {
        const errors = message.payload.errors;
        if (errors?.length) on.state("offline", errors.map((/** @type {any} */ e) => e.message).join("; "));
        else on.next(message.payload.data);
      } else if (message.type === "error") {
        on.state("offline", message.payload.map((/** @type {any} */ e) => e.message).join("; "));
      } else if (message.type === "ping") {
        send({ type: "pong" });
      }
    };
    ws.onclose = (event) => {
      if (stopped || socket !== ws) return;
      on.state("offline", event.reason || "connection closed");
      retry = setTimeout(open, RECONNECT_MS);
    };
  };
  open();
  return () => {
    stopped = true;
    clearTimeout(retry);
    socket?.close(1000);
  };
}
