/**
 * Funding and the margin pools (engine-rules 3 and 6), pinned to hand-computed numbers: the other
 * funding goldens pay cross positions only, so a payment booked to the wrong pool, or one payment
 * per account and market instead of one per position, failed no test (conservation holds either
 * way). Also pinned: the interval boundary (a position opened by a command at the funding time
 * pays nothing for it, one closed then pays the whole interval) and funding larger than a
 * pool's equity (paid in full, then that scope alone is liquidated in the same command, at its
 * bankruptcy price: an isolated one without touching the cross pool, the cross one without
 * touching an isolated pool).
 *
 * Units: prices 1e18, collateral micro-units, rates 1e18; quantities at 3 decimals.
 */
import { describe, expect, it } from 'vitest';
import {
  type EngineEvent,
  type ExecutionReport,
  isolatedCash,
  positionOf,
  solvencyReport,
} from '../src/index.js';
import { T0, TestVenue, usd, wallet } from '../src/testing/index.js';

const A = wallet(0xe1);
const B = wallet(0xe2);
const C = wallet(0xe3);
const BTC = 'BTC-PERP';
const HOUR = 3_600_000;

function venue(funding: Record<string, string> = {}): TestVenue {
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
    funding,
  });
  for (const w of [A, B, C]) {
    v.open(w);
    v.fund(w, '100000');
  }
  return v;
}

/** `[account, marginMode, payment]` of each Funding report among `events`. */
function payments(events: readonly EngineEvent[]): [string, string, bigint][] {
  return events.flatMap((e) =>
    e.type === 'executionReport' && e.kind === 'Funding'
      ? [[e.account, e.marginMode, e.payment] as [string, string, bigint]]
      : [],
  );
}

const cross = (v: TestVenue, w: string) => v.state.accounts.get(w)!.crossCash;
const iso = (v: TestVenue, w: string) => isolatedCash(v.state.accounts.get(w)!, 1);

describe('funding and the margin pools', () => {
  it('pays a cross and an isolated position of one account separately, each in its own pool', () => {
    const v = venue();
    v.fund(A, '100', BTC);
    // Index 10,000.3 and an empty book: no premium sample, the rate is 0.01% / 8 = 0.0000125.
    v.oracle({ [BTC]: '10000.3' });
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '0.01', price: '10000' }));
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '0.003', price: '10000' }));
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '0.007', price: '10000', isolated: true }));
    const [cross0, iso0, short0, fund0] = [
      cross(v, A),
      iso(v, A),
      cross(v, B),
      v.state.insuranceFund,
    ];

    const events = v.run({ type: 'tick', time: T0 + HOUR });
    // -s x I x rate, each position on its own, payers up and receivers down:
    //   A cross long 0.003:    30.0009 x 0.0000125 = 375.01125 micro-units, pays 376;
    //   A isolated long 0.007: 70.0021 x 0.0000125 = 875.02625 micro-units, pays 876;
    //   B cross short 0.01:   100.003 x 0.0000125 = 1,250.0375 micro-units, receives 1,250.
    // One payment for A's 0.01 would be 1,251 and the residue 1.
    expect(payments(events)).toEqual([
      [A, 'Cross', -376n],
      [A, 'Isolated', -876n],
      [B, 'Cross', 1250n],
    ]);
    expect(cross(v, A) - cross0).toBe(-376n);
    expect(iso(v, A) - iso0).toBe(-876n);
    expect(cross(v, B) - short0).toBe(1250n);
    expect(v.state.insuranceFund - fund0).toBe(2n);
  });

  it('a position opened at the funding time pays nothing for it; one closed then pays the interval', () => {
    const v = venue();
    v.oracle({ [BTC]: '10000' });
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '1', price: '10000' }));
    v.run({ type: 'tick', time: T0 + HOUR - 1 });
    // 01:00: funding of 00:00-01:00 runs first, when A holds nothing yet.
    const opened = v.run({
      type: 'placeOrder',
      time: T0 + HOUR,
      account: A,
      order: v.request(BTC, { side: 'Buy', qty: '1', price: '10000' }),
    });
    v.expectOk(opened);
    expect(payments(opened)).toEqual([]);
    expect(positionOf(v.state.accounts.get(A)!, 1, 'Cross')?.size).toBe(1000n);

    v.expectOk(
      v.place(C, BTC, { side: 'Buy', qty: '1', price: '10000' }, { time: T0 + 2 * HOUR - 1 }),
    );
    // 02:00: A's close in the same millisecond comes after the funding of 01:00-02:00, which A
    // pays in full (1 x 10,000 x 0.0000125 = 0.125) and C, whose bid opens its long, does not.
    const closed = v.run({
      type: 'placeOrder',
      time: T0 + 2 * HOUR,
      account: A,
      order: v.request(BTC, { side: 'Sell', qty: '1', price: '10000', reduceOnly: true }),
    });
    v.expectOk(closed);
    expect(payments(closed)).toEqual([
      [A, 'Cross', -usd('0.125')],
      [B, 'Cross', usd('0.125')],
    ]);
    expect(positionOf(v.state.accounts.get(A)!, 1, 'Cross')).toBeUndefined();
    expect(positionOf(v.state.accounts.get(C)!, 1, 'Cross')?.size).toBe(1000n);
  });

  it('funding beyond an isolated pool is paid in full, then the pool alone is liquidated', () => {
    // Interest 1.2 per 8 h within a clamp of 2: an hourly rate of 0.15 on an empty book.
    const v = venue({ interestRate8h: '1.2', premiumClamp: '2', capPerHour: '1' });
    v.fund(A, '1000', BTC);
    v.oracle({ [BTC]: '10000' });
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '1', price: '10000' }));
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '1', price: '10000', isolated: true }));
    // A's isolated pool: 1,000 - 10,000 = -9,000, equity 1,000 at the mark 10,000.
    expect(iso(v, A)).toBe(usd('-9000'));

    const events = v.run({ type: 'tick', time: T0 + HOUR });
    // 1 x 10,000 x 0.15 = 1,500 > the pool's equity of 1,000: paid in full all the same.
    expect(payments(events)).toEqual([
      [A, 'Isolated', -usd('1500')],
      [B, 'Cross', usd('1500')],
    ]);
    // Equity -500 < 0: the scope is liquidated in the same command, at its bankruptcy price
    // -Ri / s = 10,500 (the empty book takes nothing), so it ends at exactly zero.
    const liq = events.find(
      (e): e is Extract<ExecutionReport, { kind: 'Liquidation' }> =>
        e.type === 'executionReport' && e.kind === 'Liquidation' && e.account === A,
    );
    expect(liq?.marginMode).toBe('Isolated');
    expect(liq?.fill.price).toBe(10_500n * 10n ** 18n);
    expect(positionOf(v.state.accounts.get(A)!, 1, 'Isolated')).toBeUndefined();
    expect(iso(v, A)).toBe(0n);
    // The cross pool never pays for an isolated scope (engine-rules 7).
    expect(cross(v, A)).toBe(usd('100000'));
    // B received 1,500 and bought back its short at 10,500: +10,000 - 10,500 + 1,500.
    expect(cross(v, B)).toBe(usd('101000'));
    expect(v.state.insuranceFund).toBe(0n);
    expect(solvencyReport(v.state).debts).toEqual([]);
  });
  it('funding beyond the cross pool liquidates the cross scope and leaves an isolated pool alone', () => {
    const v = venue({ interestRate8h: '1.2', premiumClamp: '2', capPerHour: '1' });
    v.list({
      id: 2,
      symbol: 'ETH-PERP',
      tickSize: '0.01',
      lotSize: '0.001',
      quantityDecimals: 3,
      maxLeverage: 25,
      defaultLeverage: 5,
      openInterestCap: '100000',
      makerFeeRate: '0',
      takerFeeRate: '0',
    });
    const D = wallet(0xe4); // cross 1,000 and ETH isolated 1,000
    v.open(D);
    v.fund(D, '1000');
    v.fund(D, '1000', 'ETH-PERP');
    v.oracle({ [BTC]: '10000', 'ETH-PERP': '3000' });
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '1', price: '10000' }));
    v.expectOk(v.place(D, BTC, { side: 'Buy', qty: '1', price: '10000' }));
    v.expectOk(v.place(B, 'ETH-PERP', { side: 'Sell', qty: '1', price: '3000' }));
    v.expectOk(v.place(D, 'ETH-PERP', { side: 'Buy', qty: '1', price: '3000', isolated: true }));
    const isoEth = () => isolatedCash(v.state.accounts.get(D)!, 2);
    expect(cross(v, D)).toBe(usd('-9000'));
    expect(isoEth()).toBe(usd('-2000'));

    const events = v.run({ type: 'tick', time: T0 + HOUR });
    // BTC: 1 x 10,000 x 0.15 = 1,500 from the cross pool (equity 1,000); ETH at the default
    // interest rate: 1 x 3,000 x 0.0000125 = 0.0375 from the isolated pool.
    expect(payments(events).filter(([w]) => w === D)).toEqual([
      [D, 'Cross', -usd('1500')],
      [D, 'Isolated', -usd('0.0375')],
    ]);
    // The cross scope closes at its bankruptcy price 10,500 and ends at exactly zero; the
    // isolated ETH pool pays only its own funding.
    expect(positionOf(v.state.accounts.get(D)!, 1, 'Cross')).toBeUndefined();
    expect(cross(v, D)).toBe(0n);
    expect(positionOf(v.state.accounts.get(D)!, 2, 'Isolated')?.size).toBe(1000n);
    expect(isoEth()).toBe(usd('-2000.0375'));
    expect(solvencyReport(v.state).debts).toEqual([]);
  });
});
