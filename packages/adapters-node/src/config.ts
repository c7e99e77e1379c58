/**
 * Venue configuration: network and contract settings (they build the two EIP-712 domains),
 * instruments, limits and the price feed. The embedded default is a test network venue with three
 * demo markets; `--config <file>` overrides any part of it with JSON.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import {
  buildInstrument,
  DEFAULT_VENUE_SETTINGS,
  type EngineState,
  type Instrument,
  type InstrumentSettings,
  parseDecimal,
} from '@perp/core';
import { trustProxyEntryError } from './http/client-address.js';
import {
  instrumentDifferences,
  isObject,
  parseInstrumentSettings,
  requireNewInstrumentSettings,
  SettingsTypeError,
} from './instrument-settings.js';
import { StartupError } from './startup-error.js';

/** `testnet` (chain id 10143, token domain version "1") or `mainnet` (143, "2"). */
export type NetworkName = 'testnet' | 'mainnet';

/**
 * Limits of the venue (the spec's fixed ones and the values it leaves to us). The adapters
 * enforce all but {@link LimitsConfig.maxWorkingOrdersPerAccount}, which is the engine's.
 */
export interface LimitsConfig {
  /** Authenticated WebSocket connections per account (spec: 8). */
  readonly connectionsPerAccount: number;
  /**
   * WebSocket connections per client IP, `/ws` and `/marketdata` together, checked at upgrade
   * before any authentication (protocol.md: 30); an authenticated socket keeps its slot.
   */
  readonly connectionsPerIp: number;
  /**
   * Plain HTTP connections one client IP may hold open at once, idle keep-alive ones included;
   * one over it has its request answered 429 with Retry-After and is closed
   * (docs/protocol-decisions.md). A socket upgraded to a WebSocket leaves this count for
   * `connectionsPerIp`, so it does not lower that cap.
   */
  readonly httpConnectionsPerIp: number;
  /**
   * The IPv6 network every per-IP limit counts as one client, its prefix length (32-128; 128:
   * each address alone). A subscriber holds a /64 at least and may use any address of it, so
   * the default is 64 (`http/client-address.ts`, `limitKey`).
   */
  readonly ipv6PrefixLength: number;
  /** Public reads per second per client IP (protocol.md: 100). */
  readonly publicReadsPerSecond: number;
  /**
   * How long a client has to send a whole HTTP request (headers and body), ms; an incomplete one
   * is then answered 408 `{error}` and its connection closed (checked at least once a second).
   */
  readonly requestTimeoutMs: number;
  /** HTTP body and WebSocket frame limit, bytes (protocol.md: 64 KiB). */
  readonly maxMessageBytes: number;
  /** Deepest JSON nesting accepted (protocol.md: 32). */
  readonly maxJsonDepth: number;
  /** Server ping interval and idle timeout of WebSockets, ms (spec: 15 s and 30 s). */
  readonly pingIntervalMs: number;
  readonly idleTimeoutMs: number;
  /** Account-summary pushes are coalesced within this window, ms (protocol.md: 50). */
  readonly summaryCoalesceMs: number;
  /**
   * Unsent bytes a trading WebSocket may have, its queue and its socket's buffer together (a
   * `fromSeq` replay still to format not counted); above it the connection is closed with 1008
   * `slow consumer` (reports are never dropped: the client resyncs with `fromSeq`), and its
   * socket terminated once the close frame cannot get out.
   */
  readonly slowConsumerBytes: number;
  /** Requests per rolling second per wallet, REST and WebSocket together (spec: 20). */
  readonly walletRequestsPerSecond: number;
  /** Signed requests per rolling 5 minutes per wallet (protocol.md: 3,000; cancels get twice). */
  readonly signedRequestsPer5Minutes: number;
  /**
   * Signed requests per rolling second, and per rolling 5 minutes, from one client address by
   * wallets without app access (referral applications, and requests the invite gate refuses),
   * our limit: each consumes its nonce and so is journaled, and wallets cost nothing to make.
   */
  readonly noAccessRequestsPerSecondPerIp: number;
  readonly noAccessRequestsPer5MinutesPerIp: number;
  /**
   * How long `POST /referral/apply` waits for its turn behind the wallet's earlier requests
   * before it answers 504 "Referral service timed out", ms. A timed-out application never
   * reaches the engine (the spec's states table: a failure leaves no app access); one the
   * engine has is answered once durable, like every signed write.
   */
  readonly referralTimeoutMs: number;
  /**
   * Most working orders (resting and untriggered) per account, over every market (our rule; the
   * spec sets none). Engine state, not an adapter's: a new venue journals a value other than the
   * default as a `setVenueSettings` command, so a replay meets it where it happened. After that
   * the journal owns it, as it owns a listed instrument: `POST /api/admin/venue-settings` changes
   * it, and a later start where the config differs logs that and keeps the venue's value.
   */
  readonly maxWorkingOrdersPerAccount: number;
}

/** The simulated index-price feed. */
export interface PriceFeedConfig {
  readonly mode: 'simulated' | 'none';
  /** PRNG seed: the same seed gives the same price path. */
  readonly seed: number;
  readonly intervalMs: number;
  /** Starting index price per symbol. */
  readonly start: Readonly<Record<string, string>>;
  /** Standard deviation of one step, as a fraction of the price (e.g. 0.0005). */
  readonly volatility: number;
}

/** Everything a venue needs to start. */
export interface VenueConfig {
  readonly network: NetworkName;
  readonly vault: { readonly name: string; readonly address: string };
  readonly token: { readonly name: string; readonly address: string; readonly decimals: 6 };
  readonly instruments: readonly InstrumentSettings[];
  readonly limits: LimitsConfig;
  readonly priceFeed: PriceFeedConfig;
  /** Uses of the bootstrap invite code printed on a new data directory. */
  readonly bootstrapInviteUses: number;
  /**
   * Worker threads that recover signatures off the event loop: `'auto'` is min(4, cores - 1),
   * at least 1; 0 verifies inline. Native libsecp256k1 is used when the optional `secp256k1`
   * package loads, @noble/curves otherwise.
   */
  readonly verifyWorkers: number | 'auto';
  /**
   * Proxies whose `X-Forwarded-For` names the client: IP addresses, CIDR ranges (`0.0.0.0/0` and
   * `::/0` included: both together trust every hop) and the keywords `loopback`, `linklocal`,
   * `uniquelocal`. The per-IP limits key on the client address
   * that header gives through these (`http/client-address.ts`), and their own connections are not
   * capped per address. Empty (the default): nobody is trusted and the TCP peer is the client.
   */
  readonly trustProxy: readonly string[];
}

/** The embedded default: the research vectors' example domains, three demo markets. */
export const DEFAULT_CONFIG: VenueConfig = {
  network: 'testnet',
  // The example domains of research 7.6 / Appendix A, so its published vectors verify here.
  vault: { name: 'ExampleVault', address: '0x5fbdb2315678afecb367f032d93f642f64180aa3' },
  token: { name: 'USD Coin', address: '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512', decimals: 6 },
  instruments: [
    {
      id: 1,
      symbol: 'BTC-PERP',
      tickSize: '0.5',
      lotSize: '0.0001',
      quantityDecimals: 4,
      maxLeverage: 40,
      defaultLeverage: 10,
      openInterestCap: '500',
    },
    {
      id: 2,
      symbol: 'ETH-PERP',
      tickSize: '0.01',
      lotSize: '0.001',
      quantityDecimals: 3,
      maxLeverage: 25,
      defaultLeverage: 10,
      openInterestCap: '10000',
    },
    {
      id: 3,
      symbol: 'SOL-PERP',
      tickSize: '0.001',
      lotSize: '0.01',
      quantityDecimals: 2,
      maxLeverage: 10,
      defaultLeverage: 5,
      openInterestCap: '500000',
    },
  ],
  limits: {
    connectionsPerAccount: 8,
    connectionsPerIp: 30,
    // Above the 100 requests per second an address may make, so a burst over that budget is
    // answered 429 with Retry-After rather than cut off; a quarter of the common 1,024 ulimit -n.
    httpConnectionsPerIp: 256,
    ipv6PrefixLength: 64,
    publicReadsPerSecond: 100,
    requestTimeoutMs: 10_000,
    maxMessageBytes: 64 * 1024,
    maxJsonDepth: 32,
    pingIntervalMs: 15_000,
    idleTimeoutMs: 30_000,
    summaryCoalesceMs: 50,
    slowConsumerBytes: 4 * 1024 * 1024,
    walletRequestsPerSecond: 20,
    signedRequestsPer5Minutes: 3_000,
    noAccessRequestsPerSecondPerIp: 5,
    noAccessRequestsPer5MinutesPerIp: 100,
    referralTimeoutMs: 10_000,
    maxWorkingOrdersPerAccount: DEFAULT_VENUE_SETTINGS.maxWorkingOrdersPerAccount,
  },
  priceFeed: {
    mode: 'simulated',
    seed: 42,
    intervalMs: 1_000,
    start: { 'BTC-PERP': '65000', 'ETH-PERP': '3000', 'SOL-PERP': '150' },
    volatility: 0.0005,
  },
  bootstrapInviteUses: 1_000,
  verifyWorkers: 'auto',
  trustProxy: [],
};

/** Chain id of a network. */
export function chainIdOf(network: NetworkName): number {
  return network === 'mainnet' ? 143 : 10143;
}

/** Token EIP-712 domain version of a network (USDC style: "1" on test, "2" on production). */
export function tokenVersionOf(network: NetworkName): string {
  return network === 'mainnet' ? '2' : '1';
}

/** A config that cannot run as intended; the message names the key (`limits.pingIntervalMs`). */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Deep-merges JSON overrides into a config; arrays (instruments) are replaced whole. */
export function mergeConfig(base: VenueConfig, override: unknown): VenueConfig {
  if (!isObject(override)) throw new ConfigError('config must be a JSON object');
  const merge = (a: unknown, b: unknown, path: string): unknown => {
    if (!isObject(a) || !isObject(b)) return b;
    const out: Record<string, unknown> = { ...a };
    for (const [k, v] of Object.entries(b)) {
      // No config key is named so; merging one would reach the prototype.
      if (k === '__proto__' || k === 'constructor' || k === 'prototype')
        throw new ConfigError(`${path}${k} is not a config key`);
      out[k] = Object.hasOwn(a, k) ? merge(a[k], v, `${path}${k}.`) : v;
    }
    return out;
  };
  return parseConfig(merge(base, override, ''));
}

/**
 * Checks a whole config ({@link validateConfig}) and returns it as the venue applies it:
 * engine-rules' flat liquidation names nested. `--config` files and `startVenue` both pass here.
 */
export function parseConfig(value: unknown): VenueConfig {
  validateConfig(value);
  return {
    ...value,
    instruments: value.instruments.map((s, i) => parseInstrumentSettings(s, `instruments[${i}].`)),
  };
}

/**
 * Reads a config file over the default. Every failure (no such file, invalid JSON, a refused
 * setting) is a {@link StartupError} naming the file and the cause.
 */
export function loadConfig(path: string | undefined): VenueConfig {
  if (path === undefined) return DEFAULT_CONFIG;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new StartupError(`config ${path}: ${(e as Error).message}`);
  }
  let json: unknown;
  try {
    // A byte-order mark (editors on Windows write one) is no JSON, and JSON.parse's complaint
    // about it quotes an invisible character.
    json = JSON.parse(text.startsWith('\uFEFF') ? text.slice(1) : text);
  } catch (e) {
    throw new StartupError(`config ${path}: not JSON: ${(e as Error).message}`);
  }
  try {
    return mergeConfig(DEFAULT_CONFIG, json);
  } catch (e) {
    if (e instanceof ConfigError) throw new StartupError(`config ${path}: ${e.message}`);
    throw e;
  }
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
/** Longest delay setTimeout and setInterval honour: above it they fire after 1 ms. */
export const TIMER_MAX_MS = 2_147_483_647;
/**
 * Shortest simulated price step: each step is a journaled oracle command, and a shorter one
 * would mostly fill the journal (0 or 1 would write one record per millisecond).
 */
export const MIN_PRICE_FEED_INTERVAL_MS = 100;

/** Refuses a key of `obj` that `allowed` does not hold (a typo would be ignored otherwise). */
function knownKeys(obj: Record<string, unknown>, allowed: object, path: string): void {
  for (const key of Object.keys(obj)) {
    if (!Object.hasOwn(allowed, key))
      throw new ConfigError(
        `${path}${key} is not a config key (${path === '' ? 'the keys' : path.slice(0, -1)}: ${Object.keys(allowed).join(', ')})`,
      );
  }
}

function section(c: Record<string, unknown>, key: string): Record<string, unknown> {
  const v = c[key];
  if (!isObject(v)) throw new ConfigError(`${key} must be an object`);
  return v;
}

function integer(value: unknown, key: string, min: number, max = Number.MAX_SAFE_INTEGER): void {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `in ${min}..${max}`;
    throw new ConfigError(`${key} must be an integer ${range}, not ${JSON.stringify(value)}`);
  }
}

function nonEmptyString(value: unknown, key: string): void {
  if (typeof value !== 'string' || value.length === 0)
    throw new ConfigError(`${key} must be a non-empty string`);
}

/** Limits that may be 0: no coalescing window sends each summary on the next turn. */
const ZERO_ALLOWED: ReadonlySet<string> = new Set(['summaryCoalesceMs']);

/** Throws a {@link ConfigError} naming the key for a config that cannot run as intended. */
export function validateConfig(value: unknown): asserts value is VenueConfig {
  if (!isObject(value)) throw new ConfigError('config must be a JSON object');
  const c = value;
  knownKeys(c, DEFAULT_CONFIG, '');
  if (c.network !== 'testnet' && c.network !== 'mainnet')
    throw new ConfigError('network must be testnet or mainnet');

  const vault = section(c, 'vault');
  knownKeys(vault, DEFAULT_CONFIG.vault, 'vault.');
  nonEmptyString(vault.name, 'vault.name');
  if (typeof vault.address !== 'string' || !ADDRESS.test(vault.address))
    throw new ConfigError('vault.address must be a 0x address');
  const token = section(c, 'token');
  knownKeys(token, DEFAULT_CONFIG.token, 'token.');
  nonEmptyString(token.name, 'token.name');
  if (typeof token.address !== 'string' || !ADDRESS.test(token.address))
    throw new ConfigError('token.address must be a 0x address');
  // The engine counts collateral in micro-units and GET /network announces this value: any other
  // would make clients scale amounts wrongly.
  if (token.decimals !== 6)
    throw new ConfigError(
      `token.decimals must be 6 (the engine's collateral decimals), not ${JSON.stringify(token.decimals)}`,
    );

  if (!Array.isArray(c.instruments) || c.instruments.length === 0)
    throw new ConfigError('instruments must be a non-empty array');
  const ids = new Map<number, number>();
  const symbols = new Map<string, number>();
  c.instruments.forEach((settings: unknown, i) => {
    let parsed: InstrumentSettings;
    try {
      parsed = parseInstrumentSettings(settings, `instruments[${i}].`);
      requireNewInstrumentSettings(parsed, `instruments[${i}].`);
    } catch (e) {
      if (e instanceof SettingsTypeError) throw new ConfigError(e.message);
      throw e;
    }
    const built = buildInstrument(parsed);
    if (!built.ok) throw new ConfigError(`instruments[${i}]: ${built.error}`);
    const { id, symbol } = built.instrument;
    const sameId = ids.get(id);
    if (sameId !== undefined)
      throw new ConfigError(`instruments[${i}].id ${id} is instruments[${sameId}]'s too`);
    const sameSymbol = symbols.get(symbol);
    if (sameSymbol !== undefined)
      throw new ConfigError(
        `instruments[${i}].symbol ${symbol} is instruments[${sameSymbol}]'s too`,
      );
    ids.set(id, i);
    symbols.set(symbol, i);
  });

  const limits = section(c, 'limits');
  knownKeys(limits, DEFAULT_CONFIG.limits, 'limits.');
  for (const key of Object.keys(DEFAULT_CONFIG.limits)) {
    integer(
      limits[key],
      `limits.${key}`,
      ZERO_ALLOWED.has(key) ? 0 : 1,
      key.endsWith('Ms') ? TIMER_MAX_MS : Number.MAX_SAFE_INTEGER,
    );
  }

  if (Number(limits.ipv6PrefixLength) < 32 || Number(limits.ipv6PrefixLength) > 128)
    throw new ConfigError(
      `limits.ipv6PrefixLength must be an integer 32..128 (64: one subscriber's network), not ${JSON.stringify(limits.ipv6PrefixLength)}`,
    );

  const feed = section(c, 'priceFeed');
  knownKeys(feed, DEFAULT_CONFIG.priceFeed, 'priceFeed.');
  if (feed.mode !== 'simulated' && feed.mode !== 'none')
    throw new ConfigError('priceFeed.mode must be simulated or none');
  integer(feed.seed, 'priceFeed.seed', 0);
  integer(feed.intervalMs, 'priceFeed.intervalMs', MIN_PRICE_FEED_INTERVAL_MS, TIMER_MAX_MS);
  if (
    typeof feed.volatility !== 'number' ||
    !Number.isFinite(feed.volatility) ||
    feed.volatility < 0 ||
    feed.volatility >= 1
  )
    throw new ConfigError('priceFeed.volatility must be a number in [0, 1)');
  const start = section(feed, 'start');
  for (const [symbol, price] of Object.entries(start)) {
    const parsed = typeof price === 'string' ? parseDecimal(price, 18) : undefined;
    if (parsed === undefined || !parsed.ok || parsed.value <= 0n)
      throw new ConfigError(
        `priceFeed.start.${symbol} must be a positive decimal string, not ${JSON.stringify(price)}`,
      );
  }

  // 0 would start a new venue without any invite code, so nobody could join.
  integer(c.bootstrapInviteUses, 'bootstrapInviteUses', 1);
  if (
    c.verifyWorkers !== 'auto' &&
    !(
      Number.isInteger(c.verifyWorkers) &&
      Number(c.verifyWorkers) >= 0 &&
      Number(c.verifyWorkers) <= 64
    )
  )
    throw new ConfigError("verifyWorkers must be 'auto' or an integer 0..64");
  if (!Array.isArray(c.trustProxy))
    throw new ConfigError(
      `trustProxy must be an array of proxy addresses, CIDR ranges or loopback, linklocal, uniquelocal ([] trusts nobody), not ${JSON.stringify(c.trustProxy)}`,
    );
  c.trustProxy.forEach((entry: unknown, i) => {
    const error = trustProxyEntryError(entry);
    if (error !== null) throw new ConfigError(`trustProxy[${i}] ${error}`);
  });
}

/** What a start does with the config's instruments on a venue in `state`. */
export interface ConfigInstrumentPlan {
  /** The instruments the venue does not list yet, in config order: a start lists them. */
  readonly toList: readonly Instrument[];
  /** One line per listed instrument the config differs from (a start logs them). */
  readonly differences: readonly string[];
}

/**
 * The config's instruments against a venue's state: the ones a start lists (ids the venue does
 * not list yet) and the differences it reports for listed ones, whose journaled settings stay.
 * Every instrument is checked before a start lists any (a refusal must journal nothing: no
 * command delists an instrument); a {@link StartupError} names the first refused one. `--check
 * --replay` runs the same on the replayed state.
 */
export function planConfigInstruments(
  config: VenueConfig,
  state: EngineState,
): ConfigInstrumentPlan {
  const toList: Instrument[] = [];
  const differences: string[] = [];
  for (const settings of config.instruments) {
    const built = buildInstrument(settings);
    // The config's fault, not a defect: one line (the CLI prints StartupError without a stack).
    if (!built.ok) throw new StartupError(`config instrument ${settings.symbol}: ${built.error}`);
    const instrument = built.instrument;
    const { id, symbol } = instrument;
    const existing = state.markets.get(id);
    if (existing === undefined) {
      const holder = state.symbols.get(symbol);
      if (holder !== undefined)
        throw new StartupError(
          `config instrument ${id} (${symbol}): symbol ${symbol} already belongs to listed instrument ${holder}; give it that id or another symbol`,
        );
      toList.push(instrument);
      continue;
    }
    const fields = instrumentDifferences(existing.spec, instrument);
    if (fields.length === 0) continue;
    // A config that names the id with another symbol says so: "instrument 2 (DOGE-PERP)" alone
    // reads as if the file had listed DOGE-PERP.
    const named = symbol === existing.spec.symbol ? '' : `, ${symbol} in the config`;
    differences.push(
      `config instrument ${id} (${existing.spec.symbol}${named}) differs from the listed one in ${fields.join(', ')}: the listed settings stay; change a listed instrument with POST /api/admin/instruments`,
    );
  }
  return { toList, differences };
}
