/**
 * The cash leg of a fill (engine-rules 1): `q = quantity x price` converted to micro-units once,
 * rounded half-even, and applied with opposite signs to both sides. Found by mutation: with
 * half-even replaced by floor only the rules fingerprint failed, since every other fill in the
 * suite has a quote that is a whole number of micro-units. Here each fill leaves a fraction of
 * exactly one half (both parities) or above one half.
 *
 * Units: tick and lot 0.0001 at 4 quantity decimals, so `q x p` has 8 decimals; collateral in
 * micro-units. Fees are 0 so cash moves by the quote alone.
 */
import { describe, expect, it } from 'vitest';
import { quoteAmount } from '../src/index.js';
import { instrument, px, TestVenue, units, usd, wallet } from '../src/testing/index.js';

const BUYER = wallet(0xe1);
const SELLER = wallet(0xe2);
const SYM = 'FINE-PERP';
const SETTINGS = {
  id: 1,
  symbol: SYM,
  tickSize: '0.0001',
  lotSize: '0.0001',
  quantityDecimals: 4,
  maxLeverage: 50,
  openInterestCap: '1000000',
  makerFeeRate: '0',
  takerFeeRate: '0',
};

// [quantity, price, quote in micro-units, why]
const CASES: readonly [string, string, bigint, string][] = [
  // 1.0001 x 10.0075 = 10.00850075 USD = 10,008,500.75 micro: above the half, up.
  ['1.0001', '10.0075', 10_008_501n, 'above one half rounds up'],
  // 1.0002 x 10.0025 = 10.00450050 USD = 10,004,500.5 micro: a tie, to the even 10,004,500.
  ['1.0002', '10.0025', 10_004_500n, 'a tie rounds down to even'],
  // 1.0002 x 10.0075 = 10.00950150 USD = 10,009,501.5 micro: a tie, to the even 10,009,502.
  ['1.0002', '10.0075', 10_009_502n, 'a tie rounds up to even'],
  // 1.0001 x 10.0003 = 10.00130003 USD = 10,001,300.03 micro: below the half, down.
  ['1.0001', '10.0003', 10_001_300n, 'below one half rounds down'],
];

describe('fill quote: one half-even rounding, zero-sum', () => {
  const spec = instrument(SETTINGS);

  for (const [qty, price, quote, why] of CASES) {
    it(`quoteAmount ${qty} x ${price}: ${why}`, () => {
      expect(quoteAmount(spec, units(qty, 4), px(price))).toBe(quote);
    });
  }

  it('a real fill moves exactly the half-even quote from buyer to seller', () => {
    const v = new TestVenue();
    v.list(SETTINGS);
    for (const w of [BUYER, SELLER]) {
      v.open(w);
      v.fund(w, '1000');
    }
    let moved = 0n;
    for (const [qty, price, quote] of CASES) {
      v.expectOk(v.place(SELLER, SYM, { side: 'Sell', qty, price }));
      v.expectOk(v.place(BUYER, SYM, { side: 'Buy', qty, price }));
      moved += quote;
      // Same amount, opposite signs: the buyer pays what the seller receives, to the micro-unit.
      expect(v.state.accounts.get(BUYER)!.crossCash).toBe(usd('1000') - moved);
      expect(v.state.accounts.get(SELLER)!.crossCash).toBe(usd('1000') + moved);
    }
    // 10,008,501 + 10,004,500 + 10,009,502 + 10,001,300 = 40,023,803.
    expect(moved).toBe(40_023_803n);
    expect(v.state.feePool).toBe(0n);
  });
});
