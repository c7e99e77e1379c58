/**
 * Start-up failures the operator causes (a port in use, a bad `--config`, a damaged venue.json)
 * are one line naming the cause, with exit status 1; a stack trace is for defects.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ENGINE_RULES_VERSION } from '@perp/core';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../src/index.js';
import { FileJournal } from '../src/journal/file-journal.js';

const CLI = resolve(import.meta.dirname, '../dist/cli.js');

/** Runs the CLI to its exit; its status and stderr. */
async function run(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [CLI, '--price-feed', 'none', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += String(d);
  });
  // A venue that starts where it should have refused would run on after the test gave up.
  const deadline = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(deadline);
  return { code, stderr };
}

/** Exit status 1 and exactly one line on stderr, matching `line`; no stack trace. */
function expectOneLine(r: { code: number | null; stderr: string }, line: RegExp): void {
  expect(r.code, r.stderr).toBe(1);
  expect(r.stderr.trim().split('\n'), r.stderr).toEqual([expect.stringMatching(line)]);
  expect(r.stderr).not.toMatch(/\n\s+at /);
}

it('a port in use: one line on stderr naming it, exit status 1', async () => {
  const busy = createServer();
  busy.listen(0, '127.0.0.1');
  await once(busy, 'listening');
  const port = (busy.address() as { port: number }).port;
  try {
    const r = await run(['--memory', '--host', '127.0.0.1', '--port', String(port)]);
    expect(r.code).toBe(1);
    const lines = r.stderr.trim().split('\n');
    expect(lines.at(-1)).toMatch(
      new RegExp(
        `^failed to start: listen EADDRINUSE.*:${port} \\(another process listens there: choose --port\\)$`,
      ),
    );
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
  } finally {
    busy.close();
  }
});

it('a --host that names no address (a typo): one line naming it, exit status 1', async () => {
  // `.invalid` never resolves (RFC 2606): listen fails in the resolver, as for `--host localhos`.
  const r = await run(['--memory', '--port', '0', '--host', 'no-such-host.invalid']);
  expectOneLine(r, /^failed to start: .*no-such-host\.invalid.*--host/);
});

describe('a bad --config or data file: one line naming the file and the cause, exit status 1', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cli-start-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const memory = ['--memory', '--host', '127.0.0.1', '--port', '0'];
  const escaped = (path: string) => path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

  it('a missing file', async () => {
    const f = join(dir, 'missing.json');
    expectOneLine(
      await run([...memory, '--config', f]),
      new RegExp(`^failed to start: config ${escaped(f)}: ENOENT`),
    );
  });

  it('a file that is not JSON', async () => {
    const f = join(dir, 'broken.json');
    writeFileSync(f, '{"instruments": ');
    expectOneLine(
      await run([...memory, '--config', f]),
      new RegExp(`^failed to start: config ${escaped(f)}: not JSON: `),
    );
  });

  it('a refused instrument setting', async () => {
    const f = join(dir, 'bad-instrument.json');
    writeFileSync(f, JSON.stringify({ instruments: [{ id: 1 }] }));
    expectOneLine(
      await run([...memory, '--config', f]),
      new RegExp(`^failed to start: config ${escaped(f)}: instruments\\[0\\]`),
    );
  });

  it('an instrument that leaves out a required setting: named as missing, not as malformed', async () => {
    const { openInterestCap: _, ...rest } = { ...DEFAULT_CONFIG.instruments[0], id: 9 };
    for (const [name, instrument] of [
      ['openInterestCap', { ...rest, symbol: 'NEW-PERP' }],
      [
        'tickSize',
        { ...DEFAULT_CONFIG.instruments[0], id: 9, symbol: 'NEW-PERP', tickSize: undefined },
      ],
    ] as const) {
      const f = join(dir, `missing-${name}.json`);
      writeFileSync(f, JSON.stringify({ instruments: [instrument] }));
      const r = await run([...memory, '--config', f]);
      expectOneLine(r, new RegExp(`^failed to start: config ${escaped(f)}: instruments\\[0\\]`));
      expect(r.stderr).toMatch(new RegExp(`${name} is required`));
    }
  });

  it('a malformed trustProxy entry, named', async () => {
    const f = join(dir, 'bad-proxy.json');
    writeFileSync(f, JSON.stringify({ trustProxy: ['loopback', '10.0.0.0/33'] }));
    expectOneLine(
      await run([...memory, '--config', f]),
      new RegExp(
        `^failed to start: config ${escaped(f)}: trustProxy\\[1\\] must be an IP address, a CIDR range .*, not "10\\.0\\.0\\.0/33"$`,
      ),
    );
  });

  it('an unknown key', async () => {
    const f = join(dir, 'typo.json');
    writeFileSync(f, JSON.stringify({ instrument: [] }));
    expectOneLine(
      await run([...memory, '--config', f]),
      new RegExp(`^failed to start: config ${escaped(f)}: instrument is not a config key`),
    );
  });

  it('a config instrument the venue refuses: a symbol a listed instrument already has', async () => {
    const data = join(dir, 'data');
    // A first start lists the defaults; then a new id takes BTC-PERP's symbol.
    const first = spawn(
      process.execPath,
      [CLI, '--price-feed', 'none', '--json', '--port', '0', '--data', data],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    await once(first.stdout, 'data');
    first.kill('SIGTERM');
    await once(first, 'exit');
    const f = join(dir, 'clash.json');
    writeFileSync(
      f,
      JSON.stringify({ instruments: [{ ...DEFAULT_CONFIG.instruments[0], id: 9 }] }),
    );
    // Recovery lines come first; the failure is the last line.
    const r = await run(['--port', '0', '--data', data, '--config', f]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr.trim().split('\n').at(-1)).toMatch(
      /^failed to start: config instrument 9 \(BTC-PERP\): symbol BTC-PERP already belongs to listed instrument 1/,
    );
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('a --data path that is a file, or under one: one line naming it', async () => {
    const file = join(dir, 'not-a-directory');
    writeFileSync(file, 'x');
    // Before: the stack of mkdirSync's EEXIST (or ENOTDIR), as for a defect.
    for (const data of [file, join(file, 'data')])
      expectOneLine(
        await run(['--port', '0', '--data', data]),
        new RegExp(
          `^failed to start: data directory ${escaped(data)}: .*(EEXIST|ENOTDIR).*: give --data a directory`,
        ),
      );
  });

  it('a journal.log that is not a journal', async () => {
    const data = join(dir, 'foreign-journal');
    mkdirSync(data);
    writeFileSync(join(data, 'journal.log'), Buffer.alloc(4096, 0x5a));
    expectOneLine(
      await run(['--port', '0', '--data', data]),
      new RegExp(`^failed to start: .*${escaped(join(data, 'journal.log'))}.*damaged at byte 0`),
    );
  });

  it('a journal of other engine rules: refused by name, started with --replay-under-new-rules', async () => {
    const data = join(dir, 'other-rules');
    mkdirSync(data);
    const journal = FileJournal.open(join(data, 'journal.log'));
    const time = Date.now() - 60_000;
    await journal.append([
      { type: 'declareRules', time, version: ENGINE_RULES_VERSION + 1 },
      { type: 'tick', time: time + 1 },
    ]);
    await journal.close();
    expectOneLine(
      await run(['--port', '0', '--data', data]),
      new RegExp(
        `^failed to start: .*records 2\\.\\.2 include records written under engine rules ${ENGINE_RULES_VERSION + 1}.*--replay-under-new-rules`,
      ),
    );
    // The flag reaches the venue: it replays them and starts.
    const venue = spawn(
      process.execPath,
      [CLI, '--price-feed', 'none', '--port', '0', '--data', data, '--replay-under-new-rules'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = once(venue, 'exit');
    let stdout = '';
    let stderr = '';
    venue.stdout.on('data', (d) => {
      stdout += String(d);
    });
    venue.stderr.on('data', (d) => {
      stderr += String(d);
    });
    const deadline = setTimeout(() => venue.kill('SIGKILL'), 20_000);
    try {
      while (!stdout.includes('perp venue ready') && venue.exitCode === null)
        await new Promise((r) => setTimeout(r, 20));
      expect(stdout, stderr).toContain('perp venue ready');
      expect(stderr).toMatch(/under rules .*--replay-under-new-rules/);
    } finally {
      venue.kill('SIGTERM');
      await exited;
      clearTimeout(deadline);
    }
  });

  it('a data directory another venue holds', async () => {
    const data = join(dir, 'locked');
    const first = spawn(
      process.execPath,
      [CLI, '--price-feed', 'none', '--port', '0', '--data', data],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    try {
      await once(first.stdout, 'data'); // started: it holds the lock
      expectOneLine(await run(['--port', '0', '--data', data]), /^failed to start: .*LOCK/);
    } finally {
      first.kill('SIGTERM');
      await once(first, 'exit');
    }
  });

  it('a venue.json without an admin token', async () => {
    const data = join(dir, 'no-token');
    mkdirSync(data);
    writeFileSync(join(data, 'venue.json'), JSON.stringify({ createdTime: 1 }));
    expectOneLine(
      await run(['--port', '0', '--data', data]),
      new RegExp(`^failed to start: ${escaped(join(data, 'venue.json'))}: adminToken must be`),
    );
  });
});

describe('--trust-proxy', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cli-trust-proxy-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Starts the CLI with `args` and resolves with its text banner; the venue is then stopped. */
  const banner = async (args: string[]): Promise<string> => {
    const child = spawn(
      process.execPath,
      [CLI, '--price-feed', 'none', '--memory', '--port', '0', ...args],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += String(d);
    });
    try {
      await new Promise<void>((resolveBanner, reject) => {
        child.stdout.on('data', (d) => {
          stdout += String(d);
          // The in-memory venue is new: its banner ends with the invite code.
          if (/\n {2}invite code .*\n/.test(stdout)) resolveBanner();
        });
        child.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)));
      });
    } finally {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
    return stdout;
  };

  it('a malformed entry: the usage error names it, exit status 2, nothing started', async () => {
    const r = await run(['--memory', '--port', '0', '--trust-proxy', 'loopback,10.0.0.0/33']);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr.split('\n')[0]).toBe(
      '--trust-proxy entries must be an IP address, a CIDR range (10.0.0.0/8, fd00::/8, 0.0.0.0/0, ::/0) or one of loopback, linklocal, uniquelocal, not "10.0.0.0/33"',
    );
  });

  it("the banner shows the trusted proxies, the flag's replacing the config's; none, no line", async () => {
    expect(await banner([])).not.toMatch(/proxies/);
    const f = join(dir, 'proxies.json');
    writeFileSync(f, JSON.stringify({ trustProxy: ['10.0.0.0/8'] }));
    expect(await banner(['--config', f])).toMatch(/\n {2}proxies {6}trusted: 10\.0\.0\.0\/8\n/);
    expect(await banner(['--config', f, '--trust-proxy', '127.0.0.1, loopback'])).toMatch(
      /\n {2}proxies {6}trusted: 127\.0\.0\.1, loopback\n/,
    );
  });
});
