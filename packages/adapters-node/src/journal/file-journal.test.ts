/**
 * Recovery rules of the on-disk journal (reliability-anchors 5.4 F2, F3, F4, F6): a torn tail is
 * cut with a log line and recovery gives exactly the prefix state; damage followed by valid
 * records, a sequence gap, a duplicate or a reordered record refuses to open, naming the file
 * and the byte offset; a failed fsync is never retried and stops the host.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Command,
  createEngineState,
  type EngineState,
  reduceAll,
  stateHash,
} from '@perp/core';
import { BTC_SETTINGS, TestVenue, wallet } from '@perp/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { EngineHost, HostStoppedError } from '../engine/host.js';
import {
  crc32,
  encodeRecord,
  FileJournal,
  JournalCorruptError,
  type JournalFs,
  nodeJournalFs,
  scanFrames,
} from './file-journal.js';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'perp-journal-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A realistic command log: listing, accounts, deposits, crossing orders, oracle moves. */
function commandLog(): Command[] {
  const v = new TestVenue();
  v.list(BTC_SETTINGS);
  const a = wallet(1);
  const b = wallet(2);
  for (const w of [a, b]) {
    v.open(w);
    v.fund(w, '100000');
  }
  v.oracle({ 'BTC-PERP': '65000' });
  for (let i = 0; i < 12; i++) {
    v.place(a, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: String(64990 + i) });
    v.place(b, 'BTC-PERP', { side: 'Sell', qty: '0.005', price: String(64985 + i) });
    if (i % 4 === 0) v.oracle({ 'BTC-PERP': String(65000 + i) });
  }
  return v.log;
}

const LOG = commandLog();
const T = LOG[0]?.time ?? 0;

function replayHash(commands: readonly Command[]): string {
  return stateHash(reduceAll(createEngineState({}, T), commands).state);
}

/** The journal file bytes of `commands`, one record each, and each record's start offset. */
function journalBytes(commands: readonly Command[]): { data: Buffer; starts: number[] } {
  const parts = commands.map((c, i) => encodeRecord(i + 1, c));
  const starts: number[] = [];
  let at = 0;
  for (const p of parts) {
    starts.push(at);
    at += p.length;
  }
  return { data: Buffer.concat(parts), starts };
}

async function readAll(j: FileJournal): Promise<Command[]> {
  const out: Command[] = [];
  for await (const r of j.read(0)) out.push(r.command);
  return out;
}

/** `size` deterministic pseudo-random bytes (xorshift32), like a compressed or encrypted file. */
function noise(size: number): Buffer {
  const out = Buffer.alloc(size);
  let x = 0x9e3779b9;
  for (let i = 0; i + 4 <= size; i += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out.writeUInt32LE(x >>> 0, i);
  }
  return out;
}

/** The table-driven CRC-32 the journal format was defined with (reference for the native one). */
function referenceCrc32(data: Uint8Array, crc = 0): number {
  let c = ~crc >>> 0;
  for (const byte of data) {
    c ^= byte;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  }
  return ~c >>> 0;
}

describe('FileJournal recovery', () => {
  it('checksums are CRC-32 (IEEE), continuing across header and payload', () => {
    expect(crc32(Buffer.from('123456789'))).toBe(0xcbf43926);
    const { data } = journalBytes(LOG.slice(0, 5));
    for (let cut = 0; cut < data.length; cut += 37) {
      const head = data.subarray(0, cut);
      const tail = data.subarray(cut);
      expect(crc32(tail, crc32(head))).toBe(referenceCrc32(data));
      expect(crc32(head)).toBe(referenceCrc32(head));
    }
  });

  it('appends, flushes and reads back every record in order', async () => {
    const path = join(tempDir(), 'journal.log');
    const j = FileJournal.open(path);
    expect(await j.append(LOG.slice(0, 10))).toBe(10);
    expect(await j.append(LOG.slice(10))).toBe(LOG.length);
    await j.close();
    const again = FileJournal.open(path);
    expect(again.lastSeq).toBe(LOG.length);
    expect(replayHash(await readAll(again))).toBe(replayHash(LOG));
    await again.close();
  });

  it('appends made while one is in flight are written after it, in call order, one flight at a time', async () => {
    const path = join(tempDir(), 'journal.log');
    const ops: string[] = [];
    let active = 0;
    let maxActive = 0;
    const slow = async (op: string, run: () => Promise<void>) => {
      ops.push(op);
      maxActive = Math.max(maxActive, ++active);
      await new Promise((r) => setTimeout(r, 2));
      await run();
      active--;
    };
    const fs: JournalFs = {
      write: (fd, data) => slow(`write ${data.length}`, () => nodeJournalFs.write(fd, data)),
      sync: (fd) => slow('sync', () => nodeJournalFs.sync(fd)),
    };
    const j = FileJournal.open(path, { fs });
    const groups = [LOG.slice(0, 3), LOG.slice(3, 4), LOG.slice(4, 9), LOG.slice(9)];
    const seqs = await Promise.all(groups.map((g) => j.append(g)));
    expect(seqs).toEqual([3, 4, 9, LOG.length]);
    expect(maxActive).toBe(1);
    const sizes = groups.map((g, i) => {
      const first = groups.slice(0, i).reduce((n, x) => n + x.length, 0) + 1;
      return Buffer.concat(g.map((c, k) => encodeRecord(first + k, c))).length;
    });
    expect(ops).toEqual(sizes.flatMap((n) => [`write ${n}`, 'sync']));
    expect(j.lastSeq).toBe(LOG.length);
    await j.close();
    expect(readFileSync(path)).toEqual(journalBytes(LOG).data);
  });

  it('a torn tail at every byte offset of the last three records recovers exactly the prefix state', async () => {
    const { data, starts } = journalBytes(LOG);
    const n = LOG.length;
    const prefixHash = new Map<number, string>();
    for (let k = n - 3; k <= n; k++) prefixHash.set(k, replayHash(LOG.slice(0, k)));
    const dir = tempDir();
    const from = starts[n - 3] as number;
    let cuts = 0;
    for (let cut = from; cut < data.length; cut++) {
      const path = join(dir, `cut-${cut}.log`);
      writeFileSync(path, data.subarray(0, cut));
      const lines: string[] = [];
      const j = FileJournal.open(path, { log: (l) => lines.push(l) });
      const complete = starts.filter(
        (s, i) => s + (i + 1 < n ? (starts[i + 1] as number) - s : data.length - s) <= cut,
      ).length;
      expect(j.lastSeq).toBe(complete);
      const boundary = complete === n ? data.length : (starts[complete] as number);
      if (cut === boundary) expect(lines).toEqual([]);
      else {
        expect(lines).toHaveLength(1);
        expect(lines[0]).toContain(
          `cut a torn record of ${cut - boundary} bytes at offset ${boundary}`,
        );
      }
      expect(statSync(path).size).toBe(boundary);
      const records = await readAll(j);
      expect(replayHash(records)).toBe(prefixHash.get(complete));
      // Appends continue from the last complete record.
      if (cut % 97 === 0) expect(await j.append([LOG[complete] as Command])).toBe(complete + 1);
      await j.close();
      rmSync(path);
      cuts++;
    }
    expect(cuts).toBeGreaterThan(300);
  });

  it('refuses a flipped byte anywhere in a record that valid records follow, naming file and offset', () => {
    const { data, starts } = journalBytes(LOG);
    const mid = Math.floor(LOG.length / 2);
    const start = starts[mid] as number;
    const end = starts[mid + 1] as number;
    const path = join(tempDir(), 'journal.log');
    for (let at = start; at < end; at++) {
      const bad = Buffer.from(data);
      bad[at] = (bad[at] as number) ^ 0x20;
      writeFileSync(path, bad);
      let error: unknown;
      try {
        FileJournal.open(path, { log: () => {} }).close();
      } catch (e) {
        error = e;
      }
      expect(error, `flip at ${at}`).toBeInstanceOf(JournalCorruptError);
      const e = error as JournalCorruptError;
      expect(e.file).toBe(path);
      expect(e.offset).toBe(start);
      expect(e.message).toContain(`journal ${path} is damaged at byte ${start}`);
      // The file was left as it was: nothing is repaired silently.
      expect(readFileSync(path).equals(bad)).toBe(true);
    }
  });

  it('zeros after the last record are a torn tail; zeros with a valid record after them are refused', async () => {
    const { data, starts } = journalBytes(LOG);
    const n = LOG.length;
    const path = join(tempDir(), 'journal.log');
    const zeros = Buffer.alloc(8192);
    // A crash after the file grew but before the data reached it, after a whole or a half record.
    for (const [end, complete] of [
      [data.length, n],
      [(starts[n - 1] as number) + 20, n - 1],
    ] as const) {
      writeFileSync(path, Buffer.concat([data.subarray(0, end), zeros]));
      const lines: string[] = [];
      const j = FileJournal.open(path, { log: (l) => lines.push(l) });
      expect(j.lastSeq).toBe(complete);
      const boundary = complete === n ? data.length : (starts[n - 1] as number);
      expect(lines[0]).toContain(
        `cut a torn record of ${end + zeros.length - boundary} bytes at offset ${boundary}`,
      );
      expect(statSync(path).size).toBe(boundary);
      await j.close();
    }
    // A zeroed record in the middle: the records after it are still there, so it is refused.
    const mid = Math.floor(n / 2);
    const zeroed = Buffer.from(data);
    zeroed.fill(0, starts[mid], starts[mid + 1]);
    writeFileSync(path, zeroed);
    expect(() => FileJournal.open(path, { log: () => {} })).toThrow(
      `is damaged at byte ${starts[mid]}: record checksum mismatch (expected seq ${mid + 1}) with valid records after it`,
    );
    expect(readFileSync(path).equals(zeroed)).toBe(true);
  });

  it('a last record whose header reached the disk but whose payload did not (zeros) is a torn tail', async () => {
    const { data, starts } = journalBytes(LOG);
    const n = LOG.length;
    const last = starts[n - 1] as number;
    const path = join(tempDir(), 'journal.log');
    // The file system wrote the block holding the header and extended the file with zeros.
    const headerOnly = Buffer.from(data);
    headerOnly.fill(0, last + 16);
    writeFileSync(path, headerOnly);
    const lines: string[] = [];
    const j = FileJournal.open(path, { log: (l) => lines.push(l) });
    expect(j.lastSeq).toBe(n - 1);
    expect(lines[0]).toContain(
      `cut a torn record of ${data.length - last} bytes at offset ${last}`,
    );
    expect(statSync(path).size).toBe(last);
    await j.close();
  });

  it('one stray byte before the last record is damage with a valid record after it, not a torn tail', () => {
    const { data, starts } = journalBytes(LOG);
    const n = LOG.length;
    const last = starts[n - 1] as number;
    const path = join(tempDir(), 'journal.log');
    const stray = Buffer.concat([data.subarray(0, last), Buffer.from([0x55]), data.subarray(last)]);
    writeFileSync(path, stray);
    let error: unknown;
    try {
      FileJournal.open(path, { log: () => {} }).close();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(JournalCorruptError);
    expect((error as Error).message).toMatch(
      new RegExp(
        `is damaged at byte ${last}: .* \\(expected seq ${n}\\) with valid records after it$`,
      ),
    );
    expect(readFileSync(path).equals(stray)).toBe(true);
  });

  it('never cuts bytes an interrupted append cannot leave: a file that is not a journal, junk after the last record', () => {
    const path = join(tempDir(), 'journal.log');
    const { data } = journalBytes(LOG);
    for (const [bytes, offset, detail] of [
      // A text file copied in its place, with no snapshot to say the journal had records.
      [
        Buffer.from('journal of another venue?\n'.repeat(100)),
        0,
        'not one record is valid: a length field of',
      ],
      // Bytes whose length field fits, but whose payload is no JSON command.
      [
        Buffer.concat([
          Buffer.from([9, 0, 0, 0]),
          Buffer.alloc(12, 1),
          Buffer.from('Z'.repeat(40)),
        ]),
        0,
        'not one record is valid: a payload starting with byte 0x5a',
      ],
      // Something appended after the last record.
      [
        Buffer.concat([data, Buffer.from('PK\u0003\u0004 a zip archive')]),
        data.length,
        'a length field of',
      ],
    ] as const) {
      writeFileSync(path, bytes);
      const lines: string[] = [];
      let error: unknown;
      try {
        FileJournal.open(path, { log: (l) => lines.push(l) }).close();
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(JournalCorruptError);
      expect((error as Error).message).toContain(`is damaged at byte ${offset}: ${detail}`);
      expect((error as Error).message).toContain('refusing to cut it');
      expect(lines).toEqual([]);
      expect(readFileSync(path).equals(bytes)).toBe(true);
    }
  });

  it('a few stray bytes before the last record are damage with a valid record after it, however many', () => {
    const { data, starts } = journalBytes(LOG);
    const n = LOG.length;
    const last = starts[n - 1] as number;
    const path = join(tempDir(), 'journal.log');
    // Zeros (a block the file system zeroed) or other bytes, fewer than a header: the record
    // after them must still be found, or the damage is taken for a torn tail and that valid,
    // acknowledged record is cut (or refused with a reason that hides it).
    for (const fill of [0x00, 0x55]) {
      for (let k = 1; k < 16; k++) {
        const stray = Buffer.concat([
          data.subarray(0, last),
          Buffer.alloc(k, fill),
          data.subarray(last),
        ]);
        writeFileSync(path, stray);
        let error: unknown;
        try {
          FileJournal.open(path, { log: () => {} }).close();
        } catch (e) {
          error = e;
        }
        expect(error, `${k} bytes 0x${fill.toString(16)}`).toBeInstanceOf(JournalCorruptError);
        expect((error as Error).message, `${k} bytes 0x${fill.toString(16)}`).toMatch(
          new RegExp(`is damaged at byte ${last}: .* with valid records after it$`),
        );
        expect(readFileSync(path).equals(stray)).toBe(true);
      }
    }
  });

  it('with snapshots expecting records, damage after valid records is reported as what it is', () => {
    const { data, starts } = journalBytes(LOG);
    const mid = Math.floor(LOG.length / 2);
    const path = join(tempDir(), 'journal.log');
    const expectRecords = 'snapshot s covers records up to seq 9';
    // "Not one record is valid" would send the operator to restore a whole other journal.
    const flipped = Buffer.from(data);
    const at = (starts[mid] as number) + 20;
    flipped[at] = (flipped[at] as number) ^ 0x01;
    const junk = Buffer.concat([data, Buffer.from('PK\u0003\u0004 a zip archive')]);
    for (const [bytes, offset, detail] of [
      [flipped, starts[mid] as number, 'record checksum mismatch'],
      [junk, data.length, 'a length field of'],
    ] as const) {
      writeFileSync(path, bytes);
      let error: unknown;
      try {
        FileJournal.open(path, { log: () => {}, expectRecords }).close();
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(JournalCorruptError);
      expect((error as JournalCorruptError).noValidRecord).toBe(false);
      expect((error as Error).message).toContain(`is damaged at byte ${offset}: ${detail}`);
      expect((error as Error).message).not.toContain('not one record is valid');
      expect(readFileSync(path).equals(bytes)).toBe(true);
    }
  });

  it('forget drops the records it is given from memory, and the file copy once all are', async () => {
    const path = join(tempDir(), 'journal.log');
    writeFileSync(path, journalBytes(LOG).data);
    const n = LOG.length;
    const j = FileJournal.open(path, { log: () => {} });
    j.forget(3);
    expect([...j.readSync(0)].map((r) => r.seq)).toEqual(
      Array.from({ length: n - 3 }, (_, i) => i + 4),
    );
    expect([...j.readSync(5)].map((r) => r.seq)[0]).toBe(6);
    // After recovery the venue forgets everything: nothing of the file stays in memory.
    j.forget(n);
    expect([...j.readSync(0)]).toEqual([]);
    // Appends go on from the last record.
    expect(await j.append([LOG[0] as Command])).toBe(n + 1);
    await j.close();
  });

  it('refuses a 16 MB file that is not a journal at once: the look-ahead past damage is not cubic', () => {
    const path = join(tempDir(), 'journal.log');
    const foreign = noise(16 * 1024 * 1024);
    writeFileSync(path, foreign);
    const started = performance.now();
    expect(() =>
      FileJournal.open(path, {
        log: () => {},
        expectRecords: 'snapshot s covers records up to seq 9',
      }),
    ).toThrow(`journal ${path} is damaged at byte 0: not one record is valid`);
    // Trying every fitting length at every offset took about 60 s here (4 MB: 2 s); the bounded
    // look-ahead takes well under a second. The bound is generous: only the cubic scan misses it.
    expect(performance.now() - started).toBeLessThan(10_000);
    // Still found however far the damage runs: foreign bytes before a journal are refused.
    const { data } = journalBytes(LOG);
    writeFileSync(path, Buffer.concat([foreign.subarray(0, 1024 * 1024), data]));
    expect(() => FileJournal.open(path, { log: () => {} })).toThrow(
      `journal ${path} is damaged at byte 0:`,
    );
    expect(() => FileJournal.open(path, { log: () => {} })).toThrow('with valid records after it');
  }, 120_000);

  it('refuses a sequence gap, a duplicated record and reordered records', () => {
    const { data, starts } = journalBytes(LOG);
    const path = join(tempDir(), 'journal.log');
    const rec = (i: number) => data.subarray(starts[i] as number, starts[i + 1] as number);
    const cases: [string, Buffer, number, RegExp][] = [
      [
        'gap',
        Buffer.concat([data.subarray(0, starts[5]), data.subarray(starts[6])]),
        starts[5] as number,
        /expected seq 6, found 7/,
      ],
      [
        'duplicate',
        Buffer.concat([data.subarray(0, starts[6]), rec(5), data.subarray(starts[6])]),
        starts[6] as number,
        /expected seq 7, found 6/,
      ],
      [
        'reordered',
        Buffer.concat([data.subarray(0, starts[5]), rec(6), rec(5), data.subarray(starts[7])]),
        starts[5] as number,
        /expected seq 6, found 7/,
      ],
    ];
    for (const [name, bytes, offset, detail] of cases) {
      writeFileSync(path, bytes);
      expect(() => FileJournal.open(path), name).toThrow(JournalCorruptError);
      try {
        FileJournal.open(path);
      } catch (e) {
        expect((e as JournalCorruptError).offset, name).toBe(offset);
        expect((e as Error).message, name).toMatch(detail);
        expect((e as Error).message, name).toContain(path);
      }
    }
  });

  it('valid records ending before `mustReach` refuse to open before anything is cut or created', async () => {
    const { data, starts } = journalBytes(LOG);
    const n = LOG.length;
    const dir = tempDir();
    const path = join(dir, 'journal.log');
    // The last record damaged: alone it would be cut as a torn tail.
    const bad = Buffer.from(data);
    bad[bad.length - 1] = (bad[bad.length - 1] as number) ^ 0x01;
    writeFileSync(path, bad);
    const refusals: [number, number][] = [];
    const mustReach = (seq: number) => ({
      seq,
      refuse: (lastSeq: number, validLength: number) => {
        refusals.push([lastSeq, validLength]);
        return new Error(`ends at ${lastSeq}`);
      },
    });
    const lines: string[] = [];
    expect(() =>
      FileJournal.open(path, { log: (l) => lines.push(l), mustReach: mustReach(n) }),
    ).toThrow(`ends at ${n - 1}`);
    expect(refusals).toEqual([[n - 1, starts[n - 1]]]);
    expect(lines).toEqual([]);
    expect(readFileSync(path).equals(bad)).toBe(true);
    // Reaching the seq, the torn tail after it is cut as before.
    const j = FileJournal.open(path, { log: (l) => lines.push(l), mustReach: mustReach(n - 1) });
    expect(j.lastSeq).toBe(n - 1);
    expect(lines[0]).toContain(
      `cut a torn record of ${data.length - (starts[n - 1] as number)} bytes`,
    );
    await j.close();
    // A missing file is not created.
    const missing = join(dir, 'missing.log');
    expect(() => FileJournal.open(missing, { mustReach: mustReach(1) })).toThrow('ends at 0');
    expect(existsSync(missing)).toBe(false);
  });

  it('scans framing without decoding: an undecodable payload is reported when read, with its offset', async () => {
    const payload = Buffer.from('{not json', 'utf8');
    const good = encodeRecord(1, LOG[0] as Command);
    const header = Buffer.alloc(16);
    header.writeUInt32LE(payload.length, 0);
    header.writeBigUInt64LE(2n, 4);
    const { crc32 } = await import('./file-journal.js');
    header.writeUInt32LE(crc32(payload, crc32(header.subarray(4, 12))), 12);
    const data = Buffer.concat([good, header, payload]);
    expect(scanFrames('x', data).offsets).toEqual([0, good.length]);
    const path = join(tempDir(), 'journal.log');
    writeFileSync(path, data);
    const j = FileJournal.open(path);
    await expect(readAll(j)).rejects.toThrow(
      `damaged at byte ${good.length}: undecodable record 2`,
    );
    // Records covered by a snapshot are not decoded at all.
    const after: Command[] = [];
    for await (const r of j.read(2)) after.push(r.command);
    expect(after).toEqual([]);
    await j.close();
  });
});

describe('fsync failure', () => {
  function failingFs(okSyncs: number): JournalFs & { writes: number; syncs: number } {
    const fs = {
      writes: 0,
      syncs: 0,
      // Real writes (the journal checks the file's size against them); only the flush fails.
      async write(fd: number, data: Buffer) {
        fs.writes++;
        await nodeJournalFs.write(fd, data);
      },
      async sync(_fd: number) {
        fs.syncs++;
        if (fs.syncs > okSyncs)
          throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
      },
    };
    return fs;
  }

  it('is never retried: the journal refuses every later append without touching the file', async () => {
    const fs = failingFs(1);
    const j = FileJournal.open(join(tempDir(), 'journal.log'), { fs });
    expect(await j.append(LOG.slice(0, 2))).toBe(2);
    await expect(j.append(LOG.slice(2, 3))).rejects.toThrow('EIO');
    expect(j.lastSeq).toBe(2);
    await expect(j.append(LOG.slice(3, 4))).rejects.toThrow('EIO');
    expect(fs.writes).toBe(2);
    expect(fs.syncs).toBe(2);
    await j.close();
  });

  it('an append queued behind a failing one is refused without being written', async () => {
    const fs = failingFs(0);
    const j = FileJournal.open(join(tempDir(), 'journal.log'), { fs });
    const failing = j.append(LOG.slice(0, 2));
    const queued = j.append(LOG.slice(2, 3));
    await expect(failing).rejects.toThrow('EIO');
    await expect(queued).rejects.toThrow('EIO');
    expect(fs.writes).toBe(1);
    expect(fs.syncs).toBe(1);
    expect(j.lastSeq).toBe(0);
    await j.close();
  });

  it('a refused group whose write reached the file is applied by the restart: its request is told the outcome is unknown', async () => {
    const path = join(tempDir(), 'journal.log');
    let syncs = 0;
    // Real writes; the second fdatasync fails after its group's bytes went to the file.
    const fs: JournalFs = {
      write: (fd, data) => nodeJournalFs.write(fd, data),
      sync: async (fd) => {
        if (++syncs > 1)
          throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
        return nodeJournalFs.sync(fd);
      },
    };
    const journal = FileJournal.open(path, { fs, log: () => {} });
    let now = T;
    const host = new EngineHost({
      state: createEngineState({}, T),
      journal,
      clock: { now: () => ++now },
      onFatal: () => {},
    });
    await host.submit({ type: 'openAccount', account: wallet(1) });
    const refused = await host.submit({ type: 'openAccount', account: wallet(2) }).catch((e) => e);
    expect(refused).toBeInstanceOf(HostStoppedError);
    expect((refused as HostStoppedError).code).toBe(5002);
    expect((refused as HostStoppedError).mayBeApplied).toBe(true);
    expect((refused as Error).message).toContain('its outcome is unknown until the venue restarts');
    expect((refused as Error).message).toContain(
      'with the same signed request, not a re-signed one',
    );
    expect((refused as Error).message).not.toContain('nothing of this request was applied');
    await journal.close();
    // The venue exits 70 and is restarted on the same file: the refused request is applied, so a
    // client that had signed it again would have opened it twice.
    const restarted = FileJournal.open(path, { log: () => {} });
    const recovered = await readAll(restarted);
    expect(recovered.map((c) => (c.type === 'openAccount' ? c.account : c.type))).toEqual([
      wallet(1),
      wallet(2),
    ]);
    await restarted.close();
  });

  it('stops the host: the batch is not acknowledged, listeners see nothing, onFatal runs once', async () => {
    const fs = failingFs(1);
    const journal = FileJournal.open(join(tempDir(), 'journal.log'), { fs });
    const fatal: unknown[] = [];
    let now = T;
    const host = new EngineHost({
      state: createEngineState({}, T),
      journal,
      clock: { now: () => ++now },
      onFatal: (e) => fatal.push(e),
    });
    const seen: EngineState[] = [];
    host.subscribe((b) => seen.push(b.state));
    const first = await host.submit({ type: 'openAccount', account: wallet(1) });
    expect(first.seq).toBe(1);
    const before = host.state;
    const refused = await host.submit({ type: 'openAccount', account: wallet(2) }).catch((e) => e);
    expect(refused).toBeInstanceOf(HostStoppedError);
    expect((refused as HostStoppedError).code).toBe(5002);
    expect(String((refused as HostStoppedError).cause)).toContain('EIO');
    // onFatal runs a turn after the refusal went out.
    await new Promise((resolve) => setImmediate(resolve));
    expect(fatal).toHaveLength(1);
    expect(host.failed).toBe(true);
    expect(host.state).toBe(before);
    expect(seen).toHaveLength(1);
    await expect(host.submit({ type: 'openAccount', account: wallet(3) })).rejects.toBeInstanceOf(
      HostStoppedError,
    );
    await journal.close();
  });
});
