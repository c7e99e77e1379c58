/**
 * The ADL queue against an independent reading of engine-rules 7.4, over random books of shorts:
 * when an isolated long gaps below its bankruptcy price on an empty book, its counterparties are
 * the opposite positions with positive unrealized PnL (and positive scope equity), highest
 * `pnlFactor x leverage` first (`E/M` for a short, `|s| x M / equity of its scope`), ties by larger
 * unrealized PnL, then the older position (then the address, docs/risk-engine.md); the others
 * follow by unrealized PnL. The golden tests (`adl-order.golden.test.ts`, case C2) pin single
 * orders; here the whole fill sequence (who, which scope, how much, which rank) is recomputed
 * from the positions and pools before the gap, with the score in exact integers, and compared.
 *
 * The shorts trade at random prices (some below the gap's mark, so they lose and are not
 * profitable), in cross and isolated scopes, partly reduce (so `entryQty` exceeds the size), and in
 * twinned runs two accounts with the same funds trade identically at the same times, so scores,
 * unrealized PnL and opening times tie and the address decides.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { type AdlReport, type EngineState, type MarginMode, notionalScale } from '../src/index.js';
import { px, TestVenue, wallet, wholeLotSettings } from '../src/testing/index.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 1000);
const SYM = 'ISO-PERP';
const MARKET = 3;
const GOLD = wallet(0xd0);
const L = wallet(0xdf); // buys every short
const MM = wallet(0xde); // GOLD's seller, then flat again; the quotes that frame the mark
const BIG = wallet(0xdd); // a large short at 80: never in profit, so the queue can reach the losers
const SHORTS = Array.from({ length: 8 }, (_, i) => wallet(0xe0 + i));

interface Candidate {
  account: string;
  mode: MarginMode;
  size: bigint;
  entryNotional: bigint;
  entryQty: bigint;
  /** Scope equity at the mark, micro-units, `s x M` rounded down (as every margin decision). */
  equity: bigint;
  opened: number;
}

/** `a / b` against `c / d` (positive denominators). */
function cmpFrac(a: bigint, b: bigint, c: bigint, d: bigint): number {
  const l = a * d;
  const r = c * b;
  return l < r ? -1 : l > r ? 1 : 0;
}

/** The queue of engine-rules 7.4 against a long in `MARKET`, from `state` at `mark`. */
function expectedQueue(state: EngineState, mark: bigint): Candidate[] {
  const scale = notionalScale(state.markets.get(MARKET)!.spec);
  const out: Candidate[] = [];
  state.accounts.forEach((a) => {
    if (a.address === GOLD) return;
    for (const p of a.positions) {
      if (p.market !== MARKET || p.size >= 0n) continue;
      let equity =
        p.mode === 'Cross'
          ? a.crossCash
          : (a.isolated.find((x) => x.market === MARKET)?.cash ?? 0n);
      for (const q of a.positions) {
        if (q.mode !== p.mode || (p.mode === 'Isolated' && q.market !== MARKET)) continue;
        const raw = q.size * mark;
        equity += raw >= 0n ? raw / scale : -((-raw + scale - 1n) / scale);
      }
      out.push({
        account: a.address,
        mode: p.mode,
        size: p.size,
        entryNotional: p.entryNotional,
        entryQty: p.entryQty,
        equity,
        opened: p.openedTime,
      });
    }
  });
  // A short's unrealized PnL |s| x (E - M), E = entryNotional / entryQty: numerator over entryQty.
  const upnl = (c: Candidate) => -c.size * (c.entryNotional - mark * c.entryQty);
  const profitable = (c: Candidate) => upnl(c) > 0n && c.equity > 0n;
  // Score (E / M) x (|s| x M / equity) = |s| x E / equity.
  return out.sort((a, b) => {
    const pa = profitable(a);
    const pb = profitable(b);
    if (pa !== pb) return pa ? -1 : 1;
    if (pa) {
      const s = cmpFrac(
        -b.size * b.entryNotional,
        b.entryQty * b.equity,
        -a.size * a.entryNotional,
        a.entryQty * a.equity,
      );
      if (s !== 0) return s;
    }
    const u = cmpFrac(upnl(b), b.entryQty, upnl(a), a.entryQty);
    if (u !== 0) return u;
    if (a.opened !== b.opened) return a.opened - b.opened;
    if (a.account !== b.account) return a.account < b.account ? -1 : 1;
    return a.mode < b.mode ? -1 : 1;
  });
}

const tradeArb = fc.record({
  pair: fc.nat(SHORTS.length / 2 - 1),
  second: fc.boolean(),
  iso: fc.boolean(),
  qty: fc.integer({ min: 1, max: 40 }),
  ticks: fc.integer({ min: 160, max: 220 }), // 80 .. 110 on the 0.5 tick
  reduce: fc.integer({ min: 0, max: 3 }),
});

const seen = { runs: 0, fills: 0, twinned: 0, losers: 0 };

describe('ADL queue (engine-rules 7.4)', () => {
  afterAll(() => {
    // Not vacuous: most runs reach ADL, some in twinned runs, some reach shorts not in profit.
    expect(seen.runs).toBeGreaterThan(runs / 2);
    expect(seen.twinned).toBeGreaterThan(0);
    if (runs >= 200) expect(seen.losers).toBeGreaterThan(0);
  });

  it('deleverages exactly the positions, quantities and ranks of the rules, in order', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(60, 300, 1500), { minLength: 4, maxLength: 4 }),
        fc.array(tradeArb, { minLength: 3, maxLength: 20 }),
        fc.integer({ min: 160, max: 179 }), // the mark after the gap: 80 .. 89.5
        fc.boolean(),
        (funds, trades, markTicks, twinned) => {
          const v = new TestVenue();
          v.list(wholeLotSettings(SYM, MARKET));
          for (const w of [GOLD, L, MM, BIG, ...SHORTS]) v.open(w);
          SHORTS.forEach((w, i) => {
            const f = String(funds[i >> 1]!);
            v.fund(w, f);
            v.fund(w, f, SYM);
          });
          v.fund(L, '10000000');
          v.fund(MM, '10000000');
          v.fund(BIG, '10000000');
          v.fund(GOLD, '1000', SYM);
          v.oracle({ [SYM]: '100' });
          v.expectOk(v.place(BIG, SYM, { side: 'Sell', qty: '1000', price: '80' }));
          v.expectOk(v.place(L, SYM, { side: 'Buy', qty: '1000', price: '80' }));
          for (const t of trades) {
            const who = twinned
              ? [SHORTS[2 * t.pair]!, SHORTS[2 * t.pair + 1]!]
              : [SHORTS[2 * t.pair + (t.second ? 1 : 0)]!];
            const price = String(t.ticks / 2);
            const time = v.time + 1000;
            let sold = 0;
            for (const w of who) {
              const o = v.place(
                w,
                SYM,
                { side: 'Sell', qty: String(t.qty), price, isolated: t.iso },
                { time },
              );
              if (v.outcome(o).ok) sold += t.qty;
            }
            if (sold > 0) v.place(L, SYM, { side: 'Buy', qty: String(sold), price }, { time });
            for (const w of [...who, L]) v.run({ type: 'cancelAll', account: w, market: 0, time });
            if (t.reduce > 0 && sold > 0) {
              const q = String(Math.max(1, Math.floor(t.qty / (t.reduce + 1))));
              let bought = 0;
              for (const w of who) {
                const o = v.place(
                  w,
                  SYM,
                  { side: 'Buy', qty: q, price, isolated: t.iso, reduceOnly: true },
                  { time },
                );
                if (v.outcome(o).ok) bought += Number(q);
              }
              if (bought > 0)
                v.place(L, SYM, { side: 'Sell', qty: String(bought), price }, { time });
              for (const w of [...who, L])
                v.run({ type: 'cancelAll', account: w, market: 0, time });
            }
          }
          // GOLD: isolated long 100 @ 100 with 1,000: Ri = -9,000, bankruptcy price 90.
          v.expectOk(v.place(MM, SYM, { side: 'Sell', qty: '100', price: '100' }));
          v.expectOk(v.place(GOLD, SYM, { side: 'Buy', qty: '100', price: '100', isolated: true }));
          // MM buys its 100 back from L's long: the shorts are the random ones and BIG.
          v.expectOk(v.place(L, SYM, { side: 'Sell', qty: '100', price: '100' }));
          v.expectOk(v.place(MM, SYM, { side: 'Buy', qty: '100', price: '100' }));
          expect(v.state.accounts.get(MM)!.positions).toEqual([]);
          // The gap: quotes one tick under and at the mark (nothing bid near 90) frame it exactly.
          const mark = markTicks / 2;
          v.expectOk(v.place(MM, SYM, { side: 'Buy', qty: '1', price: String(mark - 0.5) }));
          v.expectOk(v.place(MM, SYM, { side: 'Sell', qty: '1', price: String(mark) }));
          const before = v.state;
          const events = v.oracle({ [SYM]: String(mark) });
          const M = v.state.markets.get(MARKET)!.prices.mark!;
          expect(M).toBe(px(String(mark)));
          // Only GOLD's liquidation, so the state before it is `before` at the new mark (a short
          // with a loss and little margin may be liquidated first: such a run checks nothing).
          const started = events.filter((e) => e.type === 'liquidationStarted');
          if (started.length !== 1 || started[0]!.account !== GOLD) return;
          const id = started[0]!.liquidationId;
          const got = events
            .filter((e): e is AdlReport => e.type === 'executionReport' && e.kind === 'ADL')
            .map((r) => {
              expect(r.adlId).toBe(id);
              return [r.account, r.marginMode, r.fill.quantity, r.rank];
            });
          const want: [string, MarginMode, bigint, number][] = [];
          let remaining = 100n;
          for (const c of expectedQueue(before, M)) {
            if (remaining === 0n) break;
            const q = -c.size < remaining ? -c.size : remaining;
            want.push([c.account, c.mode, q, want.length + 1]);
            remaining -= q;
            if (c.entryNotional <= M * c.entryQty) seen.losers++;
          }
          expect(got).toEqual(want);
          expect(v.state.accounts.get(GOLD)!.positions).toEqual([]);
          seen.runs++;
          seen.fills += got.length;
          if (twinned) seen.twinned++;
        },
      ),
      { numRuns: runs },
    );
  });
});
