/**
 * The liquidation boundary (engine-rules 7): a scope is liquidatable when its equity is *below*
 * its maintenance margin (`AVc < MMc`). Found by mutation: `equity < maintenance` -> `<=` passed
 * the whole suite, rules fingerprint included; no test put a scope exactly on the boundary.
 *
 * X-PERP at 20x, maintenance rate 1 / (2 x 20) = 2.5%. A cross long of 1,000 bought at 105 is
 * marked at 101.25 (the mean of the index 100 and the book median mean(bid 100, last 105)):
 *   MM = 1,000 x 101.25 x 2.5% = 2,531.25;  equity = deposit - 1,000 x (105 - 101.25)
 *      = deposit - 3,750.
 * A deposit of 6,281.25 puts equity exactly on MM; one micro-unit less puts it below.
 */
import { describe, expect, it } from 'vitest';
import { type EngineEvent, isLiquidatable } from '../src/index.js';
import { px, TestVenue, wallet, wholeLotSettings } from '../src/testing/index.js';

const GOLD = wallet(0xa7);
const MAKER = wallet(0xa8);
const MM = wallet(0xa9);
const SYM = 'X-PERP';

/** Opens the long with `deposit` and moves the mark to 101.25; returns the oracle's events. */
function markDown(deposit: string): { v: TestVenue; events: EngineEvent[] } {
  const v = new TestVenue();
  v.list(wholeLotSettings(SYM));
  for (const w of [GOLD, MAKER, MM]) v.open(w);
  v.fund(MAKER, '10000000');
  v.fund(MM, '10000000');
  v.fund(GOLD, deposit); // IM at placement 1,000 x 105 / 20 = 5,250
  v.oracle({ [SYM]: '105' });
  v.expectOk(v.place(MAKER, SYM, { side: 'Sell', qty: '1000', price: '105' }));
  v.expectOk(v.place(GOLD, SYM, { side: 'Buy', qty: '1000', price: '105' }));
  v.expectOk(v.place(MM, SYM, { side: 'Buy', qty: '5000', price: '100' }));
  const events = v.oracle({ [SYM]: '100' });
  expect(v.state.markets.get(1)!.prices.mark).toBe(px('101.25'));
  return { v, events };
}

const liquidations = (events: readonly EngineEvent[]) =>
  events.filter((e) => e.type === 'liquidationStarted');

describe('liquidatable means equity below maintenance margin, not equal to it', () => {
  it('equity exactly at maintenance (2,531.25 = 2,531.25): not liquidated', () => {
    const { v, events } = markDown('6281.25');
    expect(liquidations(events)).toEqual([]);
    expect(v.state.accounts.get(GOLD)!.positions.map((p) => p.size)).toEqual([1000n]);
  });

  it('one micro-unit below maintenance (2,531.249999): liquidated', () => {
    const { v, events } = markDown('6281.249999');
    expect(liquidations(events)).toHaveLength(1);
    // Above the 100,000 partial threshold: 20% (200) per step until healthy again.
    const left = v.state.accounts.get(GOLD)!.positions[0]?.size ?? 0n;
    expect(left < 1000n).toBe(true);
  });
});

describe('a scope without a position is never liquidatable', () => {
  it('not even below zero: a debt left after a deficit has nothing to auction', () => {
    expect(isLiquidatable({ equity: -1n, maintenance: 0n, hasPosition: false })).toBe(false);
    expect(isLiquidatable({ equity: -1n, maintenance: 0n, hasPosition: true })).toBe(true);
    expect(isLiquidatable({ equity: 5n, maintenance: 5n, hasPosition: true })).toBe(false);
  });
});
