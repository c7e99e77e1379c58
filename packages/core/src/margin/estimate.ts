/**
 * Float estimates of a scope's margin figures with a proven error bound: a margin decision far
 * from its boundary is made without a single bigint division, and one near it falls through to
 * the exact code (`scope.ts`, `risk/health.ts`, `orders/solvency.ts`), which alone ever refuses
 * or liquidates. A filter may only say "surely allowed" or "surely healthy" when the exact
 * figures would say so too, so the engine's decisions are exactly those of the bigint rules.
 *
 * Why the bound holds: every exact term is a bigint quotient rounded once (by less than 1
 * micro-unit), and its float estimate comes from at most eight correctly rounded operations on
 * correctly rounded inputs (`Number` of a bigint, products, quotients), so it is within
 * 8 x 2^-53 of the term's magnitude; adding n such terms in floats rounds n more times, each
 * by at most 2^-53 of the magnitudes summed so far. So a figure's float error is below
 * (8 + n) x 2^-53 x M, M the sum of the magnitudes of its terms (and of the intermediate
 * products a difference of them cancels). {@link relativeError} allows eight times that, and the
 * bound adds one micro-unit per rounded term and two more.
 *
 * @module
 */
import type { Account, EngineState, MarginMode } from '../engine/types.js';
import { type Instrument, RATE_SCALE } from '../instruments/instrument.js';
import { claimReserveOf, leverageOf, valuationPrice } from './scope.js';

/**
 * Error allowance per unit of magnitude of a figure built from `terms` float terms: eight times
 * the worst case (see the module comment), with room for the few operations that combine them.
 */
function relativeError(terms: number): number {
  return (terms + 16) * 2 ** -50;
}

const RATE = Number(RATE_SCALE);
/** `Number(notionalScale(spec))` by quantity decimals (0..18): correctly rounded constants. */
const SCALES: readonly number[] = Array.from({ length: 19 }, (_, qd) =>
  Number(10n ** BigInt(qd + 12)),
);

/** The float of an instrument's notional scale (raw quantity x raw price per micro-unit). */
function scaleOf(spec: Instrument): number {
  return SCALES[spec.quantityDecimals] as number;
}

/** A float estimate of a scope's figures (micro-units); each is within `error` of the exact. */
export interface ScopeEstimate {
  /** Cross `AVc` or isolated `Ei`, before rounding each position value down. */
  equity: number;
  initialMargin: number;
  /** Only when asked for ({@link EstimateParts.maintenance}), else 0. */
  maintenance: number;
  /**
   * The holds of every resting order counted at its full notional: an upper bound of the scope's
   * order holds, whatever the positions reduce of them (`sideHoldNotional`). 0 when not asked for
   * ({@link EstimateParts.holds}).
   */
  holdFull: number;
  /** Bound on |estimate - exact| of each figure and of any sum or difference of them. */
  error: number;
}

/** A hypothetical fill in the estimate: one position's size and the pool's cash change. */
export interface EstimateChange {
  readonly market: number;
  /** Values the changed position where its market has neither a mark nor a trade yet. */
  readonly price: bigint;
  readonly sizeDelta: bigint;
  /** The cash change, itself a float estimate within `cashError`. */
  readonly cashDelta: number;
  readonly cashError: number;
}

/** What {@link estimateScope} measures beyond equity and initial margin. */
export interface EstimateParts {
  /** Maintenance margin (liquidation checks). Default false: `maintenance` is 0. */
  readonly maintenance?: boolean;
  /**
   * Order holds at full notional (placement). Default true; a decision that does not read them
   * (a fill's margin or solvency, a liquidation check) leaves them out, which also keeps their
   * magnitude out of the error bound.
   */
  readonly holds?: boolean;
}

/**
 * Estimates the cross scope, or the isolated scope of `market`, optionally after `change`. Order
 * holds are counted at full notional from the stored totals (an upper bound that stays one when
 * `change` only takes resting quantity away).
 */
export function estimateScope(
  state: EngineState,
  account: Account,
  mode: MarginMode,
  market: number,
  change?: EstimateChange,
  parts: EstimateParts = {},
): ScopeEstimate {
  const maintenance = parts.maintenance === true;
  const cross = mode === 'Cross';
  let cash = cross ? account.crossCash : 0n;
  if (!cross) {
    for (const pool of account.isolated) if (pool.market === market) cash = pool.cash;
  }
  let equity = Number(cash);
  let magnitude = Math.abs(equity);
  let terms = 0;
  let extra = 0;
  if (change !== undefined) {
    equity += change.cashDelta;
    magnitude += Math.abs(change.cashDelta);
    extra = change.cashError;
  }
  let im = 0;
  let mm = 0;
  let hold = 0;
  let changeSeen = change === undefined || (!cross && change.market !== market);
  for (const p of account.positions) {
    if (p.mode !== mode || (!cross && p.market !== market)) continue;
    let size = p.size;
    if (change !== undefined && p.market === change.market) {
      size += change.sizeDelta;
      changeSeen = true;
    }
    if (size === 0n) continue;
    const m = state.markets.get(p.market)!;
    const mark = valuationPrice(m) ?? (change !== undefined ? change.price : 0n);
    const r = positionTerms(m.spec, size, mark, leverageOf(account, m.spec, mode), maintenance);
    equity += r.value;
    im += r.im;
    mm += r.mm;
    magnitude += r.magnitude;
    terms += 3;
  }
  if (!changeSeen && change !== undefined && change.sizeDelta !== 0n) {
    const m = state.markets.get(change.market)!;
    const mark = valuationPrice(m) ?? change.price;
    const r = positionTerms(
      m.spec,
      change.sizeDelta,
      mark,
      leverageOf(account, m.spec, mode),
      maintenance,
    );
    equity += r.value;
    im += r.im;
    mm += r.mm;
    magnitude += r.magnitude;
    terms += 3;
  }
  for (const t of parts.holds === false ? [] : account.orderTotals) {
    if (t.mode !== mode || (!cross && t.market !== market)) continue;
    if (t.buyNotional === 0n && t.sellNotional === 0n) continue;
    const spec = state.markets.get(t.market)!.spec;
    const h =
      ((Number(t.buyNotional) + Number(t.sellNotional)) * 100) /
      (scaleOf(spec) * leverageOf(account, spec, mode));
    hold += h;
    magnitude += Math.abs(h);
    terms += 2;
  }
  return {
    equity,
    initialMargin: im,
    maintenance: mm,
    holdFull: hold,
    error: magnitude * relativeError(terms) + terms + 2 + extra,
  };
}

/** One position's value `s x M`, initial margin and (when asked) maintenance margin, floats. */
function positionTerms(
  spec: Instrument,
  size: bigint,
  mark: bigint,
  leverage: number,
  maintenance: boolean,
): { value: number; im: number; mm: number; magnitude: number } {
  const value = (Number(size) * Number(mark)) / scaleOf(spec);
  const notional = Math.abs(value);
  const im = (notional * 100) / leverage;
  let mm = 0;
  if (maintenance) {
    const tiers = spec.tiers;
    let tier = tiers[0]!;
    for (let i = 1; i < tiers.length; i++) {
      const t = tiers[i]!;
      if (notional >= Number(t.notionalFloor)) tier = t;
      else break;
    }
    // Maintenance is continuous across tier floors (setInstrument takes only the tier tables
    // buildInstrument derives, whose deductions make it so), so a tier picked wrongly by a
    // float at a floor changes it by far less than the error bound.
    mm = (notional * Number(tier.maintenanceMarginRate) - Number(tier.deduction)) / RATE;
  }
  return { value, im, mm, magnitude: notional + Math.abs(im) + Math.abs(mm) };
}

/**
 * A fill's cash leg and fee as the ledger rounds them (`quoteAmount`, `feeAmount`), estimated:
 * the signed cash change `-quote - fee` for a buy, `quote - fee` for a sell, and its error bound.
 */
export function estimateFillCash(
  spec: Instrument,
  buy: boolean,
  qty: bigint,
  price: bigint,
  rate: bigint,
): { cash: number; error: number } {
  const quote = (Number(qty) * Number(price)) / scaleOf(spec);
  const fee = (quote * Number(rate)) / RATE;
  return {
    cash: (buy ? -quote : quote) - fee,
    error: (quote + Math.abs(fee)) * relativeError(2) + 2,
  };
}

/**
 * Whether an order of `leaves` at `price` surely fits the scope's available-to-open at placement
 * (`checkHold` would accept it): equity less initial margin, less every resting order's hold at
 * full notional, less this order's, less the cross pool's claim reservations, stays above zero
 * by more than the error. `false` means only "not sure".
 */
export function holdSurelyFits(
  state: EngineState,
  account: Account,
  spec: Instrument,
  mode: MarginMode,
  leaves: bigint,
  price: bigint,
): boolean {
  const e = estimateScope(state, account, mode, spec.id);
  const hold =
    (Number(leaves) * Number(price) * 100) / (scaleOf(spec) * leverageOf(account, spec, mode));
  const reserve = Number(claimReserveOf(account, mode));
  const room = e.equity - e.initialMargin - e.holdFull - hold - reserve;
  return room > e.error + (hold + Math.abs(reserve)) * relativeError(2) + 2;
}

/**
 * A fill of `qty` at `price` for a scope's order of side `buy` and fee rate `rate`, estimated:
 * the scope after it (cash, the position's size), with its resting orders as they are now (the
 * fill only takes resting quantity away, so their full-notional hold stays an upper bound).
 */
export function estimateAfterFill(
  state: EngineState,
  account: Account,
  mode: MarginMode,
  spec: Instrument,
  buy: boolean,
  qty: bigint,
  price: bigint,
  rate: bigint,
): ScopeEstimate {
  const cash = estimateFillCash(spec, buy, qty, price, rate);
  // Both decisions after a fill (initial margin, solvency) leave order holds out.
  return estimateScope(
    state,
    account,
    mode,
    spec.id,
    {
      market: spec.id,
      price,
      sizeDelta: buy ? qty : -qty,
      cashDelta: cash.cash,
      cashError: cash.error,
    },
    { holds: false },
  );
}

/**
 * Whether the estimate surely leaves the scope at or above initial margin after a maker's fill
 * (`makerMarginAllows`): equity - IM - `reserve` (the cross pool's auction-claim reservations)
 * at or above zero. Order holds do not count there.
 */
export function surelyCovered(e: ScopeEstimate, reserve: bigint): boolean {
  const r = Number(reserve);
  return e.equity - e.initialMargin - r > e.error + Math.abs(r) * relativeError(1) + 1;
}

/** Whether the estimate surely leaves equity at or above zero (the solvency guard's rule). */
export function surelySolvent(e: ScopeEstimate): boolean {
  return e.equity > e.error;
}

/** Whether the estimate surely leaves equity at or above maintenance margin (not liquidatable). */
export function surelyHealthy(e: ScopeEstimate): boolean {
  return e.equity - e.maintenance > e.error;
}
