/**
 * Review findings on documentation a library user relies on.
 *
 * 1. `pnpm run docs` (docs/typedoc.json) documents only `src/index.ts` of each package, so the
 *    API reference has no `@perp/core/testing`: no `TestVenue`, `runSimulation`,
 *    `checkInvariants`, builders, the very API docs/core-library.md sections 2-4 teach.
 * 2. `decodeSnapshot` / `decodeSnapshotText` promise `SnapshotFormatError` on text they cannot
 *    decode; a snapshot whose trade record names another id throws a bare `RangeError` from the
 *    trade log instead.
 * 3. docs/core-library.md section 5: "a field of the wrong kind (..., a missing field) is refused
 *    with 4000 naming it ... and the state comes back unchanged". A command without `time` (or
 *    with a string time, as JSON from another tool may carry) makes `reduce` throw an
 *    `InvariantError` instead.
 * 4. The TSDoc of `decodeSnapshotText` says it converts "an older one this build converts
 *    (version 5)"; the build converts versions 5 and 6 (`CONVERSIONS`, `SNAPSHOT_VERSION` 7).
 */
import { readFileSync } from 'node:fs';
import {
  type Command,
  decodeSnapshot,
  encodeSnapshot,
  outcomeOf,
  reduce,
  SNAPSHOT_VERSION,
  SnapshotFormatError,
} from '@perp/core';
import { BTC_SETTINGS, TestVenue, wallet } from '@perp/core/testing';
import { describe, expect, it } from 'vitest';

describe('review: documentation', () => {
  it('the API reference covers @perp/core/testing', () => {
    const config = JSON.parse(
      readFileSync(new URL('../../../docs/typedoc.json', import.meta.url), 'utf8'),
    ) as { packageOptions: { entryPoints: string[] } };
    // Actual: ["src/index.ts"].
    expect(config.packageOptions.entryPoints).toContain('src/testing/index.ts');
  });

  it('decodeSnapshot throws SnapshotFormatError for a trade stored under another id', () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    const [a, b] = [wallet(1), wallet(2)];
    for (const w of [a, b]) {
      v.open(w);
      v.fund(w, '100000');
    }
    v.oracle({ 'BTC-PERP': '65000' });
    v.place(b, 'BTC-PERP', { side: 'Sell', qty: '1', price: '65000' });
    v.place(a, 'BTC-PERP', { side: 'Buy', qty: '1', price: '65000' });
    const text = encodeSnapshot(v.state);
    expect(text).toContain('"trades":["i",1,{"tradeId":1,');
    const bad = text.replace('"trades":["i",1,{"tradeId":1,', '"trades":["i",1,{"tradeId":2,');
    // Actual: RangeError "trade 2 stored under 1".
    expect(() => decodeSnapshot(bad)).toThrow(SnapshotFormatError);
  });

  it('a command without a time is refused with 4000, not thrown', () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    const command = { type: 'openAccount', account: wallet(1) } as unknown as Command;
    let out: ReturnType<typeof outcomeOf> | undefined;
    // Actual: InvariantError "command time undefined is not a whole number of milliseconds".
    expect(() => {
      out = outcomeOf(reduce(v.state, command).events);
    }).not.toThrow();
    expect(out?.ok ? 'accepted' : out?.code).toBe(4000);
  });

  it('the TSDoc of decodeSnapshotText names every version it converts', () => {
    const source = readFileSync(new URL('../src/engine/snapshot.ts', import.meta.url), 'utf8');
    expect(SNAPSHOT_VERSION).toBe(7);
    // Actual: "... or of an older one this build converts (version 5), ..." while 6 converts too.
    expect(source).not.toContain('an older one this build converts (version 5)');
  });
});
