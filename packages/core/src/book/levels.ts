/**
 * Price levels of one side of a book: sorted arrays whose last element is the best level (bids
 * ascending, asks descending), each level a FIFO of order ids with lazy removal so a cancel is
 * O(log levels) and never scans a queue.
 *
 * @module
 */
import type { Ctx } from '../engine/context.js';
import { newLevel } from '../engine/records.js';
import type { Level, Market, Order } from '../engine/types.js';

/** The levels an order of `side` rests on. */
export function ownSide(market: Market, buy: boolean): Level[] {
  return buy ? market.bids : market.asks;
}

/** Index of the level at `price` on a side, or `-(insertion point) - 1` when absent. */
export function findLevel(levels: readonly Level[], price: bigint, bids: boolean): number {
  let lo = 0;
  let hi = levels.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const p = (levels[mid] as Level).price;
    if (p === price) return mid;
    // Bids ascend, asks descend.
    if (bids ? p < price : p > price) lo = mid + 1;
    else hi = mid - 1;
  }
  return -lo - 1;
}

/** The best level of a side, or `undefined`. */
export function bestLevel(levels: readonly Level[]): Level | undefined {
  return levels[levels.length - 1];
}

/** Leaves quantity of an order. */
export function leavesOf(order: Order): bigint {
  return order.quantity - order.cumQty;
}

/**
 * Puts a writable order at the back of its price level on a writable market, creating the level
 * when needed, and records its slot.
 */
export function restOrder(ctx: Ctx, market: Market, order: Order): void {
  const bids = order.side === 'Buy';
  const levels = ownSide(market, bids);
  let idx = findLevel(levels, order.price, bids);
  let level: Level;
  if (idx < 0) {
    idx = -idx - 1;
    level = newLevel(ctx.edit, order.price);
    levels.splice(idx, 0, level);
  } else {
    level = ctx.writableLevel(market, levels, idx);
  }
  order.slot = level.base + level.ids.length;
  level.ids.push(order.orderId);
  level.count++;
  level.quantity += leavesOf(order);
}

/**
 * Takes an order off its level on a writable market (cancel, expiry, replace that loses
 * priority). The level's entry is zeroed and skipped later; an emptied level is removed. The
 * order record is only read: the caller clears its slot if it keeps the order.
 */
export function unrestOrder(ctx: Ctx, market: Market, order: Order): void {
  const bids = order.side === 'Buy';
  const levels = ownSide(market, bids);
  const idx = findLevel(levels, order.price, bids);
  if (idx < 0) throw new Error(`order ${order.orderId} rests on no level`);
  const level = ctx.writableLevel(market, levels, idx);
  const at = order.slot - level.base;
  if (level.ids[at] !== order.orderId) throw new Error(`order ${order.orderId} not in its slot`);
  level.ids[at] = 0;
  level.count--;
  level.quantity -= leavesOf(order);
  if (level.count === 0) levels.splice(idx, 1);
  else compact(level);
}

/** Drops spent entries at the head of an owned level once they dominate its array. */
export function compact(level: Level): void {
  while (level.head - level.base < level.ids.length && level.ids[level.head - level.base] === 0) {
    level.head++;
  }
  const spent = level.head - level.base;
  if (spent > 32 && spent * 2 > level.ids.length) {
    level.ids = level.ids.slice(spent);
    level.base = level.head;
  }
}

/** Total leaves quantity and number of orders per level, best first, up to `depth` levels. */
export function depthOf(
  levels: readonly Level[],
  depth: number,
): { price: bigint; quantity: bigint; orders: number }[] {
  const out: { price: bigint; quantity: bigint; orders: number }[] = [];
  for (let i = levels.length - 1; i >= 0 && out.length < depth; i--) {
    const l = levels[i] as Level;
    out.push({ price: l.price, quantity: l.quantity, orders: l.count });
  }
  return out;
}

/** Ids of a level's live orders in time priority. */
export function levelOrderIds(level: Level): number[] {
  const out: number[] = [];
  for (let i = level.head - level.base; i < level.ids.length; i++) {
    const id = level.ids[i] as number;
    if (id !== 0) out.push(id);
  }
  return out;
}
