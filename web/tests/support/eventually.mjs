// Retries a check until it passes: pages update when their requests come
// back, so an assertion about them holds "eventually", within a timeout.

/**
 * @template T
 * @param {() => Promise<T> | T} check throws (an assertion) until it holds
 * @param {number} [timeoutMs]
 * @returns {Promise<T>} what the passing check returned
 */
export async function eventually(check, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
