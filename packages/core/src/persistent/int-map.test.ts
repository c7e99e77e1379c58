import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { newEdit } from './edit.js';
import { IntMap } from './int-map.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 200);
const keyArb = fc.oneof(
  fc.integer({ min: 0, max: 100 }),
  fc.integer({ min: 0, max: 2 ** 31 }),
  fc.integer({ min: 2 ** 30 - 40, max: 2 ** 30 + 40 }),
  fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
);
type Op =
  | { kind: 'set'; key: number; value: number }
  | { kind: 'delete'; key: number }
  | { kind: 'commit' };
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), key: keyArb, value: fc.integer() }),
  fc.record({ kind: fc.constant('delete' as const), key: keyArb }),
  fc.constant({ kind: 'commit' as const }),
);

describe('IntMap', () => {
  it('behaves like Map, iterates in key order and never changes a published version', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 300 }), (ops) => {
        let map = IntMap.empty<number>();
        const model = new Map<number, number>();
        let edit = newEdit();
        const published: [IntMap<number>, [number, number][]][] = [];
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
        const sorted = [...model.entries()].sort((a, b) => a[0] - b[0]);
        expect(map.entries()).toEqual(sorted);
        for (const [version, entries] of published) {
          expect(version.entries()).toEqual(entries.sort((a, b) => a[0] - b[0]));
        }
      }),
      { numRuns: runs },
    );
  });

  it('drops emptied subtrees', () => {
    const e = newEdit();
    let m = IntMap.empty<number>();
    for (let i = 0; i < 5000; i++) m = m.set(e, i, i);
    for (let i = 0; i < 5000; i++) m = m.delete(e, i);
    expect(m.size).toBe(0);
    expect(m.low).toBe(null);
    expect(m.highs).toHaveLength(0);
  });
});
