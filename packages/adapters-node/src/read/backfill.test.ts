/**
 * The history backfill on its own (the venue-level tests over sockets are in
 * `test/backfill.e2e.test.ts`): it rebuilds the history of a full replay with live batches
 * arriving meanwhile, refuses a prefix whose state hash is not the snapshot's, and stops when
 * cancelled, leaving the read models as they were.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Command,
  createEngineState,
  ENGINE_RULES_VERSION,
  type EngineState,
  type JournalRecord,
  reduceAll,
  stateHash,
} from '@perp/core';
import { BTC_SETTINGS, TestVenue, wallet } from '@perp/core/testing';
import { describe, expect, it } from 'vitest';
import type { BatchListener, CommittedBatch } from '../engine/host.js';
import { captureReadModels, writeCheckpointFile } from '../journal/read-model-files.js';
import { HistoryBackfill, historyRebuild, reportStreamsRebuild } from './backfill.js';
import { HistoryStore } from './history.js';
import { ReportStreams } from './report-streams.js';

/** A command log with trades, cancels and open orders on both sides of `cut`. */
function journal(): { commands: Command[]; cut: number } {
  const v = new TestVenue();
  v.list(BTC_SETTINGS);
  const [a, b] = [wallet(1), wallet(2)];
  for (const w of [a, b]) {
    v.open(w);
    v.fund(w, '100000');
  }
  v.oracle({ 'BTC-PERP': '65000' });
  const round = (i: number) => {
    v.place(b, 'BTC-PERP', { side: 'Sell', qty: '0.01', price: String(65000 + i) });
    v.place(a, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: String(65000 + i), tif: 'IOC' });
    v.place(a, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: String(60000 + i) });
  };
  for (let i = 0; i < 5; i++) round(i);
  const cut = v.log.length;
  for (let i = 5; i < 10; i++) round(i);
  return { commands: [...v.log], cut };
}

class FakeHost {
  state: EngineState;
  readonly listeners = new Set<BatchListener>();
  constructor(state: EngineState) {
    this.state = state;
  }
  subscribe(listener: BatchListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  run(commands: readonly Command[]): void {
    const r = reduceAll(this.state, commands);
    this.state = r.state;
    const batch: CommittedBatch = { commands, events: r.events, state: r.state };
    for (const l of this.listeners) l(batch);
  }
}

const records = (commands: readonly Command[]): JournalRecord[] =>
  commands.map((command, i) => ({ seq: i + 1, command }));

function view(h: HistoryStore, time: number): unknown {
  return [wallet(1), wallet(2)].map((w) => [
    h.orders(w, { limit: 500 }, time),
    h.trades(w, { limit: 500 }, time),
  ]);
}

/** A venue restarted from a snapshot at `cut`: live read models fed the tail only. */
function restarted(commands: Command[], cut: number) {
  const genesis = createEngineState({}, (commands[0] as Command).time);
  const snapState = reduceAll(genesis, commands.slice(0, cut)).state;
  const host = new FakeHost(snapState);
  const history = new HistoryStore();
  const streams = new ReportStreams();
  history.seedWorkingOrders(snapState);
  host.subscribe((b) => history.apply(b));
  host.subscribe((b) => streams.apply(b));
  return { host, history, streams, snapState };
}

describe('history backfill', () => {
  it('rebuilds the history of a full replay while live batches arrive', async () => {
    const { commands, cut } = journal();
    const { host, history, streams, snapState } = restarted(commands, cut);
    const lines: string[] = [];
    const backfill = new HistoryBackfill({
      host,
      snapshot: { seq: cut, hash: stateHash(snapState) },
      records: () => records(commands),
      rebuilds: [historyRebuild(history), reportStreamsRebuild(streams)],
      log: (l) => lines.push(l),
      chunkRecords: 1,
    });
    const tail = commands.slice(cut);
    host.run(tail.slice(0, 3));
    void backfill.start();
    // The rest of the tail arrives live, one command per turn, while the backfill runs.
    for (const c of tail.slice(3)) {
      await new Promise((r) => setImmediate(r));
      host.run([c]);
    }
    expect(await backfill.done).toBe('complete');
    expect(host.listeners.size).toBe(2);

    const full = new HistoryStore();
    const fullStreams = new ReportStreams();
    const genesis = createEngineState({}, (commands[0] as Command).time);
    const r = reduceAll(genesis, commands);
    const batch = { commands, events: r.events, state: r.state };
    full.apply(batch);
    fullStreams.apply(batch);
    const now = (commands[commands.length - 1] as Command).time + 1;
    expect(view(history, now)).toEqual(view(full, now));
    for (const w of [wallet(1), wallet(2)]) {
      const seq = r.state.accounts.get(w)?.reportSeq ?? 0;
      expect(streams.since(w, 0, seq)).toEqual(fullStreams.since(w, 0, seq));
      expect(streams.since(w, 0, seq).resyncRequired).toBe(false);
    }
    expect(lines[0]).toBe(
      `history backfill: re-reducing journal records 1..${cut} in the background to rebuild the read models from before the snapshot`,
    );
    expect(lines[1]).toMatch(/^history backfill: done, \d+ journal records re-reduced in/);
  });

  it('gives up on a state hash that is not the snapshot’s and keeps the read models', async () => {
    const { commands, cut } = journal();
    const { host, history, streams } = restarted(commands, cut);
    host.run(commands.slice(cut));
    const now = (commands[commands.length - 1] as Command).time + 1;
    const before = JSON.stringify(view(history, now));
    const lines: string[] = [];
    const backfill = new HistoryBackfill({
      host,
      snapshot: { seq: cut, hash: `0x${'0'.repeat(64)}` },
      records: () => records(commands),
      rebuilds: [historyRebuild(history), reportStreamsRebuild(streams)],
      log: (l) => lines.push(l),
    });
    expect(await backfill.start()).toBe('abandoned');
    expect(JSON.stringify(view(history, now))).toBe(before);
    expect(host.listeners.size).toBe(2);
    expect(lines[1]).toMatch(
      new RegExp(
        `^history backfill abandoned: re-reducing journal records 1\\.\\.${cut} gives state hash 0x[0-9a-f]{64}, the snapshot has 0x0{64}; the read models keep only what followed the snapshot$`,
      ),
    );
  });

  it('names records written under other engine rules, and rebuilds them only on the snapshot’s hash', async () => {
    const { commands: written, cut: writtenCut } = journal();
    const t0 = (written[0] as Command).time;
    const t4 = (written[3] as Command).time;
    // The first records declared other rules; a later, unmarked declaration does not absolve them.
    const commands: Command[] = [
      { type: 'declareRules', time: t0, version: ENGINE_RULES_VERSION + 1 },
      ...written.slice(0, 4),
      { type: 'declareRules', time: t4, version: ENGINE_RULES_VERSION },
      ...written.slice(4),
    ];
    const cut = writtenCut + 2;
    const note = `journal records 2..5 include records written under engine rules ${ENGINE_RULES_VERSION + 1}, this build has rules ${ENGINE_RULES_VERSION}`;

    // The old rules computed another state: abandoned, saying why it may be.
    const a = restarted(commands, cut);
    a.host.run(commands.slice(cut));
    const now = (commands[commands.length - 1] as Command).time + 1;
    const before = JSON.stringify(view(a.history, now));
    const lines: string[] = [];
    const abandoned = new HistoryBackfill({
      host: a.host,
      snapshot: { seq: cut, hash: `0x${'1'.repeat(64)}` },
      records: () => records(commands),
      rebuilds: [historyRebuild(a.history), reportStreamsRebuild(a.streams)],
      log: (l) => lines.push(l),
    });
    expect(await abandoned.start()).toBe('abandoned');
    expect(JSON.stringify(view(a.history, now))).toBe(before);
    expect(lines[1]).toMatch(
      new RegExp(
        `^history backfill abandoned: re-reducing journal records 1\\.\\.${cut} gives state hash 0x[0-9a-f]{64}, the snapshot has 0x1{64} \\(${note.replaceAll('.', '\\.')}\\); the read models keep only what followed the snapshot$`,
      ),
    );

    // The same state under both rules: rebuilt, with a line saying under which rules.
    const b = restarted(commands, cut);
    lines.length = 0;
    const rebuilt = new HistoryBackfill({
      host: b.host,
      snapshot: { seq: cut, hash: stateHash(b.snapState) },
      records: () => records(commands),
      rebuilds: [historyRebuild(b.history)],
      log: (l) => lines.push(l),
    });
    expect(await rebuilt.start()).toBe('complete');
    expect(lines).toContain(
      `history backfill: ${note}; re-reduced under this build's rules they reach the snapshot's state hash, so their history is rebuilt under them`,
    );
  });

  it('stops when cancelled and when the journal is shorter than the snapshot', async () => {
    const { commands, cut } = journal();
    const { host, history, snapState } = restarted(commands, cut);
    let ended = 0;
    const cancelled = new HistoryBackfill({
      host,
      snapshot: { seq: cut, hash: stateHash(snapState) },
      records: () => records(commands),
      rebuilds: [historyRebuild(history)],
      log: () => {},
      chunkRecords: 1,
      onEnd: () => ended++,
    });
    const run = cancelled.start();
    cancelled.cancel();
    expect(await run).toBe('cancelled');
    expect(ended).toBe(1);
    expect(host.listeners.size).toBe(2);

    const lines: string[] = [];
    const short = new HistoryBackfill({
      host,
      snapshot: { seq: cut, hash: stateHash(snapState) },
      records: () => records(commands.slice(0, cut - 1)),
      rebuilds: [historyRebuild(history)],
      log: (l) => lines.push(l),
    });
    expect(await short.start()).toBe('abandoned');
    expect(lines[1]).toContain(`the journal ends before seq ${cut}`);
  });

  it('loads the checkpoint beside the snapshot instead, merges the live batches, and re-reduces only without one', async () => {
    const { commands, cut } = journal();
    const dir = mkdtempSync(join(tmpdir(), 'perp-backfill-ckpt-'));
    try {
      // The read models at `cut`, checkpointed as a snapshotter does.
      const genesis = createEngineState({}, (commands[0] as Command).time);
      const prefix = reduceAll(genesis, commands.slice(0, cut));
      const at = { history: new HistoryStore(), streams: new ReportStreams() };
      const prefixBatch = {
        commands: commands.slice(0, cut),
        events: prefix.events,
        state: prefix.state,
      };
      at.history.apply(prefixBatch);
      at.streams.apply(prefixBatch);
      const hash = stateHash(prefix.state);
      await writeCheckpointFile({
        dir,
        seq: cut,
        stateHash: hash,
        capture: captureReadModels([at.history.checkpoint(), at.streams.checkpoint()]),
        sliceMs: () => 4,
        abandoned: () => false,
      });

      const { host, history, streams } = restarted(commands, cut);
      const lines: string[] = [];
      let released = 0;
      const backfill = new HistoryBackfill({
        onRecordsUnneeded: () => released++,
        host,
        snapshot: { seq: cut, hash },
        // Never read: the checkpoint is used.
        records: () => {
          throw new Error('the journal was read');
        },
        rebuilds: [historyRebuild(history), reportStreamsRebuild(streams)],
        log: (l) => lines.push(l),
        checkpoint: {
          dir,
          snapshot: { seq: cut, hash },
          parts: [history.checkpoint(), streams.checkpoint()],
        },
        sliceMs: 0,
      });
      const tail = commands.slice(cut);
      host.run(tail.slice(0, 3));
      void backfill.start();
      for (const c of tail.slice(3)) {
        await new Promise((r) => setImmediate(r));
        host.run([c]);
      }
      expect(await backfill.done).toBe('complete');
      expect(backfill.progress).toMatchObject({
        phase: 'complete',
        source: 'checkpoint',
        reduced: 0,
      });
      // The journal's copy could go as soon as the checkpoint was loaded.
      expect(released).toBe(1);
      expect(lines).toEqual([
        expect.stringMatching(
          new RegExp(
            `^history backfill: done, the read models at seq ${cut} loaded from .* \\(\\d+ bytes, \\d+ entries\\) in \\d+\\.\\d s, \\d+ later batches merged;`,
          ),
        ),
      ]);

      const full = new HistoryStore();
      const fullStreams = new ReportStreams();
      const r = reduceAll(genesis, commands);
      const batch = { commands, events: r.events, state: r.state };
      full.apply(batch);
      fullStreams.apply(batch);
      const now = (commands[commands.length - 1] as Command).time + 1;
      expect(view(history, now)).toEqual(view(full, now));
      for (const w of [wallet(1), wallet(2)]) {
        const seq = r.state.accounts.get(w)?.reportSeq ?? 0;
        expect(streams.since(w, 0, seq)).toEqual(fullStreams.since(w, 0, seq));
      }

      // A checkpoint of another state: named, then the journal is re-reduced.
      const other = restarted(commands, cut);
      lines.length = 0;
      const fallback = new HistoryBackfill({
        onRecordsUnneeded: () => released++,
        host: other.host,
        snapshot: { seq: cut, hash },
        records: () => records(commands),
        rebuilds: [historyRebuild(other.history), reportStreamsRebuild(other.streams)],
        log: (l) => lines.push(l),
        checkpoint: {
          dir,
          snapshot: { seq: cut, hash: `0x${'2'.repeat(64)}` },
          parts: [other.history.checkpoint(), other.streams.checkpoint()],
        },
      });
      other.host.run(tail);
      expect(await fallback.start()).toBe('complete');
      expect(fallback.progress.source).toBe('journal');
      expect(released).toBe(1);
      expect(lines[0]).toMatch(
        /^history backfill: no read-model checkpoint loaded \(.*readmodels-0+\d+\.ckpt: taken at seq \d+ with state hash 0x[0-9a-f]{64}, not the snapshot's/,
      );
      expect(lines[1]).toMatch(/^history backfill: re-reducing journal records 1\.\./);
      expect(view(other.history, now)).toEqual(view(full, now));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
