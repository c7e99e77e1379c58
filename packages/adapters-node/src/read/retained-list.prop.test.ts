/**
 * `RetainedList` against a plain array doing the same pushes, drops and replacements: the same
 * rows in every read, across the moves that compact it, and copies that stay apart.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RetainedList } from './retained-list.js';

type Op =
  | { kind: 'push'; count: number }
  | { kind: 'drop'; count: number }
  | { kind: 'replace'; at: number }
  | { kind: 'copy' };

const op: fc.Arbitrary<Op> = fc.oneof(
  // Runs long enough to cross the compaction threshold (1,024 dropped slots) several times.
  fc.record({ kind: fc.constant('push' as const), count: fc.integer({ min: 0, max: 1_500 }) }),
  fc.record({ kind: fc.constant('drop' as const), count: fc.integer({ min: -2, max: 1_500 }) }),
  fc.record({ kind: fc.constant('replace' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('copy' as const) }),
);

function expectSame(list: RetainedList<number>, model: number[]): void {
  expect(list.length).toBe(model.length);
  expect([...list]).toEqual(model);
  expect(list.slice()).toEqual(model);
  expect(list.at(0)).toBe(model[0]);
  expect(list.at(-1)).toBe(model[model.length - 1]);
  expect(list.at(model.length)).toBeUndefined();
  expect(list.at(-model.length - 1)).toBeUndefined();
  const third = Math.floor(model.length / 3);
  expect(list.at(third)).toBe(model[third]);
  expect(list.slice(third, -third)).toEqual(model.slice(third, -third));
  expect(list.slice(-third)).toEqual(model.slice(-third));
  expect(list.filter((n) => n % 3 === 0)).toEqual(model.filter((n) => n % 3 === 0));
}

describe('RetainedList', () => {
  it('holds what an array with shift and splice holds, and copies stay independent', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const list = new RetainedList<number>();
        const model: number[] = [];
        const copies: [RetainedList<number>, number[]][] = [];
        let next = 0;
        for (const o of ops) {
          if (o.kind === 'push') {
            for (let i = 0; i < o.count; i++) {
              list.push(next);
              model.push(next++);
            }
          } else if (o.kind === 'drop') {
            list.dropOldest(o.count);
            model.splice(0, Math.max(0, o.count));
          } else if (o.kind === 'replace') {
            if (model.length === 0) expect(() => list.replace(0, -1)).toThrow(RangeError);
            else {
              const at = o.at % model.length;
              list.replace(at, -next);
              model[at] = -next++;
            }
          } else copies.push([list.copy(), model.slice()]);
          expectSame(list, model);
        }
        // Every copy still holds the rows of its moment, whatever the original did since.
        for (const [copy, then] of copies) expectSame(copy, then);
      }),
      { numRuns: 300 },
    );
  });

  it('lets a dropped row go: its slot is cleared at once', () => {
    const row = { id: 1 };
    const list = new RetainedList([row, { id: 2 }]);
    list.dropOldest(1);
    // The backing array is private: read it the way a heap snapshot would see it.
    const slots = (list as unknown as { rows: unknown[] }).rows;
    expect(slots.includes(row)).toBe(false);
    expect(list.slice()).toEqual([{ id: 2 }]);
  });

  it('refuses to drop a fraction of a row, which would leave every later read undefined', () => {
    const list = new RetainedList([1, 2, 3]);
    expect(() => list.dropOldest(0.4)).toThrow(RangeError);
    expect(list.slice()).toEqual([1, 2, 3]);
  });
});
