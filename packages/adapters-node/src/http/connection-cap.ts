/**
 * The per-address cap on open HTTP connections (`limits.httpConnectionsPerIp`). Keep-alive lets
 * one client hold any number of sockets, idle or not, and each is a file descriptor of the venue's;
 * the cap bounds what one address holds.
 *
 * A connection over the cap is not counted and gets a short lease: its first request is answered
 * 429 with `Retry-After` and `Connection: close` (protocol.md section 5: REST over a per-IP limit
 * is 429 with Retry-After, which clients back off from, where a reset reads as a network fault
 * they retry at once), and a socket that has not finished its request within the lease is
 * destroyed, so an address over its share holds each extra socket for about a second at most.
 *
 * A socket that upgrades to a WebSocket leaves this count for the WebSocket services' own
 * (`connectionsPerIp`, ws/connection-slots.ts): counted by both, an address's plain connections
 * would take from its WebSocket cap. An over-cap socket may upgrade too: the WebSocket cap then
 * decides, and answers over it as WebSockets are answered.
 *
 * Connections from a trusted proxy (`trustProxy`) are not counted at all: see `admit`.
 *
 * @module
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { ConnectionSlots } from '../ws/connection-slots.js';
import { limitKey, normalizeAddress, type ProxyTrust } from './client-address.js';

/** How long a connection over the cap may take to send the request it is refused, ms. */
export const OVER_CAP_LEASE_MS = 1_000;

/** Open HTTP connections of one server per client IP, bounded by `perAddress`. */
export class HttpConnectionCap {
  private readonly slots: ConnectionSlots;
  /** The address whose slot each counted socket holds. */
  private readonly holders = new Map<Duplex, string>();
  /** Sockets over the cap, each with the timer that ends its lease. */
  private readonly overCap = new Map<Duplex, NodeJS.Timeout>();

  /** The most connections one address holds at once. */
  readonly perAddress: number;
  private readonly trust: ProxyTrust | null;
  private readonly ipv6PrefixLength: number;

  /**
   * `trust`: the configured trusted proxies, whose own connections are not counted;
   * `ipv6PrefixLength`: the IPv6 network counted as one client (see `limitKey`).
   */
  constructor(perAddress: number, trust: ProxyTrust | null = null, ipv6PrefixLength = 64) {
    this.perAddress = perAddress;
    this.slots = new ConnectionSlots(perAddress);
    this.trust = trust;
    this.ipv6PrefixLength = ipv6PrefixLength;
  }

  /** Counts every connection `server` accepts from now on; one over the cap gets a lease. */
  attach(server: Server): void {
    server.on('connection', (socket: Socket) => this.admit(socket));
  }

  /** Whether `socket` came over its address's cap: its requests are answered 429. */
  isOverCap(socket: Duplex): boolean {
    return this.overCap.has(socket);
  }

  /** Gives back `socket`'s slot or lease: it closed, or left HTTP for a WebSocket. Idempotent. */
  release(socket: Duplex): void {
    const lease = this.overCap.get(socket);
    if (lease !== undefined) {
      clearTimeout(lease);
      this.overCap.delete(socket);
    }
    const ip = this.holders.get(socket);
    if (ip === undefined) return;
    this.holders.delete(socket);
    this.slots.release(ip);
  }

  private admit(socket: Socket): void {
    socket.once('close', () => this.release(socket));
    // In the one form the other per-IP limits key on too (client-address.ts).
    const ip =
      socket.remoteAddress === undefined ? 'unknown' : normalizeAddress(socket.remoteAddress);
    // A trusted proxy is not counted. Its pooled keep-alive connections carry many clients'
    // requests, any socket any client's, so a client address (X-Forwarded-For) belongs to a
    // request, never to a socket: counted under the proxy's own address, the pool would reach the
    // cap and every client behind it would be refused together. The proxy bounds its own pool and
    // caps its clients' connections to it; the read budget still keys on each client. The peer
    // address decides, never a header: no byte of the connection has been read yet.
    if (this.trust !== null && socket.remoteAddress !== undefined && this.trust(ip, 0)) return;
    const key = limitKey(ip, this.ipv6PrefixLength);
    if (this.slots.take(key)) {
      this.holders.set(socket, key);
      return;
    }
    const lease = setTimeout(() => socket.destroy(), OVER_CAP_LEASE_MS);
    lease.unref();
    this.overCap.set(socket, lease);
  }
}
