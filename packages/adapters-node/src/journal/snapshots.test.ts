/**
 * Snapshot files and snapshot recovery (reliability-anchors 5.4 F8, 5.5 P2): restart = newest
 * valid snapshot + the journal tail, with the pre-restart state hash; an invalid snapshot is
 * skipped with a log line (falling back to the previous one, then to full replay); a crash
 * during a snapshot write leaves the old set usable; a failed snapshot fsync is not fatal; only
 * the newest two are kept.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { MemoryJournal } from '@perp/adapters-memory';
import {
  type Command,
  createEngineState,
  ENGINE_RULES_VERSION,
  type EngineState,
  encodeSnapshot,
  reduceAll,
  SNAPSHOT_VERSION,
  stateHash,
} from '@perp/core';
import { BTC_SETTINGS, legacySnapshotText, TestVenue, wallet } from '@perp/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../engine/clock.js';
import { EngineHost } from '../engine/host.js';
import { type StartVenueOptions, startVenue, type Venue } from '../venue.js';
import { FileJournal } from './file-journal.js';
import { checkpointFileName, listCheckpointFiles } from './read-model-files.js';
import {
  JournalBehindSnapshotError,
  listSnapshotFiles,
  loadNewestSnapshot,
  readSnapshotFile,
  readSnapshotHeader,
  SnapshotFileError,
  Snapshotter,
  snapshotFileName,
} from './snapshots.js';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'perp-snap-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function sampleState() {
  const v = new TestVenue();
  v.list(BTC_SETTINGS);
  for (const w of [wallet(1), wallet(2)]) {
    v.open(w);
    v.fund(w, '50000');
  }
  v.oracle({ 'BTC-PERP': '65000' });
  v.place(wallet(1), 'BTC-PERP', {
    side: 'Buy',
    qty: '0.01',
    price: '64000',
    tif: 'GTD',
    expiry: Math.floor(v.time / 1000) + 600,
  });
  v.place(wallet(2), 'BTC-PERP', { side: 'Sell', qty: '0.02', price: '66000' });
  return v;
}

/** Replays a data directory's whole journal from genesis, independently of the venue. */
async function cleanReplayHash(dir: string): Promise<{ seq: number; hash: string }> {
  const j = FileJournal.open(join(dir, 'journal.log'), { log: () => {} });
  const commands: Command[] = [];
  for await (const r of j.read(0)) commands.push(r.command);
  await j.close();
  const state = reduceAll(createEngineState({}, commands[0]?.time ?? 0), commands).state;
  return { seq: commands.length, hash: stateHash(state) };
}

function flipByte(path: string, fromEnd: number): void {
  const data = readFileSync(path);
  const at = data.length - fromEnd;
  data[at] = (data[at] as number) ^ 0x01;
  writeFileSync(path, data);
}

/** A venue on `dir` with no price feed and a free port; `options` add to or override that. */
function launch(dir: string, options: Omit<StartVenueOptions, 'dataDir'> = {}): Promise<Venue> {
  return startVenue({ dataDir: dir, port: 0, priceFeed: 'none', log: () => {}, ...options });
}

describe('snapshot files', () => {
  it('write then read back: same state hash, verified header, tmp file gone', async () => {
    const dir = tempDir();
    const v = sampleState();
    const s = new Snapshotter({ dir, log: () => {} });
    const written = await s.write(v.state, 42);
    expect(written?.path).toBe(join(dir, snapshotFileName(42)));
    expect(written?.hash).toBe(stateHash(v.state));
    expect(readdirSync(dir)).toEqual([snapshotFileName(42)]);
    const loaded = readSnapshotFile(join(dir, snapshotFileName(42)));
    expect(loaded.seq).toBe(42);
    expect(stateHash(loaded.state)).toBe(stateHash(v.state));
  });

  it('rejects a damaged or truncated body and a header that does not match its name', async () => {
    const dir = tempDir();
    const v = sampleState();
    const s = new Snapshotter({ dir, log: () => {} });
    const path = (await s.write(v.state, 7))?.path as string;
    const good = readFileSync(path);
    flipByte(path, 100);
    expect(() => readSnapshotFile(path)).toThrow(/body checksum mismatch/);
    writeFileSync(path, good.subarray(0, good.length - 1));
    expect(() => readSnapshotFile(path)).toThrow(/body is \d+ bytes, the header says/);
    const renamed = join(dir, snapshotFileName(8));
    writeFileSync(renamed, good);
    expect(() => readSnapshotFile(renamed)).toThrow(SnapshotFileError);
    expect(() => readSnapshotFile(renamed)).toThrow(/the header says seq 7, the name 8/);
  });

  it('falls back newest -> previous -> full replay, logging each skipped file and why', async () => {
    const dir = tempDir();
    const v = sampleState();
    const s = new Snapshotter({ dir, log: () => {}, policy: { keep: 3 } });
    await s.write(v.state, 10);
    await s.write(v.state, 20);
    await s.write(v.state, 30);
    const lines: string[] = [];
    // Seq 30 is ahead of a journal that ends at 25 and damaged (so it proves nothing); 20 is
    // damaged; 10 is good. (A valid snapshot ahead of the journal stops start-up:
    // test/durability-journal-loss.test.ts.)
    flipByte(join(dir, snapshotFileName(30)), 50);
    flipByte(join(dir, snapshotFileName(20)), 50);
    const loaded = loadNewestSnapshot(dir, { maxSeq: 25, log: (l) => lines.push(l) });
    expect(loaded?.seq).toBe(10);
    expect(lines[0]).toContain(
      `${snapshotFileName(30)} is invalid: body checksum mismatch; skipped, using the previous snapshot`,
    );
    expect(lines[1]).toContain(
      `${snapshotFileName(20)} is invalid: body checksum mismatch; skipped, using the previous snapshot`,
    );
    flipByte(join(dir, snapshotFileName(10)), 50);
    lines.length = 0;
    expect(loadNewestSnapshot(dir, { maxSeq: 25, log: (l) => lines.push(l) })).toBeNull();
    expect(lines[2]).toContain('skipped, using a full journal replay');
  });

  it('keeps the newest two', async () => {
    const dir = tempDir();
    const v = sampleState();
    const s = new Snapshotter({ dir, log: () => {} });
    for (const seq of [1, 2, 3, 4]) await s.write(v.state, seq);
    expect(listSnapshotFiles(dir).map((f) => f.seq)).toEqual([4, 3]);
  });

  it('keeps the newest snapshot that has a read-model checkpoint, beyond the newest two', async () => {
    const dir = tempDir();
    const v = sampleState();
    const s = new Snapshotter({ dir, log: () => {} });
    await s.write(v.state, 1);
    // Its checkpoint (the file's name is what rotation looks at); the next ones get none, as
    // when the read models were incomplete or a crash came between a snapshot and its checkpoint.
    writeFileSync(join(dir, checkpointFileName(1)), 'checkpoint 1');
    for (const seq of [2, 3, 4]) await s.write(v.state, seq);
    expect(listSnapshotFiles(dir).map((f) => f.seq)).toEqual([4, 3, 1]);
    expect(listCheckpointFiles(dir).map((f) => f.seq)).toEqual([1]);
    // A newer snapshot with a checkpoint takes its place.
    writeFileSync(join(dir, checkpointFileName(4)), 'checkpoint 4');
    await s.write(v.state, 5);
    expect(listSnapshotFiles(dir).map((f) => f.seq)).toEqual([5, 4]);
    expect(listCheckpointFiles(dir).map((f) => f.seq)).toEqual([4]);
    await s.write(v.state, 6);
    expect(listSnapshotFiles(dir).map((f) => f.seq)).toEqual([6, 5, 4]);
    await s.close();
  });

  it('a crash before the rename leaves only a tmp file, which the next start removes (F8)', async () => {
    const dir = tempDir();
    const v = sampleState();
    const ok = new Snapshotter({ dir, log: () => {} });
    await ok.write(v.state, 5);
    const lines: string[] = [];
    const crashing = new Snapshotter({
      dir,
      log: (l) => lines.push(l),
      hooks: {
        beforeRename: (tmp) => {
          // Keep a copy of the finished tmp file, as a kill at this point would leave it.
          writeFileSync(`${tmp}.keep`, readFileSync(tmp));
          throw new Error('killed');
        },
      },
    });
    expect(await crashing.write(v.state, 9)).toBeNull();
    expect(lines[0]).toContain('snapshot at seq 9 failed and was abandoned');
    writeFileSync(
      join(dir, `${snapshotFileName(9)}.tmp`),
      readFileSync(join(dir, `${snapshotFileName(9)}.tmp.keep`)),
    );
    rmSync(join(dir, `${snapshotFileName(9)}.tmp.keep`));
    const restartLines: string[] = [];
    new Snapshotter({ dir, log: (l) => restartLines.push(l) });
    expect(restartLines).toEqual([
      `snapshot: removed ${snapshotFileName(9)}.tmp, an unfinished snapshot write`,
    ]);
    expect(loadNewestSnapshot(dir, { maxSeq: 100, log: () => {} })?.seq).toBe(5);
  });

  it('a failed snapshot fsync abandons that snapshot and is not fatal', async () => {
    const dir = tempDir();
    const lines: string[] = [];
    const s = new Snapshotter({
      dir,
      log: (l) => lines.push(l),
      hooks: {
        sync: () => Promise.reject(new Error('EIO: i/o error, fsync')),
      },
    });
    expect(await s.write(sampleState().state, 3)).toBeNull();
    expect(lines[0]).toMatch(
      /snapshot at seq 3 failed and was abandoned \(the journal is unaffected\): EIO/,
    );
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('snapshot file checks', () => {
  /** Rewrites the header line of a snapshot file (the body is left as it is). */
  function editHeader(path: string, edit: (header: Record<string, unknown>) => unknown): void {
    const data = readFileSync(path);
    const nl = data.indexOf(10);
    const header = JSON.parse(data.toString('utf8', 0, nl)) as Record<string, unknown>;
    const line = JSON.stringify(edit(header));
    writeFileSync(
      path,
      Buffer.concat([Buffer.from(`${line.padEnd(511, ' ')}\n`, 'utf8'), data.subarray(nl + 1)]),
    );
  }

  it('lays the file out as a 512-byte header line, then the body', async () => {
    const dir = tempDir();
    const state = sampleState().state;
    const written = await new Snapshotter({ dir, log: () => {} }).write(state, 3);
    const data = readFileSync(written?.path as string);
    // Files already on disk have this layout: rotation reads their bodies from byte 512.
    expect(data.indexOf(10)).toBe(511);
    const header = JSON.parse(data.toString('utf8', 0, 511)) as { bodyBytes: number };
    expect(data.length).toBe(512 + header.bodyBytes);
    expect(data.toString('utf8', 512)).toBe(encodeSnapshot(state));
  });

  it('refuses a header that is not an object, of another format or version, or of another state', async () => {
    const dir = tempDir();
    const s = new Snapshotter({ dir, log: () => {} });
    const path = (await s.write(sampleState().state, 7))?.path as string;
    const good = readFileSync(path);
    const refused = (edit: (h: Record<string, unknown>) => unknown): string => {
      writeFileSync(path, good);
      editHeader(path, edit);
      try {
        readSnapshotFile(path);
      } catch (e) {
        expect(e).toBeInstanceOf(SnapshotFileError);
        return (e as Error).message;
      }
      throw new Error('not refused');
    };
    expect(refused(() => null)).toBe(
      `snapshot ${path} is invalid: the header is not a JSON object`,
    );
    expect(refused(() => 7)).toContain('the header is not a JSON object');
    expect(refused((h) => ({ ...h, format: 'other' }))).toContain('unknown format other v1');
    expect(refused((h) => ({ ...h, version: 2 }))).toContain(
      'unknown format perp-engine-snapshot v2',
    );
    // Body length and CRC intact, but the state is not the one the header recorded.
    const other = 'f'.repeat(64);
    expect(refused((h) => ({ ...h, stateHash: other }))).toMatch(
      new RegExp(`decoded state hash \\S+ differs from the recorded ${other}$`),
    );
    // Rotation sees no snapshot in a file of another format.
    writeFileSync(path, good);
    expect(readSnapshotHeader(path)?.seq).toBe(7);
    editHeader(path, (h) => ({ ...h, format: 'other' }));
    expect(readSnapshotHeader(path)).toBeNull();
  });

  it('a state hash that does not match is skipped like any damage, falling back to the previous', async () => {
    const dir = tempDir();
    const s = new Snapshotter({ dir, log: () => {} });
    await s.write(sampleState().state, 4);
    const newest = (await s.write(sampleState().state, 6))?.path as string;
    editHeader(newest, (h) => ({ ...h, stateHash: '0'.repeat(64) }));
    const lines: string[] = [];
    expect(loadNewestSnapshot(dir, { log: (l) => lines.push(l) })?.seq).toBe(4);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`snapshot ${newest} is invalid: decoded state hash`);
    expect(lines[0]).toContain(
      `; skipped, using the previous snapshot ${join(dir, snapshotFileName(4))}`,
    );
  });

  it('with maxSeq: a valid snapshot past the journal throws, naming the journal, its size and end', async () => {
    const dir = tempDir();
    const s = new Snapshotter({ dir, log: () => {} });
    const path = (await s.write(sampleState().state, 9))?.path as string;
    const journal = join(dir, 'journal.log');
    writeFileSync(journal, Buffer.alloc(123));
    // A snapshot of the journal's last record is not past it.
    expect(loadNewestSnapshot(dir, { maxSeq: 9, log: () => {} })?.seq).toBe(9);
    const error = (() => {
      try {
        loadNewestSnapshot(dir, { maxSeq: 8, log: () => {} });
      } catch (e) {
        return e as JournalBehindSnapshotError;
      }
      throw new Error('not refused');
    })();
    expect(error).toBeInstanceOf(JournalBehindSnapshotError);
    expect(error.file).toBe(journal);
    expect(error.offset).toBe(123);
    expect(error.snapshot).toBe(path);
    expect(error.message).toMatch(
      new RegExp(
        `^journal ${journal} ends at seq 8 \\(byte 123\\), but the valid snapshot ${path} covers records up to seq 9 \\(hash `,
      ),
    );
    // A caller that knows where the last whole record ends (before a torn tail) names that.
    expect(() => loadNewestSnapshot(dir, { maxSeq: 8, journalEnd: 100, log: () => {} })).toThrow(
      /ends at seq 8 \(byte 100\)/,
    );
  });

  it('a body longer than one write piece (1 MB) is written whole and reads back', async () => {
    const dir = tempDir();
    const t = Date.now();
    const commands: Command[] = [];
    for (let i = 0; i < 7000; i++)
      commands.push({ type: 'openAccount', time: t, account: wallet(1000 + i) });
    const state = reduceAll(createEngineState({}, t), commands).state;
    const written = await new Snapshotter({ dir, log: () => {} }).write(state, 7000);
    expect(written?.bytes).toBeGreaterThan(1 << 20);
    expect(readSnapshotFile(written?.path as string).hash).toBe(stateHash(state));
  });
});

describe('the snapshotter', () => {
  /** A promise and the function that resolves it. */
  function gate(): { opened: Promise<void>; open: () => void } {
    let open = (): void => {};
    const opened = new Promise<void>((r) => {
      open = r;
    });
    return { opened, open };
  }

  it('one write at a time: a second call while one runs writes nothing', async () => {
    const dir = tempDir();
    const s = new Snapshotter({ dir, log: () => {} });
    const state = sampleState().state;
    const first = s.write(state, 1);
    expect(await s.write(state, 2)).toBeNull();
    expect((await first)?.seq).toBe(1);
    expect(listSnapshotFiles(dir).map((f) => f.seq)).toEqual([1]);
  });

  it('close() abandons a write in progress and removes its tmp file', async () => {
    const dir = tempDir();
    const lines: string[] = [];
    const s = new Snapshotter({ dir, log: (l) => lines.push(l) });
    const state = sampleState().state;
    const writing = s.write(state, 5);
    await s.close();
    expect(await writing).toBeNull();
    expect(readdirSync(dir)).toEqual([]);
    expect(lines).toEqual([
      'snapshot at seq 5 failed and was abandoned (the journal is unaffected): the venue is closing',
    ]);
    expect(await s.writeFinal(() => ({ state, seq: 6 }))).toBeNull();
  });

  /** A snapshotter whose write of record 5 is in progress, held before its rename. */
  async function heldAtRename() {
    const dir = tempDir();
    const held = gate();
    const reached = gate();
    let holds = 1;
    const s = new Snapshotter({
      dir,
      log: () => {},
      hooks: {
        beforeRename: async () => {
          if (holds-- <= 0) return;
          reached.open();
          await held.opened;
        },
      },
    });
    const state = sampleState().state;
    const periodic = s.write(state, 5);
    await reached.opened;
    return { dir, s, state, periodic, held };
  }

  it("a clean stop's snapshot waits for the write in progress, and is not repeated", async () => {
    const { dir, s, state, periodic, held } = await heldAtRename();
    const final = s.writeFinal(() => ({ state, seq: 8 }));
    held.open();
    expect((await periodic)?.seq).toBe(5);
    expect((await final)?.seq).toBe(8);
    expect(listSnapshotFiles(dir).map((f) => f.seq)).toEqual([8, 5]);
    // Nothing after record 8: no second snapshot of it.
    expect(await s.writeFinal(() => ({ state, seq: 8 }))).toBeNull();
  });

  it("a clean stop's snapshot is of the state after the write in progress ends", async () => {
    const { dir, s, state, periodic, held } = await heldAtRename();
    let current = { state, seq: 5 };
    const final = s.writeFinal(() => current);
    // Batches committed while the periodic write finishes: the stop covers them too.
    current = { state, seq: 7 };
    held.open();
    expect((await periodic)?.seq).toBe(5);
    expect((await final)?.seq).toBe(7);
    expect(listSnapshotFiles(dir).map((f) => f.seq)).toEqual([7, 5]);
  });

  it('keeps at least one snapshot whatever keep says', async () => {
    const dir = tempDir();
    const s = new Snapshotter({ dir, log: () => {}, policy: { keep: 0 } });
    const state = sampleState().state;
    expect(state.rulesVersion).toBeNull(); // so no snapshot is kept for its rules version
    for (const seq of [1, 2]) await s.write(state, seq);
    expect(listSnapshotFiles(dir).map((f) => f.seq)).toEqual([2]);
  });
});

describe('snapshot retention across restarts', () => {
  it('keeps the newest two of the current rules, counting the files an earlier process wrote', async () => {
    const dir = tempDir();
    const state: EngineState = { ...sampleState().state, rulesVersion: ENGINE_RULES_VERSION };
    const before = new Snapshotter({ dir, log: () => {} });
    for (const seq of [1, 2]) await before.write(state, seq);
    await before.close();
    // A restarted venue: its own files and the earlier ones are all of the same rules, so the
    // earlier ones are not "the newest of an older rules version" and are rotated out.
    const after = new Snapshotter({ dir, log: () => {} });
    for (const seq of [3, 4]) await after.write(state, seq);
    expect(listSnapshotFiles(dir).map((f) => f.seq)).toEqual([4, 3]);
    await after.close();
  });
});

describe('snapshot policy on a running host', () => {
  function newHost(): EngineHost {
    const t = Date.now();
    return new EngineHost({
      state: createEngineState({}, t),
      journal: new MemoryJournal(),
      clock: new ManualClock(t),
    });
  }
  let next = 0;
  async function submit(host: EngineHost, count: number): Promise<void> {
    for (let i = 0; i < count; i++)
      await host.submit({ type: 'openAccount', account: wallet(5000 + next++) });
  }

  it('snapshots once everyRecords records were written, not before', async () => {
    const dir = tempDir();
    const host = newHost();
    const s = new Snapshotter({ dir, log: () => {}, policy: { everyRecords: 3, everyMs: 0 } });
    const detach = s.attach(host);
    await submit(host, 2);
    expect(s.inProgress).toBeNull();
    await submit(host, 1);
    expect((await s.inProgress)?.seq).toBe(3);
    detach();
    await s.close();
  });

  it('records written during a snapshot start the next one when it ends, with no new record', async () => {
    const dir = tempDir();
    const host = newHost();
    let release = (): void => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    let holds = 1;
    const s = new Snapshotter({
      dir,
      log: () => {},
      policy: { everyRecords: 2, everyMs: 0 },
      hooks: {
        beforeRename: async () => {
          if (holds-- > 0) await held;
        },
      },
    });
    s.attach(host);
    await submit(host, 2);
    const first = s.inProgress;
    await submit(host, 3);
    // Still the first write: the policy waits for it.
    expect(s.inProgress).toBe(first);
    release();
    expect((await first)?.seq).toBe(2);
    expect((await s.inProgress)?.seq).toBe(5);
    expect(listSnapshotFiles(dir).map((f) => f.seq)).toEqual([5, 2]);
    await s.close();
  });

  it('after a failed write, the policy waits before the next attempt', async () => {
    const dir = tempDir();
    const host = newHost();
    const lines: string[] = [];
    const s = new Snapshotter({
      dir,
      log: (l) => lines.push(l),
      policy: { everyRecords: 2, everyMs: 0 },
      hooks: { sync: () => Promise.reject(new Error('EIO')) },
    });
    s.attach(host);
    await submit(host, 2);
    expect(await s.inProgress).toBeNull();
    // Due again at once, but a failing disk is not hammered on every batch.
    await submit(host, 4);
    expect(s.inProgress).toBeNull();
    expect(lines.filter((l) => l.includes('failed and was abandoned'))).toHaveLength(1);
    await s.close();
  });

  it('the timer snapshots once minRecords records were written', async () => {
    const dir = tempDir();
    const host = newHost();
    const s = new Snapshotter({
      dir,
      log: () => {},
      policy: { everyRecords: 0, everyMs: 10, minRecords: 2 },
    });
    s.attach(host);
    await submit(host, 2);
    for (let i = 0; i < 100 && listSnapshotFiles(dir).length === 0; i++)
      await new Promise((r) => setTimeout(r, 10));
    expect(listSnapshotFiles(dir).map((f) => f.seq)).toEqual([2]);
    await s.close();
  });
});

describe('venue recovery from snapshot + journal tail', () => {
  async function start(dir: string, lines: string[], everyRecords = 5): Promise<Venue> {
    // These tests are about the tail after a snapshot: no snapshot at a clean stop.
    return launch(dir, {
      log: (l) => lines.push(l),
      snapshots: { everyRecords, everyMs: 0, atClose: false },
    });
  }

  /** Drives the venue until the snapshotter wrote two snapshots (it works in the background). */
  async function driveToTwoSnapshots(venue: Venue, dir: string): Promise<void> {
    for (let round = 0; round < 200 && listSnapshotFiles(dir).length < 2; round++) {
      await drive(venue, round * 3, 3);
      await new Promise((r) => setTimeout(r, 5));
    }
    // Three for a moment when a newer one was renamed into place and the oldest is not pruned
    // yet (rename, directory fsync, then prune); never fewer than two from here on.
    expect(listSnapshotFiles(dir).length).toBeGreaterThanOrEqual(2);
    // And a tail after the newest snapshot.
    await drive(venue, 1000, 2);
  }

  async function drive(venue: Venue, from: number, count: number): Promise<void> {
    const host = venue.context.host;
    for (let i = from; i < from + count; i++) {
      await host.submit({ type: 'openAccount', account: wallet(100 + i) });
      await host.submit({ type: 'createReferralCode', kind: 'system', maxUses: i + 1 });
    }
  }

  it('restarts from the newest snapshot plus the tail with the pre-restart state hash', async () => {
    const dir = tempDir();
    const lines: string[] = [];
    let venue = await start(dir, lines);
    await driveToTwoSnapshots(venue, dir);
    await venue.close();
    const before = await cleanReplayHash(dir);
    const snaps = listSnapshotFiles(dir);
    expect(lines.some((l) => l.startsWith('snapshot '))).toBe(true);

    lines.length = 0;
    venue = await start(dir, lines);
    const host = venue.context.host;
    expect(host.journalSeq).toBe(before.seq);
    expect(stateHash(host.state)).toBe(before.hash);
    const newest = snaps[0]?.seq as number;
    expect(lines).toContain(
      `recovered from snapshot ${join(dir, snapshotFileName(newest))} (seq ${newest}, hash ${readSnapshotFile(join(dir, snapshotFileName(newest))).hash})`,
    );
    if (newest < before.seq)
      expect(lines).toContain(
        `replayed ${before.seq - newest} journal records after seq ${newest}`,
      );
    // The bootstrap invite code is created once per venue, not on every restart.
    expect(venue.inviteCode).toBeNull();
    // Live again: new commands land after the recovered ones.
    await drive(venue, 100, 3);
    const after = stateHash(host.state);
    await venue.close();
    expect((await cleanReplayHash(dir)).hash).toBe(after);
  });

  it('a damaged newest snapshot falls back to the previous one, then to full replay, same hash', async () => {
    const dir = tempDir();
    const lines: string[] = [];
    let venue = await start(dir, lines);
    await driveToTwoSnapshots(venue, dir);
    await venue.close();
    const before = await cleanReplayHash(dir);
    const [newest, previous] = listSnapshotFiles(dir);
    flipByte(newest?.path as string, 10);

    lines.length = 0;
    venue = await start(dir, lines, 0);
    expect(stateHash(venue.context.host.state)).toBe(before.hash);
    expect(
      lines.some((l) =>
        l.includes(
          `${newest?.path} is invalid: body checksum mismatch; skipped, using the previous snapshot ${previous?.path}`,
        ),
      ),
    ).toBe(true);
    expect(lines.some((l) => l.startsWith(`recovered from snapshot ${previous?.path}`))).toBe(true);
    await venue.close();

    flipByte(previous?.path as string, 10);
    lines.length = 0;
    venue = await start(dir, lines, 0);
    expect(stateHash(venue.context.host.state)).toBe(before.hash);
    expect(lines.some((l) => l.includes('skipped, using a full journal replay'))).toBe(true);
    expect(lines).toContain(`replayed ${before.seq} journal records`);
    await venue.close();
  });

  it('the timer also snapshots the tail replayed at start-up, with no new command', async () => {
    const dir = tempDir();
    const lines: string[] = [];
    let venue = await launch(dir, {
      log: (l) => lines.push(l),
      snapshots: { everyRecords: 0, everyMs: 0, atClose: false },
    });
    await drive(venue, 0, 5);
    const seq = venue.context.host.journalSeq;
    await venue.close();
    expect(listSnapshotFiles(dir)).toEqual([]);
    venue = await launch(dir, {
      log: (l) => lines.push(l),
      snapshots: { everyRecords: 0, everyMs: 30, minRecords: 1 },
    });
    try {
      for (let i = 0; i < 100 && listSnapshotFiles(dir).length === 0; i++) {
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(venue.context.host.journalSeq).toBe(seq);
      expect(listSnapshotFiles(dir).map((f) => f.seq)).toEqual([seq]);
    } finally {
      await venue.close();
    }
  });

  it('a clean stop snapshots the journal’s end, so the next start replays nothing', async () => {
    const dir = tempDir();
    const lines: string[] = [];
    // The default policy: no snapshot by count or time in a run this short.
    let venue = await launch(dir, { log: (l) => lines.push(l) });
    await drive(venue, 0, 4);
    const seq = venue.context.host.journalSeq;
    const hash = stateHash(venue.context.host.state);
    expect(listSnapshotFiles(dir)).toEqual([]);
    await venue.close();
    expect(listSnapshotFiles(dir).map((f) => f.seq)).toEqual([seq]);
    expect((await cleanReplayHash(dir)).hash).toBe(hash);

    lines.length = 0;
    venue = await launch(dir, { log: (l) => lines.push(l) });
    try {
      expect(venue.context.host.journalSeq).toBe(seq);
      expect(stateHash(venue.context.host.state)).toBe(hash);
      expect(
        lines.some((l) =>
          l.startsWith(`recovered from snapshot ${join(dir, snapshotFileName(seq))}`),
        ),
      ).toBe(true);
      expect(lines.some((l) => l.startsWith('replayed '))).toBe(false);
    } finally {
      await venue.close();
    }
    // Nothing new since: the stop writes no second snapshot of the same record.
    expect(listSnapshotFiles(dir).map((f) => f.seq)).toEqual([seq]);
    expect(lines.filter((l) => l.startsWith('snapshot '))).toEqual([]);
  });

  it('a restart from a snapshot of record 1 rebuilds the history before it too', async () => {
    const dir = tempDir();
    const time = Date.now() - 60_000;
    const commands: Command[] = [{ type: 'declareRules', time, version: ENGINE_RULES_VERSION }];
    commands.push({ type: 'openAccount', time, account: wallet(7) });
    const j = FileJournal.open(join(dir, 'journal.log'), { log: () => {} });
    await j.append(commands);
    await j.close();
    const at1 = reduceAll(createEngineState({}, time), commands.slice(0, 1)).state;
    expect(await new Snapshotter({ dir, log: () => {} }).write(at1, 1)).not.toBeNull();
    const venue = await launch(dir);
    try {
      expect(venue.historyBackfill).not.toBeNull();
      expect(await venue.historyBackfill?.done).toBe('complete');
    } finally {
      await venue.close();
    }
  });

  it('a closed venue writes no snapshot afterwards, though its timer was due', async () => {
    const dir = tempDir();
    const venue = await launch(dir, {
      snapshots: { everyRecords: 0, everyMs: 150, minRecords: 1, atClose: false },
    });
    await drive(venue, 0, 2);
    await venue.close();
    // The lock is released: another venue may own the directory now.
    expect(existsSync(join(dir, 'LOCK'))).toBe(false);
    const snapshots = () => readdirSync(dir).filter((n) => n.startsWith('snapshot-'));
    // Normally none (the timer was not due yet when the venue closed).
    const atClose = snapshots();
    await new Promise((r) => setTimeout(r, 400));
    expect(snapshots()).toEqual(atClose);
  });

  it('a venue stopped by a fatal error writes no snapshot at its stop', async () => {
    const dir = tempDir();
    const venue = await launch(dir, { onFatal: () => {} });
    await drive(venue, 0, 2);
    // The journal replaced under the running venue: the next append stops it (5002).
    const journalPath = join(dir, 'journal.log');
    const kept = readFileSync(journalPath);
    rmSync(journalPath);
    writeFileSync(journalPath, kept);
    await venue.context.host.submit({ type: 'openAccount', account: wallet(999) }).catch(() => {});
    await venue.close();
    expect(venue.context.host.failed).toBe(true);
    expect(listSnapshotFiles(dir)).toEqual([]);
  });

  it('converts a version-5 snapshot of the previous build instead of replaying its records', async () => {
    const dir = tempDir();
    // The previous build's data directory: a journal without rules declarations, and a snapshot
    // of its first 6 records in the version-5 form (no rulesVersion field, and venue settings
    // without the working-order cap of version 8).
    const t0 = Date.now() - 60_000;
    const commands: Command[] = [];
    for (let i = 0; i < 10; i++)
      commands.push({ type: 'openAccount', time: t0 + i, account: wallet(300 + i) });
    const j = FileJournal.open(join(dir, 'journal.log'), { log: () => {} });
    await j.append(commands);
    await j.close();
    const at6 = reduceAll(createEngineState({}, t0), commands.slice(0, 6)).state;
    const { rulesVersion: _, settings, ...rest } = at6;
    const { maxWorkingOrdersPerAccount: __, ...olderSettings } = settings;
    const old = { ...rest, settings: olderSettings };
    const body = Buffer.from(legacySnapshotText(5, old as EngineState), 'utf8');
    const header = JSON.stringify({
      format: 'perp-engine-snapshot',
      version: 1,
      seq: 6,
      time: at6.time,
      stateHash: stateHash(old as EngineState),
      bodyBytes: body.length,
      bodyCrc32: crc32(body),
    });
    writeFileSync(
      join(dir, snapshotFileName(6)),
      Buffer.concat([Buffer.from(`${header.padEnd(511, ' ')}\n`, 'utf8'), body]),
    );

    const lines: string[] = [];
    const venue = await launch(dir, {
      log: (l) => lines.push(l),
      snapshots: { everyRecords: 0, everyMs: 0 },
    });
    let hash: string;
    try {
      expect(lines).toContain(
        `snapshot ${join(dir, snapshotFileName(6))} is of version 5; converted to version ${SNAPSHOT_VERSION} on reading (hash ${stateHash(at6)})`,
      );
      expect(lines).toContain('replayed 4 journal records after seq 6');
      expect(lines).toContain(
        `engine rules ${ENGINE_RULES_VERSION} declared in the journal (records before were written under undeclared rules)`,
      );
      expect(venue.context.host.state.rulesVersion).toBe(ENGINE_RULES_VERSION);
      // The history before the snapshot is rebuilt against the converted state's hash.
      expect(await venue.historyBackfill?.done).toBe('complete');
      hash = stateHash(venue.context.host.state);
    } finally {
      await venue.close();
    }
    // The same state as a replay of the whole journal (this build's records included).
    expect((await cleanReplayHash(dir)).hash).toBe(hash);
  });

  it('refuses a journal with no valid record when snapshots show it had records', async () => {
    const dir = tempDir();
    const lines: string[] = [];
    const venue = await start(dir, lines);
    await driveToTwoSnapshots(venue, dir);
    await venue.close();
    const [newest] = listSnapshotFiles(dir);
    // The wrong file restored in its place: not one valid record.
    const garbage = Buffer.from('this is not the journal of this venue\n'.repeat(20));
    writeFileSync(join(dir, 'journal.log'), garbage);
    await expect(start(dir, lines)).rejects.toThrow(
      `journal ${join(dir, 'journal.log')} is damaged at byte 0: not one record is valid, but snapshot ${newest?.path} covers records up to seq ${newest?.seq}; refusing to cut it`,
    );
    // Nothing was cut: the operator can still put the right file back.
    expect(readFileSync(join(dir, 'journal.log'))).toEqual(garbage);
  });

  it('with snapshots off, nothing is written and a restart replays the whole journal', async () => {
    const dir = tempDir();
    const venue = await launch(dir, { snapshots: false });
    await drive(venue, 0, 4);
    await venue.close();
    expect(listSnapshotFiles(dir)).toEqual([]);
    expect(existsSync(join(dir, 'journal.log'))).toBe(true);
  });
});
