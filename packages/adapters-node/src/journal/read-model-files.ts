/**
 * Read-model checkpoint files beside the snapshots (`read/checkpoint.ts`, docs/durability.md,
 * "Read models after a snapshot restart").
 *
 * A file `readmodels-<seq, 20 digits>.ckpt` holds the read models as they were right after
 * journal record `seq`, the seq of the snapshot written in the same turn. Like a snapshot file
 * it has a header line (JSON: format, version, seq, the snapshot's state hash, each part's
 * version, body length and CRC-32; padded with spaces to 512 bytes) and a body: one line per
 * entry, `[part name, entry]`, the entries in the compact form of `compact-json.ts` (one
 * encoder for the file: a shape or long string is written once, then referred to by number). It is written in slices between the engine's
 * batches to a temporary file, fsynced, renamed into place and the directory fsynced, so a crash
 * leaves either no file or a whole one.
 *
 * It only saves time: a restart whose snapshot has no checkpoint, or one that fails a check
 * (header, length, CRC, decoding, the snapshot's seq and hash, each part's version, an entry a
 * part refuses), logs why and rebuilds the read models with the history backfill instead.
 *
 * @module
 */
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { open, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { crc32 } from 'node:zlib';
import type { CheckpointPart, PartRestorer, ReadModelCapture } from '../read/checkpoint.js';
import { CompactDecoder, CompactEncoder } from './compact-json.js';
import { BlockFileWriter, syncDir } from './durable-write.js';

const FORMAT = 'perp-read-models';
const VERSION = 1;
const HEADER_BLOCK = 512;
const NAME_RE = /^readmodels-(\d{20})\.ckpt$/;
const TMP_RE = /^readmodels-\d{20}\.ckpt\.tmp$/;

/** The header line of a checkpoint file. */
export interface CheckpointHeader {
  readonly format: typeof FORMAT;
  readonly version: number;
  /** Journal seq of the last record the read models include: their snapshot's seq. */
  readonly seq: number;
  /** `stateHash` of the snapshot's state. */
  readonly stateHash: string;
  /** Each part's entry version, by name. */
  readonly parts: Readonly<Record<string, number>>;
  readonly bodyBytes: number;
  readonly bodyCrc32: number;
}

/** File name of the checkpoint at `seq`. */
export function checkpointFileName(seq: number): string {
  return `readmodels-${String(seq).padStart(20, '0')}.ckpt`;
}

/** Checkpoint files of a directory, newest first. */
export function listCheckpointFiles(dir: string): { path: string; seq: number }[] {
  const out: { path: string; seq: number }[] = [];
  for (const name of readdirSync(dir)) {
    const m = NAME_RE.exec(name);
    if (m !== null) out.push({ path: join(dir, name), seq: Number(m[1]) });
  }
  return out.sort((a, b) => b.seq - a.seq);
}

/** Deletes the temporary files of checkpoint writes a crash interrupted; returns their names. */
export function removeUnfinishedCheckpoints(dir: string): string[] {
  const removed: string[] = [];
  for (const name of readdirSync(dir)) {
    if (!TMP_RE.test(name)) continue;
    rmSync(join(dir, name), { force: true });
    removed.push(name);
  }
  return removed;
}

/** Deletes the checkpoints whose snapshot is gone (`keep`: the seqs of the snapshots kept). */
export async function pruneCheckpoints(dir: string, keep: ReadonlySet<number>): Promise<void> {
  for (const f of listCheckpointFiles(dir)) if (!keep.has(f.seq)) await rm(f.path, { force: true });
}

/** Captures of every part, started in one turn: what a checkpoint file is written from. */
export interface CheckpointCapture {
  readonly parts: readonly CheckpointPart[];
  readonly captures: readonly ReadModelCapture[];
}

/** Starts a capture of every part now (call in the turn the snapshot's state is taken). */
export function captureReadModels(parts: readonly CheckpointPart[]): CheckpointCapture {
  const captures: ReadModelCapture[] = [];
  try {
    for (const p of parts) captures.push(p.capture());
  } catch (e) {
    for (const c of captures) c.release();
    throw e;
  }
  return { parts, captures };
}

/** Options of {@link writeCheckpointFile}. */
export interface CheckpointWrite {
  readonly dir: string;
  readonly seq: number;
  readonly stateHash: string;
  readonly capture: CheckpointCapture;
  /** Longest one encoding slice holds the event loop, ms. */
  readonly sliceMs: () => number;
  /** Whether to give up (the venue is closing). */
  readonly abandoned: () => boolean;
  /** Replaces the temporary file's fsync (tests). */
  readonly sync?: (fd: number) => Promise<void>;
}

/**
 * Writes the captured read models to `readmodels-<seq>.ckpt` (see the module comment) and
 * releases the captures, whatever the outcome. Resolves with the path and file bytes; throws
 * when the write failed or was abandoned (its temporary file removed).
 */
export async function writeCheckpointFile(
  w: CheckpointWrite,
): Promise<{ path: string; bytes: number }> {
  const path = join(w.dir, checkpointFileName(w.seq));
  const tmp = `${path}.tmp`;
  const { parts, captures } = w.capture;
  try {
    const fh = await open(tmp, 'w');
    let bytes = 0;
    try {
      const body = new BlockFileWriter(fh, HEADER_BLOCK);
      const encoder = new CompactEncoder();
      for (const [i, part] of parts.entries()) {
        const entries = (captures[i] as ReadModelCapture).entries()[Symbol.iterator]();
        const prefix = `[${JSON.stringify(part.name)},`;
        for (let done = false; !done; ) {
          const until = performance.now() + w.sliceMs();
          do {
            const next = entries.next();
            if (next.done === true) done = true;
            // Encoded in the turn it was yielded: an entry from live rows holds until then.
            else body.add(`${prefix}${encoder.encode(next.value)}]\n`);
          } while (!done && !body.full && performance.now() < until);
          if (body.full) await body.flush();
          else if (!done) await yieldToLoop();
          if (w.abandoned()) throw new Error('the venue is closing');
        }
      }
      await body.finish(
        (b): CheckpointHeader => ({
          format: FORMAT,
          version: VERSION,
          seq: w.seq,
          stateHash: w.stateHash,
          parts: Object.fromEntries(parts.map((p) => [p.name, p.version])),
          bodyBytes: b.bytes,
          bodyCrc32: b.crc,
        }),
      );
      bytes = HEADER_BLOCK + body.bytes;
      if (w.sync !== undefined) await w.sync(fh.fd);
      else await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
    await syncDir(w.dir);
    return { path, bytes };
  } catch (e) {
    await rm(tmp, { force: true }).catch(() => {});
    throw e;
  } finally {
    for (const c of captures) c.release();
  }
}

/** The checkpoint a snapshot's read models are restored from. */
export interface CheckpointSource {
  readonly dir: string;
  readonly snapshot: { readonly seq: number; readonly hash: string };
  readonly parts: readonly CheckpointPart[];
}

/** Restorers filled from a checkpoint and checked, ready to be fed later batches and committed. */
export interface LoadedCheckpoint {
  readonly restored: true;
  readonly path: string;
  readonly bytes: number;
  readonly entries: number;
  /** By part, in the order of {@link CheckpointSource.parts}. */
  readonly restorers: readonly PartRestorer[];
}

/** Why a checkpoint was not used (naming its file); nothing was changed. */
export interface RefusedCheckpoint {
  readonly restored: false;
  readonly reason: string;
}

/** Bytes of body checked (CRC) or entries decoded per step of {@link readCheckpoint}. */
const STEP_BYTES = 1 << 20;
/** Checkpoint files up to this size are read synchronously by {@link loadCheckpoint}. */
const SYNC_READ_BYTES = 1 << 20;
const STEP_ENTRIES = 256;

/**
 * Reads and checks a checkpoint into fresh restorers, one bounded step per iteration (a CRC over
 * 1 MB, or 256 entries), so a caller can spread it over event-loop turns; its return value is
 * the outcome. Nothing is committed.
 */
function* readCheckpoint(
  source: CheckpointSource,
  data: Buffer,
): Generator<void, LoadedCheckpoint | RefusedCheckpoint> {
  const { snapshot, parts } = source;
  const path = join(source.dir, checkpointFileName(snapshot.seq));
  const no = (reason: string): RefusedCheckpoint => ({
    restored: false,
    reason: `${path}: ${reason}`,
  });
  const nl = data.indexOf(10);
  if (nl < 0) return no('no header line');
  let header: CheckpointHeader;
  try {
    header = JSON.parse(data.toString('utf8', 0, nl)) as CheckpointHeader;
  } catch {
    return no('the header is not JSON');
  }
  if (header === null || typeof header !== 'object' || header.format !== FORMAT)
    return no('not a read-model checkpoint');
  if (header.version !== VERSION) return no(`file version ${String(header.version)}`);
  if (header.seq !== snapshot.seq || header.stateHash !== snapshot.hash)
    return no(
      `taken at seq ${String(header.seq)} with state hash ${String(header.stateHash)}, not the snapshot's (seq ${snapshot.seq}, hash ${snapshot.hash})`,
    );
  const wanted = parts.map((p) => `${p.name} v${[...(p.reads ?? []), p.version].join('/v')}`);
  const written = Object.entries(header.parts ?? {});
  const readable =
    written.length === parts.length &&
    parts.every((p, i) => {
      const [name, v] = written[i] ?? [];
      return name === p.name && (v === p.version || (p.reads ?? []).includes(v as number));
    });
  if (!readable) {
    const has = written.map(([name, v]) => `${name} v${String(v)}`).join(', ');
    return no(`its parts are ${has}, this build reads ${wanted.join(', ')}`);
  }
  const body = data.subarray(nl + 1);
  if (body.length !== header.bodyBytes)
    return no(`body is ${body.length} bytes, the header says ${String(header.bodyBytes)}`);
  let crc = 0;
  for (let at = 0; at < body.length; at += STEP_BYTES) {
    crc = crc32(body.subarray(at, at + STEP_BYTES), crc);
    yield;
  }
  if (crc !== header.bodyCrc32) return no('body checksum mismatch');
  const restorers = parts.map((p) => p.restorer());
  const byName = new Map(parts.map((p, i) => [p.name, restorers[i] as PartRestorer]));
  const decoder = new CompactDecoder();
  let line = 0;
  try {
    for (let at = 0; at < body.length; line++) {
      const end = body.indexOf(10, at);
      if (end < 0) throw new Error('the last line has no end');
      const row: unknown = JSON.parse(body.toString('utf8', at, end));
      at = end + 1;
      const [name, entry] = Array.isArray(row) && row.length === 2 ? row : [];
      const restorer = typeof name === 'string' ? byName.get(name) : undefined;
      if (restorer === undefined) throw new Error('not [known part, entry]');
      restorer.add(decoder.decodeParsed(entry));
      if (line % STEP_ENTRIES === STEP_ENTRIES - 1) yield;
    }
  } catch (e) {
    return no(`entry ${line + 1}: ${(e as Error).message}`);
  }
  try {
    for (const r of restorers) r.check?.();
  } catch (e) {
    return no((e as Error).message);
  }
  return { restored: true, path, bytes: HEADER_BLOCK + body.length, entries: line, restorers };
}

/** The file's bytes, or why there are none. */
function fileProblem(e: unknown): string {
  return (e as NodeJS.ErrnoException).code === 'ENOENT'
    ? 'there is none'
    : `unreadable (${(e as Error).message})`;
}

/**
 * Reads and checks the checkpoint of `source.snapshot` in slices of at most `sliceMs` between
 * event-loop turns (the file read is asynchronous). Resolves with the restorers, filled and
 * checked but not committed, or with why not; `null` when `cancelled` said to stop.
 */
export async function loadCheckpoint(
  source: CheckpointSource,
  options: { readonly sliceMs: number; readonly cancelled: () => boolean },
): Promise<LoadedCheckpoint | RefusedCheckpoint | null> {
  const path = join(source.dir, checkpointFileName(source.snapshot.seq));
  let data: Buffer;
  try {
    // A small file is read at once (well under a slice), so a small venue's read models are
    // complete by the time its first clients subscribe; a large one without holding the loop.
    data = statSync(path).size <= SYNC_READ_BYTES ? readFileSync(path) : await readFile(path);
  } catch (e) {
    return { restored: false, reason: `${path}: ${fileProblem(e)}` };
  }
  const steps = readCheckpoint(source, data);
  for (;;) {
    const until = performance.now() + options.sliceMs;
    let next = steps.next();
    while (next.done !== true && performance.now() < until) next = steps.next();
    if (next.done === true) return next.value;
    await yieldToLoop();
    if (options.cancelled()) return null;
  }
}

/**
 * Reads and checks the checkpoint of `source.snapshot` at once, as a start's backfill would, and
 * commits nothing: the restorers are left filled (`--check`, tests).
 */
export function checkCheckpoint(source: CheckpointSource): LoadedCheckpoint | RefusedCheckpoint {
  const path = join(source.dir, checkpointFileName(source.snapshot.seq));
  let data: Buffer;
  try {
    data = readFileSync(path);
  } catch (e) {
    return { restored: false, reason: `${path}: ${fileProblem(e)}` };
  }
  const steps = readCheckpoint(source, data);
  let next = steps.next();
  while (next.done !== true) next = steps.next();
  return next.value;
}
