/**
 * The journal read through a file window (`FileSource`) decides exactly what the same bytes in
 * one buffer decide: the same frames, torn tail and records, or the same refusal at the same
 * offset, whatever the window's size and wherever records and damage cross its edges.
 */
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from '@perp/core';
import { BTC_SETTINGS, TestVenue, wallet } from '@perp/core/testing';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { BufferSource, type ByteSource, FileSource } from './byte-source.js';
import {
  decodeFrame,
  encodeRecord,
  FileJournal,
  type FrameScan,
  scanFrames,
} from './file-journal.js';

const dir = mkdtempSync(join(tmpdir(), 'perp-window-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function commandLog(): Command[] {
  const v = new TestVenue();
  v.list(BTC_SETTINGS);
  const [a, b] = [wallet(1), wallet(2)];
  for (const w of [a, b]) {
    v.open(w);
    v.fund(w, '100000');
  }
  v.oracle({ 'BTC-PERP': '65000' });
  for (let i = 0; i < 6; i++) {
    v.place(a, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: String(64990 + i) });
    v.place(b, 'BTC-PERP', { side: 'Sell', qty: '0.005', price: String(64985 + i) });
  }
  return v.log;
}

const JOURNAL = Buffer.concat(commandLog().map((c, i) => encodeRecord(i + 1, c)));

/** What a scan decided: its frames and decoded records, or its refusal. */
function outcome(data: ByteSource): unknown {
  let scan: FrameScan;
  try {
    scan = scanFrames('j', data);
  } catch (e) {
    return { refused: (e as Error).message };
  }
  return {
    offsets: scan.offsets,
    validLength: scan.validLength,
    tornBytes: scan.tornBytes,
    records: scan.offsets.map((at) => decodeFrame('j', data, at)),
  };
}

type Damage =
  | { kind: 'cut'; at: number }
  | { kind: 'flip'; at: number; mask: number }
  | { kind: 'insert'; at: number; bytes: number[] }
  | { kind: 'zeros'; at: number; count: number };

const damage: fc.Arbitrary<Damage> = fc.oneof(
  fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
  fc.record({
    kind: fc.constant('flip' as const),
    at: fc.nat(),
    mask: fc.integer({ min: 1, max: 255 }),
  }),
  fc.record({
    kind: fc.constant('insert' as const),
    at: fc.nat(),
    // `{` and `}` and small lengths make look-alike records more likely than random bytes would.
    bytes: fc.array(fc.oneof(fc.constantFrom(0, 0x7b, 0x7d, 2, 1), fc.nat({ max: 255 })), {
      minLength: 1,
      maxLength: 40,
    }),
  }),
  fc.record({
    kind: fc.constant('zeros' as const),
    at: fc.nat(),
    count: fc.integer({ min: 1, max: 600 }),
  }),
);

function damaged(base: Buffer, changes: readonly Damage[]): Buffer {
  let data = Buffer.from(base);
  for (const d of changes) {
    const at = data.length === 0 ? 0 : d.at % (data.length + 1);
    if (d.kind === 'cut') data = data.subarray(0, at);
    else if (d.kind === 'flip') {
      if (at < data.length) data[at] = (data[at] as number) ^ d.mask;
    } else if (d.kind === 'insert')
      data = Buffer.concat([data.subarray(0, at), Buffer.from(d.bytes), data.subarray(at)]);
    else data = Buffer.concat([data.subarray(0, at), Buffer.alloc(d.count), data.subarray(at)]);
  }
  return data;
}

describe('a journal read through a file window', () => {
  it('frames, cuts and refuses exactly as the same bytes in one buffer, at any window size', () => {
    const path = join(dir, 'journal.log');
    fc.assert(
      fc.property(
        fc.array(damage, { maxLength: 3 }),
        fc.constantFrom(1, 2, 7, 16, 17, 64, 301, 4096),
        (changes, window) => {
          const data = damaged(JOURNAL, changes);
          writeFileSync(path, data);
          const fd = openSync(path, 'r');
          try {
            expect(outcome(new FileSource(fd, data.length, window))).toEqual(
              outcome(new BufferSource(data)),
            );
          } finally {
            closeSync(fd);
          }
        },
      ),
      { numRuns: 400 },
    );
  });

  it('tells zeros a crash left from bytes after them, whichever window the zeros end in', () => {
    const path = join(dir, 'zeros.log');
    const record = encodeRecord(99, {
      type: 'openAccount',
      account: wallet(9),
      time: 1,
    } as Command);
    for (let zeros = 0; zeros <= 40; zeros++) {
      // Valid records, a run of zeros, then the start of a record (a torn tail or foreign bytes,
      // depending on where the zeros leave the header the check reads).
      for (const tail of [record.subarray(0, 20), Buffer.from([0x2c, 0, 0, 0, 0x41])]) {
        const data = Buffer.concat([JOURNAL, Buffer.alloc(zeros), tail]);
        writeFileSync(path, data);
        const fd = openSync(path, 'r');
        try {
          for (const window of [1, 7, 16, 17, 33]) {
            expect(outcome(new FileSource(fd, data.length, window)), `${zeros} zeros`).toEqual(
              outcome(new BufferSource(data)),
            );
          }
        } finally {
          closeSync(fd);
        }
      }
    }
  });

  it('opens and reads back the same records with a window smaller than one record', async () => {
    const path = join(dir, 'open.log');
    // A torn half record at the end: cut by the open, through the window too.
    const torn = JOURNAL.subarray(0, JOURNAL.length - 40);
    const expected = outcome(new BufferSource(torn)) as { records: unknown[]; validLength: number };
    for (const window of [1, 13, 100, 700, 2_000]) {
      writeFileSync(path, torn);
      const lines: string[] = [];
      const j = FileJournal.open(path, { readWindowBytes: window, log: (l) => lines.push(l) });
      const read: unknown[] = [];
      for await (const r of j.read(0)) read.push(r);
      expect(read).toEqual(expected.records);
      expect(lines).toEqual([expect.stringContaining(`at offset ${expected.validLength}`)]);
      // Records after a seq come from the middle of the file.
      const tail: unknown[] = [];
      for await (const r of j.read(5)) tail.push(r);
      expect(tail).toEqual(expected.records.slice(5));
      await j.close();
    }
  });
});
