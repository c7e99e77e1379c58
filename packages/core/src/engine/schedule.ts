/**
 * When the engine next needs a command just for time to pass (GTD/DAY expiry; later funding and
 * liquidation auctions). Hosts use it to send a `tick` at that moment instead of polling.
 *
 * @module
 */
import { firstTimeId } from '../persistent/sorted-set.js';
import type { EngineState } from './types.js';

/** The earliest time-driven event still due, ms, or `null` when none is scheduled. */
export function nextWakeTime(state: EngineState): number | null {
  const expiry = firstTimeId(state.expiries);
  return expiry === undefined ? null : expiry[0];
}
