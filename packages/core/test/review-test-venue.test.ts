/**
 * Review findings on `TestVenue` (`@perp/core/testing`).
 *
 * 1. docs/core-library.md section 2: "`v.log` is the command log so far ...: a failing scenario
 *    can be saved and replayed with `reduceAll`". When the failure is `reduce` throwing (the
 *    robustness property's whole subject) or the purity check failing, `run` throws before it
 *    appends the command, so the saved log stops one command short of the failure and replays
 *    clean. `robustness.prop.test.ts` prints `d.v.log.slice(-5)` as "last commands" on a throw,
 *    which therefore never shows the command that threw.
 * 2. The TSDoc of `advance` says "Moves the clock forward (expiries apply on the next command)",
 *    but the `tick` it sends applies every expiry (and funding, auction end) due by its own time.
 */
import { readFileSync } from 'node:fs';
import { nextWakeTime } from '@perp/core';
import { BTC_SETTINGS, TestVenue, wallet } from '@perp/core/testing';
import { describe, expect, it } from 'vitest';

describe('review: TestVenue', () => {
  it('keeps the command that made reduce throw in v.log', () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    v.open(wallet(1));
    const before = v.log.length;
    // Any command reduce throws on; here one whose time is before the engine time.
    expect(() => v.run({ type: 'tick', time: v.state.time - 1 })).toThrow(/before the engine time/);
    // Actual: the log still has `before` commands; replaying it does not reproduce the throw.
    expect(v.log.length).toBe(before + 1);
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
    // The TSDoc promises the expiry on the next command; it happens in this one. The test
    // passes: the TSDoc is what is wrong.
    expect(v.reports(events, maker).map((r) => r.kind)).toEqual(['OrderExpired']);
  });

  it('the TSDoc of advance says what it does', () => {
    const source = readFileSync(new URL('../src/testing/venue.ts', import.meta.url), 'utf8');
    // Actual: "/** Moves the clock forward (expiries apply on the next command). */"
    expect(source).not.toContain('expiries apply on the next command');
  });
});
