/**
 * The market-data checkpoint part: a capture describes the ticker and candle projections as they
 * were when it started, however many batches arrive while its entries are walked; restored
 * projections answer as the captured ones did and keep doing so when fed the same batches.
 */
import {
  type Command,
  createEngineState,
  decodeJson,
  type EngineState,
  encodeJson,
  type JournalRecord,
  type JournalStore,
} from '@perp/core';
import { BTC_SETTINGS, ETH_SETTINGS, T0, TestVenue, wallet } from '@perp/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../engine/clock.js';
import { type CommittedBatch, EngineHost } from '../engine/host.js';
import { CheckpointEntryError, type ReadModelCapture } from '../read/checkpoint.js';
import { CandleProjection, INTERVALS, noCandleChanges } from './candles.js';
import {
  captureMarketData,
  MARKET_DATA_PART,
  MARKET_DATA_PART_VERSION,
  type MarketDataEntry,
  MarketDataRestore,
  PRINTS_PER_ENTRY,
} from './checkpoint.js';
import { createMarketDataService, type MarketDataService } from './service.js';
import { TickerProjection } from './ticker.js';
import { TradeTape } from './trades.js';

class NullJournal implements JournalStore {
  lastSeq = 0;
  async append(c: readonly Command[]): Promise<number> {
    this.lastSeq += c.length;
    return this.lastSeq;
  }
  async *read(): AsyncIterable<JournalRecord> {}
  async close(): Promise<void> {}
}

const M = 60_000;
const A = wallet(1);
const B = wallet(2);
const SYMBOLS = ['BTC-PERP', 'ETH-PERP'] as const;
/** Small enough that the short intervals evict candles and skip long gaps. */
const CANDLE_HISTORY = 5;

/** Commands to replay, with the service clock set to `clock` (and queried) just before. */
interface Step {
  readonly clock: number;
  readonly commands: readonly Command[];
}

/** Writes commands with a TestVenue and cuts them into steps. */
class Script {
  readonly venue = new TestVenue({ time: T0 });
  readonly steps: Step[] = [];
  private mark = 0;

  constructor() {
    const v = this.venue;
    v.list(BTC_SETTINGS);
    v.list(ETH_SETTINGS);
    for (const w of [A, B]) {
      v.open(w);
      v.fund(w, '10000000');
    }
  }

  /** A trade at `price`; returns its trade id. */
  trade(symbol: string, price: string, qty = symbol === 'BTC-PERP' ? '0.1' : '1'): number {
    this.venue.place(A, symbol, { side: 'Sell', qty, price });
    this.venue.place(B, symbol, { side: 'Buy', qty, price, tif: 'IOC' });
    return this.venue.state.counters.trade;
  }

  /** Moves engine time to `time` (a tick) with fresh index prices. */
  at(time: number, btc = '60000', eth = '3000'): void {
    this.venue.run({ type: 'tick', time });
    this.venue.oracle({ 'BTC-PERP': btc, 'ETH-PERP': eth });
  }

  bust(tradeId: number): void {
    this.venue.expectOk(this.venue.run({ type: 'bustTrade', tradeId, reason: 'fat finger' }));
  }

  /** Ends a step; the clock is `late` ms past its last command (a trade published late). */
  cut(late = 0): Step {
    const step = { clock: this.venue.time + late, commands: this.venue.log.slice(this.mark) };
    this.mark = this.venue.log.length;
    this.steps.push(step);
    return step;
  }
}

/** A host on a state, a manual clock and a market-data service over them. */
class Harness {
  readonly clock: ManualClock;
  readonly host: EngineHost;
  readonly md: MarketDataService;

  constructor(state: EngineState, time: number, candleHistory = CANDLE_HISTORY) {
    this.clock = new ManualClock(time);
    this.host = new EngineHost({ state, journal: new NullJournal(), clock: this.clock });
    this.md = createMarketDataService({
      host: this.host,
      now: () => this.clock.now(),
      candleHistory,
      // No housekeeping turn may close candles between the steps: both sides see the same calls.
      pacing: { housekeepingMs: 3_600_000 },
    });
    harnesses.push(this);
  }

  /** Sets the clock, reads (which closes candles and slides windows), then replays. */
  play(step: Step): void {
    this.clock.set(step.clock);
    this.md.candles('BTC-PERP', '1m');
    this.md.tickers();
    this.host.replay(step.commands);
  }

  /** Every candle of every interval of both markets, the tickers and the trade tapes, now. */
  answers(): unknown {
    return {
      candles: SYMBOLS.map((s) =>
        INTERVALS.map((i) => this.md.candles(s, i, undefined, undefined, 10_000)),
      ),
      tickers: this.md.tickers(),
      trades: SYMBOLS.map((s) => this.md.trades(s, 10_000)),
    };
  }
}

let harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses) await h.md.close();
  harnesses = [];
});

/** Each entry as a checkpoint file would hold it: written with encodeJson, read back. */
const roundTrip = (entry: unknown): unknown => decodeJson(encodeJson(entry));

/** A day and a half of trades in both markets, with a three-hour gap and a late trade. */
function history(s: Script): { recent: number[]; lateMinute: number } {
  let time = T0;
  for (let k = 0; k < 40; k++) {
    time += 37 * M + k * 1_000;
    if (k === 20) time += 3 * 60 * M;
    s.at(time);
    s.trade('BTC-PERP', String(60_000 + (k % 7) * 10));
    if (k % 3 === 0) s.trade('ETH-PERP', String(3_000 + (k % 5)));
    s.cut();
  }
  const recent: number[] = [];
  // The last minutes before the capture: trades the engine can still bust.
  time = Math.ceil(time / M) * M + 10 * M;
  s.at(time + 5_000);
  recent.push(s.trade('BTC-PERP', '60100'));
  recent.push(s.trade('BTC-PERP', '60900'));
  recent.push(s.trade('ETH-PERP', '3010'));
  s.cut();
  // Published two seconds after the service clock closed its minute: counts in the next one.
  s.at(time + M - 1_000);
  recent.push(s.trade('BTC-PERP', '60200'));
  s.cut(2_000);
  return { recent, lateMinute: time };
}

describe('market-data checkpoint part', () => {
  it('is named and versioned', () => {
    const h = new Harness(createEngineState({}, T0), T0);
    const part = h.md.checkpoint();
    expect(part.name).toBe(MARKET_DATA_PART);
    expect(part.name).toBe('marketData');
    expect(part.version).toBe(MARKET_DATA_PART_VERSION);
  });

  it('restores what the capture saw while batches kept coming, and stays identical after', () => {
    const s = new Script();
    const { recent, lateMinute } = history(s);
    const prefix = s.steps.length;
    // Played while the capture is walked: trades in both markets, closes, a bust, a late trade.
    let time = s.venue.time;
    s.at(time + 20_000);
    s.trade('BTC-PERP', '61000');
    s.trade('ETH-PERP', '3020');
    s.cut();
    s.bust(recent[1] as number);
    s.cut();
    for (let k = 1; k <= 6; k++) {
      time += 4 * M;
      s.at(time, '61000', '3020');
      s.trade(k % 2 === 0 ? 'BTC-PERP' : 'ETH-PERP', k % 2 === 0 ? '61010' : '3030');
      s.cut(k === 3 ? 1_000 : 0);
    }
    const during = s.steps.length;
    // Played on both afterwards: a bust of a trade from before the capture, restated from the
    // prints the checkpoint carried; then the bust window and the 24 h window move on.
    s.bust(recent[0] as number);
    s.cut();
    s.bust(recent[2] as number);
    s.cut();
    time = s.venue.time;
    for (let k = 1; k <= 4; k++) {
      time += 41 * M;
      s.at(time, '61500', '3050');
      s.trade('BTC-PERP', String(61_500 + k));
      s.cut();
    }

    const live = new Harness(createEngineState({}, T0), T0);
    for (const step of s.steps.slice(0, prefix)) live.play(step);
    const snapshot = live.host.state;
    const captureTime = live.clock.now();
    // What the originals answer at the capture, read first: reading closes candles.
    const atCapture = live.answers();
    const capture = live.md.checkpoint().capture();

    const entries: unknown[] = [];
    const walk = capture.entries()[Symbol.iterator]();
    // A batch before the writer's first slice too: every market changes before it is walked.
    live.play(s.steps[prefix] as Step);
    let next = prefix + 1;
    for (let done = false; !done; ) {
      for (let n = 0; n < 3 && !done; n++) {
        const r = walk.next();
        if (r.done === true) done = true;
        else entries.push(roundTrip(r.value));
      }
      // A batch between two slices, as the writer yields to the event loop.
      if (!done && next < during) live.play(s.steps[next++] as Step);
    }
    capture.release();
    expect(next).toBe(during);
    expect(live.answers()).not.toEqual(atCapture);
    const kinds = entries.map((e) => (e as MarketDataEntry).kind);
    expect(kinds.filter((k) => k === 'ticker')).toHaveLength(2);
    expect(kinds.filter((k) => k === 'candles')).toHaveLength(2 * INTERVALS.length);
    expect(kinds.filter((k) => k === 'prints')).toHaveLength(2);
    expect(kinds.filter((k) => k === 'tape')).toHaveLength(2);
    // The tape is written after the candles: a market changed while they were walked was copied.
    expect(kinds.at(-1)).toBe('tape');

    // A restart from the snapshot: the restorer runs before the tail is replayed.
    const restored = new Harness(snapshot, captureTime);
    const restorer = restored.md.checkpoint().restorer();
    for (const e of entries) restorer.add(e);
    restorer.check?.();
    restorer.commit();
    expect(restored.answers()).toEqual(atCapture);

    for (const step of s.steps.slice(prefix, during)) restored.play(step);
    expect(restored.answers()).toEqual(live.answers());
    for (const step of s.steps.slice(during)) {
      live.play(step);
      restored.play(step);
      expect(restored.answers()).toEqual(live.answers());
    }
    // The busts did restate (the busted trades are gone), and the late trade opened the minute
    // after its own.
    const minutes = live.md.candles('BTC-PERP', '1m', undefined, undefined, 10_000) ?? [];
    expect(minutes.some((c) => c.high === '60900' || c.high === '60100')).toBe(false);
    const late = minutes.find((c) => c.open === '60200');
    expect(late?.openTime).toBe(lateMinute + M);
    expect(late?.trades).toBe(2);
  });

  it('keeps a copy of a market changed after the capture: its entries show the old rows', () => {
    const s = new Script();
    s.at(T0 + 10 * M + 1_000);
    const first = s.trade('BTC-PERP', '60000');
    s.trade('BTC-PERP', '60500');
    s.cut();
    const h = new Harness(createEngineState({}, T0), T0);
    h.play(s.steps[0] as Step);
    const capture = h.md.checkpoint().capture();
    // After it: a trade in the same minute (the open candle and bucket), a bust (a closed
    // candle is restated), minutes closing (the history grows), new prints.
    s.at(T0 + 10 * M + 2_000);
    s.trade('BTC-PERP', '61000');
    s.cut();
    s.at(T0 + 13 * M);
    s.bust(first);
    s.trade('BTC-PERP', '60700');
    s.cut();
    for (const step of s.steps.slice(1)) h.play(step);

    const entries = [...capture.entries()] as MarketDataEntry[];
    capture.release();
    const ticker = entries.find((e) => e.kind === 'ticker' && e.market === 1);
    expect(ticker).toEqual({
      kind: 'ticker',
      market: 1,
      priorClose: null,
      buckets: [[T0 + 10 * M, px(60000), px(60500), px(60000), px(60500), 2000n, 12050000000n, 2]],
    });
    const minutes = entries.find(
      (e) => e.kind === 'candles' && e.market === 1 && e.interval === '1m',
    );
    expect(minutes).toEqual({
      kind: 'candles',
      market: 1,
      interval: '1m',
      completeFrom: null,
      priorClose: null,
      current: [T0 + 10 * M, px(60000), px(60500), px(60000), px(60500), 2000n, 12050000000n, 2],
      history: [],
    });
    const prints = entries.find((e) => e.kind === 'prints' && e.market === 1);
    expect(prints?.kind === 'prints' && prints.prints.map((p) => p[0])).toEqual([first, first + 1]);
    // The tape as it was: both prints (the bust and the new ones came after).
    const tape = entries.find((e) => e.kind === 'tape' && e.market === 1);
    expect(
      tape?.kind === 'tape' && tape.trades.map(([id, , p, q, side]) => [id, p, q, side]),
    ).toEqual([
      [first, px(60000), 1000n, 'Buy'],
      [first + 1, px(60500), 1000n, 'Buy'],
    ]);
    expect(h.md.trades('BTC-PERP', 10)?.map((t) => t.price)).toEqual(['60700', '61000', '60500']);
    // The live ones did change.
    expect(h.md.candles('BTC-PERP', '1m')?.map((c) => c.high)).toEqual([
      '61000',
      '61000',
      '61000',
      '60700',
    ]);
  });

  it('keeps a copy before prints leave the bust window (a batch that only prunes)', () => {
    const s = new Script();
    s.at(T0 + 10 * M + 1_000);
    const first = s.trade('BTC-PERP', '60000');
    s.trade('BTC-PERP', '60500');
    s.at(T0 + 40 * M);
    const third = s.trade('BTC-PERP', '60400');
    const h = new Harness(createEngineState({}, T0), T0);
    h.play(s.cut());
    const capture = h.md.checkpoint().capture();
    // The engine stops retaining the first two trades: the candles drop their prints.
    s.at(T0 + 71 * M);
    h.host.replay(s.cut().commands);
    const entries = [...capture.entries()] as MarketDataEntry[];
    capture.release();
    const prints = entries.find((e) => e.kind === 'prints' && e.market === 1);
    expect(prints?.kind === 'prints' && prints.prints.map((p) => p[0])).toEqual([
      first,
      first + 1,
      third,
    ]);
  });

  it('keeps a copy before a read closes candles or slides the 24 h window (no batch)', () => {
    const s = new Script();
    s.at(T0 + 10 * M + 1_000);
    s.trade('BTC-PERP', '60000');
    const h = new Harness(createEngineState({}, T0), T0);
    h.play(s.cut());
    const capture = h.md.checkpoint().capture();
    h.clock.set(T0 + 10 * M + 25 * 60 * M);
    expect(h.md.tickers()[0]).toMatchObject({ open24h: '60000', volume24h: '0' });
    expect(h.md.candles('BTC-PERP', '1m', undefined, undefined, 5_000)).toHaveLength(1_501);
    const entries = [...capture.entries()] as MarketDataEntry[];
    capture.release();
    const ticker = entries.find((e) => e.kind === 'ticker' && e.market === 1);
    expect(ticker?.kind === 'ticker' && [ticker.priorClose, ticker.buckets.length]).toEqual([
      null,
      1,
    ]);
    const minutes = entries.find(
      (e) => e.kind === 'candles' && e.market === 1 && e.interval === '1m',
    );
    expect(minutes?.kind === 'candles' && [minutes.current?.[0], minutes.history.length]).toEqual([
      T0 + 10 * M,
      0,
    ]);
  });

  it('keeps a copy before a closed candle is restated (not only the open one)', () => {
    const s = new Script();
    s.at(T0 + 10 * M + 1_000);
    const first = s.trade('BTC-PERP', '60000');
    s.trade('BTC-PERP', '60500');
    s.cut();
    s.at(T0 + 12 * M);
    s.cut();
    const h = new Harness(createEngineState({}, T0), T0);
    for (const step of s.steps) h.play(step);
    const capture = h.md.checkpoint().capture();
    s.bust(first);
    const bust = s.cut();
    h.play(bust);
    const entries = [...capture.entries()] as MarketDataEntry[];
    capture.release();
    const minutes = entries.find(
      (e) => e.kind === 'candles' && e.market === 1 && e.interval === '1m',
    );
    expect(minutes?.kind === 'candles' && minutes.history[0]).toEqual([
      T0 + 10 * M,
      px(60000),
      px(60500),
      px(60000),
      px(60500),
      2000n,
      12050000000n,
      2,
    ]);
    expect(h.md.candles('BTC-PERP', '1m')?.[0]).toMatchObject({ trades: 1, open: '60500' });
  });

  it('lands the journal tail in its own minutes after a restore', () => {
    const s = new Script();
    s.at(T0 + 5_000);
    s.trade('BTC-PERP', '65000');
    s.cut();
    const h = new Harness(createEngineState({}, T0), T0);
    h.play(s.steps[0] as Step);
    const capture = h.md.checkpoint().capture();
    const entries = [...capture.entries()].map(roundTrip);
    capture.release();
    const snapshot = h.host.state;
    s.at(T0 + 5 * M);
    s.trade('BTC-PERP', '65100');
    const tail = s.cut();

    // Restarted an hour later: the tail replayed, then the checkpoint loaded and fed the batches
    // since, as the history backfill does.
    const restarted = new Harness(snapshot, T0 + 60 * M);
    const kept: CommittedBatch[] = [];
    restarted.host.subscribe((b) => kept.push(b));
    restarted.host.replay(tail.commands);
    const restorer = restarted.md.checkpoint().restorer();
    for (const e of entries) restorer.add(e);
    restorer.check?.();
    for (const b of kept) restorer.apply(b);
    restorer.commit();
    const traded = restarted.md.candles('BTC-PERP', '1m')?.filter((c) => c.trades > 0);
    expect(traded?.map((c) => [c.openTime - T0, c.close])).toEqual([
      [0, '65000'],
      [5 * M, '65100'],
    ]);
  });

  it('keeps the live history size, not the captured one', () => {
    const s = new Script();
    for (let k = 0; k < 12; k++) {
      s.at(T0 + k * 15 * M + 1_000);
      s.trade('BTC-PERP', String(60_000 + k));
    }
    s.cut();
    const h = new Harness(createEngineState({}, T0), T0, 8);
    h.play(s.steps[0] as Step);
    const at = h.clock.now();
    const capture = h.md.checkpoint().capture();
    const entries = [...capture.entries()].map(roundTrip);
    capture.release();
    const small = new Harness(h.host.state, at, 3);
    const restorer = small.md.checkpoint().restorer();
    for (const e of entries) restorer.add(e);
    restorer.check?.();
    restorer.commit();
    const full = h.md.candles('BTC-PERP', '15m', undefined, undefined, 100) ?? [];
    expect(full).toHaveLength(9);
    expect(small.md.candles('BTC-PERP', '15m', undefined, undefined, 100)).toEqual(full.slice(-4));
  });
});

describe('market-data checkpoint of the projections', () => {
  it('writes a busy bust window in several prints entries and reads them back in order', () => {
    const candles = new CandleProjection(CANDLE_HISTORY);
    const trades = PRINTS_PER_ENTRY + 700;
    for (let id = 1; id <= trades; id++) {
      const price = 60_000n + BigInt(id % 13);
      candles.trade(
        1,
        { tradeId: id, price, quantity: 1n, quote: price, time: T0 + id * 20 },
        noCandleChanges(),
      );
    }
    const capture = captureMarketData(new TickerProjection(), candles, new TradeTape());
    const entries = [...capture.entries()].map(roundTrip);
    capture.release();
    const prints = entries.filter((e) => (e as MarketDataEntry).kind === 'prints');
    expect(prints.map((e) => (e as { prints: unknown[] }).prints.length)).toEqual([
      PRINTS_PER_ENTRY,
      700,
    ]);
    const restored = candles.emptyCopy();
    const restore = new MarketDataRestore(new TickerProjection(), restored, new TradeTape());
    for (const e of entries) restore.add(e);
    restore.finish();
    expect(restored.heldPrints).toBe(trades);
    // A bust restates each from the prints it holds: a trade of either entry, alike.
    for (const id of [5, PRINTS_PER_ENTRY + 350]) {
      const [a, b] = [noCandleChanges(), noCandleChanges()];
      candles.bust(1, id, a);
      restored.bust(1, id, b);
      expect(b).toEqual(a);
      expect(a.busts).toHaveLength(1);
    }
    for (const i of INTERVALS)
      expect(restored.range(1, i, { limit: 5_000 })).toEqual(candles.range(1, i, { limit: 5_000 }));
  });
});

describe('market-data checkpoint entries that cannot be read', () => {
  /** A live service with trades, the entries of its capture, and what it answers. */
  function captured(): { h: Harness; entries: MarketDataEntry[]; before: unknown } {
    const s = new Script();
    s.at(T0 + 10 * M + 1_000);
    s.trade('BTC-PERP', '60000');
    s.trade('ETH-PERP', '3000');
    s.at(T0 + 12 * M);
    s.trade('BTC-PERP', '60100');
    s.cut();
    const h = new Harness(createEngineState({}, T0), T0);
    h.play(s.steps[0] as Step);
    const capture: ReadModelCapture = h.md.checkpoint().capture();
    const entries = [...capture.entries()].map(roundTrip) as MarketDataEntry[];
    capture.release();
    // The live projections move on, so a restorer that wrote into them would show.
    s.at(T0 + 15 * M);
    s.trade('BTC-PERP', '60300');
    s.trade('ETH-PERP', '3005');
    h.play(s.cut());
    return { h, entries, before: h.answers() };
  }

  const find = (entries: MarketDataEntry[], kind: string, interval?: string): number =>
    entries.findIndex(
      (e) =>
        e.kind === kind &&
        e.market === 1 &&
        (interval === undefined || ('interval' in e && e.interval === interval)),
    );

  /** A deep copy of the entries with the one at `index` replaced by `change(copy of it)`. */
  const corrupt = (
    entries: MarketDataEntry[],
    index: number,
    change: (e: Record<string, unknown>) => unknown,
  ): unknown[] =>
    entries.map((e, i) =>
      i === index ? change(decodeJson(encodeJson(e)) as Record<string, unknown>) : e,
    );

  const cases: [string, (entries: MarketDataEntry[]) => unknown[], RegExp][] = [
    ['not an object', (es) => [...es, 'ticker'], /entry \d+: the entry is not an object/],
    [
      'an unknown kind',
      (es) => corrupt(es, 0, (e) => ({ ...e, kind: 'orders' })),
      /unknown kind "orders"/,
    ],
    [
      'a market that is not an id',
      (es) => corrupt(es, 0, (e) => ({ ...e, market: -1 })),
      /market is not an integer >= 0/,
    ],
    [
      'a price written as a number',
      (es) =>
        corrupt(es, find(es, 'ticker'), (e) => ({
          ...e,
          buckets: (e.buckets as unknown[][]).map((b) => [b[0], 60000, ...b.slice(2)]),
        })),
      /ticker of market 1\): buckets\[0\] open is not a bigint/,
    ],
    [
      'buckets out of order',
      (es) =>
        corrupt(es, find(es, 'ticker'), (e) => ({
          ...e,
          buckets: [...(e.buckets as unknown[]), ...(e.buckets as unknown[])],
        })),
      /buckets\[\d+\] starts at \d+, not after \d+/,
    ],
    [
      'a second ticker of a market',
      (es) => [...es, es[find(es, 'ticker')]],
      /a second ticker of the market/,
    ],
    [
      'an unknown interval',
      (es) => corrupt(es, find(es, 'candles', '1m'), (e) => ({ ...e, interval: '1w' })),
      /unknown interval "1w"/,
    ],
    [
      'a candle whose high is below its close',
      (es) =>
        corrupt(es, find(es, 'candles', '5m'), (e) => {
          const current = [...(e.current as unknown[])];
          current[2] = 1n;
          return { ...e, current };
        }),
      /5m candles of market 1\): current has low \d+ and high 1 around/,
    ],
    [
      'a candle not aligned to its interval',
      (es) =>
        corrupt(es, find(es, 'candles', '1h'), (e) => {
          const current = [...(e.current as unknown[])];
          current[0] = T0 + 1;
          return { ...e, current };
        }),
      /current starts at \d+, not a multiple of 3600000 ms/,
    ],
    [
      'a candle with a field missing',
      (es) =>
        corrupt(es, find(es, 'candles', '1m'), (e) => ({
          ...e,
          history: (e.history as unknown[][]).map((c) => c.slice(1)),
        })),
      /history\[0\] has 7 fields, not 8/,
    ],
    [
      'a second series of an interval',
      (es) => [...es, es[find(es, 'candles', '3m')]],
      /a second series of the same interval/,
    ],
    [
      'prints out of trade order',
      (es) =>
        corrupt(es, find(es, 'prints'), (e) => ({
          ...e,
          prints: [...(e.prints as unknown[])].reverse(),
        })),
      /prints of market 1\): prints\[1\] \(trade \d+\) is not after trade \d+/,
    ],
    [
      'tape prints out of trade order',
      (es) =>
        corrupt(es, find(es, 'tape'), (e) => ({
          ...e,
          trades: [...(e.trades as unknown[])].reverse(),
        })),
      /trade tape of market 1\): trades\[1\] \(trade \d+\) is not after trade \d+/,
    ],
    [
      'a tape print with an unknown side',
      (es) =>
        corrupt(es, find(es, 'tape'), (e) => ({
          ...e,
          trades: (e.trades as unknown[][]).map((p) => [...p.slice(0, 4), 'buy']),
        })),
      /trades\[0\] side is "buy", not Buy or Sell/,
    ],
    [
      'a tape print of no quantity',
      (es) =>
        corrupt(es, find(es, 'tape'), (e) => ({
          ...e,
          trades: (e.trades as unknown[][]).map((p) => [p[0], p[1], p[2], 0n, p[4]]),
        })),
      /trades\[0\] quantity is below 1/,
    ],
    [
      'a print placed before it traded',
      (es) =>
        corrupt(es, find(es, 'prints'), (e) => ({
          ...e,
          prints: (e.prints as unknown[][]).map((p) => [
            p[0],
            p[1],
            (p[1] as number) - 1,
            ...p.slice(3),
          ]),
        })),
      /is placed at \d+, before its trade time/,
    ],
  ];

  it.each(cases)('refuses %s, naming it, and changes nothing', (_name, make, message) => {
    const { h, entries, before } = captured();
    const restorer = h.md.checkpoint().restorer();
    const bad = make(entries);
    let error: unknown;
    try {
      for (const e of bad) restorer.add(e);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(CheckpointEntryError);
    expect((error as Error).message).toMatch(/^marketData: /);
    expect((error as Error).message).toMatch(message);
    expect(h.answers()).toEqual(before);
  });

  it('refuses at check a market missing a series, and changes nothing', () => {
    const { h, entries, before } = captured();
    const restorer = h.md.checkpoint().restorer();
    for (const [i, e] of entries.entries())
      if (i !== find(entries, 'candles', '4h')) restorer.add(e);
    expect(() => restorer.check?.()).toThrow(CheckpointEntryError);
    expect(() => restorer.check?.()).toThrow(/marketData: market 1 has no 4h candles/);
    expect(h.answers()).toEqual(before);
  });

  it('restores the same entries unchanged (the cases above only differ by their fault)', () => {
    const { h, entries, before } = captured();
    const restorer = h.md.checkpoint().restorer();
    for (const e of entries) restorer.add(e);
    restorer.check?.();
    restorer.commit();
    const restored = h.answers();
    expect(restored).not.toEqual(before);
    // As captured: the trades after the capture are not in the restored projections.
    expect(JSON.stringify(restored)).not.toContain('60300');
    expect(JSON.stringify(before)).toContain('60300');
  });
});

/** A price in raw units (1e18). */
function px(price: number): bigint {
  return BigInt(price) * 10n ** 18n;
}
