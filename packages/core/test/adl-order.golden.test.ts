/**
 * The ADL queue's tie-breaks (engine-rules 7.4): highest `pnlFactor x leverage` first, ties by
 * larger unrealized PnL, then the older position. The golden case C2 ranks two candidates by
 * score alone, so reversing either tie-break left the suite green.
 *
 * Setup: an isolated long (GOLD) whose mark gaps from 100 to 80 on a book with nothing bid near
 * its bankruptcy price 90, so it is deleveraged at 90 against the shorts. Whole lots, no fees.
 */
import { describe, expect, it } from 'vitest';
import type { AdlReport, EngineEvent } from '../src/index.js';
import { px, TestVenue, usd, wallet, wholeLotSettings } from '../src/testing/index.js';

const GOLD = wallet(0xb0);
const L = wallet(0xbf);
const MM = wallet(0xbe);
const SYM = 'ISO-PERP';

function adl(events: readonly EngineEvent[]): [string, bigint, bigint, number][] {
  return events
    .filter((e): e is AdlReport => e.type === 'executionReport' && e.kind === 'ADL')
    .map((r) => [r.account, r.fill.quantity, r.fill.price, r.rank]);
}

/** Lists the market, opens and funds `shorts` (address, deposit) and GOLD's isolated pool. */
function venue(shorts: [string, string][], goldMargin: string): TestVenue {
  const v = new TestVenue();
  v.list(wholeLotSettings(SYM, 3));
  for (const w of [GOLD, L, MM, ...shorts.map(([a]) => a)]) v.open(w);
  for (const [a, deposit] of shorts) v.fund(a, deposit);
  v.fund(L, '100000');
  v.fund(MM, '100000');
  v.fund(GOLD, goldMargin, SYM);
  v.oracle({ [SYM]: '100' });
  return v;
}

/** `seller` sells `qty` @ 100 to `buyer` (GOLD buys isolated). */
function trade(v: TestVenue, seller: string, buyer: string, qty: string): void {
  v.expectOk(v.place(seller, SYM, { side: 'Sell', qty, price: '100' }));
  v.expectOk(v.place(buyer, SYM, { side: 'Buy', qty, price: '100', isolated: buyer === GOLD }));
}

/** The gap: quotes one tick under and at `mark` put the mark exactly on the index `mark`. */
function gap(v: TestVenue, mark = 80): EngineEvent[] {
  v.expectOk(v.place(MM, SYM, { side: 'Buy', qty: '1', price: String(mark - 0.5) }));
  v.expectOk(v.place(MM, SYM, { side: 'Sell', qty: '1', price: String(mark) }));
  const events = v.oracle({ [SYM]: String(mark) });
  expect(v.state.markets.get(3)!.prices.mark).toBe(px(String(mark)));
  return events;
}

describe('ADL score', () => {
  it("a short's pnlFactor is E / M: the higher entry ranks first at equal leverage", () => {
    // X short 10 @ 100 and Y short 10 @ 90, each with 1,000 of equity at mark 80 (leverage 0.8).
    // Scores E/M x 0.8: X 1.25 x 0.8 = 1.0, Y 1.125 x 0.8 = 0.9, so X first. (M/E would rank Y
    // first: 0.8 x 0.8 = 0.64 against 0.888... x 0.8 = 0.711...; so would the lower score.)
    const X = wallet(0xb5);
    const Y = wallet(0xb6);
    const v = venue(
      [
        [X, '800'],
        [Y, '900'],
      ],
      '100',
    );
    v.oracle({ [SYM]: '90' });
    v.expectOk(v.place(Y, SYM, { side: 'Sell', qty: '10', price: '90' }));
    v.expectOk(v.place(L, SYM, { side: 'Buy', qty: '10', price: '90' }));
    v.oracle({ [SYM]: '100' });
    trade(v, X, GOLD, '10'); // GOLD isolated long 10, Ri = 100 - 1,000 = -900
    const events = gap(v);
    // GOLD: -900 + 800 = -100 < 0: deleveraged at 90 against X alone, who buys back: 800 +
    // 1,000 - 900 = 900 of cash.
    expect(adl(events)).toEqual([[X, 10n, px('90'), 1]]);
    expect(v.state.accounts.get(X)!.crossCash).toBe(usd('900'));
    expect(v.state.accounts.get(Y)!.positions.map((p) => p.size)).toEqual([-10n]);
  });
});

describe('ADL tie-breaks', () => {
  it('equal scores: the larger unrealized PnL goes first', () => {
    const A = wallet(0xb1);
    const B = wallet(0xb2);
    // A short 10 with 1,000; B short 20 with 2,000 (B opened first). At mark 80 both have
    // pnlFactor 100/80 and leverage 800/1,200 = 1,600/2,400: the same score, 0.8333...; B's
    // unrealized PnL is 400, A's 200.
    const v = venue(
      [
        [A, '1000'],
        [B, '2000'],
      ],
      '150',
    );
    trade(v, B, L, '5');
    trade(v, B, GOLD, '15'); // GOLD isolated long 15, Ri = 150 - 1,500 = -1,350
    trade(v, A, L, '10');
    const events = gap(v);
    // GOLD: -1,350 + 15 x 80 = -150 < 0: deleveraged at 1,350 / 15 = 90, all against B.
    expect(adl(events)).toEqual([[B, 15n, px('90'), 1]]);
    expect(v.state.accounts.get(A)!.positions.map((p) => p.size)).toEqual([-10n]);
    expect(v.state.accounts.get(B)!.positions.map((p) => p.size)).toEqual([-5n]);
  });

  it('equal scores and unrealized PnL: the older position goes first', () => {
    // The older short has the larger address, so the address order would pick the other one.
    const OLD = wallet(0xb4);
    const NEW = wallet(0xb3);
    const v = venue(
      [
        [OLD, '1000'],
        [NEW, '1000'],
      ],
      '100',
    );
    trade(v, OLD, GOLD, '10'); // GOLD isolated long 10, Ri = 100 - 1,000 = -900
    trade(v, NEW, L, '10');
    const opened = (w: string) => v.state.accounts.get(w)!.positions[0]!.openedTime;
    expect(opened(OLD)).toBeLessThan(opened(NEW));
    const events = gap(v);
    // GOLD: -900 + 800 = -100 < 0: deleveraged at 90 against OLD alone.
    expect(adl(events)).toEqual([[OLD, 10n, px('90'), 1]]);
    expect(v.state.accounts.get(OLD)!.positions).toEqual([]);
    expect(v.state.accounts.get(NEW)!.positions.map((p) => p.size)).toEqual([-10n]);
  });
});

describe('a scope at exactly zero equity after the market step', () => {
  it('goes to ADL at once (the bankruptcy price is the mark), not to an auction', () => {
    const S = wallet(0xb7);
    const v = venue([[S, '1000']], '100');
    trade(v, S, GOLD, '10'); // GOLD isolated long 10, Ri = 100 - 1,000 = -900
    // Mark 90: GOLD's equity -900 + 900 = 0 < maintenance 22.5; nothing is bid at 90.
    const events = gap(v, 90);
    expect(events.filter((e) => e.type === 'auction')).toEqual([]);
    expect(v.state.auctions.size).toBe(0);
    expect(adl(events)).toEqual([[S, 10n, px('90'), 1]]);
    expect(v.state.accounts.get(GOLD)!.positions).toEqual([]);
    expect(v.state.accounts.get(GOLD)!.isolated).toEqual([{ market: 3, cash: 0n }]);
  });
});

describe('a counterparty with unrealized profit but no equity', () => {
  it('is deleveraged without a score (no division by its zero equity), capped at the mark', () => {
    // N (cross, 100): short 10 ISO-PERP @ 100 to GOLD and long 10 OTHER-PERP @ 100 from MM. In
    // one oracle command ISO drops to 80 and OTHER to 70: N's short gains 200, its long loses
    // 300, so its cross equity is 100 - 800 + 700 = 0 while GOLD (first by address) is
    // deleveraged against it. With no equity N scores nothing (a leverage over zero equity does
    // not exist) and buys back at most at the mark: 10 @ 80, not at GOLD's bankruptcy price 90.
    const G = wallet(0x01);
    const N = wallet(0xf0);
    const v = new TestVenue();
    v.list(wholeLotSettings(SYM, 3));
    v.list(wholeLotSettings('OTHER-PERP', 5));
    for (const w of [G, N, MM]) v.open(w);
    v.fund(N, '100');
    v.fund(MM, '100000');
    v.fund(G, '100', SYM);
    v.oracle({ [SYM]: '100', 'OTHER-PERP': '100' });
    v.expectOk(v.place(N, SYM, { side: 'Sell', qty: '10', price: '100' }));
    v.expectOk(v.place(G, SYM, { side: 'Buy', qty: '10', price: '100', isolated: true }));
    v.expectOk(v.place(MM, 'OTHER-PERP', { side: 'Sell', qty: '10', price: '100' }));
    v.expectOk(v.place(N, 'OTHER-PERP', { side: 'Buy', qty: '10', price: '100' }));
    for (const [symbol, mark] of [
      [SYM, 80],
      ['OTHER-PERP', 70],
    ] as const) {
      v.expectOk(v.place(MM, symbol, { side: 'Buy', qty: '1', price: String(mark - 0.5) }));
      v.expectOk(v.place(MM, symbol, { side: 'Sell', qty: '1', price: String(mark) }));
    }
    const events = v.oracle({ [SYM]: '80', 'OTHER-PERP': '70' });
    const adlOn = (market: number) =>
      events
        .filter((e): e is AdlReport => e.type === 'executionReport' && e.kind === 'ADL')
        .filter((r) => r.market === market)
        .map((r) => [r.account, r.fill.quantity, r.fill.price]);
    expect(adlOn(3)).toEqual([[N, 10n, px('80')]]);
    // GOLD's pool: -900 + 800 = -100, a debt nothing could pay (empty fund and fee pool).
    expect(v.state.accounts.get(G)!.isolated).toEqual([{ market: 3, cash: usd('-100') }]);
    // N, at zero equity, is then liquidated in turn and ends flat at zero.
    expect(v.state.accounts.get(N)!.positions).toEqual([]);
    expect(v.state.accounts.get(N)!.crossCash).toBe(0n);
  });
});
