/**
 * Read-model checkpoints of the order and trade history and of the report replay buffers
 * (`checkpoint.ts`): a capture describes the read model at the turn it started however many
 * batches arrive while it is walked, and a restore from its entries (through `encodeJson` and
 * `decodeJson`, as the file does) answers like the read model did then, and like it does after
 * the same later batches. The history's funding rows (an account's payments, a market's
 * settlements, scheduled and the operator's) are part of it.
 */
import {
  type Command,
  createEngineState,
  decodeJson,
  type EngineEvent,
  encodeJson,
  reduceAll,
} from '@perp/core';
import { BTC_SETTINGS, TestVenue, wallet } from '@perp/core/testing';
import { describe, expect, it } from 'vitest';
import type { CommittedBatch } from '../engine/host.js';
import { CheckpointEntryError, type CheckpointPart } from './checkpoint.js';
import { HistoryStore } from './history.js';
import { ReportStreams } from './report-streams.js';

const [A, B, C] = [wallet(1), wallet(2), wallet(3)];

/**
 * A log in two parts: before the capture (trades, a cancel, orders left open, an operator's
 * settle-now and a scheduled funding time) and after it (a bust of a trade from before, cancels
 * of orders from before, more trades, a new account, another funding time).
 */
function scenario(): { before: Command[]; after: Command[] } {
  const v = new TestVenue();
  v.list(BTC_SETTINGS);
  for (const w of [A, B, C]) {
    v.open(w);
    v.fund(w, '100000');
  }
  v.oracle({ 'BTC-PERP': '65000' });
  const trade = (i: number, buyer = A) => {
    v.place(B, 'BTC-PERP', { side: 'Sell', qty: '0.01', price: String(65000 + i) });
    v.place(buyer, 'BTC-PERP', {
      side: 'Buy',
      qty: '0.01',
      price: String(65000 + i),
      tif: 'IOC',
    });
  };
  for (let i = 0; i < 4; i++) trade(i);
  const orderIdOf = (events: EngineEvent[]): number => {
    const report = v.reports(events, A)[0];
    if (report === undefined || !('order' in report)) throw new Error('no order report');
    return Number(report.order.orderId);
  };
  const cancelled = orderIdOf(v.place(A, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: '60000' }));
  const open = orderIdOf(v.place(A, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: '60100' }));
  v.cancel(A, 'BTC-PERP', { orderId: cancelled });
  v.run({ type: 'settleFunding', market: 1 });
  v.run({ type: 'tick', time: v.state.fundingDue as number });
  const bustable = v.state.counters.trade;
  const split = v.log.length;
  v.run({ type: 'bustTrade', tradeId: bustable, reason: 'fat finger' });
  v.cancel(A, 'BTC-PERP', { orderId: open });
  for (let i = 4; i < 7; i++) trade(i);
  trade(7, C);
  const D = wallet(4);
  v.open(D);
  v.fund(D, '1000');
  v.place(D, 'BTC-PERP', { side: 'Sell', qty: '0.01', price: '70000' });
  v.run({ type: 'tick', time: v.state.fundingDue as number });
  return { before: v.log.slice(0, split), after: v.log.slice(split) };
}

/** Committed batches of `commands` from genesis, `size` commands each. */
function batches(commands: readonly Command[], size: number): CommittedBatch[] {
  const out: CommittedBatch[] = [];
  let state = createEngineState({}, (commands[0] as Command).time);
  for (let i = 0; i < commands.length; i += size) {
    const slice = commands.slice(i, i + size);
    const r = reduceAll(state, slice);
    state = r.state;
    out.push({ commands: slice, events: r.events, state });
  }
  return out;
}

interface Models {
  history: HistoryStore;
  streams: ReportStreams;
}

const fresh = (): Models => ({ history: new HistoryStore(), streams: new ReportStreams() });
const feed = (m: Models, bs: readonly CommittedBatch[]) => {
  for (const b of bs) {
    m.history.apply(b);
    m.streams.apply(b);
  }
};
const partsOf = (m: Models): CheckpointPart[] => [m.history.checkpoint(), m.streams.checkpoint()];

/** Everything the read models answer for the scenario's accounts. */
function reads(
  m: Models,
  now: number,
): Record<string, unknown> & { settlements: { source: string }[] } {
  const out: Record<string, unknown> = {};
  for (const w of [A, B, C, wallet(4)]) {
    const q = { startTime: 0, limit: 500 };
    out[w] = {
      orders: m.history.orders(w, q, now),
      open: m.history.orders(w, { ...q, status: 'open' }, now),
      closed: m.history.orders(w, { ...q, status: 'closed' }, now),
      trades: m.history.trades(w, q, now),
      funding: m.history.funding(w, q, now),
      replay: m.streams.since(w, 0, 10_000),
    };
  }
  return { ...out, settlements: m.history.settlements(1, {}) };
}

/** Restores fresh read models from the entries of `parts`' captures, through JSON. */
function restoreFrom(entries: readonly (readonly [string, string])[]): Models {
  const m = fresh();
  const restorers = new Map(partsOf(m).map((p) => [p.name, p.restorer()]));
  for (const [name, text] of entries) restorers.get(name)?.add(decodeJson(text));
  for (const r of restorers.values()) r.commit();
  return m;
}

describe('read-model checkpoints of history and report streams', () => {
  it('capture the turn they started in while later batches arrive, and restore to answer the same', () => {
    const { before, after } = scenario();
    const all = batches([...before, ...after], 1);
    const cut = before.length;
    const now = (all[all.length - 1] as CommittedBatch).state.time + 1;

    const live = fresh();
    feed(live, all.slice(0, cut));
    const atCapture = fresh();
    feed(atCapture, all.slice(0, cut));

    const parts = partsOf(live);
    const captures = parts.map((p) => p.capture());
    // The later batches arrive between entries, most before the first one is read: an entry
    // read from rows changed since the capture started would show it.
    const pending = all.slice(cut);
    feed(live, pending.splice(0, pending.length - 3));
    const written: [string, string][] = [];
    for (const [i, capture] of captures.entries()) {
      for (const entry of capture.entries()) {
        written.push([(parts[i] as CheckpointPart).name, encodeJson(entry)]);
        feed(live, pending.splice(0, 1));
      }
      capture.release();
    }
    feed(live, pending);

    const restored = restoreFrom(written);
    expect(reads(restored, now)).toEqual(reads(atCapture, now));
    // The scenario's later part changes what was captured (else this test proves nothing).
    expect(reads(live, now)).not.toEqual(reads(atCapture, now));
    // Fed the same later batches, the restored models answer like the live ones.
    feed(restored, all.slice(cut));
    expect(reads(restored, now)).toEqual(reads(live, now));
    const busted = restored.history.trades(A, { startTime: 0 }, now).rows.filter((t) => t.busted);
    expect(busted).toHaveLength(1);
    // Funding rows of both kinds were captured, and the later funding time came after.
    const sources = (rows: { source: string }[]) => rows.map((r) => r.source);
    expect(sources(reads(atCapture, now).settlements)).toEqual(['Operator', 'Scheduled']);
    expect(sources(reads(restored, now).settlements)).toEqual([
      'Operator',
      'Scheduled',
      'Scheduled',
    ]);
    const paid = restored.history.funding(A, { startTime: 0 }, now).rows;
    expect(sources(paid)).toEqual(['Scheduled', 'Scheduled', 'Operator']);
  });

  // The part walked first sees its accounts' live rows change between their chunks; the other
  // finds them already copied. Each order gives one part the harder case.
  it.each([
    ['history', false],
    ['reportStreams', true],
  ])(
    'writes a large account in chunks that all describe the capture, batches arriving between them (%s walked first)',
    (_first, reverse) => {
      const v = new TestVenue();
      v.list(BTC_SETTINGS);
      for (const w of [A, B]) {
        v.open(w);
        v.fund(w, '10000000');
      }
      v.oracle({ 'BTC-PERP': '65000' });
      const trade = (i: number) => {
        const side = i % 2 === 0;
        v.place(B, 'BTC-PERP', { side: side ? 'Sell' : 'Buy', qty: '0.01', price: '65000' });
        v.place(A, 'BTC-PERP', {
          side: side ? 'Buy' : 'Sell',
          qty: '0.01',
          price: '65000',
          tif: 'IOC',
        });
      };
      for (let i = 0; i < 1_100; i++) trade(i);
      const cut = v.log.length;
      for (let i = 0; i < 40; i++) trade(i);
      const all = batches(v.log, 1);
      const now = (all[all.length - 1] as CommittedBatch).state.time + 1;
      const live = fresh();
      feed(live, all.slice(0, cut));
      const atCapture = fresh();
      feed(atCapture, all.slice(0, cut));

      const parts = partsOf(live);
      if (reverse) parts.reverse();
      const captures = parts.map((p) => p.capture());
      const pending = all.slice(cut);
      const written: [string, string][] = [];
      const chunksOf = new Map<string, number>();
      for (const [i, capture] of captures.entries()) {
        const name = (parts[i] as CheckpointPart).name;
        for (const entry of capture.entries()) {
          written.push([name, encodeJson(entry)]);
          const key = name === 'history' ? `history ${String((entry as unknown[])[1])}` : name;
          chunksOf.set(key, (chunksOf.get(key) ?? 0) + 1);
          // A trade of both accounts between every two entries.
          feed(live, pending.splice(0, 2));
        }
        capture.release();
      }
      // Each account's 1,100 trades took two entries, its reports (one or two a trade) two or more.
      expect(chunksOf.get('history trades')).toBe(4);
      expect(chunksOf.get('history orders')).toBe(4);
      expect(chunksOf.get('reportStreams')).toBeGreaterThanOrEqual(4);
      feed(live, pending);
      expect(reads(restoreFrom(written), now)).toEqual(reads(atCapture, now));
      expect(reads(live, now)).not.toEqual(reads(atCapture, now));
    },
  );

  // Found by the crash harness: a small account's orders, closed, trades and funding are
  // separate entries, and a batch between two of them (a fill of that account) reached its trade
  // entry, so the checkpoint held a later trade and a restart that re-reduced from it listed the
  // trade twice.
  it('writes a small account whose entries a batch of its own arrives between as at the capture', () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    for (const w of [A, B]) {
      v.open(w);
      v.fund(w, '100000');
    }
    v.oracle({ 'BTC-PERP': '65000' });
    const trade = (i: number) => {
      v.place(B, 'BTC-PERP', { side: 'Sell', qty: '0.01', price: String(65000 + i) });
      v.place(A, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: String(65000 + i), tif: 'IOC' });
    };
    for (let i = 0; i < 3; i++) trade(i);
    const cut = v.log.length;
    trade(3);
    const all = batches(v.log, 1);
    const now = (all[all.length - 1] as CommittedBatch).state.time + 1;
    const live = fresh();
    feed(live, all.slice(0, cut));
    const atCapture = fresh();
    feed(atCapture, all.slice(0, cut));

    const part = live.history.checkpoint();
    const capture = part.capture();
    const pending = all.slice(cut);
    const written: [string, string][] = [];
    for (const entry of capture.entries()) {
      written.push([part.name, encodeJson(entry)]);
      // After the account's first entry (its orders), the later trade of both accounts.
      feed(live, pending.splice(0, pending.length));
    }
    capture.release();
    expect(written.filter(([, text]) => text.includes(A)).length).toBeGreaterThan(1);
    const restored = restoreFrom(written);
    expect(restored.history.trades(A, { startTime: 0 }, now).rows).toEqual(
      atCapture.history.trades(A, { startTime: 0 }, now).rows,
    );
    // Only the history was captured here: its answers are the capture's.
    const historyReads = (m: Models) =>
      [A, B].map((w) => {
        const q = { startTime: 0, limit: 500 };
        return {
          orders: m.history.orders(w, q, now),
          closed: m.history.orders(w, { ...q, status: 'closed' }, now),
          trades: m.history.trades(w, q, now),
        };
      });
    expect(historyReads(restored)).toEqual(historyReads(atCapture));
    expect(live.history.trades(A, { startTime: 0 }, now).rows).toHaveLength(4);
    // Fed the later batch, the restored history lists the trade once, as the live one does.
    feed(restored, all.slice(cut));
    expect(historyReads(restored)).toEqual(historyReads(live));
  });

  it('two captures may run at once, each describing its own turn', () => {
    const { before, after } = scenario();
    const all = batches([...before, ...after], 1);
    const now = (all[all.length - 1] as CommittedBatch).state.time + 1;
    const cut = before.length;
    const mid = cut + Math.floor(after.length / 2);
    const live = fresh();
    feed(live, all.slice(0, cut));
    const first = partsOf(live).map((p) => [p.name, p.capture()] as const);
    feed(live, all.slice(cut, mid));
    const second = partsOf(live).map((p) => [p.name, p.capture()] as const);
    feed(live, all.slice(mid));
    const written = (captures: typeof first) =>
      captures.flatMap(([name, c]) => {
        const out = [...c.entries()].map((e) => [name, encodeJson(e)] as [string, string]);
        c.release();
        return out;
      });
    const [atFirst, atSecond] = [fresh(), fresh()];
    feed(atFirst, all.slice(0, cut));
    feed(atSecond, all.slice(0, mid));
    expect(reads(restoreFrom(written(second)), now)).toEqual(reads(atSecond, now));
    expect(reads(restoreFrom(written(first)), now)).toEqual(reads(atFirst, now));
    expect(reads(atFirst, now)).not.toEqual(reads(atSecond, now));
  });

  it('refuses malformed entries and leaves the live read model as it was', () => {
    const { before } = scenario();
    const m = fresh();
    feed(m, batches(before, 8));
    const now = m.history.orders(A, { startTime: 0 }, Number.MAX_SAFE_INTEGER);
    const cases: [CheckpointPart, unknown, RegExp][] = [
      [
        m.history.checkpoint(),
        'x',
        /not \[address, orders \| closed \| trades \| funding, rows\] or \[market, settlements, rows\]/,
      ],
      [m.history.checkpoint(), ['0xnope', 'orders', []], /not an account address/],
      [m.history.checkpoint(), [A, 'views', []], /views is not orders, closed, trades or funding/],
      [m.history.checkpoint(), [A, 'orders', [[{ orderId: '1' }, { orderId: 2n }]]], /disagree/],
      [m.history.checkpoint(), [A, 'closed', ['9']], /not a closed order/],
      [m.history.checkpoint(), [A, 'trades', [{ tradeId: 1 }]], /trade row is malformed/],
      [m.history.checkpoint(), [A, 'funding', [{ execId: 1 }]], /funding row is malformed/],
      [m.history.checkpoint(), ['1', 'settlements', []], /1 is not a market id/],
      [
        m.history.checkpoint(),
        [1, 'settlements', [{ fundingTime: 0, fundingRate: '0', source: 'Later' }]],
        /market 1: a settlement row is malformed/,
      ],
      [m.streams.checkpoint(), [A, [{ type: 'executionReport', account: B }]], /out of sequence/],
      [
        m.streams.checkpoint(),
        [
          A,
          [
            { type: 'executionReport', account: A, seq: 1, time: 0 },
            { type: 'executionReport', account: A, seq: 3, time: 0 },
          ],
        ],
        /after seq 1/,
      ],
    ];
    for (const [part, entry, message] of cases) {
      const r = part.restorer();
      expect(() => r.add(entry)).toThrow(CheckpointEntryError);
      expect(() => part.restorer().add(entry)).toThrow(message);
    }
    // An account's chunks come together and in order; a gap between two chunks of reports.
    const r = m.history.checkpoint().restorer();
    r.add([A, 'trades', []]);
    expect(() => r.add([A, 'orders', []])).toThrow(/orders after trades/);
    r.add([B, 'orders', []]);
    expect(() => r.add([A, 'trades', []])).toThrow(/account 0x0+1 appears twice/);
    // A market's settlements come together, after every account's chunks.
    const row = { fundingTime: 0, fundingRate: '0', source: 'Scheduled' };
    r.add([1, 'settlements', [row]]);
    expect(() => r.add([C, 'orders', []])).toThrow(/after the settlements/);
    r.add([2, 'settlements', [row]]);
    expect(() => r.add([1, 'settlements', [row]])).toThrow(/market 1 appears twice/);
    const s = m.streams.checkpoint().restorer();
    s.add([A, [{ type: 'executionReport', account: A, seq: 1, time: 0 }]]);
    expect(() => s.add([A, [{ type: 'executionReport', account: A, seq: 3, time: 0 }]])).toThrow(
      /after seq 1/,
    );
    expect(m.history.orders(A, { startTime: 0 }, Number.MAX_SAFE_INTEGER)).toEqual(now);
  });
});
