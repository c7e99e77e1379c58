/**
 * What a withdrawal or a transfer must leave in a scope whose position the mark has carried into
 * a higher margin tier (engine-rules 2 and 4, research 1.2). The leverage setting was allowed when
 * the position was opened below the tier's floor; at the new notional the tier allows far less.
 * The withdrawal bound counted initial margin at the setting (20x here), below the tier's own
 * maintenance margin, so the displayed `transferable` could be withdrawn whole and the scope was
 * liquidated in the same command. The bound now counts each position's initial margin at its
 * leverage capped by its tier's maximum (2x here), which is never below maintenance margin.
 */
import { describe, expect, it } from 'vitest';
import { accountSummary, type EngineEvent, liveAuctions, type Outcome } from '../src/index.js';
import { TestVenue, usd, wallet, wholeLotSettings } from '../src/testing/index.js';

const A = wallet(0xb1);
const B = wallet(0xb2);
const MM = wallet(0xb3);

/**
 * T-PERP: 20x (mmr 2.5%) below 1,000 of notional, 2x (mmr 25%, deduction 225) from there. A long
 * 10 at 90 (900 of notional, fine at 20x) with 100 of margin; the mark then goes to 200: notional
 * 2,000 in the 2x tier, equity 100 - 900 + 2,000 = 1,200, maintenance 500 - 225 = 275.
 */
function venue(mode: 'Cross' | 'Isolated'): TestVenue {
  const v = new TestVenue();
  v.list({
    ...wholeLotSettings('T-PERP', 3),
    marginTiers: [{ notionalFloor: '1000', maxLeverage: 2 }],
  });
  for (const w of [A, B, MM]) v.open(w);
  v.fund(B, '100000');
  v.fund(MM, '100000');
  v.fund(A, '100', mode === 'Isolated' ? 'T-PERP' : undefined);
  v.oracle({ 'T-PERP': '90' });
  const isolated = mode === 'Isolated';
  v.expectOk(v.place(B, 'T-PERP', { side: 'Sell', qty: '10', price: '90' }));
  v.expectOk(v.place(A, 'T-PERP', { side: 'Buy', qty: '10', price: '90', isolated }));
  v.expectOk(v.place(MM, 'T-PERP', { side: 'Buy', qty: '1', price: '199.5' }));
  v.expectOk(v.place(MM, 'T-PERP', { side: 'Sell', qty: '1', price: '200.5' }));
  v.oracle({ 'T-PERP': '200' });
  expect(v.state.markets.get(3)!.prices.mark).toBe(200n * 10n ** 18n);
  const s = accountSummary(v.state, A, v.time)!;
  expect(s.maintenanceMarginUsed).toBe('275');
  return v;
}

const liquidated = (events: readonly EngineEvent[]): boolean =>
  events.some((e) => e.type === 'executionReport' && e.kind === 'Liquidation');
const outcome = (v: TestVenue, events: readonly EngineEvent[]): Outcome => v.outcome(events);

describe('a position carried into a higher margin tier', () => {
  it('keeps the tier initial margin on an isolated withdrawal: 1,200 - 1,000, not 1,200 - 200', () => {
    const v = venue('Isolated');
    const position = accountSummary(v.state, A, v.time)!.assetPositions[0]!;
    expect(position.transferable).toBe('200');
    const target = { mode: 'Isolated' as const, market: 3 };
    const over = v.run({ type: 'withdraw', account: A, amount: usd('200') + 1n, target });
    expect(outcome(v, over)).toMatchObject({ ok: false, code: 4100 });
    const exact = v.run({ type: 'withdraw', account: A, amount: usd('200'), target });
    expect(outcome(v, exact)).toMatchObject({ ok: true, kind: 'command' });
    expect(liquidated(exact)).toBe(false);
    expect(liveAuctions(v.state)).toEqual([]);
  });

  it('keeps it on a cross withdrawal and a transfer to isolated too', () => {
    const v = venue('Cross');
    expect(accountSummary(v.state, A, v.time)!.withdrawable).toBe('200');
    const moved = v.run({
      type: 'transferMargin',
      account: A,
      market: 3,
      amount: usd('200') + 1n,
      direction: 'crossToIsolated',
    });
    expect(outcome(v, moved)).toMatchObject({ ok: false, code: 4100 });
    const exact = v.run({
      type: 'withdraw',
      account: A,
      amount: usd('200'),
      target: { mode: 'Cross', market: 0 },
    });
    expect(outcome(v, exact)).toMatchObject({ ok: true, kind: 'command' });
    expect(liquidated(exact)).toBe(false);
  });
});
