/**
 * Engine rules across restarts and upgrades: a venue declares its build's rules in the journal,
 * refuses to replay records written under other rules unless told to, and an upgrade after a
 * clean stop (which snapshots the journal's end) replays nothing of the old rules.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Command,
  createEngineState,
  ENGINE_RULES_VERSION,
  reduceAll,
  stateHash,
} from '@perp/core';
import { wallet } from '@perp/core/testing';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { type StartVenueOptions, startVenue, type Venue } from '../venue.js';
import { FileJournal } from './file-journal.js';
import { checkReplayRules, RulesVersionMismatchError } from './rules-version.js';
import { listSnapshotFiles, Snapshotter, snapshotFileName } from './snapshots.js';

const E = ENGINE_RULES_VERSION;
const OTHER = E + 1;
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'perp-rules-'));
  dirs.push(d);
  return d;
}

async function records(dir: string): Promise<Command[]> {
  const j = FileJournal.open(join(dir, 'journal.log'), { log: () => {} });
  const out: Command[] = [];
  for await (const r of j.read(0)) out.push(r.command);
  await j.close();
  return out;
}

/** A venue on `dir` with no price feed and a free port; `options` add to or override that. */
function launch(dir: string, options: Omit<StartVenueOptions, 'dataDir'> = {}): Promise<Venue> {
  return startVenue({ dataDir: dir, port: 0, priceFeed: 'none', log: () => {}, ...options });
}

/** A data directory whose journal a build with rules {@link OTHER} wrote: seqs 1..4. */
async function writtenUnderOtherRules(dir: string): Promise<Command[]> {
  const time = Date.now() - 60_000;
  const commands: Command[] = [
    { type: 'declareRules', time, version: OTHER },
    { type: 'openAccount', time, account: wallet(1) },
    { type: 'openAccount', time: time + 1, account: wallet(2) },
    { type: 'createReferralCode', time: time + 2, kind: 'system', maxUses: 5, code: 'OLD-1' },
  ];
  const j = FileJournal.open(join(dir, 'journal.log'), { log: () => {} });
  await j.append(commands);
  await j.close();
  return commands;
}

/**
 * Starts this build on `dir`, opens 12 accounts from wallet `first` on (pausing between them so
 * snapshot rotation runs), stops it, and returns the state hash it stopped at.
 */
async function runAndStop(
  dir: string,
  options: Omit<StartVenueOptions, 'dataDir'>,
  first: number,
): Promise<string> {
  const venue = await launch(dir, { historyBackfill: false, ...options });
  for (let i = 0; i < 12; i++) {
    await venue.context.host.submit({ type: 'openAccount', account: wallet(first + i) });
    await new Promise((r) => setTimeout(r, 5));
  }
  const hash = stateHash(venue.context.host.state);
  await venue.close();
  return hash;
}

function start(dir: string, lines: string[], more: { replayUnderNewRules?: boolean } = {}) {
  return launch(dir, { log: (l) => lines.push(l), snapshots: false, ...more });
}

describe('engine rules in the journal', () => {
  it('a new venue declares its rules first; a restart by the same build declares nothing', async () => {
    const dir = tempDir();
    let venue: Venue = await start(dir, []);
    await venue.context.host.submit({ type: 'openAccount', account: wallet(1) });
    const seq = venue.context.host.journalSeq;
    await venue.close();
    const written = await records(dir);
    expect(written[0]).toMatchObject({ type: 'declareRules', version: E });
    expect(written[0]).not.toHaveProperty('replayed');
    expect(written.filter((c) => c.type === 'declareRules')).toHaveLength(1);

    const lines: string[] = [];
    venue = await start(dir, lines);
    expect(venue.context.host.journalSeq).toBe(seq);
    expect(venue.context.host.state.rulesVersion).toBe(E);
    expect(lines.some((l) => l.includes('declared'))).toBe(false);
    await venue.close();
  });

  it('refuses to replay records written under other rules, and changes nothing', async () => {
    const dir = tempDir();
    await writtenUnderOtherRules(dir);
    const journalPath = join(dir, 'journal.log');
    const bytes = readFileSync(journalPath);
    // The refusal comes after the replay began: the intervals the start had set (market-data
    // housekeeping and heartbeats, unref'd, so only a count of clears can see them) are cleared.
    const set = vi.spyOn(globalThis, 'setInterval');
    const cleared = vi.spyOn(globalThis, 'clearInterval');
    const attempt = start(dir, []);
    await expect(attempt).rejects.toThrow(RulesVersionMismatchError);
    const intervals = set.mock.results.map((r) => r.value);
    const clearedOnes = new Set(cleared.mock.calls.map((c) => c[0]));
    set.mockRestore();
    cleared.mockRestore();
    expect(intervals.length).toBeGreaterThan(0);
    expect(intervals.filter((t) => !clearedOnes.has(t))).toEqual([]);
    await expect(attempt).rejects.toThrow(
      `${journalPath}: records 2..4 include records written under engine rules ${OTHER} that would be replayed under rules ${E} (this build), which can change their outcomes.`,
    );
    await expect(attempt).rejects.toMatchObject({ version: OTHER, firstSeq: 2, lastSeq: 4 });
    expect(readFileSync(journalPath)).toEqual(bytes);
    // The lock was released: the same refusal again, not "locked".
    await expect(start(dir, [])).rejects.toThrow(RulesVersionMismatchError);
  });

  it('replays them when told to, and says so in the journal for the next start', async () => {
    const dir = tempDir();
    const old = await writtenUnderOtherRules(dir);
    const lines: string[] = [];
    let venue = await start(dir, lines, { replayUnderNewRules: true });
    expect(lines).toContain(
      `replaying journal records 2..4, which include records written under engine rules ${OTHER}, under rules ${E} (--replay-under-new-rules): their outcomes may differ from those acknowledged`,
    );
    expect(venue.context.host.state.rulesVersion).toBe(E);
    const seq = venue.context.host.journalSeq;
    const hash = stateHash(venue.context.host.state);
    await venue.close();
    const written = await records(dir);
    expect(written.slice(0, 4)).toEqual(old);
    // It names the four records it replayed (no snapshot: all of them).
    expect(written[4]).toMatchObject({ type: 'declareRules', version: E, replayed: 4 });
    expect(stateHash(reduceAll(createEngineState({}, old[0]!.time), written).state)).toBe(hash);

    // The records now count as this build's: a plain restart replays them.
    venue = await start(dir, []);
    expect(venue.context.host.journalSeq).toBe(seq);
    expect(stateHash(venue.context.host.state)).toBe(hash);
    await venue.close();
  });

  it('an upgrade after a snapshot of the old rules replays nothing of them', async () => {
    const dir = tempDir();
    const old = await writtenUnderOtherRules(dir);
    // The old build's clean stop: a snapshot at the journal's end, its state under rules OTHER.
    const state = reduceAll(createEngineState({}, old[0]!.time), old).state;
    expect(state.rulesVersion).toBe(OTHER);
    const snapshotter = new Snapshotter({ dir, log: () => {} });
    expect(await snapshotter.write(state, old.length)).not.toBeNull();
    await snapshotter.close();

    const lines: string[] = [];
    const venue = await launch(dir, { log: (l) => lines.push(l), historyBackfill: false });
    expect(lines).toContain(
      `engine rules ${E} declared in the journal (records before were written under rules ${OTHER})`,
    );
    expect(venue.context.host.state.accounts.size).toBe(2);
    await venue.context.host.submit({ type: 'openAccount', account: wallet(3) });
    await venue.close();
    const written = await records(dir);
    expect(written[4]).toEqual({ type: 'declareRules', time: written[4]!.time, version: E });

    // Without the snapshots the old records would be replayed under this build's rules: refused,
    // and the old build could not replay the records this build wrote after them.
    for (const f of listSnapshotFiles(dir)) rmSync(f.path);
    await expect(start(dir, [])).rejects.toThrow(
      `records 2..4 include records written under engine rules ${OTHER} that would be replayed under rules ${E} (this build), which can change their outcomes. Records after them were written by another build, so no single build replays them all as they were: restore a snapshot taken at or after seq 4`,
    );

    // The operator's word, though the state it reaches already declares this build's rules: it
    // is journaled, so the next start replays them without asking again.
    const replayed = await start(dir, [], { replayUnderNewRules: true });
    expect(replayed.context.host.state.rulesVersion).toBe(E);
    const hash = stateHash(replayed.context.host.state);
    await replayed.close();
    const again = await start(dir, []);
    expect(stateHash(again.context.host.state)).toBe(hash);
    await again.close();
  });

  it('an accepted replay onto a snapshot vouches only for the records it replayed', async () => {
    const dir = tempDir();
    const old = await writtenUnderOtherRules(dir);
    // A snapshot at seq 2 (records 1..2 reduced under rules OTHER), then a crash: 3..4 are a tail.
    const snapshotter = new Snapshotter({ dir, log: () => {} });
    const at2 = reduceAll(createEngineState({}, old[0]!.time), old.slice(0, 2)).state;
    expect(await snapshotter.write(at2, 2)).not.toBeNull();
    await snapshotter.close();
    const lines: string[] = [];
    const venue = await launch(dir, {
      log: (l) => lines.push(l),
      historyBackfill: false,
      replayUnderNewRules: true,
    });
    expect(lines).toContain(
      `replaying journal records 3..4, which include records written under engine rules ${OTHER}, under rules ${E} (--replay-under-new-rules): their outcomes may differ from those acknowledged`,
    );
    await venue.close();
    const written = await records(dir);
    expect(written[4]).toMatchObject({ type: 'declareRules', version: E, replayed: 2 });

    // A full replay would reduce record 2 under this build's rules for the first time: refused.
    for (const f of listSnapshotFiles(dir)) rmSync(f.path);
    await expect(start(dir, [])).rejects.toMatchObject({ firstSeq: 2, lastSeq: 2 });
  });

  it('rotation keeps the newest snapshot of the old rules, so damaged newer ones do not block', async () => {
    const dir = tempDir();
    const old = await writtenUnderOtherRules(dir);
    const boundary = reduceAll(createEngineState({}, old[0]!.time), old).state;
    const first = new Snapshotter({ dir, log: () => {} });
    expect(await first.write(boundary, old.length)).not.toBeNull();
    await first.close();

    // This build runs on, snapshotting every 3 records and keeping two.
    const policy = { everyRecords: 3, everyMs: 0, keep: 2 };
    const hash = await runAndStop(dir, { snapshots: policy }, 10);
    const files = listSnapshotFiles(dir).map((f) => f.seq);
    // The newest two, and the old rules' last snapshot at seq 4.
    expect(files).toHaveLength(3);
    expect(files[2]).toBe(old.length);

    // The newer snapshots lost: recovery starts from the old rules' snapshot and replays only
    // records of this build's rules.
    for (const f of listSnapshotFiles(dir).slice(0, 2)) rmSync(f.path);
    const lines: string[] = [];
    const venue = await launch(dir, {
      log: (l) => lines.push(l),
      historyBackfill: false,
      snapshots: policy,
    });
    expect(stateHash(venue.context.host.state)).toBe(hash);
    expect(
      lines.some((l) => l.startsWith(`recovered from snapshot ${join(dir, snapshotFileName(4))}`)),
    ).toBe(true);
    await venue.close();
  });
});

describe('rotation keeps an intact snapshot of the old rules', () => {
  it('passes over a damaged newest one of that version and keeps the older intact one', async () => {
    const dir = tempDir();
    const time = Date.now() - 60_000;
    const old: Command[] = [{ type: 'declareRules', time, version: OTHER }];
    for (let i = 0; i < 7; i++)
      old.push({ type: 'openAccount', time: time + i, account: wallet(50 + i) });
    const j = FileJournal.open(join(dir, 'journal.log'), { log: () => {} });
    await j.append(old);
    await j.close();
    // The old build snapshotted seqs 4 and 8; the body of 8 is damaged, its header intact.
    const writer = new Snapshotter({ dir, log: () => {}, policy: { keep: 5 } });
    for (const seq of [4, 8])
      expect(
        await writer.write(reduceAll(createEngineState({}, time), old.slice(0, seq)).state, seq),
      ).not.toBeNull();
    await writer.close();
    const eight = join(dir, snapshotFileName(8));
    const bytes = readFileSync(eight);
    bytes[bytes.length - 3] = (bytes[bytes.length - 3] as number) ^ 0xff;
    writeFileSync(eight, bytes);

    // This build replays 5..8 onto snapshot 4 (the operator's word), then runs and rotates.
    const policy = { everyRecords: 3, everyMs: 0, keep: 2 };
    const hash = await runAndStop(dir, { snapshots: policy, replayUnderNewRules: true }, 80);
    const seqs = listSnapshotFiles(dir).map((f) => f.seq);
    expect(seqs).toHaveLength(3);
    expect(seqs[2]).toBe(4);

    // The newer snapshots lost: snapshot 4 plus the journal, whose declaration covers 5..8.
    for (const f of listSnapshotFiles(dir).slice(0, 2)) rmSync(f.path);
    const venue = await launch(dir, { historyBackfill: false, snapshots: policy });
    expect(stateHash(venue.context.host.state)).toBe(hash);
    await venue.close();
  });
});

describe('the refusal names every rules version and the way out that works', () => {
  const t = 1;
  const cmd: Command = { type: 'tick', time: t };
  it('one old build, nothing after: start that build once', () => {
    const e = (() => {
      try {
        checkReplayRules('j', OTHER, [cmd, cmd], 7, false);
      } catch (x) {
        return x as RulesVersionMismatchError;
      }
      throw new Error('not refused');
    })();
    expect(e.message).toBe(
      `j: records 7..8 include records written under engine rules ${OTHER} that would be replayed under rules ${E} (this build), which can change their outcomes. Start the build with rules ${OTHER} on this data directory and stop it with SIGTERM (a clean stop writes a snapshot, so nothing is left to replay), then start this build; or start this build with --replay-under-new-rules to replay them under its rules anyway`,
    );
    expect(checkReplayRules('j', OTHER, [cmd, cmd], 7, true)).toBe(
      `replaying journal records 7..8, which include records written under engine rules ${OTHER}, under rules ${E} (--replay-under-new-rules): their outcomes may differ from those acknowledged`,
    );
  });

  it('two old builds: no single build can replay them', () => {
    const log: Command[] = [cmd, { type: 'declareRules', time: t, version: OTHER + 1 }, cmd];
    expect(() => checkReplayRules('j', OTHER, log, 1, false)).toThrow(
      `j: records 1..3 include records written under engine rules ${OTHER} and ${OTHER + 1} that would be replayed under rules ${E} (this build), which can change their outcomes. They were written by builds with different rules, so no single build replays them all as they were`,
    );
    expect(() => checkReplayRules('j', OTHER, log, 1, false)).toThrow(
      expect.objectContaining({ version: OTHER, versions: [OTHER, OTHER + 1] }),
    );
  });

  it('a declaration alone after them is no later record: the old build can still replay them', () => {
    const declaration: Command = { type: 'declareRules', time: t, version: E };
    expect(() => checkReplayRules('j', OTHER, [cmd, declaration], 3, false)).toThrow(
      `j: records 3..3 include records written under engine rules ${OTHER} that would be replayed under rules ${E} (this build), which can change their outcomes. Start the build with rules ${OTHER} on this data directory`,
    );
  });
});
