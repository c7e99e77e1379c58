/**
 * Market commands: listing and changing instruments, pausing, and oracle prices (which recompute
 * marks and fire triggers).
 *
 * @module
 */
import { reject } from '../errors.js';
import { type Instrument, instrumentProblem } from '../instruments/instrument.js';
import { fireTriggers } from '../orders/trigger.js';
import { firstFundingBase, refreshFundingDue, samplePremium } from '../risk/funding.js';
import { updatePrices } from '../risk/mark.js';
import { formatDecimal } from '../units/decimal.js';
import type { OracleCommand, SetInstrumentCommand, SetMarketStatusCommand } from './commands.js';
import type { Ctx } from './context.js';
import { newMarket } from './records.js';

/** Handles `setInstrument`: lists a market or replaces its settings. */
export function setInstrument(ctx: Ctx, cmd: SetInstrumentCommand): void {
  const spec = cmd.instrument;
  const problem = instrumentProblem(spec);
  if (problem !== null) {
    const r = reject('INVALID_REQUEST', `instrument ${spec.id}: ${problem}`);
    return ctx.fail(r.code, r.message);
  }
  const bySymbol = ctx.state.symbols.get(spec.symbol);
  if (bySymbol !== undefined && bySymbol !== spec.id) {
    const r = reject(
      'INVALID_REQUEST',
      `symbol ${spec.symbol} already belongs to market ${bySymbol}`,
    );
    return ctx.fail(r.code, r.message);
  }
  const existing = ctx.market(spec.id);
  if (existing === undefined) {
    const market = newMarket(ctx.edit, spec);
    market.funding = {
      lastFundingTime: firstFundingBase(ctx.time, spec.funding.intervalMs),
      premiumSum: 0n,
      sampleCount: 0,
    };
    ctx.state.markets = ctx.state.markets.set(ctx.edit, spec.id, market);
    ctx.state.symbols = ctx.state.symbols.set(ctx.edit, spec.symbol, spec.id);
  } else {
    const old = existing.spec;
    if (old.symbol !== spec.symbol || old.quantityDecimals !== spec.quantityDecimals) {
      const r = reject(
        'INVALID_REQUEST',
        'symbol and quantityDecimals of a listed market cannot change',
      );
      return ctx.fail(r.code, r.message);
    }
    const hasOrders =
      existing.bids.length +
        existing.asks.length +
        existing.triggersAbove.length +
        existing.triggersBelow.length >
      0;
    if (hasOrders && (old.tickSize !== spec.tickSize || old.lotSize !== spec.lotSize)) {
      const r = reject(
        'INVALID_REQUEST',
        'tick and lot size cannot change while orders are working',
      );
      return ctx.fail(r.code, r.message);
    }
    if (old.lotSize !== spec.lotSize) {
      // A position off the new grid could never be closed by an order (engine-rules 5: every
      // quantity is a multiple of the lot), only by liquidation or ADL.
      const offGrid = positionOffGrid(ctx, spec.id, spec.lotSize, spec.quantityDecimals);
      if (offGrid !== undefined) {
        const r = reject(
          'INVALID_REQUEST',
          `lot size cannot change while a position is not a multiple of the new lot (${offGrid})`,
        );
        return ctx.fail(r.code, r.message);
      }
    }
    const w = ctx.writableMarket(spec.id);
    // A new funding interval keeps the last funding time: the next settlement falls on the
    // new grid and pays only the time since (risk/funding.ts, nextFundingTime), so no hour is
    // paid twice.
    w.spec = spec;
    // A new maintenance rate or tier table moves every holder's maintenance margin as a mark
    // move does: the liquidation sweep checks the market's holders now (engine-rules 7), rather
    // than leaving a scope below its new maintenance margin until the next oracle command.
    if (maintenanceChanged(old, spec)) ctx.movedMarkets.push(spec.id);
  }
  refreshFundingDue(ctx.state);
  ctx.emit({ type: 'marketChanged', market: spec.id });
  ctx.emit({ type: 'outcome', ok: true, kind: 'done' });
}

/** Whether two versions of an instrument ask a different maintenance margin of some position. */
function maintenanceChanged(old: Instrument, spec: Instrument): boolean {
  if (old.tiers.length !== spec.tiers.length) return true;
  return old.tiers.some((t, i) => {
    const n = spec.tiers[i]!;
    return (
      t.notionalFloor !== n.notionalFloor ||
      t.maintenanceMarginRate !== n.maintenanceMarginRate ||
      t.deduction !== n.deduction
    );
  });
}

/** A position in `market` whose size is not a multiple of `lot`, as `account mode size`. */
function positionOffGrid(
  ctx: Ctx,
  market: number,
  lot: bigint,
  decimals: number,
): string | undefined {
  let found: string | undefined;
  ctx.state.accounts.forEach((a) => {
    if (found !== undefined) return;
    for (const p of a.positions) {
      if (p.market === market && p.size % lot !== 0n) {
        found = `${a.address} ${p.mode} ${formatDecimal(p.size, decimals)}`;
        return;
      }
    }
  });
  return found;
}

/** Handles `setMarketStatus`: a paused market refuses new orders and amends, keeps cancels. */
export function setMarketStatus(ctx: Ctx, cmd: SetMarketStatusCommand): void {
  if (ctx.market(cmd.market) === undefined) {
    const r = reject('INVALID_REQUEST', `unknown market ${cmd.market}`);
    return ctx.fail(r.code, r.message);
  }
  ctx.writableMarket(cmd.market).status = cmd.status;
  ctx.emit({ type: 'marketChanged', market: cmd.market });
  ctx.emit({ type: 'outcome', ok: true, kind: 'done' });
}

/** Handles `oracle`: new index prices, new marks, then triggers in market order. */
export function oracle(ctx: Ctx, cmd: OracleCommand): void {
  const seen = new Set<number>();
  for (const { market, price } of cmd.prices) {
    if (ctx.market(market) === undefined || seen.has(market) || price <= 0n) {
      const r = reject('INVALID_REQUEST', `bad oracle entry for market ${market}`);
      return ctx.fail(r.code, r.message);
    }
    seen.add(market);
  }
  const marks: [number, bigint][] = [];
  for (const { market, price } of cmd.prices) {
    const m = ctx.writableMarket(market);
    m.prices = updatePrices(m, price, ctx.time);
    samplePremium(m);
    ctx.movedMarkets.push(market);
    const mark = m.prices.mark as bigint;
    marks.push([market, mark]);
    ctx.emit({ type: 'markChanged', market, index: price, mark, time: ctx.time });
  }
  for (const [market, mark] of marks) fireTriggers(ctx, market, mark);
  ctx.emit({ type: 'outcome', ok: true, kind: 'done' });
}
