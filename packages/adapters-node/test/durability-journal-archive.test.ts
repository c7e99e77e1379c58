/**
 * `--archive-journal` (docs/durability.md, "Archiving the journal"): the records the recovering
 * snapshot covers leave `journal.log` byte for byte; a restart serves the same state and history;
 * whatever would need the archived records refuses, naming them; putting the archive back in
 * front of the journal restores the whole history; a refused archive changes nothing.
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ArchiveRefusedError, archiveJournal } from '../src/archive-journal.js';
import { checkDataDir, formatDataDirReport } from '../src/data-dir-check.js';
import { DataDirLockedError } from '../src/journal/data-dir-lock.js';
import { archiveFileName, RecordsArchivedError, scanFrames } from '../src/journal/file-journal.js';
import { checkpointFileName, listCheckpointFiles } from '../src/journal/read-model-files.js';
import { listSnapshotFiles } from '../src/journal/snapshots.js';
import type { StartVenueOptions } from '../src/venue.js';
import {
  btc,
  fileListing,
  placeOrder,
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
  const d = mkdtempSync(join(tmpdir(), 'perp-archive-'));
  dirs.push(d);
  return d;
}

// Snapshots only at the clean stops that ask for one, so the tests know which exist.
const SNAPSHOTS = { everyRecords: 1_000_000, everyMs: 0, atClose: false } as const;

function start(dir: string, options: StartVenueOptions = {}): Promise<TestVenue> {
  return startTestVenue({ dataDir: dir, snapshots: SNAPSHOTS, priceFeed: 'none', ...options });
}

/** Bob rests a sell, Alice takes it: one trade at `price`; then an order of Alice's rests. */
async function trade(x: Traders, price: number): Promise<void> {
  await placeOrder(x.bob, x.b, { isBuy: 0, price: px(price), quantity: btc(0.01) });
  await placeOrder(x.alice, x.a, {
    isBuy: 1,
    price: px(price),
    quantity: btc(0.01),
    timeInForce: 2,
  });
  await placeOrder(x.alice, x.a, { isBuy: 1, price: px(price - 5000), quantity: btc(0.01) });
}

/**
 * The state hash (`state`: taken before the traders' sockets were opened, which journals their
 * authentications) and what the read models serve of both traders' history.
 */
async function observed(
  t: TestVenue,
  x: Traders,
  state: unknown,
): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = { state };
  for (const w of [x.alice, x.bob]) {
    out[`${w.address}.trades`] = (
      await t.api('GET', `/account/trades?wallet=${w.address}&limit=500`)
    ).body;
    out[`${w.address}.orders`] = (
      await t.api('GET', `/historic/orders?wallet=${w.address}&limit=500`)
    ).body;
  }
  return out;
}

/**
 * A venue's directory: trades, a clean stop's snapshot (seq `snapSeq`) with its read-model
 * checkpoint, then more trades after it and a stop without a snapshot.
 */
async function venueDir(): Promise<{
  dir: string;
  snapSeq: number;
  seen: Record<string, unknown>;
}> {
  const dir = tempDir();
  let t = await start(dir, { snapshots: { ...SNAPSHOTS, atClose: true } });
  await t.oracle({ 'BTC-PERP': '65000' });
  let x = await traders(t, true);
  for (let i = 0; i < 3; i++) await trade(x, 65000 + i * 10);
  await t.close();
  const snapSeq = listSnapshotFiles(dir)[0]?.seq as number;
  expect(listCheckpointFiles(dir)[0]?.seq).toBe(snapSeq);
  t = await start(dir);
  x = await traders(t, false);
  await trade(x, 65100);
  const seen = await observed(t, x, await t.stateHash());
  await t.close();
  return { dir, snapSeq, seen };
}

describe('archiving the journal', () => {
  it('moves the records the snapshot covers out byte for byte; a restart serves the same state and history', async () => {
    const { dir, snapSeq, seen } = await venueDir();
    const journal = join(dir, 'journal.log');
    const original = readFileSync(journal);
    const cut = scanFrames(journal, original).offsets[snapSeq - 1] as number;

    // --check says what an archive would move.
    const movable = `--archive-journal (with the venue stopped) would move records 1..${snapSeq - 1} (${cut} bytes) out of ${journal}`;
    expect(checkDataDir(dir).notes).toContain(movable);

    const result = archiveJournal(dir);
    const archive = join(dir, archiveFileName(1, snapSeq - 1));
    expect(result).toMatchObject({
      archive,
      firstSeq: 1,
      lastSeq: snapSeq - 1,
      bytes: cut,
      journal: { file: journal, firstSeq: snapSeq, bytes: original.length - cut },
    });
    expect(readFileSync(archive).equals(original.subarray(0, cut))).toBe(true);
    expect(readFileSync(journal).equals(original.subarray(cut))).toBe(true);
    expect(existsSync(`${archive}.tmp`) || existsSync(`${journal}.tmp`)).toBe(false);
    expect(existsSync(join(dir, 'LOCK'))).toBe(false);

    const report = checkDataDir(dir);
    expect(report.problems).toEqual([]);
    expect(report.journal).toMatchObject({
      firstSeq: snapSeq,
      records: seen.state ? expect.any(Number) : 0,
    });
    expect(report.notes).toContainEqual(
      expect.stringContaining(`records 1..${snapSeq - 1} are not in ${journal} (archived)`),
    );
    expect(report.notes).toContainEqual(
      expect.stringContaining(`${archive}: journal records 1..${snapSeq - 1} archived`),
    );
    expect(report.notes).toContainEqual(
      expect.stringContaining(', as after an archive of the records before it'),
    );
    expect(report.notes.some((n) => n.startsWith('--archive-journal'))).toBe(false);

    let t = await start(dir, { snapshots: { ...SNAPSHOTS, atClose: true } });
    expect(await t.venue.historyBackfill?.done).toBe('complete');
    expect(t.venue.historyBackfill?.progress).toMatchObject({ source: 'checkpoint' });
    let state = await t.stateHash();
    let x = await traders(t, false);
    expect(await observed(t, x, state)).toEqual(seen);
    // The venue goes on journaling after the kept records, and its snapshot records where.
    await trade(x, 65200);
    const later = await observed(t, x, await t.stateHash());
    await t.close();
    const secondSnap = listSnapshotFiles(dir)[0]?.seq as number;
    expect(secondSnap).toBeGreaterThan(snapSeq);
    expect(checkDataDir(dir).notes).toContainEqual(
      expect.stringMatching(new RegExp(`^a start checks record ${secondSnap} at byte \\d+`)),
    );

    // A second archive moves the next stretch; the archives and the journal, concatenated,
    // are the whole journal: a start without snapshots replays it to the same state.
    const again = archiveJournal(dir);
    expect(again).toMatchObject({ firstSeq: snapSeq, lastSeq: secondSnap - 1 });
    expect(archiveJournal(dir)).toMatchObject({ archive: null, bytes: 0 });
    t = await start(dir);
    state = await t.stateHash();
    x = await traders(t, false);
    expect(await observed(t, x, state)).toEqual(later);
    // The sockets' authentications are journaled too.
    const last = await t.stateHash();
    await t.close();

    const whole = tempDir();
    for (const name of ['venue.json', 'chain.json'])
      if (existsSync(join(dir, name))) cpSync(join(dir, name), join(whole, name));
    writeFileSync(
      join(whole, 'journal.log'),
      Buffer.concat([
        readFileSync(archive),
        readFileSync(again.archive as string),
        readFileSync(journal),
      ]),
    );
    t = await start(whole, { snapshots: false });
    state = await t.stateHash();
    x = await traders(t, false);
    expect(await observed(t, x, state)).toEqual({ ...later, state: last });
    await t.close();
  });

  it('what needs the archived records refuses or gives up, naming them', async () => {
    const { dir, snapSeq, seen } = await venueDir();
    archiveJournal(dir);
    const journal = join(dir, 'journal.log');
    const archived = `journal ${journal} begins at seq ${snapSeq}: records 1..${snapSeq - 1} were archived (--archive-journal), but`;

    // A start without snapshots would replay them.
    let error = await start(dir, { snapshots: false }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RecordsArchivedError);
    expect((error as Error).message).toBe(
      `${archived} a start without snapshots (--no-snapshots) replays the whole journal. Put the archived journal files back in front of it (cat journal-*.log journal.log, in seq order; docs/durability.md, "Archiving the journal")`,
    );
    expect(checkDataDir(dir, { snapshots: false }).problems).toEqual([(error as Error).message]);

    // Without its read-model checkpoint, the history backfill cannot re-reduce them: the
    // engine state is whole, the history before the snapshot is not.
    const noCheckpoint = tempDir();
    cpSync(dir, noCheckpoint, { recursive: true });
    for (const f of listCheckpointFiles(noCheckpoint)) rmSync(f.path);
    const report = checkDataDir(noCheckpoint);
    expect(report.notes).toContainEqual(
      expect.stringContaining("a start's history backfill is abandoned"),
    );
    // The read-models line agrees with that note (it said "rebuilt in the background from the
    // journal"): nothing before the snapshot is rebuilt.
    expect(report.recovery?.readModels).toMatchObject({ source: 'journal', archived: true });
    const text = formatDataDirReport(report);
    expect(text).toContain(
      'read models before the snapshot: not rebuilt, the journal records before it are archived (no checkpoint used: ',
    );
    expect(text).not.toContain('rebuilt in the background');
    const lines: string[] = [];
    const t = await start(noCheckpoint, { log: (l) => lines.push(l) });
    expect(await t.stateHash()).toEqual(seen.state);
    expect(await t.venue.historyBackfill?.done).toBe('abandoned');
    expect(lines).toContainEqual(
      expect.stringContaining(
        `history backfill abandoned: journal ${join(noCheckpoint, 'journal.log')} begins at seq ${snapSeq}`,
      ),
    );
    await t.close();

    // Without a snapshot at or past the last archived record, nothing can stand in for them.
    for (const f of listSnapshotFiles(dir)) rmSync(f.path);
    error = await start(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RecordsArchivedError);
    expect((error as Error).message).toContain(
      `${archived} there is no valid snapshot to start from.`,
    );
    expect(checkDataDir(dir).problems).toEqual([(error as Error).message]);
  });

  it("after an archive, a snapshot without its checkpoint: the backfill starts at an older one's", async () => {
    const { dir, snapSeq } = await venueDir();
    archiveJournal(dir);
    // After the archive: more trades and a clean stop's snapshot, whose checkpoint is then lost
    // (a crash between the two writes).
    let t = await start(dir, { snapshots: { ...SNAPSHOTS, atClose: true } });
    let x = await traders(t, false);
    await trade(x, 65300);
    const seen = await observed(t, x, await t.stateHash());
    await t.close();
    const newest = listSnapshotFiles(dir)[0]?.seq as number;
    expect(newest).toBeGreaterThan(snapSeq);
    rmSync(join(dir, checkpointFileName(newest)));

    const older = join(dir, checkpointFileName(snapSeq));
    const report = checkDataDir(dir);
    expect(report.problems).toEqual([]);
    expect(report.recovery?.readModels).toMatchObject({
      source: 'journal',
      from: { seq: snapSeq, file: older },
    });
    expect(report.notes.some((n) => n.includes('backfill is abandoned'))).toBe(false);

    const lines: string[] = [];
    t = await start(dir, { log: (l) => lines.push(l) });
    const state = await t.stateHash();
    expect(await t.venue.historyBackfill?.done).toBe('complete');
    expect(lines).toContainEqual(
      `history backfill: re-reducing journal records ${snapSeq + 1}..${newest} in the background to rebuild the read models from before the snapshot, from the read models at seq ${snapSeq} loaded from ${older}`,
    );
    x = await traders(t, false);
    expect(await observed(t, x, state)).toEqual(seen);
    await t.close();
  });

  it('refuses, changing nothing, while the venue runs, without a snapshot or checkpoint, or over a foreign archive file', async () => {
    const { dir, snapSeq } = await venueDir();
    const before = fileListing(dir);

    const t = await start(dir);
    expect(() => archiveJournal(dir)).toThrow(DataDirLockedError);
    await t.close();
    expect(fileListing(dir)).toEqual(before);

    const noCheckpoint = tempDir();
    cpSync(dir, noCheckpoint, { recursive: true });
    for (const f of listCheckpointFiles(noCheckpoint)) rmSync(f.path);
    const withoutCheckpoint = fileListing(noCheckpoint);
    expect(() => archiveJournal(noCheckpoint)).toThrow(
      /the read models before .* would be rebuilt from the journal \(.*\), so its records cannot be archived/,
    );
    expect(fileListing(noCheckpoint)).toEqual(withoutCheckpoint);

    const noSnapshot = tempDir();
    cpSync(dir, noSnapshot, { recursive: true });
    for (const f of listSnapshotFiles(noSnapshot)) rmSync(f.path);
    const withoutSnapshot = fileListing(noSnapshot);
    expect(() => archiveJournal(noSnapshot)).toThrow(ArchiveRefusedError);
    expect(() => archiveJournal(noSnapshot)).toThrow(/has no valid snapshot/);
    expect(fileListing(noSnapshot)).toEqual(withoutSnapshot);

    // A damaged record among those that would leave: a start from the snapshot never reads it,
    // but archiving it would keep the damage for good.
    const damaged = tempDir();
    cpSync(dir, damaged, { recursive: true });
    const journal = join(damaged, 'journal.log');
    const bytes = readFileSync(journal);
    const second = scanFrames(journal, bytes).offsets[1] as number;
    bytes[second + 20] = (bytes[second + 20] as number) ^ 0x01;
    writeFileSync(journal, bytes);
    const withDamage = fileListing(damaged);
    // --check says so in advance, rather than what the archive would move.
    const notes = checkDataDir(damaged).notes;
    expect(notes).toContain(
      `--archive-journal would refuse to move records 1..${snapSeq - 1} out of ${journal}: one of them is damaged (above), and an archive would keep the damage for good`,
    );
    expect(notes.filter((n) => n.includes('would move records'))).toEqual([]);
    expect(() => archiveJournal(damaged)).toThrow(
      `journal ${journal} is damaged at byte ${second}: record checksum mismatch (expected seq 2)`,
    );
    expect(() => archiveJournal(damaged)).toThrow(
      'nothing was archived: restore journal.log from a backup whose records are whole',
    );
    expect(fileListing(damaged)).toEqual(withDamage);

    // A file of that name that does not hold these records is not overwritten.
    const foreign = join(dir, archiveFileName(1, snapSeq - 1));
    writeFileSync(foreign, 'another venue');
    const withForeign = fileListing(dir);
    expect(() => archiveJournal(dir)).toThrow(/exists and does not hold records 1\.\./);
    expect(fileListing(dir)).toEqual(withForeign);
  });

  it('a run cut short after writing the archive is finished by the next one', async () => {
    const { dir, snapSeq, seen } = await venueDir();
    const journal = join(dir, 'journal.log');
    const original = readFileSync(journal);
    const cut = scanFrames(journal, original).offsets[snapSeq - 1] as number;
    const to = join(tempDir(), 'archive');
    const archive = join(to, archiveFileName(1, snapSeq - 1));
    // The archive written and renamed, the journal not yet rewritten (a crash between them),
    // and a leftover of the journal's unfinished rewrite.
    cpSync(dir, `${dir}-copy`, { recursive: true });
    dirs.push(`${dir}-copy`);
    archiveJournal(`${dir}-copy`, { to });
    expect(readFileSync(archive).equals(original.subarray(0, cut))).toBe(true);
    writeFileSync(`${journal}.tmp`, 'half a rewrite');
    expect(checkDataDir(dir).notes).toContainEqual(
      expect.stringContaining(`${journal}.tmp: an unfinished journal rewrite of --archive-journal`),
    );

    expect(archiveJournal(dir, { to })).toMatchObject({ archive, lastSeq: snapSeq - 1 });
    expect(readFileSync(journal).equals(original.subarray(cut))).toBe(true);
    expect(existsSync(`${journal}.tmp`)).toBe(false);
    const t = await start(dir);
    expect(await t.stateHash()).toEqual(seen.state);
    await t.close();
  });
});
