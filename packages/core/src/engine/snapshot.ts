/**
 * Snapshots of the engine state: a text form that decodes to a state with the same
 * {@link stateHash} and the same behaviour under every later command.
 *
 * The codec knows no field names. It walks the state like the state hash does and tags only the
 * value kinds JSON cannot carry: persistent maps ({@link PMap}, {@link IntMap}), the
 * {@link TimeIdSet}, bigints, `undefined` and non-finite numbers. Plain records keep their field
 * order; a field called `edit` (the copy-on-write owner) is written as `null`, so a decoded state
 * is published and owned by nobody. New state fields are therefore carried without touching this
 * file, as long as they are built from plain records, arrays, primitives and those collections;
 * anything else (a class instance, a `Map`) makes the encoder throw rather than lose data.
 *
 * Both walks are iterative and resumable ({@link SnapshotEncoder}, {@link StateHasher}), so an
 * adapter can encode and hash a state in small slices while the engine goes on: the state is
 * immutable, so the reference it took stays valid. A persistent map or set is entered one entry
 * at a time through a cursor over its trie (never expanded into an array of all its entries),
 * so a slice stays short however large one collection is (the trade records of a long-running
 * venue: a million entries would otherwise be one step of tens of milliseconds).
 *
 * Text form: `{"v":9,"state":<value>}` where a value is a JSON primitive or a tagged array
 * `[tag, ...]`: `"a"` array, `"n"` bigint (decimal string), `"m"` PMap (key, value, ...), `"i"`
 * IntMap (key, value, ...), `"t"` TimeIdSet (time, id, ...), `"u"` undefined, `"f"` a number JSON
 * cannot hold (`"NaN"`, `"Infinity"`, `"-Infinity"`, `"-0"`), and a record as `"S"` (a new shape:
 * its field names, then its values) or `"R"` (a shape met before: its number, then its values).
 * Shapes are numbered from 0 in the order the text defines them, which is the order a reader
 * meets them front to back. A record's field names are thus written once per snapshot rather than
 * once per record. The bust window's trade log, up to a hundred thousand records of three dozen
 * fields, most of them bigints, is a table of its own: `"L"`, the field names, a string with one
 * letter per field (`n` a bigint, written as a JSON string of its digits; `s` a string, written
 * the first time the table meets it and as its number, from 0 in that order, after; `v` any
 * other value), then trade id and row (an array of the values), and so on. Versions up to 8 wrote each record
 * as a JSON object and the trade log as an IntMap; the reader still takes those forms.
 *
 * @module
 */
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { cloidKey } from '../orders/cloids.js';
import type { EntryCursor } from '../persistent/cursor.js';
import { type Edit, newEdit } from '../persistent/edit.js';
import { type PKey, PMap } from '../persistent/hamt.js';
import { IdList } from '../persistent/id-list.js';
import { IntMap } from '../persistent/int-map.js';
import {
  addTimeId,
  emptyTimeIdSet,
  isTimeIdSet,
  type TimeIdSet,
  timeIdSetSize,
} from '../persistent/sorted-set.js';
import { TradeLog } from '../risk/trade-log.js';
import { newStoredTrade } from '../risk/trades.js';
import { DEFAULT_VENUE_SETTINGS } from './genesis.js';
import { type Keccak256, nobleKeccak256 } from './state-hash.js';
import type { EngineState, Order, StoredTrade } from './types.js';

/**
 * Version of the snapshot text form. 2: order totals carry per-side leaves bounds (a snapshot of
 * version 1 lacks them and its state hash no longer matches, so it is refused). 3: price levels
 * keep their queue in fixed chunks and the trade log stores flat records. 4: the basis EMA's sums
 * carry 18 more decimals (a version 3 snapshot's would mix the two scales in its first update).
 * 5: an account lists its working orders in an array of ids, not a list threaded through two
 * state-wide maps. 6: the state records the engine rules the log declared (`rulesVersion`); a
 * version-5 snapshot is converted on reading ({@link decodeSnapshotText}). 7: a managed child
 * records its entry order's id (`entryOrderId`); a version-6 snapshot is converted. 8: the venue
 * settings hold the per-account cap on working orders; a version-7 snapshot is converted. 9:
 * records are written as shapes (see the module comment), the state is the same; a version-8
 * snapshot is read as it is.
 */
export const SNAPSHOT_VERSION = 9;

/** Raised when snapshot text cannot be decoded. */
export class SnapshotFormatError extends Error {
  override readonly name = 'SnapshotFormatError';
}

// ---- a resumable walk --------------------------------------------------------------------------

/** What {@link Frame.next} returns when its container has nothing left. */
const END: unique symbol = Symbol('end');
/** What {@link Frame.next} returns when it wrote one leaf value itself. */
const WROTE: unique symbol = Symbol('wrote');

/**
 * One open container. `next` writes the text before its next value to `out` and returns that
 * value (to be written by the format), or {@link WROTE} when it wrote a leaf itself, or
 * {@link END}. Every call does a bounded amount of work: a container is never expanded whole,
 * so a step stays short however large one persistent map is.
 */
interface Frame {
  next(out: string[]): unknown;
  readonly close: string;
}

/** How one text form writes values: primitives directly, containers as frames. */
interface Format {
  /** The text of a leaf value, or a frame (with its opening text) for a container. */
  open(value: unknown): string | { open: string; frame: Frame };
}

/** The items of an array (or a record's field values), each after its prefix. */
function listFrame(
  items: readonly unknown[],
  prefix: ((i: number) => string) | null,
  close: string,
): Frame {
  let i = 0;
  return {
    close,
    next(out) {
      if (i === items.length) return END;
      if (prefix !== null) out.push(prefix(i));
      return items[i++];
    },
  };
}

/** A map's entries as alternating key and value items, each after `separator`. */
function pairsFrame(cursor: EntryCursor, separator: string | null, close: string): Frame {
  let valueDue = false;
  return {
    close,
    next(out) {
      if (valueDue) {
        valueDue = false;
        if (separator !== null) out.push(separator);
        return cursor.value;
      }
      if (!cursor.next()) return END;
      valueDue = true;
      if (separator !== null) out.push(separator);
      return cursor.key;
    },
  };
}

/** A map's values, each after the text of its key (`key=`). */
function keyedFrame(cursor: EntryCursor, close: string): Frame {
  return {
    close,
    next(out) {
      if (!cursor.next()) return END;
      out.push(`${cursor.key as number}=`);
      return cursor.value;
    },
  };
}

/** A {@link TimeIdSet}'s pairs in order, each written whole by `entry`. */
function timeIdFrame(
  set: TimeIdSet,
  entry: (time: number, id: number) => string,
  close: string,
): Frame {
  const keys = set.tree.keys();
  return {
    close,
    next(out) {
      const n = keys.next();
      if (n.done === true) return END;
      const [t, id] = n.value;
      out.push(entry(t, id));
      return WROTE;
    },
  };
}

/** Walks a value iteratively, `budget` values per step. */
class Walk {
  private readonly stack: Frame[] = [];
  private readonly out: string[] = [];
  private done = false;

  private readonly format: Format;

  constructor(format: Format, root: unknown, head: string, tail: string) {
    this.format = format;
    this.out.push(head);
    // The tail is the closing text of an empty frame under the root's.
    this.stack.push({ next: () => END, close: tail });
    this.visit(root);
  }

  private visit(value: unknown): void {
    const r = this.format.open(value);
    if (typeof r === 'string') this.out.push(r);
    else {
      this.out.push(r.open);
      this.stack.push(r.frame);
    }
  }

  /** Writes up to `budget` values; returns the text written, or `null` once everything was. */
  step(budget: number): string | null {
    if (this.done) return null;
    let left = budget;
    const stack = this.stack;
    const out = this.out;
    while (left > 0 && stack.length > 0) {
      const f = stack[stack.length - 1] as Frame;
      const item = f.next(out);
      if (item === END) {
        out.push(f.close);
        stack.pop();
        continue;
      }
      left--;
      if (item !== WROTE) this.visit(item);
    }
    if (stack.length === 0) this.done = true;
    const text = out.join('');
    out.length = 0;
    return text;
  }
}

function plainRecord(value: object): Record<string, unknown> {
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) {
    const name = (value as { constructor?: { name?: string } }).constructor?.name ?? 'unknown';
    throw new TypeError(`cannot snapshot an instance of ${name}: use a plain record`);
  }
  return value as Record<string, unknown>;
}

function snapshotNumber(n: number): string {
  if (Number.isFinite(n) && !Object.is(n, -0)) return String(n);
  return `["f","${Object.is(n, -0) ? '-0' : String(n)}"]`;
}

/** The trade log's record fields in the order its records list them, and the bigint ones. */
const TRADE_SAMPLE: Readonly<Record<string, unknown>> = {
  ...newStoredTrade(0, 0, 0, 'Order', 0n, 0n, 0n),
};
const TRADE_FIELDS: readonly string[] = Object.keys(TRADE_SAMPLE);
const TRADE_KINDS = TRADE_FIELDS.map((k) => {
  const kind = typeof TRADE_SAMPLE[k];
  return kind === 'bigint' ? 'n' : kind === 'string' ? 's' : 'v';
}).join('');

/**
 * One trade as a table row: `,id,[values]`. `strings` numbers the strings the table has written
 * (accounts, sources, modes): a string met before is written as its number. Throws on a record
 * of another shape.
 */
function tradeRow(id: number, trade: unknown, strings: Map<string, number>): string {
  const t = trade as Record<string, unknown>;
  if (Object.keys(t).length !== TRADE_FIELDS.length)
    throw new TypeError(`cannot snapshot trade ${id}: not a trade record`);
  let row = `,${snapshotNumber(id)},[`;
  for (let i = 0; i < TRADE_FIELDS.length; i++) {
    const k = TRADE_FIELDS[i] as string;
    const v = t[k];
    if (i > 0) row += ',';
    const kind = TRADE_KINDS.charCodeAt(i);
    if (kind === 110 /* n */) {
      if (typeof v !== 'bigint')
        throw new TypeError(`cannot snapshot trade ${id}: ${k} is not a bigint`);
      row += `"${v}"`;
    } else if (kind === 115 /* s */) {
      if (typeof v !== 'string')
        throw new TypeError(`cannot snapshot trade ${id}: ${k} is not a string`);
      const known = strings.get(v);
      if (known !== undefined) row += known;
      else {
        strings.set(v, strings.size);
        row += JSON.stringify(v);
      }
    } else if (typeof v === 'number') row += snapshotNumber(v);
    else if (typeof v === 'boolean') row += v ? 'true' : 'false';
    else throw new TypeError(`cannot snapshot trade ${id}: ${k} is a ${typeof v}`);
  }
  return `${row}]`;
}

/** The trade log's entries as table rows, each written whole. */
function tradeRowsFrame(cursor: EntryCursor): Frame {
  const strings = new Map<string, number>();
  return {
    close: ']',
    next(out) {
      if (!cursor.next()) return END;
      out.push(tradeRow(cursor.key as number, cursor.value, strings));
      return WROTE;
    },
  };
}

/**
 * The snapshot text form (see the module comment). Each encoding gets its own, since it numbers
 * the record shapes it has written.
 */
function snapshotFormat(): Format {
  // Shape number by field names joined with NUL; a name holding a NUL is written as its own shape.
  const shapes = new Map<string, number>();
  let defined = 0;
  return {
    open(value) {
      switch (typeof value) {
        case 'string':
          return JSON.stringify(value);
        case 'number':
          return snapshotNumber(value);
        case 'boolean':
          return value ? 'true' : 'false';
        case 'bigint':
          return `["n","${value}"]`;
        case 'undefined':
          return '["u"]';
        case 'object':
          break;
        default:
          throw new TypeError(`cannot snapshot a ${typeof value}`);
      }
      if (value === null) return 'null';
      if (Array.isArray(value)) return { open: '["a"', frame: listFrame(value, () => ',', ']') };
      if (value instanceof IdList)
        return { open: '["a"', frame: listFrame(value.toArray(), () => ',', ']') };
      if (value instanceof PMap)
        return { open: '["m"', frame: pairsFrame(value.cursor(), ',', ']') };
      if (value instanceof TradeLog)
        return {
          open: `["L",${JSON.stringify(TRADE_FIELDS)},"${TRADE_KINDS}"`,
          frame: tradeRowsFrame(value.cursor()),
        };
      if (value instanceof IntMap)
        return { open: '["i"', frame: pairsFrame(value.cursor(), ',', ']') };
      if (isTimeIdSet(value)) {
        const entry = (t: number, id: number) => `,${snapshotNumber(t)},${snapshotNumber(id)}`;
        return { open: '["t"', frame: timeIdFrame(value, entry, ']') };
      }
      const record = plainRecord(value);
      const keys = Object.keys(record);
      const items = keys.map((k) => (k === 'edit' ? null : record[k]));
      const frame = listFrame(items, () => ',', ']');
      const name = keys.some((k) => k.includes('\u0000')) ? null : keys.join('\u0000');
      const known = name === null ? undefined : shapes.get(name);
      if (known !== undefined) return { open: `["R",${known}`, frame };
      if (name !== null) shapes.set(name, defined);
      defined++;
      return { open: `["S",${JSON.stringify(keys)}`, frame };
    },
  };
}

/**
 * The canonical text form of `state-hash.ts`, written resumably. It must stay byte-identical to
 * {@link canonicalText}; a test holds the two together.
 */
const CANONICAL_FORMAT: Format = {
  open(value) {
    switch (typeof value) {
      case 'bigint':
        return `i${value};`;
      case 'number':
        return `n${value};`;
      case 'string':
        return `s${value.length}:${value}`;
      case 'boolean':
        return value ? 'T' : 'F';
      case 'undefined':
        return 'U';
      case 'object':
        break;
      default:
        throw new TypeError(`cannot hash a ${typeof value}`);
    }
    if (value === null) return 'N';
    if (Array.isArray(value))
      return { open: `[${value.length}:`, frame: listFrame(value, null, ']') };
    if (value instanceof IdList)
      return { open: `[${value.size}:`, frame: listFrame(value.toArray(), null, ']') };
    if (value instanceof PMap)
      return { open: `{${value.size}:`, frame: pairsFrame(value.cursor(), null, '}') };
    if (value instanceof IntMap || value instanceof TradeLog)
      return { open: `#${value.size}:`, frame: keyedFrame(value.cursor(), '#') };
    if (isTimeIdSet(value)) {
      const entry = (t: number, id: number) => `${t},${id};`;
      return { open: `<${timeIdSetSize(value)}:`, frame: timeIdFrame(value, entry, '>') };
    }
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record)
      .filter((k) => k !== 'edit')
      .sort();
    return {
      open: `(${keys.length}:`,
      frame: listFrame(
        keys.map((k) => record[k]),
        (i) => `${keys[i]}=`,
        ')',
      ),
    };
  },
};

// ---- encoding --------------------------------------------------------------------------------

/**
 * Encodes a state in slices: call {@link step} until it returns `null` and concatenate what it
 * returned. The state must not change meanwhile (published states never do).
 */
export class SnapshotEncoder {
  private readonly walk: Walk;

  constructor(state: EngineState) {
    this.walk = new Walk(snapshotFormat(), state, `{"v":${SNAPSHOT_VERSION},"state":`, '}');
  }

  /** The next piece of text after writing up to `budget` values; `null` when finished. */
  step(budget = 10_000): string | null {
    return this.walk.step(budget);
  }
}

/** Encodes a state as snapshot text (see the module comment). */
export function encodeSnapshot(state: EngineState): string {
  const enc = new SnapshotEncoder(state);
  const parts: string[] = [];
  for (let p = enc.step(Number.MAX_SAFE_INTEGER); p !== null; p = enc.step(Number.MAX_SAFE_INTEGER))
    parts.push(p);
  return parts.join('');
}

/**
 * Computes {@link stateHash} in slices: call {@link step} until it returns `true`, then read
 * {@link hash}. Same result as `stateHash(state)`.
 */
export class StateHasher {
  private readonly walk: Walk;
  private readonly keccak: ReturnType<Keccak256>;
  private result: string | null = null;

  /** `keccak`: the implementation to hash with (see {@link Keccak256}), the core's by default. */
  constructor(state: EngineState, keccak: Keccak256 = nobleKeccak256) {
    this.walk = new Walk(CANONICAL_FORMAT, state, '', '');
    this.keccak = keccak();
  }

  /** Hashes up to `budget` more values; `true` once the hash is complete. */
  step(budget = 10_000): boolean {
    if (this.result !== null) return true;
    const text = this.walk.step(budget);
    if (text === null) {
      this.result = `0x${bytesToHex(this.keccak.digest())}`;
      return true;
    }
    if (text.length > 0) this.keccak.update(utf8ToBytes(text));
    return false;
  }

  /** The `0x` keccak-256 hash, once {@link step} returned `true`. */
  get hash(): string {
    if (this.result === null) throw new Error('StateHasher: not finished');
    return this.result;
  }
}

// ---- decoding --------------------------------------------------------------------------------

function fail(detail: string): never {
  throw new SnapshotFormatError(`bad snapshot: ${detail}`);
}

function decodeNumber(v: unknown): number {
  if (typeof v === 'number') return v;
  if (Array.isArray(v) && v[0] === 'f' && v.length === 2) {
    switch (v[1]) {
      case 'NaN':
        return Number.NaN;
      case 'Infinity':
        return Number.POSITIVE_INFINITY;
      case '-Infinity':
        return Number.NEGATIVE_INFINITY;
      case '-0':
        return -0;
    }
  }
  return fail(`expected a number, found ${JSON.stringify(v)}`);
}

/** What a decoding carries along: the owner of the collections it builds, the shapes met so far. */
interface DecodeContext {
  readonly edit: Edit;
  readonly shapes: string[][];
}

/** A record with `keys` and the values at `v[from..]` (exactly one per key). */
function decodeRecord(keys: readonly string[], v: unknown[], from: number, ctx: DecodeContext) {
  if (v.length - from !== keys.length)
    fail(`a record of ${keys.length} fields has ${v.length - from} values`);
  const out: Record<string, unknown> = {};
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as string;
    out[k] = k === 'edit' ? null : decodeValue(v[from + i], ctx);
  }
  return out;
}

/** A bigint's decimal text in a snapshot. */
const BIGINT_TEXT = /^-?\d+$/;

/** Field names a decoded record may have: distinct strings, none that would set a prototype. */
function isFieldNameList(keys: unknown): keys is string[] {
  return (
    Array.isArray(keys) &&
    keys.every((k) => typeof k === 'string' && k !== '__proto__') &&
    new Set(keys).size === keys.length
  );
}

/** The trade table `["L", fields, kinds, id, row, ...]` (see the module comment) as a trade log. */
function decodeTradeTable(v: unknown[], ctx: DecodeContext): TradeLog {
  const n = v.length;
  const keys: unknown = v[1];
  const kinds: unknown = v[2];
  if (
    !isFieldNameList(keys) ||
    typeof kinds !== 'string' ||
    !/^[nsv]*$/.test(kinds) ||
    kinds.length !== keys.length
  )
    fail('the trade table has no list of distinct field names with their kinds');
  if (n % 2 !== 1) fail('odd trade table entry list');
  const rows: [number, StoredTrade][] = [];
  const strings: string[] = [];
  for (let i = 3; i < n; i += 2) {
    const id: unknown = v[i];
    const row: unknown = v[i + 1];
    if (!Number.isSafeInteger(id) || (id as number) < 0) fail('bad trade id');
    if (!Array.isArray(row) || row.length !== keys.length)
      fail(
        `trade ${id}: a row of ${keys.length} fields has ${Array.isArray(row) ? row.length : 'no'} values`,
      );
    const trade: Record<string, unknown> = {};
    for (let f = 0; f < keys.length; f++) {
      const cell: unknown = row[f];
      const kind = kinds.charCodeAt(f);
      if (kind === 110 /* n */) {
        if (typeof cell !== 'string' || !BIGINT_TEXT.test(cell)) fail(`trade ${id}: bad bigint`);
        trade[keys[f] as string] = BigInt(cell);
      } else if (kind === 115 /* s */) {
        let text: string | undefined;
        if (typeof cell === 'string') {
          strings.push(cell);
          text = cell;
        } else if (Number.isSafeInteger(cell)) text = strings[cell as number];
        if (text === undefined)
          fail(`trade ${id}: no string ${JSON.stringify(cell)} before its use`);
        trade[keys[f] as string] = text;
      } else trade[keys[f] as string] = decodeValue(cell, ctx);
    }
    rows.push([id as number, trade as unknown as StoredTrade]);
  }
  return TradeLog.fromEntries(rows);
}

function decodeValue(v: unknown, ctx: DecodeContext): unknown {
  if (v === null || typeof v !== 'object') return v;
  const edit = ctx.edit;
  if (!Array.isArray(v)) {
    // The record form of versions up to 8.
    const src = v as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(src)) out[k] = k === 'edit' ? null : decodeValue(src[k], ctx);
    return out;
  }
  const n = v.length;
  switch (v[0]) {
    case 'S': {
      const keys: unknown = v[1];
      if (!isFieldNameList(keys)) fail('a record shape is not a list of distinct field names');
      // Numbered before its values are read: a record inside one defines the next shape.
      ctx.shapes.push(keys);
      return decodeRecord(keys, v, 2, ctx);
    }
    case 'L':
      return decodeTradeTable(v, ctx);
    case 'R': {
      const keys = Number.isSafeInteger(v[1]) ? ctx.shapes[v[1] as number] : undefined;
      if (keys === undefined) fail(`no record shape ${JSON.stringify(v[1])} before its use`);
      return decodeRecord(keys, v, 2, ctx);
    }
    case 'a': {
      const out = new Array(n - 1);
      for (let i = 1; i < n; i++) out[i - 1] = decodeValue(v[i], ctx);
      return out;
    }
    case 'n': {
      const text = v[1];
      if (n !== 2 || typeof text !== 'string' || !BIGINT_TEXT.test(text)) fail('bad bigint');
      return BigInt(text);
    }
    case 'm': {
      if (n % 2 !== 1) fail('odd PMap entry list');
      let m = PMap.empty<PKey, unknown>();
      for (let i = 1; i < n; i += 2) {
        const k = v[i];
        if (typeof k !== 'string' && typeof k !== 'number') fail('bad PMap key');
        m = m.set(edit, k, decodeValue(v[i + 1], ctx));
      }
      m.edit = null;
      return m;
    }
    case 'i': {
      if (n % 2 !== 1) fail('odd IntMap entry list');
      let m = IntMap.empty<unknown>();
      for (let i = 1; i < n; i += 2) {
        const k = v[i];
        if (!Number.isSafeInteger(k) || (k as number) < 0) fail('bad IntMap key');
        m = m.set(edit, k as number, decodeValue(v[i + 1], ctx));
      }
      m.edit = null;
      return m;
    }
    case 't': {
      if (n % 2 !== 1) fail('odd TimeIdSet entry list');
      let s: TimeIdSet = emptyTimeIdSet();
      for (let i = 1; i < n; i += 2)
        s = addTimeId(s, edit, decodeNumber(v[i]), decodeNumber(v[i + 1]));
      return { edit: null, tree: s.tree } satisfies TimeIdSet;
    }
    case 'u':
      return undefined;
    case 'f':
      return decodeNumber(v);
    default:
      return fail(`unknown tag ${JSON.stringify(v[0])}`);
  }
}

/**
 * Older snapshot versions this build converts, each into the next: what the version after it
 * added. A version not here (and not current) is refused, and the journal is replayed instead.
 */
const CONVERSIONS: ReadonlyMap<number, (written: EngineState) => EngineState> = new Map([
  // 6 added the engine rules the log declared; a version-5 state predates declarations.
  [5, (written: EngineState) => ({ ...written, rulesVersion: null })],
  // 7 added the entry order's id to managed children.
  [6, withEntryOrderIds],
  // 8 added the working-order cap to the venue settings. No earlier build had a setting for it,
  // so a venue that wrote version 7 ran with the genesis default a full replay gives it.
  [
    7,
    (written: EngineState) => ({
      ...written,
      settings: {
        ...written.settings,
        maxWorkingOrdersPerAccount: DEFAULT_VENUE_SETTINGS.maxWorkingOrdersPerAccount,
      },
    }),
  ],
  // 9 writes records as shapes; the state is the same.
  [8, (written: EngineState) => written],
]);

/**
 * A version-6 state with `entryOrderId` on every order: a child's entry is the working order its
 * `parentCloid` names if that order is older than the child (what version 6 assumed); a child
 * whose entry has ended gets 0, which ties it, as version 6 did, to every other such child with
 * the same `parentCloid`.
 */
function withEntryOrderIds(written: EngineState): EngineState {
  const edit = newEdit();
  let orders = IntMap.empty<Order>();
  written.orders.forEach((o, id) => {
    let entryOrderId: number | null = null;
    if (o.parentCloid !== null) {
      const reserved = written.cloids.get(cloidKey(o.account, o.parentCloid))?.orderId;
      const entry = reserved === undefined ? undefined : written.orders.get(reserved);
      entryOrderId =
        entry !== undefined && entry.cloid === o.parentCloid && entry.orderId < o.orderId
          ? entry.orderId
          : 0;
    }
    orders = orders.set(edit, id, { ...o, edit: null, entryOrderId });
  });
  orders.edit = null;
  return { ...written, orders };
}

/** A decoded snapshot: see {@link decodeSnapshotText}. */
export interface DecodedSnapshot {
  /** The version of the text. */
  readonly version: number;
  /**
   * The state as it was written: its `stateHash` is the one recorded with it (for an older
   * version, computed by the build that wrote it).
   */
  readonly written: EngineState;
  /** The state in this version's form: `written` itself when the text is of this version. */
  readonly state: EngineState;
}

/**
 * Decodes snapshot text of this version, or of an older one this build still converts (a wrong
 * version's error lists them), into published states (owned by nobody). Throws
 * {@link SnapshotFormatError} on anything else, damaged content included. Check a recorded hash
 * against `written`, then use `state`.
 */
export function decodeSnapshotText(text: string): DecodedSnapshot {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    fail(`not JSON (${(e as Error).message})`);
  }
  const doc = parsed as { v?: unknown; state?: unknown } | null;
  const version = doc === null || typeof doc !== 'object' ? undefined : doc.v;
  if (
    doc === null ||
    typeof version !== 'number' ||
    (version !== SNAPSHOT_VERSION && !CONVERSIONS.has(version))
  )
    fail(`expected version ${SNAPSHOT_VERSION} (or ${[...CONVERSIONS.keys()].join(', ')})`);
  try {
    const written = decodeState(doc.state);
    let state = written;
    for (let v = version; v < SNAPSHOT_VERSION; v++) {
      const convert = CONVERSIONS.get(v);
      if (convert === undefined) fail(`no conversion from version ${v}`);
      state = convert(state);
    }
    return { version, written, state };
  } catch (e) {
    // The structures a decoded state is rebuilt into check their own consistency (a trade
    // stored under another id, ...) and throw their own errors: to a caller it is damaged text.
    if (e instanceof SnapshotFormatError) throw e;
    return fail(`damaged state: ${(e as Error).message}`);
  }
}

/**
 * Decodes snapshot text into a published state (owned by nobody). Throws
 * {@link SnapshotFormatError} on text that is not a snapshot of this version.
 */
export function decodeSnapshot(text: string): EngineState {
  const decoded = decodeSnapshotText(text);
  if (decoded.version !== SNAPSHOT_VERSION) fail(`expected version ${SNAPSHOT_VERSION}`);
  return decoded.state;
}

function decodeState(encoded: unknown): EngineState {
  const state = decodeValue(encoded, { edit: newEdit(), shapes: [] });
  if (state === null || typeof state !== 'object' || Array.isArray(state))
    fail('the state is not a record');
  // The trade log is a table (an IntMap of its records up to version 8), read back into its own
  // structure.
  const s = state as EngineState;
  const trades: unknown = s.trades;
  if (trades instanceof IntMap) s.trades = TradeLog.fromEntries(trades.entries());
  else if (!(trades instanceof TradeLog)) fail('the trade log is not a trade table');
  // An account's order list is written as the array of its ids.
  if (!(s.accounts instanceof PMap)) fail('the accounts are not a PMap');
  s.accounts.forEach((account) => {
    const ids: unknown = account.orders;
    if (
      !Array.isArray(ids) ||
      !ids.every((id, i) => Number.isSafeInteger(id) && (i === 0 || id > ids[i - 1]))
    )
      fail(`the order list of ${account.address} is not an ascending array of ids`);
    account.orders = IdList.fromArray(ids as number[]);
  });
  return s;
}

/** `stateHash` of a decoded snapshot, for callers that only hold the text. */
export function snapshotHash(text: string): string {
  const h = new StateHasher(decodeSnapshot(text));
  while (!h.step(Number.MAX_SAFE_INTEGER));
  return h.hash;
}
