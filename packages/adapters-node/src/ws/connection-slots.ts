/**
 * The per-address connection cap both WebSocket services enforce at upgrade. Protocol.md
 * section 5 allows 30 connections per IP for the venue, not per path: the trading socket (`/ws`)
 * and the market-data socket (`/marketdata`) take their slots from one counter, or one address
 * could hold twice the cap. Authenticated trading sockets hold a slot too (the cap is checked
 * before anyone can authenticate, and docs/protocol-decisions.md counts sockets per address).
 *
 * @module
 */

/** Open connections per client IP, bounded by `perAddress` (the HTTP cap keeps one too). */
export class ConnectionSlots {
  readonly perAddress: number;
  private readonly open = new Map<string, number>();

  constructor(perAddress: number) {
    this.perAddress = perAddress;
  }

  /** Takes one of `ip`'s slots; `false` when all are taken (the upgrade is then refused). */
  take(ip: string): boolean {
    const n = this.open.get(ip) ?? 0;
    if (n >= this.perAddress) return false;
    this.open.set(ip, n + 1);
    return true;
  }

  /** Gives back one slot taken with `take`. */
  release(ip: string): void {
    const n = (this.open.get(ip) ?? 1) - 1;
    // Addresses with no connection left are dropped, so the map stays as small as the clients.
    if (n <= 0) this.open.delete(ip);
    else this.open.set(ip, n);
  }
}
