/**
 * Read-model checkpoints of the order and trade history and of the report replay buffers
 * (`checkpoint.ts`): a capture describes the read model at the turn it started however many
 * batches arrive while it is walked, and a restore from its entries (through `encodeJson` and
 * `decodeJson`, as the file does) answers like the read model did then, and like it does after
 * the same later batches.
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
 * A log in two parts: before the capture (trades, a cancel, orders left open) and after it (a
 * bust of a trade from before, cancels of orders from before, more trades, a new account).
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
function reads(m: Models, now: number): unknown {
  const out: Record<string, unknown> = {};
  for (const w of [A, B, C, wallet(4)]) {
    const q = { startTime: 0, limit: 500 };
    out[w] = {
      orders: m.history.orders(w, q, now),
      open: m.history.orders(w, { ...q, status: 'open' }, now),
      closed: m.history.orders(w, { ...q, status: 'closed' }, now),
      trades: m.history.trades(w, q, now),
      replay: m.streams.since(w, 0, 10_000),
    };
  }
  return out;
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
  });

  it('a released capture keeps no copies, and a second capture may start', () => {
    const { before, after } = scenario();
    const all = batches([...before, ...after], 4);
    const m = fresh();
    feed(m, all.slice(0, 3));
    const first = m.history.checkpoint().capture();
    expect(() => m.history.checkpoint().capture()).toThrow(/already in progress/);
    first.release();
    feed(m, all.slice(3));
    const second = m.history.checkpoint().capture();
    expect([...second.entries()].length).toBeGreaterThan(0);
    second.release();
  });

  it('refuses malformed entries and leaves the live read model as it was', () => {
    const { before } = scenario();
    const m = fresh();
    feed(m, batches(before, 8));
    const now = m.history.orders(A, { startTime: 0 }, Number.MAX_SAFE_INTEGER);
    const cases: [CheckpointPart, unknown, RegExp][] = [
      [m.history.checkpoint(), 'x', /not \[address, orders, closed, trades\]/],
      [m.history.checkpoint(), ['0xnope', [], [], []], /not an account address/],
      [m.history.checkpoint(), [A, [[{ orderId: '1' }, { orderId: 2n }]], [], []], /disagree/],
      [m.history.checkpoint(), [A, [], ['9'], []], /not a closed order/],
      [m.history.checkpoint(), [A, [], [], [{ tradeId: 1 }]], /trade row is malformed/],
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
    // A duplicate account is refused too.
    const r = m.history.checkpoint().restorer();
    r.add([A, [], [], []]);
    expect(() => r.add([A, [], [], []])).toThrow(/appears twice/);
    expect(m.history.orders(A, { startTime: 0 }, Number.MAX_SAFE_INTEGER)).toEqual(now);
  });
});
