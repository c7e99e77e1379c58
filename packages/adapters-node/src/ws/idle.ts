/**
 * The idle deadline both WebSocket services keep (interface-spec: 30 s with no request and no
 * pong): a connection is closed at its deadline, whatever the phase of the ping tick, with 4408
 * `idle timeout`; a peer that does not answer the close handshake is cut off a second later.
 *
 * @module
 */
import type { WebSocket } from 'ws';
import { closeWithin } from './close.js';

/** Close code of an idle connection (protocol.md section 5). */
export const IDLE_CLOSE_CODE = 4408;

/** What the deadline needs of a connection. */
export interface IdleTracked {
  readonly ws: WebSocket;
  /** `performance.now()` of the last request or pong. */
  lastActivity: number;
  idleTimer: NodeJS.Timeout | null;
  closed: boolean;
}

/**
 * Arms the deadline of `s`, `delayMs` from now (at first the whole `idleTimeoutMs`): when it
 * fires, a connection active since re-arms for what is left, an idle one is closed and
 * `detach`ed. The caller clears `idleTimer` when the connection goes.
 */
export function armIdle<S extends IdleTracked>(
  s: S,
  idleTimeoutMs: number,
  detach: (s: S) => void,
  delayMs: number = idleTimeoutMs,
): void {
  s.idleTimer = setTimeout(() => {
    s.idleTimer = null;
    if (s.closed) return;
    const left = s.lastActivity + idleTimeoutMs - performance.now();
    if (left > 0) return armIdle(s, idleTimeoutMs, detach, left);
    closeWithin(s.ws, IDLE_CLOSE_CODE, 'idle timeout');
    detach(s);
  }, delayMs);
  s.idleTimer.unref();
}
