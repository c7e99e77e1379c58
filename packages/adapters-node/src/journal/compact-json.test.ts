/**
 * The compact JSON form of read-model checkpoints: any sequence of plain values written by one
 * encoder is read back, value by value, by one decoder (property); what it cannot carry throws;
 * texts no encoder could have written are refused.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CompactDecoder, CompactEncoder, INTERN_MIN } from './compact-json.js';

// Keys and strings drawn from small pools, so shapes and long strings repeat, as in a checkpoint.
const key = fc.constantFrom('a', 'b', 'account', 'price', '__proto__', 'x y', '');
const text = fc.oneof(
  fc.constantFrom('0x0000000000000000000000000000000000000001', 'executionReport', 'short', ''),
  fc.string({ maxLength: 20 }),
);
const { value } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.constant(undefined),
    fc.boolean(),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }),
    text,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(key, tie('value'), { maxKeys: 4 }),
  ),
}));

describe('compact JSON', () => {
  it('reads back every value of a sequence, in order, with its shapes and strings shared', () => {
    fc.assert(
      fc.property(fc.array(value, { maxLength: 12 }), (values) => {
        const enc = new CompactEncoder();
        const texts = values.map((v) => enc.encode(v));
        const dec = new CompactDecoder();
        const back = texts.map((t) => dec.decode(t));
        expect(back).toStrictEqual(normalise(values));
      }),
      { numRuns: 1000 },
    );
  });

  it('writes a repeated shape and a long string once', () => {
    const enc = new CompactEncoder();
    const address = '0x0000000000000000000000000000000000000001';
    expect(address.length).toBeGreaterThanOrEqual(INTERN_MIN);
    const first = enc.encode({ account: address, seq: 1, price: 65000n });
    const second = enc.encode({ account: address, seq: 2, price: 65001n });
    expect(first).toBe(`["S",["account","seq","price"],"${address}",1,["n","65000"]]`);
    expect(second).toBe('["R",0,["r",0],2,["n","65001"]]');
  });

  it('refuses what it cannot carry, and texts no encoder wrote', () => {
    const enc = new CompactEncoder();
    expect(() => enc.encode(new Map())).toThrow(/Map/);
    expect(() => enc.encode({ f: () => 1 })).toThrow(/function/);
    expect(() => enc.encode(Number.POSITIVE_INFINITY)).toThrow(/Infinity/);
    const dec = new CompactDecoder();
    expect(() => dec.decode('["R",0,1]')).toThrow(/shape 0 was never written/);
    expect(() => dec.decode('["r",0]')).toThrow(/string 0 was never written/);
    expect(() => dec.decode('["n","1.5"]')).toThrow(/malformed bigint/);
    expect(() => dec.decode('{"a":1}')).toThrow(/untagged object/);
    expect(() => dec.decode('["S",["a","b"],1]')).toThrow(/wrong number of values/);
    expect(() => dec.decode('["x"]')).toThrow(/unknown tag "x"/);
  });
});

/** `values` as a decoder gives them back: -0 becomes 0 (JSON has no -0). */
function normalise(v: unknown): unknown {
  if (Object.is(v, -0)) return 0;
  if (Array.isArray(v)) return v.map(normalise);
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (k === '__proto__')
        Object.defineProperty(out, k, {
          value: normalise(x),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      else out[k] = normalise(x);
    }
    return out;
  }
  return v;
}
