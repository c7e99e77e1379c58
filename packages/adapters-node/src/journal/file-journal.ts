/**
 * The on-disk command journal: one append-only file of framed records, each
 * `length (u32) | seq (u64) | crc32 (u32) | payload` with the CRC over seq and payload, written
 * and flushed (fdatasync) before the host acknowledges anything in it.
 *
 * Writes and flushes run on libuv's thread pool (`fs.write`, `fs.fdatasync` on the same fd), so
 * the event loop goes on while the disk works. One append is one write of all its records
 * followed by one fdatasync; appends are written strictly one after the other, in the order they
 * were called (their seqs are assigned at the call), so two appends' bytes never interleave and
 * at most one write+fdatasync is in flight. Grouping commands into appends is the caller's job
 * (the host's group commit).
 *
 * Opening validates the whole file, reading it through a window (it is never held in memory
 * whole: see `byte-source.ts`): a torn record at the tail (a crash mid-write) is cut off
 * with a log line; a damaged record followed by valid ones, a sequence gap, or valid records
 * ending before a seq the caller knows was acknowledged (`mustReach`) refuse to open, with the
 * file and byte offset in the error, before anything is cut. A failed flush is fatal: the
 * journal refuses every later append (the caller must stop; fsync errors are never retried,
 * see reliability-anchors 1.7).
 *
 * @module
 */
import {
  closeSync,
  existsSync,
  fdatasync,
  fdatasyncSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  openSync,
  readdirSync,
  statSync,
  write,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { crc32 as zlibCrc32 } from 'node:zlib';
import {
  type Command,
  decodeJson,
  encodeJson,
  type JournalRecord,
  type JournalStore,
} from '@perp/core';
import { BufferSource, type ByteSource, copyRange, FileSource } from './byte-source.js';

const HEADER = 16;
const MAX_RECORD = 64 * 1024 * 1024;
/** Newest records whose position a journal remembers (for the snapshots of the states after them). */
const RECENT_POSITIONS = 1 << 16;

/**
 * CRC-32 (IEEE, as zlib and gzip compute it) of `data`, continuing from `crc`. Native: the scan
 * at start-up checks every record, and a JavaScript byte loop ran at ~120 MB/s.
 */
export function crc32(data: Uint8Array, crc = 0): number {
  return zlibCrc32(data, crc);
}

/** Raised when a journal file is damaged in a way that must not be repaired silently. */
export class JournalCorruptError extends Error {
  override readonly name = 'JournalCorruptError';
  readonly file: string;
  readonly offset: number;
  /** Not one record of the file is valid (it may not be a journal at all). */
  readonly noValidRecord: boolean;

  constructor(file: string, offset: number, detail: string, noValidRecord = false) {
    super(`journal ${file} is damaged at byte ${offset}: ${detail}`);
    this.file = file;
    this.offset = offset;
    this.noValidRecord = noValidRecord;
  }
}

/** Encodes one record. */
export function encodeRecord(seq: number, command: Command): Buffer {
  const payload = Buffer.from(encodeJson(command), 'utf8');
  const record = Buffer.allocUnsafe(HEADER + payload.length);
  record.writeUInt32LE(payload.length, 0);
  record.writeBigUInt64LE(BigInt(seq), 4);
  record.writeUInt32LE(crc32(payload, crc32(record.subarray(4, 12))), 12);
  payload.copy(record, HEADER);
  return record;
}

/** What a scan of a journal file found. */
export interface ScanResult {
  readonly records: JournalRecord[];
  /** Bytes of complete, valid records. */
  readonly validLength: number;
  /** Bytes after them (a torn tail), 0 when the file ends cleanly. */
  readonly tornBytes: number;
}

/**
 * Where a record is in the journal file and its checksum: a snapshot records it for its seq, so
 * a start can check that one record instead of scanning every record the snapshot covers.
 */
export interface JournalPosition {
  /** Byte offset of the record's header. */
  readonly offset: number;
  /** The record's CRC-32, as in its header. */
  readonly crc: number;
}

/**
 * The end of record `seq` when the bytes at `at` are that record, intact (length, seq, header
 * CRC equal to the one recorded, payload matching it); `undefined` otherwise.
 */
export function recordEndAt(
  data: Buffer | ByteSource,
  seq: number,
  at: JournalPosition,
): number | undefined {
  const src = sourceOf(data);
  const { offset } = at;
  if (!Number.isSafeInteger(offset) || offset < 0 || offset + HEADER > src.size) return undefined;
  const h = headerAt(src, offset);
  if (h.length > MAX_RECORD || offset + HEADER + h.length > src.size) return undefined;
  if (h.seq !== seq || h.crc !== at.crc) return undefined;
  return checksumMatches(src, offset, h.length, h.crc) ? offset + HEADER + h.length : undefined;
}

/**
 * The byte offset of record `seq` in a journal whose first record is `firstSeq`, found by
 * following the records' lengths and checking each one's seq (not its checksum), without
 * holding the offsets of the records before it; `undefined` when the chain breaks first.
 */
export function recordOffset(
  data: Buffer | ByteSource,
  firstSeq: number,
  seq: number,
): number | undefined {
  const src = sourceOf(data);
  let offset = 0;
  for (let at = firstSeq; ; at++) {
    if (offset + HEADER > src.size) return undefined;
    const h = headerAt(src, offset);
    if (h.seq !== at || h.length > MAX_RECORD) return undefined;
    if (at === seq) return offset;
    offset += HEADER + h.length;
  }
}

/**
 * The records {@link FrameScan.skipped} left unscanned, after `afterSeq`, each checked (framing,
 * checksum, seq) as it is reached and then decoded: one record at a time, so a reader that
 * yields to the event loop between records never holds it for the whole prefix. Damage throws
 * {@link JournalCorruptError} naming the record's offset.
 */
export function* walkSkipped(
  file: string,
  data: Buffer | ByteSource,
  skipped: { readonly first: number; readonly seq: number; readonly end: number },
  afterSeq = 0,
): Generator<JournalRecord> {
  const src = sourceOf(data);
  const covered = `(records up to seq ${skipped.seq}, which a snapshot covers, are checked only when read)`;
  let offset = 0;
  for (let seq = skipped.first; seq <= skipped.seq; seq++) {
    if (offset + HEADER > skipped.end)
      throw new JournalCorruptError(file, offset, `record ${seq} is missing ${covered}`);
    const { length, seq: found, crc } = headerAt(src, offset);
    const end = offset + HEADER + length;
    if (length > MAX_RECORD || end > skipped.end)
      throw new JournalCorruptError(
        file,
        offset,
        `record length ${length} runs past record ${skipped.seq} (expected seq ${seq}) ${covered}`,
      );
    if (!checksumMatches(src, offset, length, crc))
      throw new JournalCorruptError(
        file,
        offset,
        `record checksum mismatch (expected seq ${seq}) ${covered}`,
      );
    if (found !== seq)
      throw new JournalCorruptError(
        file,
        offset,
        `sequence gap: expected seq ${seq}, found ${found} ${covered}`,
      );
    if (seq > afterSeq) yield decodeFrame(file, src, offset);
    offset = end;
  }
  if (offset !== skipped.end)
    throw new JournalCorruptError(
      file,
      offset,
      `record ${skipped.seq} does not end where the snapshot's position says ${covered}`,
    );
}

/**
 * The seq of the record at the start of `data` when one is there, intact (a plausible length
 * inside the file and a matching checksum); `undefined` otherwise (an empty, torn or damaged
 * start, which the scan then judges as for a journal that starts at seq 1). A journal starts
 * past seq 1 only once its older records were archived (`archive-journal.ts`).
 */
export function firstRecordSeq(data: Buffer | ByteSource): number | undefined {
  const src = sourceOf(data);
  if (src.size < HEADER) return undefined;
  const { length, seq, crc } = headerAt(src, 0);
  if (length > MAX_RECORD || HEADER + length > src.size || seq < 1) return undefined;
  return checksumMatches(src, 0, length, crc) ? seq : undefined;
}

/** The file `--archive-journal` moves records `first..last` of a journal to (`archive-journal.ts`). */
export function archiveFileName(first: number, last: number): string {
  return `journal-${String(first).padStart(20, '0')}-${String(last).padStart(20, '0')}.log`;
}

const ARCHIVE_FILE = /^journal-(\d{20})-(\d{20})\.log$/;

/** The archive files of `dir`, in seq order. */
export function listArchiveFiles(
  dir: string,
): { readonly path: string; readonly first: number; readonly last: number }[] {
  const out: { path: string; first: number; last: number }[] = [];
  for (const name of readdirSync(dir)) {
    const m = ARCHIVE_FILE.exec(name);
    if (m !== null) out.push({ path: join(dir, name), first: Number(m[1]), last: Number(m[2]) });
  }
  return out.sort((a, b) => a.first - b.first);
}

/**
 * The copies a venue made of its journal when `journal` was deleted or replaced while it ran
 * (`<journal>.detached-<time>`, see `checkStillNamed`), oldest first. Such a copy holds every
 * record the venue acknowledged, so it is what belongs back in the journal's place.
 */
export function listDetachedCopies(journal: string): string[] {
  const prefix = `${basename(journal)}.detached-`;
  let names: string[];
  try {
    names = readdirSync(dirname(journal));
  } catch {
    return [];
  }
  return names
    .filter((n) => n.startsWith(prefix))
    .sort()
    .map((n) => join(dirname(journal), n));
}

/**
 * A read of records that are no longer in the journal file: they were archived (moved to
 * `journal-<first>-<last>.log` files by `--archive-journal`), and only what a snapshot covers
 * may be archived. Thrown when something needs them: a full replay, a start from an older
 * snapshot, a history backfill without its read-model checkpoint.
 */
export class RecordsArchivedError extends Error {
  readonly file: string;
  /** The file's first seq: records before it were archived. */
  readonly firstSeq: number;

  /** `need`: what needed the archived records. */
  constructor(file: string, firstSeq: number, need: string) {
    super(
      `journal ${file} begins at seq ${firstSeq}: records 1..${firstSeq - 1} were archived (--archive-journal), but ${need}. Put the archived journal files back in front of it (cat journal-*.log journal.log, in seq order; docs/durability.md, "Archiving the journal")`,
    );
    this.name = 'RecordsArchivedError';
    this.file = file;
    this.firstSeq = firstSeq;
  }
}

/** Framing of a journal file: where each valid record starts, without decoding any. */
export interface FrameScan {
  /** Byte offset of record `firstSeq + i`. */
  readonly offsets: number[];
  readonly firstSeq: number;
  /**
   * Records `first..seq` in bytes `[0, end)`, not scanned: a snapshot covers them, and its
   * position of record `seq` was found intact (see {@link JournalPosition}). `firstSeq` is then
   * `seq + 1`. `first` is the file's first seq: 1, or later once older records were archived.
   */
  readonly skipped?: {
    readonly first: number;
    readonly seq: number;
    readonly end: number;
    readonly position: JournalPosition;
  };
  /** Bytes of complete, valid records. */
  readonly validLength: number;
  /** Bytes after them (a torn tail), 0 when the file ends cleanly. */
  readonly tornBytes: number;
}

/** `data` as a {@link ByteSource}. */
function sourceOf(data: Buffer | ByteSource): ByteSource {
  return Buffer.isBuffer(data) ? new BufferSource(data) : data;
}

/** The header of the record at `offset` (the source must hold its 16 bytes). */
function headerAt(src: ByteSource, offset: number): { length: number; seq: number; crc: number } {
  const b = src.cover(offset, HEADER);
  const at = offset - src.start;
  return {
    length: b.readUInt32LE(at),
    seq: Number(b.readBigUInt64LE(at + 4)),
    crc: b.readUInt32LE(at + 12),
  };
}

/** Whether the record at `offset`, of payload `length`, has CRC `crc` over its seq and payload. */
function checksumMatches(src: ByteSource, offset: number, length: number, crc: number): boolean {
  const b = src.cover(offset, HEADER + length);
  const at = offset - src.start;
  return (
    crc32(b.subarray(at + HEADER, at + HEADER + length), crc32(b.subarray(at + 4, at + 12))) === crc
  );
}

/**
 * Validates the framing of `data` (a buffer, or a file through {@link FileSource}): lengths,
 * checksums and the sequence. Throws {@link JournalCorruptError} for damage that is not a torn
 * tail. `firstSeq` is the seq the first record must have. Payloads are not decoded (see
 * {@link decodeFrame}).
 */
export function scanFrames(
  file: string,
  data: Buffer | ByteSource,
  firstSeq = 1,
  from = 0,
): FrameScan {
  const src = sourceOf(data);
  const size = src.size;
  const offsets: number[] = [];
  let offset = from;
  let expected = firstSeq;
  // The file's first record, damaged: its seq is a guess (the file may begin past seq 1 once
  // older records were archived), so a valid record of any seq after it shows the damage is
  // not a torn write; bounded by the guess, a whole archived journal would be cut as one.
  const atFileStart = () => offsets.length === 0 && offset === 0;
  const torn = () => {
    // Only what an interrupted append leaves is cut: anything else is a file (or bytes) this
    // journal never wrote, and cutting it would destroy it, or start an empty venue over it.
    const foreign = foreignBytesAt(src, offset);
    if (foreign !== undefined) {
      throw new JournalCorruptError(
        file,
        offset,
        `${offsets.length === 0 && from === 0 ? 'not one record is valid: ' : ''}${foreign}, not a record this journal writes and not a write it interrupted (is it a journal?); refusing to cut it`,
        offsets.length === 0 && from === 0,
      );
    }
    return { offsets, firstSeq, validLength: offset, tornBytes: size - offset };
  };
  while (offset < size) {
    const remaining = size - offset;
    if (remaining < HEADER) return torn();
    const { length, seq, crc } = headerAt(src, offset);
    const end = offset + HEADER + length;
    const plausible = length <= MAX_RECORD;
    if (plausible && end > size) {
      // The last record was cut short by a crash, unless a damaged length field points past the
      // end while valid records follow: that is corruption, and cutting would lose them.
      if (hasValidRecordAfter(src, offset + 1, expected, atFileStart())) {
        throw new JournalCorruptError(
          file,
          offset,
          `record length ${length} runs past the end of the file (expected seq ${expected}) with valid records after it`,
        );
      }
      return torn();
    }
    if (!plausible || !checksumMatches(src, offset, length, crc)) {
      // A bad record is a torn tail only when nothing valid follows it.
      if (hasValidRecordAfter(src, offset + 1, expected, atFileStart())) {
        throw new JournalCorruptError(
          file,
          offset,
          `record checksum mismatch (expected seq ${expected}) with valid records after it`,
        );
      }
      return torn();
    }
    if (seq !== expected) {
      throw new JournalCorruptError(
        file,
        offset,
        `sequence gap: expected seq ${expected}, found ${seq}`,
      );
    }
    offsets.push(offset);
    expected++;
    offset = end;
  }
  return { offsets, firstSeq, validLength: offset, tornBytes: 0 };
}

/** Decodes the record framed at `offset` (already validated by {@link scanFrames}). */
export function decodeFrame(
  file: string,
  data: Buffer | ByteSource,
  offset: number,
): JournalRecord {
  const src = sourceOf(data);
  const { length, seq } = headerAt(src, offset);
  try {
    const b = src.cover(offset, HEADER + length);
    const at = offset - src.start;
    const command = decodeJson<Command>(b.toString('utf8', at + HEADER, at + HEADER + length));
    return { seq, command };
  } catch (e) {
    throw new JournalCorruptError(
      file,
      offset,
      `undecodable record ${seq}: ${(e as Error).message}`,
    );
  }
}

/**
 * Reads and validates every record of `data`. Throws {@link JournalCorruptError} for damage that
 * is not a torn tail. `firstSeq` is the seq the first record must have.
 */
export function scanJournal(file: string, data: Buffer, firstSeq = 1): ScanResult {
  const frames = scanFrames(file, data, firstSeq);
  return {
    records: frames.offsets.map((at) => decodeFrame(file, data, at)),
    validLength: frames.validLength,
    tornBytes: frames.tornBytes,
  };
}

/** First and last byte of every payload {@link encodeRecord} writes: a command is a JSON object. */
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/**
 * Why the bytes from `offset` to the end cannot be an append this journal started and a crash
 * interrupted, or `undefined` when they can. An interrupted append leaves a record's beginning
 * (a header with a length this journal writes, then the start of a JSON payload), or zeros where
 * the file system had extended the file but not yet written the data. Any other byte there
 * means the file holds something else.
 */
function foreignBytesAt(src: ByteSource, offset: number): string | undefined {
  let zeros = true;
  for (let pos = offset; zeros && pos < src.size; ) {
    // As much as the source's window holds from `pos` (at least one byte).
    const b = src.cover(pos, 1);
    const end = Math.min(b.length, src.size - src.start);
    for (let i = pos - src.start; i < end; i++) {
      if (b[i] !== 0) {
        zeros = false;
        break;
      }
    }
    pos = src.start + end;
  }
  if (zeros || src.size - offset < HEADER) return undefined;
  const b = src.cover(offset, HEADER + 1);
  const at = offset - src.start;
  const length = b.readUInt32LE(at);
  if (length > MAX_RECORD) return `a length field of ${length} bytes`;
  const first = b[at + HEADER];
  if (first !== undefined && first !== OPEN_BRACE && first !== 0)
    return `a payload starting with byte 0x${first.toString(16).padStart(2, '0')}`;
  return undefined;
}

/**
 * Whether a record this journal could have written starts anywhere at or after `from` (a valid
 * record after damage makes the damage more than a torn tail). `expected` is the seq the damaged
 * record should have had.
 *
 * Every offset is a candidate, since a damaged length field hides where the next record starts,
 * but a candidate pays for a CRC only if its header and payload could be one of ours: a payload
 * that begins with `{` and ends with `}` (every payload is a JSON object) and a seq from 1 to
 * `expected` plus the most records the file's bytes could frame. Checking every fitting length
 * instead made random bytes (a file that is not a journal) cost a CRC over up to 64 MB at every
 * offset whose length field happened to fit: cubic in the file size, a minute for 16 MB. Random
 * bytes now pass the byte tests at about one offset in 65,536 and the seq test almost never.
 */
function hasValidRecordAfter(
  src: ByteSource,
  from: number,
  expected: number,
  anySeq = false,
): boolean {
  const size = src.size;
  const maxSeq = anySeq ? Number.MAX_SAFE_INTEGER : expected + Math.floor(size / HEADER);
  // Headers are read in order through `src`; a candidate's payload through its own window, so
  // checking one far ahead does not move the walk's window back and forth.
  const probe = src.fork();
  let b = src.cover(from, HEADER + 1);
  for (let pos = from; pos + HEADER < size; pos++) {
    if (pos + HEADER >= src.start + b.length) b = src.cover(pos, HEADER + 1);
    const at = pos - src.start;
    if (b[at + HEADER] !== OPEN_BRACE) continue;
    const length = b.readUInt32LE(at);
    const end = pos + HEADER + length;
    if (length < 2 || length > MAX_RECORD || end > size) continue;
    const p = probe.cover(pos, HEADER + length);
    const q = pos - probe.start;
    if (p[q + HEADER + length - 1] !== CLOSE_BRACE) continue;
    const seq = p.readUInt32LE(q + 8) * 2 ** 32 + p.readUInt32LE(q + 4);
    if (seq < 1 || seq > maxSeq) continue;
    if (checksumMatches(probe, pos, length, p.readUInt32LE(q + 12))) return true;
  }
  return false;
}

/** fsync of a directory (its entries: a created or renamed file). */
export function syncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * File system calls the journal makes, injectable so tests can fail or hold them. Both run off
 * the event loop; a rejection is fatal for the journal (never retried).
 */
export interface JournalFs {
  /** Writes all of `data` at the end of the file (the fd is opened for appending). */
  write(fd: number, data: Buffer): Promise<void>;
  /** `fdatasync` of the file. */
  sync(fd: number): Promise<void>;
}

function writeSome(fd: number, data: Buffer, offset: number): Promise<number> {
  return new Promise((resolve, reject) => {
    write(fd, data, offset, data.length - offset, null, (error, written) =>
      error ? reject(error) : resolve(written),
    );
  });
}

/** The real calls: `fs.write` (looping over short writes) and `fs.fdatasync` on the thread pool. */
export const nodeJournalFs: JournalFs = {
  async write(fd, data) {
    let done = 0;
    while (done < data.length) {
      const n = await writeSome(fd, data, done);
      // A short write continues where it stopped; a write that makes no progress is an error.
      if (n <= 0)
        throw new Error(`journal write made no progress at ${done} of ${data.length} bytes`);
      done += n;
    }
  },
  sync(fd) {
    return new Promise((resolve, reject) => {
      fdatasync(fd, (error) => (error ? reject(error) : resolve()));
    });
  },
};

/** Options of a {@link FileJournal}. */
export interface FileJournalOptions {
  /** Seq of the first record in this file (after a snapshot, the snapshot's seq + 1). */
  readonly firstSeq?: number;
  /** Where repairs are reported. */
  readonly log?: (line: string) => void;
  readonly fs?: JournalFs;
  /** Bytes read from the file at a time at open and in recovery reads (tests make it small). */
  readonly readWindowBytes?: number;
  /**
   * Why the file must hold at least one record (e.g. snapshots of its records exist). A file in
   * which not one record is valid is then refused instead of being cut to nothing as a torn tail:
   * it is not this venue's journal, and cutting it would start the venue empty. A missing file
   * (not created then) and an empty one are refused the same way.
   */
  readonly expectRecords?: string;
  /**
   * The seq the file's valid records must reach, and the error to throw when they end before it
   * (a valid snapshot covers records up to that seq, so they were acknowledged). Checked before
   * anything is created or cut: a damaged record that such a snapshot covers is not a torn
   * write that was never acknowledged, and a refused start must leave the journal as it was
   * for the operator to restore or analyse.
   */
  readonly mustReach?: {
    readonly seq: number;
    readonly refuse: (lastSeq: number, validLength: number) => Error;
  };
  /**
   * A record known to be in the file (the newest valid snapshot's seq and the position its
   * header recorded). When that record is there, intact, the scan starts after it: the records
   * before it are covered by the snapshot and are only scanned if read ({@link FileJournal.readSync}),
   * so opening costs the tail, not the whole history. Otherwise the whole file is scanned.
   */
  readonly resumeAfter?: { readonly seq: number; readonly position: JournalPosition };
}

/** The log line of {@link FileJournal.open} cutting the torn tail `scan` found. */
export function tornTailCutLine(path: string, scan: FrameScan): string {
  return `journal ${path}: cut a torn record of ${scan.tornBytes} bytes at offset ${scan.validLength} (a crash during a write; it was never acknowledged)`;
}

/** A journal without one valid record (or empty) where snapshots show it had records. */
function noRecordRefusal(
  path: string,
  hasBytes: boolean,
  expectRecords: string,
): JournalCorruptError {
  return new JournalCorruptError(
    path,
    0,
    hasBytes
      ? `not one record is valid, but ${expectRecords}; refusing to cut it (restore the journal that belongs to this data directory)`
      : `the file is empty, but ${expectRecords}; refusing to start from an empty journal (restore the journal that belongs to this data directory)`,
    true,
  );
}

/** What {@link checkJournalBytes} checks a journal file against (see {@link FileJournalOptions}). */
export type JournalRequirements = Pick<
  FileJournalOptions,
  'firstSeq' | 'expectRecords' | 'mustReach' | 'resumeAfter'
>;

/**
 * Every check {@link FileJournal.open} makes of a journal file before it changes anything, on the
 * file's bytes (`null`: the file does not exist): the framing, checksums and sequence
 * ({@link scanFrames}), `expectRecords` and `mustReach`. Throws the error the open would throw;
 * returns the frames, whose torn tail (`tornBytes` at `validLength`) the open would then cut.
 * Reading the file is the caller's, so a read-only check (`--check`) runs the open's own checks.
 */
export function checkJournalBytes(
  path: string,
  data: Buffer | ByteSource | null,
  requirements: JournalRequirements = {},
): FrameScan {
  const firstSeq = requirements.firstSeq ?? 1;
  const { expectRecords, mustReach } = requirements;
  if (data === null) {
    // A journal that must hold records (snapshots of them exist) and is gone was deleted or
    // never restored: creating an empty one would start a new, empty venue in its place.
    if (expectRecords !== undefined) {
      throw new JournalCorruptError(
        path,
        0,
        `the file does not exist, but ${expectRecords}; refusing to create an empty journal (restore the journal that belongs to this data directory)`,
      );
    }
    if (mustReach !== undefined && mustReach.seq >= firstSeq)
      throw mustReach.refuse(firstSeq - 1, 0);
    return { offsets: [], firstSeq, validLength: 0, tornBytes: 0 };
  }
  let scan: FrameScan;
  const resume = requirements.resumeAfter;
  const end =
    resume === undefined || resume.seq < firstSeq
      ? undefined
      : recordEndAt(data, resume.seq, resume.position);
  try {
    if (resume !== undefined && end !== undefined)
      scan = {
        ...scanFrames(path, data, resume.seq + 1, end),
        skipped: { first: firstSeq, seq: resume.seq, end, position: resume.position },
      };
    else scan = scanFrames(path, data, firstSeq);
  } catch (e) {
    // The snapshots' evidence says more about what to do than the bytes do.
    if (e instanceof JournalCorruptError && e.noValidRecord && expectRecords !== undefined)
      throw noRecordRefusal(path, true, expectRecords);
    throw e;
  }
  if (scan.offsets.length === 0 && scan.skipped === undefined && expectRecords !== undefined)
    throw noRecordRefusal(path, scan.tornBytes > 0, expectRecords);
  const lastSeq = scan.firstSeq + scan.offsets.length - 1;
  if (mustReach !== undefined && lastSeq < mustReach.seq)
    throw mustReach.refuse(lastSeq, scan.validLength);
  return scan;
}

/** The on-disk journal; see the module comment. */
export class FileJournal implements JournalStore {
  readonly path: string;
  private readonly fd: number;
  /** The file's records as they were at open, until recovery has read them ({@link forget}). */
  private data: ByteSource | null;
  private offsets: number[];
  private firstSeq: number;
  /** Records before {@link firstSeq} that the open did not scan (see {@link FrameScan.skipped}). */
  private skipped: { readonly first: number; readonly seq: number; readonly end: number } | null;
  /**
   * The seq of the file's first record: 1, or later once the records before it were archived
   * (a snapshot covers them; see {@link RecordsArchivedError}).
   */
  readonly startSeq: number;
  /** Where the next appended record starts. */
  private appendedBytes: number;
  /**
   * Bytes the file holds once the groups flushed so far are written: what its size must be after
   * each flush, if nothing else wrote to it.
   */
  private flushedBytes: number;
  /** The positions of the newest records (see {@link positionOf}), by seq modulo their size. */
  private readonly recent = {
    seqs: new Float64Array(RECENT_POSITIONS),
    offsets: new Float64Array(RECENT_POSITIONS),
    crcs: new Uint32Array(RECENT_POSITIONS),
  };
  /** Seq of the last durable record. */
  private last: number;
  /** Seq of the last record handed to {@link append} (durable or not yet). */
  private assigned: number;
  /** Settles when the last append started so far has finished (either way). */
  private tail: Promise<unknown> = Promise.resolve();
  private broken: unknown = undefined;
  private closing: Promise<void> | null = null;
  private readonly fs: JournalFs;
  /** The file opened (device and inode): appends check that `path` still names it. */
  private readonly identity: { readonly dev: number; readonly ino: number };
  private readonly log: (line: string) => void;

  private constructor(
    path: string,
    fd: number,
    data: ByteSource,
    scan: FrameScan,
    fs: JournalFs,
    log: (line: string) => void,
  ) {
    this.path = path;
    this.fd = fd;
    const st = fstatSync(fd);
    this.identity = { dev: st.dev, ino: st.ino };
    this.log = log;
    this.data = data;
    this.offsets = scan.offsets;
    this.firstSeq = scan.firstSeq;
    this.skipped = scan.skipped ?? null;
    this.startSeq = scan.skipped?.first ?? scan.firstSeq;
    this.last = scan.firstSeq + scan.offsets.length - 1;
    this.assigned = this.last;
    this.appendedBytes = scan.validLength;
    this.flushedBytes = scan.validLength;
    this.fs = fs;
    // The last record's position, so a clean stop with nothing appended can record it.
    const lastAt = scan.offsets[scan.offsets.length - 1];
    if (lastAt !== undefined) {
      const b = data.cover(lastAt, HEADER);
      this.remember(this.last, lastAt, b.readUInt32LE(lastAt - data.start + 12));
    } else if (scan.skipped !== undefined) {
      this.remember(scan.skipped.seq, scan.skipped.position.offset, scan.skipped.position.crc);
    }
  }

  private remember(seq: number, offset: number, crc: number): void {
    const i = seq % RECENT_POSITIONS;
    this.recent.seqs[i] = seq;
    this.recent.offsets[i] = offset;
    this.recent.crcs[i] = crc;
  }

  /**
   * Where durable record `seq` is in the file, for one of the newest records (a snapshot of the
   * state after it records this; see {@link FileJournalOptions.resumeAfter}).
   */
  positionOf(seq: number): JournalPosition | undefined {
    const i = seq % RECENT_POSITIONS;
    if (seq < 1 || seq > this.last || this.recent.seqs[i] !== seq) return undefined;
    return { offset: this.recent.offsets[i] as number, crc: this.recent.crcs[i] as number };
  }

  /**
   * Opens (creating if needed) and validates a journal file, repairing a torn tail. Every
   * record's framing, checksum and seq are checked here; payloads are decoded when read.
   */
  static open(path: string, options: FileJournalOptions = {}): FileJournal {
    const created = !existsSync(path);
    // A refusal of a missing file comes before it is created.
    if (created) checkJournalBytes(path, null, options);
    const fd = openSync(path, 'a+');
    // A new file's directory entry must be durable before its first acknowledged record is.
    if (created) syncDirectory(dirname(path));
    // Read through a window, never whole: a journal outgrows any one buffer.
    let data = new FileSource(fd, fstatSync(fd).size, options.readWindowBytes);
    let scan: FrameScan;
    try {
      scan = checkJournalBytes(path, data, options);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
    if (scan.tornBytes > 0) {
      (options.log ?? console.error)(tornTailCutLine(path, scan));
      ftruncateSync(fd, scan.validLength);
      fdatasyncSync(fd);
      // The records are read later through a window that must not reach past the cut.
      data = new FileSource(fd, scan.validLength, options.readWindowBytes);
    }
    return new FileJournal(
      path,
      fd,
      data,
      scan,
      options.fs ?? nodeJournalFs,
      options.log ?? ((line) => console.error(line)),
    );
  }

  get lastSeq(): number {
    return this.last;
  }

  /**
   * Writes the commands as one group (one write, then one fdatasync) and resolves with the seq
   * of the last one once they are durable. Seqs are assigned now, in call order; an append made
   * while another is in flight is written after it returns. A failed write or flush rejects this
   * append and every later one (queued or new): the journal never writes again.
   */
  append(commands: readonly Command[]): Promise<number> {
    if (this.broken !== undefined) return Promise.reject(this.broken);
    if (this.closing !== null) return Promise.reject(new Error(`journal ${this.path} is closed`));
    let data: Buffer;
    let seq = this.assigned;
    const parts: Buffer[] = [];
    try {
      for (const c of commands) parts.push(encodeRecord(++seq, c));
      data = Buffer.concat(parts);
    } catch (error) {
      // Nothing was written and no seq was taken: the journal is intact.
      return Promise.reject(error);
    }
    // Groups are written in call order, each whole, so each record's offset is known now.
    let at = this.appendedBytes;
    let recordSeq = this.assigned;
    for (const part of parts) {
      this.remember(++recordSeq, at, part.readUInt32LE(12));
      at += part.length;
    }
    this.appendedBytes = at;
    this.assigned = seq;
    const done = this.tail.then(() => this.flush(data, seq));
    this.tail = done.catch(() => {});
    return done;
  }

  /** One group: write, then fdatasync. Called only after the previous group settled. */
  private async flush(data: Buffer, seq: number): Promise<number> {
    if (this.broken !== undefined) throw this.broken;
    try {
      if (data.length > 0) {
        await this.fs.write(this.fd, data);
        await this.fs.sync(this.fd);
        this.flushedBytes += data.length;
        this.checkStillNamed();
      }
    } catch (error) {
      // Never retried: after a failed fsync the page cache may have dropped the data while a
      // second fsync reports success (reliability-anchors 1.7).
      this.broken = error;
      throw error;
    }
    this.last = seq;
    return seq;
  }

  /**
   * Throws unless `path` still names the file this journal writes to, and that file holds
   * exactly what this journal wrote. A journal deleted (or replaced by another file) while the
   * venue runs keeps taking appends on the open descriptor, in a file no restart will read: every
   * acknowledgement from then on would be lost at exit, and the restart would find no journal or
   * the wrong one. Checked after each flush, before the group is acknowledged; the records
   * written to the detached file are first copied out beside it (`<path>.detached-<time>`), since
   * they exist nowhere else once the process ends.
   *
   * A file written in place by another process (`cp` or `rsync --inplace` of a backup over it, a
   * `cat >>`) keeps its inode, so only its size tells: the venue appends after whatever is there,
   * and a restart finds a sequence gap with the overwritten records gone. The venue stops at the
   * first flush after it, so nothing more is acknowledged into that file.
   */
  private checkStillNamed(): void {
    let problem: string | null = null;
    let overwritten = false;
    try {
      const named = statSync(this.path);
      const st = fstatSync(this.fd);
      if (named.dev !== this.identity.dev || named.ino !== this.identity.ino)
        problem = 'was replaced by another file';
      else if (st.nlink === 0) problem = 'was deleted';
      else if (st.size !== this.flushedBytes) {
        overwritten = true;
        problem = `was written by another process (it holds ${st.size} bytes where this venue wrote ${this.flushedBytes})`;
      }
    } catch (e) {
      problem =
        (e as NodeJS.ErrnoException).code === 'ENOENT'
          ? 'was deleted'
          : `cannot be checked (${(e as Error).message})`;
    }
    if (problem === null) return;
    if (overwritten) {
      // Its bytes are no longer this journal's records: a copy would hold the other writer's.
      const message = `the file ${problem} while the venue ran: records it had acknowledged may be gone from it, and what it appended since sits after the other writer's bytes. Nothing more is written to it. Restore the data directory from a backup (docs/durability.md, "Backup and restore"); never copy files into a running venue's directory`;
      this.log(`journal ${this.path} ${problem}; the venue stops`);
      throw new JournalCorruptError(this.path, this.flushedBytes, message);
    }
    const size = fstatSync(this.fd).size;
    let saved: string;
    try {
      const copy = `${this.path}.detached-${new Date().toISOString().replace(/[:.]/g, '-')}`; // see listDetachedCopies
      let read = 0;
      const out = openSync(copy, 'wx');
      try {
        read = copyRange(this.fd, 0, size, out);
        fsyncSync(out);
      } finally {
        closeSync(out);
      }
      syncDirectory(dirname(copy));
      saved = `its ${read} bytes were copied to ${copy}; put that file back as ${this.path} (it holds every acknowledged record) and restart`;
    } catch (e) {
      saved = `copying its records out failed (${(e as Error).message}): they are lost when this process ends`;
    }
    this.log(`journal ${this.path} ${problem} while the venue ran; ${saved}`);
    throw new JournalCorruptError(
      this.path,
      size,
      `the file ${problem} while the venue ran (records written after that are in no file a restart reads); ${saved}`,
    );
  }

  /**
   * Records after `afterSeq` that were in the file when it was opened, decoded on the way
   * (recovery reads them once; later appends are not kept in memory). An undecodable payload
   * throws {@link JournalCorruptError} with its offset.
   */
  async *read(afterSeq = 0): AsyncIterable<JournalRecord> {
    for (const r of this.readSync(afterSeq)) yield r;
  }

  /** {@link read}, synchronously. */
  *readSync(afterSeq = 0): Iterable<JournalRecord> {
    if (afterSeq < this.startSeq - 1)
      throw new RecordsArchivedError(
        this.path,
        this.startSeq,
        `records ${afterSeq + 1}..${this.startSeq - 1} were asked for`,
      );
    const data = this.data;
    if (data === null) return;
    // Records the open skipped are checked as they are reached (see `walkSkipped`).
    if (this.skipped !== null && afterSeq < this.skipped.seq)
      yield* walkSkipped(this.path, data, this.skipped, afterSeq);
    const from = Math.max(0, afterSeq - this.firstSeq + 1);
    for (let i = from; i < this.offsets.length; i++)
      yield decodeFrame(this.path, data, this.offsets[i] as number);
  }

  /** Drops the in-memory copy of records up to `seq` (read already, or in a snapshot). */
  forget(seq: number): void {
    if (this.skipped !== null && seq >= this.skipped.seq) this.skipped = null;
    const keep = Math.max(0, seq - this.firstSeq + 1);
    this.offsets = this.offsets.slice(keep);
    if (this.offsets.length === 0 && this.skipped === null) this.data = null;
    else this.firstSeq += keep;
  }

  /** Waits for the append in flight (and those queued behind it), then closes the file. */
  close(): Promise<void> {
    this.closing ??= this.tail.then(() => closeSync(this.fd));
    return this.closing;
  }
}
