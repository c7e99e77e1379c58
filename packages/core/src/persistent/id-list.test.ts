import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { newEdit } from './edit.js';
import { IdList } from './id-list.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 200);
type Op =
  | { kind: 'append'; count: number }
  | { kind: 'remove'; picks: number[] }
  | { kind: 'thin'; keepEvery: number }
  | { kind: 'commit' };
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('append' as const),
      count: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 150 })),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('remove' as const),
      picks: fc.array(fc.nat(), { minLength: 1, maxLength: 120 }),
    }),
  },
  {
    weight: 1,
    // Keeps one id in `keepEvery`: the scattered survivors of a deep book.
    arbitrary: fc.record({
      kind: fc.constant('thin' as const),
      keepEvery: fc.integer({ min: 2, max: 100 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'commit' as const }) },
);

describe('IdList', () => {
  it('behaves like an ascending array, keeps its chunks filled, never changes a published version', () => {
    fc.assert(
      fc.property(
        fc.array(opArb, { maxLength: 60 }),
        fc.integer({ min: 1, max: 5 }),
        (ops, gap) => {
          let list = IdList.empty();
          let model: number[] = [];
          let next = 1;
          let edit = newEdit();
          const published: [IdList, number[]][] = [];
          for (const op of ops) {
            if (op.kind === 'append') {
              for (let i = 0; i < op.count; i++) {
                list = list.append(edit, next);
                model.push(next);
                next += gap;
              }
            } else if (op.kind === 'remove') {
              for (const pick of op.picks) {
                // Mostly ids in the list, sometimes one that is not (nothing changes).
                const id = model.length > 0 && pick % 7 !== 0 ? model[pick % model.length]! : next;
                const after = list.remove(edit, id);
                if (model.includes(id)) {
                  expect(after).not.toBeNull();
                  list = after!;
                  model = model.filter((x) => x !== id);
                } else {
                  expect(after).toBeNull();
                }
              }
            } else if (op.kind === 'thin') {
              for (const [i, id] of model.entries()) {
                if (i % op.keepEvery !== 0) list = list.remove(edit, id)!;
              }
              model = model.filter((_, i) => i % op.keepEvery === 0);
            } else {
              published.push([list, model.slice()]);
              edit = newEdit();
            }
            expect(list.size).toBe(model.length);
            expect(list.toArray()).toEqual(model);
            // Small chunks join their neighbours, so removals never leave an id per chunk.
            expect(list.chunkCount).toBeLessThanOrEqual(Math.ceil(list.size / 4) + 2);
          }
          const seen: number[] = [];
          list.forEach((id) => {
            seen.push(id);
          });
          expect(seen).toEqual(model);
          for (const [version, ids] of published) expect(version.toArray()).toEqual(ids);
        },
      ),
      { numRuns: runs },
    );
  });

  it('round-trips through fromArray across chunk boundaries', () => {
    for (const n of [0, 1, 63, 64, 65, 128, 1000]) {
      const ids = Array.from({ length: n }, (_, i) => 3 * i + 1);
      const list = IdList.fromArray(ids);
      expect(list.size).toBe(n);
      expect(list.toArray()).toEqual(ids);
      const edit = newEdit();
      const grown = list.append(edit, 3 * n + 1);
      expect(grown.toArray()).toEqual([...ids, 3 * n + 1]);
      expect(list.toArray()).toEqual(ids);
    }
  });
});
