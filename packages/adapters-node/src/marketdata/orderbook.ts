/**
 * Partial order book snapshots (research 3.2 and 6.6): the top `depth` levels of each side as
 * `[price, quantity]` canonical decimal strings, bids descending and asks ascending, stamped with
 * the market's `bookSeq`, which only increases. Every message is complete, so a client needs no
 * resync logic: it keeps the message with the highest `seq`.
 *
 * @module
 */
import { depthOf, formatDecimal, formatPrice, type Market } from '@perp/core';

/** Depths a client may ask for. */
export const BOOK_DEPTHS = [5, 10, 20, 50] as const;

/** A book depth a client may ask for. */
export type BookDepth = (typeof BOOK_DEPTHS)[number];

/** Depth used when a subscription names none. */
export const DEFAULT_BOOK_DEPTH: BookDepth = 20;

/** Whether a value is an allowed depth. */
export function isBookDepth(value: unknown): value is BookDepth {
  return typeof value === 'number' && (BOOK_DEPTHS as readonly number[]).includes(value);
}

/** One level on the wire: `[price, quantity]`. */
export type WireLevel = [string, string];

/** The `orderbook` message. */
export interface WireOrderBook {
  type: 'orderbook';
  instrument: string;
  depth: BookDepth;
  seq: number;
  time: number;
  bids: WireLevel[];
  asks: WireLevel[];
}

/** The top `depth` levels of one side, best first. */
export function wireLevels(
  levels: Market['bids'],
  depth: number,
  quantityDecimals: number,
): WireLevel[] {
  return depthOf(levels, depth).map((l) => [
    formatPrice(l.price),
    formatDecimal(l.quantity, quantityDecimals),
  ]);
}

/** A top-`depth` snapshot of a market's book at `time`. */
export function orderBookSnapshot(market: Market, depth: BookDepth, time: number): WireOrderBook {
  const qd = market.spec.quantityDecimals;
  return {
    type: 'orderbook',
    instrument: market.spec.symbol,
    depth,
    seq: market.bookSeq,
    time,
    bids: wireLevels(market.bids, depth, qd),
    asks: wireLevels(market.asks, depth, qd),
  };
}
