/**
 * Crash harness (reliability-anchors 5.4 F1, F8, F10; 5.6): runs the built CLI as a child
 * process on a data directory, drives it with signed requests from several wallets (orders,
 * GTD orders, cancels over the trading WebSocket; leverage over REST), SIGKILLs it at a random
 * moment, restarts it and reconciles three views:
 *
 * - the client ledger: every request sent, and whether it was acknowledged, refused or left
 *   without an answer by the kill;
 * - the journal on disk, read independently (framing checked, payloads decoded here);
 * - the restarted service's state hash (`GET /api/admin/state-hash`).
 *
 * After every restart: the service's hash equals a clean replay of the journal prefix it reports
 * (replayed with the same build the child runs); every acknowledged request was admitted by exactly
 * one journal record, and no request by two (a request is one record, so it is applied whole or
 * not at all); re-sending an acknowledged signed order and leverage change is refused as a
 * replay; once its read models are complete again (from the snapshot's read-model checkpoint or
the journal), each wallet's trade history is the clean replay's. Unanswered requests (the kill
came first) may be admitted or not, never twice. At the end: every acknowledged GTD order is no
 * longer working once its expiry has passed, and none expired early. Snapshots are taken often
 * (`--snapshot-records`), so kills also land during snapshot writes and restarts go through
 * snapshot recovery. Every fourth cycle (from the second) stops the service cleanly under load
 * instead and runs `--archive-journal` before the restart: the journal is then read as the
 * archive files and `journal.log` concatenated, and every check holds on an archived journal.
 *
 * Needs the built CLI (`npx tsc -b`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import {
  appendFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command, EngineEvent, EngineState } from '@perp/core';
import {
  freshNonce,
  fundWallet,
  http,
  KEYS,
  type Msg,
  type NetworkInfo,
  Wallet,
  WsClient,
} from '../support/client.js';

/** The built CLI the harness runs. */
export const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

// The clean replay runs the same build as the child (dist), not the sources vitest would load:
// the working tree is shared, and sources edited but not yet built must not read as a
// divergence of the service.
type CoreModule = typeof import('@perp/core');
type JournalModule = typeof import('../../src/journal/file-journal.js');
const core = (await import(
  new URL('../../../core/dist/index.js', import.meta.url).href
)) as CoreModule;
const journalCodec = (await import(
  new URL('../../dist/journal/file-journal.js', import.meta.url).href
)) as JournalModule;
type SnapshotsModule = typeof import('../../src/journal/snapshots.js');
const { listSnapshotFiles } = (await import(
  new URL('../../dist/journal/snapshots.js', import.meta.url).href
)) as SnapshotsModule;
type CheckpointFilesModule = typeof import('../../src/journal/read-model-files.js');
const { checkpointFileName, listCheckpointFiles } = (await import(
  new URL('../../dist/journal/read-model-files.js', import.meta.url).href
)) as CheckpointFilesModule;
type KeccakModule = typeof import('../../src/native-keccak.js');
const { stateKeccak } = (await import(
  new URL('../../dist/native-keccak.js', import.meta.url).href
)) as KeccakModule;
type HistoryModule = typeof import('../../src/read/history.js');
const { HistoryStore } = (await import(
  new URL('../../dist/read/history.js', import.meta.url).href
)) as HistoryModule;
type StreamsModule = typeof import('../../src/read/report-streams.js');
const { ReportStreams } = (await import(
  new URL('../../dist/read/report-streams.js', import.meta.url).href
)) as StreamsModule;
type FormatModule = typeof import('../../src/wire/format.js');
const { specsOf, wireReport } = (await import(
  new URL('../../dist/wire/format.js', import.meta.url).href
)) as FormatModule;
const { createEngineState, reduceAll } = core;
/** The state hash with the keccak the service uses (native when it loads; the same hash). */
const stateHash = (state: EngineState): string => core.stateHash(state, stateKeccak());

const PRICE = 10n ** 18n;
const ZERO16 = `0x${'0'.repeat(32)}`;

/** Options of {@link runCrashHarness}. */
export interface CrashOptions {
  readonly cycles: number;
  readonly seed: number;
  /** Wallets driving load (at most 5). */
  readonly wallets?: number;
  /** Snapshot cadence passed to the service, records. */
  readonly snapshotRecords?: number;
  /** The kill lands this many ms after the load starts: [min, max]. */
  readonly killAfterMs?: readonly [number, number];
  readonly log?: (line: string) => void;
  /** Keep the data directory (for inspection). */
  readonly keep?: boolean;
}

/** What a run saw. */
export interface CrashSummary {
  readonly cycles: number;
  readonly sent: number;
  readonly acknowledged: number;
  readonly refused: number;
  /** Refusals by error code (cancels of orders that already ended, margin, ...). */
  readonly refusedCodes: Readonly<Record<string, number>>;
  readonly unanswered: number;
  /** Unanswered requests that the journal shows were applied (acks lost to the kill). */
  readonly appliedWithoutAck: number;
  readonly journalRecords: number;
  readonly snapshotRecoveries: number;
  /**
   * Cycles whose check replayed the journal from its first record: the first, and any whose
   * journal no longer began with the bytes the previous check replayed (none expected).
   */
  readonly replaysFromGenesis: number;
  readonly tornTails: number;
  /** Cycles that archived the journal (a clean stop, then `--archive-journal`) before the restart. */
  readonly archives: number;
  /** Cycles that deleted a snapshot or a read-model checkpoint before the restart. */
  readonly lostFiles: number;
  readonly replaysRefused: number;
  readonly gtdChecked: number;
  readonly dataDir: string;
}

type Status = 'sent' | 'acked' | 'refused' | 'unanswered';

interface LedgerEntry {
  readonly wallet: string;
  readonly nonce: bigint;
  readonly kind: 'order' | 'gtd' | 'cancel' | 'leverage';
  readonly message: Record<string, unknown>;
  status: Status;
  orderId?: string;
  expiryMs?: number;
  reply?: unknown;
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Child {
  readonly proc: ChildProcess;
  readonly ready: {
    rest: string;
    ws: string;
    adminToken: string | null;
    inviteCode: string | null;
  };
  readonly stderr: string[];
  readonly exited: Promise<number | null>;
}

function startChild(dir: string, args: readonly string[]): Promise<Child> {
  const proc = spawn(
    process.execPath,
    [CLI, '--json', '--port', '0', '--data', dir, '--price-feed', 'none', ...args],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const stderr: string[] = [];
  const exited = new Promise<number | null>((resolve) =>
    proc.once('exit', (code) => resolve(code)),
  );
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`service did not start in 20 s; stderr: ${stderr.join('\n')}`));
    }, 20_000);
    proc.stderr?.on('data', (d: Buffer) => {
      err += d.toString();
      const lines = err.split('\n');
      err = lines.pop() ?? '';
      stderr.push(...lines);
    });
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      try {
        const ready = JSON.parse(out.slice(0, nl)) as Child['ready'] & { ready: boolean };
        resolve({ proc, ready, stderr, exited });
      } catch (e) {
        reject(e as Error);
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(
        new Error(`service exited with ${code} before it was ready; stderr: ${stderr.join('\n')}`),
      );
    });
  });
}

/**
 * Runs the built CLI's `--archive-journal` on `dir` (a stopped venue's); the range of records it
 * moved (`first..last`), `null` when it had nothing to move. Its refusal fails the run: after a
 * clean stop a start would succeed from the stop's snapshot, whose checkpoint covers the history.
 */
async function archiveJournal(dir: string): Promise<string | null> {
  const proc = spawn(process.execPath, [CLI, '--archive-journal', '--json', '--data', dir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  proc.stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const code = await new Promise<number | null>((resolve) => proc.once('exit', resolve));
  if (code !== 0) throw new CrashCheckError(`--archive-journal exited with ${code}: ${err}`);
  const r = JSON.parse(out) as { archive: string | null; firstSeq: number; lastSeq: number };
  return r.archive === null ? null : `${r.firstSeq}..${r.lastSeq}`;
}

/**
 * Every fifth cycle (from the third) the newest snapshot's read-model checkpoint is deleted, as
 * a kill between a snapshot and its checkpoint leaves it: the restart's history backfill starts
 * from an older snapshot's checkpoint, or re-reduces the journal. Every seventh (from the fifth)
 * the newest snapshot itself is deleted, as one found damaged would be skipped: the restart
 * recovers from the one before it. Each only when the history stays rebuildable (an older
 * snapshot with a checkpoint and its records still in journal.log, or the whole journal there)
 * and, for the second, the older snapshot is at or past the last archived record: otherwise the
 * loss is one no venue could recover from, which is not what is tested here. What was deleted,
 * or `null`.
 */
function loseRecoveryFiles(dir: string, cycle: number): string | null {
  const snapshots = listSnapshotFiles(dir);
  const checkpointed = new Set(listCheckpointFiles(dir).map((f) => f.seq));
  const [newest, older] = snapshots;
  if (newest === undefined) return null;
  const first = journalCodec.firstRecordSeq(readFileSync(join(dir, 'journal.log'))) ?? 1;
  // Read models the backfill can start from without `newest`'s checkpoint.
  const rebuildable =
    first === 1 ||
    snapshots.some((f) => f !== newest && f.seq >= first - 1 && checkpointed.has(f.seq));
  if (cycle % 5 === 3 && checkpointed.has(newest.seq) && rebuildable) {
    rmSync(join(dir, checkpointFileName(newest.seq)));
    return `deleted the read-model checkpoint of snapshot ${newest.seq}`;
  }
  if (
    cycle % 7 === 5 &&
    older !== undefined &&
    older.seq >= first - 1 &&
    (checkpointed.has(older.seq) || rebuildable)
  ) {
    rmSync(newest.path);
    return `deleted snapshot ${newest.seq}; the restart recovers from ${older.seq}`;
  }
  return null;
}

/**
 * Appends to the journal what a write interrupted by a crash leaves (the first bytes of the next
 * record, or zeros where the file grew but the data did not land), as a kill between the write
 * and its fdatasync can. Nothing in it was acknowledged: the restart must cut it, with its line.
 * `null` when the kill already left one.
 */
function tearTail(dir: string, rnd: () => number): { offset: number; bytes: number } | null {
  const path = join(dir, 'journal.log');
  const data = readFileSync(path);
  const scan = journalCodec.scanFrames(path, data, journalCodec.firstRecordSeq(data) ?? 1);
  // The kill tore the last write itself: that one is the restart's to cut.
  if (scan.tornBytes > 0) return null;
  const next = journalCodec.encodeRecord(scan.firstSeq + scan.offsets.length, {
    type: 'tick',
    time: Date.now(),
  });
  const bytes = 1 + Math.floor(rnd() * (next.length - 1));
  appendFileSync(path, rnd() < 0.8 ? next.subarray(0, bytes) : Buffer.alloc(bytes));
  return { offset: data.length, bytes };
}

/**
 * The whole journal as the disk holds it: the archive files `--archive-journal` wrote (in seq
 * order: their zero-padded names sort so) and `journal.log`, concatenated, which is the journal
 * byte for byte as it was before any archive.
 */
function wholeJournal(dir: string): { path: string; data: Buffer } {
  const archives = journalCodec.listArchiveFiles(dir);
  const path = join(dir, 'journal.log');
  return {
    path,
    data: Buffer.concat([...archives.map((a) => readFileSync(a.path)), readFileSync(path)]),
  };
}

/** The journal as the disk holds it, read without touching the files. */
function readJournal(dir: string): Command[] {
  const { path, data } = wholeJournal(dir);
  const scan = journalCodec.scanFrames(path, data);
  return scan.offsets.map((at) => journalCodec.decodeFrame(path, data, at).command);
}

/**
 * The clean replay of the journal prefix the service reports, carried from cycle to cycle so that
 * a run's checks cost what its records do, not its cycles times its records. A check takes the
 * state it reached last time only when the journal still begins with the bytes it replayed then,
 * and reduces the records after them: the same state as one replay from the first record, since
 * the core's state does not depend on how a log is cut into batches (a property of its own tests).
 * Otherwise it replays from the first record. The final check of a run replays from the first
 * record regardless.
 */
class PrefixReplay {
  private replayed = Buffer.alloc(0);
  private count = 0;
  private state: EngineState | undefined;
  private readonly admitted = new Map<string, number>();
  /** The trade history a venue's read models hold after the records replayed so far. */
  history = new HistoryStore();
  /** The execution-report replay buffers, likewise. */
  streams = new ReportStreams();
  fromGenesis = 0;

  /** A wallet's execution reports after the records replayed so far, as a replay sends them. */
  wireReports(address: string): Record<string, unknown>[] {
    const state = this.state;
    if (state === undefined) return [];
    const seq = state.accounts.get(address)?.reportSeq ?? 0;
    const specOf = specsOf(state);
    return this.streams.since(address, 0, seq).reports.map((r) => wireReport(r, specOf, true));
  }

  /**
   * The state hash of a clean replay of the first `seq` records of `dir`'s journal, and how many
   * of them admitted each signed request (see {@link admittedNonces}); or how many records the
   * journal has when it has fewer than `seq`.
   */
  advance(
    dir: string,
    seq: number,
  ): { hash: string; admitted: ReadonlyMap<string, number> } | { records: number } {
    const { path, data } = wholeJournal(dir);
    const scan = journalCodec.scanFrames(path, data);
    if (scan.offsets.length < seq) return { records: scan.offsets.length };
    const end = seq < scan.offsets.length ? (scan.offsets[seq] as number) : scan.validLength;
    const kept =
      this.state !== undefined &&
      seq >= this.count &&
      data.subarray(0, this.replayed.length).equals(this.replayed);
    if (!kept) {
      this.state = undefined;
      this.count = 0;
      this.admitted.clear();
      this.history = new HistoryStore();
      this.streams = new ReportStreams();
      this.fromGenesis++;
    }
    const fresh = scan.offsets
      .slice(this.count, seq)
      .map((at) => journalCodec.decodeFrame(path, data, at).command);
    const from = this.state ?? createEngineState({}, fresh[0]?.time ?? 0);
    const r = reduceAll(from, fresh);
    const batch = { commands: fresh, events: r.events, state: r.state };
    this.history.apply(batch);
    this.streams.apply(batch);
    for (const [key, n] of admittedNonces(fresh, r.events))
      this.admitted.set(key, (this.admitted.get(key) ?? 0) + n);
    this.state = r.state;
    this.count = seq;
    this.replayed = Buffer.from(data.subarray(0, end));
    return { hash: stateHash(r.state), admitted: this.admitted };
  }
}

/**
 * Once the restarted service's read models reach back to the first record (a snapshot restart
 * loads them from its read-model checkpoint or re-reduces the journal, in the background), each
 * wallet's `GET /account/trades` is the trade history of a clean replay. Trades only change with
 * fills, and the load has stopped, so records journaled meanwhile (expiry ticks) leave them be.
 */
async function checkTradeHistory(
  rest: string,
  admin: (rest: string, method: string, path: string) => Promise<{ body: unknown }>,
  replay: PrefixReplay,
  dir: string,
  wallets: readonly Wallet[],
  seed: number,
  cycle: number,
): Promise<void> {
  for (let i = 0; ; i++) {
    const status = (await admin(rest, 'GET', '/admin/read-models')).body as {
      complete: boolean;
      backfill: { phase: string } | null;
    };
    if (status.complete) break;
    if (i === 400 || status.backfill?.phase === 'abandoned')
      fail(`the read models never became complete: ${JSON.stringify(status)}`, seed, cycle);
    await new Promise((r) => setTimeout(r, 25));
  }
  const served = new Map<string, unknown>();
  for (const w of wallets) {
    const r = await http('GET', `${rest}/account/trades?wallet=${w.address}&startTime=0&limit=500`);
    served.set(w.address, (r.body as { trades: unknown }).trades);
  }
  const { seq } = (await admin(rest, 'GET', '/admin/state-hash')).body as { seq: number };
  if ('records' in replay.advance(dir, seq)) fail(`journal shorter than seq ${seq}`, seed, cycle);
  for (const w of wallets) {
    const expected = JSON.parse(
      JSON.stringify(
        replay.history.trades(w.address, { startTime: 0, limit: 500 }, Number.MAX_SAFE_INTEGER)
          .rows,
      ),
    );
    const got = served.get(w.address);
    if (JSON.stringify(got) !== JSON.stringify(expected))
      fail(
        `wallet ${w.address}: /account/trades after the restart (${(got as unknown[]).length} rows) is not the clean replay's (${expected.length} rows)`,
        seed,
        cycle,
      );
  }
}

/**
 * A wallet's `subscribeTrading {fromSeq: 0}` replays, after the restart, the execution reports a
 * clean replay gives it (after {@link checkTradeHistory} advanced the replay; records journaled
 * since, such as expiry ticks and this socket's authentication, only add reports after them).
 * The report buffers were loaded from a read-model checkpoint or rebuilt from the journal.
 */
async function checkReportReplay(
  wsUrl: string,
  replay: PrefixReplay,
  w: Wallet,
  seed: number,
  cycle: number,
): Promise<void> {
  const expected = replay.wireReports(w.address);
  const ws = await WsClient.connect(wsUrl);
  try {
    const auth = await ws.request({ type: 'authenticate', signature: await w.authenticate() });
    if (auth.type !== 'authenticateSuccess')
      fail(`authenticate: ${JSON.stringify(auth)}`, seed, cycle);
    const sub = await ws.request({ type: 'subscribeTrading', fromSeq: 0 });
    if (sub.resyncRequired === true)
      fail(`wallet ${w.address}: replay from 0 needs a resync`, seed, cycle);
    const last = expected[expected.length - 1]?.seq as number | undefined;
    if (last !== undefined) {
      if (typeof sub.seq !== 'number' || sub.seq < last)
        fail(
          `wallet ${w.address}: subscribed at seq ${String(sub.seq)}, the replay reached ${last}`,
          seed,
          cycle,
        );
      await ws.waitFor(
        (m) => m.type === 'executionReport' && m.replay === true && m.seq === last,
        10_000,
      );
    }
    const served = ws.inbox.filter(
      (m) => m.type === 'executionReport' && m.replay === true && (m.seq as number) <= (last ?? 0),
    );
    if (JSON.stringify(served) !== JSON.stringify(expected))
      fail(
        `wallet ${w.address}: subscribeTrading {fromSeq: 0} after the restart replayed ${served.length} reports up to seq ${last ?? 0}, not the clean replay's ${expected.length}`,
        seed,
        cycle,
      );
  } finally {
    await ws.close();
  }
}

function authKey(wallet: string, nonce: bigint): string {
  return `${wallet}|${nonce}`;
}

/**
 * `${account}|${nonce}` -> how many journal records admitted that signed request (applied it or
 * at least consumed its nonce). A record of the same request refused as a replay can be in the
 * journal too (it is kept when due housekeeping, such as an expiry or nonce pruning, ran in the
 * same command), so the count comes from the outcomes of a replay, not from the records alone.
 */
function admittedNonces(
  commands: readonly Command[],
  events: readonly EngineEvent[][],
): Map<string, number> {
  const counts = new Map<string, number>();
  commands.forEach((c, i) => {
    let key: string | undefined;
    if ('auth' in c && c.auth !== undefined && 'account' in c)
      key = authKey(c.account, c.auth.nonce);
    else if (c.type === 'authenticate') key = authKey(c.account, c.nonce);
    if (key === undefined) return;
    const outcome = (events[i] ?? []).find((e) => e.type === 'outcome');
    const admitted =
      outcome !== undefined && outcome.type === 'outcome' && (outcome.ok || outcome.nonceConsumed);
    if (admitted) counts.set(key, (counts.get(key) ?? 0) + 1);
  });
  return counts;
}

/** Raised by a broken rule; the data directory is kept for inspection. */
class CrashCheckError extends Error {}

/** The built code under test: every dist file with its modification time. */
function buildFingerprint(): string {
  const parts: string[] = [];
  const walk = (dir: string): void => {
    if (!existsSync(dir)) return;
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const st = statSync(path);
      if (st.isDirectory()) walk(path);
      else if (name.endsWith('.js')) parts.push(`${path}:${st.mtimeMs}`);
    }
  };
  for (const pkg of ['core', 'adapters-memory', 'adapters-node'])
    walk(fileURLToPath(new URL(`../../../${pkg}/dist`, import.meta.url)));
  return parts.join('\n');
}

const startBuild = buildFingerprint();

function fail(message: string, seed: number, cycle: number): never {
  // The working tree is shared: a rebuild during the run puts other code under the restarted
  // child than the one this process replays with. Say so rather than blame the service.
  const rebuilt =
    buildFingerprint() !== startBuild
      ? '\n(the build in dist/ changed during this run: the restarted service and this replay may run different code; rerun on a quiet tree)'
      : '';
  throw new CrashCheckError(`crash harness (seed ${seed}, cycle ${cycle}): ${message}${rebuilt}`);
}

/** Runs the harness; throws on the first broken rule, naming the seed and the cycle. */
/**
 * Runs `send` again once if the connection was reset before any answer. The check before it
 * replays the journal prefix on this thread for seconds, long enough for the venue to close the
 * pooled keep-alive socket of an earlier request (its 5 s idle timeout) while the client, busy,
 * has not yet dropped it: fetch then writes into a closed socket and gets ECONNRESET. A replayed
 * request is refused however often it arrives, so sending it again is safe.
 */
async function retryReset<T>(send: () => Promise<T>): Promise<T> {
  try {
    return await send();
  } catch (e) {
    const cause = (e as { cause?: { code?: string } }).cause;
    if (cause?.code !== 'ECONNRESET' && cause?.code !== 'EPIPE') throw e;
    return send();
  }
}

export async function runCrashHarness(options: CrashOptions): Promise<CrashSummary> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build first (npx tsc -b)`);
  const log = options.log ?? (() => {});
  const rnd = mulberry32(options.seed);
  const dir = mkdtempSync(join(tmpdir(), 'perp-crash-'));
  const configPath = join(dir, '..', `${dir.split('/').pop()}-config.json`);
  // Limits high enough that the load is not throttled (this is not a rate-limit test).
  writeFileSync(
    configPath,
    JSON.stringify({
      limits: { walletRequestsPerSecond: 10_000, signedRequestsPer5Minutes: 10_000_000 },
    }),
  );
  const args = [
    '--config',
    configPath,
    '--snapshot-records',
    String(options.snapshotRecords ?? 40),
  ];
  const [killMin, killMax] = options.killAfterMs ?? [200, 1200];
  const ledger: LedgerEntry[] = [];
  let adminToken = '';
  let snapshotRecoveries = 0;
  const cleanReplay = new PrefixReplay();
  let tornTails = 0;
  let archives = 0;
  let lostFiles = 0;
  let replaysRefused = 0;
  let child: Child | undefined;
  let cycle = 0;
  let failed = false;

  const admin = (rest: string, method: string, path: string, body?: unknown) =>
    http(method, `${rest}${path}`, body, { authorization: `Bearer ${adminToken}` });

  try {
    // ---- a new venue: prices, wallets with access and collateral --------------------------------
    child = await startChild(dir, args);
    adminToken =
      child.ready.adminToken ?? fail('no admin token on a new data directory', options.seed, 0);
    const inviteCode =
      child.ready.inviteCode ?? fail('no invite code on a new data directory', options.seed, 0);
    let rest = child.ready.rest;
    const net = (await http('GET', `${rest}/network`)).body as unknown as NetworkInfo;
    const wallets = KEYS.slice(0, Math.min(5, options.wallets ?? 4)).map(
      (k) => new Wallet(k as `0x${string}`, net),
    );
    const oracle = await admin(rest, 'POST', '/admin/oracle', { prices: { 'BTC-PERP': '65000' } });
    if (oracle.status !== 200) fail(`oracle: ${JSON.stringify(oracle.body)}`, options.seed, 0);
    for (const w of wallets) {
      const r = await w.referral(inviteCode);
      const res = await http('POST', `${rest}/referral/apply`, r.body, r.headers);
      if (res.status !== 201)
        fail(`invite: ${res.status} ${JSON.stringify(res.body)}`, options.seed, 0);
      try {
        await fundWallet(rest, adminToken, net, w, '1000000');
      } catch (e) {
        // The child's log says why the service refused (a 500 logs its stack there).
        fail(`funding: ${(e as Error).message}\n${child.stderr.join('\n')}`, options.seed, 0);
      }
    }

    for (cycle = 1; cycle <= options.cycles; cycle++) {
      // ---- load, then a kill at a random moment ---------------------------------------------
      const sockets = await Promise.all(
        wallets.map(async (w) => {
          const ws = await WsClient.connect(child!.ready.ws);
          const auth = await ws.request({
            type: 'authenticate',
            signature: await w.authenticate(),
          });
          if (auth.type !== 'authenticateSuccess')
            fail(`authenticate: ${JSON.stringify(auth)}`, options.seed, cycle);
          return ws;
        }),
      );
      const killAt = killMin + Math.floor(rnd() * (killMax - killMin));
      let killed = false;
      const sends: Promise<void>[] = [];
      const workers = wallets.map(async (w, wi) => {
        const ws = sockets[wi] as WsClient;
        // Up to three requests in flight per wallet, so acknowledgements overlap group commits;
        // a wallet's requests are answered in order, so the oldest is the one to wait for.
        const pending: Promise<void>[] = [];
        while (!killed) {
          const entry = await nextRequest(w, rnd, ledger);
          if (killed) break;
          ledger.push(entry);
          const p = send(rest, ws, entry).catch(() => {});
          sends.push(p);
          pending.push(p);
          if (pending.length >= 3) await pending.shift();
        }
      });
      await new Promise((r) => setTimeout(r, killAt));
      killed = true;
      // Every fourth cycle from the second, a clean stop under load instead of a kill, then the
      // journal is archived (the operator's procedure: it needs the stop's snapshot and its
      // read-model checkpoint), so the restart and every check run on an archived journal.
      const archiveCycle = cycle % 4 === 2;
      child.proc.kill(archiveCycle ? 'SIGTERM' : 'SIGKILL');
      const exitCode = await child.exited;
      if (archiveCycle) {
        if (exitCode !== 0)
          fail(
            `a SIGTERM under load exited with ${exitCode}:\n${child.stderr.join('\n')}`,
            options.seed,
            cycle,
          );
        const moved = await archiveJournal(dir);
        if (moved === null)
          fail(
            '--archive-journal after a clean stop under load moved nothing',
            options.seed,
            cycle,
          );
        archives++;
        log(`cycle ${cycle}: archived journal records ${moved}`);
      }
      await Promise.allSettled([...workers, ...sends]);
      for (const ws of sockets) await ws.close().catch(() => {});
      for (const e of ledger) if (e.status === 'sent') e.status = 'unanswered';
      // A kill rarely lands inside a write: now and then, leave what one leaves.
      const torn = rnd() < 0.25 ? tearTail(dir, rnd) : null;
      // Now and then, what a crash (or a bad disk) does to the files beside the journal, so the
      // restart takes its other recovery paths and every check still holds.
      const lost = loseRecoveryFiles(dir, cycle);
      if (lost !== null) {
        lostFiles++;
        log(`cycle ${cycle}: ${lost}`);
      }

      // ---- restart and reconcile -------------------------------------------------------------
      const restartAt = performance.now();
      child = await startChild(dir, args);
      if (
        torn !== null &&
        !child.stderr.some((l) =>
          l.includes(`cut a torn record of ${torn.bytes} bytes at offset ${torn.offset}`),
        )
      )
        fail(
          `a torn record of ${torn.bytes} bytes left at offset ${torn.offset} was not cut with its log line:\n${child.stderr.join('\n')}`,
          options.seed,
          cycle,
        );
      const readyAt = performance.now();
      rest = child.ready.rest;
      if (child.stderr.some((l) => l.startsWith('recovered from snapshot'))) snapshotRecoveries++;
      if (child.stderr.some((l) => l.includes('cut a torn record'))) tornTails++;
      const live = (await admin(rest, 'GET', '/admin/state-hash')).body as {
        seq: number;
        hash: string;
      };
      const checkAt = performance.now();
      const replayed = cleanReplay.advance(dir, live.seq);
      const replayMs = performance.now() - checkAt;
      if ('records' in replayed)
        fail(
          `journal has ${replayed.records} records, service reports seq ${live.seq}`,
          options.seed,
          cycle,
        );
      if (replayed.hash !== live.hash) {
        fail(
          `state hash after restart ${live.hash} differs from a clean replay of ${live.seq} records: ${replayed.hash}\n${child.stderr.join('\n')}`,
          options.seed,
          cycle,
        );
      }
      await checkTradeHistory(rest, admin, cleanReplay, dir, wallets, options.seed, cycle);
      await checkReportReplay(
        child.ready.ws,
        cleanReplay,
        wallets[cycle % wallets.length] as Wallet,
        options.seed,
        cycle,
      );
      const counts = replayed.admitted;
      for (const e of ledger) {
        const n = counts.get(authKey(e.wallet, e.nonce)) ?? 0;
        if (e.status === 'acked' && n !== 1)
          fail(
            `acknowledged ${e.kind} ${e.wallet}/${e.nonce} was admitted by ${n} journal records`,
            options.seed,
            cycle,
          );
        if (n > 1)
          fail(
            `${e.kind} ${e.wallet}/${e.nonce} was admitted by ${n} journal records`,
            options.seed,
            cycle,
          );
      }
      replaysRefused += await checkReplaysRefused(
        rest,
        child.ready.ws,
        wallets,
        ledger,
        options.seed,
        cycle,
      );
      log(
        `cycle ${cycle}: ${archiveCycle ? 'stopped (SIGTERM) and archived' : 'killed'} after ${killAt} ms; seq ${live.seq}; ledger ${ledger.length}; ready after ${Math.round(readyAt - restartAt)} ms, checked in ${Math.round(performance.now() - readyAt)} ms (replay ${Math.round(replayMs)} ms)`,
      );
    }

    // ---- expiry: every acknowledged GTD order stops working at its expiry, never before ----------
    const gtd = ledger.filter((e) => e.kind === 'gtd' && e.status === 'acked');
    const lastExpiry = Math.max(0, ...gtd.map((e) => e.expiryMs ?? 0));
    // The service's wake timer submits a tick within 250 ms of a due expiry.
    while (Date.now() < lastExpiry + 1_500) await new Promise((r) => setTimeout(r, 200));
    const live = (await admin(child.ready.rest, 'GET', '/admin/state-hash')).body as {
      seq: number;
      hash: string;
    };
    const commands = readJournal(dir).slice(0, live.seq);
    const replayed = reduceAll(createEngineState({}, commands[0]?.time ?? 0), commands);
    if (stateHash(replayed.state) !== live.hash)
      fail('final state hash differs from a clean replay', options.seed, cycle);
    const lastReport = new Map<string, { status: string; time: number }>();
    for (const events of replayed.events) for (const e of events) noteReport(lastReport, e);
    for (const e of gtd) {
      const id = Number(e.orderId);
      if (replayed.state.orders.has(id))
        fail(`GTD order ${id} still works after its expiry ${e.expiryMs}`, options.seed, cycle);
      const r = lastReport.get(String(id));
      if (r?.status === 'Expired' && r.time < (e.expiryMs ?? 0))
        fail(`GTD order ${id} expired at ${r.time}, before ${e.expiryMs}`, options.seed, cycle);
    }

    const count = (s: Status) => ledger.filter((e) => e.status === s).length;
    const finalCounts = admittedNonces(commands, replayed.events);
    return {
      cycles: options.cycles,
      sent: ledger.length,
      acknowledged: count('acked'),
      refused: count('refused'),
      refusedCodes: ledger
        .filter((e) => e.status === 'refused')
        .reduce<Record<string, number>>((acc, e) => {
          const r = e.reply as { code?: unknown; error?: unknown } | undefined;
          const code = String(r?.code ?? r?.error ?? 'unknown').slice(0, 40);
          acc[code] = (acc[code] ?? 0) + 1;
          return acc;
        }, {}),
      unanswered: count('unanswered'),
      appliedWithoutAck: ledger.filter(
        (e) => e.status === 'unanswered' && finalCounts.has(authKey(e.wallet, e.nonce)),
      ).length,
      journalRecords: live.seq,
      snapshotRecoveries,
      replaysFromGenesis: cleanReplay.fromGenesis,
      tornTails,
      archives,
      lostFiles,
      replaysRefused,
      gtdChecked: gtd.length,
      dataDir: dir,
    };
  } catch (e) {
    failed = true;
    if (e instanceof CrashCheckError) e.message += `\n(data directory kept: ${dir})`;
    throw e;
  } finally {
    if (child !== undefined && child.proc.exitCode === null) {
      child.proc.kill('SIGTERM');
      await child.exited;
    }
    rmSync(configPath, { force: true });
    if (!options.keep && !failed) rmSync(dir, { recursive: true, force: true });
  }
}

function noteReport(out: Map<string, { status: string; time: number }>, e: EngineEvent): void {
  if (e.type !== 'executionReport' || !('order' in e)) return;
  const o = (
    e as unknown as { order: { orderId: number | string; ordStatus: string }; time: number }
  ).order;
  out.set(String(o.orderId), {
    status: o.ordStatus,
    time: (e as unknown as { time: number }).time,
  });
}

/** Picks and signs the next request of a wallet. */
async function nextRequest(
  w: Wallet,
  rnd: () => number,
  ledger: readonly LedgerEntry[],
): Promise<LedgerEntry> {
  const nonce = freshNonce();
  const deadline = Wallet.deadline();
  const r = rnd();
  if (r < 0.25) {
    const mine = ledger.filter((e) => e.wallet === w.address && e.orderId !== undefined);
    const target = mine[Math.floor(rnd() * mine.length)];
    if (target !== undefined) {
      const signature = await w.sign('Cancel', {
        market: 1,
        orderId: BigInt(target.orderId as string),
        cloid: ZERO16,
        nonce,
        deadline,
      });
      return {
        wallet: w.address,
        nonce,
        kind: 'cancel',
        message: { type: 'cancelOrder', signature },
        status: 'sent',
      };
    }
  }
  if (r > 0.92) {
    const leverage = (2 + Math.floor(rnd() * 20)) * 100;
    const signature = await w.sign('UpdateLeverage', {
      market: 1,
      leverage,
      flags: 0,
      nonce,
      deadline,
    });
    return {
      wallet: w.address,
      nonce,
      kind: 'leverage',
      message: { leverage, instrument: 'BTC-PERP', marginMode: 'Cross', signature },
      status: 'sent',
    };
  }
  const isBuy = rnd() < 0.5;
  // Buyers lean up and sellers down so a share of the orders cross and trade.
  const ticks = Math.floor(rnd() * 40) - (isBuy ? 10 : 30);
  const price = 65_000n * PRICE + BigInt(ticks) * (PRICE / 2n);
  const quantity = BigInt(1 + Math.floor(rnd() * 20)) * 10n;
  const gtd = r > 0.8;
  const expiryMs = gtd
    ? (Math.floor(Date.now() / 1000) + 2 + Math.floor(rnd() * 3)) * 1000
    : undefined;
  const signature = await w.sign('Order', {
    market: 1,
    isBuy,
    orderType: 0,
    timeInForce: gtd ? 1 : 0,
    price,
    triggerPrice: 0n,
    quantity,
    flags: 0,
    expiry: BigInt((expiryMs ?? 0) / 1000),
    cloid: ZERO16,
    parentCloid: ZERO16,
    nonce,
    deadline,
  });
  return {
    wallet: w.address,
    nonce,
    kind: gtd ? 'gtd' : 'order',
    message: { type: 'placeOrder', signature },
    status: 'sent',
    ...(expiryMs === undefined ? {} : { expiryMs }),
  };
}

/** Sends a request and records its answer in the ledger entry. */
async function send(rest: string, ws: WsClient, e: LedgerEntry): Promise<void> {
  if (e.kind === 'leverage') {
    const res = await http('POST', `${rest}/update_leverage`, e.message);
    e.reply = res.body;
    e.status = res.status === 200 && res.body.status === 'Submitted' ? 'acked' : 'refused';
    return;
  }
  const reply: Msg = await ws.request(e.message, 10_000);
  e.reply = reply;
  if (reply.type === 'orderAck' || reply.type === 'cancelAck') {
    e.status = 'acked';
    const order = reply.order as { orderId?: string } | undefined;
    if (e.kind !== 'cancel' && order?.orderId !== undefined) e.orderId = order.orderId;
  } else {
    e.status = 'refused';
  }
}

/** Re-sends acknowledged signed requests after a restart: each must be refused as a replay. */
async function checkReplaysRefused(
  rest: string,
  wsUrl: string,
  wallets: readonly Wallet[],
  ledger: readonly LedgerEntry[],
  seed: number,
  cycle: number,
): Promise<number> {
  // Signed a moment ago: inside the nonce window and before the 60 s deadline, so the only
  // reason left to refuse it is the replay.
  const recent = Date.now() - 30_000;
  const acked = ledger.filter((e) => e.status === 'acked' && Number(e.nonce) > recent);
  // A GTC order: a GTD one may be refused for its passed expiry before its nonce is looked at.
  const order = [...acked].reverse().find((e) => e.kind === 'order');
  const leverage = [...acked].reverse().find((e) => e.kind === 'leverage');
  let refused = 0;
  if (order !== undefined) {
    const w = wallets.find((x) => x.address === order.wallet) as Wallet;
    const ws = await WsClient.connect(wsUrl);
    try {
      await ws.request({ type: 'authenticate', signature: await w.authenticate() });
      const reply = await ws.request(order.message);
      if (reply.type !== 'error' || !/replay/i.test(JSON.stringify(reply))) {
        fail(
          `a replayed order ${order.wallet}/${order.nonce} was not refused as a replay: ${JSON.stringify(reply)}`,
          seed,
          cycle,
        );
      }
      refused++;
    } finally {
      await ws.close();
    }
  }
  if (leverage !== undefined) {
    const res = await retryReset(() => http('POST', `${rest}/update_leverage`, leverage.message));
    if (res.status !== 400 || !/replay/i.test(JSON.stringify(res.body))) {
      fail(
        `a replayed leverage change was not refused as a replay: ${res.status} ${JSON.stringify(res.body)}`,
        seed,
        cycle,
      );
    }
    refused++;
  }
  return refused;
}
