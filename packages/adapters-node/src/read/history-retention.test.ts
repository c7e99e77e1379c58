/**
 * How much history a store keeps per account: the newest `maxClosedOrders` ended orders and
 * `maxTrades` fills; working orders are never dropped.
 */
import { BTC_SETTINGS, TestVenue, wallet } from '@perp/core/testing';
import { describe, expect, it } from 'vitest';
import { HistoryStore } from './history.js';

describe('retention', () => {
  it('keeps the newest maxClosedOrders ended orders and maxTrades fills; working orders always stay', () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    const [a, b] = [wallet(1), wallet(2)];
    for (const w of [a, b]) {
      v.open(w);
      v.fund(w, '100000');
    }
    v.oracle({ 'BTC-PERP': '65000' });
    // Fractional limits (computed ones) keep the whole rows below them.
    const h = new HistoryStore({ maxClosedOrders: 2.5, maxTrades: 3.9 });
    const seen = v.history.length;
    v.place(a, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: '60000' });
    // Four orders of `a` fill against `b`'s resting ones and end (Filled): two are kept.
    for (let i = 0; i < 4; i++) {
      v.place(b, 'BTC-PERP', { side: 'Sell', qty: '0.01', price: String(65000 + i) });
      v.place(a, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: String(65000 + i) });
    }
    h.apply({ commands: [], events: v.history.slice(seen), state: v.state });
    const closed = h.orders(a, { status: 'closed' }, v.time).rows;
    expect(closed.map((o) => o.price)).toEqual(['65003', '65002']);
    expect(h.orders(a, { status: 'open' }, v.time).rows.map((o) => o.price)).toEqual(['60000']);
    expect(h.trades(a, {}, v.time).rows.map((t) => t.lastPx)).toEqual(['65003', '65002', '65001']);
  });

  it('keeps the newest rows across the drops that move its lists down (over a thousand evictions)', () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    const [a, b] = [wallet(1), wallet(2)];
    for (const w of [a, b]) {
      v.open(w);
      v.fund(w, '10000000');
    }
    v.oracle({ 'BTC-PERP': '65000' });
    const h = new HistoryStore({ maxClosedOrders: 2, maxTrades: 3 });
    let seen = v.history.length;
    let firstId: string | undefined;
    const rounds = 1_100;
    for (let i = 0; i < rounds; i++) {
      const side = i % 2 === 0 ? 'Buy' : 'Sell';
      const other = i % 2 === 0 ? 'Sell' : 'Buy';
      const price = String(65000 + (i % 50));
      v.place(b, 'BTC-PERP', { side: other, qty: '0.01', price });
      v.place(a, 'BTC-PERP', { side, qty: '0.01', price });
      h.apply({ commands: [], events: v.history.slice(seen), state: v.state });
      seen = v.history.length;
      firstId ??= h.orders(a, { status: 'closed' }, v.time).rows[0]?.orderId;
    }
    const closed = h.orders(a, { status: 'closed', limit: 10 }, v.time).rows;
    expect(closed).toHaveLength(2);
    const trades = h.trades(a, { limit: 10 }, v.time).rows;
    expect(trades.map((t) => t.lastPx)).toEqual(
      [rounds - 1, rounds - 2, rounds - 3].map((i) => String(65000 + (i % 50))),
    );
    expect(trades[0]?.orderId).toBe(closed[0]?.orderId);
    // An evicted order is gone from every read, a lookup by its id included.
    expect(firstId).toBeDefined();
    expect(h.orders(a, { orderId: firstId }, v.time).rows).toEqual([]);
  });
});
