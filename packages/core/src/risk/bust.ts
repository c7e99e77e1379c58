/**
 * Trade busts (engine-rules section 8, research 5 and 6.3 rule 13): both sides of an order fill
 * are restored as if it never happened. Cash is exact: the fill's cash leg and fee are reversed
 * on the pool it was booked to and the fee leaves the fee pool. The position is rebuilt from the
 * trade log: the busted leg's recorded "before" position, then every later leg of the same
 * scope replayed in order, which gives size, entry price (the remaining opening fills since the
 * position was last flat), realized PnL and open time. A working order's cumQty drops with its
 * total quantity, so its leaves (and the book) do not change: nothing is put back on the book.
 * Funding already paid stays. Liquidation, auction and ADL fills are final and cannot be busted.
 *
 * @module
 */
import type { BustTradeCommand } from '../engine/commands.js';
import type { Ctx } from '../engine/context.js';
import { viewOf } from '../engine/events.js';
import type {
  Account,
  Market,
  Order,
  PositionSnapshot,
  StoredTrade,
  TradeLeg,
  TradeRecord,
} from '../engine/types.js';
import { InvariantError, reject } from '../errors.js';
import { type Instrument, notionalScale } from '../instruments/instrument.js';
import { addHolder, entryNotionalAt } from '../margin/ledger.js';
import { findScope, isolatedCash, setIsolatedCash } from '../margin/scope.js';
import {
  reconcileScopes,
  resizeChildrenAfterBust,
  resizeChildrenOfEndedEntry,
} from '../orders/managed.js';
import { divHalfEven } from '../units/rounding.js';
import { coverDeficit } from './liquidation.js';
import { FLAT, storedOfTrade, tradeOfStored, tradeRecordOf } from './trades.js';

/** The figures of an order that a bust of one of its fills changes. */
export type BustedOrderFigures = Pick<
  Order,
  'quantity' | 'cumQty' | 'filledNotional' | 'ordStatus' | 'reason'
>;

/**
 * An order's figures after a bust of one of its fills, `qty` at `price` (engine-rules section 8):
 * cumQty and the total quantity drop together, so the leaves (and the book) stay, and the filled
 * notional drops by `qty x price`, keeping avgPx exact. A working order left without fills is
 * `New` again; an order that already ended is `Cancelled` with reason `Bust` (protocol.md
 * section 6). The engine applies it to working orders; history read models to ended ones.
 */
export function orderAfterBust(
  order: BustedOrderFigures,
  qty: bigint,
  price: bigint,
): BustedOrderFigures {
  const cumQty = order.cumQty - qty;
  const ended =
    order.ordStatus === 'Filled' ||
    order.ordStatus === 'Cancelled' ||
    order.ordStatus === 'Expired';
  let { ordStatus, reason } = order;
  if (cumQty === 0n && ordStatus === 'PartiallyFilled') ordStatus = 'New';
  else if (cumQty === 0n && ended) {
    ordStatus = 'Cancelled';
    reason = 'Bust';
  }
  return {
    quantity: order.quantity - qty,
    cumQty,
    filledNotional: order.filledNotional - qty * price,
    ordStatus,
    reason,
  };
}

/**
 * The market's last trade after a bust of one of its book prints (engine-rules 8: "as if it never
 * happened"): the newest print still standing in the trade log. The last trade is an input of the
 * next mark, and the print an operator busts is often the erroneous one the bust is for, so its
 * price must not move the mark once the trade is gone. Auction and ADL trades never set it. When
 * the bust window holds no standing print of the market, there is none to name: `null` while an
 * index gives the market a mark; before any index the busted price stays, as it is then the only
 * price its positions are valued at.
 */
function restoreLastTrade(ctx: Ctx, market: Market): void {
  const log = ctx.state.trades;
  for (let id = log.end - 1; id >= log.head; id--) {
    const t = log.get(id);
    if (t === undefined || t.market !== market.spec.id || t.busted) continue;
    if (t.source !== 'Order' && t.source !== 'Liquidation') continue;
    ctx.setLastTrade(market, t.price);
    return;
  }
  if (market.prices.mark !== null) market.lastTrade = null;
}

/** The position after a fill of signed size `d` at `price`: the ledger's rules, as a value. */
export function nextPosition(
  spec: Instrument,
  pos: PositionSnapshot,
  d: bigint,
  price: bigint,
  time: number,
): PositionSnapshot {
  const before = pos.size;
  const after = before + d;
  const absQ = d < 0n ? -d : d;
  if (before === 0n) {
    return {
      size: after,
      entryNotional: absQ * price,
      entryQty: absQ,
      openedTime: time,
      realizedPnl: 0n,
      fundingSinceOpen: 0n,
    };
  }
  const absBefore = before < 0n ? -before : before;
  if (before > 0n === d > 0n) {
    return {
      ...pos,
      size: after,
      entryNotional: entryNotionalAt(pos.entryNotional, pos.entryQty, absBefore) + absQ * price,
      entryQty: absBefore + absQ,
    };
  }
  const closed = absQ < absBefore ? absQ : absBefore;
  const side = before > 0n ? 1n : -1n;
  const realized = divHalfEven(
    side * (closed * price * pos.entryQty - closed * pos.entryNotional),
    pos.entryQty * notionalScale(spec),
  );
  if (after === 0n) return FLAT;
  if (after > 0n === before > 0n) {
    return { ...pos, size: after, realizedPnl: pos.realizedPnl + realized };
  }
  const opened = absQ - absBefore;
  return {
    size: after,
    entryNotional: opened * price,
    entryQty: opened,
    openedTime: time,
    realizedPnl: 0n,
    fundingSinceOpen: 0n,
  };
}

/**
 * Rebuilds the position of `leg`'s scope without the busted trade `bustedId`: replays the later
 * legs of the scope from the busted leg's "before" snapshot, rewriting their snapshots.
 */
function rebuild(ctx: Ctx, market: Market, bustedId: number, leg: TradeLeg): PositionSnapshot {
  let pos = leg.before;
  const updates: TradeRecord[] = [];
  ctx.state.trades.forEach((stored, id) => {
    if (id <= bustedId || stored.busted || stored.market !== market.spec.id) return;
    if (!touchesScope(stored, leg)) return;
    const r = tradeOfStored(stored);
    let changed = false;
    const legs = r.legs.map((l) => {
      if (l.account !== leg.account || l.mode !== leg.mode) return l;
      const updated = { ...l, before: pos };
      pos = nextPosition(market.spec, pos, l.signedQty, r.price, r.time);
      changed = true;
      return updated;
    }) as unknown as readonly [TradeLeg, TradeLeg];
    if (changed) updates.push({ ...r, legs });
  });
  for (const r of updates) {
    ctx.state.trades = ctx.state.trades.set(ctx.edit, r.tradeId, storedOfTrade(r));
  }
  return pos;
}

/** Whether a fill of signed size `d` on a position of `size` reduces it (closing it counts). */
function reduces(size: bigint, d: bigint): boolean {
  if (size === 0n || size > 0n === d > 0n) return false;
  return (d < 0n ? -d : d) <= (size < 0n ? -size : size);
}

/**
 * The first later forced leg in `leg`'s scope that a bust of `rec` would turn from a reduction
 * into an opening or a flip, if any. A forced leg is one the engine made, not an order: the
 * liquidated account's side of a liquidation, auction or ADL fill, and an ADL counterparty's.
 * Those fills are final and were taken because of the position the busted fill helped build;
 * replayed on the position without it they would hand the account exposure it never chose.
 * (A maker's or claimant's leg of such a fill came from its own order or claim, and is replayed
 * like any order fill.) Read-only: a refusal must change nothing.
 */
function forcedFillBrokenBy(
  state: Ctx['state'],
  rec: TradeRecord,
  leg: TradeLeg,
): { tradeId: number; source: string; opens: boolean } | undefined {
  let size = leg.before.size;
  let broken: { tradeId: number; source: string; opens: boolean } | undefined;
  state.trades.forEach((stored, id) => {
    if (broken !== undefined || id <= rec.tradeId || stored.busted) return;
    if (stored.market !== rec.market || !touchesScope(stored, leg)) return;
    const r = tradeOfStored(stored);
    for (let i = 0; i < 2; i++) {
      const l = r.legs[i as 0 | 1];
      if (l.account !== leg.account || l.mode !== leg.mode) continue;
      // Legs: the liquidated account second; an ADL's counterparty, first, is forced too.
      const isForced = r.source !== 'Order' && (i === 1 || r.source === 'ADL');
      if (isForced && reduces(l.before.size, l.signedQty) && !reduces(size, l.signedQty)) {
        broken = { tradeId: r.tradeId, source: r.source, opens: size === 0n };
        return;
      }
      size += l.signedQty;
    }
  });
  return broken;
}

function touchesScope(t: StoredTrade, leg: TradeLeg): boolean {
  return (
    (t.account0 === leg.account && t.mode0 === leg.mode) ||
    (t.account1 === leg.account && t.mode1 === leg.mode)
  );
}

/** Writes a rebuilt position into a writable account and market. */
function writePosition(
  account: Account,
  market: Market,
  mode: TradeLeg['mode'],
  pos: PositionSnapshot,
): void {
  const id = market.spec.id;
  const i = findScope(account.positions, id, mode);
  const old = i < 0 ? undefined : account.positions[i];
  const oldSize = old?.size ?? 0n;
  if (pos.size === 0n) {
    if (old !== undefined) {
      account.positions.splice(i, 1);
      addHolder(market, account.address, -1);
    }
  } else if (old === undefined) {
    account.positions.push({ market: id, mode, ...pos });
    addHolder(market, account.address, 1);
  } else {
    old.size = pos.size;
    old.entryNotional = pos.entryNotional;
    old.entryQty = pos.entryQty;
    old.openedTime = pos.openedTime;
    old.realizedPnl = pos.realizedPnl;
    // Funding is not replayed (it stays paid); the display total is kept.
  }
  const longBefore = oldSize > 0n ? oldSize : 0n;
  const longAfter = pos.size > 0n ? pos.size : 0n;
  market.openInterest += longAfter - longBefore;
}

/** Handles `bustTrade` (operator). */
export function bustTrade(ctx: Ctx, cmd: BustTradeCommand): void {
  const rec = tradeRecordOf(ctx.state, cmd.tradeId);
  if (rec === undefined) {
    const r = reject(
      'INVALID_REQUEST',
      `trade ${cmd.tradeId} is unknown or outside the bust window`,
    );
    return ctx.fail(r.code, r.message);
  }
  if (rec.busted) {
    const r = reject('INVALID_REQUEST', `trade ${cmd.tradeId} is already busted`);
    return ctx.fail(r.code, r.message);
  }
  if (rec.source !== 'Order') {
    const r = reject('INVALID_REQUEST', `a ${rec.source} fill is final and cannot be busted`);
    return ctx.fail(r.code, r.message);
  }
  for (const leg of rec.legs) {
    const forced = forcedFillBrokenBy(ctx.state, rec, leg);
    if (forced !== undefined) {
      const r = reject(
        'INVALID_REQUEST',
        `trade ${cmd.tradeId} cannot be busted: without it, the ${forced.source} fill of trade ${forced.tradeId} would ${forced.opens ? 'open' : 'flip'} the ${leg.mode} position of ${leg.account} in ${ctx.market(rec.market)?.spec.symbol ?? rec.market} instead of reducing it, and that fill is final`,
      );
      return ctx.fail(r.code, r.message);
    }
  }
  const market = ctx.writableMarket(rec.market);
  const spec = market.spec;
  for (const leg of rec.legs) {
    const account = ctx.writableAccount(leg.account);
    const current = account.positions[findScope(account.positions, spec.id, leg.mode)]?.size ?? 0n;
    // The fill booked `R += (buy ? -quote : quote) - fee`; reverse it on the same pool.
    const delta = (leg.signedQty > 0n ? rec.quote : -rec.quote) + leg.fee;
    if (leg.mode === 'Cross') account.crossCash += delta;
    else setIsolatedCash(account, spec.id, isolatedCash(account, spec.id) + delta);
    ctx.state.feePool -= leg.fee;
    const pos = rebuild(ctx, market, rec.tradeId, leg);
    if (pos.size !== current - leg.signedQty) {
      throw new InvariantError(
        `bust of trade ${rec.tradeId}: rebuilt size ${pos.size} != ${current - leg.signedQty}`,
      );
    }
    writePosition(account, market, leg.mode, pos);
    let working: ReturnType<typeof viewOf> | undefined;
    let entry: Order | undefined;
    if (leg.orderId !== 0 && ctx.order(leg.orderId) !== undefined) {
      const qty = leg.signedQty < 0n ? -leg.signedQty : leg.signedQty;
      entry = ctx.writableOrder(leg.orderId);
      Object.assign(entry, orderAfterBust(entry, qty, rec.price));
      entry.updatedTime = ctx.time;
      working = viewOf(entry);
    }
    const qty = leg.signedQty < 0n ? -leg.signedQty : leg.signedQty;
    ctx.report(leg.account, {
      kind: 'TradeBust',
      tradeId: rec.tradeId,
      market: spec.id,
      marginMode: leg.mode,
      orderId: leg.orderId,
      workingOrder: working,
      fill: {
        tradeId: rec.tradeId,
        market: spec.id,
        side: leg.signedQty > 0n ? 'Buy' : 'Sell',
        marginMode: leg.mode,
        quantity: qty,
        price: rec.price,
        quote: rec.quote,
        liquidity: leg.liquidity,
        fee: leg.fee,
        realizedPnl: leg.realizedPnl,
        positionBefore: leg.before.size,
        positionAfter: leg.before.size + leg.signedQty,
        time: rec.time,
      },
      bustReason: cmd.reason,
      positionAfter: pos.size,
    });
    // After the bust's report, so a client reads the entry's new fills before its children's
    // re-sizing.
    if (entry !== undefined) resizeChildrenAfterBust(ctx, entry);
    else if (leg.orderId !== 0) {
      const scope = { account: leg.account, market: spec.id, mode: leg.mode };
      resizeChildrenOfEndedEntry(ctx, scope, leg.orderId, qty);
    }
    ctx.accountChanged(leg.account);
    ctx.positionChanged(leg.account, spec.id, leg.mode);
  }
  ctx.state.trades = ctx.state.trades.set(
    ctx.edit,
    rec.tradeId,
    storedOfTrade({ ...rec, busted: true }),
  );
  if (rec.source === 'Order' || rec.source === 'Liquidation') restoreLastTrade(ctx, market);
  reconcileScopes(ctx);
  // A scope the bust left flat with negative cash (funding paid on the busted position, which a
  // bust does not reverse, now without the position's gains to cover it) cannot be liquidated
  // back to zero: the venue covers it as any deficit (insurance fund, then fee pool, else debt).
  for (const leg of rec.legs) {
    coverDeficit(ctx, leg.account, leg.mode, leg.mode === 'Cross' ? 0 : spec.id);
  }
  const accounts = rec.legs.map((l) => l.account);
  ctx.emit({
    type: 'tradeBusted',
    tradeId: rec.tradeId,
    market: spec.id,
    accounts,
    reason: cmd.reason,
    time: ctx.time,
  });
  ctx.emit({
    type: 'outcome',
    ok: true,
    kind: 'bust',
    tradeId: rec.tradeId,
    market: spec.id,
    accounts,
  });
}
