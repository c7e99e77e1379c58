/**
 * `placeOrder`: validate fields, admit the signed request (nonce), run the business checks,
 * accept, then execute by type and time in force (engine-rules section 5).
 *
 * @module
 */

import { admitRequest } from '../access/admission.js';
import type { PlaceOrderCommand } from '../engine/commands.js';
import type { Ctx } from '../engine/context.js';
import { type OrderView, viewOf } from '../engine/events.js';
import type { Order } from '../engine/types.js';
import { reject } from '../errors.js';
import { sizeOf } from '../margin/scope.js';
import { addTimeId } from '../persistent/sorted-set.js';
import { scopeInAuction } from '../risk/health.js';
import { cloidHolder, cloidTarget, registerCloid } from './cloids.js';
import {
  cancelOrder,
  fillsCompletely,
  matchTaker,
  reducibleBy,
  registerOrder,
  rest,
} from './execution.js';
import { clampReduceOnly, reconcileScopes } from './managed.js';
import { checkReduceOnly, checkRiskAndSize, checkWorkingOrderCap, wouldCross } from './rules.js';
import { addTrigger } from './triggers-index.js';
import { validateOrderRequest } from './validate.js';

/** Handles a `placeOrder` command. */
export function placeOrder(ctx: Ctx, cmd: PlaceOrderCommand): void {
  const valid = validateOrderRequest(ctx.state, cmd.order, ctx.time);
  if (!valid.ok) return ctx.fail(valid.error.code, valid.error.message);
  const v = valid.order;
  if (ctx.account(cmd.account) === undefined) {
    const r = reject('ACCOUNT_NOT_FOUND', `no trading account for ${cmd.account}`);
    return ctx.fail(r.code, r.message);
  }
  if (!admitRequest(ctx, cmd.account, cmd.auth, 'order')) return;
  const account = ctx.account(cmd.account)!;
  const market = ctx.market(v.spec.id)!;
  const isTrigger = v.orderType !== 'Limit';
  const orderId = ctx.nextOrderId();
  const order: Order = {
    edit: ctx.edit,
    orderId,
    account: cmd.account,
    market: v.spec.id,
    side: v.side,
    orderType: v.orderType,
    timeInForce: v.timeInForce,
    marginMode: v.marginMode,
    reduceOnly: v.reduceOnly,
    postOnly: v.postOnly,
    managed: v.managed,
    parentCloid: v.parentCloid,
    // checkReduceOnly refuses a child whose parentCloid names no working entry.
    entryOrderId:
      v.parentCloid === null ? null : (cloidTarget(ctx, cmd.account, v.parentCloid) ?? null),
    createdTime: ctx.time,
    expireTime: v.expireTime,
    cloid: v.cloid,
    price: v.price,
    triggerPrice: v.triggerPrice,
    quantity: v.quantity,
    cumQty: 0n,
    filledNotional: 0n,
    ordStatus: isTrigger ? 'Untriggered' : 'New',
    reason: null,
    updatedTime: ctx.time,
    slot: -1,
    armed: false,
  };
  if (v.managed && v.parentCloid === null) {
    // A managed TP/SL on a position closes whatever the position is.
    const size = sizeOf(account, order.market, order.marginMode);
    if (size !== 0n) order.quantity = size < 0n ? -size : size;
  }
  // A child of an entry order that has filled already is sized by those fills, as its siblings
  // placed before the first fill are (research 6.4.3 rule 4), and arms below.
  const entryFilled = entryFillsOf(ctx, order);
  if (entryFilled > 0n) order.quantity = entryFilled;
  const problem =
    (market.status === 'Paused'
      ? {
          ...reject('INVALID_REQUEST', `market ${market.spec.symbol} is paused`),
          reason: 'MarketClosed',
        }
      : undefined) ??
    (scopeInAuction(
      ctx.state,
      cmd.account,
      order.marginMode,
      order.marginMode === 'Cross' ? 0 : order.market,
    )
      ? {
          ...reject('INVALID_REQUEST', 'the margin scope is being liquidated'),
          reason: 'Liquidation',
        }
      : undefined) ??
    (order.cloid !== null && cloidHolder(ctx, cmd.account, order.cloid) !== undefined
      ? {
          ...reject(
            'INVALID_REQUEST',
            `cloid ${order.cloid} is already used by order ${cloidHolder(ctx, cmd.account, order.cloid)}`,
          ),
          reason: 'DuplicateCloid',
        }
      : undefined) ??
    checkReduceOnly(ctx, account, order) ??
    checkRiskAndSize(ctx, account, market, order) ??
    // Last: an order the spec refuses for its own reason (4032, 4101, post-only, ...) gets that
    // refusal; the cap, our rule, only refuses what would otherwise be accepted.
    checkWorkingOrderCap(ctx, account, order);
  if (problem !== undefined) {
    order.ordStatus = 'Rejected';
    order.reason = problem.reason;
    ctx.report(cmd.account, {
      kind: 'OrderRejected',
      order: viewOf(order),
      code: problem.code,
      message: problem.message,
    });
    return ctx.fail(problem.code, problem.message, {
      nonceConsumed: true,
      orderId,
      cloid: order.cloid,
    });
  }

  registerOrder(ctx, order);
  if (order.cloid !== null) {
    registerCloid(ctx, cmd.account, order.cloid, orderId);
  }
  if (order.expireTime !== null) {
    ctx.state.expiries = addTimeId(ctx.state.expiries, ctx.edit, order.expireTime, orderId);
  }
  if (isTrigger) {
    // Children of an entry order arm on its first fill (managed.ts); the rest arm now. The
    // mark has not reached the trigger (checkRiskAndSize), so nothing fires yet.
    if (!(order.managed && order.parentCloid !== null) || entryFilled > 0n) {
      order.armed = true;
      addTrigger(ctx.writableMarket(order.market), order);
    }
    ctx.orderReport(cmd.account, 'OrderAccepted', order);
  } else if (!wouldCross(market, order.side === 'Buy', order.price)) {
    // Nothing to match: rest (or end an IOC/FOK) before the report, saving a copy of the order.
    if (order.timeInForce === 'IOC' || order.timeInForce === 'FOK') {
      ctx.orderReport(cmd.account, 'OrderAccepted', order);
      cancelOrder(ctx, orderId, order.timeInForce);
    } else {
      rest(ctx, ctx.writableMarket(order.market), order);
      ctx.orderReport(cmd.account, 'OrderAccepted', order);
    }
  } else {
    ctx.orderReport(cmd.account, 'OrderAccepted', order);
    execute(ctx, orderId);
  }
  ctx.emit({
    type: 'outcome',
    ok: true,
    kind: 'order',
    order: latestOrder(ctx, orderId),
    seq: ctx.account(cmd.account)!.reportSeq,
  });
}

/**
 * Executes a working order that may take liquidity: FOK trial match, matching, then by time in
 * force rest the remainder or cancel it. `limit` overrides the order's price (market-style
 * trigger orders, which never rest).
 */
export function execute(ctx: Ctx, orderId: number, limit?: bigint): void {
  const order = ctx.order(orderId)!;
  const market = ctx.writableMarket(order.market);
  const price = limit ?? order.price;
  if (order.timeInForce === 'FOK' && !fillsCompletely(ctx, orderId, price)) {
    cancelOrder(ctx, orderId, 'FOK');
    return;
  }
  matchTaker(ctx, market, orderId, price);
  // A triggered stop about to rest joins the sweep of the resting orders, which may take it
  // over the position: it is re-clamped below with this order in it, and the fills' re-clamp
  // leaves its scope to that, so no order is amended twice for one fill. (A limit order passed
  // the sweep check at placement or replace, against these same orders.) Decided before that
  // re-clamp, which moves no position (so `reducible` still holds after it).
  const matched = ctx.order(orderId);
  const reducible = matched?.reduceOnly === true ? reducibleBy(ctx, matched) : 0n;
  const clampsWith =
    matched !== undefined &&
    limit === undefined &&
    matched.timeInForce !== 'IOC' &&
    matched.timeInForce !== 'FOK' &&
    matched.reduceOnly &&
    !matched.managed &&
    matched.orderType !== 'Limit' &&
    reducible > 0n;
  reconcileScopes(ctx, orderId, clampsWith);
  const after = ctx.order(orderId);
  if (after === undefined) return; // filled, or ended by a rule
  if (after.timeInForce === 'IOC' || after.timeInForce === 'FOK') {
    cancelOrder(ctx, orderId, after.timeInForce);
    return;
  }
  // A market-style trigger order never rests, whatever its time in force: what its slippage
  // cap found no liquidity for is cancelled as such (research 6.4.3's `NoLiquidity`), not as
  // an `IOC` it was not placed as.
  if (limit !== undefined) {
    cancelOrder(ctx, orderId, 'NoLiquidity');
    return;
  }
  if (after.reduceOnly && reducible === 0n) {
    const size = sizeOf(ctx.account(after.account)!, after.market, after.marginMode);
    cancelOrder(ctx, orderId, size === 0n ? 'PositionClosed' : 'ReduceOnly');
    return;
  }
  if (clampsWith) {
    clampReduceOnly(ctx, { account: after.account, market: after.market, mode: after.marginMode });
    if (ctx.order(orderId) === undefined) return; // cancelled by the clamp
  }
  rest(ctx, ctx.writableMarket(after.market), ctx.writableOrder(orderId));
}

/** A snapshot of the order as it stands after this command (working or just ended). */
export function latestOrder(ctx: Ctx, orderId: number): OrderView {
  const working = ctx.order(orderId);
  let reported: OrderView | undefined;
  for (let i = ctx.events.length - 1; i >= 0 && reported === undefined; i--) {
    const e = ctx.events[i]!;
    if (e.type === 'executionReport' && 'order' in e && e.order.orderId === orderId)
      reported = e.order;
  }
  // The last report's snapshot is reused when nothing changed since (the common case).
  if (working === undefined || (reported !== undefined && sameState(reported, working))) {
    if (reported === undefined) throw new Error(`order ${orderId} has no version`);
    return reported;
  }
  return viewOf(working);
}

function sameState(view: OrderView, order: Order): boolean {
  return (
    view.cumQty === order.cumQty &&
    view.ordStatus === order.ordStatus &&
    view.quantity === order.quantity &&
    view.price === order.price &&
    view.triggerPrice === order.triggerPrice &&
    view.cloid === order.cloid &&
    view.reason === order.reason &&
    view.updatedTime === order.updatedTime
  );
}

/** The filled quantity of a managed child's working entry order (0 for any other order). */
function entryFillsOf(ctx: Ctx, order: Order): bigint {
  if (!order.managed || order.entryOrderId === null) return 0n;
  const entry = ctx.order(order.entryOrderId);
  return entry === undefined || entry.managed ? 0n : entry.cumQty;
}
