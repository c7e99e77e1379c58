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

/** A scope whose equity is below zero: what the venue is owed and may never collect. */
export interface ScopeDebt {
  readonly account: string;
  readonly marginMode: MarginMode;
  /** Market id for an isolated scope, 0 for cross. */
  readonly market: number;
  /** `-equity`, micro-units (> 0). */
  readonly debt: bigint;
  /** Whether the scope's liquidation auction is still running (its deficit may still shrink). */
  readonly inAuction: boolean;
}

/** The venue's solvency at the marks: its own pools and every scope below zero. */
export interface SolvencyReport {
  readonly insuranceFund: bigint;
  readonly feePool: bigint;
  readonly totalDeposits: bigint;
  readonly totalWithdrawals: bigint;
  /**
   * Scopes with negative equity, by account address (ascending), then cross before isolated by
   * market id.
   */
  readonly debts: readonly ScopeDebt[];
  /** Sum of `debts`, micro-units. */
  readonly totalDebt: bigint;
}

/**
 * The venue's solvency report (operators' view of docs/risk-engine.md's shortfall): with the
 * solvency guard on order fills, a scope is below zero only while its liquidation runs or when
 * a deficit exceeded the insurance fund, ADL and the fee pool together.
 */
export function solvencyReport(state: EngineState): SolvencyReport {
  const debts: ScopeDebt[] = [];
  state.accounts.forEach((a) => {
    const markets = new Set<number>();
    for (const pool of a.isolated) markets.add(pool.market);
    for (const p of a.positions) if (p.mode === 'Isolated') markets.add(p.market);
    const scopes: [MarginMode, number][] = [['Cross', 0]];
    for (const m of [...markets].sort((x, y) => x - y)) scopes.push(['Isolated', m]);
    for (const [mode, market] of scopes) {
      const { equity } = scopeRisk(state, a, mode, market);
      if (equity >= 0n) continue;
      debts.push({
        account: a.address,
        marginMode: mode,
        market,
        debt: -equity,
        inAuction: scopeInAuction(state, a.address, mode, market),
      });
    }
  });
  debts.sort((x, y) => (x.account < y.account ? -1 : x.account > y.account ? 1 : 0));
  let totalDebt = 0n;
  for (const d of debts) totalDebt += d.debt;
  return {
    insuranceFund: state.insuranceFund,
    feePool: state.feePool,
    totalDeposits: state.totalDeposits,
    totalWithdrawals: state.totalWithdrawals,
    debts,
    totalDebt,
  };
}
