/**
 * Every rounded margin figure against its exact rational (engine-rules 1 and 4), over random
 * instruments (quantity decimals, leverage, margin tiers), sizes of both signs and prices:
 *
 * - equity terms round toward minus infinity: `positionValueFloor = floor(s x M)`;
 * - requirements round up: initial margin `ceil(|s| x M / L)`, maintenance margin
 *   `ceil(|s| x M x mmr_t - D_t)` (the exact figure the liquidation price solves with), order
 *   holds `ceil(notional / L)`;
 * - the fill's cash leg rounds half-even; a fee rounds up for the payer, a rebate toward zero;
 * - the decision's tier (`tierOf`) and the display's (`tierFor`) agree at every notional,
 *   exactly on a tier floor too (the floor belongs to the tier it starts).
 *
 * The goldens pin each rule at a few hand-picked numbers; these hold them everywhere, to one
 * micro-unit, so a direction swapped only for some signs or scales cannot hide.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import {
  feeAmount,
  type Instrument,
  initialMargin,
  maintenanceExact,
  maintenanceMargin,
  notionalScale,
  quoteAmount,
  type Rational,
  radd,
  ratio,
  rcmp,
  rmul,
  rsub,
} from '../src/index.js';
import { tierFor } from '../src/margin/liquidation-price.js';
import { holdForNotional, positionValueFloor, tierOf } from '../src/margin/scope.js';
import { instrument } from '../src/testing/index.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 1000);
const E18 = 10n ** 18n;
const MICRO = 1_000_000n;

/** Whether `value` (micro-units) is `exact` (USD) rounded in direction `dir`. */
function roundedFrom(value: bigint, exact: Rational, dir: 'floor' | 'ceil'): boolean {
  const v = ratio(value, MICRO);
  const step = ratio(1n, MICRO);
  return dir === 'floor'
    ? rcmp(v, exact) <= 0 && rcmp(exact, radd(v, step)) < 0
    : rcmp(v, exact) >= 0 && rcmp(rsub(v, step), exact) < 0;
}

const leverageArb = fc.constantFrom(2, 3, 5, 10, 20, 25, 40, 50, 100);

/** A random instrument: 0..8 quantity decimals, optionally up to three margin tiers. */
const specArb = fc
  .record({
    qd: fc.integer({ min: 0, max: 8 }),
    maxLeverage: leverageArb,
    floors: fc.uniqueArray(fc.integer({ min: 1, max: 50_000_000 }), { maxLength: 3 }),
  })
  .map(({ qd, maxLeverage, floors }): Instrument => {
    const sorted = [...floors].sort((a, b) => a - b);
    const levs = [50, 20, 10, 5, 2].filter((l) => l < maxLeverage);
    const tiers = sorted
      .slice(0, levs.length)
      .map((f, i) => ({ notionalFloor: String(f), maxLeverage: levs[i]! }));
    return instrument({
      id: 1,
      symbol: 'R-PERP',
      tickSize: '0.0001',
      lotSize: qd === 0 ? '1' : `0.${'0'.repeat(qd - 1)}1`,
      quantityDecimals: qd,
      maxLeverage,
      openInterestCap: '1000000000',
      marginTiers: tiers,
    });
  });

/** An instrument with a size and a raw price, a quarter of them exactly on a tier floor. */
const caseArb = specArb.chain((spec) => {
  const unit = 10n ** BigInt(spec.quantityDecimals);
  const random = fc.record({
    size: fc.bigInt({ min: -(10n ** 14n), max: 10n ** 14n }),
    price: fc.bigInt({ min: 1n, max: 10n ** 25n }),
  });
  // k whole units at floor x 1e12 / k raw: a notional of exactly the floor (k divides 1e12).
  const onFloor = fc
    .record({
      tier: fc.integer({ min: 0, max: spec.tiers.length - 1 }),
      k: fc.constantFrom(1n, 2n, 4n, 8n, 16n, 64n, 256n, 4096n),
      sign: fc.constantFrom(1n, -1n),
    })
    .map(({ tier, k, sign }) => {
      const floor = spec.tiers[tier]!.notionalFloor;
      return { size: sign * k * unit, price: (floor * 10n ** 12n) / k };
    })
    .filter(({ price }) => price > 0n);
  return fc.record({
    spec: fc.constant(spec),
    at: spec.tiers.length > 1 ? fc.oneof({ weight: 3, arbitrary: random }, onFloor) : random,
    leverage: fc.integer({ min: 100, max: spec.maxLeverage }),
  });
});

/** Exact `|s| x M` in USD. */
function notionalExact(spec: Instrument, size: bigint, price: bigint): Rational {
  const abs = size < 0n ? -size : size;
  return ratio(abs * price, notionalScale(spec) * MICRO);
}

let onFloors = 0;

describe('rounded margin figures against their exact rationals', () => {
  afterAll(() => {
    // Guard against a vacuous property: some cases must sit exactly on a tier floor.
    expect(onFloors).toBeGreaterThan(runs / 20);
  });

  it('s x M down, IM and MM up, and the decision and display tiers agree', () => {
    fc.assert(
      fc.property(caseArb, ({ spec, at: { size, price }, leverage }) => {
        const scale = notionalScale(spec);
        const value = ratio(size * price, scale * MICRO);
        expect(roundedFrom(positionValueFloor(spec, size, price), value, 'floor')).toBe(true);
        const notional = notionalExact(spec, size, price);
        const im = rmul(notional, ratio(100n, BigInt(leverage)));
        expect(roundedFrom(initialMargin(spec, size, price, leverage), im, 'ceil')).toBe(true);
        const mm = maintenanceExact(spec, size, ratio(price, E18));
        expect(roundedFrom(maintenanceMargin(spec, size, price), mm, 'ceil')).toBe(true);
        if (size !== 0n) expect(tierOf(spec, size, price)).toBe(tierFor(spec, notional));
        if (spec.tiers.some((t, i) => i > 0 && rcmp(notional, ratio(t.notionalFloor, MICRO)) === 0))
          onFloors++;
        // A hold of the same notional at the same leverage is its initial margin.
        const abs = size < 0n ? -size : size;
        expect(holdForNotional(spec, abs * price, leverage)).toBe(
          initialMargin(spec, size, price, leverage),
        );
      }),
      { numRuns: runs },
    );
  });

  it('the quote rounds half-even; a fee rounds up, a rebate toward zero', () => {
    fc.assert(
      fc.property(
        specArb,
        fc.bigInt({ min: 1n, max: 10n ** 14n }),
        fc.bigInt({ min: 1n, max: 10n ** 25n }),
        fc.bigInt({ min: -(10n ** 16n), max: 10n ** 16n }),
        (spec, qty, price, rate) => {
          const scale = notionalScale(spec);
          const quote = quoteAmount(spec, qty, price);
          // |quote - exact| <= 1/2, and on a tie the even one.
          const twice = 2n * (quote * scale - qty * price);
          expect(twice <= scale && twice >= -scale).toBe(true);
          if (twice === scale || twice === -scale) expect(quote % 2n).toBe(0n);
          const fee = feeAmount(spec, qty, price, rate);
          const exact = ratio(qty * price * rate, scale * E18 * MICRO);
          if (rate >= 0n) expect(roundedFrom(fee, exact, 'ceil')).toBe(true);
          else expect(roundedFrom(-fee, rmul(exact, ratio(-1n)), 'floor')).toBe(true);
        },
      ),
      { numRuns: runs },
    );
  });
});
