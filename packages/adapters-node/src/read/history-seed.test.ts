/**
 * After a restart from a snapshot the reports of orders placed before it are not replayed; the
 * history still lists the orders that are open (docs/durability.md, read models).
 */
import { BTC_SETTINGS, TestVenue, wallet } from '@perp/core/testing';
import { describe, expect, it } from 'vitest';
import { HistoryStore } from './history.js';

describe('history after a snapshot restart', () => {
  it('lists the working orders of the recovered state as open', () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    const a = wallet(1);
    v.open(a);
    v.fund(a, '100000');
    v.oracle({ 'BTC-PERP': '65000' });
    v.place(a, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: '64000' });
    v.place(a, 'BTC-PERP', { side: 'Sell', qty: '0.02', price: '66000' });
    const h = new HistoryStore();
    h.seedWorkingOrders(v.state);
    const page = h.orders(a, { status: 'open' }, v.time);
    expect(page.rows.map((r) => [r.side, r.price, r.quantity, r.closedTime])).toEqual([
      ['Sell', '66000', '0.02', null],
      ['Buy', '64000', '0.01', null],
    ]);
    expect(h.orders(wallet(2), {}, v.time).rows).toEqual([]);
  });
});

describe('the open-orders view', () => {
  it('lists a GTC order still working after the default 7-day window; other views keep the window', () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    const a = wallet(1);
    v.open(a);
    v.fund(a, '100000');
    v.oracle({ 'BTC-PERP': '65000' });
    v.place(a, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: '64000' });
    const h = new HistoryStore();
    h.seedWorkingOrders(v.state);
    const placedAt = v.time;
    v.advance(8 * 86_400_000);
    expect(h.orders(a, { status: 'open' }, v.time).rows.map((r) => r.ordStatus)).toEqual(['New']);
    expect(h.orders(a, {}, v.time).rows).toEqual([]);
    // An explicit window still applies to the open view.
    expect(h.orders(a, { status: 'open', startTime: placedAt + 1 }, v.time).rows).toEqual([]);
  });
});
