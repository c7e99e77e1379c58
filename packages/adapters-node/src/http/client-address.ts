/**
 * The client address every per-IP limit keys on: the HTTP read budget, and the WebSocket
 * connection caps and unsigned-message budgets (the HTTP connection cap counts sockets, so it
 * keys on the peer: see connection-cap.ts).
 *
 * By default it is the TCP peer. Behind a load balancer or reverse proxy that peer is the proxy,
 * so every client would share one budget; the operator names the proxies to trust
 * (`trustProxy`) and the address is then read from `X-Forwarded-For` as proxy-addr does (the
 * semantics of Express and of fastify's own `trustProxy`, which the venue is given too, so
 * `req.ip` agrees): from the peer leftwards through the header, each trusted hop hands over to
 * the address it reports, and the first untrusted one is the client. Entries a client wrote
 * itself sit left of what the trusted proxies appended, so they are never reached unless the
 * client's own address is trusted; a header from an untrusted peer is not read at all.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http';
import proxyAddr from '@fastify/proxy-addr';

/** The named ranges a `trustProxy` entry may be, as in proxy-addr. */
export const TRUST_PROXY_KEYWORDS = ['loopback', 'linklocal', 'uniquelocal'] as const;

/** Whether the hop `hop` away from the venue (0: the TCP peer) at `address` is a trusted proxy. */
export type ProxyTrust = (address: string, hop: number) => boolean;

/** What a valid `trustProxy` entry is, for error messages. */
const ENTRY_FORMS = `an IP address, a CIDR range (10.0.0.0/8, fd00::/8) or one of ${TRUST_PROXY_KEYWORDS.join(', ')}`;

/**
 * Why `entry` is not a `trustProxy` entry (a sentence for an error message ending in the entry
 * itself), or `null` when it is one.
 */
export function trustProxyEntryError(entry: unknown): string | null {
  if (typeof entry !== 'string') return `must be ${ENTRY_FORMS}, not ${JSON.stringify(entry)}`;
  try {
    proxyAddr.compile([entry]);
    return null;
  } catch {
    // proxy-addr's own message names only half of it ("invalid IP address: 10.0.0.0/33" gives
    // the address part): the whole entry and what would have been accepted say more.
    return `must be ${ENTRY_FORMS}, not ${JSON.stringify(entry)}`;
  }
}

/**
 * Compiles checked `trustProxy` entries into a trust function; `null` for none (trust nobody:
 * the peer is the client). Throws a `TypeError` for an entry {@link trustProxyEntryError} refuses.
 */
export function compileProxyTrust(entries: readonly string[]): ProxyTrust | null {
  if (entries.length === 0) return null;
  return proxyAddr.compile([...entries]);
}

/**
 * The client address of an HTTP request or WebSocket upgrade request: the TCP peer, or with
 * `trust`, the first untrusted address walking from the peer leftwards through
 * `X-Forwarded-For` (see the module comment). `'unknown'` when the socket has no peer address
 * any more (it closed); a header is then not believed either, as no trusted peer vouches for it.
 */
export function clientAddress(request: IncomingMessage, trust: ProxyTrust | null): string {
  const peer = request.socket.remoteAddress;
  if (peer === undefined) return 'unknown';
  if (trust === null) return peer;
  const hops = proxyAddr.all(request, trust);
  return hops[hops.length - 1] ?? peer;
}
