/**
 * The public trade tape (our extension, docs/protocol-decisions.md): every print the engine emits
 * as a `trade` event (book matches and the liquidation market sweep), pushed on the `trades`
 * channel in trade order and kept, the last {@link DEFAULT_TRADE_TAPE} per instrument, for
 * `GET /api/trades`. Auction claims and ADL are off-book transfers the engine records without a
 * `trade` event: they are not prints, and never reach the tape (as they never reach candles or
 * ticker volume).
 *
 * A bust of a print takes it off the tape (the REST read leaves busted prints out, as candles and
 * tickers restate without them) and is announced with a `tradeBust` message so a client's own
 * tape can drop it too.
 *
 * Memory: at most `size` prints per instrument are held (twice that many array slots while the
 * dropped ones wait for compaction).
 *
 * @module
 */
import {
  type EngineState,
  formatDecimal,
  formatPrice,
  type Instrument,
  type Side,
} from '@perp/core';
import type { CommittedBatch } from '../engine/host.js';
import { Captures, type RowsCapture } from '../read/checkpoint.js';
import { RetainedList } from '../read/retained-list.js';

/** Prints kept per instrument by default; also the largest `limit` of `GET /api/trades`. */
export const DEFAULT_TRADE_TAPE = 1_000;

/** One public print in engine units. */
export interface TapePrint {
  readonly tradeId: number;
  /** Engine time of the trade, ms. */
  readonly time: number;
  /** Raw price (1e18). */
  readonly price: bigint;
  /** Raw quantity units. */
  readonly quantity: bigint;
  /** The taker's side (for a liquidation's market step, the liquidated account's). */
  readonly side: Side;
}

/** What a batch did to the tape, in event order: prints, and busts of prints. */
export type TapeEvent =
  | { readonly kind: 'trade'; readonly market: number; readonly print: TapePrint }
  | {
      readonly kind: 'bust';
      readonly market: number;
      readonly tradeId: number;
      /** Time of the bust, ms. */
      readonly time: number;
    };

/** The `trade` message (and, without `type`, a row of `GET /api/trades`). */
export interface PublicTrade {
  readonly instrument: string;
  /** u64 as a decimal string. */
  readonly tradeId: string;
  readonly price: string;
  readonly quantity: string;
  /** The taker's side. */
  readonly side: Side;
  readonly time: number;
}

/** A print on the wire, given its instrument. */
export function publicTrade(print: TapePrint, spec: Instrument): PublicTrade {
  return {
    instrument: spec.symbol,
    tradeId: String(print.tradeId),
    price: formatPrice(print.price),
    quantity: formatDecimal(print.quantity, spec.quantityDecimals),
    side: print.side,
    time: print.time,
  };
}

/**
 * Whether the engine's record of a trade is a public print: book matches (`Order`) and the
 * liquidation market sweep (`Liquidation`) are; auction claims and ADL are not. `undefined` when
 * the state no longer holds the record.
 */
export function isPublicPrint(state: EngineState, tradeId: number): boolean | undefined {
  const source = state.trades.get(tradeId)?.source;
  if (source === undefined) return undefined;
  return source === 'Order' || source === 'Liquidation';
}

/** `prints` (oldest first) as a market's tape: the newest `limit` of them. */
function tapeOf(prints: readonly TapePrint[], limit: number): RetainedList<TapePrint> {
  return new RetainedList(prints.slice(Math.max(0, prints.length - limit)));
}

/** The recent public prints of every instrument, fed by committed batches. */
export class TradeTape {
  /** Each instrument's held prints, oldest first (ascending trade ids). */
  private readonly markets = new Map<number, RetainedList<TapePrint>>();
  private readonly limit: number;
  private readonly captures = new Captures<number, RetainedList<TapePrint>>((t) => t.copy());

  /** `size`: prints kept per instrument. */
  constructor(size: number = DEFAULT_TRADE_TAPE) {
    if (!Number.isInteger(size) || size < 1) {
      throw new RangeError(`the trade tape size must be a positive integer, got ${size}`);
    }
    this.limit = size;
  }

  /** Prints kept per instrument. */
  get size(): number {
    return this.limit;
  }

  /** An empty tape of the same size. */
  emptyCopy(): TradeTape {
    return new TradeTape(this.limit);
  }

  private touch(market: number): void {
    if (this.captures.active) this.captures.beforeChange(market, this.markets.get(market));
  }

  /** Adds one print of a market. */
  add(market: number, print: TapePrint): void {
    this.touch(market);
    let tape = this.markets.get(market);
    if (tape === undefined) {
      tape = new RetainedList();
      this.markets.set(market, tape);
    }
    tape.push(print);
    if (tape.length > this.limit) tape.dropOldest(tape.length - this.limit);
  }

  /** Takes a busted trade off the tape; whether the tape held it. */
  remove(market: number, tradeId: number): boolean {
    const tape = this.markets.get(market);
    if (tape === undefined) return false;
    // Binary search by trade id; a bust is rare, so the tape is rebuilt without the print.
    let lo = 0;
    let hi = tape.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const id = (tape.at(mid) as TapePrint).tradeId;
      if (id === tradeId) {
        this.touch(market);
        this.markets.set(market, new RetainedList(tape.filter((p) => p.tradeId !== tradeId)));
        return true;
      }
      if (id < tradeId) lo = mid + 1;
      else hi = mid - 1;
    }
    return false;
  }

  /**
   * Applies the prints and busts of a committed batch; returns them in event order. A bust is
   * one of a print when the tape held it or the engine's record says so ({@link isPublicPrint});
   * the bust of an auction claim or an ADL transfer is not on the tape.
   */
  apply(batch: CommittedBatch): TapeEvent[] {
    const out: TapeEvent[] = [];
    for (const events of batch.events) {
      for (const e of events) {
        if (e.type === 'trade') {
          const print: TapePrint = {
            tradeId: e.tradeId,
            time: e.time,
            price: e.price,
            quantity: e.quantity,
            side: e.takerSide,
          };
          this.add(e.market, print);
          out.push({ kind: 'trade', market: e.market, print });
        } else if (e.type === 'tradeBusted') {
          const held = this.remove(e.market, e.tradeId);
          if (held || isPublicPrint(batch.state, e.tradeId) === true) {
            out.push({ kind: 'bust', market: e.market, tradeId: e.tradeId, time: e.time });
          }
        }
      }
    }
    return out;
  }

  /** The newest `limit` prints of a market, newest first. */
  recent(market: number, limit: number): TapePrint[] {
    const tape = this.markets.get(market);
    if (tape === undefined) return [];
    return tape.slice(Math.max(0, tape.length - limit)).reverse();
  }

  /**
   * Starts a capture of every market's prints as they are now (O(markets)): from here on a
   * market's prints are copied before they first change. Yielded lists are the capture's own.
   */
  capture(): RowsCapture<number, readonly TapePrint[]> {
    const markets = this.captures.start(this.markets.keys(), (id) => this.markets.get(id));
    return {
      *rows() {
        for (const [id, tape] of markets.rows()) yield [id, tape.slice()];
      },
      release: () => markets.release(),
    };
  }

  /**
   * Sets a market's prints (oldest first, trade ids increasing) in a tape being restored, before
   * any batch reaches it; beyond the tape's size, the oldest are dropped.
   */
  restore(market: number, prints: readonly TapePrint[]): void {
    this.markets.set(market, tapeOf(prints, this.limit));
  }
}
