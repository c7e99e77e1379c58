/**
 * A restart scans only the journal after its snapshot (docs/durability.md, "Recovery rules"):
 * the snapshot records where its last record is, the start checks that record and scans the
 * tail, and the records it covers are checked only when something reads them (the history
 * backfill without a checkpoint, a start without the snapshot, `--check`).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { wallet } from '@perp/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { checkDataDir } from '../src/data-dir-check.js';
import { JournalCorruptError, scanFrames } from '../src/journal/file-journal.js';
import { listCheckpointFiles } from '../src/journal/read-model-files.js';
import { listSnapshotFiles, readSnapshotHeader } from '../src/journal/snapshots.js';
import type { StartVenueOptions } from '../src/venue.js';
import { startTestVenue, type TestVenue } from './support/fixture.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

// Snapshots only at the clean stops that ask for one, so the tests know which exist.
const SNAPSHOTS = { everyRecords: 1_000_000, everyMs: 0, atClose: false } as const;

function start(dir: string, options: StartVenueOptions = {}): Promise<TestVenue> {
  return startTestVenue({ dataDir: dir, snapshots: SNAPSHOTS, ...options });
}

async function stateHash(t: TestVenue): Promise<unknown> {
  return (await t.admin('GET', '/admin/state-hash')).body;
}

/** A data directory: records, a clean stop's snapshot with its checkpoint, then a tail after it. */
async function venueDir(): Promise<{ dir: string; snapSeq: number; hash: unknown }> {
  const dir = mkdtempSync(join(tmpdir(), 'perp-resume-'));
  dirs.push(dir);
  let t = await start(dir, { snapshots: { ...SNAPSHOTS, atClose: true } });
  for (let i = 0; i < 12; i++)
    await t.venue.context.host.submit({ type: 'openAccount', account: wallet(100 + i) });
  await t.close();
  const snapSeq = listSnapshotFiles(dir)[0]?.seq as number;
  expect(listCheckpointFiles(dir)[0]?.seq).toBe(snapSeq);
  t = await start(dir);
  for (let i = 0; i < 2; i++)
    await t.venue.context.host.submit({ type: 'openAccount', account: wallet(200 + i) });
  expect(t.venue.context.host.journalSeq).toBeGreaterThan(snapSeq);
  const hash = await stateHash(t);
  await t.close();
  expect(listSnapshotFiles(dir)[0]?.seq).toBe(snapSeq);
  return { dir, snapSeq, hash };
}

describe('a restart from a snapshot scans only the journal after it', () => {
  it('the snapshot header records where its last record is in the journal', async () => {
    const { dir, snapSeq } = await venueDir();
    const journal = join(dir, 'journal.log');
    const data = readFileSync(journal);
    const frames = scanFrames(journal, data);
    const offset = frames.offsets[snapSeq - 1] as number;
    const header = readSnapshotHeader(listSnapshotFiles(dir)[0]?.path as string);
    expect(header?.seq).toBe(snapSeq);
    expect(header?.journal).toEqual({ offset, crc: data.readUInt32LE(offset + 12) });
  });

  it('damage in a record the snapshot covers does not stop a start; whatever reads it names it', async () => {
    const { dir, snapSeq, hash } = await venueDir();
    const journal = join(dir, 'journal.log');
    const data = readFileSync(journal);
    const second = scanFrames(journal, data).offsets[1] as number;
    data[second + 20] = (data[second + 20] as number) ^ 0x01;
    writeFileSync(journal, data);

    // The start checks record `snapSeq` where the snapshot says and scans only after it.
    const lines: string[] = [];
    let t = await start(dir, { log: (l) => lines.push(l) });
    expect(await stateHash(t)).toEqual(hash);
    expect(await t.venue.historyBackfill?.done).toBe('complete');
    expect(t.venue.historyBackfill?.progress).toMatchObject({ source: 'checkpoint' });
    expect(lines.some((l) => l.includes('damaged'))).toBe(false);
    await t.close();

    // --check reads the covered records too, and says what the damage means for a start.
    const report = checkDataDir(dir);
    expect(report.problems).toEqual([]);
    const position = readSnapshotHeader(listSnapshotFiles(dir)[0]?.path as string)?.journal;
    expect(report.notes).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^a start checks record ${snapSeq} at byte ${position?.offset} \\(the position .*snapshot-0+${snapSeq}\\.snap recorded\\) and scans only the journal after it \\(\\d+ records\\)$`,
        ),
      ),
    );
    expect(report.notes).toContainEqual(
      expect.stringContaining(
        `journal ${journal} is damaged at byte ${second}: record checksum mismatch (expected seq 2) (records up to seq ${snapSeq}, which a snapshot covers, are checked only when read): a start from the snapshot does not read it`,
      ),
    );

    // Without a checkpoint the backfill reads the covered records: abandoned, naming the byte.
    for (const f of listCheckpointFiles(dir)) rmSync(f.path);
    lines.length = 0;
    t = await start(dir, { log: (l) => lines.push(l) });
    expect(await stateHash(t)).toEqual(hash);
    expect(await t.venue.historyBackfill?.done).toBe('abandoned');
    expect(lines).toContainEqual(
      expect.stringContaining(
        `history backfill abandoned: journal ${journal} is damaged at byte ${second}`,
      ),
    );
    await t.close();

    // A start that replays the whole journal refuses it, naming the byte.
    const error = await start(dir, { snapshots: false }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JournalCorruptError);
    expect((error as JournalCorruptError).offset).toBe(second);
    expect(checkDataDir(dir, { snapshots: false }).problems).toContainEqual(
      expect.stringContaining(`journal ${journal} is damaged at byte ${second}`),
    );
  }, 60_000);

  it('a position that does not match the journal falls back to scanning all of it', async () => {
    const { dir, hash } = await venueDir();
    const journal = join(dir, 'journal.log');
    const snap = listSnapshotFiles(dir)[0]?.path as string;
    // The header's journal position is off by one byte: the whole journal is scanned, so the
    // damaged covered record now refuses the start, as before snapshots recorded positions.
    const file = readFileSync(snap);
    const header = JSON.parse(file.toString('utf8', 0, file.indexOf(10)));
    header.journal.offset += 1;
    file.write(`${JSON.stringify(header).padEnd(511, ' ')}\n`, 0, 'utf8');
    writeFileSync(snap, file);
    expect(readSnapshotHeader(snap)?.journal).toBeDefined();

    const t = await start(dir);
    expect(await stateHash(t)).toEqual(hash);
    await t.close();
    expect(checkDataDir(dir).notes).toContainEqual(
      `a start scans the whole journal: record ${header.seq} is not at the position ${snap} recorded (byte ${header.journal.offset})`,
    );

    const data = readFileSync(journal);
    const second = scanFrames(journal, data).offsets[1] as number;
    data[second + 20] = (data[second + 20] as number) ^ 0x01;
    writeFileSync(journal, data);
    const error = await start(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JournalCorruptError);
    expect((error as JournalCorruptError).offset).toBe(second);
  }, 60_000);
});
