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
  maxWorkingOrdersPerAccount: 1_000,
};

/** Settings whose least value is above 0 (`setVenueSettings` and the config refuse the same). */
const LEAST_SETTING: Readonly<Record<string, number>> = {
  // 0 would leave an account no resting order at all: a market closed by other means.
  maxWorkingOrdersPerAccount: 1,
};

/** The least value a numeric venue setting may take: 0, or more where less makes no venue. */
export function leastVenueSetting(name: keyof VenueSettings): number {
  return LEAST_SETTING[name] ?? 0;
}

/**
 * The defaults with `overrides` applied. A setting given as `undefined` (what
 * `{ marginChecks: config.marginChecks }` gives when the option is unset) keeps its default:
 * a plain spread would turn margin checks off or make every trade unbustable. A setting of the
 * wrong type, a fractional number or one below its least value (0, or 1 for the working-order
 * cap), or an unknown name (a misspelt setting would otherwise be ignored) throws a `TypeError`
 * naming it.
 */
export function venueSettingsOf(overrides: Partial<VenueSettings> = {}): VenueSettings {
  const given = overrides as Record<string, unknown>;
  for (const name of Object.keys(given)) {
    if (!Object.hasOwn(DEFAULT_VENUE_SETTINGS, name)) {
      throw new TypeError(`unknown venue setting ${JSON.stringify(name)}`);
    }
  }
  const merged: Record<string, unknown> = {};
  for (const [name, fallback] of Object.entries(DEFAULT_VENUE_SETTINGS)) {
    const value = given[name] ?? fallback;
    if (typeof value !== typeof fallback) {
      throw new TypeError(
        `venue setting ${name} must be a ${typeof fallback}, got ${typeof value}`,
      );
    }
    const least = leastVenueSetting(name as keyof VenueSettings);
    if (typeof value === 'number' && !(Number.isSafeInteger(value) && value >= least)) {
      throw new TypeError(`venue setting ${name} must be a whole number >= ${least}, got ${value}`);
    }
    merged[name] = value;
  }
  return merged as unknown as VenueSettings;
}

/** A new, empty engine state at time `time` (ms); `settings` as in {@link venueSettingsOf}. */
export function createEngineState(settings: Partial<VenueSettings> = {}, time = 0): EngineState {
  return {
    edit: null,
    time,
    commandCount: 0,
    rulesVersion: null,
    counters: { order: 0, trade: 0, exec: 0, command: 0, liquidation: 0, auction: 0 },
    settings: venueSettingsOf(settings),
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
