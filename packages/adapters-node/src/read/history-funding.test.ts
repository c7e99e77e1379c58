/**
 * The funding rows of the history store: an account's payments (`GET /account/funding`) are its
 * `Funding` reports with their exact amounts, a market's settlements (`GET /funding`) its
 * `fundingSettled` events; each says whether the schedule or the operator's settle-now paid it,
 * even when the settle-now runs in the very millisecond of a scheduled funding time; both keep
 * their newest rows within their retention.
 */
import type { EngineEvent, FundingReport } from '@perp/core';
import { BTC_SETTINGS, TestVenue, wallet } from '@perp/core/testing';
import { describe, expect, it } from 'vitest';
import { HistoryStore } from './history.js';

const HOUR = 3_600_000;
const [A, B] = [wallet(1), wallet(2)];

/** A long `A` and a short `B` of 0.01 BTC at 65,000, index 65,000. */
function venue(): TestVenue {
  const v = new TestVenue();
  v.list(BTC_SETTINGS);
  for (const w of [A, B]) {
    v.open(w);
    v.fund(w, '100000');
  }
  v.oracle({ 'BTC-PERP': '65000' });
  v.place(B, 'BTC-PERP', { side: 'Sell', qty: '0.01', price: '65000' });
  v.place(A, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: '65000', tif: 'IOC' });
  return v;
}

/** Feeds `h` the commands of `v` from `seen` on, as one committed batch; returns the new mark. */
function feed(h: HistoryStore, v: TestVenue, seen: number): number {
  h.apply({ commands: v.log.slice(seen), events: v.history.slice(seen), state: v.state });
  return v.log.length;
}

const fundingReports = (events: readonly EngineEvent[][], account: string): FundingReport[] =>
  events
    .flat()
    .filter(
      (e): e is FundingReport =>
        e.type === 'executionReport' && e.kind === 'Funding' && e.account === account,
    );

describe('funding history', () => {
  it('tells the settle-now from the scheduled settlement of the same millisecond', () => {
    const v = venue();
    const h = new HistoryStore();
    let seen = feed(h, v, 0);
    const due = v.state.fundingDue as number;
    // The command at the funding time settles it (the schedule), then settles now (the operator).
    v.run({ type: 'settleFunding', market: 1, time: due });
    seen = feed(h, v, seen);
    const settlements = h.settlements(1, {});
    expect(settlements.map((s) => [s.fundingTime, s.source])).toEqual([
      [due, 'Scheduled'],
      [due, 'Operator'],
    ]);
    // The interest term alone (no book, no premium sample): 0.01% per 8 h for one hour.
    expect(settlements[0]).toEqual({
      fundingTime: due,
      fundingRate: '0.0000125',
      premium: '0',
      samples: 0,
      indexPrice: '65000',
      source: 'Scheduled',
    });
    const reports = fundingReports(v.history, A);
    expect(reports).toHaveLength(2);
    // Newest first: the operator's payment, then the schedule's; the amounts are the reports'.
    const rows = h.funding(A, {}, due).rows;
    expect(rows.map((r) => [r.execId, r.payment, r.source])).toEqual([
      [String(reports[1]?.execId), '-0.008125', 'Operator'],
      [String(reports[0]?.execId), '-0.008125', 'Scheduled'],
    ]);
    expect(rows[1]).toEqual({
      execId: String(reports[0]?.execId),
      seq: reports[0]?.seq,
      instrument: 'BTC-PERP',
      market: 1,
      marginMode: 'Cross',
      fundingTime: due,
      time: due,
      positionSize: '0.01',
      fundingRate: '0.0000125',
      indexPrice: '65000',
      markPrice: '65000',
      payment: '-0.008125',
      source: 'Scheduled',
    });
    // The short receives the same amount (65000 x 0.01 x 0.0000125 is whole micro-units).
    expect(h.funding(B, {}, due).rows.map((r) => r.payment)).toEqual(['0.008125', '0.008125']);
  });

  it('keeps the newest maxFundingPayments payments and maxSettlements settlements', () => {
    const v = venue();
    const h = new HistoryStore({ maxFundingPayments: 2, maxSettlements: 3 });
    let seen = feed(h, v, 0);
    const first = v.state.fundingDue as number;
    for (let i = 0; i < 5; i++) {
      v.run({ type: 'tick', time: first + i * HOUR });
      seen = feed(h, v, seen);
    }
    const times = (n: number) => Array.from({ length: n }, (_, i) => first + (4 - i) * HOUR);
    const now = first + 5 * HOUR;
    expect(h.funding(A, { startTime: 0 }, now).rows.map((r) => r.fundingTime)).toEqual(times(2));
    expect(h.settlements(1, {}).map((s) => s.fundingTime)).toEqual(times(3).reverse());
  });

  it('windows settlements as candles: inclusive bounds, the first limit from startTime, else the last', () => {
    const v = venue();
    const h = new HistoryStore();
    let seen = feed(h, v, 0);
    const first = v.state.fundingDue as number;
    for (let i = 0; i < 5; i++) {
      v.run({ type: 'tick', time: first + i * HOUR });
      seen = feed(h, v, seen);
    }
    const at = (q: Parameters<HistoryStore['settlements']>[1]) =>
      h.settlements(1, q).map((s) => (s.fundingTime - first) / HOUR);
    expect(at({})).toEqual([0, 1, 2, 3, 4]);
    expect(at({ limit: 2 })).toEqual([3, 4]);
    expect(at({ startTime: first + HOUR, limit: 2 })).toEqual([1, 2]);
    expect(at({ startTime: first + HOUR, endTime: first + 3 * HOUR })).toEqual([1, 2, 3]);
    expect(at({ endTime: first + 2 * HOUR, limit: 2 })).toEqual([1, 2]);
    expect(at({ startTime: first + 1 })).toEqual([1, 2, 3, 4]);
    expect(h.settlements(2, {})).toEqual([]);
  });
});
