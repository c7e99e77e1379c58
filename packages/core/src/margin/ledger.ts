/**
 * The ledger of a fill (engine-rules sections 1 and 3): one cash leg rounded once per fill and
 * applied with opposite signs to both sides, fees to the fee pool, positions with their entry
 * accumulators through increase, reduce, close and flip.
 *
 * @module
 */

import type { Account, MarginMode, Market, Position } from '../engine/types.js';
import { type Instrument, notionalScale, RATE_SCALE } from '../instruments/instrument.js';
import { divCeil, divFloor, divHalfEven } from '../units/rounding.js';
import { findScope, isolatedCash, setIsolatedCash } from './scope.js';

/** The cash leg of a fill: `|q| x p` in micro-units, rounded half-even (engine-rules section 1). */
export function quoteAmount(spec: Instrument, quantity: bigint, price: bigint): bigint {
  return divHalfEven(quantity * price, notionalScale(spec));
}

/**
 * The fee of a fill in micro-units. A charge rounds up (the payer pays the fraction); a rebate
 * (negative rate) rounds toward zero (the venue pays no fraction).
 */
export function feeAmount(spec: Instrument, quantity: bigint, price: bigint, rate: bigint): bigint {
  if (rate === 0n) return 0n;
  const raw = quantity * price * rate;
  const scale = notionalScale(spec) * RATE_SCALE;
  return rate > 0n ? divCeil(raw, scale) : -divFloor(-raw, scale);
}

/**
 * The notional of `absSize` at the entry price `entryNotional / entryQty`: the weight an
 * increasing fill averages its price against (research 1.10: entry = size-weighted average of
 * the old entry and the fill). Reducing fills leave both accumulators alone, so the entry stays
 * exact and `entryQty` exceeds the size until the next increase re-weights it here. Exact when
 * nothing was reduced since the position opened (`entryQty === absSize`, the common case);
 * otherwise rounded half-even once, by at most half a raw notional unit (under 1e-18 of a price
 * unit once divided by the size). The entry price moves no cash (margin is mark-based, account
 * value never depends on it), so no direction favours the venue over the trader.
 */
export function entryNotionalAt(entryNotional: bigint, entryQty: bigint, absSize: bigint): bigint {
  return entryQty === absSize ? entryNotional : divHalfEven(entryNotional * absSize, entryQty);
}

/** What a fill did to one account's position. */
export interface FillLeg {
  readonly positionBefore: bigint;
  readonly positionAfter: bigint;
  /** On the reducing part, before fee, micro-units rounded half-even (display). */
  readonly realizedPnl: bigint;
}

/**
 * Applies one side of a fill to a writable account and market: position, pool cash
 * (`R -= d x p + f` on the pool of the order's mode, with `d x p` already rounded as `quote`)
 * and open interest. Never moves cash between pools.
 */
export function applyFillLeg(
  account: Account,
  market: Market,
  mode: MarginMode,
  signedQty: bigint,
  price: bigint,
  quote: bigint,
  fee: bigint,
  time: number,
): FillLeg {
  const spec = market.spec;
  const idx = findScope(account.positions, spec.id, mode);
  const p: Position | undefined = idx < 0 ? undefined : account.positions[idx];
  const before = p?.size ?? 0n;
  const after = before + signedQty;
  const absQty = signedQty < 0n ? -signedQty : signedQty;
  let realized = 0n;
  if (p === undefined) {
    account.positions.push({
      market: spec.id,
      mode,
      size: after,
      entryNotional: absQty * price,
      entryQty: absQty,
      openedTime: time,
      realizedPnl: 0n,
      fundingSinceOpen: 0n,
    });
    addHolder(market, account.address, 1);
  } else if (before > 0n === signedQty > 0n) {
    // Increasing (the account owns its position records: update in place).
    const absBefore = before < 0n ? -before : before;
    p.size = after;
    p.entryNotional = entryNotionalAt(p.entryNotional, p.entryQty, absBefore) + absQty * price;
    p.entryQty = absBefore + absQty;
  } else {
    const absBefore = before < 0n ? -before : before;
    const closed = absQty < absBefore ? absQty : absBefore;
    const side = before > 0n ? 1n : -1n;
    // closed x (p - E) x side, E = entryNotional / entryQty, exact until the one rounding here.
    realized = divHalfEven(
      side * (closed * price * p.entryQty - closed * p.entryNotional),
      p.entryQty * notionalScale(spec),
    );
    if (after === 0n) {
      account.positions.splice(idx, 1);
      addHolder(market, account.address, -1);
    } else if (after > 0n === before > 0n) {
      p.size = after;
      p.realizedPnl += realized;
    } else {
      // Flip: the rest opens a new position at this price.
      const opened = absQty - absBefore;
      p.size = after;
      p.entryNotional = opened * price;
      p.entryQty = opened;
      p.openedTime = time;
      p.realizedPnl = 0n;
      p.fundingSinceOpen = 0n;
    }
  }
  const cashDelta = (signedQty > 0n ? -quote : quote) - fee;
  if (mode === 'Cross') account.crossCash += cashDelta;
  else setIsolatedCash(account, spec.id, isolatedCash(account, spec.id) + cashDelta);
  const longBefore = before > 0n ? before : 0n;
  const longAfter = after > 0n ? after : 0n;
  market.openInterest += longAfter - longBefore;
  return { positionBefore: before, positionAfter: after, realizedPnl: realized };
}

/**
 * Counts a position of `address` opening (+1) or closing (-1) in a writable market's holder
 * index (funding, liquidation checks and ADL look only at holders).
 */
export function addHolder(market: Market, address: string, delta: 1 | -1): void {
  const n = (market.holders.get(address) ?? 0) + delta;
  market.holders =
    n === 0
      ? market.holders.delete(market.edit, address)
      : market.holders.set(market.edit, address, n);
}
