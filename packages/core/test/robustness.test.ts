/**
 * Minimal reproductions of what the robustness property (robustness.prop.test.ts) found: command
 * sequences a user or the operator can send that made the reducer throw or broke an invariant.
 * The test venue checks every invariant after every command.
 */
import { describe, expect, it } from 'vitest';
import { buildInstrument, type Order } from '../src/index.js';
import { BTC_SETTINGS, cloid, ETH_SETTINGS, px, TestVenue, wallet } from '../src/testing/index.js';

const BTC = 'BTC-PERP';

function venue(): { v: TestVenue; a: string; b: string; c: string } {
  const v = new TestVenue();
  v.list({ ...BTC_SETTINGS, openInterestCap: '1000000' });
  const [a, b, c] = [wallet(1), wallet(2), wallet(3)];
  for (const w of [a, b, c]) {
    v.open(w);
    v.fund(w, '1000000');
  }
  v.oracle({ [BTC]: '50000' });
  return { v, a, b, c };
}

describe('robustness reproductions', () => {
  it('a managed child that triggered and rests keeps its size when its entry order fills more', () => {
    // Before: the entry's later fill resized the resting child without its book level, so the
    // level's total (and the depth it publishes) went wrong, then negative as the child filled.
    const { v, a, b } = venue();
    v.expectOk(v.place(a, BTC, { side: 'Buy', qty: '1', price: '49000', cloid: cloid(7) }));
    v.expectOk(
      v.place(a, BTC, {
        side: 'Sell',
        qty: '1',
        type: 'StopLoss',
        trigger: '48000',
        price: '49500',
        managed: true,
        parentCloid: cloid(7),
      }),
    );
    v.expectOk(v.place(b, BTC, { side: 'Sell', qty: '0.2', price: '49000', tif: 'IOC' }));
    // The mark falls through the trigger: the child becomes a sell limit at 49,500 and rests.
    v.oracle({ [BTC]: '47000' });
    const child = (): Order => v.state.orders.get(2)!;
    expect(child().ordStatus).toBe('New');
    expect(child().slot).toBeGreaterThanOrEqual(0);
    expect(child().quantity).toBe(2000n);
    // The entry fills 0.3 more; the resting child stays at 0.2 and its level with it.
    v.expectOk(v.place(b, BTC, { side: 'Sell', qty: '0.3', price: '49000', tif: 'IOC' }));
    expect(child().quantity).toBe(2000n);
    const level = v.state.markets.get(1)!.asks.find((l) => l.price === px('49500'))!;
    expect(level.quantity).toBe(2000n);
  });

  it("a newer order that reuses an ended entry's cloid does not adopt its managed children", () => {
    const { v, a, b } = venue();
    v.expectOk(v.place(a, BTC, { side: 'Buy', qty: '1', price: '49000', cloid: cloid(9) }));
    v.expectOk(
      v.place(a, BTC, {
        side: 'Sell',
        qty: '1',
        type: 'StopLoss',
        trigger: '40000',
        managed: true,
        parentCloid: cloid(9),
      }),
    );
    v.expectOk(v.place(b, BTC, { side: 'Sell', qty: '0.3', price: '49000', tif: 'IOC' }));
    expect(v.state.orders.get(2)).toMatchObject({ armed: true, quantity: 3000n });
    // The entry ends with 0.3 filled; its child keeps protecting those 0.3.
    v.expectOk(v.cancel(a, BTC, { cloid: cloid(9) }));
    // A day later the cloid is free again and a new entry order takes it and fills 0.5.
    v.advance(86_400_001);
    v.oracle({ [BTC]: '50000' });
    v.expectOk(v.place(a, BTC, { side: 'Buy', qty: '1', price: '49000', cloid: cloid(9) }));
    v.expectOk(v.place(b, BTC, { side: 'Sell', qty: '0.5', price: '49000', tif: 'IOC' }));
    // Before: the old child was resized to the new order's 0.5.
    expect(v.state.orders.get(2)).toMatchObject({ armed: true, quantity: 3000n });
  });

  it('refuses a funding interval under a minute (missed intervals are settled one by one)', () => {
    const built = (intervalMs: number) =>
      buildInstrument({ ...BTC_SETTINGS, funding: { intervalMs } });
    expect(built(1)).toEqual({
      ok: false,
      error: 'funding.intervalMs must be at least one minute and divide a day',
    });
    expect(built(59_999).ok).toBe(false);
    expect(built(60_000).ok).toBe(true);
    expect(built(7_000_000).ok).toBe(false); // does not divide a day
  });

  it('refuses a maintenance rate at or above the initial rate at maximum leverage', () => {
    // Before: 50x with a 5% maintenance rate was accepted, and an order opened at 50x was
    // liquidated in the command that filled it.
    const built = (maxLeverage: number, rate: string) =>
      buildInstrument({ ...BTC_SETTINGS, maxLeverage, maintenanceMarginRate: rate });
    expect(built(50, '0.02')).toEqual({
      ok: false,
      error:
        'maintenanceMarginRate must be below the initial margin rate at maximum leverage (1 / 50)',
    });
    expect(built(50, '0.05').ok).toBe(false);
    expect(built(50, '0.019999').ok).toBe(true);
    expect(built(12.5, '0.08').ok).toBe(false); // 1 / 12.5 = 0.08
    expect(built(12.5, '0.0799').ok).toBe(true);
  });

  it('says a fractional command time is not whole milliseconds, not that it is in the past', () => {
    const v = new TestVenue();
    expect(() => v.run({ type: 'tick', time: v.state.time + 0.5 })).toThrow(
      /is not a whole number of milliseconds/,
    );
  });

  it('the mark stays positive when a stale basis outweighs the index of a market that never traded', () => {
    // Before: a user's quotes far below the index taught the basis EMA about -3,000; once they
    // were cancelled and the index fell to half, the mark (the mean of the index and the EMA
    // term, with no book and no trade) was -99.99, or 0 at 1,499.9925. A forced liquidation
    // at that mark then threw 'division by zero' in the ADL queue when its auction ended.
    const v = new TestVenue();
    v.list({ ...ETH_SETTINGS, openInterestCap: '1000000' });
    const ETH = 'ETH-PERP';
    const [a, b] = [wallet(1), wallet(2)];
    for (const w of [a, b]) {
      v.open(w);
      v.fund(w, '100000');
    }
    v.expectOk(v.place(a, ETH, { side: 'Buy', qty: '600', price: '0.01' }));
    v.expectOk(v.place(a, ETH, { side: 'Sell', qty: '300', price: '0.02' }));
    v.oracle({ [ETH]: '3000' });
    expect(v.state.markets.get(2)!.prices.mark).toBe(px('0.015'));
    v.expectOk(v.run({ type: 'cancelAll', account: a, market: 0 }));
    v.oracle({ [ETH]: '1400' });
    expect(v.state.markets.get(2)!.prices.mark).toBe(px('1400'));
    v.oracle({ [ETH]: '1499.9925' });
    expect(v.state.markets.get(2)!.prices.mark).toBe(px('1499.9925'));
    v.expectOk(v.place(a, ETH, { side: 'Sell', qty: '1', price: '1500' }));
    v.expectOk(v.place(b, ETH, { side: 'Buy', qty: '1', price: '1500' }));
    v.expectOk(v.run({ type: 'liquidate', account: b, mode: 'Cross', market: 0, force: true }));
    v.advance(40_000);
    expect(v.state.accounts.get(b)!.positions).toEqual([]);
  });
});
