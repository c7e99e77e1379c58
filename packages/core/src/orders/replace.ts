/**
 * `replaceOrder`: an amend of price, trigger price and total quantity (engine-rules 5, research
 * 6.3 rule 4). A price change or a size increase loses time priority; a pure decrease keeps it.
 * An amended price that crosses executes like a new arrival. A refused amend leaves the order as
 * it was.
 *
 * @module
 */
import { admitRequest } from '../access/admission.js';
import type { ReplaceOrderCommand } from '../engine/commands.js';
import type { Ctx } from '../engine/context.js';
import { viewOf } from '../engine/events.js';
import type { Order } from '../engine/types.js';
import { type Rejection, reject } from '../errors.js';
import { formatDecimal } from '../units/decimal.js';
import { findWorkingOrder, namedOrderId, targetProblem, unknownMarket } from './cancel.js';
import { cloidHolder, registerCloid, releaseLapsedCloid } from './cloids.js';
import { rest, shrinkInPlace, unrest } from './execution.js';
import { followParentCloid } from './managed.js';
import { execute, latestOrder } from './place.js';
import { checkReduceOnly, checkRiskAndSize, wouldCross } from './rules.js';
import { addTrigger, removeTrigger } from './triggers-index.js';
import { checkPrice, checkQuantity } from './validate.js';

const CLOID_RE = /^0x[0-9a-f]{32}$/;

/**
 * Checks that read only the request and the instrument (4032-4034 grids, the cloid's form): a
 * failure consumes no nonce, as for a new order (orders/validate.ts). A price or trigger price of
 * 0 passes here; whether the order may take it depends on its state, checked after admission.
 */
function requestProblem(ctx: Ctx, cmd: ReplaceOrderCommand): Rejection | undefined {
  const unlisted = unknownMarket(ctx, cmd.market);
  if (unlisted !== undefined) return unlisted;
  const spec = ctx.market(cmd.market)!.spec;
  if (cmd.price !== 0n) {
    const bad = checkPrice(spec, cmd.price, 'price');
    if (bad) return bad;
  }
  if (cmd.triggerPrice !== 0n) {
    const bad = checkPrice(spec, cmd.triggerPrice, 'trigger price');
    if (bad) return bad;
  }
  const badQty = checkQuantity(spec, cmd.quantity);
  if (badQty) return badQty;
  if (cmd.cloid !== null && !CLOID_RE.test(cmd.cloid)) {
    return reject('INVALID_REQUEST', 'cloid must be 0x followed by 32 lowercase hex digits');
  }
  return undefined;
}

/**
 * Checks that depend on the order's state (triggered or not, filled quantity, managed): the
 * same signed amend may pass them later, so a failure consumes the nonce (protocol: a request
 * whose signature and nonce pass consumes its nonce, whatever the business outcome).
 */
function stateProblem(ctx: Ctx, order: Order, cmd: ReplaceOrderCommand): Rejection | undefined {
  const spec = ctx.market(order.market)!.spec;
  const untriggered = order.ordStatus === 'Untriggered';
  const marketStyle = order.orderType === 'StopLoss' || order.orderType === 'TakeProfit';
  // A market-style TP/SL may keep price 0 (market on trigger).
  if (cmd.price === 0n && !(untriggered && marketStyle)) {
    return checkPrice(spec, cmd.price, 'price');
  }
  if (untriggered) {
    if (cmd.triggerPrice === 0n) return checkPrice(spec, cmd.triggerPrice, 'trigger price');
  } else if (cmd.triggerPrice !== 0n && cmd.triggerPrice !== order.triggerPrice) {
    return reject(
      'INVALID_ORDER_PRICE',
      'the trigger price of a working (triggered or Limit) order cannot change',
    );
  }
  if (cmd.quantity <= order.cumQty) {
    return reject(
      'INVALID_ORDER_QUANTITY',
      `new quantity ${formatDecimal(cmd.quantity, spec.quantityDecimals)} must exceed the filled ${formatDecimal(order.cumQty, spec.quantityDecimals)}`,
    );
  }
  if (order.managed && cmd.quantity !== order.quantity) {
    return reject(
      'INVALID_REQUEST',
      'a managed TP/SL follows its position; its quantity cannot be amended',
    );
  }
  return undefined;
}

/** Handles a `replaceOrder` command. */
export function replaceOrderCommand(ctx: Ctx, cmd: ReplaceOrderCommand): void {
  const bad = targetProblem(cmd.orderId, cmd.origCloid);
  if (bad !== undefined) {
    const r = reject('INVALID_REQUEST', bad);
    return ctx.fail(r.code, r.message);
  }
  const account = ctx.account(cmd.account);
  if (account === undefined) {
    const r = reject('ACCOUNT_NOT_FOUND', `no trading account for ${cmd.account}`);
    return ctx.fail(r.code, r.message);
  }
  const fields = requestProblem(ctx, cmd);
  if (fields !== undefined) return ctx.fail(fields.code, fields.message);
  const id = findWorkingOrder(ctx, cmd.account, cmd.market, cmd.orderId, cmd.origCloid);
  if (!admitRequest(ctx, cmd.account, cmd.auth, 'order')) return;
  if (id === undefined) {
    const target = cmd.orderId !== 0n ? `order ${cmd.orderId}` : `cloid ${cmd.origCloid}`;
    const r = reject(
      'ORDER_NOT_FOUND',
      `${target} is not working (filled, cancelled, expired or unknown)`,
    );
    return ctx.fail(r.code, r.message, {
      nonceConsumed: true,
      ...namedOrderId(cmd.orderId),
      cloid: cmd.origCloid,
    });
  }
  const current = ctx.order(id)!;
  const stale = stateProblem(ctx, current, cmd);
  if (stale !== undefined) {
    return ctx.fail(stale.code, stale.message, {
      nonceConsumed: true,
      orderId: id,
      cloid: current.cloid,
    });
  }
  const market = ctx.market(current.market)!;
  const amended: Order = {
    ...current,
    price: cmd.price,
    triggerPrice: current.ordStatus === 'Untriggered' ? cmd.triggerPrice : current.triggerPrice,
    quantity: cmd.quantity,
    cloid: cmd.cloid ?? current.cloid,
  };
  // The order's own earlier cloid (X -> Y -> X) is its to take back.
  const heldBy =
    cmd.cloid !== null && cmd.cloid !== current.cloid
      ? cloidHolder(ctx, cmd.account, cmd.cloid)
      : undefined;
  const newCloidHolder = heldBy === id ? undefined : heldBy;
  const problem =
    (market.status === 'Paused'
      ? reject('INVALID_REQUEST', `market ${market.spec.symbol} is paused`)
      : undefined) ??
    (newCloidHolder !== undefined
      ? reject('INVALID_REQUEST', `cloid ${cmd.cloid} is already used by order ${newCloidHolder}`)
      : undefined) ??
    checkReduceOnly(ctx, account, amended, id) ??
    checkRiskAndSize(ctx, account, market, amended, current);
  if (problem !== undefined) {
    return ctx.fail(problem.code, problem.message, {
      nonceConsumed: true,
      orderId: id,
      cloid: current.cloid,
    });
  }

  const previous = {
    price: current.price,
    triggerPrice: current.triggerPrice,
    quantity: current.quantity,
  };
  const origCloid = current.cloid;
  const wMarket = ctx.writableMarket(current.market);
  const resting = current.slot >= 0;
  const losesPriority = resting && (cmd.price !== current.price || cmd.quantity > current.quantity);
  const w = ctx.writableOrder(id);
  if (resting && losesPriority) {
    unrest(ctx, wMarket, w);
  } else if (resting && current.quantity > cmd.quantity) {
    // A pure decrease keeps the slot: shrink the level and the hold in place.
    shrinkInPlace(ctx, w, current.quantity - cmd.quantity);
  }
  if (w.ordStatus === 'Untriggered' && w.armed) removeTrigger(ctx, wMarket, w);
  w.price = amended.price;
  w.triggerPrice = amended.triggerPrice;
  w.quantity = amended.quantity;
  w.cloid = amended.cloid;
  w.updatedTime = ctx.time;
  if (w.ordStatus === 'Untriggered' && w.armed) addTrigger(wMarket, w);
  if (cmd.cloid !== null && cmd.cloid !== origCloid) {
    registerCloid(ctx, cmd.account, cmd.cloid, id);
    if (origCloid !== null) {
      // The superseded cloid stays reserved until 24 h after the order was accepted; past
      // that it is free now, and the index must not keep it.
      releaseLapsedCloid(ctx, cmd.account, origCloid, id);
      followParentCloid(ctx, w);
    }
  }
  ctx.report(cmd.account, { kind: 'OrderReplaced', order: viewOf(w), origCloid, previous });
  if (resting && losesPriority) {
    if (wouldCross(ctx.market(w.market)!, w.side === 'Buy', amended.price)) execute(ctx, id);
    else rest(ctx, ctx.writableMarket(w.market), ctx.writableOrder(id));
  }
  ctx.emit({
    type: 'outcome',
    ok: true,
    kind: 'replace',
    order: latestOrder(ctx, id),
    origCloid,
    seq: ctx.account(cmd.account)!.reportSeq,
  });
}
