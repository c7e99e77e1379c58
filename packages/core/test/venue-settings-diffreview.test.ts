/**
 * Diff review: `venueSettingsOf` (createEngineState, TestVenue) accepts
 * `maxWorkingOrdersPerAccount: 0` (and any number >= 0), while the same cap is refused below 1 by
 * `setVenueSettings` ("0 would leave an account no resting order at all", venue-settings.ts), by
 * the config (`limits.maxWorkingOrdersPerAccount must be an integer >= 1`) and by the TSDoc of
 * `SetVenueSettingsCommand` ("at least 1"). A genesis of 0 silently starts a venue on which no
 * account can rest any order or place any stop: every GTC, GTD, DAY and trigger order is refused
 * with TooManyOrders, "account has 0 working orders, the most allowed is 0".
 */
import { createEngineState, outcomeOf, reduce } from '@perp/core';
import { BTC_SETTINGS, TestVenue, wallet } from '@perp/core/testing';
import { describe, expect, it } from 'vitest';

describe('a genesis working-order cap below 1', () => {
  it('is refused as setVenueSettings refuses it', () => {
    const later = reduce(createEngineState({}, 0), {
      type: 'setVenueSettings',
      time: 0,
      maxWorkingOrdersPerAccount: 0,
    });
    expect(outcomeOf(later.events)).toMatchObject({ ok: false, code: 4000 });
    // Expected: a TypeError naming the setting, as for a negative or fractional one.
    // Actual: accepted.
    expect(() => createEngineState({ maxWorkingOrdersPerAccount: 0 })).toThrow(
      /maxWorkingOrdersPerAccount/,
    );
  });

  it('(what 0 does) no account can rest an order', () => {
    const v = new TestVenue({ settings: { maxWorkingOrdersPerAccount: 0 } });
    v.list(BTC_SETTINGS);
    v.open(wallet(1));
    v.fund(wallet(1), '100000');
    v.oracle({ 'BTC-PERP': '50000' });
    const o = v.outcome(
      v.place(wallet(1), 'BTC-PERP', { side: 'Buy', qty: '0.001', price: '40000' }),
    );
    expect(o).toMatchObject({ ok: true });
  });
});
