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
 * dual-stack listener's `::ffff:203.0.113.7` and a proxy's `203.0.113.7` share one budget, and an
 * IPv6 client is its /64 network ({@link limitKey}), as it may send from any address of it.
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

/** `a.b.c.d:port` and `[v6]:port` (or `[v6]`) without the port and brackets; else as written. */
function withoutPort(entry: string): string {
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(entry);
  if (v4 !== null && isIPv4(v4[1]!)) return v4[1]!;
  const v6 = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(entry);
  if (v6 !== null && isIPv6(v6[1]!)) return v6[1]!;
  return entry;
}

/**
 * The one form of a client address every per-IP limit keys on: an IPv4-mapped IPv6 address
 * (`::ffff:a.b.c.d`, as a dual-stack listener reports IPv4 peers) becomes the IPv4 address it
 * maps, and any other IPv6 address its canonical text (RFC 5952: lowercase, longest zero run
 * compressed), so one client written two ways is still one client. A port some proxies append
 * to the entry they write (`203.0.113.7:51234`, `[2001:db8::1]:443`) is dropped: a client's
 * every connection has its own, and keyed with it each would get a fresh budget. Anything else,
 * an IPv4 address, a scoped IPv6 address (`fe80::1%eth0`) or a header entry that is no address,
 * is kept as it is.
 */
export function normalizeAddress(written: string): string {
  const address = withoutPort(written);
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

/** The NAT64 well-known prefix (RFC 6052): its last 32 bits are the IPv4 client it translates. */
const NAT64_WELL_KNOWN = '64:ff9b::';
const NAT64 = [0x64, 0xff9b, 0, 0, 0, 0];

/** The eight 16-bit groups of a canonical IPv6 address (no zone, no dotted tail). */
function groupsOf(canonical: string): number[] {
  const [head = '', tail] = canonical.split('::');
  const parse = (part: string): number[] =>
    part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16));
  const left = parse(head);
  if (tail === undefined) return left;
  const right = parse(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/**
 * The key a per-IP limit counts `address` under. An IPv4 address is one client. An IPv6 client
 * is its `/prefixLength` network (default 64): one subscriber is given a /64 at least (RFC 6177,
 * and SLAAC needs one), and picks any of its 2^64 addresses per connection, so a per-address
 * budget would be no budget at all. Kept whole: loopback and a link-local address (scoped or
 * not). The NAT64 well-known prefix `64:ff9b::/96` holds the IPv4 client behind the translator in
 * its last 32 bits: it is keyed as that IPv4 address. The key of a network is written `2001:db8:1:2::/64`.
 */
export function limitKey(address: string, prefixLength = 64): string {
  const normal = normalizeAddress(address);
  if (!isIPv6(normal) || normal.includes('%') || normal === '::1') return normal;
  const groups = groupsOf(normal);
  if (normal.startsWith(NAT64_WELL_KNOWN) && groups.slice(0, 6).every((g, i) => g === NAT64[i])) {
    const [high = 0, low = 0] = groups.slice(6);
    return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  }
  // fe80::/10: a link-local peer without its zone; its network is every link's.
  if (prefixLength >= 128 || (groups[0]! & 0xffc0) === 0xfe80) return normal;
  const masked = groups.map((group, i) => {
    const keep = Math.min(16, Math.max(0, prefixLength - 16 * i));
    return keep === 0 ? 0 : group & ((0xffff << (16 - keep)) & 0xffff);
  });
  const network = new URL(`http://[${masked.map((g) => g.toString(16)).join(':')}]/`).hostname;
  return `${network.slice(1, -1)}/${prefixLength}`;
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
 * An entry of `X-Forwarded-For` written with a port is judged by its address.
 *
 * `0.0.0.0/0` trusts every IPv4 address (IPv4-mapped ones too) and `::/0` every IPv6 one, so the
 * two together trust every hop: the client is then the leftmost `X-Forwarded-For` entry, which a
 * client can write itself unless the proxy in front replaces the header rather than appending to
 * it, and no peer's HTTP connections are capped per address.
 */
export function compileProxyTrust(entries: readonly string[]): ProxyTrust | null {
  if (entries.length === 0) return null;
  const trusted = proxyAddr.compile(compilable(entries));
  // A hop a proxy wrote with its port (`10.0.0.9:51234`) is that address: proxy-addr would find
  // no address in it and stop the walk there, taking a trusted proxy for the client.
  return (address, hop) => trusted(withoutPort(address), hop);
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
