/**
 * Scope health for liquidation (engine-rules section 7): equity against maintenance margin, in
 * micro-units, rounded for the venue like every margin decision (equity down, margin up). Only
 * positions count here: order holds and claim reservations do not make a scope liquidatable.
 *
 * @module
 */
import type { Account, EngineState, MarginMode, Position } from '../engine/types.js';
import {
  isolatedCash,
  maintenanceMargin,
  positionValueFloor,
  valuationPrice,
} from '../margin/scope.js';

/** Equity and maintenance margin of a scope. */
export interface ScopeRisk {
  /** Cross: `AVc`; isolated: `Ei`. Micro-units, rounded down. */
  readonly equity: bigint;
  /** Micro-units, rounded up. */
  readonly maintenance: bigint;
  readonly hasPosition: boolean;
}

/** Whether a position belongs to the scope (cross, or the isolated scope of `market`). */
export function inScope(p: Position, mode: MarginMode, market: number): boolean {
  return p.mode === mode && (mode === 'Cross' || p.market === market);
}

/** Positions of a scope, in the account's order. */
export function scopePositions(account: Account, mode: MarginMode, market: number): Position[] {
  return account.positions.filter((p) => inScope(p, mode, market));
}

/** Equity and maintenance margin of the cross scope or of the isolated scope of `market`. */
export function scopeRisk(
  state: EngineState,
  account: Account,
  mode: MarginMode,
  market: number,
): ScopeRisk {
  let equity = mode === 'Cross' ? account.crossCash : isolatedCash(account, market);
  let maintenance = 0n;
  let hasPosition = false;
  for (const p of account.positions) {
    if (!inScope(p, mode, market)) continue;
    const m = state.markets.get(p.market)!;
    const mark = valuationPrice(m)!;
    equity += positionValueFloor(m.spec, p.size, mark);
    maintenance += maintenanceMargin(m.spec, p.size, mark);
    hasPosition = true;
  }
  return { equity, maintenance, hasPosition };
}

/** Liquidatable: a position is open and equity is below maintenance margin. */
export function isLiquidatable(r: ScopeRisk): boolean {
  return r.hasPosition && r.equity < r.maintenance;
}

/** Whether the scope has a live liquidation auction. */
export function scopeInAuction(
  state: EngineState,
  account: string,
  mode: MarginMode,
  market: number,
): boolean {
  if (state.auctions.size === 0) return false;
  let found = false;
  state.auctions.forEach((a) => {
    if (a.account === account && a.mode === mode && (mode === 'Cross' || a.market === market)) {
      found = true;
    }
  });
  return found;
}
