/**
 * Firing untriggered orders when the mark crosses their trigger (engine-rules section 5), and the
 * time-driven expiry of GTD and DAY orders.
 *
 * @module
 */
import { leavesOf } from '../book/levels.js';
import type { Ctx } from '../engine/context.js';
import { restingOpenQty, sizeOf } from '../margin/scope.js';
import { firstTimeId } from '../persistent/sorted-set.js';
import { cancelOrder, endOrder, reducibleBy } from './execution.js';
import { execute } from './place.js';
import {
  checkHold,
  leverageCapProblem,
  marketStyleLimit,
  openInterestProblem,
  openingPart,
} from './rules.js';
import { anyFired, popFired } from './triggers-index.js';

/**
 * Fires every armed trigger order of a market that `mark` reaches, oldest first. A paused market
 * fires nothing (it accepts cancels only): its triggers stay armed and fire once it resumes.
 */
export function fireTriggers(ctx: Ctx, marketId: number, mark: bigint): void {
  if (ctx.market(marketId)!.status === 'Paused') return;
  const market = ctx.writableMarket(marketId);
  const fired = popFired(market, mark);
  for (const id of fired) fireOrder(ctx, id, mark);
}

function fireOrder(ctx: Ctx, id: number, mark: bigint): void {
  if (ctx.order(id) === undefined) return; // ended by an earlier order of this batch
  const w = ctx.writableOrder(id);
  w.armed = false;
  w.ordStatus = 'New';
  w.updatedTime = ctx.time;
  const account = ctx.account(w.account)!;
  const size = sizeOf(account, w.market, w.marginMode);
  if (w.managed && w.parentCloid === null) w.quantity = w.cumQty + (size < 0n ? -size : size);
  ctx.orderReport(w.account, 'OrderTriggered', w, undefined, mark);
  const order = ctx.order(id)!;
  if (order.reduceOnly && reducibleBy(ctx, order) === 0n) {
    cancelOrder(ctx, id, size === 0n ? 'PositionClosed' : 'ReduceOnly');
    return;
  }
  const market = ctx.market(order.market)!;
  if (!order.reduceOnly) {
    // The position, the side's resting orders, the mark or the instrument's maximum may have
    // moved while the order waited: its leverage caps hold as at placement.
    const others = restingOpenQty(account, order.market, order.marginMode, order.side === 'Buy');
    if (leverageCapProblem(account, market.spec, order, size, others, mark) !== undefined) {
      cancelOrder(ctx, id, 'MaxLeverage');
      return;
    }
    // The market may have filled up to its open-interest cap while the order waited.
    const increase = openingPart(size, order.side === 'Buy', leavesOf(order));
    if (increase > 0n && openInterestProblem(market, increase) !== undefined) {
      cancelOrder(ctx, id, 'OICap');
      return;
    }
    if (ctx.state.settings.marginChecks && checkHold(ctx, account, market, order) !== undefined) {
      cancelOrder(ctx, id, 'InsufficientMargin');
      return;
    }
  }
  const limit =
    order.price === 0n ? marketStyleLimit(order, mark, market.spec.tickSize) : undefined;
  execute(ctx, id, limit);
}

/**
 * Fires the trigger orders armed during this command (managed children of an entry that just
 * filled) whose trigger the mark already reached: a sell stop fires when the mark is at or below
 * its trigger (engine-rules 5), not at the next oracle. Runs after the command's own work, so no
 * order fires in the middle of a match; a fired order can arm more, which fire in turn.
 */
export function fireArmed(ctx: Ctx): void {
  for (;;) {
    const markets = ctx.takeArmedMarkets();
    if (markets.length === 0) return;
    for (const id of markets) {
      const market = ctx.market(id)!;
      const mark = market.prices.mark;
      if (mark !== null && anyFired(market, mark)) fireTriggers(ctx, id, mark);
    }
  }
}

/**
 * Expires every GTD/DAY order whose expiry is at or before `until` (engine-rules 5: expiry
 * applies before any command at or after it). Returns whether any expired.
 */
export function expireDue(ctx: Ctx, until: number = ctx.time): boolean {
  let any = false;
  for (;;) {
    const first = firstTimeId(ctx.state.expiries);
    if (first === undefined || first[0] > until) return any;
    const order = ctx.order(first[1])!;
    endOrder(ctx, first[1], 'Expired', order.timeInForce === 'DAY' ? 'DAY' : 'GTD');
    any = true;
  }
}
