/**
 * ADL at a bankruptcy price that does not terminate (engine-rules 1 and 7): the price rounds
 * toward the liquidated scope (up for a long) and the cash leg rounds the same way, so the scope
 * never ends below zero by a fraction the venue would have to cover. The other ADL goldens close
 * at whole bankruptcy prices (90, 89.7), where both directions agree; found by mutation.
 *
 * Units: prices 1e18, collateral micro-units (1e6); quantities whole contracts.
 */
import { describe, expect, it } from 'vitest';
import type { LiquidationReport } from '../src/index.js';
import { TestVenue, usd, wallet, wholeLotSettings } from '../src/testing/index.js';

const GOLD = wallet(0xb1);
const SHORT = wallet(0xb2);
const MM = wallet(0xb3);
const SYM = 'THIRD-PERP';

describe('ADL at a non-terminating bankruptcy price', () => {
  it('closes an isolated long 3 at ceil(200/3) and leaves the scope at +1 micro-unit, not below 0', () => {
    const v = new TestVenue();
    v.list(wholeLotSettings(SYM));
    for (const w of [GOLD, SHORT, MM]) v.open(w);
    v.fund(SHORT, '10000');
    v.fund(MM, '100000');
    v.fund(GOLD, '100', SYM);
    v.oracle({ [SYM]: '100' });
    v.expectOk(v.place(SHORT, SYM, { side: 'Sell', qty: '3', price: '100' }));
    v.expectOk(v.place(GOLD, SYM, { side: 'Buy', qty: '3', price: '100', isolated: true }));
    // Ri = 100 - 300 = -200: bankruptcy price -Ri / s = 200/3 = 66.666...
    expect(v.state.accounts.get(GOLD)!.isolated[0]!.cash).toBe(usd('-200'));
    // A gap to 60 (a one-tick quote around it makes the mark the index): equity -200 + 180 < 0,
    // nothing bids at or above 66.67 and the insurance fund is empty, so SHORT is deleveraged.
    v.expectOk(v.place(MM, SYM, { side: 'Buy', qty: '1', price: '59.5' }));
    v.expectOk(v.place(MM, SYM, { side: 'Sell', qty: '1', price: '60.5' }));
    const events = v.oracle({ [SYM]: '60' });
    const liq = events.filter(
      (e): e is LiquidationReport => e.type === 'executionReport' && e.kind === 'Liquidation',
    );
    // 200/3 at 18 decimals, rounded up for a long: 66.666666666666666667.
    expect(liq.map((r) => [r.account, r.method, r.fill.quantity, r.fill.price])).toEqual([
      [GOLD, 'ADL', 3n, 66_666_666_666_666_666_667n],
    ]);
    // Cash leg: 3 x 66.666666666666666667 = 200.000000000000000001 USD, up to 200,000,001
    // micro-units. GOLD's pool: -200,000,000 + 200,000,001 = 1.
    expect(v.state.accounts.get(GOLD)!.positions).toEqual([]);
    expect(v.state.accounts.get(GOLD)!.isolated[0]!.cash).toBe(1n);
    // SHORT pays it: 10,000 + 300 - 200.000001.
    expect(v.state.accounts.get(SHORT)!.crossCash).toBe(usd('10099.999999'));
    expect(v.state.insuranceFund).toBe(0n);
  });
});
