/**
 * Per-account execution-report streams (protocol.md section 5): every committed report is kept in
 * a bounded replay buffer per account, so `subscribeTrading { fromSeq }` can resend what a client
 * missed, and live reports are pushed to the account's subscribers in `seq` order. The buffers
 * are a projection of the journal: replaying it at start-up rebuilds them, so `fromSeq` works
 * across a restart.
 *
 * @module
 */
import {
  type ExecutionReport,
  type OrderView,
  orderAfterBust,
  type TradeBustReport,
} from '@perp/core';
import type { CommittedBatch } from '../engine/host.js';
import {
  Captures,
  CheckpointEntryError,
  type CheckpointPart,
  type ReadModelCapture,
} from './checkpoint.js';
import { RetainedList } from './retained-list.js';

/** Receives the reports of one account, in seq order. */
export type ReportListener = (reports: readonly ExecutionReport[], batch: CommittedBatch) => void;

/** Result of {@link ReportStreams.since}. */
export interface Replay {
  /** Highest seq assigned so far for the account. */
  readonly seq: number;
  /** Reports with seq in (fromSeq, seq], when the buffer still holds them all. */
  readonly reports: readonly ExecutionReport[];
  /** The buffer no longer reaches back to `fromSeq`: rebuild from REST, then go on live. */
  readonly resyncRequired: boolean;
}

/**
 * A `TradeBust` of a fill of an order that had already ended, with the order as the bust
 * restates it (protocol.md 6: one left without fills ends `Cancelled` with reason `Bust`). The
 * engine keeps only working orders, so its report has none; the replay buffer still holds the
 * order's last report, and the restated order is sent as the report's `order`, as it is for a
 * working one.
 */
export interface RestatedBust extends TradeBustReport {
  readonly endedOrder: OrderView;
}

/** The order view a report carries, if any (a restated bust's included). */
function orderViewOf(r: ExecutionReport): OrderView | undefined {
  if (r.kind === 'TradeBust') return r.workingOrder ?? (r as Partial<RestatedBust>).endedOrder;
  return 'order' in r ? r.order : undefined;
}

/**
 * `r` with the ended order it busts restated from the newest report in `buffered` that shows
 * the order, with the engine's own rule (`orderAfterBust`); `r` itself when it is no such bust,
 * or when the buffer no longer holds the order (older than the buffer: `/historic/orders` has
 * it).
 */
function restated(buffered: RetainedList<ExecutionReport>, r: ExecutionReport): ExecutionReport {
  if (r.kind !== 'TradeBust' || r.workingOrder !== undefined || r.orderId === 0) return r;
  for (let i = buffered.length - 1; i >= 0; i--) {
    const view = orderViewOf(buffered.at(i) as ExecutionReport);
    if (view === undefined || view.orderId !== r.orderId) continue;
    const qty = r.fill.quantity;
    if (qty <= 0n || qty > view.cumQty) return r;
    const endedOrder: OrderView = {
      ...view,
      ...orderAfterBust(view, qty, r.fill.price),
      updatedTime: r.time,
    };
    const restatedBust: RestatedBust = { ...r, endedOrder };
    return restatedBust;
  }
  return r;
}

/** Reports per checkpoint entry, so no entry holds a slice long. */
const REPORT_CHUNK = 1_024;

interface Buffer {
  reports: RetainedList<ExecutionReport>;
  listeners: Set<ReportListener>;
}

/** Replay buffers and live fan-out of execution reports. */
export class ReportStreams {
  private readonly accounts = new Map<string, Buffer>();
  private readonly capacity: number;
  private readonly maxAgeMs: number;
  /** The checkpoint capture in progress, if any (see `checkpoint.ts`). */
  private readonly captures = new Captures<string, RetainedList<ExecutionReport>>((reports) =>
    reports.copy(),
  );
  /** The account a restore is adding chunks to (see `restoreChunk`). */
  private restoring: string | null = null;
  /** Engine time (ms) from which the next batch sweeps every buffer by age (see `sweep`). */
  private nextSweep = Number.NEGATIVE_INFINITY;

  constructor(options: { capacity?: number; maxAgeMs?: number } = {}) {
    this.capacity = options.capacity ?? 100_000;
    this.maxAgeMs = options.maxAgeMs ?? 86_400_000;
  }

  /** Accounts with a buffer (reports kept, or a subscriber). */
  get size(): number {
    return this.accounts.size;
  }

  private buffer(account: string): Buffer {
    let b = this.accounts.get(account);
    if (b === undefined) {
      b = { reports: new RetainedList(), listeners: new Set() };
      this.accounts.set(account, b);
    }
    return b;
  }

  /** Buffers the batch's reports and pushes them to subscribers, account by account. */
  apply(batch: CommittedBatch): void {
    const byAccount = new Map<string, ExecutionReport[]>();
    for (const events of batch.events) {
      for (const e of events) {
        if (e.type !== 'executionReport') continue;
        let list = byAccount.get(e.account);
        if (list === undefined) {
          list = [];
          byAccount.set(e.account, list);
        }
        list.push(e);
      }
    }
    for (const [account, engineReports] of byAccount) {
      const b = this.buffer(account);
      this.captures.beforeChange(account, b.reports);
      const reports = engineReports.map((r) => {
        const out = restated(b.reports, r);
        b.reports.push(out);
        return out;
      });
      const newest = reports[reports.length - 1] as ExecutionReport;
      let drop = 0;
      while (
        drop < b.reports.length &&
        (b.reports.length - drop > this.capacity ||
          (b.reports.at(drop) as ExecutionReport).time < newest.time - this.maxAgeMs)
      ) {
        drop++;
      }
      b.reports.dropOldest(drop);
      for (const listener of b.listeners) listener(reports, batch);
    }
    this.sweep(batch.state.time);
  }

  /**
   * Drops, at most once per 1/24 of the age limit of engine time, the reports of every buffer
   * older than the limit, and forgets buffers left empty with no subscriber. A batch ages out
   * only the buffers it adds to: without this an account that stopped trading kept its last
   * 100,000 reports for good, though the buffer promises a day (docs/protocol-decisions.md), and
   * every account that ever traded kept its entry.
   */
  private sweep(now: number): void {
    if (now < this.nextSweep) return;
    this.nextSweep = now + Math.max(1, Math.floor(this.maxAgeMs / 24));
    const cutoff = now - this.maxAgeMs;
    for (const [account, b] of this.accounts) {
      let drop = 0;
      while (drop < b.reports.length && (b.reports.at(drop) as ExecutionReport).time < cutoff)
        drop++;
      const forget = drop === b.reports.length && b.listeners.size === 0;
      if (drop === 0 && !forget) continue;
      this.captures.beforeChange(account, b.reports);
      if (forget) this.accounts.delete(account);
      else b.reports.dropOldest(drop);
    }
  }

  /** Empty buffers with the same limits and no subscribers (a history backfill builds some). */
  emptyCopy(): ReportStreams {
    return new ReportStreams({ capacity: this.capacity, maxAgeMs: this.maxAgeMs });
  }

  /**
   * Takes the replay buffers of `other` (which must have seen every batch this one saw, and the
   * history before it: see `backfill.ts`) in place of this one's; subscribers stay.
   */
  adoptReports(other: ReportStreams): void {
    for (const [account, b] of other.accounts) {
      const mine = this.buffer(account);
      // A capture in progress keeps describing the buffer it started with.
      this.captures.beforeChange(account, mine.reports);
      mine.reports = b.reports;
    }
  }

  /**
   * The replay buffers as a checkpoint part (`checkpoint.ts`). An entry is a chunk of one
   * account's buffered reports, `[address, reports]`, an account's chunks together and in seq
   * order. Subscribers are not part of it.
   */
  checkpoint(): CheckpointPart {
    return {
      name: 'reportStreams',
      // 2: a TradeBust of an ended order carries the order restated (`endedOrder`).
      version: 2,
      // A version 1 TradeBust without `endedOrder` is one whose order was not restated.
      reads: [1],
      capture: () => this.capture(),
      restorer: () => {
        const restored = this.emptyCopy();
        return {
          add: (entry) => restored.restoreChunk(entry),
          apply: (batch) => restored.apply(batch),
          commit: () => this.adoptReports(restored),
        };
      },
    };
  }

  private capture(): ReadModelCapture {
    const capture = this.captures.start(this.accounts.keys(), (a) => this.accounts.get(a)?.reports);
    return {
      *entries() {
        for (const [account, rows] of capture.rows()) {
          // Rows yielded live hold only until the next turn: a long buffer is copied first, so
          // its chunks, written across turns, all describe the capture's turn.
          const reports = rows.length > REPORT_CHUNK ? rows.copy() : rows;
          for (let i = 0; i < reports.length; i += REPORT_CHUNK)
            yield [account, reports.slice(i, i + REPORT_CHUNK)];
        }
      },
      release: () => capture.release(),
    };
  }

  /**
   * Adds a chunk of an account's buffered reports from a checkpoint entry (see
   * {@link checkpoint}): an account's chunks come together, in seq order.
   */
  private restoreChunk(entry: unknown): void {
    const bad = (detail: string): never => {
      throw new CheckpointEntryError('reportStreams', detail);
    };
    if (!Array.isArray(entry) || entry.length !== 2) bad('an entry is not [address, reports]');
    const [account, reports] = entry as unknown[];
    if (typeof account !== 'string' || !Array.isArray(reports))
      bad('an entry is not [address, reports]');
    const buffered = this.accounts.get(account as string)?.reports;
    if (buffered !== undefined && this.restoring !== account)
      bad(`account ${String(account)} appears twice`);
    this.restoring = account as string;
    const into = buffered ?? new RetainedList<ExecutionReport>();
    let seq = into.at(-1)?.seq ?? 0;
    for (const r of reports as unknown[]) {
      const report = r as Partial<ExecutionReport> | null;
      if (
        typeof report !== 'object' ||
        report === null ||
        report.type !== 'executionReport' ||
        report.account !== account ||
        typeof report.seq !== 'number' ||
        // `since` indexes the buffer by seq: one account's seqs run without gaps.
        (seq === 0 ? report.seq < 1 : report.seq !== seq + 1) ||
        typeof report.time !== 'number'
      )
        bad(
          `account ${String(account)}: the report after seq ${seq} is malformed or out of sequence`,
        );
      seq = report?.seq as number;
      into.push(report as ExecutionReport);
    }
    if (buffered === undefined) this.buffer(account as string).reports = into;
  }

  /**
   * Reports of `account` after `fromSeq`, or a resync flag when the buffer is too short, or when
   * `fromSeq` is beyond the account's seq: the client holds reports this venue never sent (its
   * seq came from another venue, or from before the data directory was reset), so nothing it
   * knows can be trusted.
   */
  since(account: string, fromSeq: number, currentSeq: number): Replay {
    const b = this.accounts.get(account);
    const reports = b?.reports ?? new RetainedList<ExecutionReport>();
    if (fromSeq > currentSeq) return { seq: currentSeq, reports: [], resyncRequired: true };
    if (fromSeq === currentSeq) return { seq: currentSeq, reports: [], resyncRequired: false };
    const first = reports.at(0);
    if (first === undefined || first.seq > fromSeq + 1) {
      return { seq: currentSeq, reports: [], resyncRequired: true };
    }
    const start = fromSeq + 1 - first.seq;
    return { seq: currentSeq, reports: reports.slice(start), resyncRequired: false };
  }

  /** Subscribes to live reports of an account; returns the unsubscribe function. */
  subscribe(account: string, listener: ReportListener): () => void {
    const b = this.buffer(account);
    b.listeners.add(listener);
    return () => {
      b.listeners.delete(listener);
    };
  }
}
