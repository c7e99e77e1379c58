/**
 * When the engine next needs a command just for time to pass: GTD/DAY expiry, the next funding
 * time and the end of a liquidation auction. Hosts use it to send a `tick` at that moment
 * instead of polling.
 *
 * @module
 */
import { firstTimeId } from '../persistent/sorted-set.js';
import { nextAuctionEnd } from '../risk/liquidation.js';
import type { EngineState } from './types.js';

/**
 * The earliest time-driven event still due, ms, or `null` when none is scheduled. Never before
 * the state's time: a funding settlement already overdue (the interval was shortened past it:
 * hourly settled at 01:00, switched to 30 minutes at 01:50) is due now, and a `tick` at the
 * returned time is always accepted.
 */
export function nextWakeTime(state: EngineState): number | null {
  let t: number | null = null;
  const expiry = firstTimeId(state.expiries);
  if (expiry !== undefined) t = expiry[0];
  if (state.fundingDue !== null && (t === null || state.fundingDue < t)) t = state.fundingDue;
  const auction = nextAuctionEnd(state);
  if (auction !== null && (t === null || auction < t)) t = auction;
  return t === null ? null : Math.max(t, state.time);
}
