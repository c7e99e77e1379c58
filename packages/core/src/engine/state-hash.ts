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

function write(out: string[], value: unknown): void {
  switch (typeof value) {
    case 'bigint':
      out.push(`i${value};`);
      return;
    case 'number':
      out.push(`n${value};`);
      return;
    case 'string':
      out.push(`s${value.length}:${value}`);
      return;
    case 'boolean':
      out.push(value ? 'T' : 'F');
      return;
    case 'undefined':
      out.push('U');
      return;
    case 'object':
      break;
    default:
      throw new TypeError(`cannot hash a ${typeof value}`);
  }
  if (value === null) {
    out.push('N');
    return;
  }
  if (Array.isArray(value)) {
    out.push(`[${value.length}:`);
    for (const v of value) write(out, v);
    out.push(']');
    return;
  }
  if (value instanceof IdList) {
    // The plain array of its ids.
    out.push(`[${value.size}:`);
    value.forEach((id) => {
      write(out, id);
    });
    out.push(']');
    return;
  }
  if (value instanceof PMap) {
    out.push(`{${value.size}:`);
    value.forEach((v, k) => {
      write(out, k);
      write(out, v);
    });
    out.push('}');
    return;
  }
  if (value instanceof IntMap || value instanceof TradeLog) {
    out.push(`#${value.size}:`);
    value.forEach((v, k) => {
      out.push(`${k}=`);
      write(out, v);
    });
    out.push('#');
    return;
  }
  if (isTimeIdSet(value)) {
    const entries = timeIdEntries(value);
    out.push(`<${entries.length}:`);
    for (const [t, id] of entries) out.push(`${t},${id};`);
    out.push('>');
    return;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record)
    .filter((k) => k !== 'edit')
    .sort();
  out.push(`(${keys.length}:`);
  for (const k of keys) {
    out.push(`${k}=`);
    write(out, record[k]);
  }
  out.push(')');
}

/** The canonical text form of any engine value (state, record, event). */
export function canonicalText(value: unknown): string {
  const out: string[] = [];
  write(out, value);
  return out.join('');
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
  h.update(utf8ToBytes(canonicalText(state)));
  return `0x${bytesToHex(h.digest())}`;
}
