/**
 * Opening a journal after a known record (`resumeAfter`, the newest snapshot's position): the
 * same records, seqs and torn-tail repair as a full scan, the skipped records checked when they
 * are read, and a position that does not match falling back to the full scan.
 */
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command, JournalRecord } from '@perp/core';
import { wallet } from '@perp/core/testing';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import {
  FileJournal,
  firstRecordSeq,
  JournalCorruptError,
  type JournalPosition,
  RecordsArchivedError,
  recordOffset,
  scanFrames,
} from './file-journal.js';

const dir = mkdtempSync(join(tmpdir(), 'perp-resume-unit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function command(i: number): Command {
  return { type: 'openAccount', account: wallet(1 + i), time: 1_000 + i } as Command;
}

function readAll(j: FileJournal, afterSeq: number): JournalRecord[] {
  return [...j.readSync(afterSeq)];
}

/** Writes `groups` of commands through a journal; returns every record's position as it was told. */
async function write(path: string, groups: number[]): Promise<JournalPosition[]> {
  rmSync(path, { force: true });
  const j = FileJournal.open(path, { log: () => {} });
  const positions: JournalPosition[] = [];
  let n = 0;
  for (const size of groups) {
    const last = await j.append(Array.from({ length: size }, () => command(n++)));
    for (let seq = last - size + 1; seq <= last; seq++)
      positions.push(j.positionOf(seq) as JournalPosition);
  }
  await j.close();
  return positions;
}

describe('a journal opened after a known record', () => {
  it('reads what a full scan reads, and remembers where each appended record went', async () => {
    const path = join(dir, 'journal.log');
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 8 }),
        fc.nat(),
        fc.nat(),
        fc.integer({ min: 0, max: 30 }),
        fc.constantFrom(undefined, 5, 64),
        async (groups, pick, readFrom, tornBytes, window) => {
          const positions = await write(path, groups);
          const total = positions.length;
          const data = readFileSync(path);
          const frames = scanFrames(path, data);
          // What the journal said is where the full scan finds each record.
          expect(positions.map((p) => p.offset)).toEqual(frames.offsets);
          expect(positions.map((p) => p.crc)).toEqual(
            frames.offsets.map((at) => data.readUInt32LE(at + 12)),
          );
          // A crash mid-append leaves the start of a record after them.
          if (tornBytes > 0) appendFileSync(path, data.subarray(0, tornBytes));
          const seq = 1 + (pick % total);
          const after = readFrom % (total + 1);
          const lines: string[] = [];
          const resumed = FileJournal.open(path, {
            resumeAfter: { seq, position: positions[seq - 1] as JournalPosition },
            log: (l) => lines.push(l),
            ...(window === undefined ? {} : { readWindowBytes: window }),
          });
          expect(resumed.lastSeq).toBe(total);
          expect(resumed.positionOf(total)).toEqual(positions[total - 1]);
          expect(lines).toHaveLength(tornBytes > 0 ? 1 : 0);
          const read = readAll(resumed, after);
          await resumed.close();
          const full = FileJournal.open(path, { log: () => {} });
          expect(read).toEqual(readAll(full, after));
          expect(read.map((r) => r.seq)).toEqual(
            Array.from({ length: total - after }, (_, i) => after + 1 + i),
          );
          await full.close();
        },
      ),
      { numRuns: 60 },
    );
  });

  it('a journal whose first records were archived starts at its first seq, resumed or scanned', async () => {
    const path = join(dir, 'archived.log');
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 8 }),
        fc.nat(),
        fc.nat(),
        fc.nat(),
        fc.integer({ min: 0, max: 30 }),
        fc.boolean(),
        fc.constantFrom(undefined, 5, 64),
        async (groups, pick, archivePick, readFrom, tornBytes, shifted, window) => {
          const positions = await write(path, groups);
          const total = positions.length;
          const data = readFileSync(path);
          // The snapshot's record stays; the `archived` records before it leave the file.
          const seq = 1 + (pick % total);
          const archived = archivePick % seq;
          const first = archived + 1;
          const cut = (positions[archived] as JournalPosition).offset;
          writeFileSync(path, data.subarray(cut));
          if (tornBytes > 0) appendFileSync(path, data.subarray(0, tornBytes));
          expect(firstRecordSeq(readFileSync(path))).toBe(first);
          // Each kept record is found by following the lengths from the file's first seq.
          const kept = readFileSync(path);
          for (let k = first; k <= total; k++)
            expect(recordOffset(kept, first, k)).toBe(
              (positions[k - 1] as JournalPosition).offset - cut,
            );
          expect(recordOffset(kept, first, total + 1)).toBeUndefined();
          expect(recordOffset(kept, first + 1, total)).toBeUndefined();
          // The position the snapshot recorded before the archive no longer matches (unless
          // nothing moved): the whole (short) file is scanned from its first seq.
          const recorded = positions[seq - 1] as JournalPosition;
          const position = shifted ? { ...recorded, offset: recorded.offset - cut } : recorded;
          const j = FileJournal.open(path, {
            firstSeq: first,
            resumeAfter: { seq, position },
            log: () => {},
            ...(window === undefined ? {} : { readWindowBytes: window }),
          });
          expect(j.startSeq).toBe(first);
          expect(j.lastSeq).toBe(total);
          const after = archived + (readFrom % (total - archived + 1));
          expect(readAll(j, after).map((r) => r.seq)).toEqual(
            Array.from({ length: total - after }, (_, i) => after + 1 + i),
          );
          if (archived > 0) {
            expect(() => readAll(j, archived - 1)).toThrow(RecordsArchivedError);
            expect(() => readAll(j, archived - 1)).toThrow(
              `records ${archived}..${archived} were asked for`,
            );
          }
          await j.close();
        },
      ),
      { numRuns: 60 },
    );
  });

  it('an archived journal whose first record is damaged is refused, never cut as a torn tail', async () => {
    const path = join(dir, 'archived-damaged.log');
    const positions = await write(path, [100, 100]);
    const data = readFileSync(path);
    // Records 1..196 archived: the file begins at seq 197, far past what a guess of seq 1
    // allows for in a file of four records.
    const kept = Buffer.from(data.subarray((positions[196] as JournalPosition).offset));
    kept[20] = (kept[20] as number) ^ 0x01;
    writeFileSync(path, kept);
    expect(firstRecordSeq(kept)).toBeUndefined();
    // No snapshot to say the journal held records (they were deleted too): the damage alone
    // must stop it, and the file must stay as it was.
    expect(() => FileJournal.open(path, { log: () => {} })).toThrow(
      'record checksum mismatch (expected seq 1) with valid records after it',
    );
    expect(readFileSync(path).equals(kept)).toBe(true);
  });

  it('a journal that does not start with an intact record has no first seq of its own', () => {
    const path = join(dir, 'start.log');
    expect(firstRecordSeq(Buffer.alloc(0))).toBeUndefined();
    expect(firstRecordSeq(Buffer.alloc(10))).toBeUndefined();
    return write(path, [2]).then(() => {
      const data = readFileSync(path);
      expect(firstRecordSeq(data)).toBe(1);
      expect(firstRecordSeq(data.subarray(0, 20))).toBeUndefined();
      const flipped = Buffer.from(data);
      flipped[18] = (flipped[18] as number) ^ 0x01;
      expect(firstRecordSeq(flipped)).toBeUndefined();
    });
  });

  it('checks the skipped records when they are read, and a wrong position scans everything', async () => {
    const path = join(dir, 'damaged.log');
    const positions = await write(path, [3, 2, 4]);
    const data = readFileSync(path);
    const at = positions[2] as JournalPosition;
    const damaged = Buffer.from(data);
    damaged[at.offset + 18] = (damaged[at.offset + 18] as number) ^ 0x01;
    writeFileSync(path, damaged);

    const resume = { seq: 6, position: positions[5] as JournalPosition };
    const j = FileJournal.open(path, { resumeAfter: resume, log: () => {} });
    expect(j.lastSeq).toBe(9);
    expect(readAll(j, 6).map((r) => r.seq)).toEqual([7, 8, 9]);
    // Reading from before the damage, or from just after it (the walk must pass it to find
    // record 4), names it.
    for (const from of [0, 3]) {
      let error: unknown;
      try {
        readAll(j, from);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(JournalCorruptError);
      expect((error as JournalCorruptError).offset).toBe(at.offset);
      expect((error as Error).message).toContain(
        'record checksum mismatch (expected seq 3) (records up to seq 6, which a snapshot covers, are checked only when read)',
      );
    }
    // Once the records are no longer needed, nothing is read (nor checked) again.
    j.forget(9);
    expect(readAll(j, 0)).toEqual([]);
    await j.close();

    // A position that is not record 6 as recorded: the full scan finds the damage.
    for (const wrong of [
      { offset: resume.position.offset + 1, crc: resume.position.crc },
      { offset: resume.position.offset, crc: resume.position.crc ^ 1 },
      { offset: data.length + 10, crc: resume.position.crc },
      positions[4] as JournalPosition,
    ]) {
      expect(() =>
        FileJournal.open(path, { resumeAfter: { seq: 6, position: wrong }, log: () => {} }),
      ).toThrow(JournalCorruptError);
    }
  });
});
