/**
 * The snapshot walk enters persistent maps and sets one entry at a time (so a background snapshot
 * of a large state is sliced finely), and writes exactly the text the array-expanding walk
 * wrote: the order of `forEach` for PMap (hash order, collision nodes included) and IntMap
 * (ascending keys, past 2^30 too), ascending pairs for the TimeIdSet. The reference below is
 * that earlier walk, written recursively; the canonical (hash) text is checked against
 * `canonicalText`.
 */
import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  canonicalText,
  createEngineState,
  decodeSnapshot,
  type EngineState,
  encodeSnapshot,
  PMap,
  SnapshotEncoder,
  StateHasher,
  stateHash,
} from '../src/index.js';
import { type Edit, newEdit } from '../src/persistent/edit.js';
import { IntMap } from '../src/persistent/int-map.js';
import {
  addTimeId,
  emptyTimeIdSet,
  isTimeIdSet,
  type TimeIdSet,
  timeIdEntries,
} from '../src/persistent/sorted-set.js';
import { TradeLog } from '../src/risk/trade-log.js';
import { newStoredTrade } from '../src/risk/trades.js';

/**
 * The snapshot text form as the array-expanding walk wrote it (version prefix left out), records
 * as shapes numbered in the order they are written (`shapes` holds the numbers given so far).
 */
function reference(value: unknown, shapes = new Map<string, number>()): string {
  const num = (n: number) =>
    Number.isFinite(n) && !Object.is(n, -0)
      ? String(n)
      : `["f","${Object.is(n, -0) ? '-0' : String(n)}"]`;
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return num(value);
    case 'boolean':
      return String(value);
    case 'bigint':
      return `["n","${value}"]`;
    case 'undefined':
      return '["u"]';
  }
  if (value === null) return 'null';
  if (Array.isArray(value)) return `["a"${value.map((v) => `,${reference(v, shapes)}`).join('')}]`;
  if (value instanceof TradeLog) {
    // Strings: written the first time, then as their number in that order.
    const strings: string[] = [];
    const cell = (c: unknown) => {
      if (typeof c === 'bigint') return `"${c}"`;
      if (typeof c !== 'string') return reference(c);
      const known = strings.indexOf(c);
      if (known >= 0) return String(known);
      strings.push(c);
      return JSON.stringify(c);
    };
    const rows: string[] = [];
    value.forEach((t, id) => {
      rows.push(`,${id},[${Object.values(t).map(cell).join(',')}]`);
    });
    const fields = Object.keys(newStoredTrade(0, 0, 0, 'Order', 0n, 0n, 0n));
    const kinds = Object.values(newStoredTrade(0, 0, 0, 'Order', 0n, 0n, 0n))
      .map((c) => (typeof c === 'bigint' ? 'n' : typeof c === 'string' ? 's' : 'v'))
      .join('');
    return `["L",${JSON.stringify(fields)},"${kinds}"${rows.join('')}]`;
  }
  if (value instanceof PMap || value instanceof IntMap) {
    const parts: string[] = [];
    (value as PMap<string | number, unknown>).forEach((v, k) => {
      parts.push(`,${reference(k, shapes)},${reference(v, shapes)}`);
    });
    return `${value instanceof PMap ? '["m"' : '["i"'}${parts.join('')}]`;
  }
  if (isTimeIdSet(value))
    return `["t"${timeIdEntries(value)
      .map(([t, id]) => `,${num(t)},${num(id)}`)
      .join('')}]`;
  const r = value as Record<string, unknown>;
  const keys = Object.keys(r);
  const name = JSON.stringify(keys);
  const known = shapes.get(name);
  if (known === undefined) shapes.set(name, shapes.size);
  const head = known === undefined ? `["S",${name}` : `["R",${known}`;
  return `${head}${keys.map((k) => `,${reference(k === 'edit' ? null : r[k], shapes)}`).join('')}]`;
}

function pmap(edit: Edit, entries: [string | number, unknown][]): PMap<string | number, unknown> {
  let m = PMap.empty<string | number, unknown>();
  for (const [k, v] of entries) m = m.set(edit, k, v);
  m.edit = null;
  return m;
}

/** A state with extra fields of every collection shape the walk handles. */
function richState(n: number): EngineState {
  const edit = newEdit();
  // Integers hash to themselves and a 0x-address to its last eight hex digits, so these keys
  // collide on every level and end in collision nodes of three and more entries.
  const colliding: [string | number, unknown][] = [];
  for (let i = 0; i < 6; i++) {
    const tail = (0x1000 + i * 7).toString(16).padStart(8, '0');
    colliding.push([0x1000 + i * 7, i]);
    colliding.push([`0x${'a'.repeat(32)}${tail}`, { i, b: BigInt(i) }]);
    colliding.push([`0x${'b'.repeat(32)}${tail}`, [i, undefined, -0]]);
  }
  const plain: [string | number, unknown][] = [];
  for (let i = 0; i < n; i++) plain.push([i % 3 === 0 ? `k${i}` : i * 7919, { v: i, nested: [i] }]);
  let ints = IntMap.empty<unknown>();
  for (let i = 0; i < n; i++) ints = ints.set(edit, i * 37, i % 2 === 0 ? `s${i}` : BigInt(i));
  for (const k of [2 ** 30, 2 ** 30 + 5, 3 * 2 ** 30 + 1, 2 ** 40 + 123, Number.MAX_SAFE_INTEGER])
    ints = ints.set(edit, k, { big: k });
  ints.edit = null;
  let times: TimeIdSet = emptyTimeIdSet();
  for (let i = 0; i < n; i++) times = addTimeId(times, edit, 1_000 + (i % 17), i);
  times = { edit: null, tree: times.tree };
  const nestedMaps = pmap(edit, [
    ['empty', PMap.empty()],
    ['ints', IntMap.empty()],
    ['inner', pmap(edit, plain.slice(0, 20))],
  ]);
  // The trade log walks as the IntMap of records it stands for: some appended, one rewritten
  // (a bust), one removed out of order, the oldest dropped.
  let trades = TradeLog.empty();
  for (let id = 1; id <= n; id++) {
    const t = newStoredTrade(id, 1, 1_000 + id, 'Order', BigInt(id) * 10n ** 18n, 1n, BigInt(id));
    t.account0 = '0xa';
    t.entryNotional1 = 2n ** 80n + BigInt(id);
    trades = trades.set(edit, id, t);
  }
  if (n > 3) {
    const busted = newStoredTrade(2, 1, 1_002, 'Order', 5n, 1n, 1n);
    busted.busted = true;
    trades = trades.set(edit, 2, busted).delete(edit, 3).delete(edit, 1);
  }
  trades.edit = null;
  return {
    ...createEngineState(),
    trades,
    extraColliding: pmap(edit, colliding),
    extraPlain: pmap(edit, plain),
    extraInts: ints,
    extraTimes: times,
    extraEmptyTimes: emptyTimeIdSet(),
    extraNested: nestedMaps,
    extraNumbers: [Number.NaN, Number.POSITIVE_INFINITY, -0, 1.5],
  } as unknown as EngineState;
}

function encodeIn(state: EngineState, budget: number): { text: string; steps: number } {
  const enc = new SnapshotEncoder(state);
  const parts: string[] = [];
  let steps = 0;
  for (let p = enc.step(budget); p !== null; p = enc.step(budget)) {
    parts.push(p);
    steps++;
  }
  return { text: parts.join(''), steps };
}

function hashIn(state: EngineState, budget: number): string {
  const h = new StateHasher(state);
  while (!h.step(budget));
  return h.hash;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('snapshot walk over persistent collections', () => {
  it('writes the same text as the array-expanding walk, whatever the slice size', () => {
    const state = richState(3_000);
    const expected = `{"v":${JSON.parse(encodeSnapshot(createEngineState())).v},"state":${reference(state)}}`;
    expect(encodeSnapshot(state)).toBe(expected);
    for (const budget of [1, 2, 3, 7, 512]) expect(encodeIn(state, budget).text).toBe(expected);
  });

  it('hashes the same canonical text as canonicalText, whatever the slice size', () => {
    const state = richState(2_000);
    // stateHash hands its text to keccak in runs; the digest is that of the whole text.
    const text = canonicalText(state);
    expect(text.length).toBeGreaterThan(100_000);
    const expected = `0x${bytesToHex(keccak_256(utf8ToBytes(text)))}`;
    expect(stateHash(state)).toBe(expected);
    for (const budget of [1, 5, 512, Number.MAX_SAFE_INTEGER])
      expect(hashIn(state, budget)).toBe(expected);
  });

  it('round-trips the collections', () => {
    const state = richState(500);
    const decoded = decodeSnapshot(encodeSnapshot(state));
    expect(stateHash(decoded)).toBe(stateHash(state));
    expect(encodeSnapshot(decoded)).toBe(encodeSnapshot(state));
  });

  it('never expands a whole map or set in one step: one entry at a time', () => {
    const state = richState(20_000);
    const pm = vi.spyOn(PMap.prototype, 'forEach');
    const pe = vi.spyOn(PMap.prototype, 'entries');
    const im = vi.spyOn(IntMap.prototype, 'forEach');
    const ie = vi.spyOn(IntMap.prototype, 'entries');
    const te = vi.spyOn(TradeLog.prototype, 'entries');
    const tf = vi.spyOn(TradeLog.prototype, 'forEach');
    const tree = (state as unknown as { extraTimes: TimeIdSet }).extraTimes.tree;
    const ka = vi.spyOn(Object.getPrototypeOf(tree), 'keysArray');
    // With a budget of 4 values a step, 20,000 entries of one map need thousands of steps, and
    // no step writes more than a few entries' text.
    const { steps } = encodeIn(state, 4);
    hashIn(state, 4);
    expect(steps).toBeGreaterThan(20_000 / 4);
    for (const spy of [pm, pe, im, ie, te, tf, ka]) expect(spy).not.toHaveBeenCalled();
  });
});
