/**
 * The native keccak-256 against the core's: the same digests for any bytes cut into any slices,
 * the same state hashes, and a binding that disagrees is never used.
 */
import { createEngineState, nobleKeccak256, StateHasher, stateHash } from '@perp/core';
import { BTC_SETTINGS, TestVenue, wallet } from '@perp/core/testing';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadNativeKeccak, stateKeccak } from './native-keccak.js';

const reasons: string[] = [];
const native = loadNativeKeccak((r) => reasons.push(r));

function hex(keccak: typeof nobleKeccak256, parts: readonly Uint8Array[]): string {
  const h = keccak();
  for (const p of parts) h.update(p);
  return Buffer.from(h.digest()).toString('hex');
}

describe('native keccak-256', () => {
  it('is the one in use when it loads (the package ships linux-x64, darwin-x64 and win32-x64)', () => {
    if (native === null) {
      expect(reasons).toHaveLength(1);
      expect(stateKeccak()).toBe(nobleKeccak256);
    } else {
      expect(reasons).toEqual([]);
      expect(stateKeccak()).not.toBe(nobleKeccak256);
    }
  });

  it.skipIf(native === null)('gives the core’s digest for any bytes in any slices', () => {
    const k = native!;
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 2_000 }),
        fc.array(fc.nat(), { maxLength: 4 }),
        (bytes, cuts) => {
          const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
          const parts: Uint8Array[] = [];
          let from = 0;
          for (const c of at) {
            parts.push(bytes.subarray(from, c));
            from = c;
          }
          parts.push(bytes.subarray(from));
          expect(hex(k, parts)).toBe(hex(nobleKeccak256, [bytes]));
        },
      ),
      { numRuns: 500 },
    );
  });

  it.skipIf(native === null)('gives the core’s state hash, whole and sliced', () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    for (const w of [wallet(1), wallet(2)]) {
      v.open(w);
      v.fund(w, '1000000');
    }
    v.oracle({ 'BTC-PERP': '65000' });
    for (let i = 0; i < 30; i++) {
      v.place(wallet(2), 'BTC-PERP', { side: 'Sell', qty: '0.01', price: `${65000 + i}` });
      v.place(wallet(1), 'BTC-PERP', { side: 'Buy', qty: '0.01', price: `${65000 + i}` });
    }
    for (const state of [createEngineState(), v.state]) {
      const expected = stateHash(state);
      expect(stateHash(state, native!)).toBe(expected);
      const sliced = new StateHasher(state, native!);
      while (!sliced.step(7));
      expect(sliced.hash).toBe(expected);
    }
  });

  it('is not used when it does not load, or disagrees with the core', () => {
    const why: string[] = [];
    expect(
      loadNativeKeccak(
        (r) => why.push(r),
        () => {
          throw new Error('Cannot find module keccak/bindings\nRequire stack: ...');
        },
      ),
    ).toBeNull();
    // A binding that drops every byte after the first 136 (one keccak block).
    const truncating = () => {
      let kept = Buffer.alloc(0);
      const h = {
        update(d: Buffer) {
          kept = Buffer.concat([kept, d]).subarray(0, 136);
          return h;
        },
        digest: () => Buffer.from(hex(nobleKeccak256, [kept]), 'hex'),
      };
      return h;
    };
    expect(
      loadNativeKeccak(
        (r) => why.push(r),
        () => truncating,
      ),
    ).toBeNull();
    expect(why).toEqual([
      'the native keccak binding did not load: Cannot find module keccak/bindings',
      "the native keccak binding disagrees with the core's on 137 bytes",
    ]);
  });
});
