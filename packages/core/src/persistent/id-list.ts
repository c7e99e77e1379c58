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
/** A chunk left with fewer ids than this joins a neighbour it fits with. */
const MERGE_BELOW = CHUNK / 4;

interface Chunk {
  edit: Edit | null;
  ids: number[];
}

/** Ascending ids, shared between versions chunk by chunk (copy-on-write by {@link Edit}). */
export class IdList {
  /** The write session that may change this list in place. */
  private readonly edit: Edit | null;
  private readonly chunks: Chunk[];
  /**
   * The last id of each chunk: the search runs over this one small array of numbers rather
   * than through the chunk objects (a cache miss each on a deep account's list).
   */
  private readonly lasts: number[];
  private count: number;

  private constructor(edit: Edit | null, chunks: Chunk[], lasts: number[], count: number) {
    this.edit = edit;
    this.chunks = chunks;
    this.lasts = lasts;
    this.count = count;
  }

  /** Number of ids. */
  get size(): number {
    return this.count;
  }

  /** The empty list. */
  static empty(): IdList {
    return new IdList(null, [], [], 0);
  }

  /** A published list of `ids`, which must ascend strictly (a snapshot's decoded array). */
  static fromArray(ids: readonly number[]): IdList {
    const chunks: Chunk[] = [];
    const lasts: number[] = [];
    for (let i = 0; i < ids.length; i += CHUNK) {
      const part = ids.slice(i, i + CHUNK);
      chunks.push({ edit: null, ids: part });
      lasts.push(part[part.length - 1] as number);
    }
    return new IdList(null, chunks, lasts, ids.length);
  }

  /** This list, or a copy of it that `edit` owns. */
  private writable(edit: Edit): IdList {
    if (this.edit === edit) return this;
    return new IdList(edit, this.chunks.slice(), this.lasts.slice(), this.count);
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
      w.lasts.push(id);
    } else {
      w.writableChunk(edit, last).ids.push(id);
      w.lasts[last] = id;
    }
    w.count++;
    return w;
  }

  /** Removes `id`; returns `null` when it is not in the list (nothing changed). */
  remove(edit: Edit, id: number): IdList | null {
    // The chunk holding `id` is the first whose last id is at or above it.
    const lasts = this.lasts;
    let lo = 0;
    let hi = lasts.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((lasts[mid] as number) < id) lo = mid + 1;
      else hi = mid;
    }
    if (lo >= lasts.length) return null;
    const at = binarySearch((this.chunks[lo] as Chunk).ids, id);
    if (at < 0) return null;
    const w = this.writable(edit);
    if ((w.chunks[lo] as Chunk).ids.length === 1) {
      w.chunks.splice(lo, 1);
      w.lasts.splice(lo, 1);
    } else {
      const ids = w.writableChunk(edit, lo).ids;
      ids.splice(at, 1);
      w.lasts[lo] = ids[ids.length - 1] as number;
      if (ids.length < MERGE_BELOW) w.mergeAround(edit, lo);
    }
    w.count--;
    return w;
  }

  /**
   * Joins the small chunk at `index` with a neighbour it fits with. Orders end in any order, so
   * without this the survivors of many chunks would each keep a chunk of their own, and the
   * index (copied once per session, shifted on each removal) would grow toward one entry per id.
   */
  private mergeAround(edit: Edit, index: number): void {
    const chunks = this.chunks;
    const lasts = this.lasts;
    let small = chunks[index] as Chunk;
    const next = chunks[index + 1];
    if (next !== undefined && small.ids.length + next.ids.length <= CHUNK) {
      small = { edit, ids: small.ids.concat(next.ids) };
      chunks.splice(index, 2, small);
      lasts.splice(index, 1);
    }
    const prev = chunks[index - 1];
    if (small.ids.length < MERGE_BELOW && prev !== undefined) {
      if (prev.ids.length + small.ids.length <= CHUNK) {
        chunks.splice(index - 1, 2, { edit, ids: prev.ids.concat(small.ids) });
        lasts.splice(index - 1, 1);
      }
    }
  }

  /** Calls `fn` with each id, ascending. `fn` must not change the list. */
  forEach(fn: (id: number) => void): void {
    for (const c of this.chunks) for (const id of c.ids) fn(id);
  }

  /** Number of chunks (for tests: chunks stay well filled). */
  get chunkCount(): number {
    return this.chunks.length;
  }

  /** The ids, ascending, in a new array. */
  toArray(): number[] {
    const out: number[] = new Array(this.count);
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
