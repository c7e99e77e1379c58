/**
 * A persistent map from non-negative safe integers to values, specialised for keys handed out by
 * counters (order ids, log sequence numbers): a 32-way trie indexed by the key's bits, so a read
 * is a few array loads and a write under an owned {@link Edit} is an array store. Subtrees that
 * empty out are dropped, so memory follows the live keys, not the counter.
 *
 * Keys are split into a high part (key / 2^30) and a low part of six 5-bit digits; the high
 * parts (rarely more than one) each own a trie.
 *
 * @module
 */
import type { Edit } from './edit.js';

const LOW_BITS = 30;
const LOW_SPAN = 2 ** LOW_BITS;
const DEPTH = 6; // 6 x 5 bits = 30 bits

interface TrieNode {
  edit: Edit | null;
  /** Live entries below this node (values for a leaf, non-empty children otherwise). */
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

function writableNode(node: TrieNode, edit: Edit | null): TrieNode {
  if (edit !== null && node.edit === edit) return node;
  return { edit, count: node.count, slots: node.slots.slice() };
}

/** Persistent integer-keyed map; see the module comment. */
export class IntMap<V> {
  /** @internal Tries by high part, ascending. */
  roots: Root[];
  /** Number of entries. */
  size: number;
  /** @internal */
  edit: Edit | null;

  private constructor(roots: Root[], size: number, edit: Edit | null) {
    this.roots = roots;
    this.size = size;
    this.edit = edit;
  }

  /** The empty map. */
  static empty<V>(): IntMap<V> {
    return new IntMap<V>([], 0, null);
  }

  /** The value under `key`, or `undefined`. */
  get(key: number): V | undefined {
    const high = key >= LOW_SPAN ? Math.floor(key / LOW_SPAN) : 0;
    let node: TrieNode | undefined;
    const roots = this.roots;
    for (let i = 0; i < roots.length; i++) {
      const r = roots[i] as Root;
      if (r.high === high) {
        node = r.node;
        break;
      }
    }
    if (node === undefined) return undefined;
    const low = key - high * LOW_SPAN;
    for (let shift = (DEPTH - 1) * 5; shift > 0; shift -= 5) {
      node = node.slots[(low >>> shift) & 31] as TrieNode | undefined;
      if (node === undefined) return undefined;
    }
    return node.slots[low & 31] as V | undefined;
  }

  /** Whether `key` is present. */
  has(key: number): boolean {
    return this.get(key) !== undefined;
  }

  /** Stores `value` (not `undefined`) under `key`. */
  set(edit: Edit | null, key: number, value: V): IntMap<V> {
    if (!Number.isSafeInteger(key) || key < 0) throw new RangeError(`IntMap key ${key}`);
    const high = key >= LOW_SPAN ? Math.floor(key / LOW_SPAN) : 0;
    const low = key - high * LOW_SPAN;
    const at = this.roots.findIndex((r) => r.high === high);
    const oldRoot = at < 0 ? newNode(edit) : (this.roots[at] as Root).node;
    const added = at < 0 || this.get(key) === undefined;
    const root = setPath(oldRoot, edit, low, (DEPTH - 1) * 5, value);
    return this.withRoot(edit, at, high, root, this.size + (added ? 1 : 0));
  }

  /** Removes `key` if present. */
  delete(edit: Edit | null, key: number): IntMap<V> {
    if (!Number.isSafeInteger(key) || key < 0) return this;
    const high = key >= LOW_SPAN ? Math.floor(key / LOW_SPAN) : 0;
    if (this.get(key) === undefined) return this;
    const at = this.roots.findIndex((r) => r.high === high);
    const low = key - high * LOW_SPAN;
    const root = deletePath((this.roots[at] as Root).node, edit, low, (DEPTH - 1) * 5);
    return this.withRoot(edit, at, high, root, this.size - 1);
  }

  /** Calls `fn` for every entry in ascending key order. */
  forEach(fn: (value: V, key: number) => void): void {
    for (const r of this.roots)
      walk(r.node, r.high * LOW_SPAN, (DEPTH - 1) * 5, fn as (v: unknown, k: number) => void);
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

  private withRoot(
    edit: Edit | null,
    at: number,
    high: number,
    root: TrieNode | null,
    size: number,
  ): IntMap<V> {
    const owned = edit !== null && this.edit === edit;
    const roots = owned ? this.roots : this.roots.slice();
    if (at >= 0) {
      if (root === null) roots.splice(at, 1);
      else if ((roots[at] as Root).node !== root) roots[at] = { high, node: root };
    } else if (root !== null) {
      let i = 0;
      while (i < roots.length && (roots[i] as Root).high < high) i++;
      roots.splice(i, 0, { high, node: root });
    }
    if (owned) {
      this.size = size;
      return this;
    }
    return new IntMap<V>(roots, size, edit);
  }
}

function setPath(
  node: TrieNode,
  edit: Edit | null,
  low: number,
  shift: number,
  value: unknown,
): TrieNode {
  const i = (low >>> shift) & 31;
  if (shift === 0) {
    const old = node.slots[i];
    if (old === value) return node;
    const w = writableNode(node, edit);
    if (old === undefined) w.count++;
    w.slots[i] = value;
    return w;
  }
  const child = node.slots[i] as TrieNode | undefined;
  const next = setPath(child ?? newNode(edit), edit, low, shift - 5, value);
  if (next === child) return node;
  const w = writableNode(node, edit);
  if (child === undefined) w.count++;
  w.slots[i] = next;
  return w;
}

/** Returns the new node, `null` when it emptied, or the same node when the key was absent. */
function deletePath(
  node: TrieNode,
  edit: Edit | null,
  low: number,
  shift: number,
): TrieNode | null {
  const i = (low >>> shift) & 31;
  if (shift === 0) {
    if (node.slots[i] === undefined) return node;
    if (node.count === 1) return null;
    const w = writableNode(node, edit);
    w.slots[i] = undefined;
    w.count--;
    return w;
  }
  const child = node.slots[i] as TrieNode | undefined;
  if (child === undefined) return node;
  const next = deletePath(child, edit, low, shift - 5);
  if (next === child) return node;
  if (next === null && node.count === 1) return null;
  const w = writableNode(node, edit);
  if (next === null) {
    w.slots[i] = undefined;
    w.count--;
  } else {
    w.slots[i] = next;
  }
  return w;
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
