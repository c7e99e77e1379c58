/**
 * `--archive-journal`: moves the journal records a snapshot covers out of a stopped venue's
 * `journal.log`, so the journal on disk stops growing with history.
 *
 * A start from a snapshot reads only the records after it, and its read-model checkpoint holds
 * the history before it. The records before it are needed only by a full replay
 * (`--no-snapshots`), a start from an older snapshot, and a history backfill without the
 * checkpoint. This command copies records `F..S-1` (`F` the journal's first seq, `S` the seq of
 * the snapshot a start recovers from) byte for byte into `journal-<F>-<S-1>.log`, then replaces
 * `journal.log` with the records from `S` on (the record the snapshot names stays, so the journal
 * always shows where it starts). Concatenating the archive files and `journal.log` in seq order
 * gives back the journal as it was. A start then accepts a journal that begins at `F > 1` only
 * from a snapshot at `F-1` or later, and refuses anything that would need the archived records
 * with {@link RecordsArchivedError}.
 *
 * The venue must be stopped: the command takes the data directory's `LOCK`, runs the read-only
 * check (`data-dir-check.ts`) and proceeds only if a start would succeed from a snapshot whose
 * read-model checkpoint is usable, and the records that would leave are whole. Every step is a whole-file write renamed into place after an
 * fsync, so a crash at any point leaves either the old journal or the new one, and running the
 * command again finishes the job.
 *
 * @module
 */
import {
  closeSync,
  existsSync,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  renameSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { VenueConfig } from './config.js';
import { checkDataDir } from './data-dir-check.js';
import { copyRange, FileSource, forEachPiece } from './journal/byte-source.js';
import { lockDataDir } from './journal/data-dir-lock.js';
import {
  archiveFileName,
  crc32,
  JournalCorruptError,
  recordEndAt,
  recordOffset,
  syncDirectory,
  walkSkipped,
} from './journal/file-journal.js';
import { readSnapshotHeader } from './journal/snapshots.js';
import { StartupError } from './startup-error.js';

/** Options of {@link archiveJournal}. */
export interface ArchiveJournalOptions {
  /** Where the archive file goes (created if needed); default: the data directory itself. */
  readonly to?: string;
  /** The config a start would run with (the check reads `chain.json` against it). */
  readonly config?: VenueConfig;
  /** Lines for the operator (a stale lock taken over). */
  readonly log?: (line: string) => void;
}

/** What {@link archiveJournal} did. */
export interface ArchiveJournalResult {
  /** The archive file written (or found already written), `null` when there was nothing to move. */
  readonly archive: string | null;
  /** Seqs of the records moved (`lastSeq < firstSeq`: none). */
  readonly firstSeq: number;
  readonly lastSeq: number;
  /** Bytes moved. */
  readonly bytes: number;
  /** The snapshot whose seq bounds what was moved. */
  readonly snapshot: string;
  /** `journal.log` afterwards: its first seq and size. */
  readonly journal: { readonly file: string; readonly firstSeq: number; readonly bytes: number };
}

/** A refusal of {@link archiveJournal}: nothing was changed. */
export class ArchiveRefusedError extends StartupError {}

/** Writes bytes `[from, to)` of `fd` to `path` through `path.tmp`, durably, then renames it. */
function writeRangeAs(fd: number, from: number, to: number, path: string): void {
  const tmp = `${path}.tmp`;
  const out = openSync(tmp, 'w');
  try {
    const copied = copyRange(fd, from, to, out);
    if (copied !== to - from)
      throw new Error(`reading the journal ended at byte ${from + copied} of ${to}`);
    fsyncSync(out);
  } finally {
    closeSync(out);
  }
  renameSync(tmp, path);
  syncDirectory(dirname(path));
}

/** CRC-32 of bytes `[from, to)` of `fd`. */
function crcOfRange(fd: number, from: number, to: number): number {
  let crc = 0;
  const read = forEachPiece(fd, from, to, (piece) => {
    crc = crc32(piece, crc);
  });
  if (read !== to - from) throw new Error(`a file ended at byte ${from + read}, before ${to}`);
  return crc;
}

/**
 * Moves the records before the recovering snapshot out of `<dir>/journal.log` (see the module
 * comment). Throws {@link ArchiveRefusedError} (or the lock's `DataDirLockedError`) without
 * changing anything when the venue runs, a start would fail, or the history before the snapshot
 * has no usable read-model checkpoint.
 */
export function archiveJournal(
  dir: string,
  options: ArchiveJournalOptions = {},
): ArchiveJournalResult {
  const root = resolve(dir);
  const journalPath = join(root, 'journal.log');
  if (!existsSync(journalPath))
    throw new ArchiveRefusedError(`${journalPath} does not exist: nothing to archive`);
  const lock = lockDataDir(root, options.log ?? (() => {}));
  try {
    const report = checkDataDir(root, {
      lockHeld: true,
      ...(options.config === undefined ? {} : { config: options.config }),
    });
    if (!report.ok)
      throw new ArchiveRefusedError(
        `a start on ${root} would fail, so nothing was archived (pnpm start --check --data ${root} says more): ${report.problems.join('; ')}`,
      );
    const recovery = report.recovery;
    const first = report.journal.firstSeq;
    if (recovery === null || recovery.snapshot === null || first === null)
      throw new ArchiveRefusedError(
        `${root} has no valid snapshot: a start replays the whole journal, so no record can be archived (start the venue and stop it with SIGTERM: it writes a snapshot)`,
      );
    if (recovery.readModels?.source !== 'checkpoint')
      throw new ArchiveRefusedError(
        `the read models before ${recovery.snapshot} would be rebuilt from the journal (${recovery.readModels?.reason ?? 'no checkpoint'}), so its records cannot be archived without losing that history: start the venue with read-model checkpoints on, let its history backfill complete, and stop it with SIGTERM (it writes a snapshot with its checkpoint), then archive`,
      );
    const keepFrom = recovery.snapshotSeq;
    const last = keepFrom - 1;
    const fd = openSync(journalPath, 'r');
    try {
      const size = fstatSync(fd).size;
      if (last < first)
        return {
          archive: null,
          firstSeq: first,
          lastSeq: last,
          bytes: 0,
          snapshot: recovery.snapshot,
          journal: { file: journalPath, firstSeq: first, bytes: size },
        };
      const src = new FileSource(fd, size);
      // Where record S starts: where the snapshot says, or by following the records' lengths
      // (after an earlier archive the recorded position is stale). No offsets are held: a
      // day's journal at 1,000 commands/s is some 86 million records.
      const position = readSnapshotHeader(recovery.snapshot)?.journal;
      const cut =
        position !== undefined && recordEndAt(src, keepFrom, position) !== undefined
          ? position.offset
          : recordOffset(src, first, keepFrom);
      if (cut === undefined)
        throw new ArchiveRefusedError(
          `${journalPath}: record ${keepFrom}, which ${recovery.snapshot} covers last, was not found in it`,
        );
      // The records that leave must be whole: damage among them (which a start from the
      // snapshot never reads, so the check only notes it) would be archived for good.
      try {
        for (const _ of walkSkipped(journalPath, src, { first, seq: last, end: cut }, last)) {
          // Checked, not decoded: the walk yields nothing at or before `last`.
        }
      } catch (e) {
        if (!(e instanceof JournalCorruptError)) throw e;
        throw new ArchiveRefusedError(
          `${e.message}; nothing was archived: restore journal.log from a backup whose records are whole`,
        );
      }

      let leaving: number | undefined;
      /** CRC-32 of the bytes that leave journal.log (read once). */
      const leavingCrc = (): number => {
        leaving ??= crcOfRange(fd, 0, cut);
        return leaving;
      };
      const toDir = options.to === undefined ? root : resolve(options.to);
      mkdirSync(toDir, { recursive: true });
      const archive = join(toDir, archiveFileName(first, last));
      if (existsSync(archive)) {
        // Written by an earlier run that stopped before the journal was rewritten: the same
        // bytes are there already. Anything else is not ours to overwrite.
        const existing = openSync(archive, 'r');
        try {
          const same =
            fstatSync(existing).size === cut && crcOfRange(existing, 0, cut) === leavingCrc();
          if (!same)
            throw new ArchiveRefusedError(
              `${archive} exists and does not hold records ${first}..${last} of ${journalPath}: move it away (it may be another venue's) and archive again`,
            );
        } finally {
          closeSync(existing);
        }
      } else {
        writeRangeAs(fd, 0, cut, archive);
      }
      // Read back before the records leave journal.log: the same bytes as the journal's.
      const written = openSync(archive, 'r');
      try {
        if (fstatSync(written).size !== cut || crcOfRange(written, 0, cut) !== leavingCrc())
          throw new Error(
            `${archive} does not read back as the journal's first ${cut} bytes: journal.log was left as it was`,
          );
      } finally {
        closeSync(written);
      }
      writeRangeAs(fd, cut, size, journalPath);
      return {
        archive,
        firstSeq: first,
        lastSeq: last,
        bytes: cut,
        snapshot: recovery.snapshot,
        journal: { file: journalPath, firstSeq: keepFrom, bytes: size - cut },
      };
    } finally {
      closeSync(fd);
    }
  } finally {
    lock.release();
  }
}

/** The result as lines for the operator. */
export function formatArchiveResult(r: ArchiveJournalResult): string {
  if (r.archive === null)
    return `nothing to archive: ${r.journal.file} begins at seq ${r.journal.firstSeq}, the record ${r.snapshot} covers last (${r.journal.bytes} bytes)\n`;
  return [
    `archived journal records ${r.firstSeq}..${r.lastSeq} (${r.bytes} bytes) to ${r.archive}`,
    `${r.journal.file} now begins at seq ${r.journal.firstSeq} (${r.journal.bytes} bytes); a start recovers from ${r.snapshot}`,
    'keep the archive with the backups: a start without snapshots, from an older snapshot, or without its read-model checkpoint needs it (put it back in front of journal.log: docs/durability.md, "Archiving the journal")',
    '',
  ].join('\n');
}
