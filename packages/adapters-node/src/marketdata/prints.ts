/**
 * The recent trade prints of one market, kept so market data can be restated when the operator
 * busts a trade: the minute that held the busted trade is rebuilt from the prints that remain.
 * Only trades the engine can still bust matter, so the log keeps every print from the minute of
 * the engine's oldest retained trade on ({@link PrintLog.prune}): its size follows the engine's
 * own bust window (`tradeRetentionMs`, `maxRetainedTrades`) plus at most one minute.
 *
 * @module
 */
import type { EngineState } from '@perp/core';

/** One trade print in engine units. */
export interface Print {
  readonly tradeId: number;
  /** Engine time of the trade, ms. */
  readonly time: number;
  /**
   * Where the candles placed it, ms: the trade time, or the start of the open one-minute candle
   * when the trade was published after the service clock had closed its own minute.
   */
  readonly at: number;
  /** Raw price (1e18). */
  readonly price: bigint;
  /** Raw quantity units. */
  readonly quantity: bigint;
  /** Collateral micro-units. */
  readonly quote: bigint;
}

/** Open, high, low, close and volumes of a run of prints. */
export interface TradeAggregate {
  readonly open: bigint;
  readonly high: bigint;
  readonly low: bigint;
  readonly close: bigint;
  readonly volume: bigint;
  readonly quoteVolume: bigint;
  readonly trades: number;
}

/** Which time of a print a query ranges over. */
export type PrintClock = 'time' | 'at';

/** A market's prints in trade-id order (which is also `time` and `at` order). */
export class PrintLog {
  private prints: Print[] = [];
  private head = 0;

  /** Prints held. */
  get size(): number {
    return this.prints.length - this.head;
  }

  /** Appends a print; trade ids arrive in increasing order. */
  add(print: Print): void {
    this.prints.push(print);
  }

  /** Whether {@link prune} at `floor` would drop prints. */
  expiresBy(floor: number): boolean {
    const first = this.prints[this.head];
    return first !== undefined && first.at < floor;
  }

  /** The prints held, oldest first, in a list of their own (prints are never changed). */
  held(): Print[] {
    return this.prints.slice(this.head);
  }

  /** A log holding `prints` (in trade-id order), for a restore or a copy. */
  static of(prints: readonly Print[]): PrintLog {
    const log = new PrintLog();
    log.prints = [...prints];
    return log;
  }

  /** Drops the prints placed before `floor` (ms). */
  prune(floor: number): void {
    const prints = this.prints;
    while (this.head < prints.length && (prints[this.head] as Print).at < floor) this.head++;
    // Compact once the dropped prefix dominates, so dropping stays amortised O(1).
    if (this.head > 1_024 && this.head * 2 > prints.length) {
      this.prints = prints.slice(this.head);
      this.head = 0;
    }
  }

  /** Removes and returns the print of a trade, or `undefined` when the log does not hold it. */
  remove(tradeId: number): Print | undefined {
    const prints = this.prints;
    let lo = this.head;
    let hi = prints.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const id = (prints[mid] as Print).tradeId;
      if (id === tradeId) return prints.splice(mid, 1)[0];
      if (id < tradeId) lo = mid + 1;
      else hi = mid - 1;
    }
    return undefined;
  }

  /** The aggregate of the prints whose `clock` time is in `[from, to)`, or `null` for none. */
  aggregate(from: number, to: number, clock: PrintClock): TradeAggregate | null {
    const prints = this.prints;
    let lo = this.head;
    let hi = prints.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((prints[mid] as Print)[clock] < from) lo = mid + 1;
      else hi = mid;
    }
    const first = prints[lo];
    if (first === undefined || first[clock] >= to) return null;
    let high = first.price;
    let low = first.price;
    let close = first.price;
    let volume = 0n;
    let quoteVolume = 0n;
    let trades = 0;
    for (let i = lo; i < prints.length; i++) {
      const p = prints[i] as Print;
      if (p[clock] >= to) break;
      if (p.price > high) high = p.price;
      if (p.price < low) low = p.price;
      close = p.price;
      volume += p.quantity;
      quoteVolume += p.quote;
      trades++;
    }
    return { open: first.price, high, low, close, volume, quoteVolume, trades };
  }
}

/** Start of the minute that contains `time`. */
export function minuteOf(time: number): number {
  return Math.floor(time / 60_000) * 60_000;
}

/**
 * The oldest time a print may still be needed from: the start of the minute of the engine's
 * oldest retained trade (the oldest one it can bust), or `+Infinity` when it retains none.
 */
export function printFloor(state: EngineState): number {
  if (state.trades.size === 0) return Number.POSITIVE_INFINITY;
  // The log head is the oldest retained id; ids below the counter past it are all stored.
  for (let id = state.tradeLogHead; id <= state.counters.trade; id++) {
    const t = state.trades.get(id);
    if (t !== undefined) return minuteOf(t.time);
  }
  return Number.NEGATIVE_INFINITY;
}
