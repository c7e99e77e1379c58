/**
 * The replay buffers' bounds (protocol-decisions: "100,000 reports or a day"): an account that
 * stops trading loses its reports a day later like any other, and its entry goes with them.
 */
import { type Command, createEngineState, type EngineEvent, reduceAll } from '@perp/core';
import { BTC_SETTINGS, TestVenue, wallet } from '@perp/core/testing';
import { describe, expect, it } from 'vitest';
import type { CommittedBatch } from '../engine/host.js';
import { ReportStreams } from './report-streams.js';

const [A, B] = [wallet(1), wallet(2)];
const HOUR = 3_600_000;

/** One committed batch per command, from genesis. */
function batches(commands: readonly Command[]): CommittedBatch[] {
  const out: CommittedBatch[] = [];
  let state = createEngineState({}, (commands[0] as Command).time);
  for (const c of commands) {
    const r = reduceAll(state, [c]);
    state = r.state;
    out.push({ commands: [c], events: r.events, state });
  }
  return out;
}

function orderIdOf(v: TestVenue, events: EngineEvent[], account: string): number {
  const report = v.reports(events, account)[0];
  if (report === undefined || !('order' in report)) throw new Error('no order report');
  return report.order.orderId;
}

/** A and B each place and cancel an order (no position, so no funding later). */
function venue(): TestVenue {
  const v = new TestVenue();
  v.list(BTC_SETTINGS);
  for (const w of [A, B]) {
    v.open(w);
    v.fund(w, '100000');
  }
  v.oracle({ 'BTC-PERP': '65000' });
  for (const w of [A, B]) {
    const id = orderIdOf(
      v,
      v.place(w, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: '60000' }),
      w,
    );
    v.cancel(w, 'BTC-PERP', { orderId: id });
  }
  return v;
}

describe('replay buffers of accounts that stopped trading', () => {
  it('are dropped a day after their last report, entry and all', () => {
    const v = venue();
    const streams = new ReportStreams();
    for (const b of batches(v.log)) streams.apply(b);
    const seqA = v.state.accounts.get(A)!.reportSeq;
    expect(streams.since(A, 0, seqA).reports.length).toBe(seqA);
    expect(streams.size).toBe(2);

    // B trades on; A does nothing for a day and an hour.
    const start = v.log.length;
    for (let h = 1; h <= 25; h++) {
      v.run({ type: 'tick', time: v.time + HOUR });
      const id = orderIdOf(
        v,
        v.place(B, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: '60000' }),
        B,
      );
      v.cancel(B, 'BTC-PERP', { orderId: id });
    }
    const more = batches(v.log).slice(start);
    for (const b of more) streams.apply(b);

    // A's reports are all older than a day: gone, and a replay asks for a resync.
    expect(streams.since(A, 0, seqA)).toEqual({ seq: seqA, reports: [], resyncRequired: true });
    expect(streams.size).toBe(1);
    // B keeps the last day's reports only.
    const seqB = v.state.accounts.get(B)!.reportSeq;
    const kept = streams.since(B, seqB - 10, seqB);
    expect(kept.resyncRequired).toBe(false);
    expect(kept.reports.length).toBe(10);
    expect(streams.since(B, 0, seqB).resyncRequired).toBe(true);
  });

  it('keeps the entry of a subscribed account, without its old reports', () => {
    const v = venue();
    const streams = new ReportStreams();
    for (const b of batches(v.log)) streams.apply(b);
    const seen: number[] = [];
    const unsubscribe = streams.subscribe(A, (reports) => {
      for (const r of reports) seen.push(r.seq);
    });
    const start = v.log.length;
    v.run({ type: 'tick', time: v.time + 25 * HOUR });
    v.place(A, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: '60000' });
    for (const b of batches(v.log).slice(start)) streams.apply(b);
    // The subscriber still gets A's reports, and only the new one is buffered.
    const seqA = v.state.accounts.get(A)!.reportSeq;
    expect(seen).toEqual([seqA]);
    expect(streams.since(A, seqA - 1, seqA).reports.map((r) => r.seq)).toEqual([seqA]);
    expect(streams.since(A, 0, seqA).resyncRequired).toBe(true);
    // B, idle for the day and unsubscribed, is forgotten; A is kept for its subscriber.
    expect(streams.size).toBe(1);
    unsubscribe();
  });
});
