import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { newEdit } from './edit.js';
import { PMap } from './hamt.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 200);

type Op =
  | { kind: 'set'; key: number | string; value: number }
  | { kind: 'delete'; key: number | string }
  | { kind: 'commit' };

const keyArb = fc.oneof(
  fc.integer({ min: 0, max: 200 }),
  fc.integer({ min: 0, max: 2 ** 40 }),
  fc.constantFrom(
    'a',
    'b',
    'c',
    '0x00000000000000000000000000000000000000ff',
    '0x10000000000000000000000000000000000000ff',
  ),
  fc.string({ maxLength: 4 }),
);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), key: keyArb, value: fc.integer() }),
  fc.record({ kind: fc.constant('delete' as const), key: keyArb }),
  fc.constant({ kind: 'commit' as const }),
);

describe('PMap', () => {
  it('behaves like Map and never changes a published version', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 300 }), (ops) => {
        let map = PMap.empty<number | string, number>();
        const model = new Map<number | string, number>();
        let edit = newEdit();
        const published: [PMap<number | string, number>, [number | string, number][]][] = [];
        for (const op of ops) {
          if (op.kind === 'set') {
            map = map.set(edit, op.key, op.value);
            model.set(op.key, op.value);
          } else if (op.kind === 'delete') {
            map = map.delete(edit, op.key);
            model.delete(op.key);
          } else {
            published.push([map, [...model.entries()]]);
            edit = newEdit();
          }
          expect(map.size).toBe(model.size);
        }
        for (const [k, v] of model) expect(map.get(k)).toBe(v);
        expect(new Map(map.entries())).toEqual(model);
        for (const [version, entries] of published) {
          expect(version.size).toBe(entries.length);
          expect(new Map(version.entries())).toEqual(new Map(entries));
        }
      }),
      { numRuns: runs },
    );
  });

  it('iterates in an order that depends only on the key set', () => {
    fc.assert(
      fc.property(fc.uniqueArray(keyArb, { maxLength: 200 }), (keys) => {
        const a = PMap.from(keys.map((k) => [k, 1] as const));
        const shuffled = [...keys].reverse();
        let b = PMap.empty<number | string, number>();
        const e = newEdit();
        for (const k of [...shuffled, 'extra-key']) b = b.set(e, k, 1);
        b = b.delete(e, 'extra-key');
        if (keys.includes('extra-key')) b = b.set(e, 'extra-key', 1);
        expect(b.keys()).toEqual(a.keys());
      }),
      { numRuns: runs },
    );
  });

  it('writes under an owned edit mutate in place and return the same map', () => {
    const e = newEdit();
    const m1 = PMap.empty<number, string>().set(e, 1, 'a');
    const m2 = m1.set(e, 2, 'b');
    expect(m2).toBe(m1);
    const frozen = m2;
    const m3 = frozen.set(newEdit(), 3, 'c');
    expect(m3).not.toBe(frozen);
    expect(frozen.has(3)).toBe(false);
  });
});
