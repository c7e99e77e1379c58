/**
 * History backfill after a restart from a snapshot (docs/durability.md, "Read models after a
 * snapshot restart"): once the background backfill is done, the order and trade history, the
 * report replay behind `subscribeTrading {fromSeq}`, tickers and candles read over the sockets
 * are what a full replay of the same data directory serves; trades made while a slow backfill
 * runs are all there, in order.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { wallet as plainWallet } from '@perp/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import type { Clock } from '../src/engine/clock.js';
import { DEFAULT_CONFIG } from '../src/index.js';
import { checkpointFileName, listCheckpointFiles } from '../src/journal/read-model-files.js';
import { listSnapshotFiles } from '../src/journal/snapshots.js';
import type { StartVenueOptions } from '../src/venue.js';
import { freshNonce, type Msg, Wallet, WsClient } from './support/client.js';
import {
  btc,
  limitOrder,
  px,
  startTestVenue,
  type TestVenue,
  type Traders,
  traders,
} from './support/fixture.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'perp-backfill-'));
  dirs.push(d);
  return d;
}

const SNAPSHOTS = { everyRecords: 5, everyMs: 0 } as const;
// Rate limits have their own tests; here the trading loops would hit the 20 requests/s per wallet.
const CONFIG = {
  ...DEFAULT_CONFIG,
  limits: {
    ...DEFAULT_CONFIG.limits,
    walletRequestsPerSecond: 100_000,
    signedRequestsPer5Minutes: 100_000,
    publicReadsPerSecond: 100_000,
  },
};
const INTERVALS = ['1m', '5m', '1h', '1d'] as const;

/** Bob rests a sell, Alice takes it with an IOC buy: one trade at `price`. */
async function trade(x: Traders, price: number, qty = 0.01): Promise<void> {
  const rest = await x.b.request({
    type: 'placeOrder',
    signature: await x.bob.sign('Order', limitOrder(false, px(price), btc(qty))),
  });
  expect(rest.type).toBe('orderAck');
  const take = await x.a.request({
    type: 'placeOrder',
    signature: await x.alice.sign(
      'Order',
      limitOrder(true, px(price), btc(qty), { timeInForce: 2 }),
    ),
  });
  expect(take.type).toBe('orderAck');
}

/** A resting order, cancelled at once when `cancel` (a closed order without a trade). */
async function rest(x: Traders, price: number, cancel: boolean): Promise<void> {
  const ack = await x.a.request({
    type: 'placeOrder',
    signature: await x.alice.sign('Order', limitOrder(true, px(price), btc(0.01))),
  });
  expect(ack.type).toBe('orderAck');
  if (!cancel) return;
  const orderId = BigInt((ack.order as { orderId: string }).orderId);
  const done = await x.a.request({
    type: 'cancelOrder',
    signature: await x.alice.sign('Cancel', {
      market: 1,
      orderId,
      nonce: freshNonce(),
      deadline: Wallet.deadline(),
    }),
  });
  expect(done).toMatchObject({ type: 'cancelAck' });
}

/** Waits until a snapshot covers every journal record so far (writing records to trigger one). */
async function snapshotCoveringAll(t: TestVenue, dir: string): Promise<number> {
  const host = t.venue.context.host;
  const target = host.journalSeq;
  for (let round = 0; round < 3000; round++) {
    const newest = listSnapshotFiles(dir)[0]?.seq ?? 0;
    if (newest >= target) return newest;
    await new Promise((r) => setTimeout(r, 10));
    if (round % 50 === 49)
      await host.submit({ type: 'openAccount', account: plainWallet(5000 + round) });
  }
  throw new Error(`no snapshot covering journal seq ${target}`);
}

/** What the read models serve, over REST and the sockets. */
async function readModels(t: TestVenue, x: Traders): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const [name, w] of [
    ['alice', x.alice],
    ['bob', x.bob],
  ] as const) {
    out[`${name}.trades`] = (
      await t.api('GET', `/account/trades?wallet=${w.address}&limit=500`)
    ).body;
    out[`${name}.orders`] = (
      await t.api('GET', `/historic/orders?wallet=${w.address}&limit=500`)
    ).body;
  }
  // Every report since the first, replayed on subscribeTrading {fromSeq: 0}.
  const ws = await t.connect(x.alice);
  const sub = await ws.request({ type: 'subscribeTrading', fromSeq: 0 });
  const seq = sub.seq as number;
  if (sub.replay !== null) {
    await ws.waitFor((m) => m.type === 'executionReport' && m.seq === seq);
  }
  out['alice.subscribe'] = { seq, replay: sub.replay, resyncRequired: sub.resyncRequired };
  out['alice.replayed'] = ws.inbox.filter((m) => m.type === 'executionReport' && m.replay);
  // Tickers and the open candle of a few intervals from the market-data socket.
  const md = await WsClient.connect(t.venue.marketdata);
  try {
    await md.request({ type: 'subscribe', channel: 'ticker', instrument: 'BTC-PERP' });
    const { time: _t, ...ticker } = await md.waitFor((m) => m.type === 'ticker');
    out.ticker = ticker;
    for (const interval of INTERVALS) {
      await md.request({ type: 'subscribe', channel: 'candles', instrument: 'BTC-PERP', interval });
      out[`candle.${interval}`] = await md.waitFor(
        (m) => m.type === 'candle' && m.interval === interval,
      );
    }
  } finally {
    await md.close();
  }
  return out;
}

/**
 * One clock per data directory, shared by every venue started on it: wall time shifted forward
 * (by under a minute, well inside the signed requests' 5-minute window) so the test starts on a
 * minute boundary. The read models compared include each interval's open candle, which follows
 * the clock; a boundary between the two reads would make them differ for no fault of the
 * backfill, and every interval's next boundary is at least a minute after the test starts.
 */
const clocks = new Map<string, Clock>();

function clockFor(dir: string): Clock {
  let clock = clocks.get(dir);
  if (clock === undefined) {
    const start = Date.now();
    const minute = Math.ceil(start / 60_000) * 60_000;
    clock = { now: () => minute + (Date.now() - start) };
    clocks.set(dir, clock);
  }
  return clock;
}

/** Deletes the read-model checkpoints: the start falls back to re-reducing the journal. */
function dropCheckpoints(dir: string): void {
  for (const f of listCheckpointFiles(dir)) rmSync(f.path);
}

/** Until no snapshot write is in progress and the newest snapshot has its checkpoint. */
async function checkpointsSettled(dir: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    const busy = readdirSync(dir).some((n) => n.endsWith('.tmp'));
    if (!busy && listSnapshotFiles(dir)[0]?.seq === listCheckpointFiles(dir)[0]?.seq) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('the newest snapshot never got its read-model checkpoint');
}

async function restart(dir: string, options: StartVenueOptions = {}): Promise<TestVenue> {
  return startTestVenue({
    dataDir: dir,
    snapshots: SNAPSHOTS,
    config: CONFIG,
    clock: clockFor(dir),
    ...options,
  });
}

/** The read models a start without snapshots (a full replay) of `dir` serves. */
async function fullReplayReadModels(dir: string): Promise<Record<string, unknown>> {
  const t = await restart(dir, { snapshots: false });
  const full = await readModels(t, await traders(t, false));
  await t.close();
  return full;
}

describe('history backfill after a restart from a snapshot', () => {
  it('serves the read models of a full replay of the same journal', async () => {
    const dir = tempDir();
    let t = await restart(dir);
    await t.oracle({ 'BTC-PERP': '65000' });
    let x = await traders(t, true);
    // Before the snapshot: trades, a filled and a cancelled order, an order left open.
    for (let i = 0; i < 4; i++) await trade(x, 65000 + i * 10);
    await rest(x, 60000, true);
    await rest(x, 60100, false);
    const snapSeq = await snapshotCoveringAll(t, dir);
    // After it (the journal tail): more of each.
    await trade(x, 65100);
    await rest(x, 60200, true);
    await rest(x, 60300, false);
    await trade(x, 65110, 0.02);
    await t.close();
    // These tests rebuild from the journal: a data directory from before read-model checkpoints.
    dropCheckpoints(dir);

    // Control: without the backfill the history starts at the snapshot (the defect).
    const lines: string[] = [];
    t = await restart(dir, { historyBackfill: false, log: (l) => lines.push(l) });
    expect(lines.some((l) => l.startsWith('recovered from snapshot'))).toBe(true);
    expect((await t.admin('GET', '/admin/read-models')).body).toEqual({
      complete: false,
      backfill: null,
    });
    x = await traders(t, false);
    const truncated = await readModels(t, x);
    await t.close();

    // Restart from the snapshot with the backfill.
    lines.length = 0;
    t = await restart(dir, { log: (l) => lines.push(l) });
    const recovered = lines.find((l) => l.startsWith('recovered from snapshot'));
    expect(recovered).toBeDefined();
    const seqOf = Number(/\(seq (\d+),/.exec(recovered as string)?.[1]);
    expect(seqOf).toBeGreaterThanOrEqual(snapSeq);
    expect(t.venue.historyBackfill).not.toBeNull();
    expect(await t.venue.historyBackfill?.done).toBe('complete');
    expect(t.venue.historyBackfill?.progress).toMatchObject({
      phase: 'complete',
      source: 'journal',
      reduced: seqOf,
      total: seqOf,
    });
    expect(lines).toContainEqual(
      expect.stringMatching(
        new RegExp(`^history backfill: re-reducing journal records 1\\.\\.${seqOf} `),
      ),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^history backfill: done, ${seqOf} journal records re-reduced in \\d+\\.\\d s \\(state hash matches the snapshot\\)`,
        ),
      ),
    );
    x = await traders(t, false);
    const backfilled = await readModels(t, x);
    await t.close();

    // The same directory, replayed from genesis.
    t = await restart(dir, { snapshots: false });
    expect(t.venue.historyBackfill).toBeNull();
    expect((await t.admin('GET', '/admin/read-models')).body).toEqual({
      complete: true,
      backfill: null,
    });
    x = await traders(t, false);
    const full = await readModels(t, x);
    await t.close();

    const trades = (m: Record<string, unknown>) =>
      (m['alice.trades'] as { trades: unknown[] }).trades;
    expect(trades(full)).toHaveLength(6);
    expect(trades(truncated).length).toBeLessThan(6);
    expect(truncated).not.toEqual(full);
    expect(full['alice.subscribe']).toMatchObject({ resyncRequired: false });
    expect((full['alice.replayed'] as Msg[]).length).toBeGreaterThan(0);
    expect(backfilled).toEqual(full);
  }, 60_000);

  it('keeps every trade made while a slow backfill runs, in order', async () => {
    const dir = tempDir();
    let t = await restart(dir);
    await t.oracle({ 'BTC-PERP': '65000' });
    let x = await traders(t, true);
    await trade(x, 65000);
    await rest(x, 60000, true);
    // A long prefix, so that re-reducing it one record per event-loop turn takes a while.
    const host = t.venue.context.host;
    for (let i = 0; i < 20_000; i += 2_000) {
      await Promise.all(
        Array.from({ length: 2_000 }, (_v, j) =>
          host.submit({ type: 'openAccount', account: plainWallet(10_000 + i + j) }),
        ),
      );
    }
    await trade(x, 65010);
    await snapshotCoveringAll(t, dir);
    await t.close();
    dropCheckpoints(dir);

    const lines: string[] = [];
    t = await restart(dir, { historyBackfill: { chunkRecords: 1 }, log: (l) => lines.push(l) });
    const backfill = t.venue.historyBackfill;
    expect(backfill).not.toBeNull();
    x = await traders(t, false);
    let ended = false;
    void backfill?.done.then(() => {
      ended = true;
    });
    // An operator can see that the history before the snapshot is not there yet.
    const running = await t.admin('GET', '/admin/read-models');
    expect(running.status).toBe(200);
    expect(running.body).toMatchObject({
      complete: false,
      backfill: { phase: 'reducing', source: 'journal' },
    });
    const during: number[] = [];
    for (let i = 0; !ended && i < 500; i++) {
      const price = 65100 + i;
      await trade(x, price);
      if (!ended) during.push(price);
    }
    expect(await backfill?.done).toBe('complete');
    // The backfill was still running after some of them were acknowledged.
    expect(during.length).toBeGreaterThanOrEqual(2);
    expect((await t.admin('GET', '/admin/read-models')).body).toMatchObject({
      complete: true,
      backfill: { phase: 'complete', source: 'journal' },
    });
    // Snapshots taken while it ran have no read-model checkpoint: the read models lacked the
    // history before the snapshot, and a start from one would have loaded them so.
    const done = lines.findIndex((l) => l.startsWith('history backfill: done'));
    const snapshotsDuring = lines.slice(0, done).filter((l) => /^snapshot .*: seq \d+/.test(l));
    expect(snapshotsDuring.length).toBeGreaterThan(0);
    for (const l of snapshotsDuring) expect(l).not.toContain('read models');
    await trade(x, 66000);
    const backfilled = await readModels(t, x);
    await t.close();

    const rows = (backfilled['alice.trades'] as { trades: { lastPx: string }[] }).trades;
    // Newest first: every trade of this run, then the two from before the snapshot.
    const expected = [66000, ...[...during].reverse(), 65010, 65000].map(String);
    expect(rows.map((r) => r.lastPx).filter((p) => expected.includes(p))).toEqual(expected);

    const full = await fullReplayReadModels(dir);
    expect(backfilled).toEqual(full);
  }, 120_000);
});

describe('read-model checkpoints beside the snapshots', () => {
  /** Trades and orders before a snapshot and after it; stops without a clean-stop snapshot. */
  async function history(dir: string): Promise<number> {
    const t = await restart(dir, { snapshots: { ...SNAPSHOTS, atClose: false } });
    await t.oracle({ 'BTC-PERP': '65000' });
    const x = await traders(t, true);
    for (let i = 0; i < 3; i++) await trade(x, 65000 + i * 10);
    await rest(x, 60000, true);
    await rest(x, 60100, false);
    const snapSeq = await snapshotCoveringAll(t, dir);
    await trade(x, 65100);
    await rest(x, 60200, true);
    await checkpointsSettled(dir);
    await t.close();
    return snapSeq;
  }

  it('a restart loads the read models of its snapshot instead of re-reducing the journal', async () => {
    const dir = tempDir();
    await history(dir);
    const newest = listSnapshotFiles(dir)[0]?.seq as number;
    expect(listCheckpointFiles(dir)[0]?.seq).toBe(newest);

    const lines: string[] = [];
    const t = await restart(dir, { log: (l) => lines.push(l) });
    expect(await t.venue.historyBackfill?.done).toBe('complete');
    expect(t.venue.historyBackfill?.progress).toMatchObject({
      phase: 'complete',
      source: 'checkpoint',
      reduced: 0,
    });
    expect(lines).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^history backfill: done, the read models at seq ${newest} loaded from .*readmodels-0+${newest}\\.ckpt \\(\\d+ bytes, \\d+ entries\\) in \\d+\\.\\d s, \\d+ later batches merged`,
        ),
      ),
    );
    expect(lines.some((l) => l.includes('re-reducing'))).toBe(false);
    expect((await t.admin('GET', '/admin/read-models')).body).toEqual({
      complete: true,
      backfill: {
        phase: 'complete',
        source: 'checkpoint',
        reduced: 0,
        total: newest,
        pendingBatches: 0,
      },
    });
    const x = await traders(t, false);
    const restored = await readModels(t, x);
    await t.close();

    const full = await fullReplayReadModels(dir);
    expect((full['alice.trades'] as { trades: unknown[] }).trades).toHaveLength(4);
    expect(restored).toEqual(full);
  }, 60_000);

  it('a damaged checkpoint is skipped with its reason, the journal rebuilds, and the next start loads a new one', async () => {
    const dir = tempDir();
    await history(dir);
    const newest = listCheckpointFiles(dir)[0] as { path: string; seq: number };
    const data = readFileSync(newest.path);
    data.writeUInt8(data.readUInt8(data.length - 2) ^ 0x01, data.length - 2);
    writeFileSync(newest.path, data);

    const lines: string[] = [];
    let t = await restart(dir, { log: (l) => lines.push(l) });
    expect(await t.venue.historyBackfill?.done).toBe('complete');
    expect(t.venue.historyBackfill?.progress).toMatchObject({ source: 'journal' });
    expect(lines).toContain(
      `history backfill: no read-model checkpoint loaded (${newest.path}: body checksum mismatch)`,
    );
    let x = await traders(t, false);
    const rebuilt = await readModels(t, x);
    // Complete again, the read models are checkpointed beside the snapshots written from now on
    // (and beside the newest one at a clean stop with nothing newer: read-model-files.test.ts).
    await t.close();
    expect(listCheckpointFiles(dir)[0]?.seq).toBe(listSnapshotFiles(dir)[0]?.seq);

    lines.length = 0;
    t = await restart(dir, { log: (l) => lines.push(l) });
    expect(await t.venue.historyBackfill?.done).toBe('complete');
    expect(t.venue.historyBackfill?.progress).toMatchObject({ source: 'checkpoint' });
    x = await traders(t, false);
    const restored = await readModels(t, x);
    await t.close();
    expect(restored).toEqual(rebuilt);
  }, 60_000);

  it("without its snapshot's checkpoint, it re-reduces from an older snapshot's and serves a full replay's read models", async () => {
    const dir = tempDir();
    await history(dir);
    // The newest snapshot's checkpoint is lost (a crash between the two writes); an older one
    // is there.
    const [newest, older] = listSnapshotFiles(dir);
    const olderCheckpoint = listCheckpointFiles(dir).find((f) => f.seq === older?.seq);
    expect(olderCheckpoint).toBeDefined();
    rmSync(join(dir, checkpointFileName(newest?.seq as number)));

    const lines: string[] = [];
    const t = await restart(dir, { log: (l) => lines.push(l) });
    expect(await t.venue.historyBackfill?.done).toBe('complete');
    expect(t.venue.historyBackfill?.progress).toMatchObject({
      source: 'journal',
      reduced: newest?.seq,
    });
    expect(lines).toContainEqual(
      `history backfill: re-reducing journal records ${(older?.seq as number) + 1}..${newest?.seq} in the background to rebuild the read models from before the snapshot, from the read models at seq ${older?.seq} loaded from ${olderCheckpoint?.path}`,
    );
    const backfilled = await readModels(t, await traders(t, false));
    await t.close();

    const full = await fullReplayReadModels(dir);
    expect((full['alice.trades'] as { trades: unknown[] }).trades).toHaveLength(4);
    expect(backfilled).toEqual(full);
  }, 60_000);
});
