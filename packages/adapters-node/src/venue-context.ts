/**
 * What the transport layers of a running venue share: the engine host, the read models, the
 * chain, the limiters and the configuration. Built once by `venue.ts`.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http';
import type { ChainAdapter, RateLimiter } from '@perp/core';
import type { ChainDesk } from './chain/desk.js';
import type { VenueConfig } from './config.js';
import type { EngineHost } from './engine/host.js';
import type { WalletQueue } from './engine/wallet-queue.js';
import type { MarketDataService } from './marketdata/service.js';
import type { BackfillProgress } from './read/backfill.js';
import type { HistoryStore } from './read/history.js';
import type { ReportStreams } from './read/report-streams.js';
import type { ConnectionSlots } from './ws/connection-slots.js';

/** A chain the operator can also mint test tokens on (the embedded simulated chain). */
export interface VenueChain extends ChainAdapter {
  /** Mints collateral tokens to a wallet; returns its new balance. */
  faucet?(wallet: string, amount: bigint): bigint;
}

/** Shared services of a running venue. */
export interface VenueContext {
  readonly config: VenueConfig;
  readonly host: EngineHost;
  readonly history: HistoryStore;
  readonly streams: ReportStreams;
  readonly chain: VenueChain;
  /** Public reads and unauthenticated traffic, keyed by client IP. */
  readonly ipLimiter: RateLimiter;
  /**
   * The client of a request or upgrade request, as the per-IP limits key on it: the peer, or
   * what `X-Forwarded-For` says through the config's trusted proxies, and of an IPv6 client its
   * network (`limits.ipv6PrefixLength`; `limitKey` in `http/client-address.ts`).
   */
  readonly clientAddress: (request: IncomingMessage) => string;
  /** Attributed requests, keyed by wallet (REST and WebSocket together). */
  readonly walletLimiter: RateLimiter;
  /**
   * Signed requests of wallets without app access (refused by the invite gate, or applying a
   * code), keyed by client IP: each consumes its nonce, so it is journaled, and keys cost
   * nothing, so the per-wallet budget alone would let one address fill the disk
   * (`limits.noAccessRequestsPerSecondPerIp`, `limits.noAccessRequestsPer5MinutesPerIp`).
   */
  readonly accessLimiter: RateLimiter;
  /**
   * The clock both limiters are kept on, ms since the epoch: the process's monotonic clock. Not
   * the host clock, which holds at the last journaled time while the system clock is behind it
   * (after a step back), and would then let no request age out of a window.
   */
  readonly rateNow: () => number;
  /** Open WebSocket connections per client IP, `/ws` and `/marketdata` counted together. */
  readonly connectionSlots: ConnectionSlots;
  readonly walletQueue: WalletQueue;
  readonly adminToken: string;
  /** Carries deposits and withdrawals to the chain and their results back. */
  readonly desk: ChainDesk;
  /** The market-data projections, for the REST candle history and tickers. */
  readonly marketData: Pick<MarketDataService, 'candles' | 'tickers' | 'trades'>;
  /** Whether the read models reach back to the first record, and the backfill's progress. */
  readonly readModels: () => ReadModelsStatus;
}

/** `GET /api/admin/read-models`: how far back the read models reach after a restart. */
export interface ReadModelsStatus {
  /**
   * The read models (history, report replay, tickers, candles) reach back to the first journal
   * record: no restart from a snapshot, or its backfill is done. False while a backfill runs,
   * and for good after one that was abandoned or turned off.
   */
  readonly complete: boolean;
  /** The history backfill of this start (`null`: none). */
  readonly backfill: BackfillProgress | null;
}
