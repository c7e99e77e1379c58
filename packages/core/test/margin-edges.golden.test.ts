/**
 * Margin boundaries that no golden pinned (found by mutating the code): lowering leverage to
 * exactly the equity (engine-rules 9: allowed while the scope "still covers" initial margin), and
 * an isolated pool left below zero by a deficit nothing could pay, which the account summary
 * still counts (engine-rules 4: `marginSummary` adds every isolated scope).
 *
 * Units: prices 1e18, collateral micro-units; whole-lot quantities, no fees.
 */
import { describe, expect, it } from 'vitest';
import { accountSummary, type EngineEvent } from '../src/index.js';
import { TestVenue, usd, wallet, wholeLotSettings } from '../src/testing/index.js';

const A = wallet(0xa1);
const B = wallet(0xa2);
const MM = wallet(0xa3);
const SYM = 'Z-PERP';

function code(events: readonly EngineEvent[]): number {
  const o = events.find((e) => e.type === 'outcome');
  return o !== undefined && o.type === 'outcome' && !o.ok ? o.code : 0;
}

describe('lowering leverage', () => {
  it('to an initial margin of exactly the equity is allowed; one step lower is not', () => {
    const v = new TestVenue();
    v.list(wholeLotSettings(SYM)); // 20x by default
    for (const w of [A, B]) v.open(w);
    v.fund(A, '500');
    v.fund(B, '100000');
    v.oracle({ [SYM]: '100' });
    v.expectOk(v.place(B, SYM, { side: 'Sell', qty: '10', price: '100' }));
    v.expectOk(v.place(A, SYM, { side: 'Buy', qty: '10', price: '100' }));
    // A: Rc = 500 - 1,000 = -500, AVc = -500 + 1,000 = 500.
    const lower = (leverage: number) =>
      v.run({ type: 'updateLeverage', account: A, market: 1, mode: 'Cross', leverage });
    // 1.99x: IM = ceil(1,000 / 1.99) = 502.512563 > 500.
    expect(code(lower(199))).toBe(4100);
    // 2x: IM = 500 = AVc, nothing left over and nothing missing.
    expect(code(lower(200))).toBe(0);
    const s = accountSummary(v.state, A, v.time)!;
    expect(s.assetPositions[0]!.leverage).toBe(2);
    expect(s.crossMarginSummary.totalMarginUsed).toBe('500');
    expect(s.withdrawable).toBe('0');
  });
});

describe('an isolated pool left below zero', () => {
  it('still shows in the account summary: its debt counts in the combined totals', () => {
    // X isolated long 100 A-PERP @ 100 from U (cross short, 1,030); U is also long 100 B-PERP
    // @ 100 from MM at a 0.3% taker fee, so the fee pool holds 30 and U's cash is 1,000. Both
    // marks gap to 70: X's isolated equity is -9,000 + 7,000 = -2,000, ADL is capped at U's
    // 1,000 of equity (U buys back at 80), so X's pool ends at -9,000 + 8,000 = -1,000 and the
    // fee pool pays 30 of it: -970 stays as X's debt.
    const X = wallet(0xa4);
    const U = wallet(0xa5);
    const v = new TestVenue();
    v.list(wholeLotSettings('A-PERP', 3));
    v.list({ ...wholeLotSettings('B-PERP', 5), takerFeeRate: '0.003' });
    for (const w of [X, U, MM]) v.open(w);
    v.fund(X, '1000', 'A-PERP');
    v.fund(U, '1030');
    v.fund(MM, '1000000');
    v.oracle({ 'A-PERP': '100', 'B-PERP': '100' });
    v.expectOk(v.place(U, 'A-PERP', { side: 'Sell', qty: '100', price: '100' }));
    v.expectOk(v.place(X, 'A-PERP', { side: 'Buy', qty: '100', price: '100', isolated: true }));
    v.expectOk(v.place(MM, 'B-PERP', { side: 'Sell', qty: '100', price: '100' }));
    v.expectOk(v.place(U, 'B-PERP', { side: 'Buy', qty: '100', price: '100' }));
    for (const symbol of ['A-PERP', 'B-PERP']) {
      v.expectOk(v.place(MM, symbol, { side: 'Buy', qty: '1', price: '69.5' }));
      v.expectOk(v.place(MM, symbol, { side: 'Sell', qty: '1', price: '70' }));
    }
    v.oracle({ 'A-PERP': '70', 'B-PERP': '70' });
    const x = v.state.accounts.get(X)!;
    expect(x.positions).toEqual([]);
    expect(x.isolated).toEqual([{ market: 3, cash: usd('-970') }]);
    const s = accountSummary(v.state, X, v.time)!;
    expect(s.assetPositions).toHaveLength(1);
    expect(s.assetPositions[0]).toMatchObject({
      instrument: 'A-PERP',
      marginMode: 'Isolated',
      szi: '0',
      marginUsed: '-970',
      transferable: '0',
      liquidationPx: null,
    });
    expect(s.marginSummary).toEqual({
      accountValue: '-970',
      totalMarginUsed: '-970',
      totalNtlPos: '0',
      totalRawUsd: '-970',
    });
    expect(s.crossMarginSummary.accountValue).toBe('0');
  });
});

describe('displayed notional', () => {
  it('positionValue and totalNtlPos round half-even: 1.0007 x 10.0009 = 10.00790063 -> 10.007901', () => {
    const v = new TestVenue();
    v.list({
      id: 1,
      symbol: 'FINE-PERP',
      tickSize: '0.0001',
      lotSize: '0.0001',
      quantityDecimals: 4,
      maxLeverage: 50,
      openInterestCap: '1000000',
      makerFeeRate: '0',
      takerFeeRate: '0',
    });
    for (const w of [A, B]) {
      v.open(w);
      v.fund(w, '100');
    }
    v.oracle({ 'FINE-PERP': '10.0009' });
    v.expectOk(v.place(B, 'FINE-PERP', { side: 'Sell', qty: '1.0007', price: '10.0009' }));
    v.expectOk(v.place(A, 'FINE-PERP', { side: 'Buy', qty: '1.0007', price: '10.0009' }));
    const s = accountSummary(v.state, A, v.time)!;
    expect(s.assetPositions[0]!.positionValue).toBe('10.007901');
    expect(s.crossMarginSummary.totalNtlPos).toBe('10.007901');
    expect(s.marginSummary.totalNtlPos).toBe('10.007901');
    // Equity rounds down: 100 - 10.007901 (the quote, half-even) + floor(10.00790063).
    expect(s.crossMarginSummary.accountValue).toBe('99.999999');
  });
});
