/**
 * The `liquidations` channel (protocol.md section 6): live liquidation auctions, sent on start,
 * on every claim and at the end. Auctions belong to the risk engine, which is built separately;
 * the service reads them through two hooks that default to "no auctions".
 *
 * @module
 */
import {
  auctionPrice,
  type EngineEvent,
  type EngineState,
  formatDecimal,
  formatPrice,
  type Instrument,
  type Side,
} from '@perp/core';

/** A liquidation auction as the risk engine describes it, in engine units. */
export interface LiveAuction {
  /** u64 id; a decimal string on the wire. */
  readonly auctionId: number | bigint;
  readonly market: number;
  /** The side a claimant takes (`Buy` when a long is being liquidated). */
  readonly side: Side;
  /** Quantity still to claim, raw quantity units. */
  readonly remaining: bigint;
  /** Current auction price, raw (1e18). */
  readonly price: bigint;
  readonly startPrice: bigint;
  readonly endPrice: bigint;
  /** ms. */
  readonly endTime: number;
  readonly status: 'Live' | 'Ended';
}

/** The live auctions of a state (snapshot on subscribe). */
export type AuctionSource = (state: EngineState) => readonly LiveAuction[];

/** The auctions that started, were claimed or ended in a batch's events, in order. */
export type AuctionEventSource = (
  events: readonly EngineEvent[],
  state: EngineState,
) => readonly LiveAuction[];

/** Default hooks: no auctions until the risk engine provides them. */
export const noAuctions: AuctionSource = () => [];
/** Default hooks: no auction changes until the risk engine provides them. */
export const noAuctionEvents: AuctionEventSource = () => [];

/**
 * An auction priced at `time`. The state's own time is that of its last command, and nothing
 * wakes the engine between an auction's start, claims and end, so a view priced by the state can
 * lag the running price by up to the whole auction; a snapshot is priced now, as a claim would be.
 * Auctions the state does not hold (injected sources) keep their price.
 */
export function pricedAt(auction: LiveAuction, state: EngineState, time: number): LiveAuction {
  const live = state.auctions.get(Number(auction.auctionId));
  if (live === undefined || auction.status !== 'Live') return auction;
  return { ...auction, price: auctionPrice(live, Math.max(time, state.time)) };
}

/** The `liquidationAuction` message. */
export interface WireAuction {
  type: 'liquidationAuction';
  auctionId: string;
  instrument: string;
  side: Side;
  remaining: string;
  price: string;
  startPrice: string;
  endPrice: string;
  endTime: number;
  status: 'Live' | 'Ended';
}

/** An auction on the wire. */
export function wireAuction(auction: LiveAuction, spec: Instrument): WireAuction {
  return {
    type: 'liquidationAuction',
    auctionId: auction.auctionId.toString(),
    instrument: spec.symbol,
    side: auction.side,
    remaining: formatDecimal(auction.remaining, spec.quantityDecimals),
    price: formatPrice(auction.price),
    startPrice: formatPrice(auction.startPrice),
    endPrice: formatPrice(auction.endPrice),
    endTime: auction.endTime,
    status: auction.status,
  };
}
