/**
 * Funding (engine-rules section 6, research 1.8): a premium sample from the impact bid and ask at
 * every oracle command; at each funding time (every interval on the hour, UTC) the average
 * premium gives `F8 = P + clamp(interest - P, -clamp, clamp)`, the interval's rate is
 * `clamp(F8 x interval / 8 h, -cap, cap)` and each position's pool receives `-s x I x rate`.
 *
 * Exactly once: a market records the last funding time it settled, and settlement runs from the
 * command time, so a replay or a restart settles each funding time once and a command after a
 * gap settles every missed time in order (the missed ones after the first have no samples and
 * pay the interest term alone).
 *
 * Rounding: a payer's payment rounds up, a receiver's down (both `floor`), so the payments sum
 * to zero or less; the residue goes to the insurance fund and conservation stays exact.
 *
 * @module
 */
import type { Ctx } from '../engine/context.js';
import type { FundingPayment, FundingSettlement } from '../engine/events.js';
import type { EngineState, Level, Market } from '../engine/types.js';
import { notionalScale, RATE_SCALE } from '../instruments/instrument.js';
import { isolatedCash, setIsolatedCash } from '../margin/scope.js';
import { formatDecimal } from '../units/decimal.js';
import { type Rational, radd, ratio, rdiv, rsub } from '../units/rational.js';
import { divFloor } from '../units/rounding.js';

const HOUR_MS = 3_600_000n;
const EIGHT_HOURS_MS = 8n * HOUR_MS;

function clamp(x: bigint, lo: bigint, hi: bigint): bigint {
  return x < lo ? lo : x > hi ? hi : x;
}

/** Truncates a rational toward zero at the rate scale (1e18). */
function toRate(r: Rational): bigint {
  return (r.num * RATE_SCALE) / r.den;
}

/**
 * Average fill price of a market order for `notional` (micro-units) against `levels` (best
 * last), exactly; `null` when the side cannot fill it.
 */
export function impactPrice(market: Market, levels: readonly Level[]): Rational | null {
  const target = market.spec.funding.impactNotional * notionalScale(market.spec); // raw q x p
  if (target <= 0n) return null;
  let notional = 0n;
  let qty: Rational = ratio(0n);
  for (let i = levels.length - 1; i >= 0; i--) {
    const l = levels[i] as Level;
    const available = l.quantity * l.price;
    const need = target - notional;
    if (available >= need) {
      qty = radd(qty, ratio(need, l.price));
      return rdiv(ratio(target), qty);
    }
    notional += available;
    qty = radd(qty, ratio(l.quantity));
  }
  return null;
}

/**
 * The premium sample of a market at index `index`, rate scale, truncated toward zero:
 * `(max(impactBid - I, 0) - max(I - impactAsk, 0)) / I`. `null` (no sample) unless both sides
 * can fill the impact notional: an empty or thin book samples nothing, so its premium is 0.
 */
export function premiumSample(market: Market, index: bigint): bigint | null {
  const bid = impactPrice(market, market.bids);
  const ask = impactPrice(market, market.asks);
  if (bid === null || ask === null) return null;
  const i = ratio(index);
  const up = rsub(bid, i);
  const down = rsub(i, ask);
  let diff = ratio(0n);
  if (up.num > 0n) diff = radd(diff, up);
  if (down.num > 0n) diff = rsub(diff, down);
  return toRate(rdiv(diff, i));
}

/** Takes a premium sample after an oracle update of a writable market. */
export function samplePremium(market: Market): void {
  const index = market.prices.index;
  if (index === null) return;
  const sample = premiumSample(market, index);
  if (sample === null) return;
  const f = market.funding;
  market.funding = {
    lastFundingTime: f.lastFundingTime,
    premiumSum: f.premiumSum + sample,
    sampleCount: f.sampleCount + 1,
  };
}

/** Average premium of the samples so far, rate scale (truncated toward zero); 0 with none. */
export function averagePremium(market: Market): bigint {
  const f = market.funding;
  return f.sampleCount === 0 ? 0n : f.premiumSum / BigInt(f.sampleCount);
}

/**
 * The funding rate for an average premium `premium` (rate scale, signed) over `periodMs`: one
 * interval unless said otherwise (the first period after the interval was lengthened is shorter,
 * see {@link nextFundingTime}).
 */
export function fundingRateFor(
  market: Market,
  premium: bigint,
  periodMs: number = market.spec.funding.intervalMs,
): bigint {
  const s = market.spec.funding;
  const f8 = premium + clamp(s.interestRate8h - premium, -s.premiumClamp, s.premiumClamp);
  const interval = BigInt(periodMs);
  // Truncated toward zero at 1e18: the rate is an input, the payments round for the venue.
  const rate = (f8 * interval) / EIGHT_HOURS_MS;
  const cap = (s.capPerHour * interval) / HOUR_MS;
  return clamp(rate, -cap, cap);
}

/** The rate the current samples give (what the next settlement pays if nothing changes). */
export function predictedRate(market: Market): bigint {
  return fundingRateFor(market, averagePremium(market), fundingPeriod(market));
}

/** The period the next settlement pays for: from the last funding time to the next one, ms. */
function fundingPeriod(market: Market): number {
  return nextFundingTime(market) - market.funding.lastFundingTime;
}

/**
 * The last interval boundary at or before `time`: a market listed at `time` starts with it as its
 * last funding time, so its first funding time is the next boundary after `time`.
 */
export function firstFundingBase(time: number, intervalMs: number): number {
  return Math.floor(time / intervalMs) * intervalMs;
}

/**
 * The next funding time of a market: the next boundary of its interval's grid after the last
 * funding time, ms. That is one interval later, except after the interval was lengthened off
 * the new grid (hourly settled at 01:00, then two-hourly: next at 02:00, paying one hour).
 */
export function nextFundingTime(market: Market): number {
  const interval = market.spec.funding.intervalMs;
  return firstFundingBase(market.funding.lastFundingTime, interval) + interval;
}

/** Recomputes the earliest next funding time over all markets. */
export function refreshFundingDue(state: EngineState): void {
  let due: number | null = null;
  state.markets.forEach((m) => {
    const t = nextFundingTime(m);
    if (due === null || t < due) due = t;
  });
  state.fundingDue = due;
}

/**
 * Funding rate and next funding time of a market, for tickers: the rate the samples so far give
 * (per interval, canonical decimal), `null` for an unknown market.
 */
export function fundingInfo(
  state: EngineState,
  market: number,
): { rate: string; nextFundingTime: number } | null {
  const m = state.markets.get(market);
  if (m === undefined) return null;
  return { rate: formatDecimal(predictedRate(m), 18), nextFundingTime: nextFundingTime(m) };
}

/**
 * Pays one interval's funding in a writable market at `fundingTime` and clears the samples.
 * Every position (cross or isolated) of every holder is paid in its own pool.
 */
function settleMarket(
  ctx: Ctx,
  market: Market,
  fundingTime: number,
  periodMs: number,
): FundingSettlement {
  const premium = averagePremium(market);
  const sampleCount = market.funding.sampleCount;
  const rate = fundingRateFor(market, premium, periodMs);
  const index = market.prices.index;
  const spec = market.spec;
  const payments: FundingPayment[] = [];
  let residue = 0n;
  if (index !== null && rate !== 0n) {
    const scale = notionalScale(spec) * RATE_SCALE;
    // Holders in canonical map order, then sorted: reports come out in address order.
    const holders = market.holders.keys().sort();
    for (const address of holders) {
      const account = ctx.writableAccount(address);
      for (const p of account.positions) {
        if (p.market !== spec.id) continue;
        // -s x I x rate, floored: a payer pays the fraction, a receiver does not get it.
        const payment = divFloor(-p.size * index * rate, scale);
        if (p.mode === 'Cross') account.crossCash += payment;
        else setIsolatedCash(account, spec.id, isolatedCash(account, spec.id) + payment);
        p.fundingSinceOpen += payment;
        residue -= payment;
        payments.push({ account: address, marginMode: p.mode, positionSize: p.size, payment });
        ctx.report(address, {
          kind: 'Funding',
          market: spec.id,
          marginMode: p.mode,
          fundingTime,
          fundingRate: rate,
          positionSize: p.size,
          indexPrice: index,
          markPrice: market.prices.mark,
          payment,
        });
      }
      ctx.accountChanged(address);
    }
  }
  ctx.state.insuranceFund += residue;
  const settlement: FundingSettlement = {
    market: spec.id,
    fundingTime,
    rate,
    premium,
    sampleCount,
    indexPrice: index,
    payments,
    residue,
  };
  ctx.emit({ type: 'fundingSettled', settlement });
  if (residue !== 0n) {
    ctx.emit({
      type: 'insurance',
      delta: residue,
      balance: ctx.state.insuranceFund,
      reason: 'FundingResidue',
      time: ctx.time,
    });
  }
  return settlement;
}

/**
 * Settles every funding time at or before `until` that is not settled yet, oldest first and
 * markets in id order within one time. Returns whether any was settled.
 */
export function settleFundingDue(ctx: Ctx, until: number = ctx.time): boolean {
  let any = false;
  while (ctx.state.fundingDue !== null && ctx.state.fundingDue <= until) {
    const due = ctx.state.fundingDue;
    const ids = ctx.state.markets.keys().sort((a, b) => a - b);
    for (const id of ids) {
      const m = ctx.market(id)!;
      if (nextFundingTime(m) !== due) continue;
      const w = ctx.writableMarket(id);
      settleMarket(ctx, w, due, fundingPeriod(w));
      w.funding = { lastFundingTime: due, premiumSum: 0n, sampleCount: 0 };
    }
    refreshFundingDue(ctx.state);
    any = true;
  }
  return any;
}

/**
 * The operator's settle-now: one full interval's rate from the samples so far, paid at the
 * command time; the samples restart, the hourly schedule stays.
 */
export function settleFundingNow(ctx: Ctx, market: number | undefined): FundingSettlement[] {
  const ids =
    market === undefined || market === 0
      ? ctx.state.markets.keys().sort((a, b) => a - b)
      : [market];
  const out: FundingSettlement[] = [];
  for (const id of ids) {
    const w = ctx.writableMarket(id);
    out.push(settleMarket(ctx, w, ctx.time, w.spec.funding.intervalMs));
    w.funding = { lastFundingTime: w.funding.lastFundingTime, premiumSum: 0n, sampleCount: 0 };
  }
  return out;
}
