/**
 * Snapshot files beside the journal: a restart loads the newest valid snapshot and replays only
 * the journal records after its seq, instead of the whole journal.
 *
 * A file `snapshot-<seq, 20 digits>.snap` holds one header line (JSON: format, version, seq,
 * engine time, state hash, body length and CRC-32; padded with spaces to 512 bytes) and the body,
 * the core's snapshot text of the state right after journal record `seq`. It is written without pausing the engine: the
 * snapshotter keeps the reference of a committed state (states are immutable), encodes and
 * hashes it in slices of a few milliseconds between the engine's batches, streams it to a
 * temporary file with asynchronous I/O in ~1 MB pieces, fsyncs it, renames it into place and fsyncs the directory. A crash
 * at any point leaves either the old set of snapshots or the new one, plus at worst a `.tmp`
 * file that the next start deletes. The newest `keep` snapshots are kept, and the newest of every
 * older engine rules version (the state at the end of a build's records; see `prune`).
 *
 * Loading checks, newest first: header, length, CRC, that the body decodes, and that the
 * decoded state's hash equals the header's. A snapshot that fails any check is skipped with a
 * log line naming the file and the reason, and the previous one is tried; with none left,
 * recovery replays the whole journal. The journal stays the record of truth: snapshots only
 * save time, and losing all of them loses nothing (except across engine rules versions, whose
 * records are not replayed without the operator's word: docs/durability.md, "Upgrades"). A valid snapshot past the journal's last
 * record stops start-up: snapshots are taken of durable states only, so the journal lost
 * records that were acknowledged (deleted, replaced, cut), and starting would drop them.
 *
 * A failed snapshot write (including a failed fsync) is logged and abandoned; it is not fatal,
 * because acknowledgements depend only on the journal.
 *
 * @module
 */
import {
  closeSync,
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
} from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { crc32 } from 'node:zlib';
import {
  type DecodedSnapshot,
  decodeSnapshotText,
  type EngineState,
  SNAPSHOT_VERSION,
  SnapshotEncoder,
  StateHasher,
  stateHash,
} from '@perp/core';
import type { EngineHost } from '../engine/host.js';
import { stateKeccak } from '../native-keccak.js';
import type { CheckpointPart } from '../read/checkpoint.js';
import { BlockFileWriter, syncDir } from './durable-write.js';
import { type JournalPosition, listDetachedCopies } from './file-journal.js';
import {
  type CheckpointCapture,
  captureReadModels,
  checkpointFileName,
  listCheckpointFiles,
  pruneCheckpoints,
  removeUnfinishedCheckpoints,
  writeCheckpointFile,
} from './read-model-files.js';

/** When snapshots are taken. */
export interface SnapshotPolicy {
  /** Take one once this many journal records were written since the last (0: never by count). */
  readonly everyRecords: number;
  /** Also take one this often (ms, 0: never by time)... */
  readonly everyMs: number;
  /** ...when at least this many records were written since the last. */
  readonly minRecords: number;
  /** Snapshot files to keep, newest first (at least 1); also the newest of each older rules version. */
  readonly keep: number;
  /** Longest the event loop is held by one encoding or hashing slice, ms. */
  readonly sliceMs: number;
  /**
   * Take one at a clean stop when records are newer than the last snapshot, so the next start
   * replays nothing: restarts are quick, and an upgrade that changes engine rules finds no
   * records of the old rules to replay (docs/durability.md, "Upgrades").
   */
  readonly atClose: boolean;
  /**
   * Write the read models beside each snapshot (`read-model-files.ts`), so a restart loads them
   * instead of re-reducing the journal. Costs about a rebuild of what they retain per snapshot.
   */
  readonly readModels: boolean;
}

/**
 * Defaults: a tail of at most 250,000 records to replay after a crash (a few seconds at the
 * engine's replay rate on a 2-core machine), and an hourly snapshot on a venue with some traffic.
 * A quiet venue rarely snapshots and recovers by full replay. After a restart from a snapshot the
 * read-model history before it is rebuilt by the background backfill (see docs/durability.md).
 */
export const DEFAULT_SNAPSHOT_POLICY: SnapshotPolicy = {
  everyRecords: 250_000,
  everyMs: 3_600_000,
  minRecords: 10_000,
  keep: 2,
  sliceMs: 4,
  atClose: true,
  readModels: true,
};

const FORMAT = 'perp-engine-snapshot';
/** Bytes reserved for the header line at the start of a snapshot file. */
const HEADER_BLOCK = 512;
/** Pause after a failed snapshot write before the policy may start another. */
const RETRY_AFTER_MS = 30_000;
const VERSION = 1;
const NAME_RE = /^snapshot-(\d{20})\.snap$/;
const TMP_RE = /^snapshot-\d{20}\.snap\.tmp$/;

/** The header line of a snapshot file. */
export interface SnapshotHeader {
  readonly format: typeof FORMAT;
  readonly version: number;
  /** Journal seq of the last record the state includes. */
  readonly seq: number;
  /** Engine time of the state, ms. */
  readonly time: number;
  /** `stateHash` of the state. */
  readonly stateHash: string;
  readonly bodyBytes: number;
  readonly bodyCrc32: number;
  /**
   * The engine rules the state declares (`state.rulesVersion`); absent in files written before
   * it existed. Rotation keeps the newest snapshot of every older rules version.
   */
  readonly rules?: number | null;
  /**
   * Where record `seq` is in `journal.log` (offset and CRC-32): a start checks that one record
   * and scans only the records after it. Absent in older files and when the journal did not know
   * it (the whole journal is scanned then).
   */
  readonly journal?: JournalPosition;
}

/** A snapshot read back and verified. */
export interface LoadedSnapshot {
  readonly path: string;
  readonly seq: number;
  readonly state: EngineState;
  /** `stateHash` of {@link state}. */
  readonly hash: string;
  /** The older snapshot version it was written in, when it was converted on reading. */
  readonly convertedFrom?: number;
  /** Where its last record is in the journal, as its header recorded it. */
  readonly journal?: JournalPosition;
}

/** A snapshot file on disk. */
export interface SnapshotFile {
  readonly path: string;
  readonly seq: number;
}

/** Raised for a snapshot file that must not be used. */
export class SnapshotFileError extends Error {
  override readonly name = 'SnapshotFileError';
  readonly file: string;

  constructor(file: string, detail: string) {
    super(`snapshot ${file} is invalid: ${detail}`);
    this.file = file;
  }
}

/** File name of the snapshot at `seq`. */
export function snapshotFileName(seq: number): string {
  return `snapshot-${String(seq).padStart(20, '0')}.snap`;
}

/** Snapshot files of a directory, newest (highest seq) first. */
export function listSnapshotFiles(dir: string): SnapshotFile[] {
  const out: SnapshotFile[] = [];
  for (const name of readdirSync(dir)) {
    const m = NAME_RE.exec(name);
    if (m !== null) out.push({ path: join(dir, name), seq: Number(m[1]) });
  }
  return out.sort((a, b) => b.seq - a.seq);
}

/**
 * Snapshot files of `dir` with a read-model checkpoint beside them, seq in `[from, below)`,
 * newest first, with the state hash their header records (files whose header does not read are
 * left out). Where a history backfill can start when the newest snapshot's checkpoint is not
 * usable (`read/backfill.ts`).
 */
export function checkpointedSnapshots(
  dir: string,
  from: number,
  below: number,
): { readonly path: string; readonly seq: number; readonly hash: string }[] {
  const checkpointed = new Set(listCheckpointFiles(dir).map((f) => f.seq));
  const out: { path: string; seq: number; hash: string }[] = [];
  for (const f of listSnapshotFiles(dir)) {
    if (f.seq >= below || f.seq < from || !checkpointed.has(f.seq)) continue;
    let header: SnapshotHeader | null;
    try {
      header = readSnapshotHeader(f.path);
    } catch {
      continue;
    }
    if (header !== null) out.push({ path: f.path, seq: f.seq, hash: header.stateHash });
  }
  return out;
}

/**
 * The header of a snapshot file, unverified, or `null` when the file's start is not one. Throws
 * when the file cannot be read (an I/O error says nothing about the file).
 */
export function readSnapshotHeader(path: string): SnapshotHeader | null {
  const fd = openSync(path, 'r');
  try {
    const block = Buffer.alloc(HEADER_BLOCK);
    const parsed = parseHeader(block.subarray(0, readSync(fd, block, 0, HEADER_BLOCK, 0)));
    return typeof parsed !== 'string' && parsed.header.format === FORMAT ? parsed.header : null;
  } finally {
    closeSync(fd);
  }
}

/** The header line at the start of a snapshot file's bytes, or why there is none. */
function parseHeader(data: Buffer): { header: SnapshotHeader; bodyStart: number } | string {
  const nl = data.indexOf(10);
  if (nl < 0) return 'no header line';
  let header: unknown;
  try {
    header = JSON.parse(data.toString('utf8', 0, nl));
  } catch {
    return 'the header is not JSON';
  }
  if (header === null || typeof header !== 'object') return 'the header is not a JSON object';
  return { header: header as SnapshotHeader, bodyStart: nl + 1 };
}

/** Reads and fully verifies one snapshot file; throws {@link SnapshotFileError}. */
export function readSnapshotFile(path: string): LoadedSnapshot {
  let data: Buffer;
  try {
    data = readFileSync(path);
  } catch (e) {
    throw new SnapshotFileError(path, `unreadable (${(e as Error).message})`);
  }
  const parsed = parseHeader(data);
  if (typeof parsed === 'string') throw new SnapshotFileError(path, parsed);
  const { header } = parsed;
  if (header.format !== FORMAT || header.version !== VERSION) {
    throw new SnapshotFileError(
      path,
      `unknown format ${String(header.format)} v${String(header.version)}`,
    );
  }
  const m = NAME_RE.exec(path.slice(path.lastIndexOf('/') + 1));
  if (m !== null && Number(m[1]) !== header.seq) {
    throw new SnapshotFileError(
      path,
      `the header says seq ${header.seq}, the name ${Number(m[1])}`,
    );
  }
  const body = data.subarray(parsed.bodyStart);
  if (body.length !== header.bodyBytes) {
    throw new SnapshotFileError(
      path,
      `body is ${body.length} bytes, the header says ${header.bodyBytes}`,
    );
  }
  if (crc32(body) !== header.bodyCrc32) throw new SnapshotFileError(path, 'body checksum mismatch');
  let decoded: DecodedSnapshot;
  try {
    decoded = decodeSnapshotText(body.toString('utf8'));
  } catch (e) {
    throw new SnapshotFileError(path, `undecodable body (${(e as Error).message})`);
  }
  // The recorded hash is of the state as written; a converted one gets its own.
  const writtenHash = stateHash(decoded.written, stateKeccak());
  if (writtenHash !== header.stateHash) {
    throw new SnapshotFileError(
      path,
      `decoded state hash ${writtenHash} differs from the recorded ${header.stateHash}`,
    );
  }
  const { state } = decoded;
  const journal = positionIn(header);
  const at = journal === undefined ? {} : { journal };
  if (state === decoded.written) return { path, seq: header.seq, state, hash: writtenHash, ...at };
  return {
    path,
    seq: header.seq,
    state,
    hash: stateHash(state, stateKeccak()),
    convertedFrom: decoded.version,
    ...at,
  };
}

/** The header's journal position when it is well formed (a malformed one is not used). */
function positionIn(header: SnapshotHeader): JournalPosition | undefined {
  const j: unknown = header.journal;
  if (typeof j !== 'object' || j === null) return undefined;
  const { offset, crc } = j as Record<string, unknown>;
  if (!Number.isSafeInteger(offset) || (offset as number) < 0) return undefined;
  if (!Number.isInteger(crc) || (crc as number) < 0 || (crc as number) > 0xffffffff)
    return undefined;
  return { offset: offset as number, crc: crc as number };
}

/** Options of {@link loadNewestSnapshot}. */
export interface LoadOptions {
  /**
   * The journal's last seq: a valid snapshot past it throws {@link JournalBehindSnapshotError}.
   * Without it the newest valid snapshot is returned whatever its seq, for a caller that checks
   * the journal against it (start-up does, before the journal's torn tail may be cut).
   */
  readonly maxSeq?: number;
  /**
   * Where the journal's last whole record ends, bytes, named in that error. Default: the file's
   * size, which also counts a torn tail the journal's open would cut.
   */
  readonly journalEnd?: number;
  readonly log?: (line: string) => void;
  /** Told of each snapshot skipped, with the error that the log line names (`--check`). */
  readonly onSkip?: (file: SnapshotFile, error: Error) => void;
  /** The journal file, named in errors (default: `journal.log` in the snapshot directory). */
  readonly journal?: string;
}

/**
 * Raised when a valid snapshot covers records the journal does not have: the journal lost
 * records that were acknowledged (a snapshot is only ever taken of a durable state), or it was
 * replaced by an older copy or deleted. Starting would silently drop them, so start-up stops.
 */
export class JournalBehindSnapshotError extends Error {
  override readonly name = 'JournalBehindSnapshotError';
  readonly file: string;
  readonly offset: number;
  readonly snapshot: string;

  constructor(file: string, offset: number, lastSeq: number, snapshot: LoadedSnapshot) {
    // A venue whose journal was deleted or replaced under it left its records beside it: that
    // copy is the journal to restore, and deleting snapshots would throw its records away.
    const detached = listDetachedCopies(file);
    const remedy =
      detached.length > 0
        ? `${detached[detached.length - 1]} is beside it: a venue that ran here copied its journal out when ${file} was deleted or replaced under it, and that copy holds every record it acknowledged. Put it back as ${file} and start again; do not delete snapshots`
        : `Restore the journal that belongs to this data directory; if this is a restore from a copy in which the snapshots were copied after the journal, delete the snapshot files past seq ${lastSeq} and start again`;
    super(
      `journal ${file} ends at seq ${lastSeq} (byte ${offset}), but the valid snapshot ${snapshot.path} covers records up to seq ${snapshot.seq} (hash ${snapshot.hash}): the journal is missing acknowledged records (deleted, replaced by an older copy, or cut). Refusing to start. ${remedy}`,
    );
    this.file = file;
    this.offset = offset;
    this.snapshot = snapshot.path;
  }
}

/**
 * The newest snapshot of `dir` that passes every check, or `null` (recover by full replay).
 * Each snapshot skipped is logged with the reason. A valid snapshot past the journal's last
 * record throws {@link JournalBehindSnapshotError}; an invalid one there is skipped like any.
 */
export function loadNewestSnapshot(dir: string, options: LoadOptions): LoadedSnapshot | null {
  const log = options.log ?? ((line: string) => console.error(line));
  const files = listSnapshotFiles(dir);
  for (let i = 0; i < files.length; i++) {
    const f = files[i] as SnapshotFile;
    const next = files[i + 1];
    const fallback =
      next === undefined ? 'a full journal replay' : `the previous snapshot ${next.path}`;
    if (options.maxSeq !== undefined && f.seq > options.maxSeq) {
      // Only a snapshot that verifies proves the records existed; a damaged file proves nothing.
      let ahead: LoadedSnapshot;
      try {
        ahead = readSnapshotFile(f.path);
      } catch (e) {
        log(`${(e as Error).message}; skipped, using ${fallback}`);
        options.onSkip?.(f, e as Error);
        continue;
      }
      const journal = options.journal ?? join(dir, 'journal.log');
      throw new JournalBehindSnapshotError(
        journal,
        options.journalEnd ?? fileSize(journal),
        options.maxSeq,
        ahead,
      );
    }
    try {
      const loaded = readSnapshotFile(f.path);
      if (loaded.convertedFrom !== undefined)
        log(
          `snapshot ${f.path} is of version ${loaded.convertedFrom}; converted to version ${SNAPSHOT_VERSION} on reading (hash ${loaded.hash})`,
        );
      return loaded;
    } catch (e) {
      log(`${(e as Error).message}; skipped, using ${fallback}`);
      options.onSkip?.(f, e as Error);
    }
  }
  return null;
}

/** The size of `path`, bytes; 0 when it does not exist. */
function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** File system steps of a snapshot write that tests may fail or interrupt. */
export interface SnapshotHooks {
  /** After the temporary file is complete and fsynced, before the rename. */
  readonly beforeRename?: (tmpPath: string) => void | Promise<void>;
  /** Replaces the temporary file's fsync. */
  readonly sync?: (fd: number) => Promise<void>;
}

/** Options of a {@link Snapshotter}. */
export interface SnapshotterOptions {
  readonly dir: string;
  readonly policy?: Partial<SnapshotPolicy>;
  /** Seq of the snapshot recovery started from (0: none). */
  readonly lastSeq?: number;
  readonly log?: (line: string) => void;
  readonly hooks?: SnapshotHooks;
  /**
   * The read models to checkpoint beside each snapshot (`read-model-files.ts`), asked in the
   * turn the snapshot's state is taken: `null` while they are incomplete (a history backfill is
   * running), and no checkpoint is written then.
   */
  readonly readModels?: () => readonly CheckpointPart[] | null;
  /** Where a journal record is, asked in the turn a snapshot's state is taken (see `SnapshotHeader.journal`). */
  readonly journalPosition?: (seq: number) => JournalPosition | undefined;
}

/** What a finished snapshot write produced. */
export interface WrittenSnapshot {
  readonly path: string;
  readonly seq: number;
  readonly hash: string;
  /** Bytes of the file (header block and body), as `ls` and `--check` give them. */
  readonly bytes: number;
  readonly ms: number;
  /** The read-model checkpoint written beside it, if any (`bytes`: of the file). */
  readonly readModels: { readonly path: string; readonly bytes: number } | null;
}

/** Takes snapshots of a running host; see the module comment. */
export class Snapshotter {
  readonly dir: string;
  readonly policy: SnapshotPolicy;
  private readonly log: (line: string) => void;
  private readonly hooks: SnapshotHooks;
  private readonly readModels: (() => readonly CheckpointPart[] | null) | null;
  private readonly journalPosition: (seq: number) => JournalPosition | undefined;
  private lastSeq: number;
  private latest: { state: EngineState; seq: number } | null = null;
  private running: Promise<WrittenSnapshot | null> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private detach: (() => void) | null = null;
  private closed = false;
  /** After a failed write, no new attempt before this time (performance.now ms). */
  private retryAt = 0;
  /** Writing a clean stop's snapshot: nothing else needs the event loop. */
  private stopping = false;
  /** Snapshot files known intact or damaged (files never change once renamed into place). */
  private readonly checked = new Map<string, boolean>();

  constructor(options: SnapshotterOptions) {
    this.dir = options.dir;
    this.policy = { ...DEFAULT_SNAPSHOT_POLICY, ...options.policy };
    this.log = options.log ?? ((line: string) => console.error(line));
    this.hooks = options.hooks ?? {};
    this.readModels = options.readModels ?? null;
    this.journalPosition = options.journalPosition ?? (() => undefined);
    this.lastSeq = options.lastSeq ?? 0;
    // A `.tmp` file is a write that a crash interrupted before its rename: never valid.
    for (const name of readdirSync(this.dir)) {
      if (TMP_RE.test(name)) {
        rmSync(join(this.dir, name), { force: true });
        this.log(`snapshot: removed ${name}, an unfinished snapshot write`);
      }
    }
    for (const name of removeUnfinishedCheckpoints(this.dir))
      this.log(`snapshot: removed ${name}, an unfinished read-model checkpoint write`);
  }

  /**
   * Follows a host's committed batches from now on (call after the start-up replay) and takes
   * snapshots by the policy. Returns the detach function.
   */
  attach(host: EngineHost): () => void {
    // The replayed tail counts too: a venue that stays quiet after a restart still snapshots it.
    this.latest = { state: host.state, seq: host.journalSeq };
    const unsubscribe = host.subscribe((batch) => {
      // Inside a listener the host's journal seq is exactly the batch's last record.
      this.latest = { state: batch.state, seq: host.journalSeq };
      const due =
        this.policy.everyRecords > 0 && host.journalSeq - this.lastSeq >= this.policy.everyRecords;
      if (due) this.trigger();
    });
    if (this.policy.everyMs > 0) {
      this.timer = setInterval(() => {
        const l = this.latest;
        if (l !== null && l.seq - this.lastSeq >= Math.max(1, this.policy.minRecords))
          this.trigger();
      }, this.policy.everyMs);
      this.timer.unref();
    }
    this.detach = () => {
      unsubscribe();
      if (this.timer !== null) clearInterval(this.timer);
      this.timer = null;
    };
    return this.detach;
  }

  /** How long one encoding or hashing slice may hold the event loop, ms. */
  private get sliceMs(): number {
    // At a clean stop the engine is idle and the sockets are closed: long slices finish sooner,
    // within a process manager's stop timeout.
    return this.stopping ? Math.max(this.policy.sliceMs, 250) : this.policy.sliceMs;
  }

  /** The snapshot in progress, if any. */
  get inProgress(): Promise<WrittenSnapshot | null> | null {
    return this.running;
  }

  private trigger(): void {
    const l = this.latest;
    if (this.running !== null || this.closed || l === null || l.seq <= this.lastSeq) return;
    if (performance.now() < this.retryAt) return;
    void this.write(l.state, l.seq);
  }

  /**
   * Writes a snapshot of `state`, which must be the state right after journal record `seq`.
   * Resolves with the file, or `null` when the write failed (logged) or another is running.
   */
  write(state: EngineState, seq: number): Promise<WrittenSnapshot | null> {
    if (this.running !== null) return Promise.resolve(null);
    // Captured in this turn, with `state`: the read models have seen exactly its batches.
    let capture: CheckpointCapture | null = null;
    try {
      const parts = this.policy.readModels ? (this.readModels?.() ?? null) : null;
      if (parts !== null) capture = captureReadModels(parts);
    } catch (e) {
      this.log(`snapshot at seq ${seq}: no read-model checkpoint: ${(e as Error).message}`);
    }
    // Asked now: the journal remembers only its newest records' positions.
    const position = this.journalPosition(seq);
    const job = this.run(state, seq, capture, position).then((written) => {
      this.running = null;
      // Records may have piled up meanwhile: start the next one now rather than on a later
      // batch. After a failure, wait for the next trigger instead of retrying in a loop.
      const l = this.latest;
      const due =
        l !== null &&
        this.policy.everyRecords > 0 &&
        l.seq - this.lastSeq >= this.policy.everyRecords;
      if (written !== null && due) this.trigger();
      return written;
    });
    this.running = job;
    return job;
  }

  private async run(
    state: EngineState,
    seq: number,
    capture: CheckpointCapture | null,
    position: JournalPosition | undefined,
  ): Promise<WrittenSnapshot | null> {
    const started = performance.now();
    const path = join(this.dir, snapshotFileName(seq));
    const tmp = `${path}.tmp`;
    /** Once the file is renamed into place: the step that failed after it, for the log. */
    let placed: string | null = null;
    try {
      // The body streams to the file in ~1 MB pieces after a reserved header block, so no slice
      // ever joins or copies the whole snapshot; the header is written last, once its length
      // and CRC are known.
      const fh = await open(tmp, 'w');
      let bytes = 0;
      let hash: string;
      try {
        const encoder = new SnapshotEncoder(state);
        const body = new BlockFileWriter(fh, HEADER_BLOCK);
        for (let done = false; !done; ) {
          const until = performance.now() + this.sliceMs;
          do {
            const text = encoder.step(512);
            if (text === null) done = true;
            else body.add(text);
          } while (!done && !body.full && performance.now() < until);
          if (done || body.full) await body.flush();
          else await yieldToLoop();
          if (this.closed) throw new Error('the venue is closing');
        }
        const hasher = new StateHasher(state, stateKeccak());
        await this.sliced(() => hasher.step(512));
        hash = hasher.hash;
        await body.finish(
          (b): SnapshotHeader => ({
            format: FORMAT,
            version: VERSION,
            seq,
            time: state.time,
            stateHash: hash,
            bodyBytes: b.bytes,
            bodyCrc32: b.crc,
            rules: state.rulesVersion,
            ...(position === undefined ? {} : { journal: position }),
          }),
        );
        bytes = HEADER_BLOCK + body.bytes;
        if (this.hooks.sync !== undefined) await this.hooks.sync(fh.fd);
        else await fh.sync();
      } finally {
        await fh.close();
      }
      await this.hooks.beforeRename?.(tmp);
      await rename(tmp, path);
      placed = 'the fsync of its directory';
      this.checked.set(path, true);
      await syncDir(this.dir);
      this.lastSeq = Math.max(this.lastSeq, seq);
      const readModels = capture === null ? null : await this.checkpoint(capture, seq, hash);
      capture = null;
      placed = 'removing older snapshots';
      await this.prune();
      const ms = performance.now() - started;
      this.log(
        `snapshot ${path}: seq ${seq}, ${bytes} bytes, ${ms.toFixed(0)} ms${readModels === null ? '' : `, read models ${readModels.bytes} bytes`}`,
      );
      return { path, seq, hash, bytes, ms, readModels };
    } catch (e) {
      for (const c of capture?.captures ?? []) c.release();
      await rm(tmp, { force: true }).catch(() => {});
      this.retryAt = performance.now() + RETRY_AFTER_MS;
      // Not fatal: the journal (with the kept snapshots of older rules) recovers everything; the
      // next snapshot tries again. After the rename the file is whole under its final name and a
      // restart may use it: "abandoned" would send an operator looking for a loss there is not.
      this.log(
        placed === null
          ? `snapshot at seq ${seq} failed and was abandoned (the journal is unaffected): ${(e as Error).message}`
          : `snapshot ${path} at seq ${seq} is in place, but ${placed} failed (the journal is unaffected; the next snapshot tries again): ${(e as Error).message}`,
      );
      return null;
    }
  }

  /**
   * Writes the read models captured with the snapshot at `seq`; `null` when it failed (logged:
   * the snapshot stands, and a restart from it rebuilds the read models by backfill instead).
   */
  private async checkpoint(
    capture: CheckpointCapture,
    seq: number,
    stateHash: string,
  ): Promise<{ path: string; bytes: number } | null> {
    try {
      return await writeCheckpointFile({
        dir: this.dir,
        seq,
        stateHash,
        capture,
        sliceMs: () => this.sliceMs,
        abandoned: () => this.closed,
        ...(this.hooks.sync === undefined ? {} : { sync: this.hooks.sync }),
      });
    } catch (e) {
      this.log(
        `snapshot at seq ${seq}: the read-model checkpoint failed and was abandoned (a restart from this snapshot rebuilds them from the journal): ${(e as Error).message}`,
      );
      return null;
    }
  }

  /** Runs `step` until it returns true, yielding to the event loop every `sliceMs`. */
  private async sliced(step: () => boolean): Promise<void> {
    for (;;) {
      const until = performance.now() + this.sliceMs;
      do {
        if (step()) return;
      } while (performance.now() < until);
      await yieldToLoop();
      if (this.closed) throw new Error('the venue is closing');
    }
  }

  /**
   * Keeps the newest `keep` snapshots, and the newest intact snapshot of every older rules
   * version: the state at the end of a build's records (the snapshot a clean stop wrote before an
   * upgrade). Journal records of other rules are never replayed without the operator's word, so
   * without it a venue whose newer snapshots are all damaged could not recover from the journal
   * alone. "Intact" is checked by the body's length and CRC, once per file. Also kept: the
   * newest snapshot that has a read-model checkpoint, so that a history backfill always has
   * read models to start from when the newer snapshots have none (snapshots taken while the
   * read models were incomplete, or a crash between a snapshot and its checkpoint): without
   * them it re-reduces the whole journal, and cannot once the journal was archived.
   */
  private async prune(): Promise<void> {
    const files = listSnapshotFiles(this.dir);
    const kept = Math.max(1, this.policy.keep);
    const rulesSeen = new Set<number>();
    const checkpointed = new Set(listCheckpointFiles(this.dir).map((f) => f.seq));
    const newestCheckpointed = files.find((f) => checkpointed.has(f.seq));
    for (const [i, f] of files.entries()) {
      if (f === newestCheckpointed) continue;
      let header: SnapshotHeader | null;
      try {
        header = readSnapshotHeader(f.path);
      } catch {
        continue; // unreadable now: keep it, the next rotation looks again
      }
      const rules = header?.rules;
      if (header !== null && typeof rules === 'number' && !rulesSeen.has(rules)) {
        let intact: boolean;
        try {
          intact = await this.intact(f.path, header);
        } catch {
          continue; // as above
        }
        if (intact) {
          rulesSeen.add(rules);
          continue;
        }
      }
      if (i < kept) continue;
      await rm(f.path, { force: true });
      this.checked.delete(f.path);
    }
    await pruneCheckpoints(this.dir, new Set(listSnapshotFiles(this.dir).map((f) => f.seq)));
  }

  /** Whether a snapshot file's body has the length and CRC its header records (cached). */
  private async intact(path: string, header: SnapshotHeader): Promise<boolean> {
    const known = this.checked.get(path);
    if (known !== undefined) return known;
    const fh = await open(path, 'r');
    let crc = 0;
    let bytes = 0;
    try {
      const chunk = Buffer.alloc(1 << 20);
      for (;;) {
        const { bytesRead } = await fh.read(chunk, 0, chunk.length, HEADER_BLOCK + bytes);
        if (bytesRead === 0) break;
        crc = crc32(chunk.subarray(0, bytesRead), crc);
        bytes += bytesRead;
      }
    } finally {
      await fh.close();
    }
    const ok = bytes === header.bodyBytes && crc === header.bodyCrc32;
    this.checked.set(path, ok);
    return ok;
  }

  /**
   * A clean stop's snapshot (call once the host is idle, before {@link close}): stops following
   * the host, lets a write in progress finish, then writes the state `current` gives, the state
   * after journal record `seq`, unless a snapshot already covers that record. Resolves with the
   * file, or `null` when none was needed or the write failed (logged; the journal still has
   * everything). `current` is read after the wait, in the turn the read models are captured:
   * read before it, a batch committed during the wait would leave the state behind the read
   * models, which would then be checkpointed under the older seq.
   */
  async writeFinal(
    current: () => { readonly state: EngineState; readonly seq: number },
  ): Promise<WrittenSnapshot | null> {
    this.detach?.();
    this.detach = null;
    while (this.running !== null) await this.running;
    if (this.closed) return null;
    this.stopping = true;
    const { state, seq } = current();
    if (seq === this.lastSeq) await this.checkpointNewest(seq);
    if (seq <= this.lastSeq) return null;
    return this.write(state, seq);
  }

  /**
   * At a clean stop with nothing newer than the newest snapshot: writes the read models beside
   * it when it has none yet (a venue that started from it without a checkpoint and rebuilt them
   * by backfill), so the next start loads them instead of rebuilding them again.
   */
  private async checkpointNewest(seq: number): Promise<void> {
    const parts = this.policy.readModels ? (this.readModels?.() ?? null) : null;
    const path = join(this.dir, snapshotFileName(seq));
    if (parts === null || existsSync(join(this.dir, checkpointFileName(seq)))) return;
    let header: SnapshotHeader | null;
    try {
      header = readSnapshotHeader(path);
    } catch {
      return;
    }
    if (header === null || header.seq !== seq) return;
    const written = await this.checkpoint(captureReadModels(parts), seq, header.stateHash);
    if (written !== null)
      this.log(`read models at seq ${seq} written beside snapshot ${path}: ${written.bytes} bytes`);
  }

  /** Stops following the host; a snapshot in progress is abandoned (its tmp file removed). */
  async close(): Promise<void> {
    this.closed = true;
    this.detach?.();
    await this.running;
  }
}
