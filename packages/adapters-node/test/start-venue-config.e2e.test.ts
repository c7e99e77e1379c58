/**
 * `startVenue` checks a config passed in code as `--config` checks a file: a refused key stops
 * the start with a one-line {@link StartupError} naming it, before the data directory is created,
 * and a good config starts as the file would (engine-rules' flat liquidation names applied). A
 * misspelt option, or a price-feed mode that is neither, is refused the same way.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_CONFIG,
  StartupError,
  type StartVenueOptions,
  startVenue,
  type VenueConfig,
} from '../src/index.js';
import { startTestVenue } from './support/fixture.js';

/** The default config with top-level `changes`, typed as a caller without TypeScript passes it. */
const configWith = (changes: Record<string, unknown>): VenueConfig =>
  ({ ...DEFAULT_CONFIG, ...changes }) as VenueConfig;
const limitsWith = (changes: Record<string, unknown>): VenueConfig =>
  configWith({ limits: { ...DEFAULT_CONFIG.limits, ...changes } });

describe('startVenue checks the config it is given', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'start-venue-config-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** The message of the StartupError `startVenue` refuses `config` with (a start is closed). */
  const refusal = async (config: VenueConfig, dataDir: string | null = null): Promise<string> => {
    const outcome = await startVenue({ config, dataDir, priceFeed: 'none', log: () => {} }).then(
      async (venue) => {
        await venue.close();
        return 'started';
      },
      (e: unknown) => e,
    );
    expect(outcome).toBeInstanceOf(StartupError);
    return (outcome as StartupError).message;
  };

  it('refuses a value of the wrong type, naming the key', async () => {
    // setInterval would have read the string as 15 s; a file with it is refused, so is this.
    expect(await refusal(limitsWith({ pingIntervalMs: '15000' }))).toBe(
      'startVenue config: limits.pingIntervalMs must be an integer in 1..2147483647, not "15000"',
    );
    expect(await refusal(configWith({ limits: undefined }))).toBe(
      'startVenue config: limits must be an object',
    );
    expect(await refusal(configWith({ verifyWorkers: '2' }))).toBe(
      "startVenue config: verifyWorkers must be 'auto' or an integer 0..64",
    );
    expect(await refusal(configWith({ trustProxy: ['loopback', '10.0.0.0/33'] }))).toBe(
      'startVenue config: trustProxy[1] must be an IP address, a CIDR range (10.0.0.0/8, fd00::/8, 0.0.0.0/0, ::/0) or one of loopback, linklocal, uniquelocal, not "10.0.0.0/33"',
    );
  });

  it('refuses a value out of range, naming the key', async () => {
    // Each would start and misbehave: no WebSocket or HTTP connection accepted, an oracle
    // command journaled every millisecond, amounts announced in the wrong decimals.
    expect(await refusal(limitsWith({ connectionsPerIp: 0 }))).toBe(
      'startVenue config: limits.connectionsPerIp must be an integer >= 1, not 0',
    );
    expect(await refusal(limitsWith({ httpConnectionsPerIp: -1 }))).toBe(
      'startVenue config: limits.httpConnectionsPerIp must be an integer >= 1, not -1',
    );
    expect(
      await refusal(configWith({ priceFeed: { ...DEFAULT_CONFIG.priceFeed, intervalMs: 0 } })),
    ).toBe('startVenue config: priceFeed.intervalMs must be an integer in 100..2147483647, not 0');
    expect(await refusal(configWith({ token: { ...DEFAULT_CONFIG.token, decimals: 18 } }))).toBe(
      "startVenue config: token.decimals must be 6 (the engine's collateral decimals), not 18",
    );
    const [btc, ...others] = DEFAULT_CONFIG.instruments;
    expect(
      await refusal(configWith({ instruments: [{ ...btc, tickSize: '0' }, ...others] })),
    ).toMatch(/^startVenue config: instruments\[0\]: .*tickSize/);
  });

  it('refuses a key that is no config key, naming it', async () => {
    expect(await refusal(configWith({ limit: DEFAULT_CONFIG.limits }))).toBe(
      'startVenue config: limit is not a config key (the keys: network, vault, token, instruments, limits, priceFeed, bootstrapInviteUses, verifyWorkers, trustProxy)',
    );
    expect(await refusal(limitsWith({ pingIntervalMS: 1_000 }))).toMatch(
      /^startVenue config: limits\.pingIntervalMS is not a config key \(limits: connectionsPerAccount, /,
    );
  });

  it('refuses an option that is none, a port or host listen would refuse, and an unknown price feed', async () => {
    const start = (options: Record<string, unknown>) =>
      startVenue({ log: () => {}, ...options } as StartVenueOptions).then(
        async (venue) => {
          await venue.close();
          return 'started';
        },
        (e: unknown) => (e instanceof StartupError ? e.message : e),
      );
    const dataDir = join(dir, 'venue');
    // A misspelt dataDir would have started an in-memory venue, which loses everything.
    expect(await start({ dataDIr: dataDir, priceFeed: 'none' })).toBe(
      'startVenue options: dataDIr is not an option (the options: config, dataDir, host, port, priceFeed, clock, log, journal, snapshots, onFatal, historyBackfill, replayUnderNewRules)',
    );
    expect(await start({ dataDir: null, priceFeed: 'simulate' })).toBe(
      'startVenue options: priceFeed must be simulated or none, not "simulate"',
    );
    // Found only at listen otherwise, after the journal replay.
    expect(await start({ dataDir, port: 70_000 })).toBe(
      'startVenue options: port must be an integer in 0..65535 (0 picks a free one), not 70000',
    );
    expect(await start({ dataDir, port: '8080' })).toMatch(/^startVenue options: port must be/);
    expect(await start({ dataDir, host: '' })).toBe(
      'startVenue options: host must be a non-empty address or name, not ""',
    );
    expect(existsSync(dataDir)).toBe(false);
  });

  it('refuses a snapshot policy or backfill chunk the snapshotter would misread', async () => {
    const start = (options: Record<string, unknown>) =>
      startVenue({ log: () => {}, priceFeed: 'none', ...options } as StartVenueOptions).then(
        async (venue) => {
          await venue.close();
          return 'started';
        },
        (e: unknown) => (e instanceof StartupError ? e.message : e),
      );
    const dataDir = join(dir, 'venue');
    // A string compared with `> 0` is never a cadence: the venue would never snapshot.
    expect(await start({ dataDir, snapshots: { everyRecords: '1000' } })).toBe(
      'startVenue options: snapshots.everyRecords must be an integer in 0..9007199254740991, not "1000"',
    );
    // keep was clamped to 1 and sliceMs 0 would hold the loop for no time per slice.
    expect(await start({ dataDir, snapshots: { keep: 0 } })).toBe(
      'startVenue options: snapshots.keep must be an integer in 1..9007199254740991, not 0',
    );
    expect(await start({ dataDir, snapshots: { sliceMs: 0.5 } })).toMatch(
      /^startVenue options: snapshots\.sliceMs must be an integer in 1\.\.2147483647, not 0\.5$/,
    );
    // setInterval fires a longer delay after 1 ms: a snapshot every millisecond.
    expect(await start({ dataDir, snapshots: { everyMs: 2 ** 31 } })).toBe(
      'startVenue options: snapshots.everyMs must be an integer in 0..2147483647, not 2147483648',
    );
    expect(await start({ dataDir, snapshots: { everyrecords: 10 } })).toBe(
      'startVenue options: snapshots.everyrecords is not an option (snapshots: everyRecords, everyMs, minRecords, keep, sliceMs, atClose, readModels)',
    );
    expect(await start({ dataDir, snapshots: { atClose: 'no' } })).toBe(
      'startVenue options: snapshots.atClose must be true or false, not "no"',
    );
    expect(await start({ dataDir, snapshots: { readModels: 1 } })).toBe(
      'startVenue options: snapshots.readModels must be true or false, not 1',
    );
    expect(await start({ dataDir, snapshots: true })).toBe(
      'startVenue options: snapshots must be false or an object, not true',
    );
    expect(await start({ dataDir, historyBackfill: { chunkRecords: 0 } })).toBe(
      'startVenue options: historyBackfill.chunkRecords must be an integer in 1..9007199254740991, not 0',
    );
    expect(await start({ dataDir, historyBackfill: { chunk: 64 } })).toBe(
      'startVenue options: historyBackfill.chunk is not an option (historyBackfill: chunkRecords)',
    );
    expect(existsSync(dataDir)).toBe(false);
    expect(
      await start({
        dataDir,
        snapshots: { everyRecords: 0, everyMs: 0, keep: 1, sliceMs: 1, atClose: false },
        historyBackfill: { chunkRecords: 1 },
      }),
    ).toBe('started');
  });

  it('refuses before the data directory is created or locked', async () => {
    const dataDir = join(dir, 'venue');
    expect(await refusal(limitsWith({ connectionsPerIp: 0 }), dataDir)).toMatch(
      /^startVenue config: limits\.connectionsPerIp /,
    );
    expect(existsSync(dataDir)).toBe(false);
  });

  it('starts with a good config and applies it as a --config file would', async () => {
    const [btc, ...others] = DEFAULT_CONFIG.instruments;
    const t = await startTestVenue({
      dataDir: join(dir, 'venue'),
      config: configWith({
        bootstrapInviteUses: 3,
        // Engine-rules section 2's flat name, which a --config file may use too.
        instruments: [{ ...btc, liquidationFeeRate: '0.02' }, ...others],
      }),
    });
    try {
      const instruments = (await t.api('GET', '/instruments')).body.instruments as {
        symbol: string;
        liquidation: { feeRate: string };
      }[];
      expect(instruments.find((i) => i.symbol === 'BTC-PERP')?.liquidation.feeRate).toBe('0.02');
      const codes = (await t.admin('GET', '/admin/referral-codes')).body.codes;
      expect(codes).toEqual([expect.objectContaining({ kind: 'system', maxUses: 3, uses: 0 })]);
    } finally {
      await t.close();
    }
  });
});

describe('the simulated price feed and instruments without a start price', () => {
  it('names the instruments it leaves alone and journals no empty price update', async () => {
    const doge = {
      id: 1,
      symbol: 'DOGE-PERP',
      tickSize: '0.00001',
      lotSize: '1',
      quantityDecimals: 0,
      maxLeverage: 10,
      openInterestCap: '1000000',
    };
    const lines: string[] = [];
    const t = await startTestVenue({
      priceFeed: 'simulated',
      log: (line) => lines.push(line),
      config: {
        ...DEFAULT_CONFIG,
        instruments: [doge],
        // The start key misspelt: DOGE-PERP has no start price (the merged defaults' keys name
        // instruments this venue does not list).
        priceFeed: { ...DEFAULT_CONFIG.priceFeed, intervalMs: 100, start: { 'DOGE-PREP': '0.1' } },
      },
    });
    try {
      const before = await t.stateHash();
      await new Promise((r) => setTimeout(r, 450));
      // Before: an oracle command with no price was journaled every 100 ms, and nothing said why
      // DOGE-PERP never got a price.
      expect((await t.stateHash()).seq).toBe(before.seq);
      expect(lines).toContain(
        'simulated price feed: no priceFeed.start price for DOGE-PERP: the feed leaves its index to POST /api/admin/oracle',
      );
    } finally {
      await t.close();
    }
  });

  it('says nothing when every instrument has one, and moves their prices', async () => {
    const lines: string[] = [];
    const t = await startTestVenue({
      priceFeed: 'simulated',
      log: (line) => lines.push(line),
      config: { ...DEFAULT_CONFIG, priceFeed: { ...DEFAULT_CONFIG.priceFeed, intervalMs: 100 } },
    });
    try {
      const before = await t.stateHash();
      await new Promise((r) => setTimeout(r, 450));
      expect((await t.stateHash()).seq).toBeGreaterThan(before.seq);
      expect(lines.filter((l) => l.startsWith('simulated price feed'))).toEqual([]);
    } finally {
      await t.close();
    }
  });
});
