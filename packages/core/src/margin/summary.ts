/**
 * The account summary (interface-spec "Account summary", engine-rules section 4): a pure
 * function from the state (with its marks) to the exact wire shape, decimal strings canonical.
 *
 * Rounding for display: position value and unrealized PnL half-even; equity figures
 * (account value, isolated margin used) down; requirements (initial and maintenance margin)
 * up; withdrawable and transferable down; prices half-even at 18 decimals; return on equity
 * half-even at 8 decimals. They are the same numbers the engine decides with.
 *
 * @module
 */

import type { Account, EngineState, MarginMode, Position } from '../engine/types.js';
import { notionalScale } from '../instruments/instrument.js';
import { scopeInAuction } from '../risk/health.js';
import { formatCollateral, formatDecimal, PRICE_DECIMALS } from '../units/decimal.js';
import { formatRational, ratio, rdiv, rmul, rsub } from '../units/rational.js';
import { divHalfEven } from '../units/rounding.js';
import {
  type CrossExact,
  crossExact,
  liquidationPrice,
  priceRational,
  sizeRational,
} from './liquidation-price.js';
import {
  isolatedCash,
  leverageOf,
  maintenanceMargin,
  measureScope,
  positionOf,
  transferableOf,
  valuationPrice,
} from './scope.js';

/** One element of `assetPositions`. */
export interface AssetPosition {
  instrument: string;
  marginMode: MarginMode;
  entryPx: string;
  /** Leverage as a multiple (10 for 10x). */
  leverage: number;
  liquidationPx: string | null;
  marginUsed: string;
  maxLeverage: number;
  positionValue: string;
  returnOnEquity: string;
  szi: string;
  unrealizedPnl: string;
  /** Present on isolated positions. */
  transferable?: string;
}

/** `marginSummary` / `crossMarginSummary`. */
export interface MarginSummary {
  accountValue: string;
  totalMarginUsed: string;
  totalNtlPos: string;
  totalRawUsd: string;
}

/** The account summary of the spec (REST body; the WebSocket adds `type`). */
export interface AccountSummary {
  assetPositions: AssetPosition[];
  crossMaintenanceMarginUsed: string;
  crossMarginSummary: MarginSummary;
  maintenanceMarginUsed: string;
  marginSummary: MarginSummary;
  time: number;
  withdrawable: string;
}

const ZERO_SUMMARY: MarginSummary = {
  accountValue: '0',
  totalMarginUsed: '0',
  totalNtlPos: '0',
  totalRawUsd: '0',
};

function isolatedPosition(state: EngineState, account: Account, market: number): AssetPosition {
  const spec = state.markets.get(market)!.spec;
  const p = positionOf(account, market, 'Isolated');
  const metrics = measureScope(state, account, 'Isolated', market);
  const position = positionFields(state, account, p, spec.id, 'Isolated');
  position.marginUsed = formatCollateral(metrics.equity);
  // Nothing leaves a scope while its liquidation auction runs (margin/commands.ts).
  const auction = scopeInAuction(state, account.address, 'Isolated', market);
  position.transferable = formatCollateral(auction ? 0n : transferableOf(metrics));
  return position;
}

function positionFields(
  state: EngineState,
  account: Account,
  p: Position | undefined,
  market: number,
  mode: MarginMode,
  cross?: CrossExact,
): AssetPosition {
  const m = state.markets.get(market)!;
  const spec = m.spec;
  const leverage = leverageOf(account, spec, mode);
  if (p === undefined || p.size === 0n) {
    return assetPosition(
      spec.symbol,
      mode,
      leverage,
      spec.maxLeverage,
      '0',
      null,
      '0',
      '0',
      '0',
      '0',
      '0',
    );
  }
  const markRaw = valuationPrice(m)!;
  const scale = notionalScale(spec);
  const abs = p.size < 0n ? -p.size : p.size;
  const entry = ratio(p.entryNotional, p.entryQty * 10n ** 18n); // human price
  const mark = priceRational(markRaw);
  const s = sizeRational(spec, p.size);
  const upnl = rmul(s, rsub(mark, entry)); // USD
  const margin = rdiv(
    rmul(rmul(sizeRational(spec, abs), entry), ratio(100n)),
    ratio(BigInt(leverage)),
  );
  const liq = liquidationPrice(state, account, p, cross);
  return assetPosition(
    spec.symbol,
    mode,
    leverage,
    spec.maxLeverage,
    formatRational(entry, PRICE_DECIMALS),
    liq === null ? null : formatRational(liq, PRICE_DECIMALS),
    formatCollateral(divCeilPos(abs * markRaw * 100n, scale * BigInt(leverage))),
    formatCollateral(divHalfEven(abs * markRaw, scale)),
    formatRational(rdiv(upnl, margin), 8),
    formatDecimal(p.size, spec.quantityDecimals),
    formatRational(upnl, 6),
  );
}

/**
 * One `assetPositions` element in one object literal, fields in the order the summary has always
 * had (leverages x100 in, multiples out). Not built by spreading a shared part: V8 clones a spread into a slow object,
 * which cost more than everything else in a summary (it was half of a 50-position one).
 */
function assetPosition(
  instrument: string,
  marginMode: MarginMode,
  leverage: number,
  maxLeverage: number,
  entryPx: string,
  liquidationPx: string | null,
  marginUsed: string,
  positionValue: string,
  returnOnEquity: string,
  szi: string,
  unrealizedPnl: string,
): AssetPosition {
  return {
    instrument,
    marginMode,
    leverage: leverage / 100,
    maxLeverage: maxLeverage / 100,
    entryPx,
    liquidationPx,
    marginUsed,
    positionValue,
    returnOnEquity,
    szi,
    unrealizedPnl,
  };
}

function divCeilPos(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}

/**
 * The account summary of `address` at time `time` (ms). `undefined` for an unknown account.
 * Positions come cross first, then isolated, each by market id.
 */
export function accountSummary(
  state: EngineState,
  address: string,
  time: number,
): AccountSummary | undefined {
  const account = state.accounts.get(address);
  if (account === undefined) return undefined;
  const positions: AssetPosition[] = [];
  const cross = [...account.positions]
    .filter((p) => p.mode === 'Cross')
    .sort((a, b) => a.market - b.market);
  const exact = cross.length > 0 ? crossExact(state, account) : undefined;
  for (const p of cross)
    positions.push(positionFields(state, account, p, p.market, 'Cross', exact));
  // Isolated: every market with a position or a pool (an empty position still shows its margin).
  const isolatedMarkets = new Set<number>();
  for (const p of account.positions) if (p.mode === 'Isolated') isolatedMarkets.add(p.market);
  for (const pool of account.isolated) if (pool.cash !== 0n) isolatedMarkets.add(pool.market);
  const isoSorted = [...isolatedMarkets].sort((a, b) => a - b);
  for (const market of isoSorted) positions.push(isolatedPosition(state, account, market));

  const c = measureScope(state, account, 'Cross', 0);
  let crossNtl = 0n;
  for (const p of cross) {
    const m = state.markets.get(p.market)!;
    crossNtl += divHalfEven(
      (p.size < 0n ? -p.size : p.size) * valuationPrice(m)!,
      notionalScale(m.spec),
    );
  }
  let isoEquity = 0n;
  let isoCash = 0n;
  let isoNtl = 0n;
  let isoMm = 0n;
  for (const market of isoSorted) {
    const m = state.markets.get(market)!;
    const metrics = measureScope(state, account, 'Isolated', market);
    isoEquity += metrics.equity;
    isoCash += isolatedCash(account, market);
    const p = positionOf(account, market, 'Isolated');
    if (p !== undefined) {
      const mark = valuationPrice(m)!;
      isoNtl += divHalfEven((p.size < 0n ? -p.size : p.size) * mark, notionalScale(m.spec));
      isoMm += maintenanceMargin(m.spec, p.size, mark);
    }
  }
  const withdrawable = scopeInAuction(state, account.address, 'Cross', 0)
    ? 0n
    : transferableOf(c) - account.claimReserve;
  return {
    assetPositions: positions,
    crossMaintenanceMarginUsed: formatCollateral(c.maintenanceMargin),
    crossMarginSummary: {
      accountValue: formatCollateral(c.equity),
      totalMarginUsed: formatCollateral(c.initialMargin),
      totalNtlPos: formatCollateral(crossNtl),
      totalRawUsd: formatCollateral(account.crossCash),
    },
    maintenanceMarginUsed: formatCollateral(c.maintenanceMargin + isoMm),
    marginSummary: {
      accountValue: formatCollateral(c.equity + isoEquity),
      totalMarginUsed: formatCollateral(c.initialMargin + isoEquity),
      totalNtlPos: formatCollateral(crossNtl + isoNtl),
      totalRawUsd: formatCollateral(account.crossCash + isoCash),
    },
    time,
    withdrawable: formatCollateral(withdrawable > 0n ? withdrawable : 0n),
  };
}

/** The summary of an account that does not exist yet: all zero. */
export function emptyAccountSummary(time: number): AccountSummary {
  return {
    assetPositions: [],
    crossMaintenanceMarginUsed: '0',
    crossMarginSummary: { ...ZERO_SUMMARY },
    maintenanceMarginUsed: '0',
    marginSummary: { ...ZERO_SUMMARY },
    time,
    withdrawable: '0',
  };
}
