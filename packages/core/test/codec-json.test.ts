/**
 * The bigint-safe JSON codec of journals and snapshots: round trips any JSON-shaped value with
 * bigints, turns only the exact `{"$n": "<integer>"}` shape into a bigint, and keeps an own
 * `__proto__` key as data.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeJson, encodeJson } from '../src/index.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 200);

const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    fc.bigInt(),
    fc.integer(),
    fc.string(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('v'), { maxLength: 4 }),
    fc.dictionary(
      fc.string().filter((k) => k !== '__proto__' && k !== '$n'),
      tie('v'),
      { maxKeys: 4 },
    ),
  ),
})).v;

describe('bigint-safe JSON', () => {
  it('round-trips values with bigints at any depth', () => {
    fc.assert(
      fc.property(value, (v) => {
        expect(decodeJson(encodeJson(v))).toEqual(v);
      }),
      { numRuns: runs },
    );
  });

  it('turns only the exact {"$n": "<integer>"} shape into a bigint', () => {
    expect(decodeJson('{"a":{"$n":"-12"},"b":[{"$n":"7"}]}')).toEqual({ a: -12n, b: [7n] });
    expect(decodeJson('{"$n":"1.5"}')).toEqual({ $n: '1.5' });
    expect(decodeJson('{"$n":5}')).toEqual({ $n: 5 });
    expect(decodeJson('{"$n":"1","x":1}')).toEqual({ $n: '1', x: 1 });
    expect(decodeJson('"$n"')).toBe('$n');
  });

  it('keeps an own __proto__ key as data', () => {
    const v = decodeJson<Record<string, unknown>>(
      '{"__proto__":{"$n":"3"},"o":{"__proto__":{"polluted":true}}}',
    );
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(v, '__proto__')?.value).toBe(3n);
    const o = v.o as Record<string, unknown>;
    expect(Object.getPrototypeOf(o)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
