/**
 * Read-model checkpoint files beside the snapshots (`read/checkpoint.ts`, docs/durability.md,
 * "Read models after a snapshot restart").
 *
 * A file `readmodels-<seq, 20 digits>.ckpt` holds the read models as they were right after
 * journal record `seq`, the seq of the snapshot written in the same turn. Like a snapshot file
 * it has a header line (JSON: format, version, seq, the snapshot's state hash, each part's
 * version, body length and CRC-32; padded with spaces to 512 bytes) and a body: one line per
 * entry, `[part name, entry]` in `encodeJson`. It is written in slices between the engine's
 * batches to a temporary file, fsynced, renamed into place and the directory fsynced, so a crash
 * leaves either no file or a whole one.
 *
 * It only saves time: a restart whose snapshot has no checkpoint, or one that fails a check
 * (header, length, CRC, decoding, the snapshot's seq and hash, each part's version, an entry a
 * part refuses), logs why and rebuilds the read models with the history backfill instead.
 *
 * @module
 */
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { crc32 } from 'node:zlib';
import { decodeJson, encodeJson } from '@perp/core';
import type { CheckpointPart, ReadModelCapture } from '../read/checkpoint.js';
import { syncDir, writeFully } from './durable-write.js';

const FORMAT = 'perp-read-models';
const VERSION = 1;
const HEADER_BLOCK = 512;
const FLUSH_BYTES = 1 << 20;
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
 * releases the captures, whatever the outcome. Resolves with the path and body bytes; throws
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
    let crc = 0;
    try {
      let pending: string[] = [];
      let pendingChars = 0;
      const flush = async (): Promise<void> => {
        if (pendingChars === 0) return;
        const piece = Buffer.from(pending.join(''), 'utf8');
        pending = [];
        pendingChars = 0;
        crc = crc32(piece, crc);
        await writeFully(fh, piece, HEADER_BLOCK + bytes);
        bytes += piece.length;
      };
      for (const [i, part] of parts.entries()) {
        const entries = (captures[i] as ReadModelCapture).entries()[Symbol.iterator]();
        const prefix = `[${JSON.stringify(part.name)},`;
        for (let done = false; !done; ) {
          const until = performance.now() + w.sliceMs();
          do {
            const next = entries.next();
            if (next.done === true) done = true;
            else {
              // Encoded in the turn it was yielded: an entry from live rows holds until then.
              const line = `${prefix}${encodeJson(next.value)}]\n`;
              pending.push(line);
              pendingChars += line.length;
            }
          } while (!done && pendingChars < FLUSH_BYTES && performance.now() < until);
          if (pendingChars >= FLUSH_BYTES) await flush();
          else if (!done) await yieldToLoop();
          if (w.abandoned()) throw new Error('the venue is closing');
        }
      }
      await flush();
      const header: CheckpointHeader = {
        format: FORMAT,
        version: VERSION,
        seq: w.seq,
        stateHash: w.stateHash,
        parts: Object.fromEntries(parts.map((p) => [p.name, p.version])),
        bodyBytes: bytes,
        bodyCrc32: crc,
      };
      const line = JSON.stringify(header);
      if (line.length >= HEADER_BLOCK) throw new Error('checkpoint header does not fit its block');
      await writeFully(fh, Buffer.from(`${line.padEnd(HEADER_BLOCK - 1, ' ')}\n`, 'utf8'), 0);
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

/**
 * Restores `parts` from the checkpoint of the snapshot at `seq` with `stateHash`: every entry is
 * added aside and the parts are committed only when all of them were read. Returns `null` when
 * they were restored, otherwise why not (nothing was changed).
 */
export function restoreCheckpoint(
  dir: string,
  snapshot: { readonly seq: number; readonly hash: string },
  parts: readonly CheckpointPart[],
): { restored: true; path: string; bytes: number } | { restored: false; reason: string } {
  const path = join(dir, checkpointFileName(snapshot.seq));
  const no = (reason: string) => ({ restored: false as const, reason: `${path}: ${reason}` });
  let data: Buffer;
  try {
    data = readFileSync(path);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT'
      ? no('there is none')
      : no(`unreadable (${(e as Error).message})`);
  }
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
  const wanted = parts.map((p) => `${p.name} v${p.version}`).join(', ');
  const has = Object.entries(header.parts ?? {})
    .map(([name, v]) => `${name} v${String(v)}`)
    .join(', ');
  if (has !== wanted) return no(`its parts are ${has}, this build reads ${wanted}`);
  const body = data.subarray(nl + 1);
  if (body.length !== header.bodyBytes)
    return no(`body is ${body.length} bytes, the header says ${String(header.bodyBytes)}`);
  if (crc32(body) !== header.bodyCrc32) return no('body checksum mismatch');
  const restorers = new Map(parts.map((p) => [p.name, p.restorer()]));
  const text = body.toString('utf8');
  let line = 0;
  try {
    for (let at = 0; at < text.length; line++) {
      const end = text.indexOf('\n', at);
      if (end < 0) throw new Error('the last line has no end');
      const row = decodeJson<unknown>(text.slice(at, end));
      at = end + 1;
      const [name, entry] = Array.isArray(row) && row.length === 2 ? row : [];
      const restorer = typeof name === 'string' ? restorers.get(name) : undefined;
      if (restorer === undefined) throw new Error('not [known part, entry]');
      restorer.add(entry);
    }
  } catch (e) {
    return no(`entry ${line + 1}: ${(e as Error).message}`);
  }
  try {
    for (const r of restorers.values()) r.check?.();
  } catch (e) {
    return no((e as Error).message);
  }
  for (const r of restorers.values()) r.commit();
  return { restored: true, path, bytes: body.length };
}
