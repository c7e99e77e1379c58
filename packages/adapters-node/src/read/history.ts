/**
 * The history read model behind `GET /historic/orders`, `GET /account/trades` and the deprecated
 * `GET /historic/trades` (research 6.7, adopted by protocol.md section 7), and behind our funding
 * reads, `GET /account/funding` (an account's `Funding` reports) and `GET /funding` (a market's
 * settlements, from the core's `fundingSettled` events; docs/protocol-decisions.md). It is a
 * projection of committed events, so replaying the journal rebuilds it exactly.
 *
 * @module
 */
import {
  accountOrders,
  type Command,
  type EngineEvent,
  type EngineState,
  type ExecutionReport,
  type FundingReport,
  type FundingSettlement,
  formatCollateral,
  formatDecimal,
  formatPrice,
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

/**
 * Who settled a funding payment: the hourly schedule (engine-rules section 6), or the operator's
 * settle-now (`POST /admin/funding/settle`), which pays at the command time.
 */
export type FundingSource = 'Scheduled' | 'Operator';

/** A row of `GET /account/funding`: one `Funding` execution report of the account. */
export interface FundingRecord {
  execId: string;
  seq: number;
  instrument: string;
  market: number;
  marginMode: string;
  /** The funding time paid for (the operator's settle-now: its command time), ms. */
  fundingTime: number;
  /** When it was paid (a funding time missed while the venue was down is paid later), ms. */
  time: number;
  positionSize: string;
  fundingRate: string;
  indexPrice: string;
  markPrice: string | null;
  /** Collateral, signed: negative paid, positive received. */
  payment: string;
  source: FundingSource;
}

/** A row of `GET /funding`: one funding settlement of a market. */
export interface SettlementRecord {
  fundingTime: number;
  /** The rate paid per position (positive: longs pay), for the period settled. */
  fundingRate: string;
  /** The average premium of the period's samples (0 without samples). */
  premium: string;
  /** Premium samples the average took. */
  samples: number;
  /** The index the payments used; `null` before the market's first oracle (nothing paid). */
  indexPrice: string | null;
  source: FundingSource;
}

/** The window and size of a `GET /funding` read (`startTime`, `endTime` inclusive). */
export interface SettlementQuery {
  startTime?: number | undefined;
  endTime?: number | undefined;
  limit?: number | undefined;
}

/** Filters of the history reads. */
export interface HistoryQuery {
  instrument?: string | undefined;
  status?: 'open' | 'closed' | 'all' | undefined;
  orderId?: string | undefined;
  cloid?: string | undefined;
  /**
   * Inclusive, ms; on the paging key's time (orders: `createdTime`, trades: `time`, funding:
   * `fundingTime`).
   */
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
  /** The account's funding payments, as they were paid. */
  funding: RetainedList<FundingRecord>;
  /** Whether {@link funding} is in ascending (fundingTime, execId) order; as trades. */
  fundingInOrder: boolean;
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
export type CursorKind = 'orders' | 'trades' | 'funding';

/** The paging key of a row: an immutable time and a u64 id (decimal). */
interface PageKey {
  t: number;
  id: string;
}

const CURSOR_TAG: Readonly<Record<CursorKind, string>> = { orders: 'o', trades: 't', funding: 'f' };
const CURSOR_RE = /^([otf]):(0|[1-9]\d{0,15}):(0|[1-9]\d{0,19})$/;

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
const KINDS = ['orders', 'closed', 'trades', 'funding'] as const;
/** The kind of a market's settlements entry (after every account's). */
const SETTLEMENTS = 'settlements';

/** An account with no rows yet. */
function emptyAccount(): AccountHistory {
  return {
    orders: new Map(),
    views: new Map(),
    closed: new RetainedList(),
    trades: new RetainedList(),
    funding: new RetainedList(),
    fundingInOrder: true,
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
    funding: h.funding.copy(),
    fundingInOrder: h.fundingInOrder,
    tradesInOrder: h.tradesInOrder,
    ordersInOrder: h.ordersInOrder,
    lastOrderKey: h.lastOrderKey,
  };
}

/** A market's settlements, oldest first. */
interface MarketFunding {
  rows: RetainedList<SettlementRecord>;
  /** Whether {@link rows} is in ascending fundingTime order (a read then binary-searches). */
  inOrder: boolean;
}

/** Retention limits of a {@link HistoryStore} (whole rows; the oldest go first). */
export interface HistoryLimits {
  /** Closed orders kept per account (working orders are always kept). */
  maxClosedOrders?: number;
  /** Trade rows kept per account. */
  maxTrades?: number;
  /** Funding payments kept per account. */
  maxFundingPayments?: number;
  /** Funding settlements kept per market (10,000: over a year of hourly funding). */
  maxSettlements?: number;
}

/** In-memory history per account, fed by committed batches. */
export class HistoryStore {
  private readonly accounts = new Map<string, AccountHistory>();
  /** Funding settlements by market id. */
  private readonly markets = new Map<number, MarketFunding>();
  private readonly maxClosed: number;
  private readonly maxTrades: number;
  private readonly maxFunding: number;
  private readonly maxSettlements: number;
  /** The checkpoint capture in progress, if any (see `checkpoint.ts`). */
  private readonly captures = new Captures<string, AccountHistory>(copyAccount);
  /** The same for the markets' settlements. */
  private readonly marketCaptures = new Captures<number, MarketFunding>((m) => ({
    rows: m.rows.copy(),
    inOrder: m.inOrder,
  }));
  /** A restore's current account and the last kind of its chunks (see `restoreChunk`). */
  private restoring: { account: string; order: number } | null = null;
  /** A restore's current market (its settlement chunks come together, after every account's). */
  private restoringMarket: number | null = null;

  constructor(options: HistoryLimits = {}) {
    // Whole rows: a fractional limit (a computed one) keeps the rows below it.
    this.maxClosed = Math.max(0, Math.floor(options.maxClosedOrders ?? 10_000));
    this.maxTrades = Math.max(0, Math.floor(options.maxTrades ?? 50_000));
    this.maxFunding = Math.max(0, Math.floor(options.maxFundingPayments ?? 50_000));
    this.maxSettlements = Math.max(0, Math.floor(options.maxSettlements ?? 10_000));
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
    return new HistoryStore({
      maxClosedOrders: this.maxClosed,
      maxTrades: this.maxTrades,
      maxFundingPayments: this.maxFunding,
      maxSettlements: this.maxSettlements,
    });
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
    for (const [market, m] of this.markets) this.marketCaptures.beforeChange(market, m);
    this.markets.clear();
    for (const [market, m] of other.markets) this.markets.set(market, m);
  }

  /**
   * The history as a checkpoint part (`checkpoint.ts`). An entry is a chunk of one account's
   * rows: `[address, 'orders', [[row, view], ...]]`, `[address, 'closed', ids]`,
   * `[address, 'trades', rows]` or `[address, 'funding', rows]`, an account's chunks together and
   * in that order; then, after every account's, a chunk of one market's funding settlements,
   * `[market id, 'settlements', rows]`, a market's chunks together. Version 2 added the funding
   * rows and the settlements.
   */
  checkpoint(): CheckpointPart {
    return {
      name: 'history',
      version: 2,
      // Version 2 added the funding rows: a version 1 checkpoint is version 2 without them.
      reads: [1],
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
    const markets = this.marketCaptures.start(this.markets.keys(), (m) => this.markets.get(m));
    return {
      *entries() {
        for (const [address, rows] of capture.rows()) {
          // Rows yielded live hold only until the next turn: an account written as more than
          // one entry (a large one's chunks, or any one's orders, closed ids, trades and funding,
          // each its own entry) is copied first, so its entries, written across turns, all
          // describe the capture's turn. (A batch between an account's orders and its trades
          // once put a later fill in the checkpoint, listed twice after a restart from it.)
          const parts =
            (rows.orders.size > 0 ? 1 : 0) +
            (rows.closed.length > 0 ? 1 : 0) +
            (rows.trades.length > 0 ? 1 : 0) +
            (rows.funding.length > 0 ? 1 : 0);
          const large =
            rows.orders.size > HISTORY_CHUNK ||
            rows.trades.length > HISTORY_CHUNK ||
            rows.funding.length > HISTORY_CHUNK ||
            rows.closed.length > HISTORY_CHUNK * 8;
          const h = large || parts > 1 ? copyAccount(rows) : rows;
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
          for (let i = 0; i < h.funding.length; i += HISTORY_CHUNK)
            yield [address, 'funding', h.funding.slice(i, i + HISTORY_CHUNK)];
        }
        for (const [market, m] of markets.rows()) {
          // As a large account: copied first when its chunks span turns.
          const rows = m.rows.length > HISTORY_CHUNK ? m.rows.copy() : m.rows;
          for (let i = 0; i < rows.length; i += HISTORY_CHUNK)
            yield [market, SETTLEMENTS, rows.slice(i, i + HISTORY_CHUNK)];
        }
      },
      release: () => {
        capture.release();
        markets.release();
      },
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
      bad(
        'an entry is not [address, orders | closed | trades | funding, rows] or [market, settlements, rows]',
      );
    const [address, kind, rows] = entry as [unknown, unknown, unknown[]];
    if (kind === SETTLEMENTS) return this.restoreSettlements(address, rows, bad);
    // Every account's chunks come before the first market's.
    if (this.restoringMarket !== null) bad(`account ${String(address)} after the settlements`);
    if (typeof address !== 'string' || !/^0x[0-9a-f]{40}$/.test(address))
      bad(`${String(address)} is not an account address`);
    const account = address as string;
    const order = KINDS.indexOf(kind as (typeof KINDS)[number]);
    if (order < 0)
      bad(`account ${account}: ${String(kind)} is not orders, closed, trades or funding`);
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
    } else if (kind === 'trades') {
      for (const t of rows) {
        if (!isRecord(t) || typeof t.tradeId !== 'string' || typeof t.time !== 'number')
          bad(`account ${account}: a trade row is malformed`);
        this.pushTrade(h, t as unknown as TradeRecord);
      }
    } else {
      for (const f of rows) {
        if (
          !isRecord(f) ||
          typeof f.execId !== 'string' ||
          !/^(0|[1-9]\d{0,19})$/.test(f.execId) ||
          !Number.isSafeInteger(f.fundingTime) ||
          typeof f.instrument !== 'string' ||
          typeof f.payment !== 'string'
        )
          bad(`account ${account}: a funding row is malformed`);
        this.pushFunding(h, f as unknown as FundingRecord);
      }
    }
  }

  /** Adds a chunk of a market's settlements from a checkpoint entry (see {@link checkpoint}). */
  private restoreSettlements(market: unknown, rows: unknown[], bad: (d: string) => never): void {
    if (typeof market !== 'number' || !Number.isSafeInteger(market) || market < 0)
      bad(`${String(market)} is not a market id`);
    const id = market as number;
    if (this.markets.has(id) && this.restoringMarket !== id) bad(`market ${id} appears twice`);
    this.restoringMarket = id;
    for (const r of rows) {
      if (
        !isRecord(r) ||
        !Number.isSafeInteger(r.fundingTime) ||
        typeof r.fundingRate !== 'string' ||
        (r.source !== 'Scheduled' && r.source !== 'Operator')
      )
        bad(`market ${id}: a settlement row is malformed`);
      this.pushSettlement(this.marketFunding(id), r as unknown as SettlementRecord);
    }
  }

  /** Applies a committed batch. */
  apply(batch: CommittedBatch): void {
    const specOf = specsOf(batch.state);
    batch.events.forEach((events, i) => {
      const operator = operatorFunding(batch.commands[i], events);
      for (const e of events) this.applyEvent(e, specOf, operator);
    });
  }

  /** A market's settlements, about to be changed. */
  private marketFunding(market: number): MarketFunding {
    let m = this.markets.get(market);
    this.marketCaptures.beforeChange(market, m);
    if (m === undefined) {
      m = { rows: new RetainedList(), inOrder: true };
      this.markets.set(market, m);
    }
    return m;
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

  /** `operator`: the settle-now's settlements and reports of the event's command, if any. */
  private applyEvent(e: EngineEvent, specOf: SpecOf, operator: ReadonlySet<object>): void {
    if (e.type === 'fundingSettled') {
      const s = e.settlement;
      this.pushSettlement(this.marketFunding(s.market), settlementRow(s, operator.has(s)));
      return;
    }
    if (e.type === 'tradeBusted') {
      // Busted trades stay in the history, flagged (interface-spec: "including busted trades").
      for (const account of e.accounts)
        this.markBusted(account, String(e.tradeId), e.time, e.reason);
      return;
    }
    if (e.type !== 'executionReport') return;
    if (e.kind === 'Funding') {
      this.pushFunding(this.account(e.account), fundingRow(e, specOf, operator.has(e)));
      return;
    }
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

  /** Appends a funding payment, the oldest dropped past the retention. */
  private pushFunding(h: AccountHistory, row: FundingRecord): void {
    const last = h.funding.at(-1);
    if (last !== undefined && newerFirst(keyOfFunding(last), keyOfFunding(row)) < 0)
      h.fundingInOrder = false;
    h.funding.push(row);
    if (h.funding.length > this.maxFunding)
      h.funding.dropOldest(h.funding.length - this.maxFunding);
  }

  /** Appends a settlement, the oldest dropped past the retention. */
  private pushSettlement(m: MarketFunding, row: SettlementRecord): void {
    const last = m.rows.at(-1);
    if (last !== undefined && last.fundingTime > row.fundingTime) m.inOrder = false;
    m.rows.push(row);
    if (m.rows.length > this.maxSettlements) m.rows.dropOldest(m.rows.length - this.maxSettlements);
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

  /**
   * `GET /account/funding`: the account's funding payments, newest first by (fundingTime,
   * execId), paged as trades (the window on `fundingTime`, the last 7 days by default). Only
   * `instrument` filters.
   */
  funding(account: string, q: HistoryQuery, now: number): Page<FundingRecord> {
    const h = this.accounts.get(account);
    if (h === undefined) return { rows: [], nextCursor: null };
    const wanted = (f: FundingRecord) =>
      q.instrument === undefined || f.instrument === q.instrument;
    if (h.fundingInOrder) return pageInOrder('funding', h.funding, keyOfFunding, wanted, q, now);
    return page('funding', h.funding.filter(wanted), keyOfFunding, q, now);
  }

  /**
   * `GET /funding`: a market's settlements, oldest first, as `GET /candles` pages: `startTime`
   * and `endTime` bound `fundingTime` (both inclusive); with `startTime` the first `limit` from
   * there, otherwise the last `limit` up to `endTime` (default 500). Settlements with the same
   * fundingTime (the operator's settle-now in the millisecond of a scheduled one) keep the order
   * they were paid in.
   */
  settlements(market: number, q: SettlementQuery): SettlementRecord[] {
    const m = this.markets.get(market);
    if (m === undefined) return [];
    const limit = Math.max(1, q.limit ?? 500);
    const from = q.startTime ?? Number.NEGATIVE_INFINITY;
    const to = q.endTime ?? Number.POSITIVE_INFINITY;
    if (!m.inOrder) {
      const all = m.rows
        .filter((r) => r.fundingTime >= from && r.fundingTime <= to)
        .map((r, i) => ({ r, i }))
        .sort((a, b) => a.r.fundingTime - b.r.fundingTime || a.i - b.i)
        .map((x) => x.r);
      return q.startTime !== undefined ? all.slice(0, limit) : all.slice(-limit);
    }
    const lo = firstIndex(m.rows, (r) => r.fundingTime >= from);
    const hi = firstIndex(m.rows, (r) => r.fundingTime > to);
    if (q.startTime !== undefined) return m.rows.slice(lo, Math.min(hi, lo + limit));
    return m.rows.slice(Math.max(lo, hi - limit), hi);
  }
}

/**
 * The settle-now's settlements of a command and the `Funding` reports they paid (the objects of
 * its events): empty for any other command. The settle-now pays after the funding times that
 * were due by its command time (paid at the grid time, by the schedule), and its own
 * settlements are those its outcome lists; each market's reports come just before its
 * settlement's event.
 */
function operatorFunding(
  command: Command | undefined,
  events: readonly EngineEvent[],
): ReadonlySet<object> {
  if (command?.type !== 'settleFunding') return NONE;
  let outcome: Set<FundingSettlement> | undefined;
  for (const e of events)
    if (e.type === 'outcome' && e.ok && e.kind === 'funding') outcome = new Set(e.settlements);
  if (outcome === undefined) return NONE;
  const out = new Set<object>();
  let reports: FundingReport[] = [];
  for (const e of events) {
    if (e.type === 'executionReport' && e.kind === 'Funding') reports.push(e);
    else if (e.type === 'fundingSettled') {
      const s = e.settlement;
      if (outcome.has(s)) {
        out.add(s);
        for (const r of reports) if (r.market === s.market) out.add(r);
      }
      reports = reports.filter((r) => r.market !== s.market);
    }
  }
  return out;
}

const NONE: ReadonlySet<object> = new Set();

/** A `Funding` report as a row of `GET /account/funding`, with the report's wire values. */
function fundingRow(r: FundingReport, specOf: SpecOf, operator: boolean): FundingRecord {
  const spec = specOf(r.market);
  return {
    execId: String(r.execId),
    seq: r.seq,
    instrument: spec.symbol,
    market: r.market,
    marginMode: r.marginMode,
    fundingTime: r.fundingTime,
    time: r.time,
    positionSize: formatDecimal(r.positionSize, spec.quantityDecimals),
    fundingRate: formatDecimal(r.fundingRate, 18),
    indexPrice: formatPrice(r.indexPrice),
    markPrice: r.markPrice === null ? null : formatPrice(r.markPrice),
    payment: formatCollateral(r.payment),
    source: operator ? 'Operator' : 'Scheduled',
  };
}

/** A `fundingSettled` event as a row of `GET /funding`. */
function settlementRow(s: FundingSettlement, operator: boolean): SettlementRecord {
  return {
    fundingTime: s.fundingTime,
    fundingRate: formatDecimal(s.rate, 18),
    premium: formatDecimal(s.premium, 18),
    samples: s.sampleCount,
    indexPrice: s.indexPrice === null ? null : formatPrice(s.indexPrice),
    source: operator ? 'Operator' : 'Scheduled',
  };
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

/** The paging key of a funding row. */
function keyOfFunding(f: FundingRecord): PageKey {
  return { t: f.fundingTime, id: f.execId };
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
