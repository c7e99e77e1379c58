/**
 * Margin arithmetic of one scope: the cross pool with its cross positions, or one market's
 * isolated pool with its isolated position (engine-rules sections 3 and 4).
 *
 * Decisions round in the venue's favour at micro-unit resolution: equity (`s x M`) rounds toward
 * minus infinity, requirements (initial margin, maintenance margin, order holds) round up. The
 * exact rationals are kept for displayed prices (`risk/liquidation-price.ts`).
 *
 * @module
 */

import { totalsShifted } from '../engine/records.js';
import type {
  Account,
  EngineState,
  IsolatedPool,
  MarginMode,
  Market,
  Order,
  OrderTotals,
  Position,
} from '../engine/types.js';
import { InvariantError } from '../errors.js';
import {
  type Instrument,
  type MarginTier,
  notionalScale,
  RATE_SCALE,
} from '../instruments/instrument.js';
import { formatCollateral } from '../units/decimal.js';
import { divCeil, divFloor } from '../units/rounding.js';

/** Index of a (market, mode) pair in an account's small arrays, or -1. */
export function findScope<T extends { market: number; mode: MarginMode }>(
  items: readonly T[],
  market: number,
  mode: MarginMode,
): number {
  for (let i = 0; i < items.length; i++) {
    const it = items[i] as T;
    if (it.market === market && it.mode === mode) return i;
  }
  return -1;
}

/** The account's position in (market, mode), or `undefined` when flat and never opened. */
export function positionOf(
  account: Account,
  market: number,
  mode: MarginMode,
): Position | undefined {
  const i = findScope(account.positions, market, mode);
  return i < 0 ? undefined : account.positions[i];
}

/**
 * Margin of a scope reserved for liquidation-auction claims (engine-rules 7): claims settle into
 * the cross pool, so only it holds reservations. Not there to open with, withdraw or move.
 */
export function claimReserveOf(account: Account, mode: MarginMode): bigint {
  return mode === 'Cross' ? account.claimReserve : 0n;
}

/** Signed size of the account's position in (market, mode); 0 when none. */
export function sizeOf(account: Account, market: number, mode: MarginMode): bigint {
  return positionOf(account, market, mode)?.size ?? 0n;
}

/**
 * Leverage (x100) of (market, mode): the account's setting or the instrument default, never above
 * the instrument's maximum (engine-rules 1: 100 .. maxLeverage x 100). An operator who lowers the
 * maximum lowers every setting above it with it, for margin and the summary alike; the stored
 * setting stays as the account made it.
 */
export function leverageOf(account: Account, spec: Instrument, mode: MarginMode): number {
  for (const l of account.leverage) {
    if (l.market === spec.id && l.mode === mode)
      return l.leverage > spec.maxLeverage ? spec.maxLeverage : l.leverage;
  }
  return spec.defaultLeverage;
}

/** Cash of the isolated pool of `market`; 0 when it was never funded. */
export function isolatedCash(account: Account, market: number): bigint {
  for (const p of account.isolated) if (p.market === market) return p.cash;
  return 0n;
}

/** Resting-order totals of (market, mode), or zero totals. */
export function totalsOf(account: Account, market: number, mode: MarginMode): OrderTotals {
  const i = findScope(account.orderTotals, market, mode);
  return i < 0 ? zeroTotals(market, mode) : (account.orderTotals[i] as OrderTotals);
}

/** Totals with nothing resting. */
export function zeroTotals(market: number, mode: MarginMode): OrderTotals {
  return {
    market,
    mode,
    buyQty: 0n,
    buyNotional: 0n,
    sellQty: 0n,
    sellNotional: 0n,
    buyMaxLeaves: 0n,
    sellMaxLeaves: 0n,
    guardedCount: 0,
  };
}

/** The price positions are valued at: the mark, else the last trade; `null` before either. */
export function valuationPrice(market: Market): bigint | null {
  return market.prices.mark ?? market.lastTrade;
}

/** `s x M` in micro-units, rounded toward minus infinity (equity never overstated). */
export function positionValueFloor(spec: Instrument, size: bigint, mark: bigint): bigint {
  return divFloor(size * mark, notionalScale(spec));
}

/** Initial margin `|s| x M / L`, micro-units, rounded up. */
export function initialMargin(
  spec: Instrument,
  size: bigint,
  mark: bigint,
  leverage: number,
): bigint {
  const abs = size < 0n ? -size : size;
  return divCeil(abs * mark * 100n, notionalScale(spec) * BigInt(leverage));
}

/**
 * The margin tier of a position of `size` valued at `price`: the last one whose notional floor
 * it reaches (engine-rules section 2, research 1.2).
 */
export function tierOf(spec: Instrument, size: bigint, price: bigint): MarginTier {
  if (spec.tiers.length === 1) return spec.tiers[0]!;
  const abs = size < 0n ? -size : size;
  const rawNotional = abs * price; // scale: micro x notionalScale
  const scale = notionalScale(spec);
  let tier = spec.tiers[0]!;
  for (let i = 1; i < spec.tiers.length; i++) {
    const t = spec.tiers[i]!;
    if (rawNotional >= t.notionalFloor * scale) tier = t;
    else break;
  }
  return tier;
}

/**
 * Why `leverage` (x100) is too high for a position of `size` valued at `price`: its margin tier
 * allows less (research 1.2); `undefined` when it fits.
 */
export function tierLeverageProblem(
  spec: Instrument,
  leverage: number,
  size: bigint,
  price: bigint,
): string | undefined {
  const tier = tierOf(spec, size, price);
  if (leverage <= tier.maxLeverage) return undefined;
  return `leverage ${leverage / 100}x is above the ${tier.maxLeverage / 100}x maximum of ${spec.symbol} positions from ${formatCollateral(tier.notionalFloor)} of notional`;
}

/**
 * Whether some position could put `leverage` (x100) above its margin tier's maximum: tiers only
 * lower the maximum, so not when it fits the last tier (an instrument without tiers: its maximum).
 */
export function tierCanCap(spec: Instrument, leverage: number): boolean {
  return leverage > (spec.tiers[spec.tiers.length - 1] as MarginTier).maxLeverage;
}

/** Why `leverage` (x100) is above the instrument's maximum; `undefined` when it is not. */
export function maxLeverageProblem(spec: Instrument, leverage: number): string | undefined {
  if (leverage <= spec.maxLeverage) return undefined;
  return `leverage ${leverage / 100}x is above the ${spec.symbol} maximum ${spec.maxLeverage / 100}x`;
}

/**
 * Why `leverage` (x100) is too high once the position `size` has bought (`buy`) or sold
 * `opening` more, valued at `price`: the margin tier it then sits in allows less (research 1.2).
 * `undefined` when it fits, and when those fills leave it flat or on the other side (they only
 * reduce it). Checked at placement, when a trigger fires, at a maker fill, a claim and a raise
 * of leverage.
 */
export function tierProblemAfter(
  spec: Instrument,
  leverage: number,
  size: bigint,
  buy: boolean,
  opening: bigint,
  price: bigint,
): string | undefined {
  if (!tierCanCap(spec, leverage)) return undefined;
  const after = size + (buy ? opening : -opening);
  if (buy ? after <= 0n : after >= 0n) return undefined;
  return tierLeverageProblem(spec, leverage, after, price);
}

/**
 * Leaves quantity of the scope's resting orders on one side that hold margin (not reduce-only):
 * the orders engine-rules 4 assumes fill first.
 */
export function restingOpenQty(
  account: Account,
  market: number,
  mode: MarginMode,
  buy: boolean,
): bigint {
  const t = account.orderTotals[findScope(account.orderTotals, market, mode)];
  if (t === undefined) return 0n;
  return buy ? t.buyQty : t.sellQty;
}

/** Maintenance margin `|s| x M x mmr_t - deduction_t`, micro-units, rounded up. */
export function maintenanceMargin(spec: Instrument, size: bigint, mark: bigint): bigint {
  const abs = size < 0n ? -size : size;
  if (abs === 0n) return 0n;
  const scale = notionalScale(spec);
  const rawNotional = abs * mark; // scale: micro x `scale`
  const tier = tierOf(spec, abs, mark);
  return divCeil(
    rawNotional * tier.maintenanceMarginRate - tier.deduction * scale,
    scale * RATE_SCALE,
  );
}

/** Order hold in micro-units for a notional (raw x raw) at leverage x100, rounded up. */
export function holdForNotional(spec: Instrument, notional: bigint, leverage: number): bigint {
  return notional === 0n ? 0n : divCeil(notional * 100n, notionalScale(spec) * BigInt(leverage));
}

/**
 * One order as a hypothetical sees it: an order being placed, replaced or triggered, with the
 * leaves and price it would rest with. It replaces the resting order with the same id, if any.
 */
export interface HoldOverride {
  readonly orderId: number;
  readonly buy: boolean;
  readonly leaves: bigint;
  readonly price: bigint;
}

/**
 * The notional (raw x raw) that resting orders of one side hold. Engine-rules section 4: each
 * order holds its increasing quantity assuming every other resting order of its side fills first.
 * Orders on the position's side, or with a flat position, increase in full. `override` counts an
 * order that is not resting yet (or rests with other leaves): `totals` must already include it.
 */
export function sideHoldNotional(
  state: EngineState,
  account: Account,
  totals: OrderTotals,
  size: bigint,
  buy: boolean,
  override?: HoldOverride,
): bigint {
  const qty = buy ? totals.buyQty : totals.sellQty;
  const notional = buy ? totals.buyNotional : totals.sellNotional;
  if (qty === 0n) return 0n;
  const signed = buy ? size : -size; // the position seen from this side: >= 0 means increasing
  if (signed >= 0n) return notional;
  const k = signed + qty; // position (seen from this side) once the whole side has filled
  if (k <= 0n) return 0n;
  // Partly reducing: each order increases by min(its leaves, k). The walk below sees the resting
  // orders as they are in `state` (plus the override), whatever `totals` assumes; when k covers
  // every one of their leaves (the scope's stored bound), each holds its full leaves and the sum
  // is the notional of `totals`, exactly.
  const extra = override !== undefined && override.buy === buy ? override : undefined;
  const at = findScope(account.orderTotals, totals.market, totals.mode);
  const stored = at < 0 ? undefined : (account.orderTotals[at] as OrderTotals);
  let bound = stored === undefined ? 0n : buy ? stored.buyMaxLeaves : stored.sellMaxLeaves;
  if (extra !== undefined && extra.leaves > bound) bound = extra.leaves;
  if (k >= bound) return notional;
  let held = extra === undefined ? 0n : (extra.leaves < k ? extra.leaves : k) * extra.price;
  if (stored === undefined) return held; // no resting order in the scope
  account.orders.forEach((id) => {
    if (id === extra?.orderId) return;
    const o = state.orders.get(id)!;
    if (!holdsMargin(o) || o.market !== totals.market || o.marginMode !== totals.mode) return;
    if ((o.side === 'Buy') !== buy) return;
    const leaves = o.quantity - o.cumQty;
    held += (leaves < k ? leaves : k) * o.price;
  });
  return held;
}

/** The account's working orders, oldest first. */
export function accountOrders(state: EngineState, account: Account): Order[] {
  const out: Order[] = new Array(account.orders.size);
  let i = 0;
  account.orders.forEach((id) => {
    out[i++] = state.orders.get(id)!;
  });
  return out;
}

/** Whether an order counts in resting-order totals: it rests on the book and may increase. */
export function holdsMargin(order: Order): boolean {
  return order.slot >= 0 && !order.reduceOnly;
}

/** The hold of one (market, mode) scope in micro-units. */
export function scopeHold(
  state: EngineState,
  account: Account,
  spec: Instrument,
  mode: MarginMode,
  totals: OrderTotals,
  size: bigint,
  override?: HoldOverride,
): bigint {
  const leverage = leverageOf(account, spec, mode);
  const buy = sideHoldNotional(state, account, totals, size, true, override);
  const sell = sideHoldNotional(state, account, totals, size, false, override);
  return holdForNotional(spec, buy, leverage) + holdForNotional(spec, sell, leverage);
}

/** Equity and requirements of a scope, micro-units. */
export interface ScopeMetrics {
  /** Cross: `AVc = Rc + sum(s x M)`; isolated: `Ei = Ri + s x M`. */
  readonly equity: bigint;
  readonly initialMargin: bigint;
  /**
   * Initial margin at each position's leverage capped by the maximum of the margin tier its
   * notional is in (research 1.2): what a withdrawal or a transfer must leave. A setting allowed
   * when the position was opened below a tier's floor can be far above what the tier allows once
   * the mark has carried it past, and margin at that setting can be below the tier's maintenance
   * margin. At least `initialMargin`; equal to it in `lite` measures.
   */
  readonly keepMargin: bigint;
  readonly maintenanceMargin: bigint;
  readonly hold: bigint;
  /** Sum of `|s| x M`, micro-units rounded up (it feeds the 10% withdrawal floor). */
  readonly notional: bigint;
  /** Whether the scope holds any open position. */
  readonly hasPosition: boolean;
}

/**
 * How much more margin the resting orders of one (market, mode) scope would hold once `order`
 * rests with its leaves and price, in place of the resting order with its id (a replace), if any
 * (negative when they would hold less).
 */
export function holdIncrease(
  state: EngineState,
  account: Account,
  spec: Instrument,
  mode: MarginMode,
  order: HoldOverride,
): bigint {
  const t = totalsOf(account, spec.id, mode);
  const size = sizeOf(account, spec.id, mode);
  const resting = state.orders.get(order.orderId);
  const replaced = resting !== undefined && holdsMargin(resting) ? resting : undefined;
  const replacedLeaves = replaced === undefined ? 0n : replaced.quantity - replaced.cumQty;
  const qty = order.leaves - replacedLeaves;
  const notional = order.leaves * order.price - replacedLeaves * (replaced?.price ?? 0n);
  const after = order.buy
    ? totalsShifted(t, qty, notional, 0n, 0n)
    : totalsShifted(t, 0n, 0n, qty, notional);
  return (
    scopeHold(state, account, spec, mode, after, size, order) -
    scopeHold(state, account, spec, mode, t, size)
  );
}

/** A hypothetical change applied before measuring a scope (used for match-time checks). */
export interface ScopeChange {
  readonly market: number;
  /**
   * The price of the hypothetical fill: positions in `market` are valued at it while the market
   * has neither a mark nor a last trade yet (its first fill sets the last trade).
   */
  readonly price: bigint;
  readonly sizeDelta: bigint;
  readonly cashDelta: bigint;
  /** Change of the resting buy (or sell) quantity and notional of (market, mode). */
  readonly buyQtyDelta: bigint;
  readonly buyNotionalDelta: bigint;
  readonly sellQtyDelta: bigint;
  readonly sellNotionalDelta: bigint;
}

/** Measures the cross scope, or the isolated scope of `market`, optionally after `change`. */
export function measureScope(
  state: EngineState,
  account: Account,
  mode: MarginMode,
  market: number,
  change?: ScopeChange,
  lite = false,
): ScopeMetrics {
  let equity = mode === 'Cross' ? account.crossCash : isolatedCash(account, market);
  if (change !== undefined) equity += change.cashDelta;
  let im = 0n;
  let keep = 0n;
  let mm = 0n;
  let hold = 0n;
  let notional = 0n;
  let hasPosition = false;
  const seen = change === undefined ? -1 : change.market;
  let seenChange = false;
  for (const p of account.positions) {
    if (p.mode !== mode || (mode === 'Isolated' && p.market !== market)) continue;
    const m = state.markets.get(p.market)!;
    const isChanged = p.market === seen;
    if (isChanged) seenChange = true;
    const size = isChanged ? p.size + change!.sizeDelta : p.size;
    const totals = applyTotals(totalsOf(account, p.market, mode), isChanged ? change : undefined);
    const r = scopePart(
      state,
      account,
      m,
      mode,
      size,
      totals,
      lite,
      isChanged ? change : undefined,
    );
    equity += r.value;
    im += r.im;
    keep += r.keep;
    mm += r.mm;
    hold += r.hold;
    notional += r.notional;
    if (size !== 0n) hasPosition = true;
  }
  // Scopes with orders but no position record yet.
  for (const t of account.orderTotals) {
    if (t.mode !== mode || (mode === 'Isolated' && t.market !== market)) continue;
    if (positionOf(account, t.market, mode) !== undefined) continue;
    const isChanged = t.market === seen;
    if (isChanged) seenChange = true;
    const m = state.markets.get(t.market)!;
    const size = isChanged ? change!.sizeDelta : 0n;
    const r = scopePart(
      state,
      account,
      m,
      mode,
      size,
      applyTotals(t, isChanged ? change : undefined),
      lite,
      isChanged ? change : undefined,
    );
    equity += r.value;
    im += r.im;
    keep += r.keep;
    mm += r.mm;
    hold += r.hold;
    notional += r.notional;
    if (size !== 0n) hasPosition = true;
  }
  if (change !== undefined && !seenChange && (mode === 'Cross' || change.market === market)) {
    const m = state.markets.get(change.market)!;
    const r = scopePart(
      state,
      account,
      m,
      mode,
      change.sizeDelta,
      applyTotals(zeroTotals(change.market, mode), change),
      lite,
      change,
    );
    equity += r.value;
    im += r.im;
    keep += r.keep;
    mm += r.mm;
    hold += r.hold;
    notional += r.notional;
    if (change.sizeDelta !== 0n) hasPosition = true;
  }
  return {
    equity,
    initialMargin: im,
    keepMargin: keep,
    maintenanceMargin: mm,
    hold,
    notional,
    hasPosition,
  };
}

function applyTotals(t: OrderTotals, change: ScopeChange | undefined): OrderTotals {
  if (change === undefined) return t;
  return totalsShifted(
    t,
    change.buyQtyDelta,
    change.buyNotionalDelta,
    change.sellQtyDelta,
    change.sellNotionalDelta,
  );
}

function scopePart(
  state: EngineState,
  account: Account,
  market: Market,
  mode: MarginMode,
  size: bigint,
  totals: OrderTotals,
  lite: boolean,
  change?: ScopeChange,
): { value: bigint; im: bigint; keep: bigint; mm: bigint; hold: bigint; notional: bigint } {
  const spec = market.spec;
  const hold = scopeHold(state, account, spec, mode, totals, size);
  if (size === 0n) return { value: 0n, im: 0n, keep: 0n, mm: 0n, hold, notional: 0n };
  // A position exists only after a fill set the last trade; a hypothetical one in a market that
  // never traded is valued at its own fill price.
  const mark = valuationPrice(market) ?? change?.price;
  if (mark === undefined) throw new InvariantError(`a ${spec.symbol} position without any price`);
  const abs = size < 0n ? -size : size;
  const leverage = leverageOf(account, spec, mode);
  const im = initialMargin(spec, size, mark, leverage);
  // Pre-trade checks cap leverage by tier at placement themselves and need only `im` (`lite`).
  let keep = im;
  if (!lite && tierCanCap(spec, leverage)) {
    const tierMax = tierOf(spec, size, mark).maxLeverage;
    if (tierMax < leverage) keep = initialMargin(spec, size, mark, tierMax);
  }
  return {
    value: positionValueFloor(spec, size, mark),
    im,
    keep,
    // Pre-trade checks need only equity, IM and holds (`lite`).
    mm: lite ? 0n : maintenanceMargin(spec, size, mark),
    hold,
    notional: lite ? 0n : divCeil(abs * mark, notionalScale(spec)),
  };
}

/** Available to open: `equity - IM - hold` (engine-rules section 4). May be negative. */
export function availableToOpen(m: ScopeMetrics): bigint {
  return m.equity - m.initialMargin - m.hold;
}

/**
 * What may leave the scope without trading (withdrawal or transfer): equity minus
 * `max(IM + hold, 10% of notional)`, never below 0, rounded down (engine-rules section 4).
 */
export function transferableOf(m: ScopeMetrics): bigint {
  const tenPercent = divCeil(m.notional, 10n);
  // Initial margin with each leverage capped by its position's margin tier (`keepMargin`).
  const required = m.keepMargin + m.hold > tenPercent ? m.keepMargin + m.hold : tenPercent;
  const free = m.equity - required;
  return free > 0n ? free : 0n;
}

/** Replaces an isolated pool's cash in a writable account. */
export function setIsolatedCash(account: Account, market: number, cash: bigint): void {
  for (let i = 0; i < account.isolated.length; i++) {
    if ((account.isolated[i] as IsolatedPool).market === market) {
      account.isolated[i] = { market, cash };
      return;
    }
  }
  account.isolated.push({ market, cash });
}
