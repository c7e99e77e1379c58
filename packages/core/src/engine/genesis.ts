/**
 * The empty engine state a venue starts from.
 *
 * @module
 */
import { PMap } from '../persistent/hamt.js';
import { IntMap } from '../persistent/int-map.js';
import { emptyTimeIdSet } from '../persistent/sorted-set.js';
import { TradeLog } from '../risk/trade-log.js';
import type { EngineState, VenueSettings } from './types.js';

/** Default venue-wide settings. */
export const DEFAULT_VENUE_SETTINGS: VenueSettings = {
  marginChecks: true,
  cloidRetentionMs: 86_400_000,
  tradeRetentionMs: 3_600_000,
  maxRetainedTrades: 100_000,
};

/** A new, empty engine state at time `time` (ms). */
export function createEngineState(settings: Partial<VenueSettings> = {}, time = 0): EngineState {
  return {
    edit: null,
    time,
    commandCount: 0,
    rulesVersion: null,
    counters: { order: 0, trade: 0, exec: 0, command: 0, liquidation: 0, auction: 0 },
    settings: { ...DEFAULT_VENUE_SETTINGS, ...settings },
    markets: PMap.empty(),
    symbols: PMap.empty(),
    accounts: PMap.empty(),
    orders: IntMap.empty(),
    cloids: PMap.empty(),
    cloidLog: { head: 0, tail: 0, entries: IntMap.empty() },
    expiries: emptyTimeIdSet(),
    referralCodes: PMap.empty(),
    referrals: PMap.empty(),
    nonces: PMap.empty(),
    nonceLog: { head: 0, tail: 0, entries: IntMap.empty() },
    pending: PMap.empty(),
    fundingDue: null,
    auctions: IntMap.empty(),
    trades: TradeLog.empty(),
    tradeLogHead: 1,
    feePool: 0n,
    insuranceFund: 0n,
    totalDeposits: 0n,
    totalWithdrawals: 0n,
  };
}
