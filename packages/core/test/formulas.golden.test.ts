/**
 * Golden tests of formulas that no other test pinned: an audit found each of them could change
 * (a constant, a rounding direction) and the whole suite would still pass. Every expected value
 * here is an integer computed by hand (shown in the comments), so each test fails if its formula
 * moves by one raw unit or one tick:
 *
 * 1. the 10% slippage cap of market-style TP/SL orders (`marketStyleLimit`, engine-rules 5), both
 *    sides, on the tick grid, with book levels one tick inside and one tick outside the cap;
 * 2. the funding rate's 4%-per-hour cap (`fundingRateFor`, engine-rules 6), both signs, at and
 *    one raw unit either side of the cap, per interval, and through one real settlement;
 * 3. the mark price's 150 s basis EMA (`updatePrices` / `expNegative`, engine-rules 6): exact
 *    `basisEmaNum` / `basisEmaDen` and marks over oracle updates, and `e^-x` against an
 *    independent high-precision series;
 * 4. the default maintenance margin rate `1 / (2 x maxLeverage)`, rounded up to 18 decimals when
 *    it does not terminate (engine-rules 2);
 * 5. fee rounding of a real fill with a maker rebate: the taker fee rounds up, the rebate toward
 *    zero (engine-rules 1), with the fee pool and both accounts' cash exact.
 *
 * Units: prices 1e18, collateral 1e6 (micro-units), rates 1e18; BTC quantities at 4 decimals.
 */
import { describe, expect, it } from 'vitest';
import {
  type EngineEvent,
  type ExecutionReport,
  type FundingReport,
  fundingRateFor,
  type Market,
  maintenanceMargin,
  type OrderReport,
  RATE_SCALE,
} from '../src/index.js';
import { marketStyleLimit } from '../src/orders/rules.js';
import { BASIS_EMA_TAU_MS, expNegative } from '../src/risk/mark.js';
import { BTC_SETTINGS, instrument, px, T0, TestVenue, usd, wallet } from '../src/testing/index.js';

const A = wallet(0xf1);
const B = wallet(0xf2);
const C = wallet(0xf3);
const MM = wallet(0xf4);
const BTC = 'BTC-PERP';
const HOUR = 3_600_000;
const E18 = 10n ** 18n;

function reports(events: readonly EngineEvent[], account: string): OrderReport[] {
  return events.filter(
    (e): e is OrderReport => e.type === 'executionReport' && e.account === account && 'order' in e,
  );
}

function kinds(events: readonly EngineEvent[], account: string): ExecutionReport['kind'][] {
  return reports(events, account).map((r) => r.kind);
}

function market(v: TestVenue, id = 1): Market {
  return v.state.markets.get(id)!;
}

function cash(v: TestVenue, who: string): bigint {
  return v.state.accounts.get(who)!.crossCash;
}

/** Bid (or ask) levels of a market as [price, quantity], best first. */
function levels(v: TestVenue, side: 'bids' | 'asks'): [bigint, bigint][] {
  return [...market(v)[side]].reverse().map((l) => [l.price, l.quantity]);
}

describe('1. market-style TP/SL: the 10% slippage cap from mark, on the tick grid', () => {
  const TICK = px('0.5');

  it('the cap price itself: buy floor(1.1 x mark) to tick, sell ceil(0.9 x mark) to tick', () => {
    // On the grid already: exactly 110% and 90%.
    expect(marketStyleLimit({ side: 'Buy' }, px('60000'), TICK)).toBe(px('66000'));
    expect(marketStyleLimit({ side: 'Sell' }, px('60000'), TICK)).toBe(px('54000'));
    // 1.1 x 60,000.125 = 66,000.1375: a buy never pays above the cap, down to 66,000.
    expect(marketStyleLimit({ side: 'Buy' }, px('60000.125'), TICK)).toBe(px('66000'));
    // 0.9 x 60,000.125 = 54,000.1125: a sell never sells below the cap, up to 54,000.5.
    expect(marketStyleLimit({ side: 'Sell' }, px('60000.125'), TICK)).toBe(px('54000.5'));
    // One raw unit (1e-18) off the grid decides the tick: 1.1 x (60,000 - 1e-18) is just below
    // 66,000, so the buy limit is 65,999.5; 0.9 x (60,000 + 1e-18) = 54,000 + 0.9e-18 is above
    // 54,000 (the raw ceiling keeps the 0.9e-18), so the sell limit is 54,000.5.
    expect(marketStyleLimit({ side: 'Buy' }, px('60000') - 1n, TICK)).toBe(px('65999.5'));
    expect(marketStyleLimit({ side: 'Sell' }, px('60000') + 1n, TICK)).toBe(px('54000.5'));
    // A sell never gets a limit of 0: at least one tick.
    expect(marketStyleLimit({ side: 'Sell' }, 1n, TICK)).toBe(TICK);
  });

  function venue(): TestVenue {
    const v = new TestVenue();
    v.list(BTC_SETTINGS); // tick 0.5, 4 quantity decimals, default fees
    for (const w of [A, B, C]) {
      v.open(w);
      v.fund(w, '100000');
    }
    v.oracle({ [BTC]: '65000' }); // empty book: mark 65,000, no EMA sample
    return v;
  }

  it('a sell StopLoss fills at the tick just inside 0.9 x mark and not one tick below', () => {
    const v = venue();
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '1', price: '65000' }));
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '1', price: '65000' })); // A long 1
    v.expectOk(v.place(A, BTC, { side: 'Sell', qty: '1', trigger: '60000.5', type: 'StopLoss' }));
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '0.4', price: '54000.5' })); // inside
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '1', price: '54000' })); // outside
    const fired = v.oracle({ [BTC]: '60500' });
    // No ask, so no EMA; book median = mean(54,000.5, last 65,000) = 59,500.25;
    // mark = mean(60,500, 59,500.25) = 60,000.125 <= 60,000.5 fires the stop.
    expect(market(v).prices.mark).toBe(px('60000.125'));
    // Cap 0.9 x 60,000.125 = 54,000.1125, up to the tick: 54,000.5.
    expect(kinds(fired, A)).toEqual(['OrderTriggered', 'OrderPartiallyFilled', 'OrderCancelled']);
    const fill = reports(fired, A)[1]!;
    expect(fill.fill?.price).toBe(px('54000.5'));
    expect(fill.fill?.quantity).toBe(4_000n);
    expect(reports(fired, A)[2]!.order.reason).toBe('NoLiquidity');
    // The bid at 54,000 (0.1125 beyond the cap) is untouched.
    expect(levels(v, 'bids')).toEqual([[px('54000'), 10_000n]]);
  });

  it('a buy StopLoss fills at the tick just inside 1.1 x mark and not one tick above', () => {
    const v = venue();
    v.expectOk(v.place(B, BTC, { side: 'Buy', qty: '1', price: '65000' }));
    v.expectOk(v.place(A, BTC, { side: 'Sell', qty: '1', price: '65000' })); // A short 1
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '1', trigger: '65000.5', type: 'StopLoss' }));
    v.expectOk(v.place(C, BTC, { side: 'Sell', qty: '0.4', price: '71500.5' })); // inside
    v.expectOk(v.place(C, BTC, { side: 'Sell', qty: '1', price: '71501' })); // outside
    const fired = v.oracle({ [BTC]: '61751' });
    // No bid: book median = mean(71,500.5, 65,000) = 68,250.25;
    // mark = mean(61,751, 68,250.25) = 65,000.625 >= 65,000.5 fires the stop.
    expect(market(v).prices.mark).toBe(px('65000.625'));
    // Cap 1.1 x 65,000.625 = 71,500.6875, down to the tick: 71,500.5.
    expect(kinds(fired, A)).toEqual(['OrderTriggered', 'OrderPartiallyFilled', 'OrderCancelled']);
    const fill = reports(fired, A)[1]!;
    expect(fill.fill?.price).toBe(px('71500.5'));
    expect(fill.fill?.quantity).toBe(4_000n);
    expect(levels(v, 'asks')).toEqual([[px('71501'), 10_000n]]);
  });
});

describe('2. funding: the 4%-per-hour cap', () => {
  // Defaults: interest 0.0001 per 8 h, clamp 0.0005, cap 0.04 per hour, interval 1 h.
  // For |P| > 0.0006: F8 = P - 0.0005 sign(P), rate = F8 / 8 (truncated), capped at +-0.04.
  const v = new TestVenue();
  v.list(BTC_SETTINGS);
  v.list({ ...BTC_SETTINGS, id: 2, symbol: 'BTC-30M', funding: { intervalMs: 1_800_000 } });
  const hourly = market(v, 1);
  const halfHourly = market(v, 2);
  const CAP = 4n * 10n ** 16n; // 0.04

  it('caps a large premium at exactly +-0.04, both signs', () => {
    // P = 0.5: F8 = 0.4995, uncapped rate 0.0624375.
    expect(fundingRateFor(hourly, 5n * 10n ** 17n)).toBe(CAP);
    // P = -0.5: F8 = -0.4995, uncapped -0.0624375.
    expect(fundingRateFor(hourly, -5n * 10n ** 17n)).toBe(-CAP);
  });

  it('the cap sits exactly at 0.04: one raw unit of rate either side', () => {
    // P = 0.3205 +- 8e-18 gives F8 = 0.32 +- 8e-18 and a rate of 0.04 +- 1e-18.
    const edge = 3205n * 10n ** 14n;
    expect(fundingRateFor(hourly, edge)).toBe(CAP); // exactly at the cap
    expect(fundingRateFor(hourly, edge + 8n)).toBe(CAP); // 0.040000000000000001 -> 0.04
    expect(fundingRateFor(hourly, edge - 8n)).toBe(CAP - 1n); // just below: not capped
    expect(fundingRateFor(hourly, -edge)).toBe(-CAP);
    expect(fundingRateFor(hourly, -edge - 8n)).toBe(-CAP);
    expect(fundingRateFor(hourly, -edge + 8n)).toBe(-CAP + 1n);
  });

  it('just below the cap the rate is F8 / 8', () => {
    // P = 0.3204: F8 = 0.3199, rate 0.0399875.
    expect(fundingRateFor(hourly, 3204n * 10n ** 14n)).toBe(39_987_500_000_000_000n);
    // P = -0.3204: F8 = -0.3199, rate -0.0399875.
    expect(fundingRateFor(hourly, -3204n * 10n ** 14n)).toBe(-39_987_500_000_000_000n);
  });

  it('the cap is per hour: a 30-minute interval caps at 0.02', () => {
    // P = 0.5: F8 = 0.4995, x 0.5 h / 8 h = 0.03121875 > 0.02.
    expect(fundingRateFor(halfHourly, 5n * 10n ** 17n)).toBe(2n * 10n ** 16n);
    expect(fundingRateFor(halfHourly, -5n * 10n ** 17n)).toBe(-2n * 10n ** 16n);
    // P = 0.16: F8 = 0.1595, x 1/16 = 0.00996875, under the cap.
    expect(fundingRateFor(halfHourly, 16n * 10n ** 16n)).toBe(9_968_750_000_000_000n);
  });

  it('a settlement at the capped rate pays exactly 4% of the index notional', () => {
    const w = new TestVenue();
    w.list({
      ...BTC_SETTINGS,
      makerFeeRate: '0',
      takerFeeRate: '0',
      funding: { impactNotional: '1000' },
    });
    for (const x of [A, B, MM]) {
      w.open(x);
      w.fund(x, '100000');
    }
    w.oracle({ [BTC]: '50000' }); // empty book: no premium sample
    w.expectOk(w.place(B, BTC, { side: 'Sell', qty: '1', price: '50000' }));
    w.expectOk(w.place(A, BTC, { side: 'Buy', qty: '1', price: '50000' })); // A long 1
    // Impact bid 75,000 (0.02 x 75,000 = 1,500 >= 1,000): premium (75,000 - 50,000) / 50,000.
    w.expectOk(w.place(MM, BTC, { side: 'Buy', qty: '0.02', price: '75000' }));
    w.expectOk(w.place(MM, BTC, { side: 'Sell', qty: '0.02', price: '75000.5' }));
    w.oracle({ [BTC]: '50000' });
    expect(market(w).funding).toMatchObject({ sampleCount: 1, premiumSum: 5n * 10n ** 17n });
    w.run({ type: 'cancelAll', account: MM, market: 0 });
    const events = w.run({ type: 'tick', time: T0 + HOUR });
    const funding = events.filter(
      (e): e is FundingReport => e.type === 'executionReport' && e.kind === 'Funding',
    );
    // Rate 0.04 (uncapped 0.0624375); payment -s x I x rate = -1 x 50,000 x 0.04 = -2,000.
    expect(funding.map((r) => [r.account, r.fundingRate, r.payment])).toEqual([
      [A, CAP, usd('-2000')],
      [B, CAP, usd('2000')],
    ]);
  });
});

/**
 * `floor(e^(-a/b) x 1e18)` from an independent series at 1e60: `e^-x = sum (-x)^k / k!`, each
 * term truncated (error below 1e-58 in all), then floored to 1e18, with a guard that the true
 * value is not within that error of an integer.
 */
function expFloor(a: bigint, b: bigint): bigint {
  const S = 10n ** 60n;
  let term = S;
  let sum = S;
  for (let k = 1n; k < 200n && term !== 0n; k++) {
    term = (term * a) / (b * k);
    sum += k % 2n === 1n ? -term : term;
  }
  const unit = 10n ** 42n;
  const frac = sum % unit;
  if (frac < 10n ** 20n || unit - frac < 10n ** 20n) throw new Error('too close to call');
  return sum / unit;
}

describe('3. mark price: the 150 s basis EMA', () => {
  const TAU = BigInt(BASIS_EMA_TAU_MS);
  const E_INV = 367_879_441_171_442_321n; // floor(e^-1 x 1e18)

  it('e^(-t/150 s) at 1e18: the exact integers, and floor(e^-x) at these inputs', () => {
    expect(TAU).toBe(150_000n);
    expect(expNegative(0n, TAU)).toBe(E18);
    expect(expNegative(150_000n, TAU)).toBe(E_INV);
    // (e^-1)^2 at 1e18, floored once: 135335283236612691.
    expect(expNegative(300_000n, TAU)).toBe((E_INV * E_INV) / E18);
    expect(expNegative(300_000n, TAU)).toBe(135_335_283_236_612_691n);
    // e^-0.3 from its Taylor series: 0.740818220681717866|07 -> 740818220681717866.
    expect(expNegative(45_000n, TAU)).toBe(740_818_220_681_717_866n);
    for (const t of [150_000n, 300_000n, 45_000n, 75_000n, 3_000n]) {
      expect(expNegative(t, TAU)).toBe(expFloor(t, TAU));
    }
  });

  // The Taylor terms are truncated one by one, so the subtracted (odd) terms come out a little
  // small and the sum can land just above e^-x: at 1 ms, e^(-1/150000) x 1e18 =
  // 999993333355555506.17 and the engine returns ...507. mark.ts documents "within a few units
  // of the last place"; this pins that bound over inputs up to 60 tau.
  it('expNegative is within 4 units of floor(e^-x) at 1e18', () => {
    expect(expFloor(1n, TAU)).toBe(999_993_333_355_555_506n);
    expect(expNegative(1n, TAU)).toBe(999_993_333_355_555_507n);
    for (let t = 1n; t < 60n * TAU; t = t * 3n + 7n) {
      const error = expNegative(t, TAU) - expFloor(t, TAU);
      expect(error <= 4n && error >= -4n).toBe(true);
    }
  });

  it('pins basisEmaNum, basisEmaDen and the mark over four oracle updates', () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    v.open(MM);
    v.fund(MM, '10000');
    // A one-tick quote around 60,000 that never trades: mid 60,000, no last trade, so the
    // book's median is the mid and each sample is 60,000 - I.
    v.expectOk(v.place(MM, BTC, { side: 'Buy', qty: '0.001', price: '59999.5' }));
    v.expectOk(v.place(MM, BTC, { side: 'Sell', qty: '0.001', price: '60000.5' }));
    const t1 = T0 + 1_000;
    const prices = () => market(v).prices;

    // Both sums carry 18 extra decimals: weights are ms x 1e18, num is price x ms x 1e18.
    // First sample (0): num = 0, den = 1e18 (one ms of weight).
    v.oracle({ [BTC]: '60000' }, t1);
    expect(prices()).toMatchObject({ basisEmaNum: 0n, basisEmaDen: E18, basisEmaTime: t1 });
    expect(prices().mark).toBe(px('60000'));

    // 150 s later, sample 100: decay e^-1; num = 0 + 100e18 x 150000 x 1e18;
    // den = 1e18 x E_INV / 1e18 + 150000e18 = 150000367879441171442321 (the first ms keeps its
    // decayed weight); EMA = floor(num / den) = 99.999754747640707711, so the mark (the median
    // of 59,900, 59,999.999754747640707711 and the 60,000 mid) is the EMA price.
    v.oracle({ [BTC]: '59900' }, t1 + 150_000);
    expect(prices()).toMatchObject({
      basisEmaNum: 15_000_000n * E18 * E18,
      basisEmaDen: 150_000n * E18 + E_INV,
      basisEmaTime: t1 + 150_000,
    });
    expect((15_000_000n * E18 * E18) / (150_000n * E18 + E_INV)).toBe(99_999_754_747_640_707_711n);
    expect(prices().mark).toBe(px('59999.999754747640707711'));

    // 150 s later, sample 400: num = 1.5e43 x E_INV / 1e18 + 400e18 x 150000 x 1e18;
    // den = floor(150000367879441171442321 x E_INV / 1e18) + 150000e18
    //     = 55182051510999584762691 + 150000e18 = 205182051510999584762691;
    // EMA = floor(num / den) = 319.317362971484259746; mark = 59,600 + EMA.
    v.oracle({ [BTC]: '59600' }, t1 + 300_000);
    const num3 = (15_000_000n * E18 * E18 * E_INV) / E18 + 400n * E18 * 150_000n * E18;
    const den3 = ((150_000n * E18 + E_INV) * E_INV) / E18 + 150_000n * E18;
    expect(den3).toBe(205_182_051_510_999_584_762_691n);
    expect(prices()).toMatchObject({ basisEmaNum: num3, basisEmaDen: den3 });
    expect(num3 / den3).toBe(319_317_362_971_484_259_746n);
    expect(prices().mark).toBe(px('59919.317362971484259746'));

    // 45 s later, sample 500: decay d = expNegative(45000, 150000) = 740818220681717866;
    // num = floor(num3 x d / 1e18) + 500e18 x 45000 x 1e18, den = floor(den3 x d / 1e18) +
    // 45000e18 = 197002602316203293102216; EMA = 360.589501363000643061; mark = 59,500 + EMA.
    v.oracle({ [BTC]: '59500' }, t1 + 345_000);
    const d = 740_818_220_681_717_866n;
    expect(expNegative(45_000n, TAU)).toBe(d);
    const num4 = (num3 * d) / E18 + 500n * E18 * 45_000n * E18;
    const den4 = (den3 * d) / E18 + 45_000n * E18;
    expect(den4).toBe(197_002_602_316_203_293_102_216n);
    expect(prices()).toMatchObject({
      basisEmaNum: num4,
      basisEmaDen: den4,
      basisEmaTime: t1 + 345_000,
    });
    expect(num4 / den4).toBe(360_589_501_363_000_643_061n);
    expect(prices().mark).toBe(px('59860.589501363000643061'));
  });

  // Engine-rules 6 says `I + EMA150s(mid - I)`: an EMA is a weighted average of its samples, so
  // it never leaves their range. With weights kept in whole ms (as before) the floored fraction
  // of a ms pushed it above: samples 100 then 1,000 gave 1,000.000245. Now the exact value
  // (100 e^-1 + 1000 x 150000) / (e^-1 + 150000) = 999.99977... is met to 1e-18.
  it('the basis EMA stays within its samples (den keeps the fraction of a ms)', () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    v.open(MM);
    v.fund(MM, '10000');
    v.expectOk(v.place(MM, BTC, { side: 'Buy', qty: '0.001', price: '59999.5' }));
    v.expectOk(v.place(MM, BTC, { side: 'Sell', qty: '0.001', price: '60000.5' }));
    v.oracle({ [BTC]: '59900' }, T0 + 1_000); // sample 100
    v.oracle({ [BTC]: '59000' }, T0 + 151_000); // sample 1,000
    const p = market(v).prices;
    expect(p.basisEmaNum / p.basisEmaDen).toBeLessThanOrEqual(1_000n * E18);
  });
});

describe('4. default maintenance margin rate 1 / (2 x maxLeverage), rounded up', () => {
  const mmr = (maxLeverage: number) =>
    instrument({ ...BTC_SETTINGS, maxLeverage, defaultLeverage: 1 }).tiers[0]!
      .maintenanceMarginRate;

  it('terminating rates are exact', () => {
    expect(mmr(40)).toBe(12_500_000_000_000_000n); // 0.0125
    expect(mmr(25)).toBe(20_000_000_000_000_000n); // 0.02
    expect(mmr(2.5)).toBe(200_000_000_000_000_000n); // 0.2
  });

  it('non-terminating rates round up at the 18th decimal', () => {
    // 1/6 = 0.1666...67 (up from ...6666); 1/14 = 0.0714285714285714285|71 -> ...429.
    expect(mmr(3)).toBe(166_666_666_666_666_667n);
    expect(mmr(7)).toBe(71_428_571_428_571_429n);
    // 1/(2 x 1.5) = 1/3.
    expect(mmr(1.5)).toBe(333_333_333_333_333_334n);
    // The same default for a margin tier: a 3x tier above a 7x base.
    const tiered = instrument({
      ...BTC_SETTINGS,
      maxLeverage: 7,
      defaultLeverage: 1,
      marginTiers: [{ notionalFloor: '1000000', maxLeverage: 3 }],
    });
    expect(tiered.tiers.map((t) => t.maintenanceMarginRate)).toEqual([
      71_428_571_428_571_429n,
      166_666_666_666_666_667n,
    ]);
    // deduction = 1,000,000e6 x (mmr_1 - mmr_0) = 1e12 x 95238095238095238.
    expect(tiered.tiers[1]!.deduction).toBe(95_238_095_238_095_238n * 10n ** 12n);
  });

  it('the rounded-up rate reaches the maintenance margin', () => {
    const spec = instrument({ ...BTC_SETTINGS, maxLeverage: 3, defaultLeverage: 1 });
    // 1 BTC at 60,000 x 0.166666666666666667 = 10,000.00000000000002, up to 10,000.000001
    // (with the rate rounded down it would be 9,999.99999999999996 -> 10,000).
    expect(maintenanceMargin(spec, 10_000n, px('60000'))).toBe(usd('10000.000001'));
    expect(RATE_SCALE).toBe(E18);
  });
});

describe('5. fees of a fill with a maker rebate', () => {
  it('the taker fee rounds up and the rebate toward zero; cash and fee pool exact', () => {
    const v = new TestVenue();
    v.list({ ...BTC_SETTINGS, makerFeeRate: '-0.00015', takerFeeRate: '0.0003' });
    for (const w of [A, B]) {
      v.open(w);
      v.fund(w, '10000');
    }
    v.oracle({ [BTC]: '60000' });
    v.expectOk(v.place(A, BTC, { side: 'Sell', qty: '0.001', price: '60004.5' }));
    const pool = v.state.feePool;
    const [cashA, cashB] = [cash(v, A), cash(v, B)];
    const events = v.place(B, BTC, { side: 'Buy', qty: '0.001', price: '60004.5' });
    // Quote 0.001 x 60,004.5 = 60.0045 exactly.
    // Taker fee 60.0045 x 0.0003 = 0.01800135 -> up to 0.018002 (nearest would be 0.018001).
    // Maker rebate 60.0045 x 0.00015 = 0.009000675 -> toward zero 0.009000 (nearest 0.009001).
    const [maker] = reports(events, A);
    const [, taker] = reports(events, B);
    expect(maker?.fill).toMatchObject({ quantity: 10n, price: px('60004.5'), fee: -9_000n });
    expect(taker?.fill).toMatchObject({ quantity: 10n, price: px('60004.5'), fee: 18_002n });
    expect(v.state.feePool - pool).toBe(9_002n); // 0.018002 - 0.009000
    expect(cash(v, A) - cashA).toBe(60_004_500n + 9_000n); // sold: + quote + rebate
    expect(cash(v, B) - cashB).toBe(-60_004_500n - 18_002n); // bought: - quote - fee
  });
});
