/**
 * Venue configuration: network and contract settings (they build the two EIP-712 domains),
 * instruments, limits and the price feed. The embedded default is a test network venue with three
 * demo markets; `--config <file>` overrides any part of it with JSON.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { buildInstrument, type InstrumentSettings } from '@perp/core';
import { parseInstrumentSettings } from './instrument-settings.js';

/** `testnet` (chain id 10143, token domain version "1") or `mainnet` (143, "2"). */
export type NetworkName = 'testnet' | 'mainnet';

/** Limits the adapters enforce (the spec's fixed ones and the values it leaves to us). */
export interface LimitsConfig {
  /** Authenticated WebSocket connections per account (spec: 8). */
  readonly connectionsPerAccount: number;
  /**
   * WebSocket connections per client IP, `/ws` and `/marketdata` together, checked at upgrade
   * before any authentication (protocol.md: 30); an authenticated socket keeps its slot.
   */
  readonly connectionsPerIp: number;
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
  /** Requests per rolling second per wallet, REST and WebSocket together (spec: 20). */
  readonly walletRequestsPerSecond: number;
  /** Signed requests per rolling 5 minutes per wallet (protocol.md: 3,000; cancels get twice). */
  readonly signedRequestsPer5Minutes: number;
  /**
   * How long `POST /referral/apply` waits for its command to be applied and durable before it
   * answers 504 "Referral service timed out" (the outcome is then unknown to the client), ms.
   */
  readonly referralTimeoutMs: number;
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
    publicReadsPerSecond: 100,
    requestTimeoutMs: 10_000,
    maxMessageBytes: 64 * 1024,
    maxJsonDepth: 32,
    pingIntervalMs: 15_000,
    idleTimeoutMs: 30_000,
    summaryCoalesceMs: 50,
    walletRequestsPerSecond: 20,
    signedRequestsPer5Minutes: 3_000,
    referralTimeoutMs: 10_000,
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
};

/** Chain id of a network. */
export function chainIdOf(network: NetworkName): number {
  return network === 'mainnet' ? 143 : 10143;
}

/** Token EIP-712 domain version of a network (USDC style: "1" on test, "2" on production). */
export function tokenVersionOf(network: NetworkName): string {
  return network === 'mainnet' ? '2' : '1';
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Deep-merges JSON overrides into a config; arrays (instruments) are replaced whole. */
export function mergeConfig(base: VenueConfig, override: unknown): VenueConfig {
  if (!isObject(override)) throw new Error('config must be a JSON object');
  const merge = (a: unknown, b: unknown): unknown => {
    if (!isObject(a) || !isObject(b)) return b;
    const out: Record<string, unknown> = { ...a };
    for (const [k, v] of Object.entries(b)) {
      if (k === '__proto__' || k === 'constructor' || k === 'prototype') continue;
      out[k] = k in a ? merge(a[k], v) : v;
    }
    return out;
  };
  const merged = merge(base, override) as VenueConfig;
  validateConfig(merged);
  // The settings as the venue applies them (engine-rules' flat liquidation names nested).
  return {
    ...merged,
    instruments: merged.instruments.map((s, i) => parseInstrumentSettings(s, `instruments[${i}].`)),
  };
}

/** Reads a config file over the default. */
export function loadConfig(path: string | undefined): VenueConfig {
  if (path === undefined) return DEFAULT_CONFIG;
  return mergeConfig(DEFAULT_CONFIG, JSON.parse(readFileSync(path, 'utf8')) as unknown);
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** Throws a readable error for a config that cannot run. */
export function validateConfig(c: VenueConfig): void {
  if (c.network !== 'testnet' && c.network !== 'mainnet')
    throw new Error('network must be testnet or mainnet');
  if (!ADDRESS.test(c.vault.address)) throw new Error('vault.address must be a 0x address');
  if (!ADDRESS.test(c.token.address)) throw new Error('token.address must be a 0x address');
  if (typeof c.vault.name !== 'string' || typeof c.token.name !== 'string')
    throw new Error('vault.name and token.name are strings');
  if (!Array.isArray(c.instruments) || c.instruments.length === 0)
    throw new Error('instruments must be a non-empty array');
  c.instruments.forEach((settings: unknown, i) => {
    const built = buildInstrument(parseInstrumentSettings(settings, `instruments[${i}].`));
    if (!built.ok) throw new Error(`instruments[${i}]: ${built.error}`);
  });
  if (c.priceFeed.mode !== 'simulated' && c.priceFeed.mode !== 'none')
    throw new Error('priceFeed.mode must be simulated or none');
  if (
    c.verifyWorkers !== 'auto' &&
    !(Number.isInteger(c.verifyWorkers) && c.verifyWorkers >= 0 && c.verifyWorkers <= 64)
  ) {
    throw new Error("verifyWorkers must be 'auto' or an integer 0..64");
  }
}
