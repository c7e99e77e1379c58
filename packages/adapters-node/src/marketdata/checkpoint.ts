/**
 * The market-data part of a read-model checkpoint (`read/checkpoint.ts`): every market's 24 h
 * ticker window, its candles of each interval, the trade prints kept for busts and its public
 * trade tape, which is all the ticker, candle and tape projections rebuild from a full replay of
 * the journal.
 *
 * Entries (values the checkpoint's compact JSON writes, `journal/compact-json.ts`: bigints stay
 * bigints, `-Infinity` is written `null`):
 *
 * - `{kind: 'ticker', market, priorClose, buckets: [start, open, high, low, close, volume,
 *   quoteVolume, trades][]}`: one market's window, buckets oldest first;
 * - `{kind: 'candles', market, interval, completeFrom, priorClose, current, history}`: one
 *   market's series of one interval, each candle `[openTime, open, high, low, close, volume,
 *   quoteVolume, trades]` (its close time follows from the interval; `history` closed, oldest
 *   first; `current` open or `null`);
 * - `{kind: 'prints', market, prints: [tradeId, time, at, price, quantity, quote][]}`: up to
 *   {@link PRINTS_PER_ENTRY} of one market's prints, continuing its previous `prints` entry;
 * - `{kind: 'tape', market, trades: [tradeId, time, price, quantity, side][]}`: up to
 *   {@link PRINTS_PER_ENTRY} of one market's public trade tape (`trades.ts`), oldest first,
 *   continuing its previous `tape` entry (version 2).
 *
 * Every market with candles has all twelve series. The part's configuration (candle history
 * size, window, funding source) is the live service's, never the file's.
 *
 * @module
 */
import { CheckpointEntryError, type ReadModelCapture } from '../read/checkpoint.js';
import {
  CANDLE_INTERVALS,
  type Candle,
  type CandleInterval,
  type CandleProjection,
  INTERVALS,
  isCandleInterval,
  type SeriesRows,
} from './candles.js';
import type { Print } from './prints.js';
import { BUCKET_MS, type Bucket, type WindowRows } from './rolling-window.js';
import type { TickerProjection } from './ticker.js';
import type { TapePrint, TradeTape } from './trades.js';

/** The part's name in a checkpoint. */
export const MARKET_DATA_PART = 'marketData';
/** The version of the part's entries; raise it whenever an entry's shape changes. */
export const MARKET_DATA_PART_VERSION = 2;
/** Older versions the market-data part reads: version 2 added the `tape` entries. */
export const MARKET_DATA_PART_READS: readonly number[] = [1];
/** Most prints in one entry: a busy market's bust window is written in several. */
export const PRINTS_PER_ENTRY = 2_048;

/** A bucket or candle's numbers: `[start, open, high, low, close, volume, quoteVolume, trades]`. */
export type OhlcvRow = [number, bigint, bigint, bigint, bigint, bigint, bigint, number];
/** A print: `[tradeId, time, at, price, quantity, quote]`. */
export type PrintRow = [number, number, number, bigint, bigint, bigint];
/** A tape print: `[tradeId, time, price, quantity, side]`. */
export type TapeRow = [number, number, bigint, bigint, 'Buy' | 'Sell'];

/** One market's 24 h window. */
export interface TickerEntry {
  readonly kind: 'ticker';
  readonly market: number;
  readonly priorClose: bigint | null;
  readonly buckets: OhlcvRow[];
}

/** One market's candles of one interval. */
export interface CandlesEntry {
  readonly kind: 'candles';
  readonly market: number;
  readonly interval: CandleInterval;
  /** `null` for `-Infinity` (the series saw every candle), which JSON cannot write. */
  readonly completeFrom: number | null;
  readonly priorClose: bigint | null;
  readonly current: OhlcvRow | null;
  readonly history: OhlcvRow[];
}

/** Some of one market's prints, after those of its previous `prints` entry. */
export interface PrintsEntry {
  readonly kind: 'prints';
  readonly market: number;
  readonly prints: PrintRow[];
}

/** Some of one market's public trade tape, after those of its previous `tape` entry. */
export interface TapeEntry {
  readonly kind: 'tape';
  readonly market: number;
  readonly trades: TapeRow[];
}

/** An entry of the market-data part. */
export type MarketDataEntry = TickerEntry | CandlesEntry | PrintsEntry | TapeEntry;

const ohlcvOf = (start: number, v: Omit<Bucket, 'start'> | Omit<Candle, 'openTime'>): OhlcvRow => [
  start,
  v.open,
  v.high,
  v.low,
  v.close,
  v.volume,
  v.quoteVolume,
  v.trades,
];

function candlesEntry(market: number, interval: CandleInterval, s: SeriesRows): CandlesEntry {
  return {
    kind: 'candles',
    market,
    interval,
    completeFrom: Number.isFinite(s.completeFrom) ? s.completeFrom : null,
    priorClose: s.priorClose,
    current: s.current === null ? null : ohlcvOf(s.current.openTime, s.current),
    history: s.history.map((c) => ohlcvOf(c.openTime, c)),
  };
}

/**
 * Starts a capture of the projections as they are now (call them in the turn the state is
 * taken). Entries: every market's ticker, then every market's twelve series and its prints, then
 * every market's tape.
 */
export function captureMarketData(
  ticker: TickerProjection,
  candles: CandleProjection,
  tape: TradeTape,
): ReadModelCapture {
  const windows = ticker.capture();
  const markets = candles.capture();
  const tapes = tape.capture();
  return {
    *entries(): Generator<MarketDataEntry> {
      for (const [market, w] of windows.rows()) {
        yield {
          kind: 'ticker',
          market,
          priorClose: w.priorClose,
          buckets: w.buckets.map((b) => ohlcvOf(b.start, b)),
        };
      }
      windows.release();
      for (const [market, rows] of markets.rows()) {
        for (let i = 0; i < INTERVALS.length; i++) {
          yield candlesEntry(market, INTERVALS[i] as CandleInterval, rows.series[i] as SeriesRows);
        }
        for (let i = 0; i < rows.prints.length; i += PRINTS_PER_ENTRY) {
          yield {
            kind: 'prints',
            market,
            prints: rows.prints
              .slice(i, i + PRINTS_PER_ENTRY)
              .map((p): PrintRow => [p.tradeId, p.time, p.at, p.price, p.quantity, p.quote]),
          };
        }
      }
      markets.release();
      for (const [market, prints] of tapes.rows()) {
        for (let i = 0; i < prints.length; i += PRINTS_PER_ENTRY) {
          yield {
            kind: 'tape',
            market,
            trades: prints
              .slice(i, i + PRINTS_PER_ENTRY)
              .map((p): TapeRow => [p.tradeId, p.time, p.price, p.quantity, p.side]),
          };
        }
      }
      tapes.release();
    },
    release() {
      windows.release();
      markets.release();
      tapes.release();
    },
  };
}

// ---- restoring ---------------------------------------------------------------------------

/** A refusal of the entry being read; the restorer names the entry. */
class Malformed extends Error {}

/** A value as a message names it: a string quoted, anything else by its type. */
function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : value === null ? 'null' : typeof value;
}

function fail(detail: string): never {
  throw new Malformed(detail);
}

function record(value: unknown, what: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    fail(`${what} is not an object`);
  }
  return value as Record<string, unknown>;
}

function integer(value: unknown, what: string, min = Number.MIN_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    fail(`${what} is not an integer${min === 0 ? ' >= 0' : min === 1 ? ' >= 1' : ''}`);
  }
  return value;
}

function amount(value: unknown, what: string, min?: bigint): bigint {
  if (typeof value !== 'bigint') fail(`${what} is not a bigint`);
  if (min !== undefined && value < min) fail(`${what} is below ${min}`);
  return value;
}

function nullableAmount(value: unknown, what: string): bigint | null {
  return value === null ? null : amount(value, what);
}

function array(value: unknown, what: string, length?: number): unknown[] {
  if (!Array.isArray(value)) fail(`${what} is not an array`);
  if (length !== undefined && value.length !== length) {
    fail(`${what} has ${value.length} fields, not ${length}`);
  }
  return value;
}

/** An OHLCV row: aligned start, low <= open, close <= high, volumes >= 0, enough trades. */
function ohlcv(value: unknown, what: string, ms: number, minTrades: number): OhlcvRow {
  const row = array(value, what, 8);
  const start = integer(row[0], `${what} start`);
  if (start % ms !== 0) fail(`${what} starts at ${start}, not a multiple of ${ms} ms`);
  const open = amount(row[1], `${what} open`);
  const high = amount(row[2], `${what} high`);
  const low = amount(row[3], `${what} low`);
  const close = amount(row[4], `${what} close`);
  if (low > open || low > close || high < open || high < close) {
    fail(`${what} has low ${low} and high ${high} around open ${open} and close ${close}`);
  }
  const volume = amount(row[5], `${what} volume`, 0n);
  const quoteVolume = amount(row[6], `${what} quote volume`, 0n);
  const trades = integer(row[7], `${what} trades`, minTrades);
  return [start, open, high, low, close, volume, quoteVolume, trades];
}

/** Rows oldest first, each starting after the previous one. */
function ascending(
  rows: readonly OhlcvRow[],
  what: string,
  after = Number.NEGATIVE_INFINITY,
): void {
  let last = after;
  rows.forEach((r, i) => {
    if (r[0] <= last) fail(`${what}[${i}] starts at ${r[0]}, not after ${last}`);
    last = r[0];
  });
}

function market(value: unknown): number {
  return integer(value, 'market', 0);
}

function windowRows(e: Record<string, unknown>): WindowRows {
  const buckets = array(e.buckets, 'buckets').map((b, i) =>
    ohlcv(b, `buckets[${i}]`, BUCKET_MS, 1),
  );
  ascending(buckets, 'buckets');
  return {
    priorClose: nullableAmount(e.priorClose, 'priorClose'),
    buckets: buckets.map(([start, open, high, low, close, volume, quoteVolume, trades]) => ({
      start,
      open,
      high,
      low,
      close,
      volume,
      quoteVolume,
      trades,
    })),
  };
}

function seriesRows(e: Record<string, unknown>, m: number, interval: CandleInterval): SeriesRows {
  const ms = CANDLE_INTERVALS[interval];
  const candle = (row: OhlcvRow, closed: boolean): Candle => ({
    market: m,
    interval,
    openTime: row[0],
    closeTime: row[0] + ms - 1,
    open: row[1],
    high: row[2],
    low: row[3],
    close: row[4],
    volume: row[5],
    quoteVolume: row[6],
    trades: row[7],
    closed,
  });
  const history = array(e.history, 'history').map((c, i) => ohlcv(c, `history[${i}]`, ms, 0));
  ascending(history, 'history');
  const current = e.current === null ? null : ohlcv(e.current, 'current', ms, 0);
  if (current !== null) ascending([current], 'current', history.at(-1)?.[0]);
  const completeFrom =
    e.completeFrom === null ? Number.NEGATIVE_INFINITY : integer(e.completeFrom, 'completeFrom');
  if (Number.isFinite(completeFrom) && completeFrom % ms !== 0)
    fail(`completeFrom ${completeFrom} is not a multiple of ${ms} ms`);
  return {
    completeFrom,
    priorClose: nullableAmount(e.priorClose, 'priorClose'),
    current: current === null ? null : candle(current, false),
    history: history.map((c) => candle(c, true)),
  };
}

function printOf(value: unknown, what: string): Print {
  const row = array(value, what, 6);
  const tradeId = integer(row[0], `${what} trade id`, 1);
  const time = integer(row[1], `${what} time`);
  const at = integer(row[2], `${what} placement`);
  if (at < time) fail(`${what} is placed at ${at}, before its trade time ${time}`);
  return {
    tradeId,
    time,
    at,
    price: amount(row[3], `${what} price`),
    quantity: amount(row[4], `${what} quantity`, 0n),
    quote: amount(row[5], `${what} quote`, 0n),
  };
}

function tapePrintOf(value: unknown, what: string): TapePrint {
  const row = array(value, what, 5);
  const side = row[4];
  if (side !== 'Buy' && side !== 'Sell') fail(`${what} side is ${describe(side)}, not Buy or Sell`);
  return {
    tradeId: integer(row[0], `${what} trade id`, 1),
    time: integer(row[1], `${what} time`),
    price: amount(row[2], `${what} price`, 1n),
    quantity: amount(row[3], `${what} quantity`, 1n),
    side,
  };
}

/** What a restore has read of one market's candles. */
interface MarketSeen {
  readonly series: (SeriesRows | undefined)[];
  readonly prints: Print[];
}

/**
 * Reads entries into fresh, empty projections (never the live ones). {@link add} checks each
 * entry as it comes; {@link finish} checks that every market has all its series, then fills the
 * candle projection.
 */
export class MarketDataRestore {
  private readonly ticker: TickerProjection;
  private readonly candles: CandleProjection;
  private readonly tape: TradeTape;
  private readonly windows = new Set<number>();
  private readonly markets = new Map<number, MarketSeen>();
  private readonly tapes = new Map<number, TapePrint[]>();
  private count = 0;

  /** `ticker`, `candles` and `tape`: fresh projections to fill. */
  constructor(ticker: TickerProjection, candles: CandleProjection, tape: TradeTape) {
    this.ticker = ticker;
    this.candles = candles;
    this.tape = tape;
  }

  /** Reads one entry; throws {@link CheckpointEntryError} naming what is wrong with it. */
  add(entry: unknown): void {
    const index = this.count++;
    let name = `entry ${index}`;
    try {
      const e = record(entry, 'the entry');
      if (e.kind !== 'ticker' && e.kind !== 'candles' && e.kind !== 'prints' && e.kind !== 'tape') {
        fail(`unknown kind ${describe(e.kind)}`);
      }
      const m = market(e.market);
      switch (e.kind) {
        case 'ticker': {
          name = `entry ${index} (ticker of market ${m})`;
          if (this.windows.has(m)) fail('a second ticker of the market');
          const rows = windowRows(e);
          this.windows.add(m);
          this.ticker.restore(m, rows);
          return;
        }
        case 'candles': {
          if (!isCandleInterval(e.interval)) fail(`unknown interval ${describe(e.interval)}`);
          name = `entry ${index} (${e.interval} candles of market ${m})`;
          const seen = this.seen(m);
          const i = INTERVALS.indexOf(e.interval);
          if (seen.series[i] !== undefined) fail('a second series of the same interval');
          seen.series[i] = seriesRows(e, m, e.interval);
          return;
        }
        case 'prints': {
          name = `entry ${index} (prints of market ${m})`;
          const seen = this.seen(m);
          const prints = array(e.prints, 'prints').map((p, i) => printOf(p, `prints[${i}]`));
          let last = seen.prints.at(-1);
          prints.forEach((p, i) => {
            if (last !== undefined && (p.tradeId <= last.tradeId || p.time < last.time)) {
              fail(`prints[${i}] (trade ${p.tradeId}) is not after trade ${last.tradeId}`);
            }
            if (last !== undefined && p.at < last.at) {
              fail(`prints[${i}] (trade ${p.tradeId}) is placed before trade ${last.tradeId}`);
            }
            last = p;
          });
          for (const p of prints) seen.prints.push(p);
          return;
        }
        case 'tape': {
          name = `entry ${index} (trade tape of market ${m})`;
          let held = this.tapes.get(m);
          const trades = array(e.trades, 'trades').map((p, i) => tapePrintOf(p, `trades[${i}]`));
          let last = held?.at(-1);
          trades.forEach((p, i) => {
            if (last !== undefined && (p.tradeId <= last.tradeId || p.time < last.time)) {
              fail(`trades[${i}] (trade ${p.tradeId}) is not after trade ${last.tradeId}`);
            }
            last = p;
          });
          if (held === undefined) {
            held = [];
            this.tapes.set(m, held);
          }
          for (const p of trades) held.push(p);
          return;
        }
      }
    } catch (error) {
      if (error instanceof Malformed) {
        throw new CheckpointEntryError(MARKET_DATA_PART, `${name}: ${error.message}`);
      }
      throw error;
    }
  }

  /**
   * Checks that every market read has all twelve series (throws {@link CheckpointEntryError}
   * otherwise, before filling anything), then fills the candle projection and the tape.
   */
  finish(): void {
    for (const [m, seen] of this.markets) {
      const missing = INTERVALS.filter((_, i) => seen.series[i] === undefined);
      if (missing.length > 0) {
        throw new CheckpointEntryError(
          MARKET_DATA_PART,
          `market ${m} has no ${missing.join(', ')} candles`,
        );
      }
    }
    for (const [m, seen] of this.markets) {
      this.candles.restore(m, { series: seen.series as SeriesRows[], prints: seen.prints });
    }
    this.markets.clear();
    for (const [m, prints] of this.tapes) this.tape.restore(m, prints);
    this.tapes.clear();
  }

  private seen(m: number): MarketSeen {
    let seen = this.markets.get(m);
    if (seen === undefined) {
      seen = { series: INTERVALS.map(() => undefined), prints: [] };
      this.markets.set(m, seen);
    }
    return seen;
  }
}
