/**
 * The bust window's trade log as a persistent, column-stored map from trade id to
 * {@link StoredTrade}. It keeps the meaning and the read and write calls of an
 * `IntMap<StoredTrade>` (the state hash and the snapshot see the same entries in the same order),
 * but stores each trade in typed arrays instead of one heap object with two dozen bigints.
 *
 * Why: up to 100,000 trades stay alive for the bust window, so every trade record and every
 * bigint it holds is copied by the young-generation collector and then promoted. Measured on the
 * W2 book workload, keeping those records cost about a third of the engine's time. Here the
 * 64-bit fields go into `BigInt64Array`s (no heap object per value), and only the price and the
 * two entry notionals (1e18-scaled, wider than 64 bits) stay as references, with the account
 * addresses, which are shared strings anyway.
 *
 * Purity: trades are appended at ids above every id stored, so a version's visible slots never
 * change. Chunks are shared between versions; each records how many of its slots any version has
 * filled, and a version appends in place only when nobody has filled past its own end; otherwise
 * (another branch appended first) it copies the chunk's prefix. A version that appends into a
 * later chunk claims the rest of the chunk it leaves (its absent slots), so no branch fills
 * them. Rewrites of a visible trade (a bust marks it, a rebuild rewrites later legs) and removals
 * out of order go to a small persistent overlay; removals at the oldest end just move the head.
 *
 * @module
 */

import type { MarginMode, StoredTrade, TradeSource } from '../engine/types.js';
import type { EntryCursor } from '../persistent/cursor.js';
import { type Edit, newEdit } from '../persistent/edit.js';
import { IntMap } from '../persistent/int-map.js';
import { newStoredTrade } from './trades.js';

const SHIFT = 9;
const CHUNK = 1 << SHIFT;
const MASK = CHUNK - 1;

// Per-slot strides of the column arrays.
/** 64-bit fields, in this order (see `writeSlot`). */
const I64 = 18;
/** Numbers: market, time, orderId0, orderId1, openedTime0, openedTime1. */
const F64 = 6;
/** Codes: flags (1 present, 2 busted), source, mode0, mode1, liquidity0, liquidity1. */
const U8 = 6;
/** References: price, entryNotional0, entryNotional1, account0, account1. */
const REFS = 5;

const MIN_I64 = -(2n ** 63n);
const MAX_I64 = 2n ** 63n - 1n;

const SOURCES: readonly TradeSource[] = ['Order', 'Liquidation', 'Auction', 'ADL'];
const MODES: readonly MarginMode[] = ['Cross', 'Isolated'];
const LIQUIDITY: readonly ('Maker' | 'Taker')[] = ['Maker', 'Taker'];

function sourceCode(s: TradeSource): number {
  return s === 'Order' ? 0 : s === 'Liquidation' ? 1 : s === 'Auction' ? 2 : 3;
}

/** `CHUNK` consecutive trade ids, column by column. */
interface Chunk {
  /** Slots filled by any version: a version may write in place only from its own end on. */
  used: number;
  readonly i64: BigInt64Array;
  readonly f64: Float64Array;
  /** Per slot: bit `f` set when 64-bit field `f` did not fit and lives in {@link wide}. */
  readonly wideMask: Uint32Array;
  readonly u8: Uint8Array;
  readonly refs: unknown[];
  /** Values wider than 64 bits, by `slot * I64 + field`; `null` while there are none. */
  wide: Map<number, bigint> | null;
}

// One buffer per chunk, cut into its typed columns: one backing store to allocate and track
// instead of four. Offsets stay 8-byte aligned (the 64-bit columns come first).
const I64_BYTES = CHUNK * I64 * 8;
const F64_BYTES = CHUNK * F64 * 8;
const MASK_BYTES = CHUNK * 4;
const CHUNK_BYTES = I64_BYTES + F64_BYTES + MASK_BYTES + CHUNK * U8;

function newChunk(): Chunk {
  const buffer = new ArrayBuffer(CHUNK_BYTES);
  return {
    used: 0,
    i64: new BigInt64Array(buffer, 0, CHUNK * I64),
    f64: new Float64Array(buffer, I64_BYTES, CHUNK * F64),
    wideMask: new Uint32Array(buffer, I64_BYTES + F64_BYTES, CHUNK),
    u8: new Uint8Array(buffer, I64_BYTES + F64_BYTES + MASK_BYTES, CHUNK * U8),
    refs: new Array<unknown>(CHUNK * REFS).fill(null),
    wide: null,
  };
}

/** A new chunk holding the first `slots` slots of `c`. */
function copyPrefix(c: Chunk, slots: number): Chunk {
  const copy = newChunk();
  copy.used = slots;
  copy.i64.set(c.i64.subarray(0, slots * I64));
  copy.f64.set(c.f64.subarray(0, slots * F64));
  copy.u8.set(c.u8.subarray(0, slots * U8));
  copy.wideMask.set(c.wideMask.subarray(0, slots));
  for (let i = 0; i < slots * REFS; i++) copy.refs[i] = c.refs[i];
  if (c.wide !== null) {
    const wide = new Map<number, bigint>();
    for (const [k, v] of c.wide) if (k < slots * I64) wide.set(k, v);
    if (wide.size > 0) copy.wide = wide;
  }
  return copy;
}

/** Stores 64-bit field `field` of slot `slot`; returns its bit when it had to go wide. */
function put64(c: Chunk, slot: number, field: number, v: bigint): number {
  const k = slot * I64 + field;
  if (v >= MIN_I64 && v <= MAX_I64) {
    c.i64[k] = v;
    return 0;
  }
  c.i64[k] = 0n;
  if (c.wide === null) c.wide = new Map();
  c.wide.set(k, v);
  return 1 << field;
}

function get64(c: Chunk, slot: number, field: number, mask: number): bigint {
  const k = slot * I64 + field;
  return (mask & (1 << field)) === 0 ? (c.i64[k] as bigint) : (c.wide?.get(k) as bigint);
}

function writeSlot(c: Chunk, slot: number, t: StoredTrade): void {
  let mask = put64(c, slot, 0, t.quantity);
  mask |= put64(c, slot, 1, t.quote);
  mask |= put64(c, slot, 2, t.signedQty0);
  mask |= put64(c, slot, 3, t.fee0);
  mask |= put64(c, slot, 4, t.penalty0);
  mask |= put64(c, slot, 5, t.realizedPnl0);
  mask |= put64(c, slot, 6, t.size0);
  mask |= put64(c, slot, 7, t.entryQty0);
  mask |= put64(c, slot, 8, t.positionPnl0);
  mask |= put64(c, slot, 9, t.funding0);
  mask |= put64(c, slot, 10, t.signedQty1);
  mask |= put64(c, slot, 11, t.fee1);
  mask |= put64(c, slot, 12, t.penalty1);
  mask |= put64(c, slot, 13, t.realizedPnl1);
  mask |= put64(c, slot, 14, t.size1);
  mask |= put64(c, slot, 15, t.entryQty1);
  mask |= put64(c, slot, 16, t.positionPnl1);
  mask |= put64(c, slot, 17, t.funding1);
  c.wideMask[slot] = mask;
  const f = slot * F64;
  c.f64[f] = t.market;
  c.f64[f + 1] = t.time;
  c.f64[f + 2] = t.orderId0;
  c.f64[f + 3] = t.orderId1;
  c.f64[f + 4] = t.openedTime0;
  c.f64[f + 5] = t.openedTime1;
  const u = slot * U8;
  c.u8[u] = t.busted ? 3 : 1;
  c.u8[u + 1] = sourceCode(t.source);
  c.u8[u + 2] = t.mode0 === 'Cross' ? 0 : 1;
  c.u8[u + 3] = t.mode1 === 'Cross' ? 0 : 1;
  c.u8[u + 4] = t.liquidity0 === 'Maker' ? 0 : 1;
  c.u8[u + 5] = t.liquidity1 === 'Maker' ? 0 : 1;
  const r = slot * REFS;
  c.refs[r] = t.price;
  c.refs[r + 1] = t.entryNotional0;
  c.refs[r + 2] = t.entryNotional1;
  c.refs[r + 3] = t.account0;
  c.refs[r + 4] = t.account1;
}

/** A new record of slot `slot`. */
function readSlot(c: Chunk, slot: number, tradeId: number): StoredTrade {
  const mask = c.wideMask[slot] as number;
  const f = slot * F64;
  const u = slot * U8;
  const r = slot * REFS;
  const t = newStoredTrade(
    tradeId,
    c.f64[f] as number,
    c.f64[f + 1] as number,
    SOURCES[c.u8[u + 1] as number] as TradeSource,
    c.refs[r] as bigint,
    get64(c, slot, 0, mask),
    get64(c, slot, 1, mask),
  );
  t.busted = ((c.u8[u] as number) & 2) !== 0;
  t.account0 = c.refs[r + 3] as string;
  t.mode0 = MODES[c.u8[u + 2] as number] as MarginMode;
  t.orderId0 = c.f64[f + 2] as number;
  t.liquidity0 = LIQUIDITY[c.u8[u + 4] as number] as 'Maker' | 'Taker';
  t.signedQty0 = get64(c, slot, 2, mask);
  t.fee0 = get64(c, slot, 3, mask);
  t.penalty0 = get64(c, slot, 4, mask);
  t.realizedPnl0 = get64(c, slot, 5, mask);
  t.size0 = get64(c, slot, 6, mask);
  t.entryNotional0 = c.refs[r + 1] as bigint;
  t.entryQty0 = get64(c, slot, 7, mask);
  t.openedTime0 = c.f64[f + 4] as number;
  t.positionPnl0 = get64(c, slot, 8, mask);
  t.funding0 = get64(c, slot, 9, mask);
  t.account1 = c.refs[r + 4] as string;
  t.mode1 = MODES[c.u8[u + 3] as number] as MarginMode;
  t.orderId1 = c.f64[f + 3] as number;
  t.liquidity1 = LIQUIDITY[c.u8[u + 5] as number] as 'Maker' | 'Taker';
  t.signedQty1 = get64(c, slot, 10, mask);
  t.fee1 = get64(c, slot, 11, mask);
  t.penalty1 = get64(c, slot, 12, mask);
  t.realizedPnl1 = get64(c, slot, 13, mask);
  t.size1 = get64(c, slot, 14, mask);
  t.entryNotional1 = c.refs[r + 2] as bigint;
  t.entryQty1 = get64(c, slot, 15, mask);
  t.openedTime1 = c.f64[f + 5] as number;
  t.positionPnl1 = get64(c, slot, 16, mask);
  t.funding1 = get64(c, slot, 17, mask);
  return t;
}

/** An overlay entry: a rewritten trade, or `null` for one removed out of order. */
type Overlaid = StoredTrade | null;

/** Persistent trade log; see the module comment. */
export class TradeLog {
  /** @internal Chunks from the one holding `base` on. */
  chunks: Chunk[];
  /** @internal Trade id of slot 0 of `chunks[0]`, a multiple of the chunk size. */
  base: number;
  /** @internal Ids below it are gone. */
  head: number;
  /** @internal One past the largest id this version appended; ids from it on are absent. */
  end: number;
  /** Number of entries. */
  size: number;
  /** @internal Rewritten and out-of-order removed entries, by id. */
  overlay: IntMap<Overlaid>;
  /** @internal */
  edit: Edit | null;

  private constructor(
    chunks: Chunk[],
    base: number,
    head: number,
    end: number,
    size: number,
    overlay: IntMap<Overlaid>,
    edit: Edit | null,
  ) {
    this.chunks = chunks;
    this.base = base;
    this.head = head;
    this.end = end;
    this.size = size;
    this.overlay = overlay;
    this.edit = edit;
  }

  /** The empty log. */
  static empty(): TradeLog {
    return new TradeLog([], 0, 0, 0, 0, IntMap.empty(), null);
  }

  /** The log holding the entries of `map` (a decoded snapshot's), owned by nobody. */
  static fromEntries(entries: Iterable<readonly [number, StoredTrade]>): TradeLog {
    let log = TradeLog.empty();
    const edit = newEdit();
    for (const [id, t] of entries) log = log.set(edit, id, t);
    log.edit = null;
    return log;
  }

  /** This version, or a copy the session `edit` owns. */
  private writable(edit: Edit | null): TradeLog {
    if (edit !== null && this.edit === edit) return this;
    return new TradeLog(
      this.chunks.slice(),
      this.base,
      this.head,
      this.end,
      this.size,
      this.overlay,
      edit,
    );
  }

  /** Whether slot `id` holds a trade in the columns (ignoring the overlay). */
  private inColumns(id: number): boolean {
    const off = id - this.base;
    const c = this.chunks[Math.floor(off / CHUNK)];
    return c !== undefined && ((c.u8[(off & MASK) * U8] as number) & 1) === 1;
  }

  /** The trade with id `id`, or `undefined`. A new record on each call: do not keep it. */
  get(id: number): StoredTrade | undefined {
    if (!(id >= this.head && id < this.end) || !Number.isSafeInteger(id)) return undefined;
    if (this.overlay.size !== 0) {
      const o = this.overlay.get(id);
      if (o !== undefined) return o ?? undefined;
    }
    const off = id - this.base;
    const c = this.chunks[Math.floor(off / CHUNK)];
    const slot = off & MASK;
    if (c === undefined || ((c.u8[slot * U8] as number) & 1) === 0) return undefined;
    return readSlot(c, slot, id);
  }

  /** The time of trade `id` without building its record, or `undefined` when absent. */
  timeOf(id: number): number | undefined {
    if (!(id >= this.head && id < this.end) || !Number.isSafeInteger(id)) return undefined;
    if (this.overlay.size !== 0) {
      const o = this.overlay.get(id);
      if (o !== undefined) return o === null ? undefined : o.time;
    }
    const off = id - this.base;
    const c = this.chunks[Math.floor(off / CHUNK)];
    const slot = off & MASK;
    if (c === undefined || ((c.u8[slot * U8] as number) & 1) === 0) return undefined;
    return c.f64[slot * F64 + 1];
  }

  /** Whether `id` is present. */
  has(id: number): boolean {
    return this.timeOf(id) !== undefined;
  }

  /**
   * Stores `trade` under `id` (its `tradeId`). An id above every id stored is appended to the
   * columns; an id at or below the newest is written to the overlay (busts rewrite trades).
   */
  set(edit: Edit | null, id: number, trade: StoredTrade): TradeLog {
    if (!Number.isSafeInteger(id) || id < 0) throw new RangeError(`trade log id ${id}`);
    if (trade.tradeId !== id) throw new RangeError(`trade ${trade.tradeId} stored under ${id}`);
    if (id >= this.end) return this.append(edit, id, trade);
    if (id < this.head) throw new RangeError(`trade ${id} is older than the log's head`);
    const w = this.writable(edit);
    if (!this.has(id)) w.size++;
    w.overlay = w.overlay.set(edit, id, trade);
    return w;
  }

  private append(edit: Edit | null, id: number, trade: StoredTrade): TradeLog {
    const w = this.writable(edit);
    if (w.size === 0 && w.overlay.size === 0) {
      // Nothing visible: start the columns at this id.
      w.chunks = [];
      w.base = id - (id % CHUNK);
      w.head = id;
    }
    const off = id - w.base;
    const index = Math.floor(off / CHUNK);
    w.sealBefore(index);
    while (w.chunks.length <= index) w.chunks.push(newChunk());
    let c = w.chunks[index] as Chunk;
    const chunkStart = w.base + index * CHUNK;
    const ownEnd = Math.min(Math.max(w.end - chunkStart, 0), CHUNK);
    if (c.used > ownEnd) {
      // Another version appended past this one's end: the slots from there are not ours.
      c = copyPrefix(c, ownEnd);
      w.chunks[index] = c;
    }
    const slot = off & MASK;
    writeSlot(c, slot, trade);
    c.used = slot + 1;
    w.end = id + 1;
    w.size++;
    return w;
  }

  /**
   * Before this version appends in chunk `index`, past the chunk holding its newest slot: the
   * slots after that one become this version's (absent), and this version reads them, so no
   * other version may fill them in place any more. The chunk is marked full; if another branch
   * already filled past this version's end, this version first takes a copy of its own prefix.
   */
  private sealBefore(index: number): void {
    const last = this.end - 1 - this.base;
    if (last < 0) return; // nothing of this version in the columns
    const lastIndex = Math.floor(last / CHUNK);
    if (lastIndex >= index) return;
    let c = this.chunks[lastIndex];
    if (c === undefined) return;
    const ownEnd = (last & MASK) + 1;
    // Filled past this version's end, sealed or not: those slots are another branch's.
    if (c.used > ownEnd) {
      c = copyPrefix(c, ownEnd);
      this.chunks[lastIndex] = c;
    }
    c.used = CHUNK;
  }

  /** Removes `id` if present. */
  delete(edit: Edit | null, id: number): TradeLog {
    if (!this.has(id)) return this;
    const w = this.writable(edit);
    w.size--;
    if (id !== w.head) {
      w.overlay = w.overlay.set(edit, id, null);
      return w;
    }
    // The oldest: move the head past it and past every absent id after it.
    do {
      if (w.overlay.size !== 0) w.overlay = w.overlay.delete(edit, w.head);
      w.head++;
    } while (w.head < w.end && !w.has(w.head));
    if (w.size === 0) {
      w.chunks = [];
      w.base = w.head - (w.head % CHUNK);
      w.overlay = IntMap.empty();
      return w;
    }
    const spent = Math.floor((w.head - w.base) / CHUNK);
    if (spent > 0) {
      w.chunks.splice(0, spent);
      w.base += spent * CHUNK;
    }
    return w;
  }

  /** Calls `fn` for each entry in ascending id order. */
  forEach(fn: (trade: StoredTrade, id: number) => void): void {
    for (let id = this.head; id < this.end; id++) {
      const t = this.get(id);
      if (t !== undefined) fn(t, id);
    }
  }

  /** Ids in ascending order. */
  keys(): number[] {
    const out: number[] = [];
    for (let id = this.head; id < this.end; id++) if (this.has(id)) out.push(id);
    return out;
  }

  /** Entries in ascending id order. */
  entries(): [number, StoredTrade][] {
    const out: [number, StoredTrade][] = [];
    this.forEach((t, id) => {
      out.push([id, t]);
    });
    return out;
  }

  /** The entries in {@link forEach} order, one per `next()`, resumable; checked against `size`. */
  cursor(): EntryCursor {
    const log = this;
    let id = this.head;
    let seen = 0;
    const c: EntryCursor = {
      key: undefined,
      value: undefined,
      next() {
        while (id < log.end) {
          const at = id++;
          const t = log.get(at);
          if (t === undefined) continue;
          seen++;
          c.key = at;
          c.value = t;
          return true;
        }
        if (seen !== log.size) throw new Error(`trade log walk saw ${seen} of ${log.size}`);
        c.key = undefined;
        c.value = undefined;
        return false;
      },
    };
    return c;
  }

  /** @internal For tests: whether `id` sits in the columns rather than the overlay. */
  storedInColumns(id: number): boolean {
    return id >= this.head && id < this.end && this.inColumns(id) && !this.overlay.has(id);
  }
}
