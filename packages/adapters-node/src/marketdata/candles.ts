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
import { Captures, type RowsCapture } from '../read/checkpoint.js';
import { minuteOf, type Print, PrintLog, printFloor, type TradeAggregate } from './prints.js';

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

/**
 * One-minute candles always kept, whatever the history size: a bust restates every interval's
 * candle from the minutes it spans, and a day candle that holds a bustable trade starts at most a
 * day plus the engine's bust window (one hour by default) ago.
 */
export const MINUTES_KEPT_FOR_BUSTS = 2 * 1_440;

/**
 * One candle in engine units. Only the open one changes in place: once `closed` it is never
 * changed (a bust replaces it), so a copy of a series copies its open candle and the list only.
 */
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

/** A candle as `candle` with "no trade": every price at `price`, no volume. */
function emptied(candle: Candle, price: bigint): Candle {
  return {
    ...candle,
    open: price,
    high: price,
    low: price,
    close: price,
    volume: 0n,
    quoteVolume: 0n,
    trades: 0,
  };
}

/** A candle as `candle` with the aggregate of its trades. */
function withValues(candle: Candle, values: TradeAggregate): Candle {
  return {
    ...candle,
    open: values.open,
    high: values.high,
    low: values.low,
    close: values.close,
    volume: values.volume,
    quoteVolume: values.quoteVolume,
    trades: values.trades,
  };
}

/** What one series holds, as a checkpoint saves it (`checkpoint.ts`). */
export interface SeriesRows {
  /** Every candle from this open time on is held; `-Infinity` when the series saw them all. */
  readonly completeFrom: number;
  /** The close before the oldest held candle (evicted or seeded), `null` for none. */
  readonly priorClose: bigint | null;
  /** The open candle, `null` before the market traded. */
  readonly current: Candle | null;
  /** Closed candles, oldest first. */
  readonly history: readonly Candle[];
}

/** What the candles keep of one market: its series (in {@link INTERVALS} order) and prints. */
export interface MarketCandleRows {
  readonly series: readonly SeriesRows[];
  /** The prints held for busts, in trade-id order. */
  readonly prints: readonly Print[];
}

/** The candles of one (instrument, interval): the open one and a bounded closed history. */
class CandleSeries {
  readonly market: number;
  readonly interval: CandleInterval;
  readonly ms: number;
  /** Closed candles kept. */
  readonly limit: number;
  current: Candle | null = null;
  private history: Candle[] = [];
  /** Every candle from this open time on is held (earlier ones were evicted or never seen). */
  private completeFrom = Number.NEGATIVE_INFINITY;
  /** The close before the oldest held candle: of the last one evicted, or the seeded price. */
  private priorClose: bigint | null = null;

  constructor(market: number, interval: CandleInterval, limit: number) {
    this.market = market;
    this.interval = interval;
    this.ms = CANDLE_INTERVALS[interval];
    this.limit = limit;
  }

  /** Whether {@link advance} at `time` would close the open candle. */
  dueBy(time: number): boolean {
    return this.current !== null && time > this.current.closeTime;
  }

  /** What the series holds now; the list is the series' own, so copy it before keeping it. */
  rows(): SeriesRows {
    return {
      completeFrom: this.completeFrom,
      priorClose: this.priorClose,
      current: this.current,
      history: this.history,
    };
  }

  /**
   * Sets what the series holds (a restore or a copy): the open candle is copied, closed ones are
   * shared (never changed). More closed candles than the series keeps: the oldest are evicted.
   */
  adopt(rows: SeriesRows): void {
    this.completeFrom = rows.completeFrom;
    this.priorClose = rows.priorClose;
    this.current = rows.current === null ? null : { ...rows.current };
    const excess = rows.history.length - this.limit;
    if (excess > 0) {
      this.priorClose = (rows.history[excess - 1] as Candle).close;
      this.history = rows.history.slice(excess);
      this.completeFrom = (this.history[0] as Candle).openTime;
    } else this.history = [...rows.history];
  }

  align(time: number): number {
    return Math.floor(time / this.ms) * this.ms;
  }

  private retire(candle: Candle, out: Candle[]): void {
    candle.closed = true;
    this.history.push(candle);
    if (this.history.length > this.limit) {
      const evicted = this.history.splice(0, this.history.length - this.limit);
      this.priorClose = (evicted[evicted.length - 1] as Candle).close;
      this.completeFrom = (this.history[0] as Candle).openTime;
    }
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
      // The market traded before: the candles before this one were never seen.
      this.completeFrom = this.current.openTime;
      this.priorClose = price;
    }
  }

  /**
   * Adds a trade. A trade stamped before the open candle (the service clock closed the interval
   * before the batch that carried it was published) counts in the open candle: a candle closes
   * once on the wire, and only a bust restates it.
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

  private get count(): number {
    return this.history.length + (this.current === null ? 0 : 1);
  }

  /** The `i`-th held candle, oldest first (the open one last). */
  private at(i: number): Candle {
    return (i < this.history.length ? this.history[i] : this.current) as Candle;
  }

  /** Index of the first held candle that opens at or after `openTime`. */
  private lowerBound(openTime: number): number {
    let lo = 0;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.at(mid).openTime < openTime) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /**
   * The aggregate of the trades in the candles opening in `[from, to)`: `null` when there were
   * none, `undefined` when the series does not hold that whole span.
   */
  aggregate(from: number, to: number): TradeAggregate | null | undefined {
    if (from < this.completeFrom) return undefined;
    let values: TradeAggregate | null = null;
    for (let i = this.lowerBound(from); i < this.count; i++) {
      const c = this.at(i);
      if (c.openTime >= to) break;
      if (c.trades === 0) continue;
      values =
        values === null
          ? {
              open: c.open,
              high: c.high,
              low: c.low,
              close: c.close,
              volume: c.volume,
              quoteVolume: c.quoteVolume,
              trades: c.trades,
            }
          : {
              open: values.open,
              high: c.high > values.high ? c.high : values.high,
              low: c.low < values.low ? c.low : values.low,
              close: c.close,
              volume: values.volume + c.volume,
              quoteVolume: values.quoteVolume + c.quoteVolume,
              trades: values.trades + c.trades,
            };
    }
    return values;
  }

  /**
   * Restates the candle opening at `openTime` to `values` (`null`: no trade is left in it) and
   * the empty candles after it, which repeat its close. Returns the candles that changed. A
   * candle left without trades takes the previous close; when the market has no trade before it
   * at all, the leading candles without trades are dropped (it has not traded until the next).
   */
  restate(openTime: number, values: TradeAggregate | null): Candle[] {
    const i = this.lowerBound(openTime);
    if (i >= this.count || this.at(i).openTime !== openTime) return [];
    const old = this.at(i);
    let candle: Candle;
    if (values !== null) candle = withValues(old, values);
    else {
      const before = i > 0 ? this.at(i - 1).close : this.priorClose;
      if (before === null) {
        this.put(i, emptied(old, old.open));
        this.dropLeadingEmpty();
        return [];
      }
      candle = emptied(old, before);
    }
    this.put(i, candle);
    const changed = [candle];
    for (let j = i + 1; j < this.count; j++) {
      const next = this.at(j);
      if (next.trades > 0 || next.close === candle.close) break;
      const followed = emptied(next, candle.close);
      this.put(j, followed);
      changed.push(followed);
    }
    return changed;
  }

  /** Replaces the `i`-th held candle (closed candles are replaced, never changed). */
  private put(i: number, candle: Candle): void {
    if (i < this.history.length) this.history[i] = candle;
    else this.current = candle;
  }

  private dropLeadingEmpty(): void {
    let n = 0;
    while (n < this.history.length && (this.history[n] as Candle).trades === 0) n++;
    this.history.splice(0, n);
    if (this.history.length === 0 && this.current?.trades === 0) this.current = null;
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
  /** Closed candles a bust restated (sent again, closed, with their corrected values). */
  readonly restated: Candle[];
  /** Each busted trade the projection held, with its minute's trades left (for the tickers). */
  readonly busts: BustedPrint[];
}

/** A busted trade's print, and what is left of the minute it traded in (by trade time). */
export interface BustedPrint {
  readonly market: number;
  readonly print: Print;
  /** Start of the trade's minute, ms. */
  readonly minute: number;
  /** The trades left in that minute after the whole batch, `null` for none. */
  readonly left: TradeAggregate | null;
}

/** An empty {@link CandleChanges}. */
export function noCandleChanges(): CandleChanges {
  return { closed: [], touched: new Set(), restated: [], busts: [] };
}

/** A trade as the candles take it. */
export interface CandleTrade {
  readonly tradeId: number;
  /** Raw price (1e18). */
  readonly price: bigint;
  /** Raw quantity units. */
  readonly quantity: bigint;
  /** Collateral micro-units. */
  readonly quote: bigint;
  /** Engine time, ms. */
  readonly time: number;
}

/** What the candles keep of one market. */
interface MarketCandles {
  /** One series per interval, in {@link INTERVALS} order. */
  readonly series: readonly CandleSeries[];
  readonly log: PrintLog;
}

/** Every interval's candles of every instrument, fed by committed batches. */
export class CandleProjection {
  private readonly markets = new Map<number, MarketCandles>();
  private readonly limit: number;
  private readonly captures = new Captures<number, MarketCandles>((m) => this.copyOf(m));

  constructor(historyLimit: number = DEFAULT_CANDLE_HISTORY) {
    if (!Number.isInteger(historyLimit) || historyLimit < 1) {
      throw new RangeError(`candle history must be a positive integer, got ${historyLimit}`);
    }
    this.limit = historyLimit;
  }

  /** An empty projection with the same history size. */
  emptyCopy(): CandleProjection {
    return new CandleProjection(this.limit);
  }

  private market(id: number): MarketCandles {
    let m = this.markets.get(id);
    if (m === undefined) {
      const minutes = Math.max(this.limit, MINUTES_KEPT_FOR_BUSTS);
      m = {
        series: INTERVALS.map((i) => new CandleSeries(id, i, i === '1m' ? minutes : this.limit)),
        log: new PrintLog(),
      };
      this.markets.set(id, m);
    }
    return m;
  }

  private of(market: number): readonly CandleSeries[] {
    return this.market(market).series;
  }

  /** Lets running captures keep a market's rows before they change. */
  private touch(market: number): void {
    if (this.captures.active) this.captures.beforeChange(market, this.markets.get(market));
  }

  /** A copy of a market's rows that later changes leave alone (lists and open candles only). */
  private copyOf(m: MarketCandles): MarketCandles {
    return {
      series: m.series.map((s) => {
        const copy = new CandleSeries(s.market, s.interval, s.limit);
        copy.adopt(s.rows());
        return copy;
      }),
      log: PrintLog.of(m.log.held()),
    };
  }

  /**
   * Starts a capture of every market's candles and prints as they are now (O(markets)): from
   * here on a market's rows are copied before they first change. Yielded rows are copies.
   */
  capture(): RowsCapture<number, MarketCandleRows> {
    const markets = this.captures.start(this.markets.keys(), (id) => {
      const m = this.markets.get(id);
      return m === undefined ? undefined : this.copyOf(m);
    });
    return {
      *rows() {
        for (const [id, m] of markets.rows()) {
          yield [id, { series: m.series.map((s) => s.rows()), prints: m.log.held() }];
        }
      },
      release: () => markets.release(),
    };
  }

  /**
   * Sets a market's rows in a projection being restored (before any batch reaches it). Each
   * series keeps at most its own history size: older candles are evicted as a trade would.
   */
  restore(market: number, rows: MarketCandleRows): void {
    if (rows.series.length !== INTERVALS.length) {
      throw new RangeError(`a market has ${INTERVALS.length} series, got ${rows.series.length}`);
    }
    const m = this.market(market);
    m.series.forEach((s, i) => {
      s.adopt(rows.series[i] as SeriesRows);
    });
    this.markets.set(market, { series: m.series, log: PrintLog.of(rows.prints) });
  }

  /** Starts every series of a market that has traded before the projection saw its trades. */
  seed(market: number, price: bigint, time: number): void {
    this.touch(market);
    for (const s of this.of(market)) s.seed(price, time);
  }

  /** Adds one trade to every interval of its market. */
  trade(market: number, trade: CandleTrade, out: CandleChanges): void {
    this.touch(market);
    const { series, log } = this.market(market);
    for (const s of series) {
      s.trade(trade.price, trade.quantity, trade.quote, trade.time, out.closed);
      out.touched.add(`${market}|${s.interval}`);
    }
    // Where the one-minute candle put it places it in every interval (each is whole minutes).
    const minute = (series[0] as CandleSeries).current as Candle;
    log.add({ ...trade, at: Math.max(trade.time, minute.openTime) });
  }

  /**
   * Restates the candles that held a busted trade: its minute is rebuilt from the trades left in
   * it, every longer interval from its minutes, and the empty candles after each follow the new
   * close. A trade the projection never saw (or no longer holds) changes nothing.
   */
  bust(market: number, tradeId: number, out: CandleChanges): void {
    const m = this.markets.get(market);
    if (m === undefined) return;
    this.touch(market);
    const log = m.log;
    const print = log.remove(tradeId);
    if (print === undefined) return;
    const [minutes, ...longer] = m.series as [CandleSeries, ...CandleSeries[]];
    const start = minuteOf(print.at);
    const changed = minutes.restate(start, log.aggregate(start, start + 60_000, 'at'));
    for (const s of longer) {
      const from = s.align(print.at);
      const values = minutes.aggregate(from, from + s.ms);
      if (values !== undefined) changed.push(...s.restate(from, values));
    }
    for (const c of changed) {
      if (c.closed) out.restated.push(c);
      else out.touched.add(`${market}|${c.interval}`);
    }
    const minute = minuteOf(print.time);
    out.busts.push({
      market,
      print,
      minute,
      left: log.aggregate(minute, minute + 60_000, 'time'),
    });
  }

  /** Drops the prints of trades placed before `floor` (ms): no bust can reach them. */
  prune(floor: number): void {
    for (const [id, m] of this.markets) {
      if (this.captures.active && m.log.expiresBy(floor)) this.touch(id);
      m.log.prune(floor);
    }
  }

  /** Applies the trade prints and busts of a committed batch. */
  apply(batch: CommittedBatch): CandleChanges {
    const out = noCandleChanges();
    for (const events of batch.events) {
      for (const e of events) {
        if (e.type === 'tradeBusted') {
          this.bust(e.market, e.tradeId, out);
          continue;
        }
        if (e.type !== 'trade') continue;
        const spec = batch.state.markets.get(e.market)?.spec;
        if (spec === undefined) continue;
        this.trade(
          e.market,
          {
            tradeId: e.tradeId,
            price: e.price,
            quantity: e.quantity,
            quote: quoteAmount(spec, e.quantity, e.price),
            time: e.time,
          },
          out,
        );
      }
    }
    // What is left of a busted trade's minute is read once the whole batch is in: a batch may
    // hold several commands (a group commit, a backfill's 4,096 records), and a trade after the
    // bust in the same minute is in the tickers' bucket that `left` replaces. Read before the
    // prune: the bust may have released the engine's oldest retained trade.
    out.busts.forEach((b, i) => {
      const log = this.markets.get(b.market)?.log;
      if (log !== undefined)
        out.busts[i] = { ...b, left: log.aggregate(b.minute, b.minute + 60_000, 'time') };
    });
    this.prune(printFloor(batch.state));
    return out;
  }

  /** Closes every candle whose interval ended before `time`; returns them in order. */
  advance(time: number): Candle[] {
    const out: Candle[] = [];
    for (const [id, m] of this.markets) {
      if (this.captures.active && m.series.some((s) => s.dueBy(time))) this.touch(id);
      for (const s of m.series) s.advance(time, out);
    }
    return out;
  }

  /** The open candle of a series, if the market has traded. */
  current(market: number, interval: CandleInterval): Candle | undefined {
    const s = this.markets.get(market)?.series[INTERVALS.indexOf(interval)];
    return s?.current ?? undefined;
  }

  /** Candles of a series for a history query, oldest first. */
  range(market: number, interval: CandleInterval, query: CandleQuery = {}): Candle[] {
    const s = this.markets.get(market)?.series[INTERVALS.indexOf(interval)];
    return s === undefined ? [] : s.range(query);
  }

  /** Trade prints held for busts (all markets). */
  get heldPrints(): number {
    let n = 0;
    for (const m of this.markets.values()) n += m.log.size;
    return n;
  }

  /** Seeds every market of a state that has a last trade price but no candles yet. */
  seedFrom(state: EngineState, time: number): void {
    state.markets.forEach((m, id) => {
      if (m.lastTrade !== null) this.seed(id, m.lastTrade, time);
    });
  }
}
