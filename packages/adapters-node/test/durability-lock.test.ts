/**
 * One venue per data directory. Probe that found it: two CLIs started on one data directory
 * both came up and both acknowledged oracle updates; the journal then held two records with
 * seq 6 and the next start failed with `sequence gap: expected seq 7, found 6`.
 *
 * Needs the built CLI (`npx tsc -b`).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { DataDirLockedError, lockDataDir } from '../src/journal/data-dir-lock.js';
import { StartupError } from '../src/startup-error.js';
import { startVenue } from '../src/venue.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'perp-dur-lock-'));
  dirs.push(d);
  return d;
}
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Starts the CLI; resolves with the process once it printed its ready line. */
function startCli(dir: string): Promise<ChildProcess> {
  const proc = spawn(
    process.execPath,
    [CLI, '--json', '--port', '0', '--data', dir, '--price-feed', 'none', '--verify-workers', '0'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.push(proc);
  return new Promise((resolve, reject) => {
    let err = '';
    proc.stderr?.on('data', (d: Buffer) => {
      err += d.toString();
    });
    proc.stdout?.once('data', () => resolve(proc));
    proc.once('exit', (code) => reject(new Error(`exited ${code}: ${err}`)));
  });
}

/** Runs the CLI to completion (it is expected to refuse to start). */
function runCli(dir: string): { status: number | null; stderr: string; stdout: string } {
  const r = spawnSync(
    process.execPath,
    [CLI, '--json', '--port', '0', '--data', dir, '--price-feed', 'none', '--verify-workers', '0'],
    { encoding: 'utf8', timeout: 20_000 },
  );
  return { status: r.status, stderr: r.stderr, stdout: r.stdout };
}

function exited(proc: ChildProcess): Promise<number | null> {
  if (proc.exitCode !== null) return Promise.resolve(proc.exitCode);
  return new Promise((resolve) => proc.once('exit', (code) => resolve(code)));
}

describe('data directory lock', () => {
  it('a second CLI on a data directory in use refuses to start, naming the lock and its owner', async () => {
    const dir = tempDir();
    const first = await startCli(dir);
    const second = runCli(dir);
    expect(second.status).toBe(1);
    expect(second.stdout).toBe('');
    expect(second.stderr).toContain(
      `data directory lock ${join(dir, 'LOCK')}: another venue (pid ${first.pid}`,
    );
    first.kill('SIGTERM');
    expect(await exited(first)).toBe(0);
    // A clean exit removes the lock; the next start takes it.
    expect(existsSync(join(dir, 'LOCK'))).toBe(false);
    const third = await startCli(dir);
    third.kill('SIGTERM');
    expect(await exited(third)).toBe(0);
  }, 60_000);

  it('a lock left by a killed venue is stale: the next start takes it over with a log line', async () => {
    const dir = tempDir();
    const first = await startCli(dir);
    first.kill('SIGKILL');
    await exited(first);
    expect(existsSync(join(dir, 'LOCK'))).toBe(true);
    const lines: string[] = [];
    const lock = lockDataDir(dir, (l) => lines.push(l));
    expect(lines[0]).toContain(`taking over a stale lock of pid ${first.pid}`);
    expect(JSON.parse(readFileSync(join(dir, 'LOCK'), 'utf8')).pid).toBe(process.pid);
    lock.release();
    expect(existsSync(join(dir, 'LOCK'))).toBe(false);
  }, 60_000);

  it('an embedded venue (startVenue) holds the lock too, until close; a failed start releases it', async () => {
    const dir = tempDir();
    const open = () => startVenue({ dataDir: dir, port: 0, priceFeed: 'none', log: () => {} });
    const first = await open();
    await expect(open()).rejects.toBeInstanceOf(DataDirLockedError);
    await first.close();
    expect(existsSync(join(dir, 'LOCK'))).toBe(false);
    // A start refused after the lock was taken (a damaged venue.json) leaves no lock behind.
    writeFileSync(join(dir, 'venue.json'), 'not json');
    await expect(open()).rejects.toThrow(StartupError);
    expect(existsSync(join(dir, 'LOCK'))).toBe(false);
  });

  it('an unreadable lock from before this boot (a power loss) is taken over; a fresh one is not', () => {
    const dir = tempDir();
    const file = join(dir, 'LOCK');
    writeFileSync(file, '');
    expect(() => lockDataDir(dir, () => {})).toThrow(/the lock file exists but is unreadable/);
    utimesSync(file, new Date(0), new Date(0));
    const lines: string[] = [];
    const lock = lockDataDir(dir, (l) => lines.push(l));
    expect(lines).toEqual([
      `data directory lock ${file}: taking over an unreadable lock written before this machine booted`,
    ]);
    expect(JSON.parse(readFileSync(file, 'utf8')).pid).toBe(process.pid);
    lock.release();
  });

  it('in one process: held until released; another host is never taken over', () => {
    const dir = tempDir();
    const lock = lockDataDir(dir, () => {});
    expect(() => lockDataDir(dir, () => {})).toThrow(DataDirLockedError);
    lock.release();
    lockDataDir(dir, () => {}).release();
    writeFileSync(
      join(dir, 'LOCK'),
      JSON.stringify({ pid: 1, host: `${hostname()}-other`, started: null, time: 'then' }),
    );
    expect(() => lockDataDir(dir, () => {})).toThrow(/held by pid 1 on host .*-other/);
  });
});
