/**
 * JSON with bigints, for journals, snapshots and golden vectors: a bigint is written as
 * `{"$n":"<decimal>"}` and read back from exactly that shape, so no string value can be
 * mistaken for a number.
 *
 * @module
 */

/** Serialises a value whose numbers may be bigints. */
export function encodeJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'bigint' ? { $n: v.toString() } : v,
  );
}

/** Parses text written by {@link encodeJson}. */
export function decodeJson<T = unknown>(text: string): T {
  // A plain parse and one walk: 2-3x faster than a JSON.parse reviver, which journal replay
  // feels (every record is decoded at start-up).
  return revive(JSON.parse(text)) as T;
}

const INTEGER = /^-?\d+$/;

/** Turns `{"$n": "<decimal>"}` objects into bigints, in place. */
function revive(v: unknown): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const old: unknown = v[i];
      if (old !== null && typeof old === 'object') v[i] = revive(old);
    }
    return v;
  }
  const record = v as Record<string, unknown>;
  const keys = Object.keys(record);
  if (keys.length === 1 && keys[0] === '$n') {
    const n = record.$n;
    if (typeof n === 'string' && INTEGER.test(n)) return BigInt(n);
  }
  for (const k of keys) {
    const old = record[k];
    if (old === null || typeof old !== 'object') continue;
    const now = revive(old);
    if (now === old) continue;
    // An own "__proto__" key (JSON.parse makes one) must stay data, never reach the setter.
    if (k === '__proto__')
      Object.defineProperty(record, k, {
        value: now,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    else record[k] = now;
  }
  return record;
}
