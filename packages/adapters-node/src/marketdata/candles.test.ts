import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CANDLE_INTERVALS,
  type Candle,
  type CandleChanges,
  type CandleInterval,
  CandleProjection,
  INTERVALS,
  isCandleInterval,
  wireCandle,
} from './candles.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 200);
const T0 = 1_767_225_600_000;
const M = 60_000;

const changes = (): CandleChanges => ({ closed: [], touched: new Set() });

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
    p.trade(1, 100n, 2n, 200n, T0 + 5_000, out);
    p.trade(1, 110n, 1n, 110n, T0 + 6_000, out);
    p.trade(1, 95n, 1n, 95n, T0 + 59_999, out);
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
    p.trade(1, 97n, 1n, 97n, T0 + 3 * M + 10, changes());
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
    p.trade(1, 100n, 1n, 100n, T0 + 1_000, changes());
    const [first] = p.advance(T0 + M);
    const snapshot = { ...first };
    p.trade(1, 120n, 1n, 120n, T0 + 59_000, changes());
    expect(first).toEqual(snapshot);
    expect(p.current(1, '1m')).toMatchObject({ openTime: T0 + M, open: 120n, trades: 1 });
  });

  it('keeps a bounded history and skips what a long gap would evict at once', () => {
    const p = new CandleProjection(5);
    p.trade(1, 100n, 1n, 100n, T0, changes());
    const closed = p.advance(T0 + 100 * M + 1).filter((c) => c.interval === '1m');
    expect(closed.map((c) => (c.openTime - T0) / M)).toEqual([0, 95, 96, 97, 98, 99]);
    expect(p.range(1, '1m').map((c) => (c.openTime - T0) / M)).toEqual([95, 96, 97, 98, 99, 100]);
    expect(p.range(1, '1m', { limit: 2 }).map((c) => (c.openTime - T0) / M)).toEqual([99, 100]);
    expect(
      p.range(1, '1m', { startTime: T0 + 96 * M, limit: 2 }).map((c) => (c.openTime - T0) / M),
    ).toEqual([96, 97]);
    expect(p.range(1, '1m', { endTime: T0 + 97 * M }).map((c) => (c.openTime - T0) / M)).toEqual([
      95, 96, 97,
    ]);
    expect(p.range(2, '1m')).toEqual([]);
    expect(() => new CandleProjection(0)).toThrow(RangeError);
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
            p.trade(7, s.price, s.quantity, s.price * s.quantity, time, out);
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
