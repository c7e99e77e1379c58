/**
 * The composition root: builds a whole venue (journal, engine host, read models, simulated
 * chain, REST, trading and market-data WebSockets, schedulers) from a configuration, replays the
 * journal of an existing data directory, and serves everything on one port: `/api`, `/ws`,
 * `/marketdata`.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  renameSync,
  writeFileSync,
} from 'node:fs';
import { type IncomingMessage, type Server, STATUS_CODES } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { MemoryJournal, SimulatedChain, type SimulatedChainSnapshot } from '@perp/adapters-memory';
import {
  auctionEvents,
  createEngineState,
  ENGINE_RULES_VERSION,
  fundingInfo,
  type JournalRecord,
  type JournalStore,
  liveAuctions,
  nextWakeTime,
  RateLimiter,
  WALLET_LIMITS,
} from '@perp/core';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { ChainDesk } from './chain/desk.js';
import {
  ConfigError,
  DEFAULT_CONFIG,
  parseConfig,
  planConfigInstruments,
  TIMER_MAX_MS,
  type VenueConfig,
} from './config.js';
import {
  journalRequirements,
  readChainFile,
  readVenueFile,
  restoreChain,
  signingContextOf,
  simulatedChainOptions,
  type VenueFile,
} from './data-dir.js';
import { type Clock, SystemClock } from './engine/clock.js';
import { EngineHost } from './engine/host.js';
import { WalletQueue } from './engine/wallet-queue.js';
import { registerAdminRoutes } from './http/admin-routes.js';
import { clientAddress, compileProxyTrust, limitKey } from './http/client-address.js';
import { HttpConnectionCap, OVER_CAP_LEASE_MS } from './http/connection-cap.js';
import { clientErrorAnswer, HttpError, isBadRequest, stoppedEngineAnswer } from './http/errors.js';
import { createRandomInviteCode } from './http/invite-codes.js';
import { chargeAddress } from './http/ip-limit.js';
import { parseJson } from './http/json.js';
import { registerPublicRoutes } from './http/public-routes.js';
import { registerSignedRoutes } from './http/signed-routes.js';
import { type DataDirLock, lockDataDir } from './journal/data-dir-lock.js';
import { FileJournal, RecordsArchivedError } from './journal/file-journal.js';
import { replayJournal } from './journal/rules-version.js';
import {
  checkpointedSnapshots,
  type LoadedSnapshot,
  loadNewestSnapshot,
  readSnapshotFile,
  type SnapshotPolicy,
  Snapshotter,
} from './journal/snapshots.js';
import { createMarketDataService, DEFAULT_MARKET_DATA_LIMITS } from './marketdata/index.js';
import { RandomWalkFeed } from './price-feed.js';
import { HistoryBackfill, historyRebuild, reportStreamsRebuild } from './read/backfill.js';
import { HistoryStore } from './read/history.js';
import { ReportStreams } from './read/report-streams.js';
import { SignedRequests } from './requests.js';
import { StartupError } from './startup-error.js';
import type { VenueContext } from './venue-context.js';
import { createSignatureRecovery } from './verify/pool.js';
import { ConnectionSlots } from './ws/connection-slots.js';
import { createTradingService } from './ws/trading.js';

/** How to start a venue. */
export interface StartVenueOptions {
  /** Default {@link DEFAULT_CONFIG}; checked whole as a `--config` file is. */
  readonly config?: VenueConfig;
  /** Data directory; `null` keeps everything in memory. */
  readonly dataDir?: string | null;
  readonly host?: string;
  /** 0 picks a free port. */
  readonly port?: number;
  /** Overrides the price-feed mode of the config. */
  readonly priceFeed?: 'simulated' | 'none';
  readonly clock?: Clock;
  readonly log?: (line: string) => void;
  /** Journal to use instead of the data directory's (tests). */
  readonly journal?: JournalStore;
  /**
   * Snapshot cadence for a data directory (docs/durability.md); `false`: none, every restart
   * replays the whole journal.
   */
  readonly snapshots?: Partial<SnapshotPolicy> | false;
  /** Called after the venue closed itself on a fatal error (the CLI exits non-zero). */
  readonly onFatal?: (error: unknown) => void;
  /**
   * After a restart from a snapshot, the read models are rebuilt in the background from the
   * journal records before it (`read/backfill.ts`); `chunkRecords` re-reduced per event-loop
   * turn (default 1,024). `false`: no backfill (history starts at the snapshot).
   */
  readonly historyBackfill?: { readonly chunkRecords?: number } | false;
  /**
   * Replays journal records written under other engine rules than this build's instead of
   * refusing to start ({@link RulesVersionMismatchError}); their outcomes may change.
   */
  readonly replayUnderNewRules?: boolean;
}

/** A running venue. */
export interface Venue {
  readonly rest: string;
  readonly ws: string;
  readonly marketdata: string;
  readonly port: number;
  /** Printed on a new data directory (always for an in-memory venue). */
  readonly adminToken: string;
  /** The bootstrap invite code, when this start created it. */
  readonly inviteCode: string | null;
  /** Whether this start created the data directory's venue. */
  readonly created: boolean;
  readonly context: VenueContext;
  readonly app: FastifyInstance;
  /** The read-model backfill of a restart from a snapshot (`null`: none was needed). */
  readonly historyBackfill: HistoryBackfill | null;
  /** Stops accepting work, waits for the engine, closes everything. */
  close(): Promise<void>;
}

/** Writes `text` to `path` through a fsynced temporary file, readable by the owner only. */
function writeDurably(path: string, text: string): void {
  const tmp = `${path}.tmp`;
  // venue.json holds the admin token: no other user of the host may read it.
  writeFileSync(tmp, text, { mode: 0o600 });
  const fd = openSync(tmp, 'r');
  fsyncSync(fd);
  closeSync(fd);
  renameSync(tmp, path);
}

/** The 404 answer of a request no route answers. */
function notFoundMessage(req: FastifyRequest): string {
  return `not found: no route ${req.method} ${(req.url.split('?')[0] ?? '').slice(0, 200)}`;
}

/** A whole HTTP/1.1 response with a JSON `{error}` body, for a socket no route answers. */
function rawErrorResponse(
  status: number,
  error: string,
  headers: Record<string, string> = {},
): string {
  const body = JSON.stringify({ error });
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${extra}Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

/**
 * The config a venue runs, checked as a `--config` file is (one refused key is a
 * {@link StartupError} naming it), so an embedder's mistake stops the start rather than
 * surfacing later as a confusing failure or a limit silently not applied.
 */
function checkedConfig(config: VenueConfig | undefined): VenueConfig {
  if (config === undefined) return DEFAULT_CONFIG;
  try {
    return parseConfig(config);
  } catch (e) {
    if (e instanceof ConfigError) throw new StartupError(`startVenue config: ${e.message}`);
    throw e;
  }
}

/**
 * Every option's name: a misspelt one is refused rather than ignored (`dataDIr` would start an
 * in-memory venue that loses everything at its stop). `satisfies` keeps it in step with the type.
 */
const START_VENUE_OPTIONS = {
  config: true,
  dataDir: true,
  host: true,
  port: true,
  priceFeed: true,
  clock: true,
  log: true,
  journal: true,
  snapshots: true,
  onFatal: true,
  historyBackfill: true,
  replayUnderNewRules: true,
} as const satisfies Record<keyof StartVenueOptions, true>;

/**
 * Refuses, as a {@link StartupError}, an option that is none, a port or host `listen` would
 * refuse, a price-feed mode no feed has, or a snapshot policy or backfill chunk that is not a
 * whole number in its range.
 */
function checkOptions(options: StartVenueOptions): void {
  for (const key of Object.keys(options)) {
    if (!Object.hasOwn(START_VENUE_OPTIONS, key))
      throw new StartupError(
        `startVenue options: ${key} is not an option (the options: ${Object.keys(START_VENUE_OPTIONS).join(', ')})`,
      );
  }
  const { port, host, priceFeed } = options;
  // Refused before the data directory is created or locked, as listen would refuse it.
  if (port !== undefined && !(Number.isInteger(port) && port >= 0 && port <= 65_535))
    throw new StartupError(
      `startVenue options: port must be an integer in 0..65535 (0 picks a free one), not ${JSON.stringify(port)}`,
    );
  if (host !== undefined && (typeof host !== 'string' || host === ''))
    throw new StartupError(
      `startVenue options: host must be a non-empty address or name, not ${JSON.stringify(host)}`,
    );
  // Any other value would start without a feed, as 'none' does, and say nothing.
  if (priceFeed !== undefined && priceFeed !== 'simulated' && priceFeed !== 'none')
    throw new StartupError(
      `startVenue options: priceFeed must be simulated or none, not ${JSON.stringify(priceFeed)}`,
    );
  checkSnapshotOption(options.snapshots);
  const backfill = options.historyBackfill;
  if (backfill !== undefined && backfill !== false)
    numbersIn(policyObject(backfill, 'historyBackfill'), 'historyBackfill', { chunkRecords: 1 });
}

function policyObject(value: unknown, name: string): object {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new StartupError(
      `startVenue options: ${name} must be false or an object, not ${JSON.stringify(value)}`,
    );
  return value;
}

/**
 * Least value of each snapshot policy number. The policy compares them with `>` and clamps some,
 * so a string, a negative or a fraction would not fail: it would snapshot at every record, never,
 * or keep no file, silently.
 */
const SNAPSHOT_POLICY_LEAST: Readonly<
  Record<Exclude<keyof SnapshotPolicy, 'atClose' | 'readModels'>, number>
> = {
  everyRecords: 0,
  everyMs: 0,
  minRecords: 0,
  keep: 1,
  sliceMs: 1,
};

function checkSnapshotOption(snapshots: StartVenueOptions['snapshots']): void {
  if (snapshots === undefined || snapshots === false) return;
  const { atClose, readModels, ...numbers } = policyObject(
    snapshots,
    'snapshots',
  ) as Partial<SnapshotPolicy>;
  for (const [key, flag] of Object.entries({ atClose, readModels }))
    if (flag !== undefined && typeof flag !== 'boolean')
      throw new StartupError(
        `startVenue options: snapshots.${key} must be true or false, not ${JSON.stringify(flag)}`,
      );
  numbersIn(numbers, 'snapshots', SNAPSHOT_POLICY_LEAST, ['atClose', 'readModels']);
}

/**
 * Checks each key of `value` is one of `least`'s (or `otherKeys`, checked by the caller) and an
 * integer at least its least value.
 */
function numbersIn(
  value: object,
  name: string,
  least: Readonly<Record<string, number>>,
  otherKeys: readonly string[] = [],
): void {
  for (const [key, n] of Object.entries(value)) {
    const min = least[key];
    if (min === undefined)
      throw new StartupError(
        `startVenue options: ${name}.${key} is not an option (${name}: ${[...Object.keys(least), ...otherKeys].join(', ')})`,
      );
    // A longer `everyMs` would make setInterval fire every millisecond.
    const max = key.endsWith('Ms') ? TIMER_MAX_MS : Number.MAX_SAFE_INTEGER;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < min || n > max)
      throw new StartupError(
        `startVenue options: ${name}.${key} must be an integer in ${min}..${max}, not ${JSON.stringify(n)}`,
      );
  }
}

/**
 * Starts a venue; see the module comment. The options and the config are checked first, the
 * config as `--config` is (a {@link StartupError} naming the key). A data directory is then locked
 * (`<data>/LOCK`, one venue per directory: two would both append to one journal) and released by
 * `close()`.
 */
export async function startVenue(options: StartVenueOptions = {}): Promise<Venue> {
  // Before the data directory is created or locked: a refusal leaves nothing behind.
  checkOptions(options);
  const config = checkedConfig(options.config);
  const dataDir = options.dataDir ?? null;
  let lock: DataDirLock | null = null;
  if (dataDir !== null) {
    // A new data directory is the owner's alone (the admin token, the journal, the snapshots).
    try {
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    } catch (e) {
      // A path that is a file (or under one), or not the operator's to write: the operator's to
      // fix, said in one line rather than as a defect's stack.
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EEXIST' || code === 'ENOTDIR' || code === 'EACCES' || code === 'EROFS')
        throw new StartupError(
          `data directory ${dataDir}: ${(e as Error).message}: give --data a directory this user can create or write`,
        );
      throw e;
    }
    lock = lockDataDir(dataDir, options.log ?? ((line: string) => console.error(line)));
  }
  // What a failed start has opened so far, closed before the error goes out (once the venue's
  // own shutdown exists, it takes over and this is emptied).
  const opened: (() => Promise<void> | void)[] = [];
  try {
    return await startLocked(options, config, lock, opened);
  } catch (e) {
    for (const close of opened.reverse()) {
      try {
        await close();
      } catch {
        // The start failed already; its error is the one to report.
      }
    }
    lock?.release();
    throw e;
  }
}

/**
 * Listens on `host:port` and closes again at once, rejecting with `listen`'s own error (a port
 * in use, a name that does not resolve, an address not on this machine). Port 0 always finds a
 * free port, so it is not tried. The venue's real listen can still lose a race for the port.
 */
async function checkListenable(host: string, port: number): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

async function startLocked(
  options: StartVenueOptions,
  config: VenueConfig,
  lock: DataDirLock | null,
  opened: (() => Promise<void> | void)[],
): Promise<Venue> {
  const log = options.log ?? ((line: string) => console.error(line));
  const dataDir = options.dataDir ?? null;

  // ---- persistence ----------------------------------------------------------------------
  let venueFile: VenueFile;
  let created = false;
  let journal: JournalStore;
  let chainSnapshot: SimulatedChainSnapshot | undefined;
  // The newest snapshot that passes every check (read even with snapshots off: see below).
  let newestValid: LoadedSnapshot | null = null;
  if (dataDir !== null) {
    mkdirSync(dataDir, { recursive: true });
    const venuePath = join(dataDir, 'venue.json');
    if (existsSync(venuePath)) {
      venueFile = readVenueFile(venuePath);
    } else {
      venueFile = { adminToken: randomBytes(24).toString('base64url'), createdTime: Date.now() };
      writeDurably(venuePath, `${JSON.stringify(venueFile, null, 2)}\n`);
      created = true;
    }
    // Read before the journal is opened: the records a valid snapshot covers were acknowledged,
    // so a journal whose valid records end before its seq lost some, and the start is refused
    // before the journal's torn-tail repair could cut one of them (the file is left as it was).
    // With snapshots off it is still read: starting would drop those records silently.
    const covering = options.journal === undefined ? loadNewestSnapshot(dataDir, { log }) : null;
    newestValid = covering;
    journal =
      options.journal ??
      FileJournal.open(join(dataDir, 'journal.log'), {
        log,
        ...journalRequirements(dataDir, covering),
      });
    if (options.journal === undefined) opened.push(() => journal.close());
    const chainPath = join(dataDir, 'chain.json');
    if (existsSync(chainPath)) chainSnapshot = readChainFile(chainPath);
  } else {
    venueFile = { adminToken: randomBytes(24).toString('base64url'), createdTime: Date.now() };
    created = true;
    journal = options.journal ?? new MemoryJournal();
  }

  // A port another process holds, or a host that is not this machine's, is found here rather
  // than at listen, after a journal replay that may take minutes.
  try {
    await checkListenable(options.host ?? '127.0.0.1', options.port ?? 0);
  } catch (e) {
    // The venue owns a journal it was given from here on, as its close() does.
    if (options.journal !== undefined) await journal.close();
    throw e;
  }

  // ---- engine host and read models -------------------------------------------------------
  const history = new HistoryStore();
  const streams = new ReportStreams();
  // Recovery: the newest valid snapshot of the data directory (read above, checked against the
  // journal when it was opened), then the journal records after it (without one, the whole
  // journal). Read models only see what is replayed: see durability.md.
  const snapshotDir =
    dataDir !== null && options.journal === undefined && options.snapshots !== false
      ? dataDir
      : null;
  const snapshot = snapshotDir === null ? null : newestValid;
  // An archived journal lacks the records a start without its snapshot would replay.
  if (journal instanceof FileJournal && journal.startSeq > (snapshot?.seq ?? 0) + 1)
    throw new RecordsArchivedError(
      journal.path,
      journal.startSeq,
      'a start without snapshots (--no-snapshots) replays the whole journal',
    );
  const startSeq = journal.lastSeq;
  const afterSeq = snapshot?.seq ?? 0;
  // The records are replayed further down, a batch at a time; the clock and the first state
  // need the times of the first and the last one now.
  const firstTime = (await firstRecord(journal, afterSeq))?.command.time ?? 0;
  const journaledTime =
    startSeq > afterSeq
      ? ((await firstRecord(journal, startSeq - 1))?.command.time ?? 0)
      : (snapshot?.state.time ?? 0);
  const clock = options.clock ?? new SystemClock(journaledTime);
  if (options.clock === undefined && Date.now() < journaledTime) {
    log(
      `the system clock is ${journaledTime - Date.now()} ms behind the last journaled command (${new Date(journaledTime).toISOString()}); command times stay there until it catches up`,
    );
  }
  let fatal: ((e: unknown) => void) | undefined;
  const host = new EngineHost({
    state: snapshot?.state ?? createEngineState({}, firstTime),
    journal,
    clock,
    onFatal: (e) => fatal?.(e),
  });
  host.subscribe((b) => history.apply(b));
  host.subscribe((b) => streams.apply(b));
  const rateNow = (): number => performance.timeOrigin + performance.now();
  const ipLimiter = new RateLimiter({
    ...WALLET_LIMITS,
    perWindow: config.limits.publicReadsPerSecond,
  });
  // Both sockets take from one per-IP connection count, as they share the read budget.
  const connectionSlots = new ConnectionSlots(config.limits.connectionsPerIp);
  // One trust for every per-IP limit, and for fastify's `req.ip`: REST and both WebSockets see
  // one client at one address.
  const proxyTrust = compileProxyTrust(config.trustProxy);
  // An IPv6 client counts as its network (limits.ipv6PrefixLength), not its one address.
  const clientAddressOf = (request: IncomingMessage): string =>
    limitKey(clientAddress(request, proxyTrust), config.limits.ipv6PrefixLength);
  // Created before the replay so tickers, candles and the trade tape rebuild from the journal.
  const marketData = createMarketDataService({
    host,
    now: () => host.now(),
    readLimiter: ipLimiter,
    limiterNow: rateNow,
    connectionSlots,
    clientAddress: clientAddressOf,
    funding: fundingInfo,
    auctions: liveAuctions,
    auctionEvents,
    limits: {
      messagesPerSecondPerIp: config.limits.publicReadsPerSecond,
      pingIntervalMs: config.limits.pingIntervalMs,
      idleTimeoutMs: config.limits.idleTimeoutMs,
      // One slow-consumer bound for both sockets; snapshot pushes are skipped from a quarter of it.
      hardBufferBytes: config.limits.slowConsumerBytes,
      softBufferBytes: Math.min(
        DEFAULT_MARKET_DATA_LIMITS.softBufferBytes,
        Math.floor(config.limits.slowConsumerBytes / 4),
      ),
    },
  });
  // Its timers run from here: a start that fails later (a replay refused, a bad instrument)
  // must stop them.
  opened.push(() => marketData.close());
  // After a snapshot, the read models get the history before it in the background: the backfill
  // keeps every batch from the tail replay on, loads the read models at the snapshot's seq from
  // the checkpoint written beside it (or, without a valid one, re-reduces records 1..snapshot
  // seq), feeds them the kept batches, then swaps them in (docs/durability.md).
  const readModelParts = [history.checkpoint(), streams.checkpoint(), marketData.checkpoint()];
  if (snapshot !== null) history.seedWorkingOrders(snapshot.state);
  const fileJournal = journal instanceof FileJournal ? journal : null;
  const backfill =
    snapshot !== null &&
    snapshot.seq > 0 &&
    fileJournal !== null &&
    options.historyBackfill !== false
      ? new HistoryBackfill({
          host,
          snapshot: { seq: snapshot.seq, hash: snapshot.hash },
          records: (afterSeq) => fileJournal.readSync(afterSeq),
          rebuilds: [historyRebuild(history), reportStreamsRebuild(streams), marketData.rebuild()],
          log,
          ...(options.historyBackfill?.chunkRecords === undefined
            ? {}
            : { chunkRecords: options.historyBackfill.chunkRecords }),
          onEnd: () => fileJournal.forget(fileJournal.lastSeq),
          onRecordsUnneeded: () => fileJournal.forget(fileJournal.lastSeq),
          ...(snapshotDir === null
            ? {}
            : {
                checkpoint: { dir: snapshotDir, snapshot, parts: readModelParts },
                // Its own checkpoint missing (a crash between the two writes) or damaged: an
                // older one, and the journal from there, rather than the whole journal.
                olderCheckpoints: () =>
                  checkpointedSnapshots(snapshotDir, fileJournal.startSeq - 1, snapshot.seq).map(
                    (older) => ({
                      checkpoint: {
                        dir: snapshotDir,
                        snapshot: { seq: older.seq, hash: older.hash },
                        parts: readModelParts,
                      },
                      state: () => readSnapshotFile(older.path).state,
                    }),
                  ),
              }),
        })
      : null;
  const { replayed, underNewRules } = await replayJournal(
    journal,
    afterSeq,
    (commands) => host.replay(commands),
    {
      journal:
        dataDir === null || options.journal !== undefined
          ? 'the journal'
          : join(dataDir, 'journal.log'),
      declared: snapshot?.state.rulesVersion ?? null,
      allow: options.replayUnderNewRules === true,
    },
  );
  if (underNewRules !== null) log(underNewRules);
  if (snapshot !== null)
    log(`recovered from snapshot ${snapshot.path} (seq ${snapshot.seq}, hash ${snapshot.hash})`);
  if (replayed > 0)
    log(
      `replayed ${replayed} journal records${snapshot === null ? '' : ` after seq ${snapshot.seq}`}`,
    );
  if (fileJournal !== null && backfill === null) fileJournal.forget(fileJournal.lastSeq);
  const readModelsComplete = (): boolean =>
    snapshot === null || backfill?.progress.phase === 'complete';
  const snapshotter =
    snapshotDir === null
      ? null
      : new Snapshotter({
          dir: snapshotDir,
          lastSeq: snapshot?.seq ?? 0,
          log,
          // Only complete read models are checkpointed: not while a backfill rebuilds them, nor
          // after one that did not complete (or was turned off) on a start from a snapshot.
          readModels: () => (readModelsComplete() ? readModelParts : null),
          // So the next start checks this record and scans only the journal after it.
          journalPosition: (seq) => fileJournal?.positionOf(seq),
          ...(options.snapshots ? { policy: options.snapshots } : {}),
        });
  snapshotter?.attach(host);
  if (snapshotter !== null) opened.push(() => snapshotter.close());

  // The records from here on are written under this build's rules (and after a replay under
  // new rules, so were the ones before: the declaration says so, and the next start accepts them).
  if (host.state.rulesVersion !== ENGINE_RULES_VERSION || underNewRules !== null) {
    const previous = host.state.rulesVersion;
    const r = await host.submit({
      type: 'declareRules',
      version: ENGINE_RULES_VERSION,
      // Exactly the records replayed: those before were in the recovered state as they were.
      ...(underNewRules === null ? {} : { replayed }),
    });
    if (!r.outcome.ok) throw new Error(`declaring the engine rules: ${r.outcome.message}`);
    if (previous !== null || startSeq > 0)
      log(
        `engine rules ${ENGINE_RULES_VERSION} declared in the journal (records before were written under ${previous === null ? 'undeclared rules' : `rules ${previous}`})`,
      );
  }

  // ---- chain ---------------------------------------------------------------------------
  const signing = signingContextOf(config);
  const chainOptions = simulatedChainOptions(
    config,
    signing,
    () => clock.now(),
    dataDir === null
      ? undefined
      : (s: SimulatedChainSnapshot) => writeDurably(join(dataDir, 'chain.json'), JSON.stringify(s)),
  );
  const chain =
    chainSnapshot === undefined || dataDir === null
      ? new SimulatedChain(chainOptions)
      : restoreChain(join(dataDir, 'chain.json'), chainSnapshot, chainOptions);
  const desk = new ChainDesk(chain, host, log);

  const ctx: VenueContext = {
    config,
    host,
    history,
    streams,
    chain,
    ipLimiter,
    clientAddress: clientAddressOf,
    connectionSlots,
    walletLimiter: new RateLimiter({
      ...WALLET_LIMITS,
      perWindow: config.limits.walletRequestsPerSecond,
      sustained: config.limits.signedRequestsPer5Minutes,
    }),
    accessLimiter: new RateLimiter({
      perWindow: config.limits.noAccessRequestsPerSecondPerIp,
      windowMs: 1_000,
      sustained: config.limits.noAccessRequestsPer5MinutesPerIp,
      sustainedWindowMs: 300_000,
      cancelHeadroom: 1,
    }),
    rateNow,
    walletQueue: new WalletQueue(),
    adminToken: venueFile.adminToken,
    desk,
    marketData,
    readModels: () => ({ complete: readModelsComplete(), backfill: backfill?.progress ?? null }),
  };
  // Signature recovery runs on worker threads (native libsecp256k1 when it loads).
  const recovery = createSignatureRecovery({ workers: config.verifyWorkers ?? 'auto', log });
  opened.push(() => recovery.close());
  const requests = new SignedRequests(ctx, signing, recovery);

  // ---- bootstrap -------------------------------------------------------------------------
  // A venue is new until its bootstrap invite code is journaled, the last record of its first
  // start (codes are never deleted). A first start that a crash cut short after some of its
  // records (the rules declaration, an instrument) is finished by the next start, which would
  // otherwise take the venue for an old one: it kept the default working-order cap and had no
  // invite code at all.
  const bootstrapping = startSeq === 0 || host.state.referralCodes.size === 0;
  // The config's instruments are the ones a new venue starts with; a later start adds an id the
  // venue does not list yet. A listed instrument keeps its journaled settings: the admin API may
  // have changed them, and re-applying the file at every start would undo that (or refuse to start
  // at all once a tick or lot change met working orders). A difference is reported, not applied.
  const plan = planConfigInstruments(config, host.state);
  for (const instrument of plan.toList) {
    const r = await host.submit({ type: 'setInstrument', instrument });
    if (!r.outcome.ok)
      throw new StartupError(`config instrument ${instrument.symbol}: ${r.outcome.message}`);
  }
  for (const line of plan.differences) log(line);
  // The working-order cap follows the instruments' rule: the config sets a new venue's, and after
  // that the journal owns it. `POST /api/admin/venue-settings` changes it at runtime; re-applying
  // the file at every start would undo that at the next restart (a crash's included), so a
  // difference is reported, not applied. The same value journals nothing, so a venue on the
  // default config never records one.
  const cap = config.limits.maxWorkingOrdersPerAccount;
  const currentCap = host.state.settings.maxWorkingOrdersPerAccount;
  if (cap !== currentCap && bootstrapping) {
    const r = await host.submit({ type: 'setVenueSettings', maxWorkingOrdersPerAccount: cap });
    if (!r.outcome.ok)
      throw new StartupError(`config limits.maxWorkingOrdersPerAccount: ${r.outcome.message}`);
    log(`limits.maxWorkingOrdersPerAccount: ${currentCap} -> ${cap} (journaled)`);
  } else if (cap !== currentCap) {
    log(
      `config limits.maxWorkingOrdersPerAccount ${cap} differs from the venue's ${currentCap}: the venue's value stays; change it with POST /api/admin/venue-settings`,
    );
  }
  let inviteCode: string | null = null;
  if (bootstrapping) {
    const r = await createRandomInviteCode(host, {
      kind: 'system',
      maxUses: config.bootstrapInviteUses,
    });
    if (r.outcome.ok && r.outcome.kind === 'referralCode') inviteCode = r.outcome.code.code;
  }
  await desk.reconcile(host.state);

  // ---- HTTP ------------------------------------------------------------------------------
  const { requestTimeoutMs } = config.limits;
  const app = Fastify({
    bodyLimit: config.limits.maxMessageBytes,
    // An incomplete request (slow or silent headers or body, a connection that says nothing) is
    // answered 408 by `clientErrorHandler` at the request timeout. Node enforces it only while
    // `headersTimeout` (default 60 s) is not above it, and checks both on a tick (default 30 s).
    requestTimeout: requestTimeoutMs,
    http: {
      headersTimeout: requestTimeoutMs,
      connectionsCheckingInterval: Math.min(1_000, Math.max(50, requestTimeoutMs >> 2)),
    },
    // A backstop for a socket with no traffic either way; longer than the request timeout and
    // the referral's wait, so the 408 and 504 answers are written before it fires.
    connectionTimeout: Math.max(requestTimeoutMs, config.limits.referralTimeoutMs) + 5_000,
    keepAliveTimeout: 5_000,
    logger: false,
    trustProxy: proxyTrust ?? false,
    // Refusals of the router itself, in the venue's {error} shape (its 414 is not in the spec).
    frameworkErrors: (error, _req, reply) => {
      const message =
        error.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? 'a path parameter is longer than 100 characters'
          : error.message;
      // The hook's reply type is generic over route schemas this venue does not declare.
      return (reply as FastifyReply).code(400).send({ error: `bad request: ${message}` });
    },
    clientErrorHandler: (err, socket) => {
      const response = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
      if (socket.writable && response?.headersSent !== true) {
        const { status, message } = clientErrorAnswer(
          (err as { code?: string }).code,
          requestTimeoutMs,
        );
        socket.write(rawErrorResponse(status, message));
      }
      socket.destroy();
    },
  });
  // Counted from the first connection: Fastify creates the server here, it listens further down.
  const httpConnections = new HttpConnectionCap(
    config.limits.httpConnectionsPerIp,
    proxyTrust,
    config.limits.ipv6PrefixLength,
  );
  httpConnections.attach(app.server);
  app.addHook('onRequest', async (req) => {
    if (!httpConnections.isOverCap(req.raw.socket)) return;
    // Connection: close ends the socket once this is written: it never held a slot.
    throw new HttpError(
      429,
      `too many open connections from this address: at most ${httpConnections.perAddress}; close one, or retry after Retry-After`,
      { 'retry-after': String(Math.ceil(OVER_CAP_LEASE_MS / 1000)), connection: 'close' },
    );
  });
  // A request no route answers is refused before its body is read or parsed (a 64 KiB JSON body
  // costs a millisecond of the one engine thread), and counts against its address's budget of
  // unattributed requests, as a public read does.
  app.addHook('onRequest', async (req, reply) => {
    if (!req.is404) return;
    chargeAddress(ctx, req, reply);
    throw new HttpError(404, notFoundMessage(req));
  });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = body as string;
    (req as unknown as { rawBody: string }).rawBody = text;
    // Many clients send this content type on every request, a body-less POST (pause, revoke)
    // included: an empty body is no body, and each route says what it needs.
    if (text.trim() === '') return done(null, undefined);
    const parsed = parseJson(text, config.limits.maxJsonDepth);
    if (!parsed.ok) done(new HttpError(400, parsed.error), undefined);
    else done(null, parsed.value);
  });
  app.setErrorHandler((raw, _req, reply) => {
    const error = stoppedEngineAnswer(raw) ?? (raw instanceof Error ? raw : new Error(String(raw)));
    if (error instanceof HttpError) {
      for (const [k, v] of Object.entries(error.headers)) reply.header(k, v);
      return reply.code(error.status).send({ error: error.message });
    }
    if (isBadRequest(error)) {
      // Oversized bodies and wrong media types are 400 here: 413 and 415 are not in the spec's list.
      return reply.code(400).send({ error: `bad request: ${error.message}` });
    }
    log(`request failed: ${error.stack ?? error.message}`);
    return reply.code(500).send({ error: 'internal server error; retry with backoff' });
  });
  app.setNotFoundHandler((req, reply) => reply.code(404).send({ error: notFoundMessage(req) }));
  registerPublicRoutes(app, ctx);
  registerSignedRoutes(app, ctx, requests);
  registerAdminRoutes(app, ctx);

  const trading = createTradingService(ctx, requests);
  const upgrades = new Map<
    string,
    (
      req: import('node:http').IncomingMessage,
      socket: import('node:stream').Duplex,
      head: Buffer,
    ) => void
  >([
    ['/ws', trading.handleUpgrade],
    ['/marketdata', marketData.handleUpgrade],
  ]);
  const extraClosers: (() => Promise<void>)[] = [];
  /** Answers 404 `{error}` on a socket that left HTTP, and closes it. */
  const notFound = (socket: import('node:stream').Duplex, error: string): void => {
    socket.end(rawErrorResponse(404, error));
    // A client that never closes its side does not keep the socket.
    setTimeout(() => socket.destroy(), 1_000).unref();
  };
  app.server.on('upgrade', (req, socket, head) => {
    socket.on('error', () => {});
    const path = (req.url ?? '').split('?')[0] ?? '';
    const handler = upgrades.get(path);
    if (handler === undefined) {
      // Counted against the address's budget, as a plain request to a missing route is.
      const d = ipLimiter.admit(clientAddressOf(req), rateNow(), 'unsigned');
      if (!d.ok) {
        socket.end(
          rawErrorResponse(
            429,
            `too many requests from this address; retry in ${d.retryAfterMs} ms`,
            {
              'Retry-After': String(Math.ceil(d.retryAfterMs / 1000)),
            },
          ),
        );
        setTimeout(() => socket.destroy(), 1_000).unref();
        return;
      }
      notFound(
        socket,
        `not found: no WebSocket at ${path.slice(0, 200)} (the venue serves /ws and /marketdata)`,
      );
      return;
    }
    handler(req, socket, head);
    // The WebSocket service has counted the socket under connectionsPerIp (or refused it and
    // destroyed it): it no longer holds one of the address's plain HTTP connections.
    httpConnections.release(socket);
  });
  // Without a listener Node closes a CONNECT request's socket without a word.
  app.server.on('connect', (req, socket) => {
    socket.on('error', () => {});
    notFound(socket, `not found: no route CONNECT ${(req.url ?? '').slice(0, 200)}`);
  });

  const timers: NodeJS.Timeout[] = [];
  opened.length = 0; // releaseAll closes everything from here on
  /** Stops everything the venue opened, in order: sockets, HTTP, engine work, then storage. */
  const releaseAll = async (): Promise<void> => {
    for (const t of timers) clearInterval(t);
    backfill?.cancel();
    desk.close();
    await trading.close();
    await marketData.close();
    for (const c of extraClosers) await c();
    await app.close();
    await host.idle();
    await recovery.close();
    // A clean stop leaves no journal tail; after a fatal error the state may be ahead of it.
    if (snapshotter?.policy.atClose === true && !host.failed)
      await snapshotter.writeFinal(() => ({ state: host.state, seq: host.journalSeq }));
    await snapshotter?.close();
    await journal.close();
    lock?.release();
  };

  try {
    await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 0 });
  } catch (e) {
    // The port is taken (or the host is not ours): release what was opened, so an embedding
    // process is not left with worker threads, timers and an open journal.
    await releaseAll();
    throw e;
  }
  const address = (app.server as Server).address() as AddressInfo;
  const hostName = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  // ---- schedulers ----------------------------------------------------------------------
  const feedMode = options.priceFeed ?? config.priceFeed.mode;
  if (feedMode === 'simulated') {
    const start = new Map<number, number>();
    for (const [symbol, p] of Object.entries(config.priceFeed.start)) {
      const id = host.state.symbols.get(symbol);
      if (id !== undefined) start.set(id, Number(p));
    }
    // The feed moves only the instruments it has a start price for: say which it leaves alone,
    // or a config that lists a new instrument (or misspells its start key) gets a market whose
    // price never comes, with no word why.
    const unpriced: string[] = [];
    host.state.markets.forEach((m, id) => {
      if (!start.has(id)) unpriced.push(m.spec.symbol);
    });
    if (unpriced.length > 0)
      log(
        `simulated price feed: no priceFeed.start price for ${unpriced.join(', ')}: the feed leaves ${unpriced.length === 1 ? 'its' : 'their'} index to POST /api/admin/oracle`,
      );
    // Continue from the last journaled index prices so a restart does not jump.
    host.state.markets.forEach((m, id) => {
      if (m.prices.index !== null && start.has(id))
        start.set(id, Number(m.prices.index / 10n ** 10n) / 1e8);
    });
    const feed = new RandomWalkFeed(
      config.priceFeed.seed + host.journalSeq,
      start,
      config.priceFeed.volatility,
    );
    const t = setInterval(() => {
      if (host.failed) return;
      const prices = feed.next();
      // No instrument to move: an empty update would still be journaled at every interval (the
      // admin route refuses one for that reason).
      if (prices.length === 0) return;
      void host.submit({ type: 'oracle', prices }).catch(() => {});
    }, config.priceFeed.intervalMs);
    t.unref();
    timers.push(t);
  }
  const wake = setInterval(() => {
    if (host.failed) return;
    const due = nextWakeTime(host.state);
    if (due !== null && due <= host.now()) void host.submit({ type: 'tick' }).catch(() => {});
  }, 250);
  wake.unref();
  timers.push(wake);

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= releaseAll();
    return closing;
  };
  fatal = (e) => {
    log(
      `FATAL: the engine stopped and acknowledges nothing more: ${e instanceof Error ? e.message : String(e)}`,
    );
    void close().finally(() => options.onFatal?.(e));
  };

  // Serving already: the backfill runs between requests and engine batches.
  void backfill?.start();

  return {
    rest: `http://${hostName}:${address.port}/api`,
    ws: `ws://${hostName}:${address.port}/ws`,
    marketdata: `ws://${hostName}:${address.port}/marketdata`,
    port: address.port,
    adminToken: venueFile.adminToken,
    inviteCode,
    created,
    context: ctx,
    app,
    historyBackfill: backfill,
    close,
  };
}

/** The first record of `journal` after `afterSeq`, if any (the rest is not read). */
async function firstRecord(
  journal: JournalStore,
  afterSeq: number,
): Promise<JournalRecord | undefined> {
  for await (const r of journal.read(afterSeq)) return r;
  return undefined;
}
