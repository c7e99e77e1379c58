/**
 * Liquidation and bankruptcy prices (engine-rules section 4) as exact rationals in human price
 * units: the price of one market at which the scope's equity equals its maintenance margin (or
 * zero), every other mark held fixed. With margin tiers, the tier is the one that contains the
 * position's notional at the resulting price.
 *
 * @module
 */

import type { Account, EngineState, Position } from '../engine/types.js';
import type { Instrument, MarginTier } from '../instruments/instrument.js';
import { pow10 } from '../units/decimal.js';
import { type Rational, radd, ratio, rdiv, rmul, rsign, rsub } from '../units/rational.js';
import { isolatedCash, valuationPrice } from './scope.js';

const RATE = 10n ** 18n;

/** Size in base units. */
export function sizeRational(spec: Instrument, size: bigint): Rational {
  return ratio(size, pow10(spec.quantityDecimals));
}

/** A raw (1e18) price as a rational in human units. */
export function priceRational(raw: bigint): Rational {
  return ratio(raw, RATE);
}

function tierDeduction(t: MarginTier): Rational {
  return ratio(t.deduction, RATE * 1_000_000n); // micro x 1e18 -> USD
}

function tierRate(t: MarginTier): Rational {
  return ratio(t.maintenanceMarginRate, RATE);
}

/** The tier that contains `notional` (USD). */
export function tierFor(spec: Instrument, notional: Rational): MarginTier {
  let tier = spec.tiers[0]!;
  for (const t of spec.tiers) {
    if (rsign(rsub(notional, ratio(t.notionalFloor, 1_000_000n))) >= 0) tier = t;
  }
  return tier;
}

/** Exact maintenance margin (USD) of a position of `size` at human price `price`. */
export function maintenanceExact(spec: Instrument, size: bigint, price: Rational): Rational {
  const abs = sizeRational(spec, size < 0n ? -size : size);
  if (abs.num === 0n) return ratio(0n);
  const notional = rmul(abs, price);
  const t = tierFor(spec, notional);
  return rsub(rmul(notional, tierRate(t)), tierDeduction(t));
}

/**
 * Solves `equityAtMark + s x (P - M) = otherMM + |s| x P x mmr_t - D_t` for P, trying each tier
 * until the notional at P falls in the tier used. `null` when no positive price exists.
 */
function solve(
  spec: Instrument,
  size: bigint,
  mark: Rational,
  equityAtMark: Rational,
  otherMaintenance: Rational,
  useMaintenance: boolean,
): Rational | null {
  const s = sizeRational(spec, size);
  const abs = s.num < 0n ? ratio(-s.num, s.den) : s;
  for (const t of spec.tiers) {
    const mmr = useMaintenance ? tierRate(t) : ratio(0n);
    const d = useMaintenance ? tierDeduction(t) : ratio(0n);
    const den = rsub(s, rmul(abs, mmr));
    if (den.num === 0n) return null;
    // P = (otherMM - D - equity + s x M) / (s - |s| x mmr)
    const p = rdiv(radd(rsub(rsub(otherMaintenance, d), equityAtMark), rmul(s, mark)), den);
    if (rsign(p) <= 0) return null;
    if (!useMaintenance || tierFor(spec, rmul(abs, p)) === t) return p;
  }
  return null;
}

/** Exact figures of an account's cross scope, computed once for all its positions. */
export interface CrossExact {
  /** `Rc + sum(s x M)`, USD. */
  readonly equity: Rational;
  /**
   * Exact maintenance margin of each cross position, by market id (one cross position per
   * market), so a copy of a position record (a snapshot's, a spread) finds its own.
   */
  readonly maintenance: Map<number, Rational>;
  readonly totalMaintenance: Rational;
}

/** The exact cross equity and maintenance of an account (USD). */
export function crossExact(state: EngineState, account: Account): CrossExact {
  let equity = ratio(account.crossCash, 1_000_000n);
  let total = ratio(0n);
  const maintenance = new Map<number, Rational>();
  for (const p of account.positions) {
    if (p.mode !== 'Cross') continue;
    const m = state.markets.get(p.market)!;
    const mark = priceRational(valuationPrice(m)!);
    equity = radd(equity, rmul(sizeRational(m.spec, p.size), mark));
    const mm = maintenanceExact(m.spec, p.size, mark);
    maintenance.set(p.market, mm);
    total = radd(total, mm);
  }
  return { equity, maintenance, totalMaintenance: total };
}

/**
 * Liquidation price of a position (human units), or `null` where none exists. Pass `cross`
 * (from {@link crossExact}) when pricing several cross positions of one account.
 */
export function liquidationPrice(
  state: EngineState,
  account: Account,
  position: Position,
  cross?: CrossExact,
): Rational | null {
  const market = state.markets.get(position.market)!;
  const mark = priceRational(valuationPrice(market)!);
  if (position.mode === 'Isolated') {
    const cash = ratio(isolatedCash(account, position.market), 1_000_000n);
    const equity = radd(cash, rmul(sizeRational(market.spec, position.size), mark));
    return solve(market.spec, position.size, mark, equity, ratio(0n), true);
  }
  const c = cross ?? crossExact(state, account);
  const other = rsub(c.totalMaintenance, c.maintenance.get(position.market) ?? ratio(0n));
  return solve(market.spec, position.size, mark, c.equity, other, true);
}

/**
 * Bankruptcy price of a position, exact, or `null` where none exists (at or below zero): the
 * mark at which the position's share of its scope's equity is used up. In a cross scope the
 * equity is shared among the positions by maintenance margin (docs/risk-engine.md), as the
 * engine prices auctions and ADL; for an isolated position, or a lone cross one, that share is
 * all of it. The engine rounds it for the venue (up for a long, down for a short).
 */
export function bankruptcyPrice(
  state: EngineState,
  account: Account,
  position: Position,
): Rational | null {
  const market = state.markets.get(position.market)!;
  const mark = priceRational(valuationPrice(market)!);
  if (position.mode === 'Isolated') {
    const cash = ratio(isolatedCash(account, position.market), 1_000_000n);
    const equity = radd(cash, rmul(sizeRational(market.spec, position.size), mark));
    return solve(market.spec, position.size, mark, equity, ratio(0n), false);
  }
  const c = crossExact(state, account);
  const share =
    c.totalMaintenance.num === 0n
      ? c.equity
      : rdiv(rmul(c.equity, c.maintenance.get(position.market) ?? ratio(0n)), c.totalMaintenance);
  return solve(market.spec, position.size, mark, share, ratio(0n), false);
}
