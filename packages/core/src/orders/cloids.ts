/**
 * The cloid index: a client order id is reserved for its account while the order works and for
 * the retention time (24 h by default) after the order was accepted, so a blind retry after a
 * timeout can never place a second order.
 *
 * @module
 */
import type { Ctx } from '../engine/context.js';
import type { Order } from '../engine/types.js';

/** Key of a cloid in the venue-wide cloid index. */
export function cloidKey(account: string, cloid: string): string {
  return `${account}|${cloid}`;
}

/** Reserves `cloid` of `account` for `orderId`, accepted now. */
export function registerCloid(ctx: Ctx, account: string, cloid: string, orderId: number): void {
  const s = ctx.state;
  const key = cloidKey(account, cloid);
  s.cloids = s.cloids.set(ctx.edit, key, { orderId, acceptedTime: ctx.time });
  s.cloidLog = {
    head: s.cloidLog.head,
    tail: s.cloidLog.tail + 1,
    entries: s.cloidLog.entries.set(ctx.edit, s.cloidLog.tail, key),
  };
}

/** The working or recently accepted order that holds `cloid` for `account`, if any. */
export function cloidHolder(ctx: Ctx, account: string, cloid: string): number | undefined {
  const entry = ctx.state.cloids.get(cloidKey(account, cloid));
  if (entry === undefined) return undefined;
  const order = ctx.order(entry.orderId);
  if (order !== undefined && order.cloid === cloid) return entry.orderId;
  return entry.acceptedTime + ctx.state.settings.cloidRetentionMs > ctx.time
    ? entry.orderId
    : undefined;
}

/**
 * The working order of `account` whose current cloid is `cloid`, if any: what a cancel or replace
 * by cloid targets. Unlike {@link cloidHolder} a superseded cloid (one a replace changed, research
 * 6.3 rule 4) names nothing, although its reservation still blocks reuse by a new order.
 */
export function cloidTarget(ctx: Ctx, account: string, cloid: string): number | undefined {
  const entry = ctx.state.cloids.get(cloidKey(account, cloid));
  if (entry === undefined) return undefined;
  const order = ctx.order(entry.orderId);
  return order !== undefined && order.cloid === cloid ? entry.orderId : undefined;
}

/** Releases the cloid of an order that ended after its retention time already ran out. */
export function releaseCloidOnEnd(ctx: Ctx, order: Order): void {
  if (order.cloid === null) return;
  releaseLapsedCloid(ctx, order.account, order.cloid, order.orderId);
}

/**
 * Releases `cloid`, which order `orderId` held until now (it ended, or a replace gave it another
 * cloid), when its retention already ran out: {@link pruneCloids} left it to its order then, and
 * nothing else would ever drop it from the index.
 */
export function releaseLapsedCloid(
  ctx: Ctx,
  account: string,
  cloid: string,
  orderId: number,
): void {
  const key = cloidKey(account, cloid);
  const entry = ctx.state.cloids.get(key);
  if (entry === undefined || entry.orderId !== orderId) return;
  if (entry.acceptedTime + ctx.state.settings.cloidRetentionMs <= ctx.time) {
    ctx.state.cloids = ctx.state.cloids.delete(ctx.edit, key);
  }
}

/** Drops reservations past their retention time; returns whether any went. */
export function pruneCloids(ctx: Ctx): boolean {
  const s = ctx.state;
  const retention = s.settings.cloidRetentionMs;
  let { head } = s.cloidLog;
  const { tail } = s.cloidLog;
  let entries = s.cloidLog.entries;
  let cloids = s.cloids;
  while (head < tail) {
    const key = entries.get(head)!;
    const entry = cloids.get(key);
    if (entry !== undefined) {
      if (entry.acceptedTime + retention > ctx.time) break;
      const order = ctx.order(entry.orderId);
      const stillHeld =
        order !== undefined && order.cloid !== null && cloidKey(order.account, order.cloid) === key;
      // A working order keeps its cloid; it is released when the order ends (releaseCloidOnEnd).
      if (!stillHeld) cloids = cloids.delete(ctx.edit, key);
    }
    entries = entries.delete(ctx.edit, head);
    head++;
  }
  if (head === s.cloidLog.head) return false;
  s.cloids = cloids;
  s.cloidLog = { head, tail, entries };
  return true;
}
