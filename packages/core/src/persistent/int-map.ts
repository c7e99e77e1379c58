/**
 * A persistent map from non-negative safe integers to values, specialised for keys handed out by
 * counters (order ids, log sequence numbers): a 32-way trie indexed by the key's bits, so a read
 * is a few array loads and a write under an owned {@link Edit} is an array store. Subtrees that
 * empty out are dropped, so memory follows the live keys, not the counter.
 *
 * Keys are split into a high part (key / 2^30) and a low part of six 5-bit digits; each high
 * part owns a trie. Keys below 2^30 (the common case) use a dedicated root that is only as deep
 * as the largest key needs (four levels up to 2^20 ids instead of six): each level is a load on
 * every read and a node copy on the first write of a batch.
 *
 * @module
 */
import type { EntryCursor } from './cursor.js';
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

/** The smallest top shift whose trie holds `low` (keys below 2^(shift + 5)). */
function shiftFor(low: number): number {
  let shift = 0;
  while (shift < TOP_SHIFT && low >>> (shift + 5) !== 0) shift += 5;
  return shift;
}

function lookup(node: TrieNode | null, topShift: number, low: number): unknown {
  if (node === null || low >>> (topShift + 5) !== 0) return undefined;
  let n: TrieNode | undefined = node;
  for (let shift = topShift; shift > 0; shift -= 5) {
    n = n.slots[(low >>> shift) & 31] as TrieNode | undefined;
    if (n === undefined) return undefined;
  }
  return n.slots[low & 31];
}

/** How the size changed in the last {@link writeValue} (0 or +1); a scalar, not an object. */
let writeDelta = 0;

/**
 * Stores `value` under `low` in a trie whose top node has shift `topShift` (which must hold
 * `low`), copying the nodes on the path that `edit` does not own. Returns the new top node;
 * `writeDelta` is +1 when the key was new.
 */
function writeValue(
  root: TrieNode | null,
  topShift: number,
  edit: Edit | null,
  low: number,
  value: unknown,
): TrieNode {
  const top =
    root === null
      ? newNode(edit)
      : edit !== null && root.edit === edit
        ? root
        : cloneNode(root, edit);
  let node = top;
  for (let shift = topShift; shift > 0; shift -= 5) {
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
    writeDelta = 1;
  } else {
    writeDelta = 0;
  }
  node.slots[i] = value;
  return top;
}

/** A trie of top shift `shift` grown until it holds `low`: the old top becomes child 0. */
function grow(root: TrieNode, shift: number, edit: Edit | null, low: number): TrieNode {
  let top = root;
  for (let s = shift; low >>> (s + 5) !== 0; s += 5) {
    const parent = newNode(edit);
    parent.slots[0] = top;
    parent.count = 1;
    top = parent;
  }
  return top;
}

/** Scratch of {@link removeValue}: the nodes on the removal path, cleared after each use. */
const removalPath: (TrieNode | undefined)[] = new Array(6);

/** Removes `low` (which must be present); returns the new root, `null` when it emptied. */
function removeValue(
  root: TrieNode,
  topShift: number,
  edit: Edit | null,
  low: number,
): TrieNode | null {
  // Nodes on the path, top first, to prune the ones that empty (a shared scratch array: this
  // function calls nothing that could re-enter it).
  const path = removalPath;
  const top = edit !== null && root.edit === edit ? root : cloneNode(root, edit);
  let node = top;
  let depth = 0;
  for (let shift = topShift; shift > 0; shift -= 5) {
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
  // Drop the references, so the scratch keeps no node of an old version alive.
  removalPath.fill(undefined);
  return top.count === 0 ? null : top;
}

/** A cursor's position in one trie node: its key base, level shift and next slot. */
interface IntAt {
  readonly node: TrieNode;
  readonly base: number;
  readonly shift: number;
  i: number;
}

/** Persistent integer-keyed map; see the module comment. */
export class IntMap<V> {
  /** @internal Trie of keys below 2^30. */
  low: TrieNode | null;
  /** @internal Shift of the top node of `low`: it holds keys below 2^(lowShift + 5). */
  lowShift: number;
  /** @internal Tries of larger keys by high part, ascending. */
  highs: Root[];
  /** Number of entries. */
  size: number;
  /** @internal */
  edit: Edit | null;

  private constructor(
    low: TrieNode | null,
    lowShift: number,
    highs: Root[],
    size: number,
    edit: Edit | null,
  ) {
    this.low = low;
    this.lowShift = lowShift;
    this.highs = highs;
    this.size = size;
    this.edit = edit;
  }

  /** The empty map. */
  static empty<V>(): IntMap<V> {
    return new IntMap<V>(null, 0, [], 0, null);
  }

  /** The value under `key`, or `undefined`. */
  get(key: number): V | undefined {
    if (key < LOW_SPAN && key >= 0) return lookup(this.low, this.lowShift, key) as V | undefined;
    const high = Math.floor(key / LOW_SPAN);
    for (const r of this.highs)
      if (r.high === high) return lookup(r.node, TOP_SHIFT, key - high * LOW_SPAN) as V | undefined;
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
    let old = high === 0 ? this.low : at < 0 ? null : (this.highs[at] as Root).node;
    let shift = high === 0 ? this.lowShift : TOP_SHIFT;
    let node: TrieNode | null;
    let delta: number;
    if (value === undefined) {
      if (old === null || lookup(old, shift, low) === undefined) return this;
      node = removeValue(old, shift, edit, low);
      delta = -1;
      if (node === null && high === 0) shift = 0;
    } else {
      if (high === 0) {
        if (old === null) shift = shiftFor(low);
        else if (low >>> (shift + 5) !== 0) {
          old = grow(old, shift, edit, low);
          shift = shiftFor(low);
        }
      }
      // No look-up first: storing an unchanged value only costs a path copy, and is rare.
      node = writeValue(old, shift, edit, low, value);
      delta = writeDelta;
    }
    if (high === 0) {
      if (owned) {
        this.low = node;
        this.lowShift = shift;
        this.size += delta;
        return this;
      }
      // The new owner gets its own `highs` array: it may append to it in place later.
      return new IntMap<V>(node, shift, this.highs.slice(), this.size + delta, edit);
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
    return new IntMap<V>(this.low, this.lowShift, highs, this.size + delta, edit);
  }

  /**
   * The entries in {@link forEach} order (ascending keys: the low trie, then each high part's),
   * one per `next()`, resumable between any two entries. Checked against `size`.
   */
  cursor(): EntryCursor {
    const roots: IntAt[] = [];
    if (this.low !== null) roots.push({ node: this.low, base: 0, shift: this.lowShift, i: 0 });
    for (const r of this.highs)
      roots.push({ node: r.node, base: r.high * LOW_SPAN, shift: TOP_SHIFT, i: 0 });
    const size = this.size;
    let root = 0;
    const stack: IntAt[] = [];
    let seen = 0;
    const c: EntryCursor = {
      key: undefined,
      value: undefined,
      next() {
        for (;;) {
          if (stack.length === 0) {
            const r = roots[root++];
            if (r === undefined) break;
            stack.push(r);
          }
          const at = stack[stack.length - 1] as IntAt;
          let descended = false;
          while (at.i < 32) {
            const i = at.i++;
            const s = at.node.slots[i];
            if (s === undefined) continue;
            if (at.shift === 0) {
              c.key = at.base + i;
              c.value = s;
              seen++;
              return true;
            }
            stack.push({
              node: s as TrieNode,
              base: at.base + i * 2 ** at.shift,
              shift: at.shift - 5,
              i: 0,
            });
            descended = true;
            break;
          }
          if (!descended) stack.pop();
        }
        if (seen !== size) throw new Error(`IntMap cursor: ${seen} of ${size} entries`);
        return false;
      },
    };
    return c;
  }

  /** Calls `fn` for every entry in ascending key order. */
  forEach(fn: (value: V, key: number) => void): void {
    if (this.low !== null) walk(this.low, 0, this.lowShift, fn as (v: unknown, k: number) => void);
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
