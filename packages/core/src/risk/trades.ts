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
  MarginMode,
  Market,
  PositionSnapshot,
  TradeLeg,
  TradeRecord,
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
 * with it, the leg the trade log keeps: the position as it was just before, for busts. Every fill
 * path (orders, liquidation, auction claims, ADL) goes through here.
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

/** Stores a trade and drops the oldest records beyond the retention count. */
export function recordTrade(ctx: Ctx, record: TradeRecord): void {
  const s = ctx.state;
  s.trades = s.trades.set(ctx.edit, record.tradeId, record);
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
    const r = s.trades.get(s.tradeLogHead);
    if (r !== undefined && r.time > horizon) {
      ctx.tradePruneHead = s.tradeLogHead;
      ctx.tradePruneTime = r.time;
      break;
    }
    if (r !== undefined) s.trades = s.trades.delete(ctx.edit, s.tradeLogHead);
    s.tradeLogHead++;
    any = true;
  }
  return any;
}

/** Whether a trade is still in the log. */
export function tradeRecord(ctx: Ctx, tradeId: number): TradeRecord | undefined {
  return ctx.state.trades.get(tradeId);
}
