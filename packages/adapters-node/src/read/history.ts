/**
 * The history read model behind `GET /historic/orders`, `GET /account/trades` and the deprecated
 * `GET /historic/trades` (research 6.7, adopted by protocol.md section 7). It is a projection of
 * committed execution reports, so replaying the journal rebuilds it exactly.
 *
 * @module
 */
import {
  accountOrders,
  type EngineEvent,
  type EngineState,
  type ExecutionReport,
  type OrderReport,
  type OrderView,
  orderAfterBust,
  type TradeBustReport,
  viewOf,
} from '@perp/core';
import type { CommittedBatch } from '../engine/host.js';
import {
  type SpecOf,
  specsOf,
  type WireOrder,
  type WireTrade,
  wireOrder,
  wireTrade,
} from '../wire/format.js';
import {
  Captures,
  CheckpointEntryError,
  type CheckpointPart,
  type PartRestorer,
  type ReadModelCapture,
} from './checkpoint.js';
import { type IndexedRows, RetainedList } from './retained-list.js';

/** A row of `GET /historic/orders`: the order's last snapshot. */
export interface OrderRecord extends WireOrder {
  closedTime: number | null;
}

/** A row of `GET /account/trades`. */
export interface TradeRecord extends WireTrade {
  execId: string;
  seq: number;
  orderId: string | null;
  cloid: string | null;
  market: number;
  marginMode: string;
  source: 'Order' | 'Liquidation' | 'ADL';
  busted: boolean;
  bustTime: number | null;
  bustReason: string | null;
}

/** Filters of the history reads. */
export interface HistoryQuery {
  instrument?: string | undefined;
  status?: 'open' | 'closed' | 'all' | undefined;
  orderId?: string | undefined;
  cloid?: string | undefined;
  /** Inclusive, ms; on the paging key's time (orders: `createdTime`, trades: `time`). */
  startTime?: number | undefined;
  /** Exclusive, ms; as `startTime`. */
  endTime?: number | undefined;
  limit?: number | undefined;
  /** A `nextCursor` of the same read (check it first with {@link isValidCursor}). */
  cursor?: string | undefined;
}

/** A page of rows, newest first. */
export interface Page<T> {
  rows: T[];
  nextCursor: string | null;
}

const TERMINAL = new Set(['Filled', 'Cancelled', 'Expired', 'Rejected']);
const WEEK_MS = 7 * 86_400_000;

interface AccountHistory {
  orders: Map<string, OrderRecord>;
  /**
   * The engine's last snapshot of each listed order, raw (exact cumQty and filled notional): a
   * bust of a fill of an order that already ended is applied to it (see `bustEndedOrder`).
   */
  views: Map<string, OrderView>;
  /** Closed order ids in closing order, for bounded retention. */
  closed: RetainedList<string>;
  trades: RetainedList<TradeRecord>;
  /**
   * Whether {@link trades} is in ascending (time, execId) order, as fills arrive: a read then
   * walks back from its window's end instead of sorting every row. (Kept as a flag rather than
   * assumed, so a row out of order can only cost speed.)
   */
  tradesInOrder: boolean;
  /** Whether {@link orders} was filled in ascending (createdTime, orderId) order; as trades. */
  ordersInOrder: boolean;
  /** The key of the order added last (to keep {@link ordersInOrder}). */
  lastOrderKey: PageKey | null;
}

/** Which read a cursor pages: a cursor of one is refused by the other. */
export type CursorKind = 'orders' | 'trades';

/** The paging key of a row: an immutable time and a u64 id (decimal). */
interface PageKey {
  t: number;
  id: string;
}

const CURSOR_TAG: Readonly<Record<CursorKind, string>> = { orders: 'o', trades: 't' };
const CURSOR_RE = /^([ot]):(0|[1-9]\d{0,15}):(0|[1-9]\d{0,19})$/;

function encodeCursor(kind: CursorKind, k: PageKey): string {
  return Buffer.from(`${CURSOR_TAG[kind]}:${k.t}:${k.id}`).toString('base64url');
}

/** The key a cursor resumes after, or `undefined` when it is not one this read issued. */
function decodeCursor(kind: CursorKind, cursor: string): PageKey | undefined {
  const m = CURSOR_RE.exec(Buffer.from(cursor, 'base64url').toString('latin1'));
  if (m === null || m[1] !== CURSOR_TAG[kind]) return undefined;
  const key = { t: Number(m[2]), id: m[3] as string };
  // Base64url decoding skips stray characters: only the exact text this read issued is valid.
  if (!Number.isSafeInteger(key.t) || encodeCursor(kind, key) !== cursor) return undefined;
  return key;
}

/** Whether `cursor` is a `nextCursor` that the `kind` read could have issued. */
export function isValidCursor(kind: CursorKind, cursor: string): boolean {
  return decodeCursor(kind, cursor) !== undefined;
}

/** Compares (time, numeric id) descending: newest first. */
function newerFirst(a: PageKey, b: PageKey): number {
  if (a.t !== b.t) return b.t - a.t;
  const x = BigInt(a.id);
  const y = BigInt(b.id);
  return x === y ? 0 : x < y ? 1 : -1;
}

/** Rows per checkpoint entry (closed ids: eight times as many), so no entry holds a slice long. */
const HISTORY_CHUNK = 1_024;
/** The kinds of a history checkpoint entry, in the order an account's chunks come. */
const KINDS = ['orders', 'closed', 'trades'] as const;

/** An account with no rows yet. */
function emptyAccount(): AccountHistory {
  return {
    orders: new Map(),
    views: new Map(),
    closed: new RetainedList(),
    trades: new RetainedList(),
    tradesInOrder: true,
    ordersInOrder: true,
    lastOrderKey: null,
  };
}

/** An account's rows that later changes leave alone (rows are replaced, never changed). */
function copyAccount(h: AccountHistory): AccountHistory {
  return {
    orders: new Map(h.orders),
    views: new Map(h.views),
    closed: h.closed.copy(),
    trades: h.trades.copy(),
    tradesInOrder: h.tradesInOrder,
    ordersInOrder: h.ordersInOrder,
    lastOrderKey: h.lastOrderKey,
  };
}

/** In-memory history per account, fed by committed batches. */
export class HistoryStore {
  private readonly accounts = new Map<string, AccountHistory>();
  private readonly maxClosed: number;
  private readonly maxTrades: number;
  /** The checkpoint capture in progress, if any (see `checkpoint.ts`). */
  private readonly captures = new Captures<string, AccountHistory>(copyAccount);
  /** A restore's current account and the last kind of its chunks (see `restoreChunk`). */
  private restoring: { account: string; order: number } | null = null;

  constructor(options: { maxClosedOrders?: number; maxTrades?: number } = {}) {
    // Whole rows: a fractional limit (a computed one) keeps the rows below it.
    this.maxClosed = Math.max(0, Math.floor(options.maxClosedOrders ?? 10_000));
    this.maxTrades = Math.max(0, Math.floor(options.maxTrades ?? 50_000));
  }

  /**
   * Lists the working orders of a state recovery started from (a snapshot): their reports are
   * before the snapshot and are not replayed, but open orders must still be listed.
   */
  seedWorkingOrders(state: EngineState): void {
    const specOf = specsOf(state);
    state.accounts.forEach((acct) => {
      if (acct.orders.size === 0) return;
      const h = this.account(acct.address);
      const rows = accountOrders(state, acct).map((o) => {
        const wire = wireOrder(o, specOf(o.market));
        // A snapshot, not the engine's record (no internal fields; no old state kept alive).
        return { row: { ...wire, closedTime: null }, view: viewOf(o) };
      });
      // In creation order, as a replay would have listed them (reads page without sorting).
      rows.sort((a, b) => newerFirst(keyOfOrder(b.row), keyOfOrder(a.row)));
      for (const { row, view } of rows) this.setOrder(h, row, view);
    });
  }

  /** An empty store with the same retention limits (a history backfill builds one). */
  emptyCopy(): HistoryStore {
    return new HistoryStore({ maxClosedOrders: this.maxClosed, maxTrades: this.maxTrades });
  }

  /**
   * Replaces every row of this store with `other`'s (which must have seen every batch this one
   * saw, and the history before it: see `backfill.ts`). Rows seeded by {@link seedWorkingOrders}
   * go with the rest, so nothing is listed twice.
   */
  adopt(other: HistoryStore): void {
    // A capture in progress keeps describing the rows it started with.
    for (const [address, h] of this.accounts) this.captures.beforeChange(address, h);
    this.accounts.clear();
    for (const [address, h] of other.accounts) this.accounts.set(address, h);
  }

  /**
   * The history as a checkpoint part (`checkpoint.ts`). An entry is a chunk of one account's
   * rows: `[address, 'orders', [[row, view], ...]]`, `[address, 'closed', ids]` or
   * `[address, 'trades', rows]`, an account's chunks together and in that order.
   */
  checkpoint(): CheckpointPart {
    return {
      name: 'history',
      version: 1,
      capture: () => this.capture(),
      restorer: () => {
        const restored = this.emptyCopy();
        return {
          add: (entry) => restored.restoreChunk(entry),
          apply: (batch) => restored.apply(batch),
          commit: () => this.adopt(restored),
        } satisfies PartRestorer;
      },
    };
  }

  private capture(): ReadModelCapture {
    const capture = this.captures.start(this.accounts.keys(), (a) => this.accounts.get(a));
    return {
      *entries() {
        for (const [address, rows] of capture.rows()) {
          // Rows yielded live hold only until the next turn: a large account is copied first,
          // so its chunks, written across turns, all describe the capture's turn.
          const large = rows.orders.size > HISTORY_CHUNK || rows.trades.length > HISTORY_CHUNK;
          const h = large ? copyAccount(rows) : rows;
          let orders: [OrderRecord, OrderView][] = [];
          for (const [id, row] of h.orders) {
            orders.push([row, h.views.get(id) as OrderView]);
            if (orders.length === HISTORY_CHUNK) {
              yield [address, 'orders', orders];
              orders = [];
            }
          }
          if (orders.length > 0) yield [address, 'orders', orders];
          for (let i = 0; i < h.closed.length; i += HISTORY_CHUNK * 8)
            yield [address, 'closed', h.closed.slice(i, i + HISTORY_CHUNK * 8)];
          for (let i = 0; i < h.trades.length; i += HISTORY_CHUNK)
            yield [address, 'trades', h.trades.slice(i, i + HISTORY_CHUNK)];
        }
      },
      release: () => capture.release(),
    };
  }

  /**
   * Adds a chunk of an account's rows from a checkpoint entry (see {@link checkpoint}): an
   * account's chunks come together, orders before closed ids before trades.
   */
  private restoreChunk(entry: unknown): void {
    const bad = (detail: string): never => {
      throw new CheckpointEntryError('history', detail);
    };
    if (!Array.isArray(entry) || entry.length !== 3 || !Array.isArray(entry[2]))
      bad('an entry is not [address, orders | closed | trades, rows]');
    const [address, kind, rows] = entry as [unknown, unknown, unknown[]];
    if (typeof address !== 'string' || !/^0x[0-9a-f]{40}$/.test(address))
      bad(`${String(address)} is not an account address`);
    const account = address as string;
    const order = KINDS.indexOf(kind as (typeof KINDS)[number]);
    if (order < 0) bad(`account ${account}: ${String(kind)} is not orders, closed or trades`);
    let h = this.accounts.get(account);
    if (h === undefined) {
      h = emptyAccount();
      this.accounts.set(account, h);
    } else if (this.restoring?.account !== account) bad(`account ${account} appears twice`);
    else if (order < this.restoring.order)
      bad(`account ${account}: ${String(kind)} after ${KINDS[this.restoring.order]}`);
    this.restoring = { account, order };
    if (kind === 'orders') {
      for (const pair of rows) {
        const [row, view] = Array.isArray(pair) ? (pair as unknown[]) : [];
        if (!isRecord(row) || !isRecord(view) || typeof row.orderId !== 'string')
          bad(`account ${account}: an order is not [row, view]`);
        const r = row as unknown as OrderRecord;
        const v = view as unknown as OrderView;
        if (
          String(v.orderId) !== r.orderId ||
          typeof r.createdTime !== 'number' ||
          (r.closedTime !== null && typeof r.closedTime !== 'number')
        )
          bad(`account ${account}: order ${r.orderId} has a row and view that disagree`);
        if (h.orders.has(r.orderId)) bad(`account ${account}: order ${r.orderId} appears twice`);
        this.setOrder(h, r, v);
      }
    } else if (kind === 'closed') {
      for (const id of rows) {
        const row = typeof id === 'string' ? h.orders.get(id) : undefined;
        if (row === undefined || row.closedTime === null)
          bad(`account ${account}: closed id ${String(id)} is not a closed order of the account`);
        h.closed.push(id as string);
      }
    } else {
      for (const t of rows) {
        if (!isRecord(t) || typeof t.tradeId !== 'string' || typeof t.time !== 'number')
          bad(`account ${account}: a trade row is malformed`);
        this.pushTrade(h, t as unknown as TradeRecord);
      }
    }
  }

  /** Applies a committed batch. */
  apply(batch: CommittedBatch): void {
    const specOf = specsOf(batch.state);
    for (const events of batch.events) for (const e of events) this.applyEvent(e, specOf);
  }

  /** An account's rows, about to be changed. */
  private account(address: string): AccountHistory {
    let h = this.accounts.get(address);
    this.captures.beforeChange(address, h);
    if (h === undefined) {
      h = emptyAccount();
      this.accounts.set(address, h);
    }
    return h;
  }

  private applyEvent(e: EngineEvent, specOf: SpecOf): void {
    if (e.type === 'tradeBusted') {
      // Busted trades stay in the history, flagged (interface-spec: "including busted trades").
      for (const account of e.accounts)
        this.markBusted(account, String(e.tradeId), e.time, e.reason);
      return;
    }
    if (e.type !== 'executionReport') return;
    if (e.kind === 'TradeBust') {
      if (e.workingOrder !== undefined) this.applyOrder(e.account, e.workingOrder, e.time, specOf);
      else if (e.orderId !== 0) this.bustEndedOrder(e, specOf);
      return;
    }
    if (
      e.kind === 'Liquidation' ||
      e.kind === 'ADL' ||
      (e.kind === 'LiquidationClaim' && e.fill !== undefined)
    ) {
      const fill = e.fill!;
      const spec = specOf(e.market);
      this.addSystemTrade(e.account, {
        ...wireTrade(fill, spec),
        execId: String(e.execId),
        seq: e.seq,
        orderId: null,
        cloid: null,
        market: e.market,
        marginMode: e.kind === 'LiquidationClaim' ? 'Cross' : e.marginMode,
        source: e.kind === 'ADL' ? 'ADL' : 'Liquidation',
        busted: false,
        bustTime: null,
        bustReason: null,
      });
      return;
    }
    if (!('order' in e)) return;
    const report = e as OrderReport;
    const spec = specOf(report.order.market);
    const h = this.account(report.account);
    const wire = this.applyOrder(report.account, report.order, report.time, specOf);
    if ('fill' in report && report.fill !== undefined) {
      const t = wireTrade(report.fill, spec);
      this.pushTrade(h, {
        ...t,
        execId: String(report.execId),
        seq: report.seq,
        orderId: wire.orderId,
        cloid: wire.cloid,
        market: report.order.market,
        marginMode: report.order.marginMode,
        source: 'Order',
        busted: false,
        bustTime: null,
        bustReason: null,
      });
    }
  }

  /** Updates an order's row (and the closed list when it just ended); returns its wire form. */
  private applyOrder(account: string, order: OrderView, time: number, specOf: SpecOf): WireOrder {
    const h = this.account(account);
    const wire = wireOrder(order, specOf(order.market));
    const closed = TERMINAL.has(wire.ordStatus);
    const existing = h.orders.get(wire.orderId);
    this.setOrder(h, { ...wire, closedTime: closed ? time : null }, order);
    if (closed && (existing === undefined || existing.closedTime === null)) {
      h.closed.push(wire.orderId);
      if (h.closed.length > this.maxClosed) {
        const evicted = h.closed.at(0) as string;
        h.closed.dropOldest(1);
        h.orders.delete(evicted);
        h.views.delete(evicted);
      }
    }
    return wire;
  }

  /**
   * A fill of an order that is no longer working was busted (engine-rules section 8: "the
   * order's cumQty drops"). The core updates only working orders, so the row is recomputed here
   * from the order's last snapshot with the core's own rule (`orderAfterBust`). `updatedTime` is the bust's time;
   * `closedTime` stays. An order unknown here (ended before a snapshot this history starts
   * from, or dropped by retention) is left alone.
   */
  private bustEndedOrder(e: TradeBustReport, specOf: SpecOf): void {
    const h = this.accounts.get(e.account);
    this.captures.beforeChange(e.account, h);
    const id = String(e.orderId);
    const row = h?.orders.get(id);
    const view = h?.views.get(id);
    if (h === undefined || row === undefined || view === undefined || row.closedTime === null)
      return;
    const qty = e.fill.quantity;
    if (qty <= 0n || qty > view.cumQty) return;
    const next: OrderView = {
      ...view,
      ...orderAfterBust(view, qty, e.fill.price),
      updatedTime: e.time,
    };
    h.views.set(id, next);
    h.orders.set(id, { ...wireOrder(next, specOf(next.market)), closedTime: row.closedTime });
  }

  /** Marks a trade of an account busted (trade busts arrive as their own reports). */
  markBusted(account: string, tradeId: string, time: number, reason: string): void {
    const h = this.accounts.get(account);
    if (h === undefined) return;
    this.captures.beforeChange(account, h);
    const { trades } = h;
    for (let i = 0; i < trades.length; i++) {
      const t = trades.at(i) as TradeRecord;
      // Replaced, not changed: a checkpoint capture may still hold the row as it was.
      if (t.tradeId === tradeId)
        trades.replace(i, { ...t, busted: true, bustTime: time, bustReason: reason });
    }
  }

  /** Adds a fill that no order produced (liquidation, ADL). */
  addSystemTrade(account: string, row: TradeRecord): void {
    this.pushTrade(this.account(account), row);
  }

  /** Sets an order's row and view; a new order goes after the others (see `ordersInOrder`). */
  private setOrder(h: AccountHistory, row: OrderRecord, view: OrderView): void {
    if (!h.orders.has(row.orderId)) {
      const key = keyOfOrder(row);
      if (h.lastOrderKey !== null && newerFirst(h.lastOrderKey, key) < 0) h.ordersInOrder = false;
      h.lastOrderKey = key;
    }
    h.orders.set(row.orderId, row);
    h.views.set(row.orderId, view);
  }

  /** Appends a trade row, the oldest dropped past the retention. */
  private pushTrade(h: AccountHistory, row: TradeRecord): void {
    const last = h.trades.at(-1);
    if (last !== undefined && newerFirst(keyOfTrade(last), keyOfTrade(row)) < 0)
      h.tradesInOrder = false;
    h.trades.push(row);
    if (h.trades.length > this.maxTrades) h.trades.dropOldest(h.trades.length - this.maxTrades);
  }

  /** `GET /historic/orders`. */
  orders(account: string, q: HistoryQuery, now: number): Page<OrderRecord> {
    const h = this.accounts.get(account);
    if (h === undefined) return { rows: [], nextCursor: null };
    const status = q.status ?? 'all';
    const wanted = (o: OrderRecord) =>
      (q.instrument === undefined || o.instrument === q.instrument) &&
      (q.orderId === undefined || o.orderId === q.orderId) &&
      (q.cloid === undefined || o.cloid === q.cloid) &&
      (status === 'all' || (status === 'open') === (o.closedTime === null));
    // Paged by creation time and order id, which never change: an order updated while a client
    // pages (filled, cancelled, busted) keeps its place and is neither skipped nor repeated.
    // The open view has no default window: a GTC order placed weeks ago is still working, and a
    // client rebuilding its state (after resyncRequired) must see it. Nor has a lookup by id.
    const window = status === 'open' || isLookup(q) ? sinceEver(q) : q;
    const rows = [...h.orders.values()];
    if (h.ordersInOrder) return pageInOrder('orders', rows, keyOfOrder, wanted, window, now);
    return page('orders', rows.filter(wanted), keyOfOrder, window, now);
  }

  /** `GET /account/trades` (busted trades included, flagged). */
  trades(account: string, q: HistoryQuery, now: number): Page<TradeRecord> {
    const h = this.accounts.get(account);
    if (h === undefined) return { rows: [], nextCursor: null };
    const wanted = (t: TradeRecord) =>
      (q.instrument === undefined || t.instrument === q.instrument) &&
      (q.orderId === undefined || t.orderId === q.orderId) &&
      (q.cloid === undefined || t.cloid === q.cloid);
    // Fill time and execId never change (a bust only flags the row).
    const window = isLookup(q) ? sinceEver(q) : q;
    if (h.tradesInOrder) return pageInOrder('trades', h.trades, keyOfTrade, wanted, window, now);
    return page('trades', h.trades.filter(wanted), keyOfTrade, window, now);
  }
}

/**
 * Whether a read names its order (`orderId` or `cloid`): the client asks for that order however
 * old it is, so the default 7-day window does not apply (an explicit `startTime` still does).
 */
function isLookup(q: HistoryQuery): boolean {
  return q.orderId !== undefined || q.cloid !== undefined;
}

/** `q` without the default window: from the beginning unless it gives a `startTime`. */
function sinceEver(q: HistoryQuery): HistoryQuery {
  return q.startTime === undefined ? { ...q, startTime: 0 } : q;
}

/**
 * A read's window (`start` inclusive, `end` exclusive; the last 7 days by default), page size
 * and the key its cursor resumes after; throws on a cursor this read did not issue.
 */
function boundsOf(
  kind: CursorKind,
  q: HistoryQuery,
  now: number,
): { start: number; end: number; limit: number; after: PageKey | undefined } {
  const end = q.endTime ?? now + 1;
  const start = q.startTime ?? end - WEEK_MS;
  const limit = q.limit ?? 100;
  const after =
    q.cursor === undefined || q.cursor === '' ? undefined : decodeCursor(kind, q.cursor);
  if (after === undefined && q.cursor !== undefined && q.cursor !== '')
    throw new RangeError(`cursor ${q.cursor} was not issued by the ${kind} read`);
  return { start, end, limit, after };
}

/**
 * One page, newest first by `key`, which must be immutable for paging to be stable: the cursor
 * holds the last key served, and the next page starts strictly after it. The time window
 * applies to the key's time.
 */
export function page<T>(
  kind: CursorKind,
  rows: T[],
  key: (row: T) => PageKey,
  q: HistoryQuery,
  now: number,
): Page<T> {
  const { start, end, limit, after } = boundsOf(kind, q, now);
  const selected = rows
    .map((r) => ({ r, k: key(r) }))
    .filter(({ k }) => k.t >= start && k.t < end)
    .filter(({ k }) => after === undefined || newerFirst(after, k) < 0)
    .sort((a, b) => newerFirst(a.k, b.k));
  const out = selected.slice(0, limit);
  const last = out[out.length - 1];
  const nextCursor =
    selected.length > limit && last !== undefined ? encodeCursor(kind, last.k) : null;
  return { rows: out.map((x) => x.r), nextCursor };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The paging key of an order row. */
function keyOfOrder(o: OrderRecord): PageKey {
  return { t: o.createdTime, id: o.orderId };
}

/** The paging key of a trade row. */
function keyOfTrade(t: TradeRecord): PageKey {
  return { t: t.time, id: t.execId };
}

/**
 * {@link page} of rows already in ascending key order: a binary search finds the newest row the
 * window and the cursor allow, and the walk back stops once it has a page (or leaves the
 * window), so a read costs its page, not the account's every row.
 */
export function pageInOrder<T>(
  kind: CursorKind,
  rows: IndexedRows<T>,
  key: (row: T) => PageKey,
  wanted: (row: T) => boolean,
  q: HistoryQuery,
  now: number,
): Page<T> {
  const { start, end, limit, after } = boundsOf(kind, q, now);
  // The first row past the window's end, then the first row not older than the cursor.
  let top = firstIndex(rows, (r) => key(r).t >= end);
  if (after !== undefined)
    top = Math.min(
      top,
      firstIndex(rows, (r) => newerFirst(after, key(r)) >= 0),
    );
  const out: T[] = [];
  let more = false;
  for (let i = top - 1; i >= 0; i--) {
    const r = rows.at(i) as T;
    if (key(r).t < start) break;
    if (!wanted(r)) continue;
    if (out.length === limit) {
      more = true;
      break;
    }
    out.push(r);
  }
  const last = out[out.length - 1];
  return {
    rows: out,
    nextCursor: more && last !== undefined ? encodeCursor(kind, key(last)) : null,
  };
}

/** The first index whose row satisfies `past` (a predicate false then true along `rows`). */
function firstIndex<T>(rows: IndexedRows<T>, past: (row: T) => boolean): number {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (past(rows.at(mid) as T)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** Whether a report carries an order (helper for listeners). */
export function isOrderReport(e: ExecutionReport): e is OrderReport {
  return 'order' in e;
}
