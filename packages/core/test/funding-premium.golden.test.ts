/**
 * Funding premium samples (engine-rules 6, research 1.8), pinned to hand-computed numbers: the
 * other funding goldens take one sample with the impact ask above the index. A sign error on the
 * ask side and a sum of samples taken for their average failed only in tests of other rules; an
 * impact notional filled exactly by the book's last level (no sample) failed none.
 *
 * `premium = (max(impactBid - I, 0) - max(I - impactAsk, 0)) / I`, truncated toward zero at 1e18;
 * `F8 = avg premium + clamp(0.0001 - avg premium, -0.0005, 0.0005)`, the hourly rate `F8 / 8`.
 *
 * Units: prices 1e18, collateral micro-units, rates 1e18; quantities at 3 decimals.
 */
import { describe, expect, it } from 'vitest';
import { type FundingReport, fundingInfo, type Market } from '../src/index.js';
import { T0, TestVenue, usd, wallet } from '../src/testing/index.js';

const GOLD = wallet(0xd1);
const MAKER = wallet(0xd2);
const MM = wallet(0xd3);
const BTC = 'BTC-PERP';
const HOUR = 3_600_000;
const E15 = 10n ** 15n; // 0.001 at the rate scale

function venue(): TestVenue {
  const v = new TestVenue();
  v.list({
    id: 1,
    symbol: BTC,
    tickSize: '0.5',
    lotSize: '0.001',
    quantityDecimals: 3,
    maxLeverage: 40,
    defaultLeverage: 10,
    openInterestCap: '1000',
    makerFeeRate: '0',
    takerFeeRate: '0',
    funding: { impactNotional: '1000' },
  });
  for (const w of [GOLD, MAKER, MM]) {
    v.open(w);
    v.fund(w, '1000000');
  }
  return v;
}

function btc(v: TestVenue): Market {
  return v.state.markets.get(1)!;
}

/** Replaces MM's quotes with `bids` and `asks` ([qty, price] each). */
function quote(v: TestVenue, bids: [string, string][], asks: [string, string][]): void {
  v.run({ type: 'cancelAll', account: MM, market: 0 });
  for (const [qty, price] of bids) v.expectOk(v.place(MM, BTC, { side: 'Buy', qty, price }));
  for (const [qty, price] of asks) v.expectOk(v.place(MM, BTC, { side: 'Sell', qty, price }));
}

describe('funding premium samples', () => {
  it('the impact bid averages its notional across levels, exactly: premium 1/999', () => {
    const v = venue();
    // Impact notional 1,000: 0.01 @ 50,100 (501) then 499 / 50,000 = 0.00998 @ 50,000, so the
    // impact bid is 1,000 / 0.01998 = 50,050.05005...; the ask (50,200) is above the index.
    quote(
      v,
      [
        ['0.01', '50100'],
        ['0.05', '50000'],
      ],
      [['0.05', '50200']],
    );
    v.oracle({ [BTC]: '50000' });
    // (50,050.0500... - 50,000) / 50,000 = 1/999 = 0.001001001001001001(001...), truncated.
    expect(btc(v).funding).toMatchObject({ sampleCount: 1, premiumSum: 1_001_001_001_001_001n });
  });

  it('an impact notional filled exactly by the last level is a sample', () => {
    const v = venue();
    // 0.02 @ 50,000 is exactly 1,000 of notional on each side: both impact prices exist.
    quote(v, [['0.02', '50000']], [['0.02', '50050']]);
    v.oracle({ [BTC]: '40000' });
    // (50,000 - 40,000) / 40,000 = 0.25; the ask is above the index.
    expect(btc(v).funding).toMatchObject({ sampleCount: 1, premiumSum: 250n * E15 });
    // One unit short of the notional on the bid side: no sample.
    quote(v, [['0.019', '50000']], [['0.02', '50050']]);
    v.oracle({ [BTC]: '40000' });
    expect(btc(v).funding).toMatchObject({ sampleCount: 1, premiumSum: 250n * E15 });
  });

  it('an impact ask below the index gives a negative premium, and shorts pay', () => {
    const v = venue();
    quote(v, [['0.03', '49900']], [['0.03', '49950']]);
    v.oracle({ [BTC]: '50000' });
    // The bid is below the index (no upward part); the ask 50 below it: -50 / 50,000 = -0.001.
    expect(btc(v).funding).toMatchObject({ sampleCount: 1, premiumSum: -E15 });
    // F8 = -0.001 + clamp(0.0001 + 0.001, +-0.0005) = -0.0005; per hour -0.0000625.
    expect(fundingInfo(v.state, 1)?.rate).toBe('-0.0000625');
  });

  // Research 1.8, Hyperliquid's own worked example: impact bid 10,100 at oracle 10,000 gives a
  // premium of 1%, clamp(0.01% - 1%) = -0.05%, so F = 0.95% per 8 h and 0.11875% for the hour.
  it("Hyperliquid's worked example: premium 1%, F8 0.95%, and the hour's payment", () => {
    const v = venue();
    v.oracle({ [BTC]: '10000' }); // empty book: no sample
    v.expectOk(v.place(MAKER, BTC, { side: 'Sell', qty: '1', price: '10000' }));
    v.expectOk(v.place(GOLD, BTC, { side: 'Buy', qty: '1', price: '10000' })); // GOLD long 1
    // 0.2 @ 10,100 fills the impact notional (1,000) on the bid side; the ask is above the index.
    quote(v, [['0.2', '10100']], [['0.2', '10100.5']]);
    v.oracle({ [BTC]: '10000' });
    expect(btc(v).funding).toMatchObject({ sampleCount: 1, premiumSum: 10n * E15 }); // 0.01
    expect(fundingInfo(v.state, 1)?.rate).toBe('0.0011875'); // 0.0095 / 8
    const paid = v
      .run({ type: 'tick', time: T0 + HOUR })
      .filter((e): e is FundingReport => e.type === 'executionReport' && e.kind === 'Funding');
    // -s x I x rate = -1 x 10,000 x 0.0011875 = -11.875 for the long, +11.875 for the short.
    expect(paid.map((r) => [r.account, r.fundingRate, r.payment])).toEqual([
      [GOLD, 1_187_500_000_000_000n, usd('-11.875')],
      [MAKER, 1_187_500_000_000_000n, usd('11.875')],
    ]);
  });

  it('the rate uses the average of the samples, not their sum', () => {
    const v = venue();
    v.oracle({ [BTC]: '50000' }); // empty book: no sample
    v.expectOk(v.place(MAKER, BTC, { side: 'Sell', qty: '0.1', price: '50000' }));
    v.expectOk(v.place(GOLD, BTC, { side: 'Buy', qty: '0.1', price: '50000' })); // GOLD long 0.1
    quote(v, [['0.03', '50050']], [['0.03', '50100']]);
    v.oracle({ [BTC]: '50000' }); // premium 50 / 50,000 = 0.001
    quote(v, [['0.03', '50150']], [['0.03', '50200']]);
    v.oracle({ [BTC]: '50000' }); // premium 150 / 50,000 = 0.003
    expect(btc(v).funding).toMatchObject({ sampleCount: 2, premiumSum: 4n * E15 });
    // Average 0.002: F8 = 0.002 + clamp(0.0001 - 0.002, +-0.0005) = 0.0015; per hour 0.0001875.
    expect(fundingInfo(v.state, 1)?.rate).toBe('0.0001875');
    v.run({ type: 'cancelAll', account: MM, market: 0 });
    const events = v.run({ type: 'tick', time: T0 + HOUR });
    const paid = events.filter(
      (e): e is FundingReport => e.type === 'executionReport' && e.kind === 'Funding',
    );
    // -s x I x rate = -0.1 x 50,000 x 0.0001875 = -0.9375 for the long, +0.9375 for the short.
    expect(new Map(paid.map((r) => [r.account, r.payment]))).toEqual(
      new Map([
        [GOLD, usd('-0.9375')],
        [MAKER, usd('0.9375')],
      ]),
    );
    expect(paid.every((r) => r.fundingRate === 187_500_000_000_000n)).toBe(true);
  });
});
