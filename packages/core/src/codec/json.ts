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
  return JSON.parse(text, (_key, v: unknown) => {
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const keys = Object.keys(v);
      if (keys.length === 1 && keys[0] === '$n') {
        const n = (v as { $n: unknown }).$n;
        if (typeof n === 'string' && /^-?\d+$/.test(n)) return BigInt(n);
      }
    }
    return v;
  }) as T;
}
