/**
 * One venue per data directory. Two venues on one directory both append to `journal.log` with
 * their own seqs and both acknowledge: the file then holds two records with the same seq, and
 * the next start refuses it as damaged, after both venues told clients their requests were
 * durable. `startVenue` therefore takes `<data>/LOCK` before it opens anything.
 *
 * The lock file is created atomically with its content (written to a temporary name and
 * fsynced, then `link`ed to `LOCK`, which fails if it exists, and the directory fsynced) and holds the owner's pid, host and process
 * start time (`/proc/<pid>/stat`, field 22, so a pid reused by another process after a reboot
 * is not mistaken for the owner). It is removed when the process exits; a lock left by a
 * process that died (SIGKILL, power loss) is stale and is taken over with a log line. A lock
 * held by a live process, or by another host (which cannot be checked from here), refuses the
 * start with the lock file, the owner and what to do.
 *
 * Limits: two processes that find the same stale lock at the same moment can both take it over
 * (the check and the removal are two steps); the window is a few microseconds, once, after a
 * crash. Processes in different pid namespaces sharing the directory see each other as dead:
 * give each venue its own data directory.
 *
 * @module
 */
import {
  closeSync,
  fsyncSync,
  linkSync,
  openSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { syncDirectory } from './file-journal.js';

/** Raised when the data directory is in use, or cannot be locked. */
export class DataDirLockedError extends Error {
  override readonly name = 'DataDirLockedError';
  readonly file: string;

  constructor(file: string, detail: string) {
    super(`data directory lock ${file}: ${detail}`);
    this.file = file;
  }
}

/** What a `LOCK` file holds. */
export interface LockContent {
  readonly pid: number;
  readonly host: string;
  /** Start time of the process in clock ticks since boot (Linux), null when unknown. */
  readonly started: string | null;
  readonly time: string;
}

/** Start time of a process (field 22 of `/proc/<pid>/stat`), or null off Linux / when gone. */
function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may contain spaces: count after it.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

/** When this machine booted, ms since the epoch (`btime` of `/proc/stat`), or null off Linux. */
function bootTime(): number | null {
  try {
    const m = /^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'));
    return m === null ? null : Number(m[1]) * 1000;
  } catch {
    return null;
  }
}

/**
 * Whether an unreadable lock file was written before this machine booted: no venue of this boot
 * holds it. A power loss can leave the link of a lock without its content on some file systems.
 */
function fromBeforeBoot(file: string): boolean {
  const boot = bootTime();
  if (boot === null) return false;
  try {
    return statSync(file).mtimeMs < boot;
  } catch {
    return false;
  }
}

/** Writes `text` to `path` and fsyncs it. */
function writeSynced(path: string, text: string): void {
  const fd = openSync(path, 'w');
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function unreadableLock(file: string): DataDirLockedError {
  return new DataDirLockedError(
    file,
    'the lock file exists but is unreadable; if no venue runs on this directory, delete it and start again',
  );
}

/** What a `LOCK` file says about the data directory, read without changing anything. */
export type LockInspection =
  | { readonly state: 'absent' }
  /** Unreadable, and written before this machine booted: no venue of this boot holds it. */
  | { readonly state: 'unreadable-before-boot' }
  /** Left by a venue of this host that is no longer running: a start takes it over. */
  | { readonly state: 'stale'; readonly owner: LockContent }
  /** A start is refused with `refusal` (a live venue, another host, an unreadable file). */
  | { readonly state: 'held'; readonly refusal: DataDirLockedError };

/**
 * What the lock file `file` means for a start on `host` (this machine): whether the start would
 * take it over or be refused, and with which error. Reads only; `lockDataDir` acts on it, and
 * `--check` reports it.
 */
export function inspectLock(file: string, host = hostname()): LockInspection {
  let owner: LockContent | null = null;
  try {
    owner = JSON.parse(readFileSync(file, 'utf8')) as LockContent;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { state: 'absent' };
    owner = null;
  }
  if (owner === null || typeof owner.pid !== 'number') {
    if (fromBeforeBoot(file)) return { state: 'unreadable-before-boot' };
    return { state: 'held', refusal: unreadableLock(file) };
  }
  const since = `since ${owner.time}`;
  if (owner.host !== host) {
    return {
      state: 'held',
      refusal: new DataDirLockedError(
        file,
        `held by pid ${owner.pid} on host ${owner.host} (${since}); another venue may be using this directory. If none runs there, delete the lock file and start again`,
      ),
    };
  }
  const ownerRuns =
    alive(owner.pid) &&
    (owner.started === null || processStart(owner.pid) === null
      ? owner.pid !== process.pid
      : processStart(owner.pid) === owner.started);
  if (ownerRuns) {
    return {
      state: 'held',
      refusal: new DataDirLockedError(
        file,
        `another venue (pid ${owner.pid}, ${since}) is using this data directory; stop it first (two venues on one journal corrupt it)`,
      ),
    };
  }
  return { state: 'stale', owner };
}

/** A held lock. */
export interface DataDirLock {
  readonly file: string;
  /** Removes the lock file (idempotent; only while it is still this process's). */
  release(): void;
}

/**
 * Takes the lock of `dir` (which must exist) or throws {@link DataDirLockedError}. `log`
 * reports a stale lock taken over.
 */
export function lockDataDir(dir: string, log: (line: string) => void): DataDirLock {
  const file = join(dir, 'LOCK');
  const mine: LockContent = {
    pid: process.pid,
    host: hostname(),
    started: processStart(process.pid),
    time: new Date().toISOString(),
  };
  const text = `${JSON.stringify(mine)}\n`;
  const tmp = join(dir, `LOCK.${process.pid}.tmp`);
  const tryLink = (): boolean => {
    try {
      // Content on disk before the link makes it visible: a power loss must not leave a LOCK
      // that exists but is empty.
      writeSynced(tmp, text);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      throw new DataDirLockedError(
        file,
        `cannot write in the data directory (${code ?? (e as Error).message}): the venue needs a writable data directory for its journal`,
      );
    }
    try {
      linkSync(tmp, file);
      syncDirectory(dir);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw new DataDirLockedError(
        file,
        `cannot create it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
      );
    } finally {
      try {
        unlinkSync(tmp);
      } catch {
        // Already gone.
      }
    }
  };
  for (let attempt = 0; attempt < 2; attempt++) {
    if (tryLink()) {
      let held = true;
      return {
        file,
        release() {
          if (!held) return;
          held = false;
          try {
            if (readFileSync(file, 'utf8') === text) unlinkSync(file);
          } catch {
            // Gone already.
          }
        },
      };
    }
    const found = inspectLock(file, mine.host);
    // Released between the refused link and the read: the next attempt links it.
    if (found.state === 'absent') continue;
    if (found.state === 'unreadable-before-boot') {
      log(
        `data directory lock ${file}: taking over an unreadable lock written before this machine booted`,
      );
      try {
        unlinkSync(file);
      } catch {
        // Someone else removed it; the next attempt decides.
      }
      continue;
    }
    if (found.state !== 'stale') throw found.refusal;
    log(
      `data directory lock ${file}: taking over a stale lock of pid ${found.owner.pid} (since ${found.owner.time}), a venue that did not exit cleanly`,
    );
    try {
      unlinkSync(file);
    } catch {
      // Someone else removed it; the next attempt decides.
    }
  }
  throw new DataDirLockedError(file, 'another venue took the lock while this one started');
}
