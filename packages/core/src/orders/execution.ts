/**
 * Order execution: matching a taker against the book with price-time priority, self-trade
 * prevention, match-time margin re-checks and reduce-only clamps, fills through the ledger, and
 * the order lifecycle (rest, retire, end, reports) every order command shares.
 *
 * Orders are addressed by id: a report publishes the order it carries, so after any report the
 * next write takes a fresh writable copy through `ctx.writableOrder`.
 *
 * @module
 */
import {
  clearSlot,
  compact,
  findLevel,
  leavesOf,
  ownSide,
  restOrder,
  slotId,
  unrestOrder,
} from '../book/levels.js';
import { Ctx } from '../engine/context.js';
import { type Fill, type OrderView, viewAs } from '../engine/events.js';
import { newTotals } from '../engine/records.js';
import type { Account, Level, Market, Order, OrderTotals, TradeLeg } from '../engine/types.js';
import { InvariantError } from '../errors.js';
import { estimateAfterFill, surelyCovered, surelySolvent } from '../margin/estimate.js';
import { type FillLeg, feeAmount, quoteAmount } from '../margin/ledger.js';
import {
  accountOrders,
  claimReserveOf,
  findScope,
  holdsMargin,
  leverageOf,
  measureScope,
  sizeOf,
  tierCanCap,
  tierProblemAfter,
} from '../margin/scope.js';
import { removeTimeId } from '../persistent/sorted-set.js';
import { applyStoredLeg, applyTradedLeg, newStoredTrade, storeTrade } from '../risk/trades.js';
import { releaseCloidOnEnd } from './cloids.js';
import { activateChildren } from './managed.js';
import {
  fillEquityDelta,
  type GuardSide,
  guardMark,
  scopeEquity,
  solventQuantity,
} from './solvency.js';
import { removeTrigger } from './triggers-index.js';

/** Why a working order ended (research 6.4.3 `reason`). */
export type EndReason =
  | 'User'
  | 'IOC'
  | 'FOK'
  | 'ReduceOnly'
  | 'InsufficientMargin'
  | 'SelfTrade'
  | 'Liquidation'
  | 'PositionClosed'
  | 'ParentCancelled'
  | 'SiblingFilled'
  | 'NoLiquidity'
  | 'MarketClosed'
  | 'OICap'
  | 'MaxLeverage'
  | 'Admin'
  | 'GTD'
  | 'DAY';

// ---- resting-order totals ----------------------------------------------------------------

function totalsIndex(account: Account, order: Order): number {
  const index = findScope(account.orderTotals, order.market, order.marginMode);
  if (index >= 0) return index;
  account.orderTotals.push(newTotals(order.market, order.marginMode));
  return account.orderTotals.length - 1;
}

function pruneTotals(account: Account, index: number): void {
  const t = account.orderTotals[index] as OrderTotals;
  if (t.buyQty === 0n && t.sellQty === 0n && t.guardedCount === 0) {
    account.orderTotals.splice(index, 1);
  }
}

/**
 * Lowers a writable working order's total quantity by `cut` (0 < cut < leaves; cumQty stays).
 * While it rests, its level's quantity and its scope's hold totals fall with it in place, so it
 * keeps its time priority (a replace's pure decrease, the reduce-only re-clamp).
 */
export function shrinkInPlace(ctx: Ctx, w: Order, cut: bigint): void {
  if (w.slot >= 0) {
    const market = ctx.writableMarket(w.market);
    const bids = w.side === 'Buy';
    const levels = ownSide(market, bids);
    const at = findLevel(levels, w.price, bids);
    if (at < 0) throw new InvariantError(`order ${w.orderId} rests on no level`);
    ctx.writableLevel(market, levels, at).quantity -= cut;
    if (holdsMargin(w)) adjustTotals(ctx.writableAccount(w.account), w, -cut);
    ctx.bookTouched(market);
  }
  w.quantity -= cut;
}

/**
 * Adds (negative `qty`: removes) resting quantity of `order` to its scope's hold totals.
 * `account` must be writable (its totals are copied with it).
 */
export function adjustTotals(account: Account, order: Order, qty: bigint): void {
  if (qty === 0n) return;
  const index = totalsIndex(account, order);
  const t = account.orderTotals[index] as OrderTotals;
  // The leaves bound only rises while the side has orders (an overestimate just costs a walk).
  let leaves = leavesOf(order);
  if (qty > leaves) leaves = qty;
  if (order.side === 'Buy') {
    t.buyQty += qty;
    t.buyNotional += qty * order.price;
    if (t.buyQty === 0n) t.buyMaxLeaves = 0n;
    else if (qty > 0n && leaves > t.buyMaxLeaves) t.buyMaxLeaves = leaves;
  } else {
    t.sellQty += qty;
    t.sellNotional += qty * order.price;
    if (t.sellQty === 0n) t.sellMaxLeaves = 0n;
    else if (qty > 0n && leaves > t.sellMaxLeaves) t.sellMaxLeaves = leaves;
  }
  pruneTotals(account, index);
}

function adjustGuarded(account: Account, order: Order, delta: number): void {
  if (!order.reduceOnly && !order.managed) return;
  const index = totalsIndex(account, order);
  (account.orderTotals[index] as OrderTotals).guardedCount += delta;
  pruneTotals(account, index);
}

/** Whether a scope has working reduce-only or managed orders (they follow the position). */
export function hasGuarded(account: Account, market: number, mode: Order['marginMode']): boolean {
  const i = findScope(account.orderTotals, market, mode);
  return i >= 0 && (account.orderTotals[i] as OrderTotals).guardedCount > 0;
}

// ---- lifecycle ----------------------------------------------------------------------------

/** Stores a freshly accepted order as working and indexes it on its account. */
export function registerOrder(ctx: Ctx, order: Order): void {
  const account = ctx.writableAccount(order.account);
  ctx.putOrder(order);
  // The newest id: appending keeps the list ascending.
  account.orders = account.orders.append(ctx.edit, order.orderId);
  adjustGuarded(account, order, 1);
}

/** Takes a working order out of its writable account's list. */
function unlinkFromAccount(ctx: Ctx, account: Account, id: number): void {
  const orders = account.orders.remove(ctx.edit, id);
  if (orders === null) {
    throw new InvariantError(`order ${id} is not in the list of ${account.address}`);
  }
  account.orders = orders;
}

/** Puts a working, writable order at the back of its level and into its hold totals. */
export function rest(ctx: Ctx, market: Market, order: Order): void {
  restOrder(ctx, market, order);
  ctx.bookTouched(market);
  if (holdsMargin(order)) adjustTotals(ctx.writableAccount(order.account), order, leavesOf(order));
}

/** Takes a resting, writable order off the book and out of its hold totals. */
export function unrest(ctx: Ctx, market: Market, order: Order): void {
  takeOffBook(ctx, market, order);
  order.slot = -1;
}

/** Removes a resting order's level entry and hold; leaves the (possibly shared) record alone. */
function takeOffBook(ctx: Ctx, market: Market, order: Order): void {
  if (holdsMargin(order)) adjustTotals(ctx.writableAccount(order.account), order, -leavesOf(order));
  unrestOrder(ctx, market, order);
  ctx.bookTouched(market);
}

/**
 * Removes a working order from every index (book, triggers, expiries, its account's list) and
 * from the working orders. Returns the record as it was, unchanged: it may be shared with an
 * older state, so the final report is built from it without writing to it.
 */
export function retire(ctx: Ctx, orderId: number): Order {
  const order = ctx.order(orderId)!;
  const market = ctx.writableMarket(order.market);
  if (order.slot >= 0) takeOffBook(ctx, market, order);
  if (order.ordStatus === 'Untriggered' && order.armed) removeTrigger(ctx, market, order);
  if (order.expireTime !== null) {
    ctx.state.expiries = removeTimeId(ctx.state.expiries, ctx.edit, order.expireTime, orderId);
  }
  const account = ctx.writableAccount(order.account);
  unlinkFromAccount(ctx, account, orderId);
  adjustGuarded(account, order, -1);
  ctx.deleteOrder(orderId);
  releaseCloidOnEnd(ctx, order);
  return order;
}

/** Ends a working order as Cancelled or Expired and reports it; returns the report's seq. */
export function endOrder(
  ctx: Ctx,
  orderId: number,
  status: 'Cancelled' | 'Expired',
  reason: EndReason,
): number {
  const order = retire(ctx, orderId);
  const view: OrderView = viewAs(order, status, reason, ctx.time);
  const seq = ctx.orderReportOf(
    order.account,
    status === 'Expired' ? 'OrderExpired' : 'OrderCancelled',
    view,
  );
  afterOrderEnded(ctx, view);
  return seq;
}

/** Cancels a working order (user, system or rule) and reports it; returns the report's seq. */
export function cancelOrder(ctx: Ctx, orderId: number, reason: EndReason): number {
  return endOrder(ctx, orderId, 'Cancelled', reason);
}

/**
 * Follow-ups of an order that ended: managed children of an entry order that never filled are
 * cancelled (ParentCancelled); a filled managed TP/SL cancels its sibling (SiblingFilled).
 */
export function afterOrderEnded(ctx: Ctx, order: OrderView): void {
  const account = ctx.account(order.account);
  if (account === undefined) return;
  const t = account.orderTotals[findScope(account.orderTotals, order.market, order.marginMode)];
  if (t === undefined || t.guardedCount === 0) return;
  const related: number[] = [];
  const orphaned: number[] = [];
  for (const o of accountOrders(ctx.state, account)) {
    const id = o.orderId;
    if (!o.managed || o.market !== order.market || o.marginMode !== order.marginMode) continue;
    const child = o.entryOrderId === order.orderId;
    if (child && order.cumQty === 0n) {
      related.push(id);
    } else if (child) {
      // The entry ended with fills: from now on its children follow the position, which may
      // have closed (or turned to their side) while the entry worked (managed.ts, entryWorking).
      const size = sizeOf(account, order.market, order.marginMode);
      if (size === 0n || size > 0n === (o.side === 'Buy')) orphaned.push(id);
    } else if (
      order.managed &&
      order.ordStatus === 'Filled' &&
      // Siblings protect the same thing: one position, or the fills of one entry order (a cloid
      // can name a later entry once this one's retention ran out; its id cannot).
      o.parentCloid === order.parentCloid &&
      o.entryOrderId === order.entryOrderId &&
      o.orderType !== order.orderType
    ) {
      related.push(id);
    }
  }
  for (const id of related) {
    if (ctx.order(id) === undefined) continue;
    cancelOrder(ctx, id, order.ordStatus === 'Filled' ? 'SiblingFilled' : 'ParentCancelled');
  }
  for (const id of orphaned) {
    if (ctx.order(id) !== undefined) cancelOrder(ctx, id, 'PositionClosed');
  }
}

// ---- matching ----------------------------------------------------------------------------

function crosses(buy: boolean, limit: bigint, levelPrice: bigint): boolean {
  return buy ? levelPrice <= limit : levelPrice >= limit;
}

/** How much a reduce-only order may still trade: its opposite position's size, else 0. */
export function reducibleBy(ctx: Ctx, order: Order): bigint {
  const s = sizeOf(ctx.account(order.account)!, order.market, order.marginMode);
  if (order.side === 'Buy') return s < 0n ? -s : 0n;
  return s > 0n ? s : 0n;
}

/**
 * Match-time leverage cap of a resting maker (research 1.2): a fill that leaves the position on
 * the maker's side may not leave the scope's leverage above the maximum of the margin tier that
 * position sits in at the mark. The mark, or the instrument's maximum, may have moved since the
 * order was placed within its tier.
 */
export function makerTierAllows(ctx: Ctx, market: Market, maker: Order, qty: bigint): boolean {
  if (maker.reduceOnly) return true;
  const spec = market.spec;
  const account = ctx.account(maker.account)!;
  const leverage = leverageOf(account, spec, maker.marginMode);
  if (!tierCanCap(spec, leverage)) return true; // per fill: the common case stops here
  const size = sizeOf(account, maker.market, maker.marginMode);
  const price = market.prices.mark ?? maker.price;
  return tierProblemAfter(spec, leverage, size, maker.side === 'Buy', qty, price) === undefined;
}

/**
 * Match-time margin check of a resting maker (engine-rules section 5): a fill that opens or
 * increases a position (a flip included) must not leave its scope below initial margin: equity
 * after the fill at or above the positions' initial margin plus the cross pool's auction-claim
 * reservations. The holds of the maker's other resting orders do not count: placement covered
 * them, and each is re-checked the same way when it fills, so a fill the scope can carry is not
 * refused for an order that may never trade. A fill that only reduces a position is exempt from
 * that, but not from the solvency guard (`solvency.ts`): it must not leave the scope's equity
 * below zero at the mark.
 */
export function makerMarginAllows(
  ctx: Ctx,
  market: Market,
  maker: Order,
  qty: bigint,
  feeRate: bigint = market.spec.makerFeeRate,
): boolean {
  const account = ctx.account(maker.account)!;
  const size = sizeOf(account, maker.market, maker.marginMode);
  const signed = maker.side === 'Buy' ? qty : -qty;
  const sizeAfter = size + signed;
  // Only a fill with no opening part is exempt from initial margin (engine-rules 5): a flip
  // opens the other side, whatever the sizes before and after.
  const reducing =
    size !== 0n && signed < 0n !== size < 0n && (sizeAfter === 0n || sizeAfter < 0n === size < 0n);
  const spec = market.spec;
  const price = maker.price;
  const buy = maker.side === 'Buy';
  // Reducing: only the solvency guard, which has nothing to measure before the market's first
  // price (an increasing fill passing the check below keeps equity at or above initial margin,
  // so above zero).
  const mark = reducing ? guardMark(market) : null;
  if (reducing && mark === null) return true;
  // Far from the boundary a float estimate with an error bound decides (margin/estimate.ts);
  // near it, the exact figures below.
  const estimate = estimateAfterFill(
    ctx.state,
    account,
    maker.marginMode,
    spec,
    buy,
    qty,
    price,
    feeRate,
  );
  if (mark !== null) {
    if (surelySolvent(estimate)) return true;
    const d = fillEquityDelta(spec, size, buy, qty, price, mark, feeRate);
    return d >= 0n || scopeEquity(ctx.state, account, maker.marginMode, maker.market) + d >= 0n;
  }
  // Margin reserved for auction claims is not there to open with (engine-rules 7), as at placement.
  const reserve = claimReserveOf(account, maker.marginMode);
  if (surelyCovered(estimate, reserve)) return true;
  const quote = quoteAmount(spec, qty, price);
  const fee = feeAmount(spec, qty, price, feeRate);
  const metrics = measureScope(
    ctx.state,
    account,
    maker.marginMode,
    maker.market,
    {
      market: maker.market,
      price,
      sizeDelta: signed,
      cashDelta: (signed > 0n ? -quote : quote) - fee,
      buyQtyDelta: 0n,
      buyNotionalDelta: 0n,
      sellQtyDelta: 0n,
      sellNotionalDelta: 0n,
    },
    true,
  );
  return metrics.equity - metrics.initialMargin - reserve >= 0n;
}

/**
 * Whether a float estimate with an error bound shows the whole fill keeps the taker's scope
 * solvent (margin/estimate.ts); `false` only means the exact guard must look.
 */
function takerSurelySolvent(
  ctx: Ctx,
  market: Market,
  taker: Order,
  qty: bigint,
  price: bigint,
): boolean {
  const spec = market.spec;
  return surelySolvent(
    estimateAfterFill(
      ctx.state,
      ctx.account(taker.account)!,
      taker.marginMode,
      spec,
      taker.side === 'Buy',
      qty,
      price,
      spec.takerFeeRate,
    ),
  );
}

/** The solvency guard's view of a taker's scope in `market` (`solvency.ts`). */
function takerGuard(ctx: Ctx, market: Market, taker: Order, mark: bigint, size: bigint): GuardSide {
  const spec = market.spec;
  return {
    spec,
    mark,
    size,
    buy: taker.side === 'Buy',
    rate: spec.takerFeeRate,
    equity: () =>
      scopeEquity(ctx.state, ctx.account(taker.account)!, taker.marginMode, taker.market),
  };
}

/**
 * FOK (engine-rules section 5): whether the working taker `takerId` would fill completely now
 * up to `limit`. It is matched in a throw-away write session on top of this one: a new edit, so
 * every record it writes is copied and this session's state is untouched (the reducer's own
 * purity), and the answer is exact by construction: the same code decides every rule (self-trade
 * prevention, reduce-only clamps, the solvency guard, maker margin checks, managed siblings).
 * Nothing of the trial is kept: no events, ids or cancelled makers.
 */
export function fillsCompletely(ctx: Ctx, takerId: number, limit: bigint): boolean {
  const trial = new Ctx(ctx.state);
  trial.recordsTrades = false;
  trial.begin(ctx.time);
  const market = trial.writableMarket(trial.order(takerId)!.market);
  matchTaker(trial, market, takerId, limit);
  return trial.events.some(
    (e) =>
      e.type === 'executionReport' &&
      e.kind === 'OrderFilled' &&
      'order' in e &&
      e.order.orderId === takerId,
  );
}

/**
 * Matches the working taker `takerId` against the opposite side of a writable market up to
 * `limit` (its price, or the slippage cap of a market-style trigger order), filling at the
 * makers' prices in price-time order. Stops when the taker is done, the book no longer crosses,
 * or a reduce-only taker has nothing left to reduce. With margin checks on, each fill is
 * clamped by the solvency guard (`solvency.ts`) to the whole lots that keep the taker's scope
 * equity at or above zero at the mark; when not one lot fits, the taker's remainder is
 * cancelled (InsufficientMargin): its limit still crosses, so it must not rest.
 */
export function matchTaker(ctx: Ctx, market: Market, takerId: number, limit: bigint): void {
  const first = ctx.order(takerId)!;
  const buy = first.side === 'Buy';
  const takerAccount = first.account;
  const levels = ownSide(market, !buy);
  const mark = ctx.state.settings.marginChecks ? guardMark(market) : null;
  for (;;) {
    const taker = ctx.order(takerId);
    if (taker === undefined || leavesOf(taker) === 0n || levels.length === 0) return;
    const li = levels.length - 1;
    if (!crosses(buy, limit, (levels[li] as Level).price)) return;
    const level = ctx.writableLevel(market, levels, li);
    let blocked = false;
    let insolvent = false;
    while (level.count > 0) {
      const t = ctx.order(takerId);
      if (t === undefined || leavesOf(t) === 0n) break;
      const makerId = slotId(level, level.head);
      if (makerId === 0) {
        level.head++;
        continue;
      }
      const maker = ctx.order(makerId)!;
      if (maker.account === takerAccount) {
        // Self-trade prevention: the resting order is cancelled, no fill, no fee.
        cancelOrder(ctx, makerId, 'SelfTrade');
        continue;
      }
      let qty = leavesOf(maker) < leavesOf(t) ? leavesOf(maker) : leavesOf(t);
      if (t.reduceOnly) {
        const room = reducibleBy(ctx, t);
        if (room === 0n) {
          blocked = true;
          break;
        }
        if (room < qty) qty = room;
      }
      if (maker.reduceOnly) {
        const room = reducibleBy(ctx, maker);
        if (room === 0n) {
          const s = sizeOf(ctx.account(maker.account)!, maker.market, maker.marginMode);
          cancelOrder(ctx, makerId, s === 0n ? 'PositionClosed' : 'ReduceOnly');
          continue;
        }
        if (room < qty) qty = room;
      }
      if (mark !== null && !takerSurelySolvent(ctx, market, t, qty, level.price)) {
        // The solvency guard: it measures the scope only when the fill costs equity, and clamps
        // only when the scope cannot pay for it.
        const size = sizeOf(ctx.account(takerAccount)!, t.market, t.marginMode);
        const solvent = solventQuantity(takerGuard(ctx, market, t, mark, size), qty, level.price);
        if (solvent === 0n) {
          insolvent = true;
          break;
        }
        qty = solvent;
      }
      if (!makerTierAllows(ctx, market, maker, qty)) {
        cancelOrder(ctx, makerId, 'MaxLeverage');
        continue;
      }
      if (ctx.state.settings.marginChecks && !makerMarginAllows(ctx, market, maker, qty)) {
        cancelOrder(ctx, makerId, 'InsufficientMargin');
        continue;
      }
      settleFill(ctx, market, takerId, makerId, qty, level);
    }
    // The level object is still this session's; find it again (cancels may have shifted it).
    if (level.count === 0) {
      const at = levels.lastIndexOf(level);
      if (at >= 0) levels.splice(at, 1);
    } else {
      compact(ctx, level);
    }
    if (insolvent) {
      // Not one more lot keeps the taker's scope solvent and its limit still crosses.
      cancelOrder(ctx, takerId, 'InsufficientMargin');
      return;
    }
    if (blocked) return;
  }
}

export function makeFill(
  tradeId: number,
  market: number,
  order: Order,
  qty: bigint,
  price: bigint,
  quote: bigint,
  leg: FillLeg,
  fee: bigint,
  liquidity: 'Maker' | 'Taker',
  time: number,
): Fill {
  return {
    tradeId,
    market,
    side: order.side,
    marginMode: order.marginMode,
    quantity: qty,
    price,
    quote,
    liquidity,
    fee,
    realizedPnl: leg.realizedPnl,
    positionBefore: leg.positionBefore,
    positionAfter: leg.positionAfter,
    time,
  };
}

/**
 * Settles one fill between the taker and the maker at the head of `level`: the ledger on both
 * accounts, fees to the fee pool, both orders' FIX quantities, reports and the trade print.
 */
function settleFill(
  ctx: Ctx,
  market: Market,
  takerId: number,
  makerId: number,
  qty: bigint,
  level: Level,
): void {
  const spec = market.spec;
  const price = level.price;
  const maker = ctx.writableOrder(makerId);
  const taker = ctx.writableOrder(takerId);
  const tradeId = ctx.nextTradeId();
  const quote = quoteAmount(spec, qty, price);
  const takerFee = feeAmount(spec, qty, price, spec.takerFeeRate);
  const makerFee = feeAmount(spec, qty, price, spec.makerFeeRate);
  ctx.state.feePool += takerFee + makerFee;

  const makerAccount = ctx.writableAccount(maker.account);
  const makerSigned = maker.side === 'Buy' ? qty : -qty;
  const trade = newStoredTrade(tradeId, spec.id, ctx.time, 'Order', price, qty, quote);
  const makerLeg = applyStoredLeg(
    trade,
    0,
    makerAccount,
    market,
    maker.marginMode,
    makerSigned,
    makerFee,
    makerId,
    'Maker',
  );
  const takerAccount = ctx.writableAccount(taker.account);
  const takerLeg = applyStoredLeg(
    trade,
    1,
    takerAccount,
    market,
    taker.marginMode,
    -makerSigned,
    takerFee,
    takerId,
    'Taker',
  );
  ctx.setLastTrade(market, price);
  storeTrade(ctx, trade);

  level.quantity -= qty;
  if (holdsMargin(maker)) adjustTotals(makerAccount, maker, -qty);
  maker.cumQty += qty;
  maker.filledNotional += qty * price;
  maker.updatedTime = ctx.time;
  const makerDone = leavesOf(maker) === 0n;
  if (makerDone) {
    clearSlot(level, ctx.edit, maker.slot);
    level.count--;
    maker.slot = -1;
  }
  maker.ordStatus = makerDone ? 'Filled' : 'PartiallyFilled';
  taker.cumQty += qty;
  taker.filledNotional += qty * price;
  taker.updatedTime = ctx.time;
  const takerDone = leavesOf(taker) === 0n;
  taker.ordStatus = takerDone ? 'Filled' : 'PartiallyFilled';
  ctx.bookTouched(market);

  ctx.orderReport(
    maker.account,
    makerDone ? 'OrderFilled' : 'OrderPartiallyFilled',
    maker,
    makeFill(tradeId, spec.id, maker, qty, price, quote, makerLeg, makerFee, 'Maker', ctx.time),
  );
  ctx.orderReport(
    taker.account,
    takerDone ? 'OrderFilled' : 'OrderPartiallyFilled',
    taker,
    makeFill(tradeId, spec.id, taker, qty, price, quote, takerLeg, takerFee, 'Taker', ctx.time),
  );
  ctx.emit({
    type: 'trade',
    market: spec.id,
    tradeId,
    price,
    quantity: qty,
    takerSide: taker.side,
    time: ctx.time,
  });
  // Children are sized by this fill before a filled entry's follow-ups may end them, so their
  // final report carries the size the entry's report just implied.
  activateChildren(ctx, maker);
  activateChildren(ctx, taker);
  if (makerDone) afterOrderEnded(ctx, retire(ctx, makerId));
  if (takerDone) afterOrderEnded(ctx, retire(ctx, takerId));
  ctx.accountChanged(maker.account);
  ctx.accountChanged(taker.account);
  if (hasGuarded(makerAccount, spec.id, maker.marginMode)) {
    ctx.positionChanged(maker.account, spec.id, maker.marginMode);
  }
  if (hasGuarded(ctx.account(taker.account)!, spec.id, taker.marginMode)) {
    ctx.positionChanged(taker.account, spec.id, taker.marginMode);
  }
}

/**
 * The maker fee rate of a fill against a system taker (a liquidation's market step): the maker
 * fee, but no rebate. A rebate is paid out of the taker's fee, and the system side pays none
 * (the liquidated scope pays its penalty to the insurance fund), so a rebate here would come out
 * of other fills' fees and could take the fee pool below zero.
 */
export function systemFillMakerRate(spec: Market['spec']): bigint {
  return spec.makerFeeRate < 0n ? 0n : spec.makerFeeRate;
}

/** The maker side of a fill against a system taker, as {@link fillRestingMaker} returns it. */
export interface MakerFillResult {
  readonly price: bigint;
  readonly quote: bigint;
  /** Signed size change of the maker's position. */
  readonly makerSigned: bigint;
  readonly leg: TradeLeg;
}

/**
 * Fills `qty` of the resting order `makerId` against a system taker (a liquidation's market
 * step) at the maker's price: the maker's ledger and fee, its level and hold totals, FIX
 * quantities, report and follow-ups exactly as in a normal fill. The caller applies the system
 * side, records the trade and prints it.
 */
export function fillRestingMaker(
  ctx: Ctx,
  market: Market,
  makerId: number,
  qty: bigint,
  tradeId: number,
): MakerFillResult {
  const spec = market.spec;
  const maker = ctx.writableOrder(makerId);
  const price = maker.price;
  const quote = quoteAmount(spec, qty, price);
  const makerFee = feeAmount(spec, qty, price, systemFillMakerRate(spec));
  ctx.state.feePool += makerFee;
  const makerAccount = ctx.writableAccount(maker.account);
  const makerSigned = maker.side === 'Buy' ? qty : -qty;
  const traded = applyTradedLeg(
    makerAccount,
    market,
    maker.marginMode,
    makerSigned,
    price,
    quote,
    makerFee,
    ctx.time,
    makerId,
    'Maker',
  );
  const leg = traded.fill;
  ctx.setLastTrade(market, price);
  const bids = maker.side === 'Buy';
  const levels = ownSide(market, bids);
  const li = findLevel(levels, price, bids);
  const level = ctx.writableLevel(market, levels, li);
  level.quantity -= qty;
  if (holdsMargin(maker)) adjustTotals(makerAccount, maker, -qty);
  maker.cumQty += qty;
  maker.filledNotional += qty * price;
  maker.updatedTime = ctx.time;
  const done = leavesOf(maker) === 0n;
  if (done) {
    clearSlot(level, ctx.edit, maker.slot);
    level.count--;
    maker.slot = -1;
    if (level.count === 0) levels.splice(li, 1);
    else compact(ctx, level);
  }
  maker.ordStatus = done ? 'Filled' : 'PartiallyFilled';
  ctx.bookTouched(market);
  ctx.orderReport(
    maker.account,
    done ? 'OrderFilled' : 'OrderPartiallyFilled',
    maker,
    makeFill(tradeId, spec.id, maker, qty, price, quote, leg, makerFee, 'Maker', ctx.time),
  );
  activateChildren(ctx, maker); // before the follow-ups, as in a normal fill
  if (done) afterOrderEnded(ctx, retire(ctx, makerId));
  ctx.accountChanged(maker.account);
  if (hasGuarded(ctx.account(maker.account)!, spec.id, maker.marginMode)) {
    ctx.positionChanged(maker.account, spec.id, maker.marginMode);
  }
  return { price, quote, makerSigned, leg: traded.trade };
}
