/**
 * The exported `bankruptcyPrice` is the bankruptcy price the engine liquidates at (it used to
 * give each cross position the whole scope equity; found by a review). docs/risk-engine.md defines it for a scope of exact equity A as
 * `P_k = M_k - A x (MM_k / sum MM) / s_k` (the equity shared among the scope's positions by
 * maintenance margin), and the engine's auctions end there and ADL fills there
 * (`bankruptcyRaw`). Giving every position the whole scope equity (`M - AVc / s`) agrees only
 * for a single position: a quant predicting an auction's end price was off by thousands.
 *
 * Golden case B of research perp-mechanics 6.4: long 1 BTC @ 60,000 (10x, maxLev 40), short 10
 * ETH @ 3,000 (5x, maxLev 25), deposit 20,000, no fees; marks 58,000 and 3,100.
 * AVc = 17,000, MM = 725 + 620 = 1,345.
 * BTC: 58,000 - 17,000 x 725/1,345 = 48,836.4312267657992565...
 * ETH: 3,100 + 17,000 x 620/1,345 / 10 = 3,883.6431226765799256...
 */

import {
  bankruptcyPrice,
  bankruptcyRaw,
  formatPrice,
  liquidationPrice,
  liveAuctions,
  positionOf,
  type Rational,
  toFixedHalfEven,
} from '@perp/core';
import { px, TestVenue, wallet, wholeLotSettings } from '@perp/core/testing';
import { describe, expect, it } from 'vitest';

function caseB(): { v: TestVenue; gold: string } {
  const v = new TestVenue();
  v.list({ ...wholeLotSettings('BTC-PERP', 1), maxLeverage: 40, defaultLeverage: 10 });
  v.list({ ...wholeLotSettings('ETH-PERP', 2), maxLeverage: 25, defaultLeverage: 5 });
  const [gold, maker] = [wallet(1), wallet(2)];
  v.open(gold);
  v.open(maker);
  v.fund(gold, '20000');
  v.fund(maker, '10000000');
  v.oracle({ 'BTC-PERP': '60000', 'ETH-PERP': '3000' });
  v.place(maker, 'BTC-PERP', { side: 'Sell', qty: '1', price: '60000' });
  v.place(gold, 'BTC-PERP', { side: 'Buy', qty: '1', price: '60000', tif: 'IOC' });
  v.place(maker, 'ETH-PERP', { side: 'Buy', qty: '10', price: '3000' });
  v.place(gold, 'ETH-PERP', { side: 'Sell', qty: '10', price: '3000', tif: 'IOC' });
  // No book and no basis EMA: the mark is the mean of the index and the last trade.
  v.oracle({ 'BTC-PERP': '56000', 'ETH-PERP': '3200' });
  expect(formatPrice(v.state.markets.get(1)!.prices.mark!)).toBe('58000');
  expect(formatPrice(v.state.markets.get(2)!.prices.mark!)).toBe('3100');
  return { v, gold };
}

const raw = (r: Rational | null): bigint | null => (r === null ? null : toFixedHalfEven(r, 18));

describe('bankruptcyPrice of a cross scope with two positions', () => {
  it('is the price the engine liquidates at (risk-engine.md: equity shared by MM)', () => {
    const { v, gold } = caseB();
    const account = v.state.accounts.get(gold)!;
    const btc = raw(bankruptcyPrice(v.state, account, positionOf(account, 1, 'Cross')!));
    const eth = raw(bankruptcyPrice(v.state, account, positionOf(account, 2, 'Cross')!));
    // The engine's own bankruptcy prices, as its market step, auctions and ADL take them.
    const engine = (market: number) =>
      formatPrice(
        bankruptcyRaw(v.state, account, 'Cross', 0, positionOf(account, market, 'Cross')!),
      );
    expect(engine(1)).toBe('48836.431226765799256506');
    expect(engine(2)).toBe('3883.64312267657992565');
    // The scope is healthy: a forced liquidation on an empty book auctions it at the mark, not
    // down to these prices (engine-rules 7.5: what remains stays with the account).
    v.run({ type: 'liquidate', account: gold, mode: 'Cross', market: 0, force: true });
    const paths = liveAuctions(v.state).map((a) => [a.market, a.startPrice, a.endPrice]);
    expect(paths).toEqual([
      [1, px('58000'), px('58000')],
      [2, px('3100'), px('3100')],
    ]);
    // Exact, rounded half-even to 18 decimals here; the engine rounds up for the long and
    // down for the short. Not 41,000 (58,000 - 17,000) and 4,800 (3,100 + 17,000 / 10).
    expect(formatPrice(btc!)).toBe('48836.431226765799256506');
    expect(formatPrice(eth!)).toBe('3883.643122676579925651');
  });

  it('prices a copy of a position record as the record itself (looked up by market)', () => {
    const { v, gold } = caseB();
    const account = v.state.accounts.get(gold)!;
    for (const market of [1, 2]) {
      const record = positionOf(account, market, 'Cross')!;
      const copy = { ...record };
      expect(raw(bankruptcyPrice(v.state, account, copy))).toBe(
        raw(bankruptcyPrice(v.state, account, record)),
      );
      expect(raw(liquidationPrice(v.state, account, copy))).toBe(
        raw(liquidationPrice(v.state, account, record)),
      );
    }
  });
});
