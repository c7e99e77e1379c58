/**
 * The solvency guard of order fills (our rule beyond engine-rules section 5, see
 * docs/risk-engine.md): no order fill may leave the margin scope of either side (the cross pool
 * with its cross positions, or one isolated pool with its position) with equity below zero at
 * the mark. Reducing fills are otherwise exempt from every margin check, so without it a
 * reduce-only order could close far below the mark and leave a deficit no liquidation covers.
 *
 * A fill changes exactly one position of the scope, so its effect on the scope's equity
 * (`cash + sum floor(s x M)`, as `measureScope` and `scopeRisk` count it) is exact and cheap:
 * `floor((s + d) x M) - floor(s x M) - d x p (the fill's rounded quote) - fee`. Only when that
 * change is negative (a price worse than the mark for that side, or a fee) is the scope's equity
 * measured. A fill that does not lower equity is always allowed.
 *
 * @module
 */
import type { Account, EngineState, MarginMode, Market } from '../engine/types.js';
import { type Instrument, notionalScale, RATE_SCALE } from '../instruments/instrument.js';
import { feeAmount, quoteAmount } from '../margin/ledger.js';
import { isolatedCash, positionValueFloor, valuationPrice } from '../margin/scope.js';
import { divFloor } from '../units/rounding.js';

/** Equity of a scope at the marks: its pool's cash plus `floor(s x M)` per position. */
export function scopeEquity(
  state: EngineState,
  account: Account,
  mode: MarginMode,
  market: number,
): bigint {
  let equity = mode === 'Cross' ? account.crossCash : isolatedCash(account, market);
  for (const p of account.positions) {
    if (p.mode !== mode || (mode === 'Isolated' && p.market !== market)) continue;
    const m = state.markets.get(p.market)!;
    equity += positionValueFloor(m.spec, p.size, valuationPrice(m)!);
  }
  return equity;
}

/**
 * Exact change of a scope's equity from one fill of `qty` (buy or sell) at `price` and fee rate
 * `rate`, for the scope's position `size` in that market valued at `mark`: the ledger's own
 * rounding (quote half-even, fee up for a charge, a rebate toward zero).
 */
export function fillEquityDelta(
  spec: Instrument,
  size: bigint,
  buy: boolean,
  qty: bigint,
  price: bigint,
  mark: bigint,
  rate: bigint,
): bigint {
  const signed = buy ? qty : -qty;
  const quote = quoteAmount(spec, qty, price);
  return (
    positionValueFloor(spec, size + signed, mark) -
    positionValueFloor(spec, size, mark) +
    (buy ? -quote : quote) -
    feeAmount(spec, qty, price, rate)
  );
}

/**
 * One side of a fill as the guard sees it. `size` is the scope's position in the market before
 * the fill; `equity` gives the scope's equity before the fill (called only when needed).
 */
export interface GuardSide {
  readonly spec: Instrument;
  readonly mark: bigint;
  readonly size: bigint;
  readonly buy: boolean;
  readonly rate: bigint;
  readonly equity: () => bigint;
}

/** The mark the guard values at, or `null` when the market has none yet (no guard). */
export function guardMark(market: Market): bigint | null {
  return market.prices.mark;
}

/**
 * The guard's rule for one fill of `qty` at `price`, given the scope's equity before it: the
 * fill does not lower equity, or equity stays at or above zero after it.
 */
function allowed(side: GuardSide, qty: bigint, price: bigint, equity: bigint): boolean {
  const d = fillEquityDelta(side.spec, side.size, side.buy, qty, price, side.mark, side.rate);
  return d >= 0n || equity + d >= 0n;
}

/**
 * The largest quantity up to `qty`, in whole lots, that the side can fill at `price` keeping its
 * scope solvent (`qty` itself when the whole fill does); 0 when not even one lot can.
 *
 * Equity after the fill is linear in the quantity apart from the ledger's rounding (under three
 * micro-units), so a candidate comes from the exact rational solution and the real, rounded
 * change decides: a search over lots from the candidate (outward by doubling steps, then by
 * halving) ends at a quantity that passes while one more lot fails. Every quantity returned is
 * checked with the ledger's rounding, so rounding can never make a fill's equity negative.
 */
export function solventQuantity(side: GuardSide, qty: bigint, price: bigint): bigint {
  const { spec, mark } = side;
  const dFull = fillEquityDelta(spec, side.size, side.buy, qty, price, mark, side.rate);
  if (dFull >= 0n) return qty;
  const equity = side.equity();
  if (equity + dFull >= 0n) return qty;
  const lot = spec.lotSize;
  const pass = (n: bigint): boolean => n === 0n || allowed(side, n * lot, price, equity);
  // Whole lots are the candidates; `lots` itself fails (it is `qty`, or is checked here).
  const lots = qty / lot;
  if (lots * lot !== qty && pass(lots)) return lots * lot;
  // Linear part per unit of quantity, in micro-units x scale x RATE_SCALE:
  // (M - p) for a buy, (p - M) for a sell, less the fee rate's share of p.
  const perUnit = (side.buy ? mark - price : price - mark) * RATE_SCALE - price * side.rate;
  let n =
    perUnit < 0n && equity > 0n
      ? divFloor(equity * notionalScale(spec) * RATE_SCALE, -perUnit * lot)
      : 0n;
  if (n >= lots) n = lots - 1n;
  if (n < 0n) n = 0n;
  // Bracket: lo passes, hi fails (`lots` itself fails).
  let lo: bigint;
  let hi: bigint;
  if (pass(n)) {
    lo = n;
    hi = lots;
    for (let step = 1n; lo + step < hi; step *= 2n) {
      if (!pass(lo + step)) {
        hi = lo + step;
        break;
      }
      lo += step;
    }
  } else {
    hi = n;
    lo = 0n;
    for (let step = 1n; hi - step > 0n; step *= 2n) {
      if (pass(hi - step)) {
        lo = hi - step;
        break;
      }
      hi -= step;
    }
  }
  while (hi - lo > 1n) {
    const mid = (lo + hi) / 2n;
    if (pass(mid)) lo = mid;
    else hi = mid;
  }
  return lo * lot;
}
