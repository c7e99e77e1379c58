/**
 * A persistent hash map (CHAMP layout: 32-way nodes with separate data and node bitmaps) with
 * transient writes. Reads never allocate; a write copies only the nodes on the path to the key
 * unless they already belong to the caller's {@link Edit}, in which case they are updated in
 * place. Cloning is O(1): the map is immutable to everyone who does not hold the edit.
 *
 * Iteration order depends only on the set of keys (hash order, collisions sorted by key), never on
 * insertion order, so a canonical state hash can walk the map directly.
 *
 * @module
 */
import type { EntryCursor } from './cursor.js';
import type { Edit } from './edit.js';

/** Keys a {@link PMap} accepts. */
export type PKey = number | string;

const BITS = 5;
const MASK = 31;
const MAX_SHIFT = 30; // 7 levels cover the 32-bit hash; deeper collisions go to a collision node

/** 32-bit hash of a key. Integers hash to themselves so dense ids fill nodes evenly. */
export function hashKey(key: PKey): number {
  if (typeof key === 'number') {
    if (Number.isInteger(key) && key >= 0 && key <= 0xffffffff) return key | 0;
    return hashString(String(key));
  }
  return hashString(key);
}

function hashString(s: string): number {
  const n = s.length;
  // Lowercase 0x-addresses are uniformly random hex: their last eight digits are a good hash.
  if (n === 42 && s.charCodeAt(0) === 48 && s.charCodeAt(1) === 120) {
    let h = 0;
    for (let i = 34; i < 42; i++) {
      const c = s.charCodeAt(i);
      const d = c <= 57 ? c - 48 : (c | 32) - 87;
      h = (h << 4) | (d & 15);
    }
    return h | 0;
  }
  let h = 0x811c9dc5;
  for (let i = 0; i < n; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h | 0;
}

function compareKeys(a: PKey, b: PKey): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const sa = String(a);
  const sb = String(b);
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

const popcount = (x: number): number => {
  let v = x - ((x >>> 1) & 0x55555555);
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
};

interface Node {
  edit: Edit | null;
  /** Bit i set: slot i holds a key/value pair in `arr` (front, two cells each). */
  dataMap: number;
  /** Bit i set: slot i holds a child node in `arr` (back, stored in reverse). */
  nodeMap: number;
  /** Collision node when non-zero depth is exhausted: all keys share `hash`. */
  collisionHash: number;
  collision: boolean;
  arr: unknown[];
}

const EMPTY_NODE: Node = {
  edit: null,
  dataMap: 0,
  nodeMap: 0,
  collisionHash: 0,
  collision: false,
  arr: [],
};

function makeNode(edit: Edit | null, dataMap: number, nodeMap: number, arr: unknown[]): Node {
  return { edit, dataMap, nodeMap, collisionHash: 0, collision: false, arr };
}

function makeCollision(edit: Edit | null, hash: number, arr: unknown[]): Node {
  return { edit, dataMap: 0, nodeMap: 0, collisionHash: hash, collision: true, arr };
}

function writable(node: Node, edit: Edit | null): Node {
  if (edit !== null && node.edit === edit) return node;
  return {
    edit,
    dataMap: node.dataMap,
    nodeMap: node.nodeMap,
    collisionHash: node.collisionHash,
    collision: node.collision,
    arr: node.arr.slice(),
  };
}

/**
 * The node with one cell (`a`) or two cells (`a`, `b`) inserted at `at`: in place when owned,
 * else a fresh copy built in one pass.
 */
function spliceIn(
  node: Node,
  edit: Edit | null,
  at: number,
  cells: 1 | 2,
  a: unknown,
  b?: unknown,
): Node {
  const src = node.arr;
  const n = src.length;
  if (edit !== null && node.edit === edit) {
    for (let i = 0; i < cells; i++) src.push(undefined);
    for (let i = n - 1; i >= at; i--) src[i + cells] = src[i];
    src[at] = a;
    if (cells === 2) src[at + 1] = b;
    return node;
  }
  const out = new Array(n + cells);
  for (let i = 0; i < at; i++) out[i] = src[i];
  out[at] = a;
  if (cells === 2) out[at + 1] = b;
  for (let i = at; i < n; i++) out[i + cells] = src[i];
  return {
    edit,
    dataMap: node.dataMap,
    nodeMap: node.nodeMap,
    collisionHash: node.collisionHash,
    collision: node.collision,
    arr: out,
  };
}

/** `arr` with `cells` cells removed at `at` (in place when owned, else a fresh copy). */
function spliceOut(node: Node, edit: Edit | null, at: number, cells: number): Node {
  const src = node.arr;
  const n = src.length;
  if (edit !== null && node.edit === edit) {
    for (let i = at; i + cells < n; i++) src[i] = src[i + cells];
    for (let i = 0; i < cells; i++) src.pop();
    return node;
  }
  const out = new Array(n - cells);
  for (let i = 0; i < at; i++) out[i] = src[i];
  for (let i = at + cells; i < n; i++) out[i - cells] = src[i];
  return {
    edit,
    dataMap: node.dataMap,
    nodeMap: node.nodeMap,
    collisionHash: node.collisionHash,
    collision: node.collision,
    arr: out,
  };
}

/** Result flags of one recursive write. */
interface WriteResult {
  added: boolean;
  removed: boolean;
}

/** A cursor's position in one node: next slot, data pairs and children consumed so far. */
interface HamtAt {
  readonly node: Node;
  slot: number;
  data: number;
  child: number;
}

/**
 * An immutable-by-default map. Every write takes an {@link Edit} (or `null` for a plain
 * persistent copy) and returns the map to use afterwards; the receiver is only modified when the
 * map itself belongs to that edit. An edit must be retired (never used again) once the version it
 * produced is handed to anyone else: that is what publishes it.
 */
export class PMap<K extends PKey, V> {
  /** @internal */ root: Node;
  /** Number of entries. */
  size: number;
  /** @internal */ edit: Edit | null;

  private constructor(root: Node, size: number, edit: Edit | null) {
    this.root = root;
    this.size = size;
    this.edit = edit;
  }

  /** The empty map. */
  static empty<K extends PKey, V>(): PMap<K, V> {
    return new PMap<K, V>(EMPTY_NODE, 0, null);
  }

  /** Builds a map from entries (later duplicates win). */
  static from<K extends PKey, V>(entries: Iterable<readonly [K, V]>): PMap<K, V> {
    let m = PMap.empty<K, V>();
    const edit: Edit = { __edit: true };
    for (const [k, v] of entries) m = m.set(edit, k, v);
    m.edit = null;
    return m;
  }

  /** The value stored under `key`, or `undefined`. */
  get(key: K): V | undefined {
    const hash = hashKey(key);
    let node = this.root;
    let shift = 0;
    for (;;) {
      if (node.collision) {
        const arr = node.arr;
        for (let i = 0; i < arr.length; i += 2) if (arr[i] === key) return arr[i + 1] as V;
        return undefined;
      }
      const bit = 1 << ((hash >>> shift) & MASK);
      if ((node.dataMap & bit) !== 0) {
        const idx = 2 * popcount(node.dataMap & (bit - 1));
        return node.arr[idx] === key ? (node.arr[idx + 1] as V) : undefined;
      }
      if ((node.nodeMap & bit) === 0) return undefined;
      node = node.arr[node.arr.length - 1 - popcount(node.nodeMap & (bit - 1))] as Node;
      shift += BITS;
    }
  }

  /** Whether `key` is present. */
  has(key: K): boolean {
    return this.get(key) !== undefined;
  }

  /** Stores `value` under `key`. `undefined` values are not allowed (use {@link delete}). */
  set(edit: Edit | null, key: K, value: V): PMap<K, V> {
    const result: WriteResult = { added: false, removed: false };
    const root = setIn(this.root, edit, 0, hashKey(key), key, value, result);
    return this.with(edit, root, this.size + (result.added ? 1 : 0));
  }

  /** Removes `key` if present. */
  delete(edit: Edit | null, key: K): PMap<K, V> {
    const result: WriteResult = { added: false, removed: false };
    const root = deleteIn(this.root, edit, 0, hashKey(key), key, result);
    if (!result.removed) return this;
    return this.with(edit, root, this.size - 1);
  }

  /**
   * The entries in {@link forEach} order (hash order: data and children interleaved by slot; a
   * collision node's pairs in array order), one per `next()`: an explicit stack replaces the
   * recursion, so a caller can stop and resume between any two entries. Checked against `size`.
   */
  cursor(): EntryCursor {
    const stack: HamtAt[] = [{ node: this.root, slot: 0, data: 0, child: 0 }];
    const size = this.size;
    let seen = 0;
    const c: EntryCursor = {
      key: undefined,
      value: undefined,
      next() {
        while (stack.length > 0) {
          const at = stack[stack.length - 1] as HamtAt;
          const { node } = at;
          const arr = node.arr;
          if (node.collision) {
            if (2 * at.data < arr.length) {
              c.key = arr[2 * at.data];
              c.value = arr[2 * at.data + 1];
              at.data++;
              seen++;
              return true;
            }
            stack.pop();
            continue;
          }
          let descended = false;
          while (at.slot < 32) {
            const bit = 1 << at.slot;
            at.slot++;
            if ((node.dataMap & bit) !== 0) {
              c.key = arr[2 * at.data];
              c.value = arr[2 * at.data + 1];
              at.data++;
              seen++;
              return true;
            }
            if ((node.nodeMap & bit) !== 0) {
              const child = arr[arr.length - 1 - at.child] as Node;
              at.child++;
              stack.push({ node: child, slot: 0, data: 0, child: 0 });
              descended = true;
              break;
            }
          }
          if (!descended) stack.pop();
        }
        if (seen !== size) throw new Error(`PMap cursor: ${seen} of ${size} entries`);
        return false;
      },
    };
    return c;
  }

  /** Calls `fn` for every entry in canonical order (hash order, collisions sorted by key). */
  forEach(fn: (value: V, key: K) => void): void {
    walk(this.root, fn as (v: unknown, k: unknown) => void);
  }

  /** Every entry in canonical order. */
  entries(): [K, V][] {
    const out: [K, V][] = [];
    this.forEach((v, k) => {
      out.push([k, v]);
    });
    return out;
  }

  /** Every value in canonical order. */
  values(): V[] {
    const out: V[] = [];
    this.forEach((v) => {
      out.push(v);
    });
    return out;
  }

  /** Every key in canonical order. */
  keys(): K[] {
    const out: K[] = [];
    this.forEach((_v, k) => {
      out.push(k);
    });
    return out;
  }

  private with(edit: Edit | null, root: Node, size: number): PMap<K, V> {
    if (root === this.root && size === this.size) return this;
    if (edit !== null && this.edit === edit) {
      this.root = root;
      this.size = size;
      return this;
    }
    return new PMap<K, V>(root, size, edit);
  }
}

function walk(node: Node, fn: (v: unknown, k: unknown) => void): void {
  const arr = node.arr;
  if (node.collision) {
    for (let i = 0; i < arr.length; i += 2) fn(arr[i + 1], arr[i]);
    return;
  }
  // Interleave data and children by slot index so the order depends on hashes only.
  let dataIdx = 0;
  let nodeIdx = 0;
  for (let slot = 0; slot < 32; slot++) {
    const bit = 1 << slot;
    if ((node.dataMap & bit) !== 0) {
      fn(arr[2 * dataIdx + 1], arr[2 * dataIdx]);
      dataIdx++;
    } else if ((node.nodeMap & bit) !== 0) {
      walk(arr[arr.length - 1 - nodeIdx] as Node, fn);
      nodeIdx++;
    }
  }
}

function setIn(
  node: Node,
  edit: Edit | null,
  shift: number,
  hash: number,
  key: PKey,
  value: unknown,
  result: WriteResult,
): Node {
  if (node.collision) return setInCollision(node, edit, key, value, result);
  const bit = 1 << ((hash >>> shift) & MASK);
  if ((node.dataMap & bit) !== 0) {
    const idx = 2 * popcount(node.dataMap & (bit - 1));
    const existing = node.arr[idx] as PKey;
    if (existing === key) {
      if (node.arr[idx + 1] === value) return node;
      const w = writable(node, edit);
      w.arr[idx + 1] = value;
      return w;
    }
    // Two keys share this slot: push both one level down.
    result.added = true;
    const existingValue = node.arr[idx + 1];
    const child = mergeTwo(
      edit,
      shift + BITS,
      hashKey(existing),
      existing,
      existingValue,
      hash,
      key,
      value,
    );
    const w = spliceOut(node, edit, idx, 2);
    w.dataMap ^= bit;
    w.nodeMap |= bit;
    const nodePos = w.arr.length - popcount(w.nodeMap & (bit - 1));
    return spliceIn(w, edit, nodePos, 1, child);
  }
  if ((node.nodeMap & bit) !== 0) {
    const pos = node.arr.length - 1 - popcount(node.nodeMap & (bit - 1));
    const child = node.arr[pos] as Node;
    const next = setIn(child, edit, shift + BITS, hash, key, value, result);
    if (next === child) return node;
    const w = writable(node, edit);
    w.arr[pos] = next;
    return w;
  }
  result.added = true;
  const w = spliceIn(node, edit, 2 * popcount(node.dataMap & (bit - 1)), 2, key, value);
  w.dataMap |= bit;
  return w;
}

function mergeTwo(
  edit: Edit | null,
  shift: number,
  h1: number,
  k1: PKey,
  v1: unknown,
  h2: number,
  k2: PKey,
  v2: unknown,
): Node {
  if (shift > MAX_SHIFT) {
    return compareKeys(k1, k2) < 0
      ? makeCollision(edit, h1, [k1, v1, k2, v2])
      : makeCollision(edit, h1, [k2, v2, k1, v1]);
  }
  const i1 = (h1 >>> shift) & MASK;
  const i2 = (h2 >>> shift) & MASK;
  if (i1 === i2) {
    const child = mergeTwo(edit, shift + BITS, h1, k1, v1, h2, k2, v2);
    return makeNode(edit, 0, 1 << i1, [child]);
  }
  const dataMap = (1 << i1) | (1 << i2);
  return i1 < i2
    ? makeNode(edit, dataMap, 0, [k1, v1, k2, v2])
    : makeNode(edit, dataMap, 0, [k2, v2, k1, v1]);
}

function setInCollision(
  node: Node,
  edit: Edit | null,
  key: PKey,
  value: unknown,
  result: WriteResult,
): Node {
  const arr = node.arr;
  for (let i = 0; i < arr.length; i += 2) {
    if (arr[i] === key) {
      if (arr[i + 1] === value) return node;
      const w = writable(node, edit);
      w.arr[i + 1] = value;
      return w;
    }
  }
  result.added = true;
  const w = writable(node, edit);
  let at = 0;
  while (at < w.arr.length && compareKeys(w.arr[at] as PKey, key) < 0) at += 2;
  w.arr.splice(at, 0, key, value);
  return w;
}

function deleteIn(
  node: Node,
  edit: Edit | null,
  shift: number,
  hash: number,
  key: PKey,
  result: WriteResult,
): Node {
  if (node.collision) {
    const arr = node.arr;
    for (let i = 0; i < arr.length; i += 2) {
      if (arr[i] === key) {
        result.removed = true;
        const w = writable(node, edit);
        w.arr.splice(i, 2);
        return w;
      }
    }
    return node;
  }
  const bit = 1 << ((hash >>> shift) & MASK);
  if ((node.dataMap & bit) !== 0) {
    const idx = 2 * popcount(node.dataMap & (bit - 1));
    if (node.arr[idx] !== key) return node;
    result.removed = true;
    const w = spliceOut(node, edit, idx, 2);
    w.dataMap ^= bit;
    return w;
  }
  if ((node.nodeMap & bit) === 0) return node;
  const pos = node.arr.length - 1 - popcount(node.nodeMap & (bit - 1));
  const child = node.arr[pos] as Node;
  const next = deleteIn(child, edit, shift + BITS, hash, key, result);
  if (next === child) return node;
  // A child left with a single pair and no children is inlined back into this node, which keeps
  // the trie canonical (its shape depends only on the key set).
  const nextPairs = next.collision ? next.arr.length / 2 : popcount(next.dataMap);
  const nextChildren = next.collision ? 0 : popcount(next.nodeMap);
  if (nextChildren === 0 && nextPairs <= 1) {
    let w = spliceOut(node, edit, pos, 1);
    w.nodeMap ^= bit;
    if (nextPairs === 1) {
      w = spliceIn(w, edit, 2 * popcount(w.dataMap & (bit - 1)), 2, next.arr[0], next.arr[1]);
      w.dataMap |= bit;
    }
    return w;
  }
  const w = writable(node, edit);
  w.arr[pos] = next;
  return w;
}
