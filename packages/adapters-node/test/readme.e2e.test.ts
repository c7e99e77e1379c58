/**
 * The README's promises: its first screen holds the two set-up commands, the main-job command
 * starts the service and answers `/api/time`, the quickstart of the getting-started guide
 * trades against it, and the answers the guide quotes (oracle, invite codes, refusals) are the
 * service's. Runs the real `pnpm start` in a child process.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { ENGINE_RULES_VERSION } from '@perp/core';
import { generatePrivateKey } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listSnapshotFiles } from '../src/journal/snapshots.js';
import { freshNonce, http, type NetworkInfo, Wallet, WsClient } from './support/client.js';
import { limitOrder } from './support/fixture.js';

/** The command line of a process (Linux /proc), or `undefined`. */
function commandLine(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return undefined;
  }
}

/** The pid of the venue process whose command line contains `marker` (Linux), or `undefined`. */
function findProcess(marker: string): number | undefined {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return undefined;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    const cmd = commandLine(Number(e));
    if (cmd?.includes('dist/cli.js') && cmd.includes(marker)) return Number(e);
  }
  return undefined;
}

/** The parent pid of a process (Linux /proc), or `undefined`. */
function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

/** `GET /admin/state-hash`. */
type StateHash = { seq: number; hash: string; rulesVersion: number | null };

const ROOT = resolve(import.meta.dirname, '../../..');
const START = 'npx --yes pnpm@10 install && npx --yes pnpm@10 start';
const TEST = 'npx --yes pnpm@10 install && npx --yes pnpm@10 test';

interface Ready {
  ready: true;
  rest: string;
  ws: string;
  marketdata: string;
  adminToken: string | null;
  inviteCode: string | null;
}

describe('README', () => {
  let child: ChildProcess;
  let ready: Ready;
  let dataDir: string;
  const stderr: string[] = [];
  /** Every stdout line up to and including the ready line. */
  const stdout: string[] = [];

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'perp-readme-'));
    // The README's start command, with the flags protocol.md section 8 gives for scripts.
    const [program, ...args] = START.split(' && ')[1]!.split(' ');
    child = spawn(
      program!,
      [...args, '--json', '--port', '0', '--data', dataDir, '--price-feed', 'none'],
      {
        cwd: ROOT,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, CI: 'true' },
      },
    );
    child.stderr!.on('data', (d) => stderr.push(String(d)));
    ready = await new Promise<Ready>((resolveReady, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no ready line; stderr: ${stderr.join('')}`)),
        120_000,
      );
      createInterface({ input: child.stdout! }).on('line', (line) => {
        stdout.push(line);
        if (!line.startsWith('{')) return;
        const parsed = JSON.parse(line) as Ready;
        if (parsed.ready) {
          clearTimeout(timer);
          resolveReady(parsed);
        }
      });
      child.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr.join('')}`)));
    });
  }, 180_000);

  afterAll(async () => {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      const exited = new Promise((r) => child.once('exit', r));
      process.kill(-child.pid, 'SIGTERM');
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('shows exactly the two set-up commands on its first screen', () => {
    const firstScreen = readFileSync(join(ROOT, 'README.md'), 'utf8')
      .split('\n')
      .slice(0, 24)
      .join('\n');
    const commands = [...firstScreen.matchAll(/```sh\n([^`]+?)\n```/g)].map((m) => m[1]);
    expect(commands).toEqual([START, TEST]);
  });

  it('prints exactly one line on stdout with --json: the ready line, no package-manager banner', () => {
    expect(stdout).toEqual([JSON.stringify(ready)]);
  });

  it('starts the service, which answers /api/time and prints its secrets on a new data directory', async () => {
    expect(ready.rest).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api$/);
    expect(ready.adminToken).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(ready.inviteCode).toMatch(/^[A-Z0-9-]{1,7}$/);
    const before = Date.now();
    const res = await fetch(`${ready.rest}/time`);
    expect(res.status).toBe(200);
    const { serverTime } = (await res.json()) as { serverTime: number };
    expect(Math.abs(serverTime - before)).toBeLessThan(5_000);
  });

  it('runs the quickstart of docs/getting-started.md against it', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        join(ROOT, 'packages/adapters-node/examples/quickstart.mjs'),
        ready.rest,
        ready.adminToken!,
        ready.inviteCode!,
      ],
      { cwd: ROOT, timeout: 60_000 },
    );
    expect(stdout).toContain("type: 'authenticateSuccess'");
    // Step 5 of the guide: subscribeAccountSummary answers with the summary itself.
    expect(stdout).toMatch(/^summary accountSummary accountValue \d+(\.\d+)?$/m);
    expect(stdout).toMatch(/order orderAck New (\d+)/);
    const orderId = /order orderAck New (\d+)/.exec(stdout)![1];
    expect(stdout).toContain(`replace replaceAck 59000 ${orderId}`);
    expect(stdout).toContain(`cancel cancelAck Cancelled ${orderId}`);
    expect(stdout).toContain(`history ${orderId} Cancelled 59000 nextCursor null`);
    // Step 5: leverage, a transfer and a withdrawal over REST, each accepted.
    for (const step of ['leverage', 'transfer', 'withdrawal'])
      expect(stdout).toMatch(
        new RegExp(`^${step} \\{ command_id: \\d+, status: 'Submitted' \\}$`, 'm'),
      );
    // The withdrawal's report comes when the chain pays out, which may be after the last line.
    expect(stdout).toMatch(
      /reports DepositMargin,OrderAccepted,OrderReplaced,OrderCancelled,UpdateLeverage,TransferMargin(,WithdrawMargin)?\n/,
    );
  });

  it('takes the faucet, deposit and GTD order of docs/getting-started.md as the guide writes them', async () => {
    const guide = readFileSync(join(ROOT, 'docs/getting-started.md'), 'utf8').replace(/\s+/g, ' ');
    const quoted = (re: RegExp): string => {
      const m = re.exec(guide);
      expect(m, String(re)).not.toBeNull();
      return m![1]!;
    };
    const net = (await http('GET', `${ready.rest}/network`)).body as unknown as NetworkInfo;
    const w = new Wallet(generatePrivateKey(), net);
    const invite = await w.referral(ready.inviteCode!);
    expect(
      (await http('POST', `${ready.rest}/referral/apply`, invite.body, invite.headers)).status,
    ).toBe(201);

    // Step 2: the faucet's amount is whole tokens, and it answers the wallet's new balance.
    const withWallet = (text: string): unknown => JSON.parse(text.replaceAll('0x…', w.address));
    const faucet = withWallet(quoted(/`POST \/api\/admin\/faucet (\{"wallet"[^`]*\})`/)) as {
      amount: string;
    };
    const faucetAnswer = withWallet(quoted(/new token balance, `(\{"wallet"[^`]*\})`/));
    expect(
      await http('POST', `${ready.rest}/admin/faucet`, faucet, {
        authorization: `Bearer ${ready.adminToken}`,
      }).then((r) => ({ status: r.status, body: r.body })),
    ).toEqual({ status: 200, body: faucetAnswer });
    const token = (await http('GET', `${ready.rest}/chain/token/${w.address}`)).body;
    expect(token.balance).toBe(faucet.amount);

    // Step 3: the deposit body as quoted, its two signature objects filled in.
    const body = JSON.parse(
      quoted(/the body `(\{"amount"[^`]*\})`/).replaceAll('{…}', 'null'),
    ) as Record<string, unknown>;
    expect(body).toEqual({
      amount: faucet.amount,
      instrument: null,
      marginMode: 'Cross',
      permitSignature: null,
      depositSignature: null,
    });
    const micro = BigInt(faucet.amount) * 1_000_000n;
    // Section 3: a permit's deadline has no 1-hour bound (a day ahead here), unlike the others.
    expect(guide).toContain("a `Permit`'s only needs to be in the future");
    body.permitSignature = await w.sign('Permit', {
      spender: net.vault.address,
      value: micro,
      nonce: BigInt(token.nonce as string),
      deadline: BigInt(Math.floor(Date.now() / 1000) + 86_400),
    });
    body.depositSignature = await w.sign('Deposit', {
      amount: micro,
      market: 0,
      flags: 0,
      nonce: freshNonce(),
      deadline: Wallet.deadline(),
    });
    const deposit = await http('POST', `${ready.rest}/margin/deposit`, body);
    expect([deposit.status, deposit.body.status]).toEqual([200, 'Submitted']);

    // Step 6: a GTD expiry is in seconds; the order's expireTime is the same instant in ms.
    expect(guide).toContain('`expiry` is in **seconds**');
    const ws = await WsClient.connect(ready.ws);
    try {
      const auth = await ws.request({ type: 'authenticate', signature: await w.authenticate() });
      expect(auth.type).toBe('authenticateSuccess');
      const expiry = BigInt(Math.floor(Date.now() / 1000) + 600);
      const ack = await ws.request({
        type: 'placeOrder',
        signature: await w.sign(
          'Order',
          limitOrder(true, 60_000n * 10n ** 18n, 10n, { timeInForce: 1, expiry }),
        ),
      });
      expect(ack.type).toBe('orderAck');
      expect(ack.order).toMatchObject({ timeInForce: 'GTD', expireTime: Number(expiry) * 1000 });
      // Off the book again: the operator examples below quote marks of an empty book.
      const cancelled = await ws.request({
        type: 'cancelOrder',
        signature: await w.sign('Cancel', {
          market: 1,
          orderId: BigInt((ack.order as { orderId: string }).orderId),
          nonce: freshNonce(),
          deadline: Wallet.deadline(),
        }),
      });
      expect(cancelled.type).toBe('cancelAck');
    } finally {
      await ws.close();
    }
  });

  it('answers the further trading-socket messages docs/getting-started.md lists as it says', async () => {
    const guide = readFileSync(join(ROOT, 'docs/getting-started.md'), 'utf8').replace(/\s+/g, ' ');
    expect(guide).toContain(
      '`{"type":"ping"}` (answered `{"type":"pong","serverTime":…}`), `unsubscribeAccountSummary` and `unsubscribeTrading` (answered `unsubscribeAccountSummarySuccess` and `unsubscribeTradingSuccess`) and `logout` (answered `logoutSuccess`; trading messages are then 4003 until the next `authenticate`)',
    );
    const net = (await http('GET', `${ready.rest}/network`)).body as unknown as NetworkInfo;
    const w = new Wallet(generatePrivateKey(), net);
    const invite = await w.referral(ready.inviteCode!);
    expect(
      (await http('POST', `${ready.rest}/referral/apply`, invite.body, invite.headers)).status,
    ).toBe(201);
    const ws = await WsClient.connect(ready.ws);
    try {
      const pong = await ws.request({ type: 'ping' });
      expect(Object.keys(pong).sort()).toEqual(['id', 'serverTime', 'type']);
      expect(pong.type).toBe('pong');
      const auth = await ws.request({ type: 'authenticate', signature: await w.authenticate() });
      expect(auth.type).toBe('authenticateSuccess');
      expect((await ws.request({ type: 'subscribeAccountSummary' })).type).toBe('accountSummary');
      for (const type of ['unsubscribeAccountSummary', 'unsubscribeTrading', 'logout'])
        expect((await ws.request({ type })).type).toBe(
          type === 'logout' ? 'logoutSuccess' : `${type}Success`,
        );
      expect(await ws.request({ type: 'subscribeTrading' })).toMatchObject({
        type: 'error',
        code: 4003,
      });
      // The per-wallet budget the guide states: 20 a rolling second, this authenticate and every
      // ping included (the messages above are older than a second once this waits).
      const perSecond = Number(
        /budgets behind 4029 and 4035 .*? (\d+) requests per rolling second/.exec(guide)![1],
      );
      await new Promise((r) => setTimeout(r, 1_100));
      expect(
        (await ws.request({ type: 'authenticate', signature: await w.authenticate() })).type,
      ).toBe('authenticateSuccess');
      const replies = await Promise.all(
        Array.from({ length: perSecond }, () => ws.request({ type: 'ping' })),
      );
      expect(replies.slice(0, perSecond - 1).map((r) => r.type)).toEqual(
        Array(perSecond - 1).fill('pong'),
      );
      expect(replies[perSecond - 1]).toMatchObject({ type: 'error', code: 4029 });
      expect(replies[perSecond - 1]!.retryAfterMs).toBeGreaterThan(0);
    } finally {
      await ws.close();
    }
  });

  it('refuses a message id outside the rule docs/getting-started.md gives, without an id', async () => {
    const guide = readFileSync(join(ROOT, 'docs/getting-started.md'), 'utf8').replace(/\s+/g, ' ');
    const refusal =
      /any other `id` is refused with 4000 `([^`]*)` and that error carries no `id`/.exec(guide);
    expect(refusal).not.toBeNull();
    for (const url of [ready.ws, ready.marketdata]) {
      const ws = await WsClient.connect(url);
      try {
        // A number, a dot, 65 characters: each refused with the quoted text and no id.
        for (const id of [7, 'a.b', 'x'.repeat(65)]) {
          const before = ws.inbox.length;
          ws.ws.send(JSON.stringify({ type: 'ping', id }));
          const reply = await ws.waitFor((m) => ws.inbox.indexOf(m) >= before);
          expect(reply).toEqual({ type: 'error', code: 4000, message: refusal![1] });
        }
        // The longest id the rule allows is echoed.
        const id = `${'A'.repeat(62)}_-`;
        ws.ws.send(JSON.stringify({ type: 'ping', id }));
        expect((await ws.waitFor((m) => m.id === id)).type).not.toBe('error');
      } finally {
        await ws.close();
      }
    }
  });

  it('answers the operator examples of docs/getting-started.md as the guide quotes them', async () => {
    // The guide's own text, whitespace folded (its lines wrap inside quoted answers).
    const guide = readFileSync(join(ROOT, 'docs/getting-started.md'), 'utf8').replace(/\s+/g, ' ');
    const quoted = (re: RegExp): string => {
      const m = re.exec(guide);
      expect(m, String(re)).not.toBeNull();
      return m![1]!;
    };
    const admin = { authorization: `Bearer ${ready.adminToken}` };
    const call = async (method: string, path: string, body?: string) => {
      const res = await fetch(`${ready.rest}${path}`, {
        method,
        headers: body === undefined ? admin : { ...admin, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };

    // Section 1: with --price-feed none the prices stay null until the oracle example sets them.
    const instruments = (await call('GET', '/instruments')).body.instruments as Record<
      string,
      unknown
    >[];
    for (const i of instruments) expect([i.indexPrice, i.markPrice]).toEqual([null, null]);
    const oracle = quoted(/`POST \/api\/admin\/oracle (\{"prices":\{"BTC-PERP".*?\}\})`/);
    const prices = (JSON.parse(oracle) as { prices: Record<string, string> }).prices;
    expect(Object.keys(prices)).toEqual(instruments.map((i) => i.symbol));
    const marks = await call('POST', '/admin/oracle', oracle);
    expect(marks).toEqual({
      status: 200,
      body: {
        marks: Object.fromEntries(
          Object.entries(prices).map(([symbol, p]) => [symbol, { index: p, mark: p }]),
        ),
      },
    });

    // Section 1: the invite-code list has the fields the guide names.
    const fields = quoted(/`\{"codes":\[\{([^}]*)\}\]\}`/)
      .split(',')
      .map((f) => JSON.parse(f) as string);
    const codes = (await call('GET', '/admin/referral-codes')).body.codes as object[];
    expect(codes.map((c) => Object.keys(c).sort())).toEqual([[...fields].sort()]);

    // Section 2, steps 1 and 3: a checksummed address is refused with the quoted answer, and a
    // wallet with no account yet has no summary.
    const refused = quoted(/`(\{"error":"walletAddress and code are required","detail":[^`]*\})`/);
    const checksummed = `0x${'Ab'.repeat(20)}`;
    const apply = await fetch(`${ready.rest}/referral/apply`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code: ready.inviteCode, walletAddress: checksummed }),
    });
    expect({ status: apply.status, body: await apply.json() }).toEqual({
      status: 400,
      body: JSON.parse(refused),
    });
    const notFound = quoted(/`(ACCOUNT_NOT_FOUND: no trading account for) 0x…`/);
    const nobody = `0x${'5'.repeat(40)}`;
    expect(await call('GET', `/account_summary?wallet=${nobody}`)).toEqual({
      status: 404,
      body: { error: `${notFound} ${nobody}` },
    });

    // Section 5: seeding the insurance fund from an empty fee pool (no trade has happened).
    const transfer = quoted(/`POST \/api\/admin\/insurance-fund\/transfer (\{[^`]*\})`/);
    const short = quoted(/a larger amount is 400 `([^`]*)`/);
    expect(await call('POST', '/admin/insurance-fund/transfer', transfer)).toEqual({
      status: 400,
      body: { error: short },
    });
  });

  it('restarts on the same data directory with its state and stops gracefully on SIGTERM', async () => {
    const hashBefore = (await (
      await fetch(`${ready.rest}/admin/state-hash`, {
        headers: { authorization: `Bearer ${ready.adminToken}` },
      })
    ).json()) as StateHash;
    const exited = new Promise((r) => child.once('exit', r));
    // SIGTERM to `pnpm start` alone (what a process manager running it sends) must reach the
    // venue: the start script execs node, and pnpm passes signals to its child. On Linux the
    // venue's parent is found in /proc; elsewhere the whole process group is signalled.
    const venuePid = findProcess(`--data ${dataDir}`);
    const pnpmPid = venuePid === undefined ? undefined : parentOf(venuePid);
    if (pnpmPid !== undefined) {
      expect(commandLine(pnpmPid)).toMatch(/pnpm/);
      process.kill(pnpmPid, 'SIGTERM');
    } else {
      process.kill(-child.pid!, 'SIGTERM');
    }
    await exited;
    // `exited` is the package manager's; the venue itself has stopped once its lock is gone.
    for (let i = 0; i < 200 && existsSync(join(dataDir, 'LOCK')); i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(existsSync(join(dataDir, 'LOCK'))).toBe(false);
    // The clean stop snapshotted the journal's end: the restart replays nothing.
    expect(listSnapshotFiles(dataDir).map((f) => f.seq)).toEqual([hashBefore.seq]);
    // The service binary itself, so the signal reaches it and not a package-manager wrapper.
    const again = spawn(
      process.execPath,
      [
        'packages/adapters-node/dist/cli.js',
        '--json',
        '--port',
        '0',
        '--data',
        dataDir,
        '--price-feed',
        'none',
      ],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const line = await new Promise<string>((r) =>
      createInterface({ input: again.stdout! }).once('line', r),
    );
    const restarted = JSON.parse(line) as Ready;
    // Secrets are printed only when the data directory is new.
    expect(restarted.adminToken).toBeNull();
    expect(restarted.inviteCode).toBeNull();
    const hashAfter = (await (
      await fetch(`${restarted.rest}/admin/state-hash`, {
        headers: { authorization: `Bearer ${ready.adminToken}` },
      })
    ).json()) as StateHash;
    expect(hashAfter).toEqual(hashBefore);
    expect(hashAfter.rulesVersion).toBe(ENGINE_RULES_VERSION);
    const code = new Promise<number | null>((r) => again.once('exit', (c) => r(c)));
    again.kill('SIGTERM');
    expect(await code).toBe(0);
  });
});
