/**
 * A persistent list of ascending ids in chunks of at most {@link CHUNK} ids: the working orders of
 * one account. A write session copies the chunk index and the one chunk it changes, so a version
 * costs O(size / CHUNK + CHUNK) whatever the account's order count, and versions share every
 * chunk neither changed. (A plain array copied per write session cost O(size) per command: a
 * market maker with 80,000 resting orders paid milliseconds for each new one.)
 *
 * Canonical forms (state hash, snapshot) write it as the plain array of its ids.
 *
 * @module
 */
import type { Edit } from './edit.js';

/** Most ids in one chunk. */
const CHUNK = 64;

interface Chunk {
  edit: Edit | null;
  ids: number[];
}

/** Ascending ids, shared between versions chunk by chunk (copy-on-write by {@link Edit}). */
export class IdList {
  /** The write session that may change this list in place; `null` once published. */
  edit: Edit | null;
  private readonly chunks: Chunk[];
  /** Number of ids. */
  size: number;

  private constructor(edit: Edit | null, chunks: Chunk[], size: number) {
    this.edit = edit;
    this.chunks = chunks;
    this.size = size;
  }

  /** The empty list. */
  static empty(): IdList {
    return new IdList(null, [], 0);
  }

  /** A published list of `ids`, which must ascend strictly (a snapshot's decoded array). */
  static fromArray(ids: readonly number[]): IdList {
    const chunks: Chunk[] = [];
    for (let i = 0; i < ids.length; i += CHUNK) {
      chunks.push({ edit: null, ids: ids.slice(i, i + CHUNK) });
    }
    return new IdList(null, chunks, ids.length);
  }

  /** This list, or a copy of it that `edit` owns. */
  private writable(edit: Edit): IdList {
    return this.edit === edit ? this : new IdList(edit, this.chunks.slice(), this.size);
  }

  /** The chunk at `index` of this writable list, owned by `edit`. */
  private writableChunk(edit: Edit, index: number): Chunk {
    const c = this.chunks[index] as Chunk;
    if (c.edit === edit) return c;
    const copy = { edit, ids: c.ids.slice() };
    this.chunks[index] = copy;
    return copy;
  }

  /** Adds `id`, which must be above every id in the list. */
  append(edit: Edit, id: number): IdList {
    const w = this.writable(edit);
    const last = w.chunks.length - 1;
    if (last < 0 || (w.chunks[last] as Chunk).ids.length >= CHUNK) {
      w.chunks.push({ edit, ids: [id] });
    } else {
      w.writableChunk(edit, last).ids.push(id);
    }
    w.size++;
    return w;
  }

  /** Removes `id`; returns `null` when it is not in the list (nothing changed). */
  remove(edit: Edit, id: number): IdList | null {
    // The chunk holding `id` is the first whose last id is at or above it.
    const chunks = this.chunks;
    let lo = 0;
    let hi = chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const ids = (chunks[mid] as Chunk).ids;
      if ((ids[ids.length - 1] as number) < id) lo = mid + 1;
      else hi = mid;
    }
    if (lo >= chunks.length) return null;
    const at = binarySearch((chunks[lo] as Chunk).ids, id);
    if (at < 0) return null;
    const w = this.writable(edit);
    if ((w.chunks[lo] as Chunk).ids.length === 1) {
      w.chunks.splice(lo, 1);
    } else {
      w.writableChunk(edit, lo).ids.splice(at, 1);
    }
    w.size--;
    return w;
  }

  /** Calls `fn` with each id, ascending. `fn` must not change the list. */
  forEach(fn: (id: number) => void): void {
    for (const c of this.chunks) for (const id of c.ids) fn(id);
  }

  /** The ids, ascending, in a new array. */
  toArray(): number[] {
    const out: number[] = new Array(this.size);
    let i = 0;
    for (const c of this.chunks) for (const id of c.ids) out[i++] = id;
    return out;
  }
}

function binarySearch(ids: readonly number[], id: number): number {
  let lo = 0;
  let hi = ids.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const at = ids[mid] as number;
    if (at === id) return mid;
    if (at < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
