/**
 * Candles from trade prints (research 3.3 and 6.6): Binance interval strings, UTC-aligned,
 * `closeTime = openTime + interval - 1`. Once an instrument has traded, every interval gets a
 * candle: one without trades repeats the previous close with volume 0, and every candle is closed
 * exactly once. Time only enters as arguments; the projection starts no timer.
 *
 * @module
 */
import {
  type EngineState,
  formatCollateral,
  formatDecimal,
  formatPrice,
  quoteAmount,
} from '@perp/core';
import type { CommittedBatch } from '../engine/host.js';

/** Candle intervals and their length in ms; every one divides a UTC day. */
export const CANDLE_INTERVALS = {
  '1m': 60_000,
  '3m': 180_000,
  '5m': 300_000,
  '15m': 900_000,
  '30m': 1_800_000,
  '1h': 3_600_000,
  '2h': 7_200_000,
  '4h': 14_400_000,
  '6h': 21_600_000,
  '8h': 28_800_000,
  '12h': 43_200_000,
  '1d': 86_400_000,
} as const;

/** A candle interval string such as `1m` or `4h`. */
export type CandleInterval = keyof typeof CANDLE_INTERVALS;

/** Every interval, shortest first. */
export const INTERVALS = Object.keys(CANDLE_INTERVALS) as CandleInterval[];

/** Whether a value names a candle interval. */
export function isCandleInterval(value: unknown): value is CandleInterval {
  return typeof value === 'string' && Object.hasOwn(CANDLE_INTERVALS, value);
}

/** Closed candles kept per (instrument, interval) by default. */
export const DEFAULT_CANDLE_HISTORY = 1_000;

/** One candle in engine units. Frozen in spirit once `closed`. */
export interface Candle {
  readonly market: number;
  readonly interval: CandleInterval;
  readonly openTime: number;
  readonly closeTime: number;
  /** Raw prices (1e18). */
  open: bigint;
  high: bigint;
  low: bigint;
  close: bigint;
  /** Base volume, raw quantity units. */
  volume: bigint;
  /** Quote volume, collateral micro-units (each trade's cash leg, half-even, as fills carry it). */
  quoteVolume: bigint;
  trades: number;
  closed: boolean;
}

/** A candle on the wire (the `candle` message without its `type`). */
export interface WireCandle {
  instrument: string;
  interval: CandleInterval;
  openTime: number;
  closeTime: number;
  open: string;
  high: string;
  low: string;
  close: string;
  volume: string;
  quoteVolume: string;
  trades: number;
  closed: boolean;
}

/** A candle in wire form, given its instrument's symbol and quantity decimals. */
export function wireCandle(candle: Candle, symbol: string, quantityDecimals: number): WireCandle {
  return {
    instrument: symbol,
    interval: candle.interval,
    openTime: candle.openTime,
    closeTime: candle.closeTime,
    open: formatPrice(candle.open),
    high: formatPrice(candle.high),
    low: formatPrice(candle.low),
    close: formatPrice(candle.close),
    volume: formatDecimal(candle.volume, quantityDecimals),
    quoteVolume: formatCollateral(candle.quoteVolume),
    trades: candle.trades,
    closed: candle.closed,
  };
}

/** Which candles a history query wants (REST). */
export interface CandleQuery {
  /** Earliest `openTime` (inclusive). When given, the first `limit` candles from here. */
  readonly startTime?: number | undefined;
  /** Latest `openTime` (inclusive). Without `startTime`, the last `limit` candles up to here. */
  readonly endTime?: number | undefined;
  /** Most candles returned (default 500, at most the history size + 1). */
  readonly limit?: number | undefined;
}

function emptyCandle(
  market: number,
  interval: CandleInterval,
  openTime: number,
  price: bigint,
): Candle {
  return {
    market,
    interval,
    openTime,
    closeTime: openTime + CANDLE_INTERVALS[interval] - 1,
    open: price,
    high: price,
    low: price,
    close: price,
    volume: 0n,
    quoteVolume: 0n,
    trades: 0,
    closed: false,
  };
}

/** The candles of one (instrument, interval): the open one and a bounded closed history. */
class CandleSeries {
  readonly market: number;
  readonly interval: CandleInterval;
  private readonly ms: number;
  private readonly limit: number;
  current: Candle | null = null;
  readonly history: Candle[] = [];

  constructor(market: number, interval: CandleInterval, limit: number) {
    this.market = market;
    this.interval = interval;
    this.ms = CANDLE_INTERVALS[interval];
    this.limit = limit;
  }

  private align(time: number): number {
    return Math.floor(time / this.ms) * this.ms;
  }

  private retire(candle: Candle, out: Candle[]): void {
    candle.closed = true;
    this.history.push(candle);
    if (this.history.length > this.limit) this.history.splice(0, this.history.length - this.limit);
    out.push(candle);
  }

  /** Closes the open candle, and fills empty ones, for every interval that ended before `time`. */
  advance(time: number, out: Candle[]): void {
    const c = this.current;
    if (c === null || time <= c.closeTime) return;
    this.retire(c, out);
    const target = this.align(time);
    let open = c.openTime + this.ms;
    // A gap longer than the history would only produce candles that are evicted at once.
    if ((target - open) / this.ms > this.limit) open = target - this.limit * this.ms;
    for (; open < target; open += this.ms) {
      this.retire(emptyCandle(this.market, this.interval, open, c.close), out);
    }
    this.current = emptyCandle(this.market, this.interval, target, c.close);
  }

  /** Starts the series at `price` when it has no candle yet. */
  seed(price: bigint, time: number): void {
    if (this.current === null) {
      this.current = emptyCandle(this.market, this.interval, this.align(time), price);
    }
  }

  /**
   * Adds a trade. A trade stamped before the open candle (the service clock closed the interval
   * before the batch that carried it was published) counts in the open candle: a closed candle
   * never changes.
   */
  trade(price: bigint, quantity: bigint, quote: bigint, time: number, out: Candle[]): void {
    this.advance(time, out);
    const c = this.current;
    if (c === null) {
      const fresh = emptyCandle(this.market, this.interval, this.align(time), price);
      fresh.volume = quantity;
      fresh.quoteVolume = quote;
      fresh.trades = 1;
      this.current = fresh;
      return;
    }
    if (c.trades === 0) c.open = price;
    if (c.trades === 0 || price > c.high) c.high = price;
    if (c.trades === 0 || price < c.low) c.low = price;
    c.close = price;
    c.volume += quantity;
    c.quoteVolume += quote;
    c.trades++;
  }

  /** Closed history plus the open candle, filtered and limited as asked. */
  range(query: CandleQuery): Candle[] {
    const all = this.current === null ? this.history : [...this.history, this.current];
    const from = query.startTime ?? Number.NEGATIVE_INFINITY;
    const to = query.endTime ?? Number.POSITIVE_INFINITY;
    const limit = Math.max(1, Math.min(query.limit ?? 500, this.limit + 1));
    const inRange = all.filter((c) => c.openTime >= from && c.openTime <= to);
    return query.startTime !== undefined ? inRange.slice(0, limit) : inRange.slice(-limit);
  }
}

/** What applying a batch or advancing the clock did to the candles. */
export interface CandleChanges {
  /** Candles that closed, in order (per series, oldest first). */
  readonly closed: Candle[];
  /** Series whose open candle took a trade, as `${market}|${interval}`. */
  readonly touched: Set<string>;
}

/** Every interval's candles of every instrument, fed by committed batches. */
export class CandleProjection {
  private readonly series = new Map<number, CandleSeries[]>();
  private readonly limit: number;

  constructor(historyLimit: number = DEFAULT_CANDLE_HISTORY) {
    if (!Number.isInteger(historyLimit) || historyLimit < 1) {
      throw new RangeError(`candle history must be a positive integer, got ${historyLimit}`);
    }
    this.limit = historyLimit;
  }

  private of(market: number): CandleSeries[] {
    let s = this.series.get(market);
    if (s === undefined) {
      s = INTERVALS.map((i) => new CandleSeries(market, i, this.limit));
      this.series.set(market, s);
    }
    return s;
  }

  /** Starts every series of a market that has traded before the projection saw its trades. */
  seed(market: number, price: bigint, time: number): void {
    for (const s of this.of(market)) s.seed(price, time);
  }

  /** Adds one trade to every interval of its market. */
  trade(
    market: number,
    price: bigint,
    quantity: bigint,
    quote: bigint,
    time: number,
    out: CandleChanges,
  ): void {
    for (const s of this.of(market)) {
      s.trade(price, quantity, quote, time, out.closed);
      out.touched.add(`${market}|${s.interval}`);
    }
  }

  /** Applies the trade prints of a committed batch. */
  apply(batch: CommittedBatch): CandleChanges {
    const out: CandleChanges = { closed: [], touched: new Set() };
    for (const events of batch.events) {
      for (const e of events) {
        if (e.type !== 'trade') continue;
        const spec = batch.state.markets.get(e.market)?.spec;
        if (spec === undefined) continue;
        this.trade(
          e.market,
          e.price,
          e.quantity,
          quoteAmount(spec, e.quantity, e.price),
          e.time,
          out,
        );
      }
    }
    return out;
  }

  /** Closes every candle whose interval ended before `time`; returns them in order. */
  advance(time: number): Candle[] {
    const out: Candle[] = [];
    for (const list of this.series.values()) for (const s of list) s.advance(time, out);
    return out;
  }

  /** The open candle of a series, if the market has traded. */
  current(market: number, interval: CandleInterval): Candle | undefined {
    const s = this.series.get(market)?.[INTERVALS.indexOf(interval)];
    return s?.current ?? undefined;
  }

  /** Candles of a series for a history query, oldest first. */
  range(market: number, interval: CandleInterval, query: CandleQuery = {}): Candle[] {
    const s = this.series.get(market)?.[INTERVALS.indexOf(interval)];
    return s === undefined ? [] : s.range(query);
  }

  /** Seeds every market of a state that has a last trade price but no candles yet. */
  seedFrom(state: EngineState, time: number): void {
    state.markets.forEach((m, id) => {
      if (m.lastTrade !== null) this.seed(id, m.lastTrade, time);
    });
  }
}
