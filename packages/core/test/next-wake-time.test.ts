/**
 * After `setInstrument` shortens a market's funding interval, `nextWakeTime` used to return a
 * time before the state's time (the next boundary of the new grid after the last
 * funding time, which is already past). docs/core-library.md section 5 tells a simulation to
 * send a `tick` at each `nextWakeTime` ("as the service's host does"); with that loop `reduce`
 * threw `command time ... is before the engine time ...` and the simulation died. Found by a
 * review.
 *
 * Hourly funding settled at 01:00; at 01:50 the operator switches to 30-minute funding:
 * nextWakeTime says 01:30.
 */

import { type EngineEvent, instrumentSettingsOf, nextWakeTime, reduce } from '@perp/core';
import { BTC_SETTINGS, instrument, T0, TestVenue, wallet } from '@perp/core/testing';
import { describe, expect, it } from 'vitest';

const HOUR = 3_600_000;
const A = wallet(0x71);

describe('nextWakeTime after a shorter funding interval', () => {
  it('is never before the state time, so the documented tick loop does not throw', () => {
    const v = new TestVenue();
    const spec = v.list(BTC_SETTINGS);
    v.oracle({ 'BTC-PERP': '65000' });
    v.run({ type: 'tick', time: T0 + HOUR }); // settles 01:00
    v.run({ type: 'tick', time: T0 + HOUR + 50 * 60_000 }); // 01:50
    const halfHourly = instrument({
      ...instrumentSettingsOf(spec),
      funding: { ...instrumentSettingsOf(spec).funding, intervalMs: 30 * 60_000 },
    });
    v.expectOk(v.run({ type: 'setInstrument', instrument: halfHourly }));

    const wake = nextWakeTime(v.state);
    // The 01:30 settlement is overdue: it is due now, not 20 minutes ago.
    expect(wake).toBe(v.state.time);

    // The loop of docs/core-library.md section 5, as written.
    let s = v.state;
    const due: EngineEvent[] = [];
    const until = s.time + HOUR;
    expect(() => {
      for (let t = nextWakeTime(s); t !== null && t <= until; t = nextWakeTime(s)) {
        const r = reduce(s, { type: 'tick', time: t });
        s = r.state;
        due.push(...r.events);
      }
    }).not.toThrow();
    // The overdue 01:30 settlement is paid first, then the new grid's 02:00 and 02:30.
    const settled = due.flatMap((e) =>
      e.type === 'fundingSettled' ? [e.settlement.fundingTime - T0] : [],
    );
    expect(settled).toEqual([1.5 * HOUR, 2 * HOUR, 2.5 * HOUR]);
  });
});

describe('nextWakeTime takes the earliest of expiry and funding', () => {
  it('a funding settlement before a later GTD expiry is the next wake, then the expiry', () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    v.oracle({ 'BTC-PERP': '65000' });
    v.open(A);
    v.fund(A, '100000');
    const expirySeconds = Math.floor(v.state.time / 1000) + 3 * 3600;
    v.expectOk(
      v.place(A, 'BTC-PERP', {
        side: 'Buy',
        qty: '0.1',
        price: '60000',
        tif: 'GTD',
        expiry: expirySeconds,
      }),
    );
    const fundingDue = v.state.fundingDue;
    expect(fundingDue).not.toBeNull();
    expect(fundingDue! < expirySeconds * 1000).toBe(true);
    expect(nextWakeTime(v.state)).toBe(fundingDue);
    // With funding moved past the expiry, the expiry is next.
    expect(nextWakeTime({ ...v.state, fundingDue: expirySeconds * 1000 + 1 })).toBe(
      expirySeconds * 1000,
    );
  });
});
