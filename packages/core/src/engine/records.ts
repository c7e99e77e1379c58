/**
 * Constructors and copy-on-write copies of the engine's mutable records. Every record of a kind
 * is built by the same function with the same field order, so V8 keeps one hidden class per
 * kind and the hot paths stay monomorphic; copies list their fields instead of spreading.
 *
 * @module
 */

import type { Instrument } from '../instruments/instrument.js';
import type { Edit } from '../persistent/edit.js';
import { PMap } from '../persistent/hamt.js';
import { IdList } from '../persistent/id-list.js';
import type { Account, Level, Market, Order, OrderTotals, Position } from './types.js';

/** A new, empty market. */
export function newMarket(edit: Edit, spec: Instrument): Market {
  return {
    edit,
    spec,
    status: 'Active',
    bids: [],
    asks: [],
    bookSeq: 0,
    prices: {
      index: null,
      indexTime: 0,
      mark: null,
      markTime: 0,
      basisEmaNum: 0n,
      basisEmaDen: 0n,
      basisEmaTime: 0,
    },
    lastTrade: null,
    openInterest: 0n,
    triggersAbove: [],
    triggersBelow: [],
    funding: { lastFundingTime: 0, premiumSum: 0n, sampleCount: 0 },
    holders: PMap.empty(),
  };
}

/** A copy of a market owned by `edit`, with its own level and trigger arrays. */
export function copyMarket(m: Market, edit: Edit): Market {
  return {
    edit,
    spec: m.spec,
    status: m.status,
    bids: m.bids.slice(),
    asks: m.asks.slice(),
    bookSeq: m.bookSeq,
    prices: m.prices,
    lastTrade: m.lastTrade,
    openInterest: m.openInterest,
    triggersAbove: m.triggersAbove.slice(),
    triggersBelow: m.triggersBelow.slice(),
    funding: m.funding,
    holders: m.holders,
  };
}

/** A new price level. */
export function newLevel(edit: Edit, price: bigint): Level {
  return { edit, price, chunks: [], base: 0, head: 0, tail: 0, count: 0, quantity: 0n };
}

/**
 * A copy of a level owned by `edit`, exactly as it was. Its chunks stay shared until written
 * (`book/levels.ts`); spent chunks are dropped only by `compact`, at the same commands
 * however they are batched, so the state (and its hash) after a command log does not depend on
 * where batch boundaries fell.
 */
export function copyLevel(l: Level, edit: Edit): Level {
  return {
    edit,
    price: l.price,
    chunks: l.chunks.slice(),
    base: l.base,
    head: l.head,
    tail: l.tail,
    count: l.count,
    quantity: l.quantity,
  };
}

/** A new, empty account. */
export function newAccount(edit: Edit, address: string, time: number): Account {
  return {
    edit,
    address,
    createdTime: time,
    reportSeq: 0,
    crossCash: 0n,
    isolated: [],
    positions: [],
    leverage: [],
    orderTotals: [],
    orders: IdList.empty(),
    claimReserve: 0n,
  };
}

function copyPosition(p: Position): Position {
  return {
    market: p.market,
    mode: p.mode,
    size: p.size,
    entryNotional: p.entryNotional,
    entryQty: p.entryQty,
    openedTime: p.openedTime,
    realizedPnl: p.realizedPnl,
    fundingSinceOpen: p.fundingSinceOpen,
  };
}

function copyTotals(t: OrderTotals): OrderTotals {
  return {
    market: t.market,
    mode: t.mode,
    buyQty: t.buyQty,
    buyNotional: t.buyNotional,
    sellQty: t.sellQty,
    sellNotional: t.sellNotional,
    buyMaxLeaves: t.buyMaxLeaves,
    sellMaxLeaves: t.sellMaxLeaves,
    guardedCount: t.guardedCount,
  };
}

/**
 * Totals as they would be with the given changes of resting quantity and notional (a what-if for
 * margin checks; the leaves bounds stay). A new record in the one shape every totals record has.
 */
export function totalsShifted(
  t: OrderTotals,
  buyQtyDelta: bigint,
  buyNotionalDelta: bigint,
  sellQtyDelta: bigint,
  sellNotionalDelta: bigint,
): OrderTotals {
  return {
    market: t.market,
    mode: t.mode,
    buyQty: t.buyQty + buyQtyDelta,
    buyNotional: t.buyNotional + buyNotionalDelta,
    sellQty: t.sellQty + sellQtyDelta,
    sellNotional: t.sellNotional + sellNotionalDelta,
    buyMaxLeaves: t.buyMaxLeaves,
    sellMaxLeaves: t.sellMaxLeaves,
    guardedCount: t.guardedCount,
  };
}

/** A copy of an account owned by `edit`, with its own positions and totals. */
export function copyAccount(a: Account, edit: Edit): Account {
  return {
    edit,
    address: a.address,
    createdTime: a.createdTime,
    reportSeq: a.reportSeq,
    crossCash: a.crossCash,
    isolated: a.isolated.slice(),
    positions: a.positions.map(copyPosition),
    leverage: a.leverage.slice(),
    orderTotals: a.orderTotals.map(copyTotals),
    orders: a.orders,
    claimReserve: a.claimReserve,
  };
}

/** A copy of an order owned by `edit`. */
export function copyOrder(o: Order, edit: Edit): Order {
  return {
    edit,
    orderId: o.orderId,
    account: o.account,
    market: o.market,
    side: o.side,
    orderType: o.orderType,
    timeInForce: o.timeInForce,
    marginMode: o.marginMode,
    reduceOnly: o.reduceOnly,
    postOnly: o.postOnly,
    managed: o.managed,
    parentCloid: o.parentCloid,
    entryOrderId: o.entryOrderId,
    createdTime: o.createdTime,
    expireTime: o.expireTime,
    cloid: o.cloid,
    price: o.price,
    triggerPrice: o.triggerPrice,
    quantity: o.quantity,
    cumQty: o.cumQty,
    filledNotional: o.filledNotional,
    ordStatus: o.ordStatus,
    reason: o.reason,
    updatedTime: o.updatedTime,
    slot: o.slot,
    armed: o.armed,
  };
}

/** A new totals record. */
export function newTotals(market: number, mode: OrderTotals['mode']): OrderTotals {
  return {
    market,
    mode,
    buyQty: 0n,
    buyNotional: 0n,
    sellQty: 0n,
    sellNotional: 0n,
    buyMaxLeaves: 0n,
    sellMaxLeaves: 0n,
    guardedCount: 0,
  };
}
