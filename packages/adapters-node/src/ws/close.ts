/**
 * Closing a WebSocket the venue decided to drop. `ws` sends the close frame and then waits up to
 * 30 s for the peer's answer; a peer that reads nothing (a stuck client, a socket whose frames
 * queue behind megabytes) would keep its socket, its slot in the per-address cap and, on
 * shutdown, the process that long. The socket is terminated after a short grace instead.
 *
 * @module
 */
import type { WebSocket } from 'ws';

/** Grace for a peer to answer a close it can read at once (idle, connection cap, shutdown), ms. */
export const CLOSE_GRACE_MS = 1_000;

/**
 * Closes `ws` with `code` and `reason`, and terminates it `graceMs` later unless the peer has
 * answered the close handshake by then (terminating a closed socket does nothing).
 */
export function closeWithin(
  ws: WebSocket,
  code: number,
  reason: string,
  graceMs: number = CLOSE_GRACE_MS,
): void {
  ws.close(code, reason);
  setTimeout(() => ws.terminate(), graceMs).unref();
}
