/**
 * Price levels of one side of a book: sorted arrays whose last element is the best level (bids
 * ascending, asks descending), each level a FIFO of order ids with lazy removal so a cancel is
 * O(log levels) and never scans a queue.
 *
 * @module
 */
import type { Ctx } from '../engine/context.js';
import { newLevel } from '../engine/records.js';
import {
  LEVEL_CHUNK,
  LEVEL_CHUNK_SHIFT,
  type Level,
  type LevelChunk,
  type Market,
  type Order,
} from '../engine/types.js';
import type { Edit } from '../persistent/edit.js';

const CHUNK_MASK = LEVEL_CHUNK - 1;

/** The chunk holding slot `slot` of a writable level, copied first if `edit` does not own it. */
function writableChunk(level: Level, edit: Edit, slot: number): LevelChunk {
  const index = (slot - level.base) >>> LEVEL_CHUNK_SHIFT;
  const chunk = level.chunks[index] as LevelChunk;
  if (chunk.edit === edit) return chunk;
  const copy: LevelChunk = { edit, ids: chunk.ids.slice() };
  level.chunks[index] = copy;
  return copy;
}

/** A new, empty chunk. */
function newChunk(edit: Edit): LevelChunk {
  return { edit, ids: new Array<number>(LEVEL_CHUNK).fill(0) };
}

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

/** The order id in slot `slot` of a level (0: removed or never used). */
export function slotId(level: Level, slot: number): number {
  const offset = slot - level.base;
  return (level.chunks[offset >>> LEVEL_CHUNK_SHIFT] as LevelChunk).ids[
    offset & CHUNK_MASK
  ] as number;
}

/** Empties slot `slot` of a writable level (the order left it). */
export function clearSlot(level: Level, edit: Edit, slot: number): void {
  writableChunk(level, edit, slot).ids[(slot - level.base) & CHUNK_MASK] = 0;
}

/** Appends an order id to a writable level; returns its slot. */
function pushSlot(level: Level, edit: Edit, orderId: number): number {
  const slot = level.tail;
  if ((slot - level.base) >>> LEVEL_CHUNK_SHIFT === level.chunks.length)
    level.chunks.push(newChunk(edit));
  writableChunk(level, edit, slot).ids[(slot - level.base) & CHUNK_MASK] = orderId;
  level.tail = slot + 1;
  return slot;
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
  order.slot = pushSlot(level, ctx.edit, order.orderId);
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
  if (slotId(level, order.slot) !== order.orderId) {
    throw new Error(`order ${order.orderId} not in its slot`);
  }
  clearSlot(level, ctx.edit, order.slot);
  level.count--;
  level.quantity -= leavesOf(order);
  if (level.count === 0) levels.splice(idx, 1);
  else compact(ctx, level);
}

/**
 * Moves the head of an owned level past spent slots and drops the chunks wholly before it; a
 * level left mostly holes is repacked (see {@link repack}). Only the level's own slots decide
 * what happens, so the result does not depend on batching.
 */
export function compact(ctx: Ctx, level: Level): void {
  while (level.head < level.tail && slotId(level, level.head) === 0) level.head++;
  if (level.tail - level.head > REPACK_SLACK + 2 * level.count) {
    repack(ctx, level);
    return;
  }
  const spentChunks = (level.head - level.base) >>> LEVEL_CHUNK_SHIFT;
  if (spentChunks > 0) {
    level.chunks.splice(0, spentChunks);
    level.base += spentChunks * LEVEL_CHUNK;
  }
}

/**
 * Empty slots a level may hold between its head and tail beyond twice its live orders before
 * {@link compact} repacks it.
 */
export const REPACK_SLACK = 4 * LEVEL_CHUNK;

/**
 * Rewrites an owned level's live orders into consecutive slots from a chunk boundary, in their
 * time priority, and gives each its new slot. Dropping chunks only behind the head leaves every
 * slot after a long-lived order at the front: orders placed and cancelled behind it (a market
 * maker quoting the same price all day) would each leave a slot for as long as it rests, in
 * memory, snapshots and every scan of the level. Repacking once the holes outnumber the live
 * orders (plus {@link REPACK_SLACK}) bounds the slots to about twice the live orders, at an
 * amortized constant cost per removal: each repack follows at least as many removals as it moves
 * orders.
 */
function repack(ctx: Ctx, level: Level): void {
  const ids = levelOrderIds(level);
  const base = level.head - (level.head & CHUNK_MASK);
  const chunks: LevelChunk[] = [];
  for (let i = 0; i < ids.length; i++) {
    if ((i & CHUNK_MASK) === 0) chunks.push(newChunk(ctx.edit));
    const id = ids[i] as number;
    (chunks[i >>> LEVEL_CHUNK_SHIFT] as LevelChunk).ids[i & CHUNK_MASK] = id;
    const slot = base + i;
    if (ctx.order(id)!.slot !== slot) ctx.writableOrder(id).slot = slot;
  }
  level.chunks = chunks;
  level.base = base;
  level.head = base;
  level.tail = base + ids.length;
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
  for (let s = level.head; s < level.tail; s++) {
    const id = slotId(level, s);
    if (id !== 0) out.push(id);
  }
  return out;
}
