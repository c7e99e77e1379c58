/**
 * The trade log of the bust window: every fill (order, liquidation, auction, ADL) is recorded with
 * both legs and each position as it was just before the fill, so a bust can reverse the ledger
 * and rebuild the entry price from the position's remaining fills (engine-rules section 8).
 * Records older than `tradeRetentionMs`, or beyond `maxRetainedTrades`, are dropped.
 *
 * @module
 */
import type { Ctx } from '../engine/context.js';
import type {
  Account,
  EngineState,
  MarginMode,
  Market,
  PositionSnapshot,
  StoredTrade,
  TradeLeg,
  TradeRecord,
  TradeSource,
} from '../engine/types.js';
import { applyFillLeg, type FillLeg } from '../margin/ledger.js';
import { positionOf } from '../margin/scope.js';

/** A flat position. */
export const FLAT: PositionSnapshot = {
  size: 0n,
  entryNotional: 0n,
  entryQty: 0n,
  openedTime: 0,
  realizedPnl: 0n,
  fundingSinceOpen: 0n,
};

/** The account's position in (market, mode) as a snapshot (flat when none). */
export function snapshotOf(account: Account, market: number, mode: MarginMode): PositionSnapshot {
  const p = positionOf(account, market, mode);
  if (p === undefined) return FLAT;
  return {
    size: p.size,
    entryNotional: p.entryNotional,
    entryQty: p.entryQty,
    openedTime: p.openedTime,
    realizedPnl: p.realizedPnl,
    fundingSinceOpen: p.fundingSinceOpen,
  };
}

/** One side of a fill as applied: the ledger's answer and the leg the trade log keeps. */
export interface TradedLeg {
  readonly fill: FillLeg;
  readonly trade: TradeLeg;
}

/**
 * Applies one side of a fill to a writable account's ledger ({@link applyFillLeg}) and returns,
 * with it, the leg the trade log keeps: the position as it was just before, for busts. The
 * system fill paths (liquidation, auction claims, ADL) go through here; order fills, the hot
 * path, write their legs straight into the stored trade ({@link applyStoredLeg}).
 */
export function applyTradedLeg(
  account: Account,
  market: Market,
  mode: MarginMode,
  signedQty: bigint,
  price: bigint,
  quote: bigint,
  fee: bigint,
  time: number,
  orderId: number,
  liquidity: 'Maker' | 'Taker',
): TradedLeg {
  const before = snapshotOf(account, market.spec.id, mode);
  const fill = applyFillLeg(account, market, mode, signedQty, price, quote, fee, time);
  return {
    fill,
    trade: {
      account: account.address,
      mode,
      orderId,
      liquidity,
      signedQty,
      fee,
      penalty: 0n,
      realizedPnl: fill.realizedPnl,
      before,
    },
  };
}

/**
 * A stored trade with both legs empty, to be filled by {@link applyStoredLeg} (or
 * {@link storedOfTrade}). Every stored trade is built here, so all share one object shape.
 */
export function newStoredTrade(
  tradeId: number,
  market: number,
  time: number,
  source: TradeSource,
  price: bigint,
  quantity: bigint,
  quote: bigint,
): StoredTrade {
  return {
    tradeId,
    market,
    time,
    source,
    price,
    quantity,
    quote,
    busted: false,
    account0: '',
    mode0: 'Cross',
    orderId0: 0,
    liquidity0: 'Maker',
    signedQty0: 0n,
    fee0: 0n,
    penalty0: 0n,
    realizedPnl0: 0n,
    size0: 0n,
    entryNotional0: 0n,
    entryQty0: 0n,
    openedTime0: 0,
    positionPnl0: 0n,
    funding0: 0n,
    account1: '',
    mode1: 'Cross',
    orderId1: 0,
    liquidity1: 'Maker',
    signedQty1: 0n,
    fee1: 0n,
    penalty1: 0n,
    realizedPnl1: 0n,
    size1: 0n,
    entryNotional1: 0n,
    entryQty1: 0n,
    openedTime1: 0,
    positionPnl1: 0n,
    funding1: 0n,
  };
}

/**
 * Writes the position-before fields of leg `which` of a stored trade that is still being built.
 * It reads `before` at once: a live position record may change right after.
 */
function setStoredBefore(t: StoredTrade, which: 0 | 1, before: PositionSnapshot): void {
  if (which === 0) {
    t.size0 = before.size;
    t.entryNotional0 = before.entryNotional;
    t.entryQty0 = before.entryQty;
    t.openedTime0 = before.openedTime;
    t.positionPnl0 = before.realizedPnl;
    t.funding0 = before.fundingSinceOpen;
  } else {
    t.size1 = before.size;
    t.entryNotional1 = before.entryNotional;
    t.entryQty1 = before.entryQty;
    t.openedTime1 = before.openedTime;
    t.positionPnl1 = before.realizedPnl;
    t.funding1 = before.fundingSinceOpen;
  }
}

/**
 * Writes the fill fields of leg `which` of a stored trade that is still being built (fields as
 * arguments: order fills call this once per leg and allocate nothing for it).
 */
function setStoredFill(
  t: StoredTrade,
  which: 0 | 1,
  account: string,
  mode: MarginMode,
  orderId: number,
  liquidity: 'Maker' | 'Taker',
  signedQty: bigint,
  fee: bigint,
  penalty: bigint,
  realizedPnl: bigint,
): void {
  if (which === 0) {
    t.account0 = account;
    t.mode0 = mode;
    t.orderId0 = orderId;
    t.liquidity0 = liquidity;
    t.signedQty0 = signedQty;
    t.fee0 = fee;
    t.penalty0 = penalty;
    t.realizedPnl0 = realizedPnl;
  } else {
    t.account1 = account;
    t.mode1 = mode;
    t.orderId1 = orderId;
    t.liquidity1 = liquidity;
    t.signedQty1 = signedQty;
    t.fee1 = fee;
    t.penalty1 = penalty;
    t.realizedPnl1 = realizedPnl;
  }
}

/**
 * {@link applyTradedLeg} for order fills: applies one side of a fill and writes its leg,
 * position-before included, into the stored trade being built, allocating no snapshot.
 */
export function applyStoredLeg(
  t: StoredTrade,
  which: 0 | 1,
  account: Account,
  market: Market,
  mode: MarginMode,
  signedQty: bigint,
  fee: bigint,
  orderId: number,
  liquidity: 'Maker' | 'Taker',
): FillLeg {
  // The position record changes in place: its "before" fields are taken first.
  setStoredBefore(t, which, positionOf(account, market.spec.id, mode) ?? FLAT);
  const fill = applyFillLeg(account, market, mode, signedQty, t.price, t.quote, fee, t.time);
  setStoredFill(
    t,
    which,
    account.address,
    mode,
    orderId,
    liquidity,
    signedQty,
    fee,
    0n,
    fill.realizedPnl,
  );
  return fill;
}

/** The flat form of a trade record. */
export function storedOfTrade(r: TradeRecord): StoredTrade {
  const t = newStoredTrade(r.tradeId, r.market, r.time, r.source, r.price, r.quantity, r.quote);
  t.busted = r.busted;
  for (const which of [0, 1] as const) {
    setStoredBefore(t, which, r.legs[which].before);
    const l = r.legs[which];
    setStoredFill(
      t,
      which,
      l.account,
      l.mode,
      l.orderId,
      l.liquidity,
      l.signedQty,
      l.fee,
      l.penalty,
      l.realizedPnl,
    );
  }
  return t;
}

/** A stored trade as a record. */
export function tradeOfStored(t: StoredTrade): TradeRecord {
  const leg0: TradeLeg = {
    account: t.account0,
    mode: t.mode0,
    orderId: t.orderId0,
    liquidity: t.liquidity0,
    signedQty: t.signedQty0,
    fee: t.fee0,
    penalty: t.penalty0,
    realizedPnl: t.realizedPnl0,
    before: {
      size: t.size0,
      entryNotional: t.entryNotional0,
      entryQty: t.entryQty0,
      openedTime: t.openedTime0,
      realizedPnl: t.positionPnl0,
      fundingSinceOpen: t.funding0,
    },
  };
  const leg1: TradeLeg = {
    account: t.account1,
    mode: t.mode1,
    orderId: t.orderId1,
    liquidity: t.liquidity1,
    signedQty: t.signedQty1,
    fee: t.fee1,
    penalty: t.penalty1,
    realizedPnl: t.realizedPnl1,
    before: {
      size: t.size1,
      entryNotional: t.entryNotional1,
      entryQty: t.entryQty1,
      openedTime: t.openedTime1,
      realizedPnl: t.positionPnl1,
      fundingSinceOpen: t.funding1,
    },
  };
  return {
    tradeId: t.tradeId,
    market: t.market,
    time: t.time,
    source: t.source,
    price: t.price,
    quantity: t.quantity,
    quote: t.quote,
    legs: [leg0, leg1],
    busted: t.busted,
  };
}

/** A trade still in the log, by id. */
export function tradeRecordOf(state: EngineState, tradeId: number): TradeRecord | undefined {
  const t = state.trades.get(tradeId);
  return t === undefined ? undefined : tradeOfStored(t);
}

/** Every trade still in the log (the bust window), oldest first (IntMap walks ascending ids). */
export function tradeRecords(state: EngineState): TradeRecord[] {
  const out: TradeRecord[] = [];
  state.trades.forEach((t) => {
    out.push(tradeOfStored(t));
  });
  return out;
}

/** Stores a trade record (system fill paths and busts). */
export function recordTrade(ctx: Ctx, record: TradeRecord): void {
  storeTrade(ctx, storedOfTrade(record));
}

/**
 * Stores a finished trade and drops the oldest records beyond the retention count. The record
 * must not change afterwards: it is shared with every later state.
 */
export function storeTrade(ctx: Ctx, trade: StoredTrade): void {
  if (!ctx.recordsTrades) return;
  const s = ctx.state;
  s.trades = s.trades.set(ctx.edit, trade.tradeId, trade);
  while (s.trades.size > s.settings.maxRetainedTrades) dropOldest(ctx);
}

function dropOldest(ctx: Ctx): void {
  const s = ctx.state;
  while (s.tradeLogHead <= s.counters.trade) {
    const size = s.trades.size;
    // delete() finds the key itself: no separate has() look-up.
    s.trades = s.trades.delete(ctx.edit, s.tradeLogHead++);
    if (s.trades.size !== size) return;
  }
}

/** Drops trade records older than the retention time; returns whether any was dropped. */
export function pruneTrades(ctx: Ctx): boolean {
  const s = ctx.state;
  const horizon = ctx.time - s.settings.tradeRetentionMs;
  // The common case, answered without a look-up: the oldest record seen is still in the window.
  if (s.tradeLogHead === ctx.tradePruneHead && ctx.tradePruneTime > horizon) return false;
  let any = false;
  while (s.tradeLogHead <= s.counters.trade) {
    const time = s.trades.timeOf(s.tradeLogHead);
    if (time !== undefined && time > horizon) {
      ctx.tradePruneHead = s.tradeLogHead;
      ctx.tradePruneTime = time;
      break;
    }
    if (time !== undefined) s.trades = s.trades.delete(ctx.edit, s.tradeLogHead);
    s.tradeLogHead++;
    any = true;
  }
  return any;
}
