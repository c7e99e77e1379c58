/**
 * The cross-venue sanity cases of research/perp-mechanics.md section 6.4 and the ADL scores of
 * golden case C2, driven through the engine and pinned by their exact numbers:
 *
 * - Drift: long 10 @ oracle 150, maintenance 5 %, collateral 300: liquidation price
 *   `150 - 225 / (10 x 0.95) = 2400 / 19 = 126.315789...`, the rules' cross formula; bankruptcy
 *   `150 - 300 / 10 = 120`.
 * - dYdX: 1 BTC long at 50,000, maintenance 600 (1.2 %), equity 450: liquidatable; bankruptcy
 *   `50,000 - 450 = 49,550`; a market-step fill at 49,775 with a 1.5 % liquidation fee pays
 *   `min(746.625, 225) = 225` to the insurance fund and leaves the account at exactly 0.
 * - Case C2's scores `pnlFactor x leverage`: S1 `(100/89)(4450/1000) = 5`, S2
 *   `(95/89)(7120/3560) = 190/89 = 2.134831...`; S3 (short at 85, a loss at 89) has none.
 */
import { describe, expect, it } from 'vitest';
import {
  accountSummary,
  adlQueue,
  bankruptcyPrice,
  type LiquidationReport,
  ratio,
  rcmp,
  reduced,
} from '../src/index.js';
import { px, TestVenue, usd, wallet, wholeLotSettings } from '../src/testing/index.js';

const GOLD = wallet(0x90);
const MAKER = wallet(0x91);
const MM = wallet(0x92);

describe('Drift sanity case: cross long 10 @ 150, maintenance 5 %, collateral 300', () => {
  it('liquidation price 2400/19 and bankruptcy price 120, exactly', () => {
    const v = new TestVenue();
    // 10x maximum: maintenance 1 / (2 x 10) = 5 %.
    v.list({ ...wholeLotSettings('SOL-PERP'), maxLeverage: 10, defaultLeverage: 10 });
    for (const w of [GOLD, MAKER]) v.open(w);
    v.fund(MAKER, '100000');
    v.fund(GOLD, '300');
    v.oracle({ 'SOL-PERP': '150' });
    v.expectOk(v.place(MAKER, 'SOL-PERP', { side: 'Sell', qty: '10', price: '150' }));
    v.expectOk(v.place(GOLD, 'SOL-PERP', { side: 'Buy', qty: '10', price: '150' }));
    v.oracle({ 'SOL-PERP': '150' });
    expect(v.state.markets.get(1)!.prices.mark).toBe(px('150'));
    const s = accountSummary(v.state, GOLD, v.time)!;
    expect(s.crossMarginSummary.accountValue).toBe('300');
    expect(s.crossMaintenanceMarginUsed).toBe('75');
    // 2400 / 19 = 126.315789473684210526|315..., half-even at 18 decimals.
    expect(s.assetPositions[0]!.liquidationPx).toBe('126.315789473684210526');
    const gold = v.state.accounts.get(GOLD)!;
    expect(rcmp(bankruptcyPrice(v.state, gold, gold.positions[0]!)!, ratio(120n))).toBe(0);
  });
});

describe('dYdX sanity case: 1 BTC long, maintenance 600, equity 450', () => {
  it('fills at 49,775 above the bankruptcy price 49,550; the fee is capped at the 225 left', () => {
    const v = new TestVenue();
    v.list({
      id: 1,
      symbol: 'BTC-PERP',
      tickSize: '0.5',
      lotSize: '0.001',
      quantityDecimals: 3,
      maxLeverage: 50,
      defaultLeverage: 50,
      maintenanceMarginRate: '0.012',
      openInterestCap: '1000',
      makerFeeRate: '0',
      takerFeeRate: '0',
      liquidation: { feeRate: '0.015' },
    });
    for (const w of [GOLD, MAKER, MM]) v.open(w);
    v.fund(MAKER, '1000000');
    v.fund(MM, '1000000');
    v.fund(GOLD, '1450');
    v.oracle({ 'BTC-PERP': '51000' });
    v.expectOk(v.place(MAKER, 'BTC-PERP', { side: 'Sell', qty: '1', price: '51000' }));
    v.expectOk(v.place(GOLD, 'BTC-PERP', { side: 'Buy', qty: '1', price: '51000' }));
    // The last trade at 50,000 and a book of one bid at 49,775 and one ask at 50,000: with the
    // index at 50,000 two of the mark's three terms are 50,000, so the mark is exactly 50,000.
    v.expectOk(v.place(MM, 'BTC-PERP', { side: 'Sell', qty: '0.001', price: '50000' }));
    v.expectOk(v.place(MAKER, 'BTC-PERP', { side: 'Buy', qty: '0.001', price: '50000' }));
    v.expectOk(v.place(MM, 'BTC-PERP', { side: 'Buy', qty: '1', price: '49775' }));
    v.expectOk(v.place(MM, 'BTC-PERP', { side: 'Sell', qty: '0.001', price: '50000' }));
    expect(v.state.insuranceFund).toBe(0n);
    const events = v.oracle({ 'BTC-PERP': '50000' });
    expect(v.state.markets.get(1)!.prices.mark).toBe(px('50000'));
    const start = events.find((e) => e.type === 'liquidationStarted')!;
    // Equity 1,450 - 51,000 + 50,000 = 450 < 600 = 50,000 x 1.2 %.
    expect(start).toMatchObject({ equity: usd('450'), maintenanceMargin: usd('600') });
    const liq = events.filter(
      (e): e is LiquidationReport => e.type === 'executionReport' && e.kind === 'Liquidation',
    );
    expect(liq.map((r) => [r.method, r.fill.quantity, r.fill.price, r.penalty])).toEqual([
      ['Market', 1000n, px('49775'), usd('225')],
    ]);
    // -49,550 + 49,775 = 225, all of it the fee (1.5 % of 49,775 = 746.625 is more): 0 left.
    expect(v.state.insuranceFund).toBe(usd('225'));
    const gold = v.state.accounts.get(GOLD)!;
    expect(gold.positions).toEqual([]);
    expect(gold.crossCash).toBe(0n);
  });

  it('the bankruptcy price is 50,000 - 450 = 49,550', () => {
    const v = new TestVenue();
    v.list({
      ...wholeLotSettings('BTC-PERP'),
      maxLeverage: 50,
      defaultLeverage: 50,
      maintenanceMarginRate: '0.012',
    });
    for (const w of [GOLD, MAKER]) v.open(w);
    v.fund(MAKER, '1000000');
    v.fund(GOLD, '1450');
    v.oracle({ 'BTC-PERP': '51000' });
    v.expectOk(v.place(MAKER, 'BTC-PERP', { side: 'Sell', qty: '1', price: '51000' }));
    v.expectOk(v.place(GOLD, 'BTC-PERP', { side: 'Buy', qty: '1', price: '51000' }));
    // Mark 50,500 (index 50,000, last trade 51,000): healthy, and the bankruptcy price does
    // not depend on the mark for a lone position: M - (Rc + s x M) / s = -Rc / s.
    v.oracle({ 'BTC-PERP': '50000' });
    const gold = v.state.accounts.get(GOLD)!;
    expect(gold.crossCash).toBe(usd('-49550'));
    expect(rcmp(bankruptcyPrice(v.state, gold, gold.positions[0]!)!, ratio(49_550n))).toBe(0);
  });
});

describe('golden case C2: the ADL scores', () => {
  it('S1 scores 5, S2 190/89, S3 is not in profit', () => {
    const S1 = wallet(0x71);
    const S2 = wallet(0x72);
    const S3 = wallet(0x73);
    const L1 = wallet(0x74);
    const v = new TestVenue();
    v.list(wholeLotSettings('ISO-PERP', 3));
    for (const w of [GOLD, S1, S2, S3, L1, MM]) v.open(w);
    v.fund(S1, '450');
    v.fund(S2, '3080');
    v.fund(S3, '10000');
    v.fund(L1, '100000');
    v.fund(MM, '1000000');
    // More than case C's 1,000, so GOLD is not liquidated at 89: only the scores are read.
    v.fund(GOLD, '5000', 'ISO-PERP');
    v.oracle({ 'ISO-PERP': '100' });
    const trade = (seller: string, buyer: string, qty: string, price: string) => {
      v.expectOk(v.place(seller, 'ISO-PERP', { side: 'Sell', qty, price }));
      v.expectOk(v.place(buyer, 'ISO-PERP', { side: 'Buy', qty, price, isolated: buyer === GOLD }));
    };
    trade(S1, GOLD, '50', '100');
    trade(S2, L1, '80', '95');
    trade(S3, L1, '30', '85');
    trade(L1, GOLD, '50', '100');
    // Mark 89 exactly: index 89, quotes one tick under and at it.
    v.expectOk(v.place(MM, 'ISO-PERP', { side: 'Buy', qty: '1', price: '88.5' }));
    v.expectOk(v.place(MM, 'ISO-PERP', { side: 'Sell', qty: '1', price: '89' }));
    v.oracle({ 'ISO-PERP': '89' });
    expect(v.state.markets.get(3)!.prices.mark).toBe(px('89'));
    const queue = adlQueue(v.state, { account: GOLD, mode: 'Isolated' }, 3, 1n);
    const row = (w: string) => queue.find((c) => c.account === w)!;
    // S1: 450 + 50 x (100 - 89) = 1,000 of equity; S2: 3,080 + 80 x (95 - 89) = 3,560.
    expect(reduced(row(S1).score)).toEqual(ratio(5n));
    expect(reduced(row(S2).score)).toEqual(ratio(190n, 89n));
    expect(row(S3).profitable).toBe(false);
    expect(queue.slice(0, 3).map((c) => c.account)).toEqual([S1, S2, S3]);
  });
});
