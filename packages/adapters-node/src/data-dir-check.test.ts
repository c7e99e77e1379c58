/**
 * `--check` over real data directories: it reports what a start would do (the same errors, with
 * file and offset, the same snapshot choice) and changes nothing: every file byte for byte as it
 * was, no file added or removed, a torn tail not cut, a stale lock and a `.tmp` left in place.
 */
import { createHash } from 'node:crypto';
import {
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Command,
  createEngineState,
  ENGINE_RULES_VERSION,
  reduceAll,
  stateHash,
} from '@perp/core';
import { wallet } from '@perp/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from './config.js';
import {
  checkDataDir,
  type DataDirCheckOptions,
  type DataDirReport,
  formatDataDirReport,
} from './data-dir-check.js';
import { crc32, encodeRecord, FileJournal } from './journal/file-journal.js';
import { checkpointFileName } from './journal/read-model-files.js';
import { Snapshotter, snapshotFileName } from './journal/snapshots.js';
import { startVenue } from './venue.js';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'perp-check-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const T0 = Date.UTC(2026, 10, 1);

/** `n` commands a venue of this build journals: its rules declaration, then accounts opened. */
function commandsOf(n: number, rules = ENGINE_RULES_VERSION): Command[] {
  const out: Command[] = [{ type: 'declareRules', time: T0, version: rules }];
  for (let i = 1; i < n; i++) out.push({ type: 'openAccount', time: T0 + i, account: wallet(i) });
  return out;
}

function stateAfter(commands: readonly Command[]) {
  return reduceAll(createEngineState({}, commands[0]?.time ?? 0), commands).state;
}

/**
 * A data directory with a journal of `commands` and snapshots of the states after the seqs in
 * `snapshotAt`, and a `venue.json`. Returns the directory and the journal's record offsets.
 */
async function dataDir(
  commands: readonly Command[],
  snapshotAt: readonly number[] = [],
): Promise<{ dir: string; journal: string; offsets: number[] }> {
  const dir = tempDir();
  const journal = join(dir, 'journal.log');
  const j = FileJournal.open(journal, { log: () => {} });
  await j.append(commands);
  await j.close();
  const snapshotter = new Snapshotter({ dir, log: () => {}, policy: { keep: 10 } });
  for (const seq of snapshotAt)
    expect(await snapshotter.write(stateAfter(commands.slice(0, seq)), seq)).not.toBeNull();
  writeFileSync(
    join(dir, 'venue.json'),
    `${JSON.stringify({ adminToken: 'token-1', createdTime: T0 })}\n`,
  );
  const offsets: number[] = [];
  let at = 0;
  for (const [i, c] of commands.entries()) {
    offsets.push(at);
    at += encodeRecord(i + 1, c).length;
  }
  return { dir, journal, offsets };
}

/** Every file of `dir` with its size and SHA-256. */
function listing(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir).sort()) {
    const data = readFileSync(join(dir, name));
    out[name] =
      `${statSync(join(dir, name)).size} ${createHash('sha256').update(data).digest('hex')}`;
  }
  return out;
}

/** The check of `dir`, asserting that it left every file as it was and added none. */
function check(dir: string, options: DataDirCheckOptions = {}): DataDirReport {
  const before = listing(dir);
  const report = checkDataDir(dir, options);
  expect(listing(dir)).toEqual(before);
  // The report is one JSON object (`--json`).
  expect(JSON.parse(JSON.stringify(report))).toEqual(report);
  return report;
}

function flipByte(path: string, at: number): void {
  const data = readFileSync(path);
  data[at] = (data[at] as number) ^ 0x01;
  writeFileSync(path, data);
}

describe('--check of a data directory', () => {
  it('a clean directory: ok, the journal figures, the snapshot used and the records after it', async () => {
    const commands = commandsOf(9);
    const { dir, journal } = await dataDir(commands, [4, 6]);
    const report = check(dir, { replay: true });
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.journal).toEqual({
      file: journal,
      present: true,
      bytes: statSync(journal).size,
      records: 9,
      firstSeq: 1,
      lastSeq: 9,
      validBytes: statSync(journal).size,
      tornTail: null,
    });
    expect(report.snapshots.map((s) => [s.seq, s.status, s.rules, s.pastJournal])).toEqual([
      [6, 'used', ENGINE_RULES_VERSION, false],
      [4, 'valid', ENGINE_RULES_VERSION, false],
    ]);
    const six = join(dir, snapshotFileName(6));
    expect(report.snapshots[0]?.bytes).toBe(statSync(six).size);
    expect(report.snapshots[0]?.hash).toBe(stateHash(stateAfter(commands.slice(0, 6))));
    expect(report.recovery).toEqual({
      snapshot: six,
      snapshotSeq: 6,
      readModels: {
        source: 'journal',
        reason: `${join(dir, checkpointFileName(6))}: there is none`,
      },
      replayRecords: 3,
      replayFirstSeq: 7,
      replayLastSeq: 9,
    });
    expect(report.venueFile).toEqual({ file: join(dir, 'venue.json'), present: true });
    expect(report.lock.state).toBe('absent');
    // The replay reaches the state of a clean replay of every record.
    expect(report.replay).toEqual({
      seq: 9,
      hash: stateHash(stateAfter(commands)),
      rulesVersion: ENGINE_RULES_VERSION,
    });
    // With --no-snapshots a start replays everything; the snapshots are still checked.
    const full = check(dir, { snapshots: false });
    expect(full.recovery).toMatchObject({ snapshot: null, snapshotSeq: 0, replayRecords: 9 });
    expect(full.snapshots.map((s) => s.status)).toEqual(['valid', 'valid']);
  });

  it('agrees with a start on a directory a venue wrote, and its replay has the venue hash', async () => {
    const dir = tempDir();
    const venue = await startVenue({
      dataDir: dir,
      port: 0,
      priceFeed: 'none',
      log: () => {},
      snapshots: { everyRecords: 4, everyMs: 0, atClose: false },
    });
    for (let i = 0; i < 10; i++) {
      await venue.context.host.submit({ type: 'openAccount', account: wallet(50 + i) });
      await new Promise((r) => setTimeout(r, 5));
    }
    const seq = venue.context.host.journalSeq;
    const hash = stateHash(venue.context.host.state);
    await venue.close();
    const report = check(dir, { replay: true });
    expect(report.ok).toBe(true);
    expect(report.journal.lastSeq).toBe(seq);
    expect(report.replay).toMatchObject({ seq, hash });
    const used = report.snapshots.find((s) => s.status === 'used');
    expect(used).toBeDefined();
    expect(report.recovery?.replayRecords).toBe(seq - (used?.seq ?? 0));
    // The venue wrote its read models beside that snapshot; a start loads them.
    const checkpoint = join(dir, checkpointFileName(used?.seq ?? 0));
    expect(report.recovery?.readModels).toEqual({ source: 'checkpoint', file: checkpoint });
    expect(formatDataDirReport(report)).toContain(
      `read models before the snapshot: loaded in the background from ${checkpoint}`,
    );
    // Damaged, it is named, and the start still succeeds: the journal rebuilds them, from the
    // older snapshot's checkpoint on.
    const intact = readFileSync(checkpoint);
    flipByte(checkpoint, 0);
    const damaged = check(dir);
    expect(damaged.ok).toBe(true);
    const older = report.snapshots.find((s) => s.status === 'valid')?.seq as number;
    const olderCheckpoint = join(dir, checkpointFileName(older));
    expect(damaged.recovery?.readModels).toEqual({
      source: 'journal',
      reason: `${checkpoint}: the header is not JSON`,
      from: { seq: older, file: olderCheckpoint },
    });
    expect(formatDataDirReport(damaged)).toContain(
      `read models before the snapshot: rebuilt in the background from the journal after seq ${older}, from the read models loaded from ${olderCheckpoint} (no checkpoint used: ${checkpoint}: the header is not JSON)`,
    );
    // Without that one either, from the first record.
    const olderIntact = readFileSync(olderCheckpoint);
    flipByte(olderCheckpoint, 0);
    expect(check(dir).recovery?.readModels).toEqual({
      source: 'journal',
      reason: `${checkpoint}: the header is not JSON`,
    });
    writeFileSync(olderCheckpoint, olderIntact);
    writeFileSync(checkpoint, intact);
    // A start logs the same recovery.
    const lines: string[] = [];
    const again = await startVenue({
      dataDir: dir,
      port: 0,
      priceFeed: 'none',
      log: (l) => lines.push(l),
    });
    await again.close();
    expect(lines).toContain(
      `recovered from snapshot ${used?.file} (seq ${used?.seq}, hash ${used?.hash})`,
    );
  });

  it("with --replay, checks the config's instruments against the venue as a start does", async () => {
    const dir = tempDir();
    await (await startVenue({ dataDir: dir, port: 0, priceFeed: 'none', log: () => {} })).close();
    const [btc, eth, sol] = DEFAULT_CONFIG.instruments;
    // BTC-PERP under a new id: the start refuses it (before, --check said it would succeed).
    const clash = { ...DEFAULT_CONFIG, instruments: [{ ...btc!, id: 5 }] };
    const refused = check(dir, { replay: true, config: clash });
    const refusal =
      'config instrument 5 (BTC-PERP): symbol BTC-PERP already belongs to listed instrument 1; give it that id or another symbol';
    expect(refused.ok).toBe(false);
    expect(refused.problems).toEqual([refusal]);
    await expect(
      startVenue({ dataDir: dir, port: 0, priceFeed: 'none', log: () => {}, config: clash }),
    ).rejects.toThrow(refusal);
    // A listed instrument the config differs from: the start's line, as a note.
    const differing = {
      ...DEFAULT_CONFIG,
      instruments: [{ ...btc!, takerFeeRate: '0.001' }, eth!, sol!],
    };
    const noted = check(dir, { replay: true, config: differing });
    expect(noted.ok).toBe(true);
    expect(noted.notes).toContain(
      'config instrument 1 (BTC-PERP) differs from the listed one in takerFeeRate: the listed settings stay; change a listed instrument with POST /api/admin/instruments',
    );
  });

  it('a torn tail: ok, reported with its offset and length, left for the start to cut', async () => {
    const commands = commandsOf(5);
    const { dir, journal } = await dataDir(commands);
    const whole = statSync(journal).size;
    const torn = encodeRecord(6, { type: 'openAccount', time: T0 + 9, account: wallet(9) });
    writeFileSync(journal, Buffer.concat([readFileSync(journal), torn.subarray(0, 21)]));
    const report = check(dir);
    expect(report.ok).toBe(true);
    expect(report.journal).toMatchObject({
      records: 5,
      lastSeq: 5,
      bytes: whole + 21,
      validBytes: whole,
      tornTail: { offset: whole, bytes: 21 },
    });
    expect(report.notes).toContain(
      `a start cuts the torn tail and logs: journal ${journal}: cut a torn record of 21 bytes at offset ${whole} (a crash during a write; it was never acknowledged)`,
    );
    expect(report.recovery).toMatchObject({ snapshot: null, replayRecords: 5 });
  });

  it('damage in the middle: not ok, naming the file and offset as the start does', async () => {
    const { dir, journal, offsets } = await dataDir(commandsOf(6));
    const second = offsets[1] as number;
    flipByte(journal, second + 20);
    const report = check(dir);
    expect(report.ok).toBe(false);
    const message = `journal ${journal} is damaged at byte ${second}: record checksum mismatch (expected seq 2) with valid records after it`;
    expect(report.problems).toEqual([message]);
    expect(report.journal).toMatchObject({ present: true, records: null, tornTail: null });
    expect(report.recovery).toBeNull();
    // The start refuses with exactly that message (and leaves the journal as it was).
    await expect(
      startVenue({ dataDir: dir, port: 0, priceFeed: 'none', log: () => {} }),
    ).rejects.toThrow(message);
  });

  it('a sequence gap and an undecodable record after the snapshot: refused as the start refuses', async () => {
    const commands = commandsOf(4);
    const { dir, journal } = await dataDir(commands);
    const gap = encodeRecord(7, { type: 'openAccount', time: T0 + 9, account: wallet(9) });
    writeFileSync(journal, Buffer.concat([readFileSync(journal), gap]));
    expect(check(dir).problems).toEqual([
      `journal ${journal} is damaged at byte ${statSync(journal).size - gap.length}: sequence gap: expected seq 5, found 7`,
    ]);

    // A payload that passes its checksum but is not a command.
    const { dir: dir2, journal: journal2 } = await dataDir(commands);
    const bad = Buffer.from('{not json}');
    const record = Buffer.alloc(16 + bad.length);
    record.writeUInt32LE(bad.length, 0);
    record.writeBigUInt64LE(5n, 4);
    record.writeUInt32LE(crc32(bad, crc32(record.subarray(4, 12))), 12);
    bad.copy(record, 16);
    const size = statSync(journal2).size;
    writeFileSync(journal2, Buffer.concat([readFileSync(journal2), record]));
    const report = check(dir2);
    expect(report.ok).toBe(false);
    expect(report.problems).toHaveLength(1);
    expect(report.problems[0]).toMatch(
      new RegExp(`^journal ${journal2} is damaged at byte ${size}: undecodable record 5: `),
    );
  });

  it('a snapshot with a bad CRC next to a good one: reports the skip and uses the good one', async () => {
    const commands = commandsOf(8);
    const { dir } = await dataDir(commands, [3, 5]);
    const five = join(dir, snapshotFileName(5));
    flipByte(five, statSync(five).size - 3);
    const report = check(dir);
    expect(report.ok).toBe(true);
    expect(report.snapshots).toMatchObject([
      {
        seq: 5,
        status: 'skipped',
        reason: `snapshot ${five} is invalid: body checksum mismatch`,
        pastJournal: false,
      },
      { seq: 3, status: 'used', hash: stateHash(stateAfter(commands.slice(0, 3))) },
    ]);
    expect(report.recovery).toMatchObject({ snapshotSeq: 3, replayRecords: 5, replayFirstSeq: 4 });
  });

  it('a damaged snapshot older than the one used is reported, though a start never reads it', async () => {
    const { dir } = await dataDir(commandsOf(8), [3, 5]);
    const three = join(dir, snapshotFileName(3));
    truncateSync(three, statSync(three).size - 10);
    const report = check(dir);
    expect(report.ok).toBe(true);
    expect(report.snapshots.map((s) => s.status)).toEqual(['used', 'invalid']);
    expect(report.snapshots[1]?.reason).toMatch(
      /^snapshot .* is invalid: body is \d+ bytes, the header says \d+$/,
    );
  });

  it('a snapshot newer than the journal: refused as the start refuses; a damaged one past it is skipped', async () => {
    const commands = commandsOf(7);
    const { dir, journal, offsets } = await dataDir(commands, [2, 6]);
    // An older copy of the journal: records 1..4.
    truncateSync(journal, offsets[4] as number);
    const report = check(dir);
    expect(report.ok).toBe(false);
    const six = join(dir, snapshotFileName(6));
    expect(report.problems).toHaveLength(1);
    expect(report.problems[0]).toMatch(
      `journal ${journal} ends at seq 4 (byte ${offsets[4]}), but the valid snapshot ${six} covers records up to seq 6`,
    );
    expect(report.snapshots.map((s) => [s.seq, s.status, s.pastJournal])).toEqual([
      [6, 'ahead', true],
      [2, 'valid', false],
    ]);
    expect(report.journal).toMatchObject({ records: 4, lastSeq: 4 });
    expect(report.recovery).toBeNull();
    await expect(
      startVenue({ dataDir: dir, port: 0, priceFeed: 'none', log: () => {} }),
    ).rejects.toThrow(report.problems[0] as string);

    // Damaged, the snapshot past the journal proves nothing: the start uses the older one.
    flipByte(six, statSync(six).size - 3);
    const after = check(dir);
    expect(after.ok).toBe(true);
    expect(after.snapshots.map((s) => [s.seq, s.status, s.pastJournal])).toEqual([
      [6, 'skipped', true],
      [2, 'used', false],
    ]);
  });

  it('records of older engine rules left to replay: refused without the flag, accepted with it', async () => {
    const other = ENGINE_RULES_VERSION - 1;
    const { dir, journal } = await dataDir(commandsOf(4, other));
    const report = check(dir);
    expect(report.ok).toBe(false);
    expect(report.problems).toHaveLength(1);
    expect(report.problems[0]).toContain(
      `${journal}: records 2..4 include records written under engine rules ${other} that would be replayed under rules ${ENGINE_RULES_VERSION} (this build)`,
    );
    expect(report.recovery).toMatchObject({ replayRecords: 4 });
    const allowed = check(dir, { replayUnderNewRules: true, replay: true });
    expect(allowed.ok).toBe(true);
    expect(allowed.notes).toContainEqual(
      expect.stringMatching(
        /^a start logs: replaying journal records 2\.\.4, .*--replay-under-new-rules/,
      ),
    );
    expect(allowed.replay?.seq).toBe(4);
    await expect(
      startVenue({ dataDir: dir, port: 0, priceFeed: 'none', log: () => {} }),
    ).rejects.toThrow(report.problems[0] as string);
  });

  it('venue.json, chain.json, LOCK and leftovers: reported; nothing is removed or taken over', async () => {
    const { dir } = await dataDir(commandsOf(3), [3]);
    writeFileSync(join(dir, 'venue.json'), '{"adminToken": ""}');
    writeFileSync(join(dir, 'chain.json'), '{"format":');
    writeFileSync(join(dir, `${snapshotFileName(9)}.tmp`), 'partial');
    // A lock of a pid that does not run on this host: stale, a start takes it over.
    writeFileSync(
      join(dir, 'LOCK'),
      `${JSON.stringify({ pid: 2 ** 22 + 1, host: hostname(), started: null, time: 'then' })}\n`,
    );
    const report = check(dir);
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual([
      `${join(dir, 'venue.json')}: adminToken must be a non-empty string without surrounding spaces (the admin API's bearer token)`,
      expect.stringMatching(new RegExp(`^${join(dir, 'chain.json')}: .*JSON`)),
    ]);
    expect(report.lock.state).toBe('stale');
    expect(report.notes).toContainEqual(expect.stringContaining('a start takes it over'));
    expect(report.notes).toContainEqual(
      expect.stringContaining(`${snapshotFileName(9)}.tmp: an unfinished snapshot write`),
    );
    // Another host's lock refuses a start: the check says so with the start's message.
    writeFileSync(
      join(dir, 'LOCK'),
      `${JSON.stringify({ pid: 1, host: 'elsewhere', started: null, time: 'then' })}\n`,
    );
    writeFileSync(join(dir, 'venue.json'), '{"adminToken": "t"}');
    rmSync(join(dir, 'chain.json'));
    expect(check(dir).problems).toEqual([
      expect.stringMatching(/^data directory lock .*LOCK: held by pid 1 on host elsewhere/),
    ]);
  });

  it('an empty or missing directory, or one without a journal, is not a venue to restore', async () => {
    const empty = tempDir();
    const report = check(empty);
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual([
      expect.stringContaining(
        `journal ${join(empty, 'journal.log')} does not exist and there is no snapshot`,
      ),
    ]);
    expect(checkDataDir(join(empty, 'nope')).problems).toEqual([
      expect.stringMatching(/^data directory .*nope: ENOENT/),
    ]);
    // Snapshots without their journal: the start's refusal.
    const { dir, journal } = await dataDir(commandsOf(3), [3]);
    rmSync(journal);
    expect(check(dir).problems).toEqual([
      expect.stringContaining(`journal ${journal} is damaged at byte 0: the file does not exist`),
    ]);
  });
});
