#!/usr/bin/env node
/**
 * `pnpm start`: runs the whole venue on one port (protocol.md section 8). Flags: `--port`,
 * `--host`, `--json`, `--memory`, `--data <dir>`, `--config <file>`, `--price-feed
 * simulated|none`, `--snapshot-records <n>`, `--snapshot-seconds <s>`, `--no-snapshots`,
 * `--no-read-model-checkpoints`,
 * `--verify-workers <n>`, `--trust-proxy <list>`, `--replay-under-new-rules`, `--check`,
 * `--replay`, `--archive-journal`, `--archive-to <dir>`. With `--check` it starts nothing: it reads
 * the data directory, prints what a start would do with it and exits 0 when a start would
 * succeed, 1 when not. With `--archive-journal` it starts nothing either: it moves the journal
 * records a stopped venue's snapshot covers into an archive file (`archive-journal.ts`) and
 * exits 0, or 1 having changed nothing. Otherwise it stops
 * gracefully on SIGINT and SIGTERM; exits with status 70 when the engine stops on a fatal error
 * (a failed journal fsync is never retried: the process ends and a restart recovers), and with
 * status 1 when it cannot start (a damaged journal, a data directory another venue holds: the
 * `LOCK` file, taken before anything is opened and removed when the venue closes; a bad
 * `--config` or venue.json, printed as one line naming the file and the cause).
 *
 * @module
 */
import { resolve } from 'node:path';
import { archiveJournal, formatArchiveResult } from './archive-journal.js';
import { loadConfig, TIMER_MAX_MS } from './config.js';
import { checkDataDir, formatDataDirReport } from './data-dir-check.js';
import { trustProxyEntryError } from './http/client-address.js';
import { DataDirLockedError } from './journal/data-dir-lock.js';
import { JournalCorruptError, RecordsArchivedError } from './journal/file-journal.js';
import { RulesVersionMismatchError } from './journal/rules-version.js';
import { JournalBehindSnapshotError } from './journal/snapshots.js';
import { StartupError } from './startup-error.js';
import { startVenue } from './venue.js';

/** Parsed command-line options. */
export interface CliOptions {
  port: number;
  host: string;
  json: boolean;
  memory: boolean;
  data: string;
  config: string | undefined;
  priceFeed: 'simulated' | 'none' | undefined;
  /** Snapshot cadence overrides; `false`: no snapshots. */
  snapshots:
    | { everyRecords?: number; everyMs?: number; minRecords?: number; readModels?: boolean }
    | false;
  /** Signature-verification worker threads (0: inline); undefined keeps the config's. */
  verifyWorkers: number | undefined;
  /** Proxies whose `X-Forwarded-For` is believed; undefined keeps the config's `trustProxy`. */
  trustProxy: string[] | undefined;
  /** Replay journal records written under other engine rules instead of refusing to start. */
  replayUnderNewRules: boolean;
  /** Check the data directory read-only instead of starting (`--check`). */
  check: boolean;
  /** With `check`: also replay the journal and report the seq and state hash. */
  replay: boolean;
  /** Move the journal records the recovering snapshot covers to an archive file (`--archive-journal`). */
  archiveJournal: boolean;
  /** With `archiveJournal`: the directory the archive file goes to (`--archive-to`). */
  archiveTo: string | undefined;
  help: boolean;
}

/** The `--help` text. */
export const USAGE = `Usage: pnpm start [options]

Runs the perpetual-futures venue: REST under /api, the trading WebSocket at /ws and market
data at /marketdata, all on one port.

  --port <n>                 port to listen on (default 8080; 0 picks a free one)
  --host <addr>              address to listen on (default 127.0.0.1)
  --data <dir>               data directory: journal, chain state, admin token (default ./.data)
  --memory                   keep everything in memory (nothing survives a restart; not with --data
                             or the snapshot and replay flags)
  --config <file>            JSON overrides of the default configuration
  --price-feed <mode>        simulated or none (prices only via POST /api/admin/oracle); default:
                             the config's priceFeed.mode, simulated unless --config changes it
  --snapshot-records <n>     snapshot the engine state every n journal records (default 250000; 0 off)
  --snapshot-seconds <s>     also snapshot every s seconds when any record is new (default: every
                             3600 s once 10000 records are new; 0 off)
  --no-snapshots             never snapshot, not even at a clean stop (SIGINT, SIGTERM): every
                             start replays the whole journal
  --no-read-model-checkpoints
                             snapshot the engine state only: after a restart from a snapshot the
                             history before it is rebuilt by re-reducing the journal
  --verify-workers <n>       signature-verification worker threads (default min(4, cores - 1); 0 inline)
  --trust-proxy <list>       comma-separated proxies (addresses, CIDR ranges, loopback, linklocal,
                             uniquelocal; 0.0.0.0/0,::/0 trusts every hop) whose X-Forwarded-For
                             names the client for the per-IP limits; replaces the config's
                             trustProxy (default: trust nobody)
  --replay-under-new-rules   replay journal records written by a build with other engine rules
                             under this build's rules (their outcomes may change) instead of
                             refusing to start; see docs/durability.md, "Upgrades"
  --json                     print one JSON line when ready instead of text
  --check                    start nothing: read the data directory (--data) as a start would,
                             without writing, locking or creating anything, print what a start
                             would do (journal records, seq range and torn tail; each snapshot,
                             the one used and the records replayed after it; venue.json,
                             chain.json, LOCK) and exit 0 if it would succeed, 1 if not. Takes
                             --data, --config, --no-snapshots, --replay-under-new-rules, --json
                             (the report as one JSON object) and --replay
  --replay                   with --check: also replay the journal as a start does and print
                             its seq and state hash (compare GET /api/admin/state-hash), and
                             check the --config instruments against the replayed venue
  --archive-journal          start nothing: with the venue stopped, move the journal records
                             that the newest usable snapshot and its read-model checkpoint cover
                             out of journal.log into journal-<first>-<last>.log, so the journal
                             stops growing with history; refuses (exit 1, nothing changed) when a
                             start would fail or the history has no checkpoint. Takes --data,
                             --config, --json and --archive-to
  --archive-to <dir>         with --archive-journal: where the archive file goes (default: the
                             data directory; put it on other storage to free the disk)
  --help                     this text
`;

/** Flags that change what `--check` predicts or prints; every other one starts something. */
const CHECK_FLAGS = new Set([
  '--check',
  '--replay',
  '--data',
  '--config',
  '--no-snapshots',
  '--replay-under-new-rules',
  '--json',
  '--help',
  '-h',
]);

/** Flags that act on a data directory only: with `--memory` there is none to act on. */
const DATA_DIR_FLAGS = new Set([
  '--snapshot-records',
  '--snapshot-seconds',
  '--no-snapshots',
  '--no-read-model-checkpoints',
  '--replay-under-new-rules',
]);

/** Flags that go with `--archive-journal`. */
const ARCHIVE_FLAGS = new Set([
  '--archive-journal',
  '--archive-to',
  '--data',
  '--config',
  '--json',
  '--help',
  '-h',
]);

/** Parses argv (without node and script). */
export function parseArgs(argv: readonly string[]): CliOptions {
  const o: CliOptions = {
    port: 8080,
    host: '127.0.0.1',
    json: false,
    memory: false,
    data: '.data',
    config: undefined,
    priceFeed: undefined,
    snapshots: {},
    verifyWorkers: undefined,
    trustProxy: undefined,
    replayUnderNewRules: false,
    check: false,
    replay: false,
    archiveJournal: false,
    archiveTo: undefined,
    help: false,
  };
  // Digits only: Number('') and Number(' ') are 0, which would silently mean "pick a port" or
  // "snapshots off"; Number('1e3') and Number('0x10') are not what an operator types either.
  const count = (flag: string, text: string): number => {
    const n = /^[0-9]+$/.test(text) ? Number(text) : Number.NaN;
    if (!Number.isSafeInteger(n))
      throw new Error(
        `${flag} must be a non-negative integer (digits), not ${JSON.stringify(text)}`,
      );
    return n;
  };
  let dataGiven = false;
  const given: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    given.push(a);
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined || v.startsWith('--')) throw new Error(`${a} needs a value`);
      return v;
    };
    switch (a) {
      case '--port': {
        const text = value();
        const p = /^[0-9]{1,5}$/.test(text) ? Number(text) : Number.NaN;
        if (!(p <= 65535)) throw new Error(`--port must be 0..65535, not ${JSON.stringify(text)}`);
        o.port = p;
        break;
      }
      case '--host':
        o.host = value();
        break;
      case '--json':
        o.json = true;
        break;
      case '--memory':
        o.memory = true;
        break;
      case '--data':
        o.data = value();
        dataGiven = true;
        break;
      case '--config':
        o.config = value();
        break;
      case '--price-feed': {
        const m = value();
        if (m !== 'simulated' && m !== 'none')
          throw new Error('--price-feed must be simulated or none');
        o.priceFeed = m;
        break;
      }
      case '--snapshot-records':
        if (o.snapshots !== false) o.snapshots.everyRecords = count(a, value());
        break;
      case '--snapshot-seconds': {
        const seconds = count(a, value());
        // A timer holds at most 2^31 - 1 ms; said here in the flag's unit, not as the option
        // `startVenue` would name (snapshots.everyMs).
        const most = Math.floor(TIMER_MAX_MS / 1000);
        if (seconds > most) throw new Error(`${a} must be at most ${most} (about 24 days)`);
        if (o.snapshots !== false) {
          o.snapshots.everyMs = seconds * 1000;
          o.snapshots.minRecords = 1;
        }
        break;
      }
      case '--no-snapshots':
        o.snapshots = false;
        break;
      case '--no-read-model-checkpoints':
        if (o.snapshots !== false) o.snapshots.readModels = false;
        break;
      case '--verify-workers': {
        const n = count(a, value());
        if (n > 64) throw new Error('--verify-workers must be at most 64');
        o.verifyWorkers = n;
        break;
      }
      case '--trust-proxy': {
        // Spaces after the commas are the operator's, not part of an address.
        const entries = value()
          .split(',')
          .map((e) => e.trim());
        for (const entry of entries) {
          const error = trustProxyEntryError(entry);
          if (error !== null) throw new Error(`--trust-proxy entries ${error}`);
        }
        o.trustProxy = entries;
        break;
      }
      case '--replay-under-new-rules':
        o.replayUnderNewRules = true;
        break;
      case '--check':
        o.check = true;
        break;
      case '--replay':
        o.replay = true;
        break;
      case '--archive-journal':
        o.archiveJournal = true;
        break;
      case '--archive-to':
        o.archiveTo = value();
        break;
      case '--help':
      case '-h':
        o.help = true;
        break;
      default:
        throw new Error(`unknown option ${a}`);
    }
  }
  // Either would lose what the operator meant: the data directory ignored, or kept after all.
  if (o.memory && dataGiven) throw new Error('--memory and --data exclude each other: give one');
  // Refused rather than ignored: the operator may think the venue snapshots, or survives a
  // restart, after all.
  const onDisk = o.memory ? given.find((flag) => DATA_DIR_FLAGS.has(flag)) : undefined;
  if (onDisk !== undefined)
    throw new Error(
      `${onDisk} acts on a data directory (--data <dir>): --memory has none, it keeps nothing`,
    );
  if (o.replay && !o.check) throw new Error('--replay goes with --check (a start always replays)');
  if (o.archiveTo !== undefined && !o.archiveJournal)
    throw new Error('--archive-to goes with --archive-journal');
  if (o.archiveJournal) {
    if (o.check) throw new Error('--archive-journal and --check exclude each other: give one');
    if (o.memory)
      throw new Error(
        '--archive-journal works on a data directory (--data <dir>): not with --memory',
      );
    const other = given.find((flag) => flag.startsWith('-') && !ARCHIVE_FLAGS.has(flag));
    if (other !== undefined)
      throw new Error(`--archive-journal starts nothing: ${other} has no meaning with it`);
  }
  if (o.check) {
    if (o.memory)
      throw new Error('--check reads a data directory (--data <dir>): not with --memory');
    // Refused rather than ignored: the operator may think the check covers what they change.
    const starting = given.find((flag) => flag.startsWith('-') && !CHECK_FLAGS.has(flag));
    if (starting !== undefined)
      throw new Error(`--check starts nothing: ${starting} has no meaning with it`);
  }
  return o;
}

async function main(): Promise<void> {
  let options: CliOptions;
  try {
    options = parseArgs(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n\n${USAGE}`);
    process.exit(2);
  }
  if (options.help) {
    process.stdout.write(USAGE);
    return;
  }
  if (options.check) {
    let config: ReturnType<typeof loadConfig>;
    try {
      config = loadConfig(options.config);
    } catch (e) {
      process.stderr.write(`check failed: ${startFailure(e)}\n`);
      process.exit(1);
    }
    const report = checkDataDir(resolve(options.data), {
      config,
      snapshots: options.snapshots !== false,
      replayUnderNewRules: options.replayUnderNewRules,
      replay: options.replay,
    });
    process.stdout.write(
      options.json ? `${JSON.stringify(report)}\n` : formatDataDirReport(report),
    );
    process.exitCode = report.ok ? 0 : 1;
    return;
  }
  if (options.archiveJournal) {
    try {
      const result = archiveJournal(resolve(options.data), {
        config: loadConfig(options.config),
        log: (line) => process.stderr.write(`${line}\n`),
        ...(options.archiveTo === undefined ? {} : { to: options.archiveTo }),
      });
      process.stdout.write(
        options.json ? `${JSON.stringify(result)}\n` : formatArchiveResult(result),
      );
    } catch (e) {
      process.stderr.write(`archive failed: ${startFailure(e)}\n`);
      process.exitCode = 1;
    }
    return;
  }
  const config = {
    ...loadConfig(options.config),
    ...(options.verifyWorkers === undefined ? {} : { verifyWorkers: options.verifyWorkers }),
    ...(options.trustProxy === undefined ? {} : { trustProxy: options.trustProxy }),
  };
  const venue = await startVenue({
    config,
    dataDir: options.memory ? null : resolve(options.data),
    host: options.host,
    port: options.port,
    ...(options.priceFeed === undefined ? {} : { priceFeed: options.priceFeed }),
    snapshots: options.snapshots,
    replayUnderNewRules: options.replayUnderNewRules,
    onFatal: () => {
      process.stderr.write(
        'the engine stopped on a fatal error; exiting (a restart recovers from the journal)\n',
      );
      process.exit(70);
    },
  });
  // Before the ready line: whoever reads it may stop the venue at once, and a signal that came
  // before the handlers would end the process without closing the journal.
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`${signal}: shutting down\n`);
    venue.close().then(
      () => process.exit(0),
      (e: unknown) => {
        process.stderr.write(`shutdown failed: ${String(e)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  const showSecrets = venue.created;
  if (options.json) {
    process.stdout.write(
      `${JSON.stringify({
        ready: true,
        rest: venue.rest,
        ws: venue.ws,
        marketdata: venue.marketdata,
        adminToken: showSecrets ? venue.adminToken : null,
        inviteCode: venue.inviteCode,
      })}\n`,
    );
  } else {
    const lines = [
      'perp venue ready',
      `  REST         ${venue.rest}`,
      `  trading WS   ${venue.ws}`,
      `  market data  ${venue.marketdata}`,
      options.memory
        ? '  storage      in memory (nothing survives a restart)'
        : `  data         ${resolve(options.data)}`,
    ];
    // Only when set: the default banner stays as the README shows it, and a proxy list changes
    // whom the per-IP limits count, which the operator should see at a glance.
    const { trustProxy } = venue.context.config;
    if (trustProxy.length > 0) lines.push(`  proxies      trusted: ${trustProxy.join(', ')}`);
    if (showSecrets) lines.push(`  admin token  ${venue.adminToken}`);
    else lines.push('  admin token  (in venue.json of the data directory)');
    if (venue.inviteCode !== null) lines.push(`  invite code  ${venue.inviteCode}`);
    process.stdout.write(`${lines.join('\n')}\n`);
  }
}

const invokedDirectly =
  import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('/cli.js');
if (invokedDirectly) {
  main().catch((e: unknown) => {
    process.stderr.write(`failed to start: ${startFailure(e)}\n`);
    process.exit(1);
  });
}

/**
 * One line for a failure the operator causes (a port in use, no permission, a `--host` that does
 * not resolve, a bad config or data file, a data directory another venue holds, a damaged or
 * foreign journal or a journal behind its snapshots, records of other engine rules), which names
 * its cause and remedy already; the stack for anything else, which is a defect to report.
 */
function startFailure(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  if (
    e instanceof StartupError ||
    e instanceof DataDirLockedError ||
    e instanceof JournalCorruptError ||
    e instanceof RecordsArchivedError ||
    e instanceof JournalBehindSnapshotError ||
    e instanceof RulesVersionMismatchError
  ) {
    return e.message;
  }
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') return `${e.message} (another process listens there: choose --port)`;
  if (code === 'EACCES' || code === 'EADDRNOTAVAIL') return e.message;
  // A --host that the resolver does not know (a typo such as `localhos`): the operator's.
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME')
    return `${e.message} (--host names no address of this machine: give an IP address or a name that resolves)`;
  return e.stack ?? e.message;
}
