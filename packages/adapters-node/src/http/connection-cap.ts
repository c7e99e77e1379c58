/**
 * The per-address cap on open HTTP connections (`limits.httpConnectionsPerIp`). Keep-alive lets
 * one client hold any number of sockets, idle or not, and each is a file descriptor of the venue's;
 * the cap bounds what one address holds.
 *
 * A connection over the cap is reset (TCP RST) as it is accepted, before a byte of it is read.
 * An HTTP answer (429) would need the request read first, holding the socket for up to the request
 * timeout for a client already over its share; a plain close (FIN) without an answer leaves some
 * clients waiting (Node's fetch hangs on it until its own timeout), while a reset fails them at
 * once with ECONNRESET.
 *
 * A socket that upgrades to a WebSocket leaves this count for the WebSocket services' own
 * (`connectionsPerIp`, ws/connection-slots.ts): counted by both, an address's plain connections
 * would take from its WebSocket cap.
 *
 * @module
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { ConnectionSlots } from '../ws/connection-slots.js';

/** Open HTTP connections of one server per client IP, bounded by `perAddress`. */
export class HttpConnectionCap {
  private readonly slots: ConnectionSlots;
  /** The address whose slot each counted socket holds. */
  private readonly holders = new Map<Duplex, string>();

  constructor(perAddress: number) {
    this.slots = new ConnectionSlots(perAddress);
  }

  /** Counts every connection `server` accepts from now on, and resets one over the cap. */
  attach(server: Server): void {
    server.on('connection', (socket: Socket) => this.admit(socket));
  }

  /** Gives back `socket`'s slot: it closed, or left HTTP for a WebSocket. Once per socket. */
  release(socket: Duplex): void {
    const ip = this.holders.get(socket);
    if (ip === undefined) return;
    this.holders.delete(socket);
    this.slots.release(ip);
  }

  private admit(socket: Socket): void {
    const ip = socket.remoteAddress ?? 'unknown';
    if (!this.slots.take(ip)) {
      socket.resetAndDestroy();
      return;
    }
    this.holders.set(socket, ip);
    socket.once('close', () => this.release(socket));
  }
}
