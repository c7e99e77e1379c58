/**
 * Untriggered orders of a market, indexed by trigger price so an oracle command pops exactly the
 * orders its new mark fires. Each list keeps its next-to-fire entry at the end.
 *
 * @module
 */
import type { Ctx } from '../engine/context.js';
import type { Market, Order, TriggerEntry } from '../engine/types.js';

/** Whether an order fires when the mark rises to its trigger (else when it falls to it). */
export function firesAbove(order: Pick<Order, 'side' | 'orderType'>): boolean {
  // Buy stops fire when mark >= trigger; take-profits the other way round (engine-rules 5).
  const stop = order.orderType !== 'TakeProfit';
  return order.side === 'Buy' ? stop : !stop;
}

/**
 * Direction of the price move that makes a reduce-only order trade, 1 up and -1 down: an
 * untriggered order by its trigger, a working one by its side (a sell limit rests above the
 * market). The reduce-only rules group orders into sweeps by it (`checkReduceOnly` at placement,
 * the re-clamp in managed.ts).
 */
export function sweepDirection(o: Pick<Order, 'side' | 'orderType' | 'ordStatus'>): 1 | -1 {
  if (o.ordStatus === 'Untriggered') return firesAbove(o) ? 1 : -1;
  return o.side === 'Sell' ? 1 : -1;
}

/** Whether the mark already satisfies the order's trigger. */
export function triggerSatisfied(
  order: Pick<Order, 'side' | 'orderType' | 'triggerPrice'>,
  mark: bigint,
): boolean {
  return firesAbove(order) ? mark >= order.triggerPrice : mark <= order.triggerPrice;
}

/**
 * Position of `entry` in a list ordered so the next to fire is last: `above` lists descend by
 * trigger (lowest last), `below` lists ascend (highest last); ties put the older order last.
 */
function insertionIndex(
  list: readonly TriggerEntry[],
  entry: TriggerEntry,
  above: boolean,
): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const e = list[mid] as TriggerEntry;
    const before = above
      ? e.triggerPrice > entry.triggerPrice ||
        (e.triggerPrice === entry.triggerPrice && e.orderId > entry.orderId)
      : e.triggerPrice < entry.triggerPrice ||
        (e.triggerPrice === entry.triggerPrice && e.orderId > entry.orderId);
    if (before) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Adds an untriggered order to a writable market's trigger lists. */
export function addTrigger(market: Market, order: Order): void {
  const above = firesAbove(order);
  const list = above ? market.triggersAbove : market.triggersBelow;
  const entry: TriggerEntry = { triggerPrice: order.triggerPrice, orderId: order.orderId };
  list.splice(insertionIndex(list, entry, above), 0, entry);
}

/** Removes an order from a writable market's trigger lists (no-op when absent). */
export function removeTrigger(_ctx: Ctx, market: Market, order: Order): void {
  const above = firesAbove(order);
  const list = above ? market.triggersAbove : market.triggersBelow;
  const at = insertionIndex(
    list,
    { triggerPrice: order.triggerPrice, orderId: order.orderId },
    above,
  );
  const e = list[at];
  if (e !== undefined && e.orderId === order.orderId) list.splice(at, 1);
}

/** Pops every entry the mark fires from a writable market, oldest order first. */
export function popFired(market: Market, mark: bigint): number[] {
  const fired: number[] = [];
  const above = market.triggersAbove;
  while (above.length > 0 && (above[above.length - 1] as TriggerEntry).triggerPrice <= mark) {
    fired.push((above.pop() as TriggerEntry).orderId);
  }
  const below = market.triggersBelow;
  while (below.length > 0 && (below[below.length - 1] as TriggerEntry).triggerPrice >= mark) {
    fired.push((below.pop() as TriggerEntry).orderId);
  }
  return fired.sort((a, b) => a - b);
}

/** Whether a market has any untriggered order the mark would fire (read-only). */
export function anyFired(market: Market, mark: bigint): boolean {
  const a = market.triggersAbove[market.triggersAbove.length - 1];
  const b = market.triggersBelow[market.triggersBelow.length - 1];
  return (a !== undefined && a.triggerPrice <= mark) || (b !== undefined && b.triggerPrice >= mark);
}
