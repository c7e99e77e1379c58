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
 * client's own address is trusted; a header from an untrusted peer is not read at all. Only
 * `X-Forwarded-For` is read: the RFC 7239 `Forwarded` header is not, as a venue reading both would
 * let a client write whichever one its proxy does not, and nothing would tell which one to believe.
 *
 * One client is one key: an address is written in one form ({@link normalizeAddress}), so a
 * dual-stack listener's `::ffff:203.0.113.7` and a proxy's `203.0.113.7` share one budget.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http';
import { isIPv4, isIPv6 } from 'node:net';
import proxyAddr from '@fastify/proxy-addr';

/** The named ranges a `trustProxy` entry may be, as in proxy-addr. */
export const TRUST_PROXY_KEYWORDS = ['loopback', 'linklocal', 'uniquelocal'] as const;

/** Whether the hop `hop` away from the venue (0: the TCP peer) at `address` is a trusted proxy. */
export type ProxyTrust = (address: string, hop: number) => boolean;

/** What a valid `trustProxy` entry is, for error messages. */
const ENTRY_FORMS = `an IP address, a CIDR range (10.0.0.0/8, fd00::/8, 0.0.0.0/0, ::/0) or one of ${TRUST_PROXY_KEYWORDS.join(', ')}`;

/** An IPv4-mapped IPv6 address in the form the WHATWG URL parser writes it (`::ffff:cb00:7107`). */
const MAPPED = /^\[::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})\]$/;

/**
 * The one form of a client address every per-IP limit keys on: an IPv4-mapped IPv6 address
 * (`::ffff:a.b.c.d`, as a dual-stack listener reports IPv4 peers) becomes the IPv4 address it
 * maps, and any other IPv6 address its canonical text (RFC 5952: lowercase, longest zero run
 * compressed), so one client written two ways is still one client. Anything else, an IPv4
 * address, a scoped IPv6 address (`fe80::1%eth0`) or a header entry that is no address, is kept
 * as it is.
 */
export function normalizeAddress(address: string): string {
  if (!isIPv6(address)) return address;
  let canonical: string;
  try {
    canonical = new URL(`http://[${address}]/`).hostname;
  } catch {
    // A zone id: the URL parser refuses it, and the zone is part of the address.
    return address;
  }
  const mapped = MAPPED.exec(canonical);
  if (mapped === null) return canonical.slice(1, -1);
  const high = Number.parseInt(mapped[1]!, 16);
  const low = Number.parseInt(mapped[2]!, 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/**
 * proxy-addr refuses a `/0` prefix; its two `/1` halves cover the same addresses, and keep
 * proxy-addr's own rules for the family (an IPv4 range also matches IPv4-mapped addresses, an
 * IPv6 range does not match IPv4 ones).
 */
function halvesOfEverything(entry: string): readonly string[] | null {
  const slash = entry.lastIndexOf('/');
  if (slash === -1 || !/^0+$/.test(entry.slice(slash + 1))) return null;
  const ip = entry.slice(0, slash);
  if (isIPv4(ip)) return ['0.0.0.0/1', '128.0.0.0/1'];
  if (isIPv6(ip)) return ['::/1', '8000::/1'];
  return null;
}

/** The entries proxy-addr is given for `entries`: a `/0` range as its two halves. */
function compilable(entries: readonly string[]): string[] {
  return entries.flatMap((entry) => halvesOfEverything(entry) ?? [entry]);
}

/**
 * Why `entry` is not a `trustProxy` entry (a sentence for an error message ending in the entry
 * itself), or `null` when it is one.
 */
export function trustProxyEntryError(entry: unknown): string | null {
  if (typeof entry !== 'string') return `must be ${ENTRY_FORMS}, not ${JSON.stringify(entry)}`;
  try {
    proxyAddr.compile(compilable([entry]));
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
 *
 * `0.0.0.0/0` trusts every IPv4 address (IPv4-mapped ones too) and `::/0` every IPv6 one, so the
 * two together trust every hop: the client is then the leftmost `X-Forwarded-For` entry, which a
 * client can write itself unless the proxy in front replaces the header rather than appending to
 * it, and no peer's HTTP connections are capped per address.
 */
export function compileProxyTrust(entries: readonly string[]): ProxyTrust | null {
  if (entries.length === 0) return null;
  return proxyAddr.compile(compilable(entries));
}

/**
 * The client address of an HTTP request or WebSocket upgrade request: the TCP peer, or with
 * `trust`, the first untrusted address walking from the peer leftwards through
 * `X-Forwarded-For` (see the module comment), in its {@link normalizeAddress} form. `'unknown'`
 * when the socket has no peer address any more (it closed); a header is then not believed either,
 * as no trusted peer vouches for it.
 */
export function clientAddress(request: IncomingMessage, trust: ProxyTrust | null): string {
  const peer = request.socket.remoteAddress;
  if (peer === undefined) return 'unknown';
  if (trust === null) return normalizeAddress(peer);
  const hops = proxyAddr.all(request, trust);
  return normalizeAddress(hops[hops.length - 1] ?? peer);
}
