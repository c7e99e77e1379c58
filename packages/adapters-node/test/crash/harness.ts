/**
 * Crash harness (reliability-anchors 5.4 F1, F8, F10, F11; 5.6): runs the built CLI as a child
 * process on a data directory, drives it with signed requests from several wallets (over the
 * trading WebSocket: GTC, GTD, DAY and IOC orders, cancels by order id and by cloid, replaces,
 * cancel-alls, margin transfers both ways, liquidation claims that no auction takes; over REST:
 * leverage changes and withdrawals, paid out on the embedded chain), plus a fifth wallet that
 * places and cancels orders behind its long-lived one on one price level, so the level is
 * repacked (engine rules 10) under load. It SIGKILLs the service at a random moment, restarts it
 * and reconciles three views:
 *
 * - the client ledger: every request sent, and whether it was acknowledged, refused or left
 *   without an answer by the kill;
 * - the journal on disk, read independently (framing checked, payloads decoded here);
 * - the restarted service's state hash (`GET /api/admin/state-hash`).
 *
 * After every restart: the service's hash equals a clean replay of the journal prefix it reports
 * (replayed with the same build the child runs); every acknowledged request, and every one refused
 * for a business reason (its nonce spent), was admitted by exactly one journal record, and no
 * request by two (a request is one record, so it is applied whole or not at all); the newest
 * nonce-spending request of every kind, and a socket's `authenticate`, re-sent, is refused as a
 * replay; once no deposit or withdrawal is pending, each wallet's token balance on the embedded
 * chain is what the journal's completed withdrawals paid it (no withdrawal paid twice or lost);
 * every funding time of a market paying every minute, up to the last record, paid both holders
 * once (restarts due just before a funding time stay down past it); once its read models are
 * complete again (from the snapshot's read-model checkpoint or the journal), each wallet's trade
 * history is the clean replay's. Unanswered requests (the kill came first) may be admitted or
 * not, never twice. At the end: every acknowledged GTD order (many expire while the service is
 * down) is no longer working once its expiry has passed, and none expired early. Snapshots are
 * taken often (`--snapshot-records`), so kills also land during snapshot writes and restarts go
 * through snapshot recovery. Every fourth cycle (from the second) stops the service cleanly under
 * load instead and runs `--archive-journal` before the restart: the journal is then read as the
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
/** The market listed by the harness that pays funding every minute. */
const FUNDING_MARKET = 7;
const FUNDING_INTERVAL_MS = 60_000;
const ZERO16 = `0x${'0'.repeat(32)}`;

/** Options of {@link runCrashHarness}. */
export interface CrashOptions {
  readonly cycles: number;
  readonly seed: number;
  /** Wallets driving load (at most 4: the fifth test key holds the long-lived orders). */
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
  /** Acknowledged GTD orders whose expiry fell while the service was down. */
  readonly gtdExpiredWhileDown: number;
  /** DAY orders still working at the end (each checked to expire at the next 00:00 UTC). */
  readonly dayOrdersWorking: number;
  /** Restarts held back past a funding time of the one-minute market. */
  readonly fundingWhileDown: number;
  /** Funding times of the one-minute market settled (each checked paid once to both holders). */
  readonly fundingTimesChecked: number;
  /** Checks that found the churn level repacked since the one before (engine rules 10). */
  readonly repackedChecks: number;
  /** Kinds of request whose re-sent signature a restarted service refused as a replay. */
  readonly replayedKinds: readonly string[];
  /** Acknowledged withdrawals (the completed ones each checked paid on the embedded chain once). */
  readonly withdrawalsCompleted: number;
  /** Acknowledged (or nonce-spending) requests by kind. */
  readonly admittedKinds: Readonly<Record<string, number>>;
  readonly dataDir: string;
}

type Status = 'sent' | 'acked' | 'refused' | 'unanswered';

/**
 * What a ledger entry asked for. Over the trading WebSocket: orders (GTC, GTD, and GTC orders
 * queued behind a long-lived one at {@link CHURN_PRICE}), cancels by order id and by cloid,
 * replaces, cancel-alls, margin transfers (both directions) and liquidation claims (no auction
 * exists: a business refusal that spends its nonce); over REST: leverage changes and
 * withdrawals (paid out on the embedded chain); `auth` is a socket's `authenticate`.
 */
type Kind =
  | 'order'
  | 'gtd'
  | 'churn'
  | 'cancel'
  | 'cancelCloid'
  | 'replace'
  | 'cancelAll'
  | 'transfer'
  | 'claim'
  | 'leverage'
  | 'withdrawal'
  | 'deposit'
  | 'referral'
  | 'auth';

/** Kinds answered over REST; the rest over the trading WebSocket. */
const REST_KINDS: ReadonlySet<Kind> = new Set(['leverage', 'withdrawal', 'deposit', 'referral']);

/** A REST kind's path. */
function restPath(kind: Kind): string {
  return kind === 'leverage'
    ? '/update_leverage'
    : kind === 'withdrawal'
      ? '/margin/withdrawal'
      : kind === 'deposit'
        ? '/margin/deposit'
        : '/referral/apply';
}

/** Sends a REST kind's request. */
function sendRest(rest: string, e: LedgerEntry) {
  if (e.kind === 'referral') {
    const m = e.message as { body: string; headers: Record<string, string> };
    return http('POST', `${rest}/referral/apply`, m.body, m.headers);
  }
  return http('POST', `${rest}${restPath(e.kind)}`, e.message);
}

interface LedgerEntry {
  readonly wallet: string;
  readonly nonce: bigint;
  readonly kind: Kind;
  readonly message: Record<string, unknown>;
  status: Status;
  orderId?: string;
  cloid?: string;
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
  /** `${account}|${market}|${fundingTime}` -> `Funding` reports after the records replayed. */
  readonly funding = new Map<string, number>();
  /** Micro-units of completed withdrawals per account after the records replayed. */
  readonly withdrawn = new Map<string, bigint>();
  /** Micro-units of completed deposits per account after the records replayed. */
  readonly deposited = new Map<string, bigint>();
  /** Time of the last record replayed, ms. */
  lastTime = 0;
  /** Orders ever placed at {@link CHURN_PRICE} (accepted reports), for {@link churnLevelRepacked}. */
  private churnAccepted = 0;

  /** Chain commands (deposits, withdrawals) the replayed state still has pending. */
  pendingChain(): number {
    let n = 0;
    this.state?.pending.forEach(() => {
      n++;
    });
    return n;
  }

  private churnSeen = { slots: 0, accepted: 0 };

  /**
   * Whether the {@link CHURN_PRICE} bid level was repacked since the last call: without a
   * repack its slots (from the long-lived order at its front) only grow, by one per order placed
   * there (and one per replace that sent an order there to the back), so fewer new slots than
   * orders placed since means one was.
   */
  churnLevelRepacked(): boolean {
    const level = this.state?.markets.get(1)?.bids.find((l) => l.price === CHURN_PRICE);
    if (level === undefined) return false;
    const slots = level.tail - level.base;
    const repacked = slots < this.churnSeen.slots + (this.churnAccepted - this.churnSeen.accepted);
    this.churnSeen = { slots, accepted: this.churnAccepted };
    return repacked;
  }

  private note(events: readonly (readonly EngineEvent[])[]): void {
    for (const list of events)
      for (const e of list) {
        if (e.type !== 'executionReport') continue;
        if (e.kind === 'Funding')
          this.funding.set(
            `${e.account}|${e.market}|${e.fundingTime}`,
            (this.funding.get(`${e.account}|${e.market}|${e.fundingTime}`) ?? 0) + 1,
          );
        else if (e.kind === 'DepositMargin' && e.status === 'Completed')
          this.deposited.set(e.account, (this.deposited.get(e.account) ?? 0n) + (e.amount ?? 0n));
        else if (e.kind === 'WithdrawMargin' && e.status === 'Completed')
          this.withdrawn.set(e.account, (this.withdrawn.get(e.account) ?? 0n) + (e.amount ?? 0n));
        else if (
          e.kind === 'OrderAccepted' &&
          e.order.market === 1 &&
          e.order.side === 'Buy' &&
          e.order.price === CHURN_PRICE
        )
          this.churnAccepted++;
      }
  }

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
      this.funding.clear();
      this.withdrawn.clear();
      this.deposited.clear();
      this.churnAccepted = 0;
      this.churnSeen = { slots: 0, accepted: 0 };
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
    this.note(r.events);
    this.lastTime = fresh[fresh.length - 1]?.time ?? this.lastTime;
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
  restartLog: () => string = () => '',
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
        `wallet ${w.address}: /account/trades after the restart (${(got as unknown[]).length} rows) is not the clean replay's (${expected.length} rows); trade ids served ${JSON.stringify((got as { tradeId?: unknown }[]).map((t) => t.tradeId))}, replayed ${JSON.stringify((expected as { tradeId?: unknown }[]).map((t) => t.tradeId))}\nrestart log:\n${restartLog()}`,
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

/**
 * Whether a refusal is a business one (the request passed its signature and nonce checks, and
 * its record spent the nonce): an order, cancel or replace naming an order that is unknown or
 * already ended (4041), a replace below the order's filled quantity (4034), margin refusals (REST `Rejected`, `marginTransferred` `Rejected`), a
 * claim with no live auction.
 */
function isBusinessRefusal(kind: Kind, reply: unknown): boolean {
  const r = reply as { type?: unknown; status?: unknown; code?: unknown; message?: unknown };
  if (r === undefined || r === null) return false;
  if (r.status === 'Rejected') return true;
  if (r.type !== 'error') return false;
  return (
    r.code === 4041 ||
    // A replace to no more than the order's filled quantity (the load's quantities are valid lots).
    (kind === 'replace' && r.code === 4034) ||
    (r.code === 4000 && /no live liquidation auction/.test(String(r.message)))
  );
}

/**
 * The embedded chain agrees with the journal: once no deposit or withdrawal is pending any
 * more (a restart settles what a kill left pending, from the chain's answer), each wallet's
 * token balance is what the faucet gave it, less the deposits and plus the withdrawals the
 * journal completed. A withdrawal paid twice (the chain paid it, the kill lost the settlement, the
 * restart paid it again) or paid and refunded shows here.
 */
async function checkChain(
  rest: string,
  admin: (rest: string, method: string, path: string) => Promise<{ body: unknown }>,
  replay: PrefixReplay,
  dir: string,
  wallets: readonly Wallet[],
  faucets: ReadonlyMap<string, bigint>,
  seed: number,
  cycle: number,
): Promise<void> {
  for (let i = 0; ; i++) {
    const { seq } = (await admin(rest, 'GET', '/admin/state-hash')).body as { seq: number };
    if ('records' in replay.advance(dir, seq)) fail(`journal shorter than seq ${seq}`, seed, cycle);
    if (replay.pendingChain() === 0) break;
    if (i === 400)
      fail(`${replay.pendingChain()} chain commands still pending after the restart`, seed, cycle);
    await new Promise((r) => setTimeout(r, 25));
  }
  for (const w of wallets) {
    const res = await http('GET', `${rest}/chain/token/${w.address}`);
    const [whole = '0', fraction = ''] = String(res.body.balance).split('.');
    const balance = BigInt(whole) * 1_000_000n + BigInt(`${fraction}000000`.slice(0, 6));
    const withdrawn = replay.withdrawn.get(w.address) ?? 0n;
    const deposited = replay.deposited.get(w.address) ?? 0n;
    const expected = (faucets.get(w.address) ?? 0n) - deposited + withdrawn;
    if (balance !== expected)
      fail(
        `wallet ${w.address}: chain balance ${res.body.balance} after the restart, but the faucet gave ${faucets.get(w.address)} micro-units and the journal completed deposits of ${deposited} and withdrawals of ${withdrawn}`,
        seed,
        cycle,
      );
  }
}

/**
 * Funding of the one-minute market after the records replayed: no (account, funding time) paid
 * twice, and every funding time after `from` up to the last replayed record paid each holder
 * once (a command stamped after a funding time settles it first). Returns the funding times
 * checked.
 */
function checkFunding(
  replay: PrefixReplay,
  from: number,
  holders: readonly string[],
  seed: number,
  cycle: number,
): number {
  for (const [key, n] of replay.funding)
    if (n !== 1) fail(`funding ${key} was paid ${n} times`, seed, cycle);
  let checked = 0;
  for (
    let t = Math.floor(from / FUNDING_INTERVAL_MS) * FUNDING_INTERVAL_MS + FUNDING_INTERVAL_MS;
    t <= replay.lastTime;
    t += FUNDING_INTERVAL_MS
  ) {
    for (const h of holders)
      if (replay.funding.get(`${h}|${FUNDING_MARKET}|${t}`) !== 1)
        fail(
          `funding time ${t} of market ${FUNDING_MARKET} was not paid to ${h} (records up to ${replay.lastTime})`,
          seed,
          cycle,
        );
    checked++;
  }
  return checked;
}

/** A ledger entry's key in {@link admittedNonces} (a referral's nonce is its `x-nonce` header). */
function keyOf(e: LedgerEntry): string {
  return authKey(e.wallet, e.kind === 'referral' ? referralNonce(e.nonce) : e.nonce);
}

function referralNonce(nonce: bigint): string {
  return `n${nonce}xyz`;
}

function authKey(wallet: string, nonce: bigint | string): string {
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
    else if (c.type === 'applyReferral') key = authKey(c.wallet, c.nonce);
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
      limits: {
        walletRequestsPerSecond: 10_000,
        signedRequestsPer5Minutes: 10_000_000,
        // New wallets' referral applies all come from this one address.
        noAccessRequestsPerSecondPerIp: 10_000,
        noAccessRequestsPer5MinutesPerIp: 10_000_000,
      },
      // A long soak refers a few new wallets every cycle with the bootstrap invite code.
      bootstrapInviteUses: 1_000_000,
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
  /** Micro-units the faucet gave each wallet (only before the load: its answers are never lost). */
  const faucets = new Map<string, bigint>();
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
    const wallets = KEYS.slice(0, Math.min(4, options.wallets ?? 4)).map(
      (k) => new Wallet(k as `0x${string}`, net),
    );
    // Sends no load: holds the long-lived order at the front of the churn level and, with the
    // first load wallet, a position in a market that pays funding every minute.
    const keeper = new Wallet(KEYS[4] as `0x${string}`, net);
    const oracle = await admin(rest, 'POST', '/admin/oracle', { prices: { 'BTC-PERP': '65000' } });
    if (oracle.status !== 200) fail(`oracle: ${JSON.stringify(oracle.body)}`, options.seed, 0);
    for (const w of [...wallets, keeper]) {
      const r = await w.referral(inviteCode);
      const res = await http('POST', `${rest}/referral/apply`, r.body, r.headers);
      if (res.status !== 201)
        fail(`invite: ${res.status} ${JSON.stringify(res.body)}`, options.seed, 0);
      faucets.set(w.address, 1_000_000_000_000n);
      try {
        await fundWallet(rest, adminToken, net, w, '1000000');
      } catch (e) {
        // The child's log says why the service refused (a 500 logs its stack there).
        fail(`funding: ${(e as Error).message}\n${child.stderr.join('\n')}`, options.seed, 0);
      }
    }

    // Tokens the keeper deposits under load, a few at a time.
    const spare = await admin(rest, 'POST', '/admin/faucet', {
      wallet: keeper.address,
      amount: '100000',
    });
    if (spare.status !== 200) fail(`faucet: ${JSON.stringify(spare.body)}`, options.seed, 0);
    faucets.set(keeper.address, (faucets.get(keeper.address) ?? 0n) + 100_000_000_000n);

    // A market paying funding every minute (the shortest interval), with a position on each
    // side, so restarts land between funding times, and some of them after one that passed while
    // the service was down: each must be settled once (engine rules 6).
    const listed = await admin(rest, 'POST', '/admin/instruments', {
      id: FUNDING_MARKET,
      symbol: 'MIN-PERP',
      tickSize: '0.5',
      lotSize: '0.0001',
      quantityDecimals: 4,
      maxLeverage: 20,
      openInterestCap: '100',
      makerFeeRate: '0',
      takerFeeRate: '0',
      funding: { intervalMs: FUNDING_INTERVAL_MS },
    });
    if (listed.status !== 200) fail(`listing: ${JSON.stringify(listed.body)}`, options.seed, 0);
    const priced = await admin(rest, 'POST', '/admin/oracle', { prices: { 'MIN-PERP': '1000' } });
    if (priced.status !== 200) fail(`oracle: ${JSON.stringify(priced.body)}`, options.seed, 0);
    const fundingHolders = [keeper.address, (wallets[0] as Wallet).address];
    const setupOrder = async (
      w: Wallet,
      market: number,
      isBuy: boolean,
      price: bigint,
      quantity: bigint,
    ): Promise<void> => {
      const ws = await WsClient.connect(child!.ready.ws);
      try {
        await ws.request({ type: 'authenticate', signature: await w.authenticate() });
        const signature = await w.sign('Order', {
          market,
          isBuy,
          orderType: 0,
          timeInForce: 0,
          price,
          triggerPrice: 0n,
          quantity,
          flags: 0,
          expiry: 0n,
          cloid: ZERO16,
          parentCloid: ZERO16,
          nonce: freshNonce(),
          deadline: Wallet.deadline(),
        });
        const ack = await ws.request({ type: 'placeOrder', signature });
        if (ack.type !== 'orderAck') fail(`setup order: ${JSON.stringify(ack)}`, options.seed, 0);
      } finally {
        await ws.close();
      }
    };
    await setupOrder(keeper, FUNDING_MARKET, true, 1000n * PRICE, 100n);
    await setupOrder(wallets[0] as Wallet, FUNDING_MARKET, false, 1000n * PRICE, 100n);
    await setupOrder(keeper, 1, true, CHURN_PRICE, 10n);
    // 127 holes behind it before the load starts (a repack comes after 128 more than twice its
    // live orders), so the first repack comes early in the load, and more every ~130 pairs.
    const churn: { cloid?: string | undefined } = {};
    {
      const ws = await WsClient.connect(child.ready.ws);
      await ws.request({ type: 'authenticate', signature: await keeper.authenticate() });
      for (let i = 0; i < 254; i++) {
        const entry = await nextChurn(keeper, rnd, churn);
        ledger.push(entry);
        await send(rest, ws, entry);
        if (entry.status !== 'acked')
          fail(`churn setup: ${JSON.stringify(entry.reply)}`, options.seed, 0);
      }
      await ws.close();
    }
    // Funding times after this one must each pay both holders once.
    const fundingFrom = Date.now();
    let repacked = 0;
    const granted = new Set<string>();
    const replayedKinds = new Set<string>();
    let fundingWhileDown = 0;
    let gtdExpiredWhileDown = 0;

    for (cycle = 1; cycle <= options.cycles; cycle++) {
      // ---- load, then a kill at a random moment ---------------------------------------------
      const sockets = await Promise.all(
        [...wallets, keeper].map(async (w) => {
          const ws = await WsClient.connect(child!.ready.ws);
          const nonce = freshNonce();
          const message = { type: 'authenticate', signature: await w.authenticate(nonce) };
          const auth = await ws.request(message);
          if (auth.type !== 'authenticateSuccess')
            fail(`authenticate: ${JSON.stringify(auth)}`, options.seed, cycle);
          ledger.push({ wallet: w.address, nonce, kind: 'auth', message, status: 'acked' });
          return ws;
        }),
      );
      const killAt = killMin + Math.floor(rnd() * (killMax - killMin));
      let killed = false;
      const sends: Promise<void>[] = [];
      const workers = [...wallets, keeper].map(async (w, wi) => {
        const ws = sockets[wi] as WsClient;
        if (w === keeper) {
          // Places an order behind its long-lived one and cancels it by cloid, one after the
          // other: each pair leaves one more hole in the level, and every ~130 a repack.
          let first = true;
          while (!killed) {
            // First in each cycle and now and then between pairs, a deposit of its spare tokens
            // (permit + deposit).
            const deposit = churn.cloid === undefined && (first || rnd() < 0.06);
            first = false;
            const entry = deposit
              ? await nextDeposit(w, rest, rnd)
              : await nextChurn(w, rnd, churn);
            if (killed) break;
            ledger.push(entry);
            const p = send(rest, ws, entry).catch(() => {});
            sends.push(p);
            await p;
          }
          return;
        }
        // Up to three requests in flight per wallet, so acknowledgements overlap group commits;
        // a wallet's requests are answered in order, so the oldest is the one to wait for.
        const pending: Promise<void>[] = [];
        // The first wallet opens each cycle with one request of each rare kind (a claim, a
        // referral, a cancel-all, a withdrawal, a transfer), so every cycle has them to re-send.
        const rare = wi === 0 ? [0.385, 0.505, 0.3, 0.32, 0.36] : [];
        while (!killed) {
          const entry = await nextRequest(w, rnd, ledger, inviteCode, rare.shift());
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
      const downAt = Date.now();
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

      // A funding time due within a few seconds: stay down past it, so the restart finds it
      // missed and settles it (once) on its own.
      const nextFunding = Math.ceil((Date.now() + 1) / FUNDING_INTERVAL_MS) * FUNDING_INTERVAL_MS;
      if (nextFunding - Date.now() < 4_000) {
        await new Promise((r) => setTimeout(r, nextFunding + 300 - Date.now()));
        fundingWhileDown++;
        log(`cycle ${cycle}: stayed down past the funding time ${nextFunding}`);
      }

      // ---- restart and reconcile -------------------------------------------------------------
      const restartAt = performance.now();
      child = await startChild(dir, args);
      const upAt = Date.now();
      gtdExpiredWhileDown += ledger.filter(
        (e) =>
          e.kind === 'gtd' &&
          e.status === 'acked' &&
          (e.expiryMs ?? 0) > downAt &&
          (e.expiryMs ?? 0) <= upAt,
      ).length;
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
      const restartLog = child.stderr;
      await checkTradeHistory(rest, admin, cleanReplay, dir, wallets, options.seed, cycle, () =>
        restartLog.filter((l) => /backfill|recover|checkpoint|snapshot/.test(l)).join('\n'),
      );
      await checkReportReplay(
        child.ready.ws,
        cleanReplay,
        wallets[cycle % wallets.length] as Wallet,
        options.seed,
        cycle,
      );
      const counts = replayed.admitted;
      for (const e of ledger) {
        const n = counts.get(keyOf(e)) ?? 0;
        if (e.status === 'acked' && n !== 1)
          fail(
            `acknowledged ${e.kind} ${e.wallet}/${e.nonce} was admitted by ${n} journal records`,
            options.seed,
            cycle,
          );
        // A well-signed request refused for a business reason was answered after its record
        // (nonce spent, nothing else) was durable: it must be in the journal once, like an ack.
        if (e.status === 'refused' && isBusinessRefusal(e.kind, e.reply) && n !== 1)
          fail(
            `${e.kind} ${e.wallet}/${e.nonce} refused for a business reason (${JSON.stringify(e.reply)}) was admitted by ${n} journal records`,
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
        [...wallets, keeper],
        ledger,
        counts,
        replayedKinds,
        options.seed,
        cycle,
      );
      await checkChain(
        rest,
        admin,
        cleanReplay,
        dir,
        [...wallets, keeper],
        faucets,
        options.seed,
        cycle,
      );
      // A referral acknowledged before the kill still grants access after it.
      for (const e of ledger) {
        if (e.kind !== 'referral' || e.status !== 'acked' || granted.has(e.wallet)) continue;
        const res = await http('GET', `${rest}/user/access-status/${e.wallet}`);
        if (res.body.hasAppAccess !== true)
          fail(
            `${e.wallet}'s acknowledged referral grants no access after the restart: ${JSON.stringify(res.body)}`,
            options.seed,
            cycle,
          );
        granted.add(e.wallet);
      }
      checkFunding(cleanReplay, fundingFrom, fundingHolders, options.seed, cycle);
      if (cleanReplay.churnLevelRepacked()) repacked++;
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
    const finalReplay = cleanReplay.advance(dir, live.seq);
    if ('records' in finalReplay || finalReplay.hash !== live.hash)
      fail('final state hash differs from a clean replay', options.seed, cycle);
    await checkChain(
      child.ready.rest,
      admin,
      cleanReplay,
      dir,
      [...wallets, keeper],
      faucets,
      options.seed,
      cycle,
    );
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
      // "Expiry is applied before any command whose time is at or after it" (engine rules 5):
      // by the first record stamped at or after it, whether the service was up or down then.
      if (r?.status === 'Expired') {
        const due = firstAtOrAfter(commands, e.expiryMs ?? 0);
        if (due !== undefined && r.time !== due)
          fail(
            `GTD order ${id} (expiry ${e.expiryMs}) expired at ${r.time}, not with the first record at or after its expiry (${due})`,
            options.seed,
            cycle,
          );
      }
    }

    // A working DAY order expires at the next 00:00 UTC after its acceptance, not yet reached.
    const DAY_MS = 86_400_000;
    const lastTime = commands[commands.length - 1]?.time ?? 0;
    let dayWorking = 0;
    replayed.state.orders.forEach((o) => {
      if (o.timeInForce !== 'DAY') return;
      dayWorking++;
      const due = Math.floor(o.createdTime / DAY_MS) * DAY_MS + DAY_MS;
      if (o.expireTime !== due || due <= lastTime)
        fail(
          `DAY order ${o.orderId} (accepted ${o.createdTime}) expires at ${o.expireTime}, not ${due}, and is working at ${lastTime}`,
          options.seed,
          cycle,
        );
    });

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
        (e) => e.status === 'unanswered' && finalCounts.has(keyOf(e)),
      ).length,
      journalRecords: live.seq,
      snapshotRecoveries,
      replaysFromGenesis: cleanReplay.fromGenesis,
      tornTails,
      archives,
      lostFiles,
      replaysRefused,
      gtdChecked: gtd.length,
      gtdExpiredWhileDown,
      dayOrdersWorking: dayWorking,
      fundingWhileDown,
      fundingTimesChecked: checkFunding(
        cleanReplay,
        fundingFrom,
        fundingHolders,
        options.seed,
        cycle,
      ),
      repackedChecks: repacked,
      replayedKinds: [...replayedKinds].sort(),
      withdrawalsCompleted: ledger.filter((e) => e.kind === 'withdrawal' && e.status === 'acked')
        .length,
      admittedKinds: ledger
        .filter((e) => finalCounts.has(keyOf(e)))
        .reduce<Record<string, number>>((acc, e) => {
          acc[e.kind] = (acc[e.kind] ?? 0) + 1;
          return acc;
        }, {}),
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

/** Time of the first command stamped at or after `time` (commands are in time order). */
function firstAtOrAfter(commands: readonly Command[], time: number): number | undefined {
  let lo = 0;
  let hi = commands.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((commands[mid] as Command).time < time) lo = mid + 1;
    else hi = mid;
  }
  return commands[lo]?.time;
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

/**
 * The price of the level the load keeps placing short-lived orders on behind one long-lived
 * order (a buy far below the crossing range, so nothing there trades): the cancels leave holes
 * behind it, and once they outnumber its live orders (engine rules 10) the level is repacked,
 * which moves the orders' slots in the state the restarts recover and the replays rebuild.
 */
export const CHURN_PRICE = 60_000n * PRICE;

/** A random non-zero cloid. */
function randomCloid(rnd: () => number): string {
  let hex = '';
  for (let i = 0; i < 4; i++)
    hex += Math.floor(rnd() * 2 ** 32)
      .toString(16)
      .padStart(8, '0');
  return hex === '0'.repeat(32) ? `0x${'0'.repeat(31)}1` : `0x${hex}`;
}

/** Picks and signs the next request of a wallet. */
async function nextRequest(
  w: Wallet,
  rnd: () => number,
  ledger: readonly LedgerEntry[],
  invite?: string,
  forced?: number,
): Promise<LedgerEntry> {
  const nonce = freshNonce();
  const deadline = Wallet.deadline();
  const r = forced ?? rnd();
  const base = { wallet: w.address, nonce, status: 'sent' as const };
  if (r < 0.29) {
    // Cancels and replaces target one of the wallet's recent orders (often already ended: 4041).
    const mine = ledger.filter((e) => e.wallet === w.address && e.orderId !== undefined).slice(-24);
    const target = mine[Math.floor(rnd() * mine.length)];
    if (target !== undefined && r < 0.15) {
      const signature = await w.sign('Cancel', {
        market: 1,
        orderId: BigInt(target.orderId as string),
        cloid: ZERO16,
        nonce,
        deadline,
      });
      return { ...base, kind: 'cancel', message: { type: 'cancelOrder', signature } };
    }
    if (target?.cloid !== undefined && r < 0.22) {
      const signature = await w.sign('Cancel', {
        market: 1,
        orderId: 0n,
        cloid: target.cloid,
        nonce,
        deadline,
      });
      return { ...base, kind: 'cancelCloid', message: { type: 'cancelOrder', signature } };
    }
    if (target !== undefined) {
      // Every order-like entry keeps its price beside the wire message (a replace's, its own).
      const price = target.message.price as bigint;
      // A smaller quantity keeps the order's place; a larger one sends it to the back of its
      // level (a new slot).
      const quantity = BigInt(1 + Math.floor(rnd() * 20)) * 10n;
      const cloid = randomCloid(rnd);
      const signature = await w.sign('Replace', {
        market: 1,
        orderId: BigInt(target.orderId as string),
        origCloid: ZERO16,
        price,
        triggerPrice: 0n,
        quantity,
        cloid,
        nonce,
        deadline,
      });
      return {
        ...base,
        kind: 'replace',
        orderId: target.orderId as string,
        cloid,
        message: { type: 'replaceOrder', signature, price, quantity },
      };
    }
  }
  if (r >= 0.29 && r < 0.31) {
    const signature = await w.sign('CancelAll', { market: 1, nonce, deadline });
    return {
      ...base,
      kind: 'cancelAll',
      message: { type: 'cancelAll', instrument: 'BTC-PERP', signature },
    };
  }
  if (r >= 0.31 && r < 0.34) {
    const dollars = 1 + Math.floor(rnd() * 20);
    const signature = await w.sign('Withdrawal', {
      amount: BigInt(dollars) * 1_000_000n,
      market: 0,
      flags: 0,
      nonce,
      deadline,
    });
    return {
      ...base,
      kind: 'withdrawal',
      message: { amount: String(dollars), instrument: null, marginMode: 'Cross', signature },
    };
  }
  if (r >= 0.34 && r < 0.38) {
    // Isolated margin is only what earlier transfers put there: many of these back are refused
    // (4100, spending the nonce).
    const back = rnd() < 0.4;
    const dollars = 1 + Math.floor(rnd() * (back ? 10 : 30));
    const signature = await w.sign('MarginTransfer', {
      amount: BigInt(dollars) * 1_000_000n,
      market: 1,
      flags: back ? 1 : 0,
      nonce,
      deadline,
    });
    return {
      ...base,
      kind: 'transfer',
      message: {
        type: 'transferMargin',
        amount: String(dollars),
        direction: back ? 'isolatedToCross' : 'crossToIsolated',
        instrument: 'BTC-PERP',
        signature,
      },
    };
  }
  if (r >= 0.5 && r < 0.51 && invite !== undefined) {
    // A wallet new to the venue applies the invite code.
    let key = '0x';
    for (let i = 0; i < 8; i++)
      key += Math.floor(rnd() * 2 ** 32)
        .toString(16)
        .padStart(8, '0');
    const newcomer = new Wallet(key as `0x${string}`, w.net);
    const message = await newcomer.referral(invite, referralNonce(nonce));
    return { ...base, wallet: newcomer.address, kind: 'referral', message };
  }
  if (r >= 0.38 && r < 0.39) {
    const signature = await w.sign('ClaimLiquidation', {
      auctionId: BigInt(1 + Math.floor(rnd() * 5)),
      quantity: 10n,
      maxPrice: 70_000n * PRICE,
      nonce,
      deadline,
    });
    return { ...base, kind: 'claim', message: { type: 'claimLiquidation', signature } };
  }
  if (r > 0.93) {
    const leverage = (2 + Math.floor(rnd() * 20)) * 100;
    const signature = await w.sign('UpdateLeverage', {
      market: 1,
      leverage,
      flags: 0,
      nonce,
      deadline,
    });
    return {
      ...base,
      kind: 'leverage',
      message: { leverage, instrument: 'BTC-PERP', marginMode: 'Cross', signature },
    };
  }
  const churn = r >= 0.39 && r < 0.5;
  const isBuy = churn || rnd() < 0.5;
  // Buyers lean up and sellers down so a share of the orders cross and trade.
  const ticks = Math.floor(rnd() * 40) - (isBuy ? 10 : 30);
  const price = churn ? CHURN_PRICE : 65_000n * PRICE + BigInt(ticks) * (PRICE / 2n);
  const quantity = BigInt(1 + Math.floor(rnd() * 20)) * 10n;
  const gtd = !churn && r > 0.8;
  // Plain orders are GTC, now and then DAY (expiring at the next 00:00 UTC: checked in the final
  // state) or IOC (never rests).
  const tif = gtd ? 1 : churn ? 0 : r < 0.55 ? 4 : r < 0.6 ? 2 : 0;
  const expiryMs = gtd
    ? (Math.floor(Date.now() / 1000) + 2 + Math.floor(rnd() * 3)) * 1000
    : undefined;
  const cloid = randomCloid(rnd);
  const signature = await w.sign('Order', {
    market: 1,
    isBuy,
    orderType: 0,
    timeInForce: tif,
    price,
    triggerPrice: 0n,
    quantity,
    flags: 0,
    expiry: BigInt((expiryMs ?? 0) / 1000),
    cloid,
    parentCloid: ZERO16,
    nonce,
    deadline,
  });
  return {
    ...base,
    kind: churn ? 'churn' : gtd ? 'gtd' : 'order',
    cloid,
    message: { type: 'placeOrder', signature, price },
    ...(expiryMs === undefined ? {} : { expiryMs }),
  };
}

/** A deposit of a few of the keeper's spare tokens: a permit for the vault and the deposit. */
async function nextDeposit(w: Wallet, rest: string, rnd: () => number): Promise<LedgerEntry> {
  const nonce = freshNonce();
  const dollars = 1 + Math.floor(rnd() * 20);
  const micro = BigInt(dollars) * 1_000_000n;
  const token = await http('GET', `${rest}/chain/token/${w.address}`);
  const permitSignature = await w.sign('Permit', {
    spender: w.net.vault.address,
    value: micro,
    nonce: BigInt(token.body.nonce as string),
    deadline: Wallet.deadline(),
  });
  const depositSignature = await w.sign('Deposit', {
    amount: micro,
    market: 0,
    flags: 0,
    nonce,
    deadline: Wallet.deadline(),
  });
  return {
    wallet: w.address,
    nonce,
    status: 'sent',
    kind: 'deposit',
    message: {
      amount: String(dollars),
      instrument: null,
      marginMode: 'Cross',
      permitSignature,
      depositSignature,
    },
  };
}

/** The keeper's next churn request: an order at {@link CHURN_PRICE}, then its cancel by cloid. */
async function nextChurn(
  w: Wallet,
  rnd: () => number,
  churn: { cloid?: string | undefined },
): Promise<LedgerEntry> {
  const nonce = freshNonce();
  const deadline = Wallet.deadline();
  const base = { wallet: w.address, nonce, status: 'sent' as const };
  if (churn.cloid !== undefined) {
    const cloid = churn.cloid;
    churn.cloid = undefined;
    const signature = await w.sign('Cancel', { market: 1, orderId: 0n, cloid, nonce, deadline });
    return { ...base, kind: 'cancelCloid', message: { type: 'cancelOrder', signature } };
  }
  const cloid = randomCloid(rnd);
  churn.cloid = cloid;
  const signature = await w.sign('Order', {
    market: 1,
    isBuy: true,
    orderType: 0,
    timeInForce: 0,
    price: CHURN_PRICE,
    triggerPrice: 0n,
    quantity: 10n,
    flags: 0,
    expiry: 0n,
    cloid,
    parentCloid: ZERO16,
    nonce,
    deadline,
  });
  return {
    ...base,
    kind: 'churn',
    cloid,
    message: { type: 'placeOrder', signature, price: CHURN_PRICE },
  };
}

/** The socket a wallet's request goes over without what the harness keeps beside it. */
function wireOf(e: LedgerEntry): Record<string, unknown> {
  const { price: _p, quantity: _q, ...wire } = e.message;
  return wire;
}

/** Sends a request and records its answer in the ledger entry. */
async function send(rest: string, ws: WsClient, e: LedgerEntry): Promise<void> {
  if (REST_KINDS.has(e.kind)) {
    const res = await sendRest(rest, e);
    e.reply = res.body;
    e.status =
      e.kind === 'referral'
        ? res.status === 201
          ? 'acked'
          : 'refused'
        : res.status === 200 && res.body.status === 'Submitted'
          ? 'acked'
          : 'refused';
    return;
  }
  const reply: Msg = await ws.request(wireOf(e), 10_000);
  e.reply = reply;
  const acked =
    reply.type === 'orderAck' ||
    reply.type === 'cancelAck' ||
    reply.type === 'replaceAck' ||
    reply.type === 'cancelAllAck' ||
    reply.type === 'claimAck' ||
    (reply.type === 'marginTransferred' && reply.status === 'Submitted');
  e.status = acked ? 'acked' : 'refused';
  if (!acked) return;
  const order = reply.order as { orderId?: string } | undefined;
  if (
    (e.kind === 'order' || e.kind === 'gtd' || e.kind === 'churn') &&
    order?.orderId !== undefined
  )
    e.orderId = order.orderId;
}

/**
 * Re-sends, after a restart, the newest signed request of every kind the load sent that spent
 * its nonce (acknowledged, or a liquidation claim refused for its business reason), and a
 * socket's `authenticate`: each must be refused as a replay. Returns how many were.
 */
async function checkReplaysRefused(
  rest: string,
  wsUrl: string,
  wallets: readonly Wallet[],
  ledger: readonly LedgerEntry[],
  admitted: ReadonlyMap<string, number>,
  kinds: Set<string>,
  seed: number,
  cycle: number,
): Promise<number> {
  // Signed a moment ago: inside the nonce window and before the 60 s deadline, so the only
  // reason left to refuse it is the replay.
  const recent = Date.now() - 30_000;
  const picked = new Map<Kind, LedgerEntry>();
  for (const e of ledger) {
    if (Number(e.nonce) <= recent || (admitted.get(keyOf(e)) ?? 0) !== 1) continue;
    // A GTD order may be refused for its passed expiry before its nonce is looked at.
    if (e.kind === 'gtd') continue;
    picked.set(e.kind, e);
  }
  let refused = 0;
  for (const e of picked.values()) {
    let answer: string;
    if (REST_KINDS.has(e.kind)) {
      const res = await retryReset(() => sendRest(rest, e));
      answer = `${res.status} ${JSON.stringify(res.body)}`;
      // A referral's replay is 401 (interface spec), a signed REST write's 400 (protocol.md 4).
      if (res.status !== (e.kind === 'referral' ? 401 : 400) || !/replay/i.test(answer))
        fail(`a replayed ${e.kind} was not refused as a replay: ${answer}`, seed, cycle);
    } else {
      const w = wallets.find((x) => x.address === e.wallet) as Wallet;
      const ws = await WsClient.connect(wsUrl);
      try {
        if (e.kind !== 'auth') {
          const auth = await ws.request({
            type: 'authenticate',
            signature: await w.authenticate(),
          });
          if (auth.type !== 'authenticateSuccess')
            fail(`authenticate: ${JSON.stringify(auth)}`, seed, cycle);
        }
        const reply = await ws.request(wireOf(e));
        answer = JSON.stringify(reply);
        if (reply.type !== 'error' || !/replay/i.test(answer))
          fail(
            `a replayed ${e.kind} ${e.wallet}/${e.nonce} was not refused as a replay: ${answer}`,
            seed,
            cycle,
          );
      } finally {
        await ws.close();
      }
    }
    kinds.add(e.kind);
    refused++;
  }
  return refused;
}
