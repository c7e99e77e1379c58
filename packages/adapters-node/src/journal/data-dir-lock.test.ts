/**
 * The lock file's durability steps, in order (docs/durability.md, "One venue per data
 * directory"): its content is fsynced under a temporary name before `link` makes it visible as
 * `LOCK` (a power loss must not leave a `LOCK` that exists but is empty), and the directory is
 * fsynced after the link. The file system calls are observed through a mock of `node:fs` that
 * calls the real functions.
 */
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { lockDataDir } from './data-dir-lock.js';

const trace = vi.hoisted(() => ({
  on: false,
  steps: [] as string[],
  /** The next refused link also removes `LOCK`: its holder released it right after. */
  releaseAfterRefusal: false,
}));

vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>();
  return {
    ...fs,
    fsyncSync: (fd: number): void => {
      if (trace.on) trace.steps.push(`fsync ${fs.readlinkSync(`/proc/self/fd/${fd}`)}`);
      fs.fsyncSync(fd);
    },
    linkSync: (from: string, to: string): void => {
      if (trace.on) trace.steps.push(`link ${from} -> ${to}`);
      try {
        fs.linkSync(from, to);
      } catch (e) {
        if (trace.releaseAfterRefusal) {
          trace.releaseAfterRefusal = false;
          fs.unlinkSync(to);
        }
        throw e;
      }
    },
  };
});

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('data directory lock on disk', () => {
  it('fsyncs the content before the link makes it LOCK, and the directory after', () => {
    const dir = mkdtempSync(join(tmpdir(), 'perp-lock-'));
    dirs.push(dir);
    const tmp = join(dir, `LOCK.${process.pid}.tmp`);
    trace.on = true;
    const lock = lockDataDir(dir, () => {});
    trace.on = false;
    expect(trace.steps).toEqual([
      `fsync ${tmp}`,
      `link ${tmp} -> ${join(dir, 'LOCK')}`,
      `fsync ${dir}`,
    ]);
    lock.release();
  });
});

describe('the lock file', () => {
  function tempDir(): string {
    const d = mkdtempSync(join(tmpdir(), 'perp-lock-'));
    dirs.push(d);
    return d;
  }
  /** Field 22 of /proc/<pid>/stat: the process start time, counted after the command name. */
  function startTime(pid: number): string {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] as string;
  }

  it('holds pid, host and process start time, and leaves no temporary file', () => {
    const dir = tempDir();
    const lock = lockDataDir(dir, () => {});
    expect(readdirSync(dir)).toEqual(['LOCK']);
    const content = JSON.parse(readFileSync(join(dir, 'LOCK'), 'utf8'));
    expect(content).toMatchObject({
      pid: process.pid,
      host: hostname(),
      started: startTime(process.pid),
    });
    lock.release();
    expect(readdirSync(dir)).toEqual([]);
  });

  it('a live pid with another start time is a reused pid: the lock is stale', () => {
    const dir = tempDir();
    const file = join(dir, 'LOCK');
    // The owner died and its pid now belongs to another process (after a reboot, say).
    writeFileSync(
      file,
      JSON.stringify({ pid: process.ppid, host: hostname(), started: '1', time: 'then' }),
    );
    const lines: string[] = [];
    const lock = lockDataDir(dir, (l) => lines.push(l));
    expect(lines).toEqual([
      `data directory lock ${file}: taking over a stale lock of pid ${process.ppid} (since then), a venue that did not exit cleanly`,
    ]);
    lock.release();
    // Where start times are unknown, a lock naming this very process is one it left (it holds none).
    writeFileSync(
      file,
      JSON.stringify({ pid: process.pid, host: hostname(), started: null, time: 'then' }),
    );
    lockDataDir(dir, () => {}).release();
    expect(existsSync(file)).toBe(false);
  });

  it('a lock released between the refused link and its read is taken at the next attempt', () => {
    const dir = tempDir();
    const other = JSON.stringify({ pid: 1, host: 'elsewhere', started: null, time: 'earlier' });
    writeFileSync(join(dir, 'LOCK'), other);
    trace.releaseAfterRefusal = true;
    const lock = lockDataDir(dir, () => {});
    expect(trace.releaseAfterRefusal).toBe(false);
    expect(JSON.parse(readFileSync(join(dir, 'LOCK'), 'utf8'))).toMatchObject({
      pid: process.pid,
    });
    lock.release();
  });

  it('release leaves a lock another venue took over in the meantime', () => {
    const dir = tempDir();
    const file = join(dir, 'LOCK');
    const lock = lockDataDir(dir, () => {});
    const theirs = JSON.stringify({ pid: 1, host: hostname(), started: null, time: 'now' });
    writeFileSync(file, theirs);
    lock.release();
    expect(readFileSync(file, 'utf8')).toBe(theirs);
  });

  it('release is once: a second call leaves a later lock of this process alone', () => {
    const dir = tempDir();
    const file = join(dir, 'LOCK');
    // Same pid and same time: the later lock's content equals the first one's.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.parse('2026-01-02T03:04:05.678Z') });
    try {
      const first = lockDataDir(dir, () => {});
      first.release();
      const second = lockDataDir(dir, () => {});
      first.release();
      expect(existsSync(file)).toBe(true);
      second.release();
      expect(existsSync(file)).toBe(false);
    } finally {
      vi.useRealTimers();
    }
  });

  it('an unreadable or pid-less lock is taken over only when written before this boot (btime)', () => {
    const dir = tempDir();
    const file = join(dir, 'LOCK');
    const boot = Number(/^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'))?.[1]) * 1000;
    for (const content of ['', '{"pid":"7"}']) {
      writeFileSync(file, content);
      // A minute after boot: a venue of this boot may be writing it.
      utimesSync(file, new Date(boot + 60_000), new Date(boot + 60_000));
      expect(() => lockDataDir(dir, () => {})).toThrow(/the lock file exists but is unreadable/);
      utimesSync(file, new Date(boot - 60_000), new Date(boot - 60_000));
      const lines: string[] = [];
      lockDataDir(dir, (l) => lines.push(l)).release();
      expect(lines).toEqual([
        `data directory lock ${file}: taking over an unreadable lock written before this machine booted`,
      ]);
    }
  });
});
