/**
 * Venue settings given to `createEngineState` (and `TestVenue`, which passes them through).
 * They used to be merged with a plain object spread, so a setting present but `undefined`
 * replaced its default: `{ marginChecks: undefined }` (what `{ marginChecks: config.marginChecks }`
 * gives when the option is unset; TypeScript accepts it without `exactOptionalPropertyTypes`,
 * JavaScript always) silently turned the venue into book-only mode: no margin check at
 * placement, no solvency guard, no liquidation. Found by a review.
 */

import {
  createEngineState,
  outcomeOf,
  reduce,
  tradeRecordOf,
  tradeRecords,
  venueSettingsOf,
} from '@perp/core';
import { BTC_SETTINGS, TestVenue, wallet } from '@perp/core/testing';
import { describe, expect, it } from 'vitest';

// What a caller's optional configuration looks like when nothing is configured.
const config: { marginChecks?: boolean; tradeRetentionMs?: number } = {};

describe('venue settings left undefined', () => {
  it('an undefined setting takes the default (margin checks stay on)', () => {
    const state = createEngineState(
      { marginChecks: config.marginChecks, tradeRetentionMs: config.tradeRetentionMs } as never,
      0,
    );
    expect(state.settings.marginChecks).toBe(true);
    expect(state.settings.tradeRetentionMs).toBe(3_600_000);
  });

  it('a 100 USD account cannot buy 650,000 USD of BTC because a setting was undefined', () => {
    const v = new TestVenue({ settings: { marginChecks: config.marginChecks } as never });
    v.list(BTC_SETTINGS);
    const [poor, maker] = [wallet(1), wallet(2)];
    v.open(poor);
    v.open(maker);
    v.fund(poor, '100');
    v.fund(maker, '10000000');
    v.oracle({ 'BTC-PERP': '65000' });
    v.place(maker, 'BTC-PERP', { side: 'Sell', qty: '10', price: '65000' });
    const buy = outcomeOf(v.place(poor, 'BTC-PERP', { side: 'Buy', qty: '10', price: '65000' }));
    // Expected: refused with 4100 (needs 65,000 of margin at 10x, has 100).
    // Actual: accepted and filled; the account is 650,000 USD in debt after a crash and is
    // never liquidated.
    expect(buy.ok).toBe(false);
    expect(buy.ok ? undefined : buy.code).toBe(4100);
  });
});

describe('venue settings of the wrong shape', () => {
  it('refuses a misspelt setting instead of ignoring it', () => {
    expect(() => createEngineState({ marginCheck: false } as never)).toThrow(
      'unknown venue setting "marginCheck"',
    );
  });

  it('refuses a setting of the wrong type, negative or fractional', () => {
    expect(() => venueSettingsOf({ marginChecks: 'false' } as never)).toThrow(
      'venue setting marginChecks must be a boolean, got string',
    );
    expect(() => venueSettingsOf({ tradeRetentionMs: -1 })).toThrow(/tradeRetentionMs/);
    expect(() => venueSettingsOf({ maxRetainedTrades: 1.5 })).toThrow(/maxRetainedTrades/);
  });

  // Found by a review: setVenueSettings and the config refuse a cap below 1 (no account could
  // rest an order), but a genesis of 0 was accepted.
  it('refuses a working-order cap below 1, as setVenueSettings does', () => {
    const later = reduce(createEngineState({}, 0), {
      type: 'setVenueSettings',
      time: 0,
      maxWorkingOrdersPerAccount: 0,
    });
    expect(outcomeOf(later.events)).toMatchObject({ ok: false, code: 4000 });
    expect(() => createEngineState({ maxWorkingOrdersPerAccount: 0 })).toThrow(
      'venue setting maxWorkingOrdersPerAccount must be a whole number >= 1, got 0',
    );
    expect(venueSettingsOf({ maxWorkingOrdersPerAccount: 1 }).maxWorkingOrdersPerAccount).toBe(1);
  });

  it('keeps what is given and defaults the rest', () => {
    expect(venueSettingsOf({ marginChecks: false, tradeRetentionMs: 0 })).toEqual({
      ...venueSettingsOf(),
      marginChecks: false,
      tradeRetentionMs: 0,
    });
  });
});

describe('trade retention', () => {
  const BUYER = wallet(0x51);
  const SELLER = wallet(0x52);
  const tradeOnce = (v: TestVenue): number => {
    v.expectOk(v.place(SELLER, 'BTC-PERP', { side: 'Sell', qty: '0.01', price: '65000' }));
    const t = v.place(BUYER, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: '65000' });
    const e = t.find((x) => x.type === 'trade');
    return e?.type === 'trade' ? e.tradeId : 0;
  };
  const venue = (settings: { maxRetainedTrades?: number; tradeRetentionMs?: number }) => {
    const v = new TestVenue({ settings });
    v.list(BTC_SETTINGS);
    v.oracle({ 'BTC-PERP': '65000' });
    for (const w of [BUYER, SELLER]) {
      v.open(w);
      v.fund(w, '100000');
    }
    return v;
  };

  it('keeps exactly maxRetainedTrades records, dropping the oldest', () => {
    const v = venue({ maxRetainedTrades: 2 });
    const ids = [tradeOnce(v), tradeOnce(v), tradeOnce(v)];
    expect(tradeRecords(v.state).map((r) => r.tradeId)).toEqual(ids.slice(1));
    expect(tradeRecordOf(v.state, ids[0]!)).toBeUndefined();
    expect(outcomeOf(v.run({ type: 'bustTrade', tradeId: ids[0]!, reason: 'x' }))).toMatchObject({
      ok: false,
      message: `INVALID_REQUEST: trade ${ids[0]} is unknown or outside the bust window`,
    });
  });

  it('a trade stays bustable for tradeRetentionMs: kept 1 ms before, dropped at the mark', () => {
    const v = venue({ tradeRetentionMs: 60_000 });
    const id = tradeOnce(v);
    const at = tradeRecordOf(v.state, id)!.time;
    v.run({ type: 'tick', time: at + 59_999 });
    expect(tradeRecordOf(v.state, id)).toBeDefined();
    v.run({ type: 'tick', time: at + 60_000 });
    expect(tradeRecordOf(v.state, id)).toBeUndefined();
  });
});
