/**
 * `TestVenue` (`@perp/core/testing`) as docs/core-library.md describes it (both found by a
 * review).
 *
 * 1. Section 2: "`v.log` is the command log so far ...: a failing scenario
 *    can be saved and replayed with `reduceAll`". When the failure is `reduce` throwing (the
 *    robustness property's whole subject) or the purity check failing, `run` throws before it
 *    appends the command, so the saved log stopped one command short of the failure and replayed
 *    clean. `robustness.prop.test.ts` prints `d.v.log.slice(-5)` as "last commands" on a throw,
 *    which therefore never showed the command that threw.
 * 2. The TSDoc of `advance` said expiries apply on the next command; the `tick` it sends applies
 *    every expiry (and funding, auction end) due by its own time.
 */
import { createEngineState, nextWakeTime, reduceAll } from '@perp/core';
import { BTC_SETTINGS, TestVenue, wallet } from '@perp/core/testing';
import { describe, expect, it } from 'vitest';

describe('TestVenue', () => {
  it('keeps the command that made reduce throw in v.log', () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    v.open(wallet(1));
    const before = v.log.length;
    // Any command reduce throws on; here one whose time is before the engine time.
    expect(() => v.run({ type: 'tick', time: v.state.time - 1 })).toThrow(/before the engine time/);
    expect(v.log.length).toBe(before + 1);
    expect(() => reduceAll(createEngineState({}, v.log[0]!.time), v.log)).toThrow(
      /before the engine time/,
    );
  });

  it('advance applies the expiries due by the new time in its own tick', () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    const maker = wallet(1);
    v.open(maker);
    v.fund(maker, '100000');
    v.oracle({ 'BTC-PERP': '65000' });
    const expiry = Math.floor(v.time / 1000) + 10;
    v.expectOk(
      v.place(maker, 'BTC-PERP', { side: 'Sell', qty: '0.1', price: '66000', tif: 'GTD', expiry }),
    );
    expect(nextWakeTime(v.state)).toBe(expiry * 1000);
    const events = v.advance(expiry * 1000 - v.time);
    expect(v.reports(events, maker).map((r) => r.kind)).toEqual(['OrderExpired']);
  });
});
