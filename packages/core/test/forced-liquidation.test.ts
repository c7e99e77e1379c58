/**
 * An operator's forced liquidation of a healthy scope (engine-rules 7, "Manual liquidation ...
 * unless forced"; 7.5: "what remains of the scope's equity ... stays with the account"). The
 * scope is closed, but at the mark: its auction stays at the mark and what no one claims is
 * deleveraged at the mark, not at the bankruptcy price, which would hand a solvent account's
 * equity to its claimants and ADL counterparties (a 1x long's bankruptcy price is near 0).
 */
import { liveAuctions, positionOf } from '@perp/core';
import { TestVenue, usd, wallet, wholeLotSettings } from '@perp/core/testing';
import { describe, expect, it } from 'vitest';

const GOLD = 'GOLD-PERP';

function venue() {
  const v = new TestVenue();
  v.list({ ...wholeLotSettings(GOLD, 9), defaultLeverage: 1, maxLeverage: 20 });
  const [a, b] = [wallet(0xa1), wallet(0xb1)];
  v.open(a);
  v.open(b);
  v.fund(a, '1000', GOLD);
  v.fund(b, '100000');
  v.oracle({ [GOLD]: '100' });
  // A: isolated 1x long of 10 at 100 against B's cross short; then the index eases to 99.
  v.place(b, GOLD, { side: 'Sell', qty: '10', price: '100' });
  v.place(a, GOLD, { side: 'Buy', qty: '10', price: '100', isolated: true });
  v.oracle({ [GOLD]: '99' });
  return { v, a, b };
}

const isolatedCash = (v: TestVenue, w: string) =>
  v.state.accounts.get(w)!.isolated.find((p) => p.market === 9)?.cash ?? 0n;

describe('a forced liquidation of a healthy scope', () => {
  it('auctions at the mark and deleverages the rest at the mark: the account keeps its equity', () => {
    const { v, a, b } = venue();
    const mark = v.state.markets.get(9)!.prices.mark!;
    v.expectOk(v.run({ type: 'liquidate', account: a, mode: 'Isolated', market: 9, force: true }));
    // No bid: the market step fills nothing, the auction opens flat at the mark.
    const [auction] = liveAuctions(v.state);
    expect(auction).toMatchObject({ startPrice: mark, endPrice: mark, remaining: 10n });
    v.advance(v.spec(GOLD).liquidation.auctionDurationMs);
    expect(liveAuctions(v.state)).toEqual([]);
    expect(positionOf(v.state.accounts.get(a)!, 9, 'Isolated')).toBeUndefined();
    // A sold 10 at the mark: its pool (1,000 paid in, 1,000 paid for the long) holds the mark
    // value, 1,000 less its loss to the mark, not the 0.000001 the bankruptcy price left.
    const markValue = (mark * 10n) / 10n ** 12n; // 10 lots at the mark, in micro-units
    expect(markValue).toBe(usd('995'));
    expect(isolatedCash(v, a)).toBe(markValue);
    // B sold at 100 and bought back at the mark: it gained its unrealized PnL, nothing more.
    expect(v.state.accounts.get(b)!.crossCash - usd('100000')).toBe(usd('1000') - markValue);
  });
});
