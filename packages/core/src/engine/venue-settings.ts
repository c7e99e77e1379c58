/**
 * `setVenueSettings`: the operator's venue-wide settings. They live in the state, not in a
 * host's configuration, so a replay of the journal applies each change where it happened.
 *
 * @module
 */
import { reject } from '../errors.js';
import type { SetVenueSettingsCommand } from './commands.js';
import type { Ctx } from './context.js';
import { leastVenueSetting } from './genesis.js';

/** Handles `setVenueSettings`. */
export function setVenueSettings(ctx: Ctx, cmd: SetVenueSettingsCommand): void {
  const cap = cmd.maxWorkingOrdersPerAccount;
  const least = leastVenueSetting('maxWorkingOrdersPerAccount');
  if (cap < least) {
    const r = reject(
      'INVALID_REQUEST',
      `maxWorkingOrdersPerAccount must be at least ${least}, not ${cap}`,
    );
    return ctx.fail(r.code, r.message);
  }
  // Working orders above a lowered cap stay: the cap only refuses new ones.
  ctx.state.settings = { ...ctx.state.settings, maxWorkingOrdersPerAccount: cap };
  ctx.emit({ type: 'outcome', ok: true, kind: 'done' });
}
