/**
 * The liquidation market step at a bankruptcy price off the tick grid, and the liquidation fee
 * capped by what the scope has left (engine-rules 2 and 7). Golden case C's bankruptcy price
 * (90) sits on the tick and its fee (0.5% of 9,150) is far below the 150 left, so neither the
 * rounding of the book bound nor the cap was pinned.
 *
 * GOLD: isolated long 10 @ 100 with 98 of margin, Ri = 98 - 1,000 = -902, so the bankruptcy price
 * is 90.2, between the ticks 90 and 90.5. The mark drops to 91: equity -902 + 910 = 8 is below
 * the maintenance margin 22.75.
 */
import { describe, expect, it } from 'vitest';
import { type EngineEvent, type LiquidationReport, liveAuctions } from '../src/index.js';
import { px, TestVenue, usd, wallet, wholeLotSettings } from '../src/testing/index.js';

const GOLD = wallet(0xc0);
const S = wallet(0xc1);
const MM = wallet(0xc2);
const SYM = 'ISO-PERP';

function venue(feeRate = '0'): TestVenue {
  const v = new TestVenue();
  v.list({ ...wholeLotSettings(SYM, 3), liquidation: { feeRate } });
  for (const w of [GOLD, S, MM]) v.open(w);
  v.fund(S, '10000');
  v.fund(MM, '100000');
  v.fund(GOLD, '98', SYM);
  v.oracle({ [SYM]: '100' });
  v.expectOk(v.place(S, SYM, { side: 'Sell', qty: '10', price: '100' }));
  v.expectOk(v.place(GOLD, SYM, { side: 'Buy', qty: '10', price: '100', isolated: true }));
  expect(v.state.accounts.get(GOLD)!.isolated).toEqual([{ market: 3, cash: usd('-902') }]);
  return v;
}

/** MM bids 10 at `bid` and offers 1 at 91; the index 91 puts the mark on 91. */
function drop(v: TestVenue, bid: string): EngineEvent[] {
  v.expectOk(v.place(MM, SYM, { side: 'Buy', qty: '10', price: bid }));
  v.expectOk(v.place(MM, SYM, { side: 'Sell', qty: '1', price: '91' }));
  const events = v.oracle({ [SYM]: '91' });
  expect(v.state.markets.get(3)!.prices.mark).toBe(px('91'));
  return events;
}

function liquidations(events: readonly EngineEvent[]): LiquidationReport[] {
  return events.filter(
    (e): e is LiquidationReport => e.type === 'executionReport' && e.kind === 'Liquidation',
  );
}

describe('the market step never fills beyond the bankruptcy price', () => {
  it('a long bankrupt at 90.2 does not sell at 90: the bound rounds up to the tick, 90.5', () => {
    const v = venue();
    const events = drop(v, '90');
    expect(liquidations(events)).toEqual([]);
    // The bid at 90 is untouched; the whole position goes to the auction, 91 down to 90.2.
    expect(v.state.markets.get(3)!.bids.map((l) => [l.price, l.quantity])).toEqual([
      [px('90'), 10n],
    ]);
    expect(liveAuctions(v.state)).toMatchObject([
      { side: 'Buy', remaining: 10n, startPrice: px('91'), endPrice: px('90.2') },
    ]);
  });
});

describe('a maker rebate on a liquidation fill', () => {
  it('is not paid: the liquidated side pays no taker fee to fund it', () => {
    const v = new TestVenue();
    v.list({
      ...wholeLotSettings(SYM, 3),
      makerFeeRate: '-0.0001',
      takerFeeRate: '0.0003',
      liquidation: { feeRate: '0' },
    });
    for (const w of [GOLD, S, MM]) v.open(w);
    v.fund(S, '10000');
    v.fund(MM, '100000');
    v.fund(GOLD, '98.3', SYM);
    v.oracle({ [SYM]: '100' });
    v.expectOk(v.place(S, SYM, { side: 'Sell', qty: '10', price: '100' }));
    v.expectOk(v.place(GOLD, SYM, { side: 'Buy', qty: '10', price: '100', isolated: true }));
    // GOLD pays the 0.3 taker fee: Ri = 98.3 - 1,000 - 0.3 = -902; S gets its 0.1 rebate.
    expect(v.state.accounts.get(GOLD)!.isolated).toEqual([{ market: 3, cash: usd('-902') }]);
    expect(v.state.feePool).toBe(usd('0.2'));
    const events = drop(v, '90.5');
    const liq = liquidations(events);
    expect(liq.map((r) => [r.method, r.fill.quantity, r.fill.price])).toEqual([
      ['Market', 10n, px('90.5')],
    ]);
    // MM buys 10 @ 90.5 for exactly 905: no rebate of 0.0905, and the fee pool is unchanged.
    expect(v.state.accounts.get(MM)!.crossCash).toBe(usd('100000') - usd('905'));
    expect(v.state.feePool).toBe(usd('0.2'));
  });
});

describe('the liquidation fee', () => {
  it('is capped by what the scope has left: 3, not 0.5% of 905', () => {
    const v = venue('0.005');
    const fund0 = v.state.insuranceFund;
    // The bid at 90.5 is at the bound: GOLD sells 10 @ 90.5, leaving -902 + 905 = 3.
    const events = drop(v, '90.5');
    const liq = liquidations(events);
    expect(liq.map((r) => [r.method, r.fill.quantity, r.fill.price, r.penalty])).toEqual([
      ['Market', 10n, px('90.5'), usd('3')],
    ]);
    // 0.5% of 905 is 4.525, more than the 3 left: the fund takes the 3 and pays out nothing.
    const insurance = events.filter((e) => e.type === 'insurance');
    expect(insurance.map((e) => e.type === 'insurance' && [e.reason, e.delta])).toEqual([
      ['LiquidationFee', usd('3')],
    ]);
    expect(v.state.insuranceFund - fund0).toBe(usd('3'));
    expect(v.state.accounts.get(GOLD)!.isolated).toEqual([{ market: 3, cash: 0n }]);
  });
});

describe('the market step order', () => {
  it('takes the largest notional first, the lower market id on a tie', () => {
    // X (cross, 230) long 10 A-PERP (id 3) and 10 B-PERP (id 5) @ 100, A opened first. Both
    // marks drop to 90: notionals 900 and 900, equity 230 - 200 = 30 below the maintenance 45.
    // Selling A's 10 at 89.5 leaves 25 of equity against B's 22.5: healthy, B stays open.
    const X = wallet(0xc3);
    const v = new TestVenue();
    v.list(wholeLotSettings('A-PERP', 3));
    v.list(wholeLotSettings('B-PERP', 5));
    for (const w of [X, MM]) v.open(w);
    v.fund(X, '230');
    v.fund(MM, '100000');
    v.oracle({ 'A-PERP': '100', 'B-PERP': '100' });
    for (const symbol of ['A-PERP', 'B-PERP']) {
      v.expectOk(v.place(MM, symbol, { side: 'Sell', qty: '10', price: '100' }));
      v.expectOk(v.place(X, symbol, { side: 'Buy', qty: '10', price: '100' }));
    }
    for (const symbol of ['A-PERP', 'B-PERP']) {
      v.expectOk(v.place(MM, symbol, { side: 'Buy', qty: '10', price: '89.5' }));
      v.expectOk(v.place(MM, symbol, { side: 'Sell', qty: '1', price: '90' }));
    }
    const events = v.oracle({ 'A-PERP': '90', 'B-PERP': '90' });
    expect(liquidations(events).map((r) => [r.market, r.fill.quantity, r.fill.price])).toEqual([
      [3, 10n, px('89.5')],
    ]);
    expect(v.state.accounts.get(X)!.positions.map((p) => [p.market, p.size])).toEqual([[5, 10n]]);
  });
});
