/**
 * A persistent map from non-negative safe integers to values, specialised for keys handed out by
 * counters (order ids, log sequence numbers): a 32-way trie indexed by the key's bits, so a read
 * is a few array loads and a write under an owned {@link Edit} is an array store. Subtrees that
 * empty out are dropped, so memory follows the live keys, not the counter.
 *
 * Keys are split into a high part (key / 2^30) and a low part of six 5-bit digits; each high
 * part owns a trie. Keys below 2^30 (the common case) use a dedicated root.
 *
 * @module
 */
import type { Edit } from './edit.js';

const LOW_SPAN = 1_073_741_824; // 2^30
const TOP_SHIFT = 25; // six 5-bit digits: shifts 25, 20, 15, 10, 5, 0

interface TrieNode {
  edit: Edit | null;
  /** Occupied slots. */
  count: number;
  slots: unknown[];
}

interface Root {
  readonly high: number;
  readonly node: TrieNode;
}

function newNode(edit: Edit | null): TrieNode {
  return { edit, count: 0, slots: new Array(32) };
}

function cloneNode(node: TrieNode, edit: Edit | null): TrieNode {
  return { edit, count: node.count, slots: node.slots.slice() };
}

function lookup(node: TrieNode | null, low: number): unknown {
  let n = node;
  for (let shift = TOP_SHIFT; n !== null && shift > 0; shift -= 5) {
    n = (n.slots[(low >>> shift) & 31] as TrieNode | undefined) ?? null;
  }
  return n === null ? undefined : n.slots[low & 31];
}

/** Result of the last {@link write}: how the size changed (-1, 0, +1). */
interface WriteResult {
  delta: number;
}

/**
 * Stores `value` under `low`, copying the nodes on the path that `edit` does not own. Returns the
 * new root; `out.delta` is +1 when the key was new.
 */
function writeValue(
  root: TrieNode | null,
  edit: Edit | null,
  low: number,
  value: unknown,
  out: WriteResult,
): TrieNode {
  const top =
    root === null
      ? newNode(edit)
      : edit !== null && root.edit === edit
        ? root
        : cloneNode(root, edit);
  let node = top;
  for (let shift = TOP_SHIFT; shift > 0; shift -= 5) {
    const i = (low >>> shift) & 31;
    let child = node.slots[i] as TrieNode | undefined;
    if (child === undefined) {
      child = newNode(edit);
      node.slots[i] = child;
      node.count++;
    } else if (edit === null || child.edit !== edit) {
      child = cloneNode(child, edit);
      node.slots[i] = child;
    }
    node = child;
  }
  const i = low & 31;
  if (node.slots[i] === undefined) {
    node.count++;
    out.delta = 1;
  } else {
    out.delta = 0;
  }
  node.slots[i] = value;
  return top;
}

/** Removes `low` (which must be present); returns the new root, `null` when it emptied. */
function removeValue(root: TrieNode, edit: Edit | null, low: number): TrieNode | null {
  // Nodes on the path, top first, to prune the ones that empty.
  const path: TrieNode[] = new Array(6);
  const top = edit !== null && root.edit === edit ? root : cloneNode(root, edit);
  let node = top;
  let depth = 0;
  for (let shift = TOP_SHIFT; shift > 0; shift -= 5) {
    path[depth++] = node;
    const i = (low >>> shift) & 31;
    let child = node.slots[i] as TrieNode;
    if (edit === null || child.edit !== edit) {
      child = cloneNode(child, edit);
      node.slots[i] = child;
    }
    node = child;
  }
  node.slots[low & 31] = undefined;
  node.count--;
  let emptied = node.count === 0;
  for (let level = depth - 1, shift = 5; emptied && level >= 0; level--, shift += 5) {
    const parent = path[level] as TrieNode;
    parent.slots[(low >>> shift) & 31] = undefined;
    parent.count--;
    emptied = parent.count === 0;
  }
  return top.count === 0 ? null : top;
}

/** Persistent integer-keyed map; see the module comment. */
export class IntMap<V> {
  /** @internal Trie of keys below 2^30. */
  low: TrieNode | null;
  /** @internal Tries of larger keys by high part, ascending. */
  highs: Root[];
  /** Number of entries. */
  size: number;
  /** @internal */
  edit: Edit | null;

  private constructor(low: TrieNode | null, highs: Root[], size: number, edit: Edit | null) {
    this.low = low;
    this.highs = highs;
    this.size = size;
    this.edit = edit;
  }

  /** The empty map. */
  static empty<V>(): IntMap<V> {
    return new IntMap<V>(null, [], 0, null);
  }

  /** The value under `key`, or `undefined`. */
  get(key: number): V | undefined {
    if (key < LOW_SPAN && key >= 0) return lookup(this.low, key) as V | undefined;
    const high = Math.floor(key / LOW_SPAN);
    for (const r of this.highs)
      if (r.high === high) return lookup(r.node, key - high * LOW_SPAN) as V | undefined;
    return undefined;
  }

  /** Whether `key` is present. */
  has(key: number): boolean {
    return this.get(key) !== undefined;
  }

  /** Stores `value` (not `undefined`) under `key`. */
  set(edit: Edit | null, key: number, value: V): IntMap<V> {
    if (!Number.isSafeInteger(key) || key < 0) throw new RangeError(`IntMap key ${key}`);
    return this.update(edit, key, value);
  }

  /** Removes `key` if present. */
  delete(edit: Edit | null, key: number): IntMap<V> {
    if (!Number.isSafeInteger(key) || key < 0) return this;
    return this.update(edit, key, undefined);
  }

  private update(edit: Edit | null, key: number, value: V | undefined): IntMap<V> {
    const owned = edit !== null && this.edit === edit;
    const high = key < LOW_SPAN ? 0 : Math.floor(key / LOW_SPAN);
    const low = key - high * LOW_SPAN;
    let at = -1;
    if (high !== 0) {
      for (let i = 0; i < this.highs.length; i++) if ((this.highs[i] as Root).high === high) at = i;
    }
    const old = high === 0 ? this.low : at < 0 ? null : (this.highs[at] as Root).node;
    let node: TrieNode | null;
    let delta: number;
    if (value === undefined) {
      if (old === null || lookup(old, low) === undefined) return this;
      node = removeValue(old, edit, low);
      delta = -1;
    } else {
      // No look-up first: storing an unchanged value only costs a path copy, and is rare.
      const out = { delta: 0 };
      node = writeValue(old, edit, low, value, out);
      delta = out.delta;
    }
    if (high === 0) {
      if (owned) {
        this.low = node;
        this.size += delta;
        return this;
      }
      // The new owner gets its own `highs` array: it may append to it in place later.
      return new IntMap<V>(node, this.highs.slice(), this.size + delta, edit);
    }
    const highs = owned ? this.highs : this.highs.slice();
    if (at >= 0) {
      if (node === null) highs.splice(at, 1);
      else highs[at] = { high, node };
    } else if (node !== null) {
      let i = 0;
      while (i < highs.length && (highs[i] as Root).high < high) i++;
      highs.splice(i, 0, { high, node });
    }
    if (owned) {
      this.size += delta;
      return this;
    }
    return new IntMap<V>(this.low, highs, this.size + delta, edit);
  }

  /** Calls `fn` for every entry in ascending key order. */
  forEach(fn: (value: V, key: number) => void): void {
    if (this.low !== null) walk(this.low, 0, TOP_SHIFT, fn as (v: unknown, k: number) => void);
    for (const r of this.highs)
      walk(r.node, r.high * LOW_SPAN, TOP_SHIFT, fn as (v: unknown, k: number) => void);
  }

  /** Every key in ascending order. */
  keys(): number[] {
    const out: number[] = [];
    this.forEach((_v, k) => {
      out.push(k);
    });
    return out;
  }

  /** Every entry in ascending key order. */
  entries(): [number, V][] {
    const out: [number, V][] = [];
    this.forEach((v, k) => {
      out.push([k, v]);
    });
    return out;
  }
}

function walk(
  node: TrieNode,
  base: number,
  shift: number,
  fn: (v: unknown, k: number) => void,
): void {
  for (let i = 0; i < 32; i++) {
    const s = node.slots[i];
    if (s === undefined) continue;
    if (shift === 0) fn(s, base + i);
    else walk(s as TrieNode, base + i * 2 ** shift, shift - 5, fn);
  }
}
