import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { minuteOf, PrintLog } from './prints.js';
import {
  BUCKET_MS,
  DAY_MS,
  RollingWindow,
  type WindowStats,
  windowStart,
} from './rolling-window.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 200);
const T0 = 1_767_225_600_000;
const H = 3_600_000;

interface Trade {
  readonly price: bigint;
  readonly quantity: bigint;
  readonly quote: bigint;
  readonly time: number;
}

/** The documented definition, computed from every trade ever made. */
function reference(trades: readonly Trade[], time: number): WindowStats {
  const start = windowStart(time);
  const inside = trades.filter((t) => t.time >= start && t.time <= time);
  const before = trades.filter((t) => t.time < start);
  const open = before[before.length - 1]?.price ?? inside[0]?.price ?? null;
  const prices = inside.map((t) => t.price);
  const max = (xs: bigint[]) => xs.reduce((a, b) => (b > a ? b : a));
  const min = (xs: bigint[]) => xs.reduce((a, b) => (b < a ? b : a));
  return {
    open,
    high: prices.length > 0 ? max(prices) : open,
    low: prices.length > 0 ? min(prices) : open,
    last: trades.filter((t) => t.time <= time).at(-1)?.price ?? null,
    volume: inside.reduce((a, t) => a + t.quantity, 0n),
    quoteVolume: inside.reduce((a, t) => a + t.quote, 0n),
    trades: inside.length,
  };
}

describe('RollingWindow', () => {
  it('the window starts at the minute that contains time - 24 h', () => {
    expect(windowStart(T0 + DAY_MS)).toBe(T0);
    expect(windowStart(T0 + DAY_MS + 59_999)).toBe(T0);
    expect(windowStart(T0 + DAY_MS + 60_000)).toBe(T0 + 60_000);
  });

  it('is empty before the first trade', () => {
    expect(new RollingWindow().stats(T0)).toEqual({
      open: null,
      high: null,
      low: null,
      last: null,
      volume: 0n,
      quoteVolume: 0n,
      trades: 0,
    });
  });

  it('keeps the last trade before the window as open, and the price flat without trades', () => {
    const w = new RollingWindow();
    w.add(100n, 1n, 100n, T0);
    w.add(120n, 2n, 240n, T0 + H);
    w.add(90n, 1n, 90n, T0 + H + 30_000);
    expect(w.stats(T0 + 2 * H)).toEqual({
      open: 100n,
      high: 120n,
      low: 90n,
      last: 90n,
      volume: 4n,
      quoteVolume: 430n,
      trades: 3,
    });
    // T0 leaves the window one minute after T0 + 24 h.
    expect(w.stats(T0 + DAY_MS + 59_999)).toMatchObject({ open: 100n, trades: 3 });
    expect(w.stats(T0 + DAY_MS + 60_000)).toMatchObject({ open: 100n, high: 120n, trades: 2 });
    // Both trades of T0 + 1 h's minute leave together; their last price becomes open.
    expect(w.stats(T0 + H + DAY_MS + 60_000)).toEqual({
      open: 90n,
      high: 90n,
      low: 90n,
      last: 90n,
      volume: 0n,
      quoteVolume: 0n,
      trades: 0,
    });
    expect(w.size).toBe(0);
  });

  it('a seeded price is open and last until trades arrive', () => {
    const w = new RollingWindow();
    w.seed(500n);
    expect(w.stats(T0)).toMatchObject({ open: 500n, high: 500n, low: 500n, last: 500n, trades: 0 });
    w.add(510n, 1n, 510n, T0 + 1);
    expect(w.stats(T0 + 2)).toMatchObject({ open: 500n, high: 510n, low: 510n, last: 510n });
  });

  it('equals the definition over random trade sequences, in bounded memory', () => {
    const step = fc.record({
      gap: fc.oneof(
        fc.integer({ min: 0, max: 120_000 }),
        fc.integer({ min: 0, max: 3 * H }),
        fc.constantFrom(0, 1, BUCKET_MS, DAY_MS - BUCKET_MS, DAY_MS, DAY_MS + 1),
      ),
      price: fc.bigInt({ min: 1n, max: 1_000n }),
      quantity: fc.bigInt({ min: 1n, max: 1_000n }),
      query: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 200 }), (steps) => {
        const w = new RollingWindow();
        const trades: Trade[] = [];
        let time = T0;
        for (const s of steps) {
          time += s.gap;
          if (s.query) {
            expect(w.stats(time)).toEqual(reference(trades, time));
          } else {
            const t = { price: s.price, quantity: s.quantity, quote: s.price * s.quantity, time };
            trades.push(t);
            w.add(t.price, t.quantity, t.quote, t.time);
          }
          expect(w.size).toBeLessThanOrEqual(DAY_MS / BUCKET_MS + 1);
        }
        expect(w.stats(time)).toEqual(reference(trades, time));
      }),
      { numRuns: runs },
    );
  });
  it('restating a minute after a bust equals the definition over the trades left', () => {
    const step = fc.oneof(
      fc.record({
        kind: fc.constant('trade' as const),
        gap: fc.oneof(fc.integer({ min: 0, max: 120_000 }), fc.integer({ min: 0, max: 3 * H })),
        price: fc.bigInt({ min: 1n, max: 1_000n }),
        quantity: fc.bigInt({ min: 1n, max: 1_000n }),
      }),
      fc.record({ kind: fc.constant('bust' as const), pick: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 200 }), (steps) => {
        const w = new RollingWindow();
        const log = new PrintLog();
        const trades: (Trade & { id: number; busted: boolean })[] = [];
        let time = T0;
        for (const s of steps) {
          if (s.kind === 'trade') {
            time += s.gap;
            const t = {
              id: trades.length + 1,
              price: s.price,
              quantity: s.quantity,
              quote: s.price * s.quantity,
              time,
              busted: false,
            };
            trades.push(t);
            w.add(t.price, t.quantity, t.quote, t.time);
            log.add({ ...t, tradeId: t.id, at: t.time });
            log.prune(minuteOf(time - H));
          } else {
            // The engine busts trades of the last hour.
            const live = trades.filter((t) => !t.busted && t.time > time - H);
            const t = live[s.pick % Math.max(1, live.length)];
            if (t === undefined) continue;
            t.busted = true;
            expect(log.remove(t.id)).toMatchObject({ tradeId: t.id, price: t.price });
            const minute = minuteOf(t.time);
            expect(w.restate(minute, log.aggregate(minute, minute + BUCKET_MS, 'time'))).toBe(true);
          }
          expect(w.stats(time)).toEqual(
            reference(
              trades.filter((t) => !t.busted),
              time,
            ),
          );
        }
      }),
      { numRuns: runs },
    );
  });

  it('a restated minute outside the window changes nothing', () => {
    const w = new RollingWindow();
    w.add(100n, 1n, 100n, T0);
    expect(w.restate(T0 - BUCKET_MS, null)).toBe(false);
    expect(w.stats(T0)).toMatchObject({ open: 100n, trades: 1 });
    expect(w.restate(T0, null)).toBe(true);
    expect(w.stats(T0)).toMatchObject({ open: null, last: null, trades: 0 });
  });
});
