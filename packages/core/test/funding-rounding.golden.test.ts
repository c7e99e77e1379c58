/**
 * Funding rounding (engine-rules 1 and 6): a payer's payment rounds up, a receiver's down, and the
 * difference goes to the insurance fund, not the fee pool and not back to anyone. The other
 * funding goldens pay amounts with no sub-micro fraction, so only the random risk properties
 * saw these three rules (payer up, receiver down, residue to the fund); this pins each of them
 * to a number computed by hand.
 *
 * Units: tick and lot 0.0001 at 4 quantity decimals; collateral micro-units; rates 1e18.
 */
import { describe, expect, it } from 'vitest';
import type { FundingReport } from '../src/index.js';
import { T0, TestVenue, usd, wallet } from '../src/testing/index.js';

const LONG = wallet(0xc1);
const SHORT = wallet(0xc2);
const SYM = 'FINE-PERP';
const HOUR = 3_600_000;

describe('funding: payers up, receivers down, residue to the insurance fund', () => {
  it('settles 1.0001 x 10.0003 at the interest-only rate with a residue of 1 micro-unit', () => {
    const v = new TestVenue();
    v.list({
      id: 1,
      symbol: SYM,
      tickSize: '0.0001',
      lotSize: '0.0001',
      quantityDecimals: 4,
      maxLeverage: 50,
      openInterestCap: '1000000',
      makerFeeRate: '0',
      takerFeeRate: '0',
    });
    for (const w of [LONG, SHORT]) {
      v.open(w);
      v.fund(w, '100');
    }
    v.expectOk(v.place(SHORT, SYM, { side: 'Sell', qty: '1.0001', price: '10.0003' }));
    v.expectOk(v.place(LONG, SYM, { side: 'Buy', qty: '1.0001', price: '10.0003' }));
    // Index 10.0003, and the book is empty: no premium sample, so the rate is the interest term
    // alone, 0.01% per 8 h = 0.0000125 for the hour.
    v.oracle({ [SYM]: '10.0003' });
    // The quote 10,001,300.03 rounds half-even to 10,001,300 (no fees).
    const longCash = usd('100') - 10_001_300n;
    const shortCash = usd('100') + 10_001_300n;
    expect(v.state.accounts.get(LONG)!.crossCash).toBe(longCash);
    expect(v.state.accounts.get(SHORT)!.crossCash).toBe(shortCash);
    const fund0 = v.state.insuranceFund;
    const fees0 = v.state.feePool;

    const events = v.run({ type: 'tick', time: T0 + HOUR });
    const paid = events.filter(
      (e): e is FundingReport => e.type === 'executionReport' && e.kind === 'Funding',
    );
    expect(paid.map((r) => r.fundingRate)).toEqual([12_500_000_000_000n, 12_500_000_000_000n]);
    // -s x I x rate = 1.0001 x 10.0003 x 0.0000125 USD = 125.01625375 micro-units:
    // the long pays ceil = 126, the short receives floor = 125, the insurance fund gets 1.
    const byAccount = new Map(paid.map((r) => [r.account, r.payment]));
    expect(byAccount.get(LONG)).toBe(-126n);
    expect(byAccount.get(SHORT)).toBe(125n);
    expect(v.state.accounts.get(LONG)!.crossCash).toBe(longCash - 126n);
    expect(v.state.accounts.get(SHORT)!.crossCash).toBe(shortCash + 125n);
    expect(v.state.insuranceFund - fund0).toBe(1n);
    expect(v.state.feePool - fees0).toBe(0n);
  });
});
