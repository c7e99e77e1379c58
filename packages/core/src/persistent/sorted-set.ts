/**
 * A persistent sorted set of `(time, id)` pairs, backed by `sorted-btree` whose `clone()` is O(1)
 * copy-on-write. Used for time-ordered work such as GTD/DAY expiry.
 *
 * @module
 */
import btreeModule from 'sorted-btree';
import type { Edit } from './edit.js';

// sorted-btree is CommonJS with `exports.default`; Node hands ESM importers the exports object
// while bundlers (vitest) hand them `exports.default`. Accept both.
type BTreeClass = typeof btreeModule.default;
const loaded = btreeModule as unknown as BTreeClass | { default: BTreeClass };
const BTree: BTreeClass = typeof loaded === 'function' ? loaded : loaded.default;
type Tree = InstanceType<typeof BTree<readonly [number, number], true>>;

const compare = (a: readonly [number, number], b: readonly [number, number]): number =>
  a[0] - b[0] || a[1] - b[1];

/** A sorted set of `(time, id)` pairs with copy-on-write ownership. */
export interface TimeIdSet {
  readonly edit: Edit | null;
  /** @internal */
  readonly tree: Tree;
}

/** Whether a value is a {@link TimeIdSet}. */
export function isTimeIdSet(value: unknown): value is TimeIdSet {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { tree?: unknown }).tree instanceof BTree
  );
}

/** The empty set. */
export function emptyTimeIdSet(): TimeIdSet {
  return { edit: null, tree: new BTree<readonly [number, number], true>(undefined, compare) };
}

function writable(set: TimeIdSet, edit: Edit): TimeIdSet {
  return set.edit === edit ? set : { edit, tree: set.tree.clone() };
}

/** Adds `(time, id)`. */
export function addTimeId(set: TimeIdSet, edit: Edit, time: number, id: number): TimeIdSet {
  const w = writable(set, edit);
  w.tree.set([time, id], true);
  return w;
}

/** Removes `(time, id)` if present. */
export function removeTimeId(set: TimeIdSet, edit: Edit, time: number, id: number): TimeIdSet {
  if (!set.tree.has([time, id])) return set;
  const w = writable(set, edit);
  w.tree.delete([time, id]);
  return w;
}

/** The smallest pair, or `undefined`. */
export function firstTimeId(set: TimeIdSet): readonly [number, number] | undefined {
  return set.tree.minKey();
}

/** Number of pairs. */
export function timeIdSetSize(set: TimeIdSet): number {
  return set.tree.size;
}

/** Every pair in ascending order. */
export function timeIdEntries(set: TimeIdSet): (readonly [number, number])[] {
  return set.tree.keysArray();
}
