/**
 * `pnpm start --check` as an operator runs it (the built CLI as a child process): on a data
 * directory a venue wrote and stopped, then on the same directory with a damaged journal. Exit
 * status 0 when a start would succeed, 1 when not; nothing in the directory changes.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stateHash } from '@perp/core';
import { wallet } from '@perp/core/testing';
import { afterAll, expect, it } from 'vitest';
import { archiveFileName } from '../src/journal/file-journal.js';
import { startVenue } from '../src/venue.js';
import { fileListing } from './support/fixture.js';

const CLI = resolve(import.meta.dirname, '../dist/cli.js');
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function run(
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => {
    stdout += String(d);
  });
  child.stderr.on('data', (d) => {
    stderr += String(d);
  });
  // A check that started a venue instead would run on after the test gave up.
  const deadline = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(deadline);
  return { code, stdout, stderr };
}

it('--check: exit 0 and the report on a good directory, exit 1 naming the damage; nothing changes', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'perp-cli-check-'));
  dirs.push(dir);
  const venue = await startVenue({ dataDir: dir, port: 0, priceFeed: 'none', log: () => {} });
  for (let i = 0; i < 5; i++)
    await venue.context.host.submit({ type: 'openAccount', account: wallet(10 + i) });
  const seq = venue.context.host.journalSeq;
  const hash = stateHash(venue.context.host.state);
  await venue.close(); // a clean stop: a snapshot at seq

  const before = fileListing(dir);
  const text = await run(['--check', '--data', dir]);
  expect(text.code, text.stderr).toBe(0);
  expect(text.stdout).toContain(`data directory ${dir}: a start would succeed\n`);
  expect(text.stdout).toContain(`  ${seq} records (seq 1..${seq}), `);
  expect(text.stdout).toContain(`recovery: the snapshot at seq ${seq}, then 0 journal records\n`);

  const json = await run(['--check', '--replay', '--json', '--data', dir]);
  expect(json.code, json.stderr).toBe(0);
  const lines = json.stdout.trim().split('\n');
  expect(lines).toHaveLength(1);
  const report = JSON.parse(lines[0] as string);
  expect(report).toMatchObject({ ok: true, replay: { seq, hash }, journal: { lastSeq: seq } });
  expect(fileListing(dir)).toEqual(before);

  // A flipped byte in the first record. The snapshot covers it and says where its own last
  // record is, so a start does not read it: a note. A start without the snapshot would fail.
  const journal = join(dir, 'journal.log');
  const data = readFileSync(journal);
  data[20] = (data[20] as number) ^ 0x01;
  writeFileSync(journal, data);
  const damaged = fileListing(dir);
  const damage = `journal ${journal} is damaged at byte 0: record checksum mismatch (expected seq 1) (records up to seq ${seq}, which a snapshot covers, are checked only when read)`;
  const noted = await run(['--check', '--data', dir]);
  expect(noted.code, noted.stderr).toBe(0);
  expect(noted.stdout).toContain(`data directory ${dir}: a start would succeed\n`);
  expect(noted.stdout).toContain(`note: ${damage}: a start from the snapshot does not read it`);
  const refused = await run(['--check', '--no-snapshots', '--data', dir]);
  expect(refused.code, refused.stderr).toBe(1);
  expect(refused.stdout).toContain(`data directory ${dir}: a start would FAIL\n`);
  expect(refused.stdout).toContain(`  problem: ${damage}\n`);
  expect(fileListing(dir)).toEqual(damaged);

  // Not with --memory: a usage error, status 2.
  const memory = await run(['--check', '--memory']);
  expect(memory.code).toBe(2);
  expect(memory.stderr).toContain(
    '--check reads a data directory (--data <dir>): not with --memory',
  );
});

it('--archive-journal: moves the covered records, exit 1 changing nothing while the venue runs', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'perp-cli-archive-'));
  const cold = mkdtempSync(join(tmpdir(), 'perp-cli-cold-'));
  dirs.push(dir, cold);
  let venue = await startVenue({ dataDir: dir, port: 0, priceFeed: 'none', log: () => {} });
  for (let i = 0; i < 5; i++)
    await venue.context.host.submit({ type: 'openAccount', account: wallet(10 + i) });
  const seq = venue.context.host.journalSeq;
  await venue.close(); // a clean stop: a snapshot at seq, with its read-model checkpoint

  // While a venue holds the directory: refused, nothing changed.
  venue = await startVenue({ dataDir: dir, port: 0, priceFeed: 'none', log: () => {} });
  const running = fileListing(dir);
  const refused = await run(['--archive-journal', '--data', dir]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(/^archive failed: data directory lock .*LOCK/);
  expect(fileListing(dir)).toEqual(running);
  const hash = stateHash(venue.context.host.state);
  await venue.close();

  const done = await run(['--archive-journal', '--data', dir, '--archive-to', cold]);
  expect(done.code, done.stderr).toBe(0);
  const archive = join(cold, archiveFileName(1, seq - 1));
  expect(done.stdout).toContain(`archived journal records 1..${seq - 1} (`);
  expect(done.stdout).toContain(`bytes) to ${archive}\n`);
  expect(done.stdout).toContain(`${join(dir, 'journal.log')} now begins at seq ${seq} (`);
  expect(readdirSync(cold)).toEqual([archiveFileName(1, seq - 1)]);

  const check = await run(['--check', '--replay', '--json', '--data', dir]);
  expect(check.code, check.stderr).toBe(0);
  expect(JSON.parse(check.stdout)).toMatchObject({
    ok: true,
    journal: { firstSeq: seq },
    replay: { hash },
  });
  const json = await run(['--archive-journal', '--json', '--data', dir]);
  expect(json.code, json.stderr).toBe(0);
  expect(JSON.parse(json.stdout)).toMatchObject({ archive: null, bytes: 0 });
});
