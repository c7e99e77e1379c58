/**
 * The displayed liquidation price at its edges (engine-rules 4): `null` where none exists or it
 * would be <= 0, and, with margin tiers, the price solved in the tier that holds the notional at
 * that price rather than at the mark. The golden cases A and B only show positive prices in a
 * single tier, so neither rule was pinned by a number.
 *
 * Units: prices 1e18, collateral micro-units; whole-lot quantities.
 */
import { describe, expect, it } from 'vitest';
import { type AccountSummary, type AssetPosition, accountSummary } from '../src/index.js';
import { TestVenue, wallet, wholeLotSettings } from '../src/testing/index.js';

const LONG = wallet(0xe1);
const SHORT = wallet(0xe2);
const SYM = 'Z-PERP';

function summary(v: TestVenue, who: string): AccountSummary {
  return accountSummary(v.state, who, v.time)!;
}

function position(v: TestVenue, who: string, mode: 'Cross' | 'Isolated'): AssetPosition {
  return summary(v, who).assetPositions.find((p) => p.marginMode === mode)!;
}

/** LONG buys 10 @ 100 at 1x from SHORT (20x, 2.5% maintenance), LONG funded with `deposit`. */
function venue(deposit: string, isolated: boolean): TestVenue {
  const v = new TestVenue();
  v.list(wholeLotSettings(SYM)); // 20x max, maintenance 2.5 %, no fees
  for (const w of [LONG, SHORT]) v.open(w);
  v.fund(SHORT, '1000');
  if (isolated) v.fund(LONG, deposit, SYM);
  else v.fund(LONG, deposit);
  const mode = isolated ? 'Isolated' : 'Cross';
  v.expectOk(v.run({ type: 'updateLeverage', account: LONG, market: 1, mode, leverage: 100 }));
  v.oracle({ [SYM]: '100' });
  v.expectOk(v.place(SHORT, SYM, { side: 'Sell', qty: '10', price: '100' }));
  v.expectOk(v.place(LONG, SYM, { side: 'Buy', qty: '10', price: '100', isolated }));
  return v;
}

describe('liquidationPx is null where it would be <= 0', () => {
  it('a cross long paid in full (Rc = 0): the formula gives exactly 0, shown as null', () => {
    const v = venue('1000', false);
    expect(v.state.accounts.get(LONG)!.crossCash).toBe(0n);
    // M - (AVc - MMc) / (|s| (1 - mmr)) = 100 - (1,000 - 25) / 9.75 = 0.
    expect(position(v, LONG, 'Cross').liquidationPx).toBeNull();
    // The short side of the same trade (AVc 1,000, MMc 25): 100 + (1,000 - 25) / 10.25.
    expect(position(v, SHORT, 'Cross').liquidationPx).toBe('195.121951219512195122');
  });

  it('an isolated long paid in full (Ri = 0): (-Ri - 0) / (s - mmr |s|) = 0, shown as null', () => {
    const v = venue('1000', true);
    expect(v.state.accounts.get(LONG)!.isolated[0]!.cash).toBe(0n);
    expect(position(v, LONG, 'Isolated').liquidationPx).toBeNull();
  });

  it('a cross long with cash to spare: a negative price, shown as null', () => {
    const v = venue('1500', false);
    // 100 - (1,500 - 25) / 9.75 = -51.28...: no liquidation price.
    expect(position(v, LONG, 'Cross').liquidationPx).toBeNull();
  });
});

describe('liquidationPx with margin tiers', () => {
  it('solves in the tier of the notional at the liquidation price, not at the mark', () => {
    // 40x (1.25 %) up to 1,000,000 of notional, 20x (2.5 %) above, deduction 12,500.
    const v = new TestVenue();
    v.list({
      id: 1,
      symbol: 'X-PERP',
      tickSize: '1',
      lotSize: '1',
      quantityDecimals: 0,
      maxLeverage: 40,
      openInterestCap: '1000000',
      makerFeeRate: '0',
      takerFeeRate: '0',
      marginTiers: [{ notionalFloor: '1000000', maxLeverage: 20 }],
    });
    for (const w of [LONG, SHORT]) v.open(w);
    v.fund(LONG, '10000000');
    v.fund(SHORT, '200000', 'X-PERP');
    v.expectOk(
      v.run({ type: 'updateLeverage', account: SHORT, market: 1, mode: 'Isolated', leverage: 500 }),
    );
    v.oracle({ 'X-PERP': '30000' });
    v.expectOk(v.place(LONG, 'X-PERP', { side: 'Buy', qty: '30', price: '30000' }));
    v.expectOk(
      v.place(SHORT, 'X-PERP', { side: 'Sell', qty: '30', price: '30000', isolated: true }),
    );
    // Isolated short 30, Ri = 200,000 + 900,000 = 1,100,000; notional 900,000 at the mark (tier 1).
    // Tier 1 would give 1,100,000 / 30.375 = 36,213.99..., a notional of 1,086,419 (tier 2:
    // inconsistent). Tier 2: 1,100,000 - 30 P = 0.75 P - 12,500, P = 1,112,500 / 30.75
    // = 4,450,000 / 123 = 36,178.8617886..., a notional of 1,085,365.85 (tier 2: consistent).
    expect(position(v, SHORT, 'Isolated').liquidationPx).toBe('36178.861788617886178862');
  });
});
