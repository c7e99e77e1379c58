import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CANDLE_INTERVALS,
  type Candle,
  type CandleChanges,
  type CandleInterval,
  CandleProjection,
  type CandleTrade,
  INTERVALS,
  isCandleInterval,
  MINUTES_KEPT_FOR_BUSTS,
  noCandleChanges,
  wireCandle,
} from './candles.js';

// 30 runs of up to 150 steps each (FC_NUM_RUNS raises it): each step re-checks every interval.
const runs = Number(process.env.FC_NUM_RUNS ?? 30);
const T0 = 1_767_225_600_000;
const M = 60_000;

const changes = (): CandleChanges => noCandleChanges();
let lastTradeId = 0;
/** A trade with the next trade id. */
const print = (price: bigint, quantity: bigint, quote: bigint, time: number): CandleTrade => ({
  tradeId: ++lastTradeId,
  price,
  quantity,
  quote,
  time,
});

describe('CandleProjection', () => {
  it('knows the twelve Binance intervals, each dividing a UTC day', () => {
    expect(INTERVALS).toEqual([
      '1m',
      '3m',
      '5m',
      '15m',
      '30m',
      '1h',
      '2h',
      '4h',
      '6h',
      '8h',
      '12h',
      '1d',
    ]);
    for (const i of INTERVALS) expect(86_400_000 % CANDLE_INTERVALS[i]).toBe(0);
    expect(isCandleInterval('1h')).toBe(true);
    expect(isCandleInterval('1w')).toBe(false);
    expect(isCandleInterval('toString')).toBe(false);
  });

  it('builds OHLCV from trades and closes each candle once, filling empty intervals', () => {
    const p = new CandleProjection();
    const out = changes();
    p.trade(1, print(100n, 2n, 200n, T0 + 5_000), out);
    p.trade(1, print(110n, 1n, 110n, T0 + 6_000), out);
    p.trade(1, print(95n, 1n, 95n, T0 + 59_999), out);
    expect(out.closed).toEqual([]);
    expect([...out.touched].sort()).toEqual(INTERVALS.map((i) => `1|${i}`).sort());
    expect(p.current(1, '1m')).toEqual({
      market: 1,
      interval: '1m',
      openTime: T0,
      closeTime: T0 + 59_999,
      open: 100n,
      high: 110n,
      low: 95n,
      close: 95n,
      volume: 4n,
      quoteVolume: 405n,
      trades: 3,
      closed: false,
    });
    expect(p.advance(T0 + 59_999)).toEqual([]);
    const closed = p.advance(T0 + 3 * M + 1).filter((c) => c.interval === '1m');
    expect(closed.map((c) => [c.openTime, c.open, c.close, c.volume, c.trades, c.closed])).toEqual([
      [T0, 100n, 95n, 4n, 3, true],
      [T0 + M, 95n, 95n, 0n, 0, true],
      [T0 + 2 * M, 95n, 95n, 0n, 0, true],
    ]);
    expect(p.advance(T0 + 3 * M + 2)).toEqual([]);
    // The next trade opens its candle at its own price.
    p.trade(1, print(97n, 1n, 97n, T0 + 3 * M + 10), changes());
    expect(p.current(1, '1m')).toMatchObject({
      openTime: T0 + 3 * M,
      open: 97n,
      high: 97n,
      low: 97n,
    });
    expect(p.current(1, '3m')).toMatchObject({ openTime: T0 + 3 * M, open: 97n, trades: 1 });
    expect(p.range(1, '3m').map((c) => [c.openTime, c.trades, c.closed])).toEqual([
      [T0, 3, true],
      [T0 + 3 * M, 1, false],
    ]);
  });

  it('a trade stamped before the open candle counts in it: a closed candle never changes', () => {
    const p = new CandleProjection();
    p.trade(1, print(100n, 1n, 100n, T0 + 1_000), changes());
    const [first] = p.advance(T0 + M);
    const snapshot = { ...first };
    p.trade(1, print(120n, 1n, 120n, T0 + 59_000), changes());
    expect(first).toEqual(snapshot);
    expect(p.current(1, '1m')).toMatchObject({ openTime: T0 + M, open: 120n, trades: 1 });
  });

  it('keeps the print of a trade at the prune floor itself: the engine can still bust it', () => {
    const p = new CandleProjection();
    const onTheMinute = print(100n, 1n, 100n, T0);
    p.trade(1, onTheMinute, changes());
    p.trade(1, print(101n, 1n, 101n, T0 + M), changes());
    // The floor is the minute of the oldest trade the engine retains: this one.
    p.prune(T0);
    expect(p.heldPrints).toBe(2);
    const out = changes();
    p.bust(1, onTheMinute.tradeId, out);
    expect(out.busts).toHaveLength(1);
    p.prune(T0 + M + 1);
    expect(p.heldPrints).toBe(0);
  });

  it('busting a trade that counted in a later candle restates that candle, not its own minute', () => {
    const p = new CandleProjection();
    p.trade(1, print(100n, 1n, 100n, T0 + 1_000), changes());
    const [first] = p.advance(T0 + M);
    const before = { ...first };
    // Stamped in the first minute, published after it closed: it counts in the second.
    const late = print(120n, 2n, 240n, T0 + 59_000);
    p.trade(1, late, changes());
    p.trade(1, print(110n, 1n, 110n, T0 + M + 5_000), changes());
    const out = changes();
    p.bust(1, late.tradeId, out);
    // The closed minute never held it: not restated, unchanged.
    expect(out.restated).toEqual([]);
    expect(first).toEqual(before);
    expect(p.current(1, '1m')).toMatchObject({
      openTime: T0 + M,
      open: 110n,
      high: 110n,
      low: 110n,
      close: 110n,
      volume: 1n,
      trades: 1,
    });
    expect(out.busts).toMatchObject([{ print: { ...late, at: T0 + M } }]);
  });

  it('keeps a bounded history and skips what a long gap would evict at once', () => {
    const F = 5 * M;
    const p = new CandleProjection(5);
    p.trade(1, print(100n, 1n, 100n, T0), changes());
    const closed = p.advance(T0 + 100 * F + 1).filter((c) => c.interval === '5m');
    expect(closed.map((c) => (c.openTime - T0) / F)).toEqual([0, 95, 96, 97, 98, 99]);
    expect(p.range(1, '5m').map((c) => (c.openTime - T0) / F)).toEqual([95, 96, 97, 98, 99, 100]);
    expect(p.range(1, '5m', { limit: 2 }).map((c) => (c.openTime - T0) / F)).toEqual([99, 100]);
    expect(
      p.range(1, '5m', { startTime: T0 + 96 * F, limit: 2 }).map((c) => (c.openTime - T0) / F),
    ).toEqual([96, 97]);
    expect(p.range(1, '5m', { endTime: T0 + 97 * F }).map((c) => (c.openTime - T0) / F)).toEqual([
      95, 96, 97,
    ]);
    // One-minute candles are kept for two days whatever the history size: busts restate from them.
    expect(p.range(1, '1m', { limit: 10_000 })).toHaveLength(501);
    p.advance(T0 + 3 * 86_400_000);
    expect(p.range(1, '1m', { limit: 10_000 })).toHaveLength(MINUTES_KEPT_FOR_BUSTS + 1);
    expect(p.range(2, '1m')).toEqual([]);
    expect(() => new CandleProjection(0)).toThrow(RangeError);
  });

  it('a bust restates the candles that held the trade and the empty ones that repeated its close', () => {
    const p = new CandleProjection();
    const first = print(100n, 2n, 200n, T0 + 5_000);
    const fatFinger = print(150n, 1n, 150n, T0 + 30_000);
    const third = print(101n, 1n, 101n, T0 + 50_000);
    for (const t of [first, fatFinger, third]) p.trade(1, t, changes());
    p.advance(T0 + 3 * M + 1);
    const fourth = print(102n, 1n, 102n, T0 + 3 * M + 10_000);
    p.trade(1, fourth, changes());
    const ohlcv = (c: Candle) => [
      c.openTime - T0,
      c.open,
      c.high,
      c.low,
      c.close,
      c.volume,
      c.trades,
    ];

    let out = changes();
    p.bust(1, fatFinger.tradeId, out);
    // The minute and the 3m candle are closed: both are sent again. The empty minutes after the
    // first repeat its close, which did not change. Every longer candle is still open.
    expect(out.restated.map((c) => [c.interval, ...ohlcv(c), c.closed])).toEqual([
      ['1m', 0, 100n, 101n, 100n, 101n, 3n, 2, true],
      ['3m', 0, 100n, 101n, 100n, 101n, 3n, 2, true],
    ]);
    expect([...out.touched].sort()).toEqual(
      INTERVALS.slice(2)
        .map((i) => `1|${i}`)
        .sort(),
    );
    expect(ohlcv(p.current(1, '1h') as Candle)).toEqual([0, 100n, 102n, 100n, 102n, 4n, 3]);
    expect(out.busts).toEqual([
      {
        market: 1,
        print: { ...fatFinger, at: fatFinger.time },
        minute: T0,
        left: {
          open: 100n,
          high: 101n,
          low: 100n,
          close: 101n,
          volume: 3n,
          quoteVolume: 301n,
          trades: 2,
        },
      },
    ]);

    // The minute's close moves: the two empty minutes after it follow.
    out = changes();
    p.bust(1, third.tradeId, out);
    expect(out.restated.filter((c) => c.interval === '1m').map(ohlcv)).toEqual([
      [0, 100n, 100n, 100n, 100n, 2n, 1],
      [M, 100n, 100n, 100n, 100n, 0n, 0],
      [2 * M, 100n, 100n, 100n, 100n, 0n, 0],
    ]);

    // A trade the projection does not hold changes nothing.
    out = changes();
    p.bust(1, 999_999, out);
    p.bust(2, first.tradeId, out);
    expect(out).toEqual(changes());

    // Without its first trade the market has not traded until the fourth.
    p.bust(1, first.tradeId, changes());
    expect(p.range(1, '1m').map(ohlcv)).toEqual([[3 * M, 102n, 102n, 102n, 102n, 1n, 1]]);
    expect(p.range(1, '1d').map(ohlcv)).toEqual([[0, 102n, 102n, 102n, 102n, 1n, 1]]);
    p.bust(1, fourth.tradeId, changes());
    for (const i of INTERVALS) expect(p.range(1, i)).toEqual([]);
    expect(p.current(1, '1m')).toBeUndefined();
  });

  it('a bust restates every interval from the trades left, as if the busted ones never traded', () => {
    const HOUR = 3_600_000;
    const step = fc.oneof(
      fc.record({
        kind: fc.constant('trade' as const),
        gap: fc.oneof(fc.integer({ min: 0, max: 90_000 }), fc.integer({ min: 0, max: 3 * HOUR })),
        price: fc.bigInt({ min: 1n, max: 500n }),
        quantity: fc.bigInt({ min: 1n, max: 50n }),
      }),
      fc.record({ kind: fc.constant('advance' as const), gap: fc.integer({ min: 0, max: HOUR }) }),
      // Busts reach back at most an hour, like the engine's default bust window.
      fc.record({ kind: fc.constant('bust' as const), pick: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 150 }), (steps) => {
        const p = new CandleProjection();
        const trades: (CandleTrade & { busted: boolean })[] = [];
        let time = T0;
        for (const s of steps) {
          if (s.kind === 'bust') {
            const live = trades.filter((t) => !t.busted && t.time > time - HOUR);
            const t = live[s.pick % Math.max(1, live.length)];
            if (t === undefined) continue;
            t.busted = true;
            p.bust(7, t.tradeId, changes());
            continue;
          }
          time += s.gap;
          if (s.kind === 'advance') p.advance(time);
          else {
            const t = print(s.price, s.quantity, s.price * s.quantity, time);
            trades.push({ ...t, busted: false });
            p.trade(7, t, changes());
          }
          p.prune(Math.floor((time - HOUR) / M) * M);
        }
        const left = trades.filter((t) => !t.busted);
        for (const interval of INTERVALS) {
          const ms = CANDLE_INTERVALS[interval];
          const held = p.range(7, interval, { limit: 1_000_000 });
          if (left.length === 0) {
            expect(held).toEqual([]);
            continue;
          }
          // The model: every interval from the first trade left to the open one.
          const align = (t: number) => Math.floor(t / ms) * ms;
          const last = Math.max(
            align(time),
            align((trades[trades.length - 1] as CandleTrade).time),
          );
          const model: unknown[][] = [];
          let previousClose = 0n;
          for (let open = align((left[0] as CandleTrade).time); open <= last; open += ms) {
            const prices = left.filter((t) => align(t.time) === open).map((t) => t.price);
            const inside = left.filter((t) => align(t.time) === open);
            if (inside.length === 0) {
              model.push([
                open,
                previousClose,
                previousClose,
                previousClose,
                previousClose,
                0n,
                0n,
                0,
              ]);
              continue;
            }
            const close = prices[prices.length - 1] as bigint;
            model.push([
              open,
              prices[0],
              prices.reduce((a, b) => (b > a ? b : a)),
              prices.reduce((a, b) => (b < a ? b : a)),
              close,
              inside.reduce((a, t) => a + t.quantity, 0n),
              inside.reduce((a, t) => a + t.quote, 0n),
              inside.length,
            ]);
            previousClose = close;
          }
          const mine = held.map((c) => [
            c.openTime,
            c.open,
            c.high,
            c.low,
            c.close,
            c.volume,
            c.quoteVolume,
            c.trades,
          ]);
          // One-minute candles older than two days are evicted: compare what is held.
          expect(mine).toEqual(model.slice(-mine.length));
          expect(mine.length).toBe(
            Math.min(model.length, interval === '1m' ? MINUTES_KEPT_FOR_BUSTS + 1 : 1_001),
          );
        }
        expect(p.heldPrints).toBeLessThanOrEqual(trades.length);
      }),
      { numRuns: runs },
    );
  });

  it('a seeded market starts with an empty candle at its last price', () => {
    const p = new CandleProjection();
    p.seed(3, 42n, T0 + 90_000);
    expect(p.current(3, '1m')).toMatchObject({
      openTime: T0 + M,
      open: 42n,
      close: 42n,
      trades: 0,
    });
    expect(p.current(3, '1d')).toMatchObject({ openTime: T0, open: 42n });
  });

  it('a bust that empties a seeded market’s first candle leaves it at the seeded price', () => {
    // Restarted from a snapshot: the market traded at 100 before this projection saw anything.
    const p = new CandleProjection();
    p.seed(1, 100n, T0 + 5_000);
    const t = print(120n, 1n, 120n, T0 + 10_000);
    p.trade(1, t, changes());
    p.bust(1, t.tradeId, changes());
    for (const i of INTERVALS) {
      expect(p.current(1, i), i).toMatchObject({ open: 100n, close: 100n, volume: 0n, trades: 0 });
    }
  });

  it('formats candles as canonical decimal strings', () => {
    const c: Candle = {
      market: 1,
      interval: '1m',
      openTime: T0,
      closeTime: T0 + 59_999,
      open: 60_000_500_000_000_000_000_000n,
      high: 60_001n * 10n ** 18n,
      low: 59_999n * 10n ** 18n,
      close: 60_000n * 10n ** 18n,
      volume: 12_345n,
      quoteVolume: 80_234_567n,
      trades: 57,
      closed: false,
    };
    expect(wireCandle(c, 'BTC-PERP', 4)).toEqual({
      instrument: 'BTC-PERP',
      interval: '1m',
      openTime: T0,
      closeTime: T0 + 59_999,
      open: '60000.5',
      high: '60001',
      low: '59999',
      close: '60000',
      volume: '1.2345',
      quoteVolume: '80.234567',
      trades: 57,
      closed: false,
    });
  });

  it('every interval is contiguous, closed once, and aggregates the trades exactly', () => {
    const step = fc.record({
      gap: fc.oneof(
        fc.integer({ min: 0, max: 90_000 }),
        fc.integer({ min: 0, max: 5 * 3_600_000 }),
      ),
      price: fc.bigInt({ min: 1n, max: 500n }),
      quantity: fc.bigInt({ min: 1n, max: 50n }),
      advanceOnly: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 120 }), (steps) => {
        const p = new CandleProjection();
        const closed: Candle[] = [];
        const trades: { price: bigint; quantity: bigint; time: number }[] = [];
        let time = T0;
        for (const s of steps) {
          time += s.gap;
          if (s.advanceOnly) closed.push(...p.advance(time));
          else {
            const out = changes();
            p.trade(7, print(s.price, s.quantity, s.price * s.quantity, time), out);
            closed.push(...out.closed);
            trades.push({ price: s.price, quantity: s.quantity, time });
          }
        }
        for (const interval of ['1m', '15m', '4h', '1d'] as CandleInterval[]) {
          const ms = CANDLE_INTERVALS[interval];
          const mine = closed.filter((c) => c.interval === interval);
          const all = [...mine, p.current(7, interval)].filter((c) => c !== undefined);
          if (trades.length === 0) {
            expect(all).toEqual([]);
            continue;
          }
          // Contiguous from the first trade's interval, each once, the last one open.
          const first = Math.floor((trades[0] as { time: number }).time / ms) * ms;
          all.forEach((c, i) => {
            expect(c.openTime).toBe(first + i * ms);
            expect(c.closeTime).toBe(c.openTime + ms - 1);
            expect(c.closed).toBe(i < all.length - 1);
          });
          let previousClose: bigint | null = null;
          for (const c of all) {
            const inside = trades.filter((t) => Math.floor(t.time / ms) * ms === c.openTime);
            if (inside.length === 0) {
              expect([c.open, c.high, c.low, c.close]).toEqual(Array(4).fill(previousClose));
              expect([c.volume, c.quoteVolume, c.trades]).toEqual([0n, 0n, 0]);
            } else {
              const prices = inside.map((t) => t.price);
              expect(c.open).toBe(prices[0]);
              expect(c.close).toBe(prices[prices.length - 1]);
              expect(c.high).toBe(prices.reduce((a, b) => (b > a ? b : a)));
              expect(c.low).toBe(prices.reduce((a, b) => (b < a ? b : a)));
              expect(c.volume).toBe(inside.reduce((a, t) => a + t.quantity, 0n));
              expect(c.quoteVolume).toBe(inside.reduce((a, t) => a + t.price * t.quantity, 0n));
              expect(c.trades).toBe(inside.length);
            }
            previousClose = c.close;
          }
        }
      }),
      { numRuns: runs },
    );
  });
});
