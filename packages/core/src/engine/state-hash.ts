/**
 * Canonical serialization and hash of the engine state: the same command log gives the same
 * bytes and the same hash on any machine. Maps are walked in their canonical order (which
 * depends only on their keys), object fields in sorted order, and copy-on-write ownership
 * markers are left out.
 *
 * @module
 */
import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { PMap } from '../persistent/hamt.js';
import { IdList } from '../persistent/id-list.js';
import { IntMap } from '../persistent/int-map.js';
import { isTimeIdSet, timeIdEntries } from '../persistent/sorted-set.js';
import { TradeLog } from '../risk/trade-log.js';
import type { EngineState } from './types.js';

/**
 * Where the canonical text goes as it is written: its pieces, handed to `spill` in runs of
 * {@link SPILL_PARTS} when one is set. Hashing a large state this way never builds its whole text
 * (72 MB for a million-record venue, whose one string and its garbage took longer than hashing).
 */
interface Sink {
  readonly parts: string[];
  readonly spill: ((text: string) => void) | null;
}

const SPILL_PARTS = 4_096;

function write(out: Sink, value: unknown): void {
  if (out.spill !== null && out.parts.length >= SPILL_PARTS) {
    out.spill(out.parts.join(''));
    out.parts.length = 0;
  }
  switch (typeof value) {
    case 'bigint':
      out.parts.push(`i${value};`);
      return;
    case 'number':
      out.parts.push(`n${value};`);
      return;
    case 'string':
      out.parts.push(`s${value.length}:${value}`);
      return;
    case 'boolean':
      out.parts.push(value ? 'T' : 'F');
      return;
    case 'undefined':
      out.parts.push('U');
      return;
    case 'object':
      break;
    default:
      throw new TypeError(`cannot hash a ${typeof value}`);
  }
  if (value === null) {
    out.parts.push('N');
    return;
  }
  if (Array.isArray(value)) {
    out.parts.push(`[${value.length}:`);
    for (const v of value) write(out, v);
    out.parts.push(']');
    return;
  }
  if (value instanceof IdList) {
    // The plain array of its ids.
    out.parts.push(`[${value.size}:`);
    value.forEach((id) => {
      write(out, id);
    });
    out.parts.push(']');
    return;
  }
  if (value instanceof PMap) {
    out.parts.push(`{${value.size}:`);
    value.forEach((v, k) => {
      write(out, k);
      write(out, v);
    });
    out.parts.push('}');
    return;
  }
  if (value instanceof IntMap || value instanceof TradeLog) {
    out.parts.push(`#${value.size}:`);
    value.forEach((v, k) => {
      out.parts.push(`${k}=`);
      write(out, v);
    });
    out.parts.push('#');
    return;
  }
  if (isTimeIdSet(value)) {
    const entries = timeIdEntries(value);
    out.parts.push(`<${entries.length}:`);
    for (const [t, id] of entries) out.parts.push(`${t},${id};`);
    out.parts.push('>');
    return;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record)
    .filter((k) => k !== 'edit')
    .sort();
  out.parts.push(`(${keys.length}:`);
  for (const k of keys) {
    out.parts.push(`${k}=`);
    write(out, record[k]);
  }
  out.parts.push(')');
}

/** The canonical text form of any engine value (state, record, event). */
export function canonicalText(value: unknown): string {
  const out: Sink = { parts: [], spill: null };
  write(out, value);
  return out.parts.join('');
}

/**
 * A keccak-256 implementation: a fresh incremental hash per call. The core's is the pure-JS
 * `@noble/hashes` one; a host may pass a faster one with the same results (a native binding):
 * the hash is most of the cost of writing and of checking a snapshot.
 */
export type Keccak256 = () => {
  update(data: Uint8Array): unknown;
  digest(): Uint8Array;
};

/** The core's keccak-256 ({@link Keccak256}). */
export const nobleKeccak256: Keccak256 = () => keccak_256.create();

/** keccak-256 of the canonical form of the state, as `0x` hex. */
export function stateHash(state: EngineState, keccak: Keccak256 = nobleKeccak256): string {
  const h = keccak();
  const out: Sink = { parts: [], spill: (text) => h.update(utf8ToBytes(text)) };
  write(out, state);
  h.update(utf8ToBytes(out.parts.join('')));
  return `0x${bytesToHex(h.digest())}`;
}
