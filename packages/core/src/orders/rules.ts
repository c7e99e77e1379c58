/**
 * Business checks of an order after its signature and nonce passed (engine-rules section 5):
 * market status, cloid uniqueness, reduce-only and TP/SL rules, trigger side, post-only, minimum
 * notional, leverage, open-interest cap and margin, then the account's working-order cap. A
 * failure is an `OrderRejected` report and consumes the nonce; all checks here are read-only.
 *
 * @module
 */

import { bestLevel, leavesOf, ownSide } from '../book/levels.js';
import type { Ctx } from '../engine/context.js';
import type { Account, Market, Order } from '../engine/types.js';
import { type Rejection, reject } from '../errors.js';
import { type Instrument, notionalScale } from '../instruments/instrument.js';
import { holdSurelyFits } from '../margin/estimate.js';
import {
  accountOrders,
  availableToOpen,
  claimReserveOf,
  holdIncrease,
  holdsMargin,
  leverageOf,
  maxLeverageProblem,
  measureScope,
  restingOpenQty,
  sizeOf,
  tierProblemAfter,
} from '../margin/scope.js';
import { formatCollateral, formatDecimal, formatPrice } from '../units/decimal.js';
import { sweepDirection, triggerSatisfied } from './triggers-index.js';

/** A refusal with the execution report's `reason`. */
export interface OrderProblem extends Rejection {
  readonly reason: string;
}

const problem = (rejection: Rejection, reason: string): OrderProblem => ({ ...rejection, reason });

/** The slippage-capped limit of a market-style trigger order: 10% from mark, on the tick grid. */
export function marketStyleLimit(order: Pick<Order, 'side'>, mark: bigint, tick: bigint): bigint {
  if (order.side === 'Buy') {
    const cap = (mark * 11n) / 10n;
    return (cap / tick) * tick; // never above the cap
  }
  const floor = (mark * 9n + 9n) / 10n;
  const ticks = (floor + tick - 1n) / tick;
  return ticks * tick > 0n ? ticks * tick : tick; // never below the cap
}

/**
 * The per-account cap on working orders (`VenueSettings.maxWorkingOrdersPerAccount`): refused
 * when the account already holds the most allowed and this order could rest. A trigger order
 * rests untriggered whatever its time in force, and a GTC/GTD/DAY limit may rest a remainder, so
 * both count even when they would cross; an IOC or FOK limit order never rests (it ends in the
 * command that placed it), so it passes at the cap and an account there can still take and
 * close. The account's order list knows its length, so the check costs O(1). It is the last
 * check: an order the spec refuses for its own reason (4032, 4101, post-only, reduce-only) gets
 * that refusal and its code, which tells the client what to change.
 */
export function checkWorkingOrderCap(
  ctx: Ctx,
  account: Account,
  order: Order,
): OrderProblem | undefined {
  const neverRests =
    order.orderType === 'Limit' && (order.timeInForce === 'IOC' || order.timeInForce === 'FOK');
  if (neverRests) return undefined;
  const working = account.orders.size;
  const cap = ctx.state.settings.maxWorkingOrdersPerAccount;
  if (working < cap) return undefined;
  return problem(
    reject('INVALID_REQUEST', `account has ${working} working orders, the most allowed is ${cap}`),
    'TooManyOrders',
  );
}

/**
 * Reduce-only and TP/SL rules with the spec's five messages. `replacing` is the order being
 * amended (left out of the sweep totals).
 */
export function checkReduceOnly(
  ctx: Ctx,
  account: Account,
  order: Order,
  replacing?: number,
): OrderProblem | undefined {
  if (!order.reduceOnly) return undefined;
  const size = sizeOf(account, order.market, order.marginMode);
  const kind =
    order.orderType === 'Limit' || order.orderType === 'StopLimit'
      ? 'reduce-only order'
      : `${order.orderType} order`;
  if (order.managed) {
    if (order.parentCloid !== null) {
      const parent = order.entryOrderId === null ? undefined : ctx.order(order.entryOrderId);
      if (
        parent === undefined ||
        parent.managed ||
        parent.market !== order.market ||
        parent.marginMode !== order.marginMode
      ) {
        return problem(
          reject(
            'INVALID_REQUEST',
            `managed ${kind} requires an open position or a resting entry order (no working entry order ${order.parentCloid})`,
          ),
          'NoParent',
        );
      }
      if (parent.side === order.side) {
        return problem(
          reject(
            'INVALID_REQUEST',
            `managed ${kind} must reduce position (opposite side required): its entry order is a ${parent.side}`,
          ),
          'ReduceOnly',
        );
      }
      return undefined;
    }
    if (size === 0n) {
      return problem(
        reject(
          'INVALID_REQUEST',
          `managed ${kind} requires an open position or a resting entry order`,
        ),
        'NoParent',
      );
    }
  } else if (size === 0n) {
    return problem(reject('INVALID_REQUEST', `${kind} requires an open position`), 'NoPosition');
  }
  if (size > 0n === (order.side === 'Buy')) {
    return problem(
      reject(
        'INVALID_REQUEST',
        `${kind} must reduce position (opposite side required): the position is ${size > 0n ? 'long' : 'short'}`,
      ),
      'ReduceOnly',
    );
  }
  if (order.managed) return undefined; // sized by the position
  const abs = size < 0n ? -size : size;
  const qd = ctx.market(order.market)!.spec.quantityDecimals;
  const leaves = leavesOf(order);
  if (leaves > abs) {
    return problem(
      reject(
        'INVALID_REQUEST',
        `${kind} exceeds position size: ${formatDecimal(leaves, qd)} > ${formatDecimal(abs, qd)}`,
      ),
      'ReduceOnly',
    );
  }
  // An IOC or FOK limit order ends in the command that places it: it trades now or not at all,
  // so no later price move reaches it and it joins no sweep (engine-rules 5: the sweep is what
  // one move reaches). Counting it would refuse a reduce-only market close of a position that
  // has a full-size take-profit resting; the fills re-clamp that take-profit instead.
  if (order.orderType === 'Limit' && (order.timeInForce === 'IOC' || order.timeInForce === 'FOK'))
    return undefined;
  const direction = sweepDirection(order);
  let sweep = leaves;
  for (const o of accountOrders(ctx.state, account)) {
    if (o.orderId === replacing || !o.reduceOnly || o.managed) continue;
    if (o.market !== order.market || o.marginMode !== order.marginMode || o.side !== order.side)
      continue;
    if (sweepDirection(o) === direction) sweep += leavesOf(o);
  }
  if (sweep > abs) {
    return problem(
      reject(
        'INVALID_REQUEST',
        `reduce-only orders in one sweep would close ${formatDecimal(sweep, qd)} of a ${formatDecimal(abs, qd)} position`,
      ),
      'ReduceOnly',
    );
  }
  return undefined;
}

/** Whether a limit order at `price` would take liquidity now. */
export function wouldCross(market: Market, buy: boolean, price: bigint): boolean {
  const best = bestLevel(ownSide(market, !buy));
  if (best === undefined) return false;
  return buy ? best.price <= price : best.price >= price;
}

/**
 * Checks that need the market's prices and the account's margin. `previous` is the order before
 * an amend (its resting hold is swapped for the new one).
 */
export function checkRiskAndSize(
  ctx: Ctx,
  account: Account,
  market: Market,
  order: Order,
  previous?: Order,
): OrderProblem | undefined {
  const spec = market.spec;
  const mark = market.prices.mark;
  const isTrigger = order.ordStatus === 'Untriggered';
  if (isTrigger && mark !== null && triggerSatisfied(order, mark)) {
    return problem(
      reject(
        'INVALID_ORDER_PRICE',
        `trigger price ${formatPrice(order.triggerPrice)} is already reached by the mark ${formatPrice(mark)}`,
      ),
      'PriceBand',
    );
  }
  if (order.postOnly && wouldCross(market, order.side === 'Buy', order.price)) {
    return problem(
      reject(
        'INVALID_REQUEST',
        `post-only order at ${formatPrice(order.price)} would take liquidity`,
      ),
      'PostOnly',
    );
  }
  // Minimum notional (engine-rules 5): at the limit price, or at mark for market-style triggers.
  const size = sizeOf(account, order.market, order.marginMode);
  const abs = size < 0n ? -size : size;
  const leaves = leavesOf(order);
  const closesWholePosition = order.reduceOnly && (order.managed || leaves === abs);
  if (!closesWholePosition) {
    let price = order.price;
    if (price === 0n) {
      if (mark === null) {
        return problem(
          reject(
            'INVALID_ORDER_PRICE',
            `no mark price for ${spec.symbol} yet; a market-style trigger order needs one`,
          ),
          'PriceBand',
        );
      }
      price = mark;
    }
    if (order.quantity * price < spec.minNotional * notionalScale(spec)) {
      return problem(
        reject(
          'ORDER_TOO_SMALL',
          `notional ${formatCollateral((order.quantity * price) / notionalScale(spec))} is below the minimum ${formatCollateral(spec.minNotional)}`,
        ),
        'OrderTooSmall',
      );
    }
  }
  if (order.reduceOnly) return undefined;
  // The version an amend replaces still counts in the side's resting totals.
  const replaced =
    previous !== undefined && previous.side === order.side && holdsMargin(previous)
      ? leavesOf(previous)
      : 0n;
  const others =
    restingOpenQty(account, order.market, order.marginMode, order.side === 'Buy') - replaced;
  // An amend that opens no more than the version it replaces lowers the worst case the tier cap
  // measures: only the instrument's maximum applies to it (as the open-interest cap below).
  const opensMore =
    previous === undefined ||
    previous.reduceOnly ||
    previous.side !== order.side ||
    leaves > leavesOf(previous);
  const capped = leverageCapProblem(
    account,
    spec,
    order,
    size,
    others,
    mark ?? order.price,
    opensMore,
  );
  if (capped !== undefined) return capped;
  const increase = openingPart(size, order.side === 'Buy', leaves);
  const previousIncrease =
    previous === undefined || previous.reduceOnly
      ? 0n
      : openingPart(size, previous.side === 'Buy', leavesOf(previous));
  if (increase > previousIncrease) {
    const overCap = openInterestProblem(market, increase);
    if (overCap !== undefined) return overCap;
  }
  if (!ctx.state.settings.marginChecks || isTrigger) return undefined;
  return checkHold(ctx, account, market, order);
}

/**
 * The leverage caps of an order that may open (engine-rules 1 and 2, research 1.2): the scope's
 * leverage may not be above the instrument's maximum, nor above the maximum of the margin tier
 * its position reaches at `price` once this order and the `others` resting open quantity of its
 * side have filled (the worst case the hold assumes too, engine-rules 4). Checked at placement,
 * at an amend and again when a trigger order fires (the position, the orders or the mark may
 * have moved while it waited). `withTier` false checks the instrument's maximum alone.
 */
export function leverageCapProblem(
  account: Account,
  spec: Instrument,
  order: Order,
  size: bigint,
  others: bigint,
  price: bigint,
  withTier = true,
): OrderProblem | undefined {
  const leverage = leverageOf(account, spec, order.marginMode);
  const aboveMax = maxLeverageProblem(spec, leverage);
  if (aboveMax !== undefined)
    return problem(reject('MAX_LEVERAGE_EXCEEDED', aboveMax), 'MaxLeverage');
  if (!withTier) return undefined;
  const buy = order.side === 'Buy';
  const stacked = others + leavesOf(order);
  const tooHigh = tierProblemAfter(spec, leverage, size, buy, stacked, price);
  if (tooHigh === undefined) return undefined;
  const after = size + (buy ? stacked : -stacked);
  const notional = ((after < 0n ? -after : after) * price) / notionalScale(spec);
  const counted = others === 0n ? 'this order' : "this and the side's other resting orders";
  return problem(
    reject(
      'MAX_LEVERAGE_EXCEEDED',
      `${tooHigh} (the position after ${counted}: ${formatCollateral(notional)})`,
    ),
    'MaxLeverage',
  );
}

/**
 * The open-interest cap (engine-rules 5): refused when an order's position-increasing part
 * `increase` could take the market's open interest above its cap. Checked at placement, at an
 * amend that opens more, and again when a trigger order fires (the market may have filled up
 * while it waited).
 */
export function openInterestProblem(market: Market, increase: bigint): OrderProblem | undefined {
  const spec = market.spec;
  if (market.openInterest + increase <= spec.openInterestCap) return undefined;
  return problem(
    reject(
      'OI_CAP_EXCEEDED',
      `${spec.symbol} open interest ${formatDecimal(market.openInterest, spec.quantityDecimals)} plus ${formatDecimal(increase, spec.quantityDecimals)} would exceed the cap ${formatDecimal(spec.openInterestCap, spec.quantityDecimals)}`,
    ),
    'OICap',
  );
}

/**
 * The part of an order of `leaves` that opens exposure against a position of `size`: all of it on
 * the position's side (or from flat), what is left after closing the position otherwise.
 */
export function openingPart(size: bigint, buy: boolean, leaves: bigint): bigint {
  if (size === 0n || size > 0n === buy) return leaves;
  const abs = size < 0n ? -size : size;
  return leaves > abs ? leaves - abs : 0n;
}

/**
 * Margin at placement (engine-rules 5): the hold the order adds must fit in the scope's
 * available-to-open. The order is measured as if it rested at its limit price.
 */
export function checkHold(
  ctx: Ctx,
  account: Account,
  market: Market,
  order: Order,
): OrderProblem | undefined {
  // Far from the boundary a float estimate with an error bound decides (margin/estimate.ts);
  // near it, the exact sums below.
  if (
    holdSurelyFits(ctx.state, account, market.spec, order.marginMode, leavesOf(order), order.price)
  ) {
    return undefined;
  }
  // The order as it would rest, in place of the version it replaces (same id).
  const increase = holdIncrease(ctx.state, account, market.spec, order.marginMode, {
    orderId: order.orderId,
    buy: order.side === 'Buy',
    leaves: leavesOf(order),
    price: order.price,
  });
  if (increase <= 0n) return undefined;
  const before = measureScope(
    ctx.state,
    account,
    order.marginMode,
    market.spec.id,
    undefined,
    true,
  );
  // Cross margin reserved by liquidation-auction claims is not available to new orders.
  const available = availableToOpen(before) - claimReserveOf(account, order.marginMode);
  if (available - increase >= 0n) return undefined;
  const scope = order.marginMode === 'Cross' ? 'cross' : `${market.spec.symbol} isolated`;
  return problem(
    reject(
      'INSUFFICIENT_MARGIN',
      `order needs ${formatCollateral(increase)} of margin, ${scope} available ${formatCollateral(available > 0n ? available : 0n)}`,
    ),
    'InsufficientMargin',
  );
}
