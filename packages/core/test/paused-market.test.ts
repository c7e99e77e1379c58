/**
 * What a market paused by the operator (`setMarketStatus` `Paused`, protocol.md section 8) still
 * does, as docs/risk-engine.md ("Paused markets") states it: prices, funding and liquidation go
 * on, cancels are accepted, and every new order is refused, a reduce-only one that would only
 * close a position included.
 */
import { describe, expect, it } from 'vitest';
import {
  type EngineEvent,
  type ExecutionReport,
  type OrderReport,
  positionOf,
} from '../src/index.js';
import { T0, TestVenue, wallet } from '../src/testing/index.js';
import { orderIdOf } from './order-events.js';

const A = wallet(0xf1);
const B = wallet(0xf2);
const C = wallet(0xf3);
const BTC = 'BTC-PERP';
const HOUR = 3_600_000;

/** BTC listed without fees, A long 0.01 and B short 0.01 at 10,000 (cross), then paused. */
function pausedVenue(): TestVenue {
  const v = new TestVenue({ checkPurity: true });
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
  });
  for (const w of [A, B, C]) {
    v.open(w);
    v.fund(w, '100000');
  }
  v.oracle({ [BTC]: '10000' });
  v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '0.01', price: '10000' }));
  v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '0.01', price: '10000' }));
  return v;
}

const pause = (v: TestVenue): void =>
  v.expectOk(v.run({ type: 'setMarketStatus', market: 1, status: 'Paused' }));

const kindsOf = (events: readonly EngineEvent[], account: string): string[] =>
  events
    .filter((e): e is ExecutionReport => e.type === 'executionReport' && e.account === account)
    .map((r) => r.kind);

describe('a paused market', () => {
  it('still takes oracle prices and settles funding', () => {
    const v = pausedVenue();
    pause(v);
    const priced = v.oracle({ [BTC]: '10000.3' });
    v.expectOk(priced);
    expect(priced).toContainEqual(
      expect.objectContaining({
        type: 'markChanged',
        market: 1,
        index: 10_000_300_000_000_000_000_000n,
      }),
    );
    expect(v.state.markets.get(1)!.prices.index).toBe(10_000_300_000_000_000_000_000n);
    // The hour's funding is paid as in an active market: the long pays, the short receives.
    const funded = v.run({ type: 'tick', time: T0 + HOUR });
    expect(funded).toContainEqual(expect.objectContaining({ type: 'fundingSettled' }));
    expect(kindsOf(funded, A)).toEqual(['Funding']);
    expect(kindsOf(funded, B)).toEqual(['Funding']);
    expect(v.state.markets.get(1)!.funding.lastFundingTime).toBe(T0 + HOUR);
  });

  it('accepts cancels and refuses every new order, a reduce-only close included', () => {
    const v = pausedVenue();
    const resting = orderIdOf(v.place(A, BTC, { side: 'Buy', qty: '0.01', price: '9000' }));
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '0.01', price: '9500' }));
    pause(v);

    // A's order that would only close its long: refused like any other, its nonce consumed.
    const close = v.place(A, BTC, { side: 'Sell', qty: '0.01', price: '9500', reduceOnly: true });
    expect(v.outcome(close)).toMatchObject({
      ok: false,
      code: 4000,
      message: 'INVALID_REQUEST: market BTC-PERP is paused',
      nonceConsumed: true,
    });
    const [rejected] = v.reports(close, A) as OrderReport[];
    expect(rejected).toMatchObject({ kind: 'OrderRejected' });
    expect(rejected!.order).toMatchObject({ reduceOnly: true, reason: 'MarketClosed' });
    expect(positionOf(v.state.accounts.get(A)!, 1, 'Cross')?.size).toBe(10n);

    const cancelled = v.cancel(A, BTC, { orderId: resting });
    v.expectOk(cancelled);
    expect(kindsOf(cancelled, A)).toEqual(['OrderCancelled']);
    v.expectOk(v.run({ type: 'cancelAll', account: C, market: 1 }));
    expect(v.state.markets.get(1)!.bids).toEqual([]);
  });

  it('still liquidates: the market step fills against the book', () => {
    const v = pausedVenue();
    // D: 0.1 long at 10,000 on a 100 USD isolated pool (bankruptcy price 9,000).
    const D = wallet(0xf4);
    v.open(D);
    v.fund(D, '100', BTC);
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '0.1', price: '10000' }));
    v.expectOk(v.place(D, BTC, { side: 'Buy', qty: '0.1', price: '10000', isolated: true }));
    // A book at 9,005 / 9,010 for the mark to follow the crash.
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '1', price: '9005' }));
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '1', price: '9010' }));
    pause(v);
    const crash = v.oracle({ [BTC]: '9050' });
    expect(kindsOf(crash, D)).toContain('Liquidation');
    expect(crash).toContainEqual(expect.objectContaining({ type: 'trade', market: 1 }));
    expect(positionOf(v.state.accounts.get(D)!, 1, 'Isolated')).toBeUndefined();
    expect(positionOf(v.state.accounts.get(C)!, 1, 'Cross')?.size).toBe(100n);
    expect(v.state.markets.get(1)!.status).toBe('Paused');
  });
});
