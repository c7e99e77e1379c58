/**
 * Mark price (engine-rules section 6): the median of the index `I`, `I + EMA150s(mid - I)` and
 * `median(best bid, best ask, last trade)`, over those that exist. The EMA follows Hyperliquid's
 * time-weighted form, `num = num x e^(-t/150s) + sample x t`, `den = den x e^(-t/150s) + t`,
 * in exact integer arithmetic so a replay gives the same mark on any machine.
 *
 * @module
 */
import type { Market, PriceState } from '../engine/types.js';

/** Fixed-point scale of the decay factor. */
const ONE = 10n ** 18n;
/** e^-1 at 1e18, rounded down. */
const E_INV = 367879441171442321n;
/** EMA time constant, ms. */
export const BASIS_EMA_TAU_MS = 150_000;

/**
 * `e^(-a/b)` at 1e18 fixed point, within a few units of the last place (truncated Taylor terms
 * and powers of a rounded e^-1); fully deterministic, which is what the mark needs.
 */
export function expNegative(a: bigint, b: bigint): bigint {
  if (a <= 0n) return ONE;
  const whole = a / b;
  if (whole > 60n) return 0n;
  // e^-(n + f) = (e^-1)^n x e^-f, with e^-f from its Taylor series (f < 1 converges in ~25 terms).
  let result = ONE;
  for (let i = 0n; i < whole; i++) result = (result * E_INV) / ONE;
  const fNum = a - whole * b;
  let term = ONE;
  let sum = ONE;
  for (let k = 1n; k < 40n && term !== 0n; k++) {
    term = (term * fNum) / (b * k);
    sum += k % 2n === 1n ? -term : term;
  }
  return (result * sum) / ONE;
}

/** Median of the values present (mean of two, the value of one); `null` when none. */
export function medianOf(values: readonly (bigint | null)[]): bigint | null {
  const v = values
    .filter((x): x is bigint => x !== null)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  if (v.length === 0) return null;
  if (v.length % 2 === 1) return v[(v.length - 1) / 2]!;
  const hi = v.length / 2;
  return (v[hi - 1]! + v[hi]!) / 2n;
}

/** Best bid and ask of a market, `null` for an empty side. */
export function bestBidAsk(market: Market): { bid: bigint | null; ask: bigint | null } {
  const b = market.bids[market.bids.length - 1];
  const a = market.asks[market.asks.length - 1];
  return { bid: b === undefined ? null : b.price, ask: a === undefined ? null : a.price };
}

/** The price state after an oracle update of the index to `index` at `time`. */
export function updatePrices(market: Market, index: bigint, time: number): PriceState {
  const p = market.prices;
  const { bid, ask } = bestBidAsk(market);
  let num = p.basisEmaNum;
  let den = p.basisEmaDen;
  let emaTime = p.basisEmaTime;
  if (bid !== null && ask !== null) {
    const sample = (bid + ask) / 2n - index;
    // Both sums carry 18 extra decimals (weights in ms x 1e18), so decaying them loses at most
    // 1e-18 ms of weight and the EMA stays between its samples.
    if (den === 0n) {
      num = sample * ONE;
      den = ONE;
    } else {
      const dt = BigInt(Math.max(time - emaTime, 1));
      const decay = expNegative(dt, BigInt(BASIS_EMA_TAU_MS));
      num = (num * decay) / ONE + sample * dt * ONE;
      den = (den * decay) / ONE + dt * ONE;
    }
    emaTime = time;
  }
  // The EMA term is a price only while it is positive: a basis learned from a book far below
  // the index, applied after that book emptied and the index fell, can take it to zero or
  // below, and the mean of it and the index (no book, no trade) with it. Such a term does not
  // exist, so the mark stays positive: every margin and ADL formula values positions at it.
  const ema = den === 0n ? null : index + num / den;
  const emaPrice = ema !== null && ema > 0n ? ema : null;
  const bookPrice = medianOf([bid, ask, market.lastTrade]);
  const mark = medianOf([index, emaPrice, bookPrice]) as bigint;
  return {
    index,
    indexTime: time,
    mark,
    markTime: time,
    basisEmaNum: num,
    basisEmaDen: den,
    basisEmaTime: emaTime,
  };
}
