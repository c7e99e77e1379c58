/**
 * 24 h rolling trade statistics in bounded memory: trades are kept as one aggregate per minute,
 * so a market holds at most 1,441 buckets however much it trades. The window therefore moves
 * in whole minutes, and the statistics are exact for that definition:
 *
 * - the window at `time` starts at the beginning of the minute that contains `time - 24 h` and
 *   ends at `time` (so it spans between 24 h and 24 h + 1 min);
 * - `open` is the price of the last trade before the window (the price at `time - 24 h`, to the
 *   minute), or the first trade in it when the market is younger than that;
 * - `high`, `low`, `volume`, `quoteVolume` and `trades` cover the trades inside the window; with
 *   none inside, `high` and `low` equal `open` (the price did not move).
 *
 * @module
 */
import type { TradeAggregate } from './prints.js';

/** One day in ms. */
export const DAY_MS = 86_400_000;
/** Bucket width in ms. */
export const BUCKET_MS = 60_000;

/**
 * One minute's trades. Never changed once made (a trade or a bust replaces it), so a copy of the
 * window only copies the list ({@link RollingWindow.clone}).
 */
export interface Bucket {
  /** Start of the bucket's minute, ms. */
  readonly start: number;
  readonly open: bigint;
  readonly high: bigint;
  readonly low: bigint;
  readonly close: bigint;
  readonly volume: bigint;
  readonly quoteVolume: bigint;
  readonly trades: number;
}

/** What a window holds, as a checkpoint saves it (`ticker.ts`). */
export interface WindowRows {
  /** Close of the newest bucket that left the window, or the seeded price. */
  readonly priorClose: bigint | null;
  /** The buckets, oldest first. */
  readonly buckets: readonly Bucket[];
}

/** Statistics of the window; prices `null` while the market has never traded. */
export interface WindowStats {
  readonly open: bigint | null;
  readonly high: bigint | null;
  readonly low: bigint | null;
  readonly last: bigint | null;
  /** Raw quantity units. */
  readonly volume: bigint;
  /** Collateral micro-units. */
  readonly quoteVolume: bigint;
  readonly trades: number;
}

/** Start of the window at `time`. */
export function windowStart(time: number, windowMs: number = DAY_MS): number {
  return Math.floor((time - windowMs) / BUCKET_MS) * BUCKET_MS;
}

/** Minute buckets of one market's trades over a rolling window. */
export class RollingWindow {
  private readonly windowMs: number;
  private buckets: Bucket[] = [];
  /** Close of the newest bucket that left the window: the last trade before it. */
  private priorClose: bigint | null = null;
  private version = 0;
  private cache: { start: number; version: number; stats: WindowStats } | null = null;

  constructor(windowMs: number = DAY_MS) {
    if (windowMs % BUCKET_MS !== 0 || windowMs <= 0) {
      throw new RangeError(
        `window must be a positive multiple of ${BUCKET_MS} ms, got ${windowMs}`,
      );
    }
    this.windowMs = windowMs;
  }

  /** Buckets held (at most window / 1 min + 1 once time moves on). */
  get size(): number {
    return this.buckets.length;
  }

  /** Records a price that traded before anything this window saw (a restart without replay). */
  seed(price: bigint): void {
    if (this.priorClose === null && this.buckets.length === 0) {
      this.priorClose = price;
      this.version++;
    }
  }

  /** Adds a trade: raw price, raw quantity, quote in micro-units, time in ms. */
  add(price: bigint, quantity: bigint, quoteVolume: bigint, time: number): void {
    const start = Math.floor(time / BUCKET_MS) * BUCKET_MS;
    let i = this.buckets.length - 1;
    // Engine times never go back, so the search ends at once; it keeps odd input correct anyway.
    while (i >= 0 && (this.buckets[i] as Bucket).start > start) i--;
    const b = this.buckets[i];
    if (b !== undefined && b.start === start) {
      this.buckets[i] = {
        start,
        open: b.open,
        high: price > b.high ? price : b.high,
        low: price < b.low ? price : b.low,
        // Within a minute, the trade with the latest time sets the close (ties: the later one).
        close: price,
        volume: b.volume + quantity,
        quoteVolume: b.quoteVolume + quoteVolume,
        trades: b.trades + 1,
      };
    } else {
      this.buckets.splice(i + 1, 0, {
        start,
        open: price,
        high: price,
        low: price,
        close: price,
        volume: quantity,
        quoteVolume,
        trades: 1,
      });
    }
    this.version++;
    this.prune(windowStart(time, this.windowMs));
  }

  /**
   * Replaces the minute that starts at `start` with what is left of it after a bust (`null`:
   * nothing). Returns whether the window held that minute; a minute that already left the window
   * only fed `open`, which is not restated.
   */
  restate(start: number, left: TradeAggregate | null): boolean {
    const i = this.buckets.findIndex((b) => b.start === start);
    if (i < 0) return false;
    if (left === null) this.buckets.splice(i, 1);
    else this.buckets[i] = { start, ...left };
    this.version++;
    return true;
  }

  /** Whether {@link stats} at `time` would drop buckets that left the window. */
  expiresBy(time: number): boolean {
    const first = this.buckets[0];
    return first !== undefined && first.start < windowStart(time, this.windowMs);
  }

  /** A copy that later changes to this window leave alone (buckets are never changed in place). */
  clone(): RollingWindow {
    return RollingWindow.fromRows(this.windowMs, this.rows());
  }

  /** What the window holds now; the list is this window's own, so copy it before keeping it. */
  rows(): WindowRows {
    return { priorClose: this.priorClose, buckets: this.buckets };
  }

  /** A window holding `rows` (buckets oldest first, one per minute). */
  static fromRows(windowMs: number, rows: WindowRows): RollingWindow {
    const w = new RollingWindow(windowMs);
    w.priorClose = rows.priorClose;
    w.buckets = [...rows.buckets];
    return w;
  }

  private prune(start: number): void {
    let n = 0;
    while (n < this.buckets.length && (this.buckets[n] as Bucket).start < start) n++;
    if (n === 0) return;
    this.priorClose = (this.buckets[n - 1] as Bucket).close;
    this.buckets.splice(0, n);
    this.version++;
  }

  /** Statistics of the window ending at `time` (monotonic calls; old buckets are dropped). */
  stats(time: number): WindowStats {
    const start = windowStart(time, this.windowMs);
    this.prune(start);
    const cached = this.cache;
    if (cached !== null && cached.start === start && cached.version === this.version) {
      return cached.stats;
    }
    const first = this.buckets[0];
    const newest = this.buckets[this.buckets.length - 1];
    const open = this.priorClose ?? first?.open ?? null;
    let high = open;
    let low = open;
    let volume = 0n;
    let quoteVolume = 0n;
    let trades = 0;
    if (first !== undefined) {
      let hi = first.high;
      let lo = first.low;
      for (const b of this.buckets) {
        if (b.high > hi) hi = b.high;
        if (b.low < lo) lo = b.low;
        volume += b.volume;
        quoteVolume += b.quoteVolume;
        trades += b.trades;
      }
      high = hi;
      low = lo;
    }
    const stats: WindowStats = {
      open,
      high,
      low,
      last: newest?.close ?? this.priorClose,
      volume,
      quoteVolume,
      trades,
    };
    this.cache = { start, version: this.version, stats };
    return stats;
  }
}
