/**
 * A journal that lost acknowledged records must stop start-up, never start a new venue in its
 * place. Probe that found it: with the venue running on a data directory with snapshots,
 * `rm journal.log`, two more acknowledged oracle updates, SIGTERM, restart. The restart logged
 * `snapshot … is ahead of the journal (seq 9 > last record 0); skipped, using …` twice, created
 * an empty journal and started a brand-new venue (new invite code, seq 4): every acknowledged
 * record was gone, with no error. The same happened for an empty journal and for an older copy
 * of the journal put in its place.
 */
import {
  copyFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { wallet } from '@perp/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { JournalCorruptError, scanFrames } from '../src/journal/file-journal.js';
import {
  JournalBehindSnapshotError,
  listSnapshotFiles,
  loadNewestSnapshot,
  Snapshotter,
} from '../src/journal/snapshots.js';
import { startVenue, type Venue } from '../src/venue.js';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'perp-dur-loss-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** How many of this process's file descriptors are open on `path` (Linux; 0 elsewhere). */
function openDescriptorsOf(path: string): number {
  let n = 0;
  try {
    for (const fd of readdirSync('/proc/self/fd')) {
      try {
        if (readlinkSync(`/proc/self/fd/${fd}`) === path) n++;
      } catch {
        // Closed while listing.
      }
    }
  } catch {
    return 0;
  }
  return n;
}

function start(dir: string, lines: string[]): Promise<Venue> {
  return startVenue({
    dataDir: dir,
    port: 0,
    priceFeed: 'none',
    log: (l) => lines.push(l),
    snapshots: { everyRecords: 5, everyMs: 0 },
  });
}

async function drive(venue: Venue, from: number, count: number): Promise<void> {
  for (let i = from; i < from + count; i++)
    await venue.context.host.submit({ type: 'openAccount', account: wallet(100 + i) });
}

/** A data directory with a snapshot and a journal tail after it; returns an early journal copy. */
async function prepared(): Promise<{ dir: string; early: string; lines: string[] }> {
  const dir = tempDir();
  const lines: string[] = [];
  const venue = await start(dir, lines);
  const early = join(tempDir(), 'journal-early.log');
  copyFileSync(join(dir, 'journal.log'), early);
  for (let round = 0; round < 200 && listSnapshotFiles(dir).length < 2; round++) {
    await drive(venue, round * 3, 3);
    await new Promise((r) => setTimeout(r, 5));
  }
  await drive(venue, 1000, 2);
  await venue.close();
  expect(listSnapshotFiles(dir).length).toBeGreaterThanOrEqual(1);
  return { dir, early, lines };
}

describe('a journal that lost acknowledged records stops start-up', () => {
  it('a deleted journal: refused, naming the file; no empty journal is created', async () => {
    const { dir } = await prepared();
    const journal = join(dir, 'journal.log');
    rmSync(journal);
    const error = await start(dir, []).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JournalCorruptError);
    expect((error as JournalCorruptError).file).toBe(journal);
    expect((error as Error).message).toContain(
      `journal ${journal} is damaged at byte 0: the file does not exist`,
    );
    expect(existsSync(journal)).toBe(false);
  });

  it('an empty journal: refused, naming the file and offset 0', async () => {
    const { dir } = await prepared();
    const journal = join(dir, 'journal.log');
    writeFileSync(journal, '');
    await expect(start(dir, [])).rejects.toThrow(
      `journal ${journal} is damaged at byte 0: the file is empty`,
    );
  });

  it('an older copy of the journal: refused, naming the file, its end and the snapshot', async () => {
    const { dir, early } = await prepared();
    const journal = join(dir, 'journal.log');
    copyFileSync(early, journal);
    const [newest] = listSnapshotFiles(dir);
    const error = await start(dir, []).catch((e: unknown) => e);
    // The refused start closed the journal it had opened (and left no lock).
    expect(openDescriptorsOf(journal)).toBe(0);
    expect(existsSync(join(dir, 'LOCK'))).toBe(false);
    expect(error).toBeInstanceOf(JournalBehindSnapshotError);
    const e = error as JournalBehindSnapshotError;
    expect(e.file).toBe(journal);
    expect(e.snapshot).toBe(newest?.path);
    expect(e.message).toMatch(
      new RegExp(
        `^journal ${journal} ends at seq \\d+ \\(byte \\d+\\), but the valid snapshot ${newest?.path} covers records up to seq ${newest?.seq}`,
      ),
    );
  });

  it('beside a journal copied out by a venue it was taken from, the refusal names that copy, not snapshots to delete', async () => {
    const { dir, early } = await prepared();
    const journal = join(dir, 'journal.log');
    // What a running venue leaves when its journal.log is replaced under it: its own journal,
    // copied out beside the file now in its place.
    const copy = `${journal}.detached-2026-11-28T10-00-00-000Z`;
    copyFileSync(journal, copy);
    copyFileSync(early, journal);
    const error = await start(dir, []).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JournalBehindSnapshotError);
    expect((error as Error).message).toContain(
      `${copy} is beside it: a venue that ran here copied its journal out when ${journal} was deleted or replaced under it`,
    );
    expect((error as Error).message).not.toContain('delete the snapshot files');
    // Doing what it says starts the venue with every record.
    copyFileSync(copy, journal);
    rmSync(copy);
    const venue = await start(dir, []);
    expect(venue.context.host.journalSeq).toBe(
      scanFrames(journal, readFileSync(journal)).offsets.length,
    );
    await venue.close();
  });

  it('a damaged last record that a valid snapshot covers: refused, not cut as a torn record', async () => {
    const { dir } = await prepared();
    const journal = join(dir, 'journal.log');
    const data = readFileSync(journal);
    const frames = scanFrames(journal, data);
    const lastSeq = frames.offsets.length;
    const lastOffset = frames.offsets[lastSeq - 1] as number;
    // The clean stop's snapshot covers the last record: it was acknowledged.
    expect(listSnapshotFiles(dir)[0]?.seq).toBe(lastSeq);
    // Bit rot in that record's payload: with nothing valid after it, it looks like a torn write.
    const damaged = Buffer.from(data);
    damaged[damaged.length - 2] = (damaged[damaged.length - 2] as number) ^ 0x01;
    writeFileSync(journal, damaged);
    const lines: string[] = [];
    const error = await start(dir, lines).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JournalBehindSnapshotError);
    expect((error as Error).message).toContain(
      `journal ${journal} ends at seq ${lastSeq - 1} (byte ${lastOffset}), but the valid snapshot`,
    );
    // Not cut and not called "never acknowledged": the refused start left the file as it was.
    expect(lines.filter((l) => l.includes('cut a torn record'))).toEqual([]);
    expect(readFileSync(journal).equals(damaged)).toBe(true);
    expect(openDescriptorsOf(journal)).toBe(0);
  });

  it('with snapshots off too: an older copy of the journal is refused, not replayed', async () => {
    const { dir, early } = await prepared();
    copyFileSync(early, join(dir, 'journal.log'));
    const error = await startVenue({
      dataDir: dir,
      port: 0,
      priceFeed: 'none',
      log: () => {},
      snapshots: false,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JournalBehindSnapshotError);
  });

  it('a damaged snapshot past the journal proves nothing: it is skipped with a log line', async () => {
    const dir = tempDir();
    const s = new Snapshotter({ dir, log: () => {} });
    writeFileSync(join(dir, 'snapshot-00000000000000000009.snap'), 'not a snapshot');
    await s.close();
    const lines: string[] = [];
    expect(loadNewestSnapshot(dir, { maxSeq: 3, log: (l) => lines.push(l) })).toBeNull();
    expect(lines[0]).toContain(
      'snapshot-00000000000000000009.snap is invalid: no header line; skipped',
    );
  });
});
