import { describe, expect, it } from 'vitest';
import { BTC_SETTINGS, TestVenue, wallet, replacer } from '../src/testing/index.js';

describe('smoke', () => {
  it('matches two orders', () => {
    const v = new TestVenue({ checkPurity: true });
    v.list(BTC_SETTINGS);
    const a = wallet(1), b = wallet(2);
    v.open(a); v.open(b);
    v.fund(a, '100000'); v.fund(b, '100000');
    v.oracle({ 'BTC-PERP': '65000' });
    const e1 = v.place(a, 'BTC-PERP', { side: 'Buy', qty: '1', price: '65000' });
    console.log(JSON.stringify(e1.map(e => e.type === 'executionReport' ? [e.kind, e.seq] : e.type), replacer));
    const e2 = v.place(b, 'BTC-PERP', { side: 'Sell', qty: '0.4', price: '64990' });
    console.log(JSON.stringify(e2.map(e => e.type === 'executionReport' ? [e.kind, e.account.slice(-1), (e as any).fill?.quantity] : e.type), replacer));
    const acct = v.state.accounts.get(a)!;
    console.log(JSON.stringify(acct.positions, replacer), acct.crossCash);
    expect(acct.positions[0]!.size).toBe(4000n);
  });
});
