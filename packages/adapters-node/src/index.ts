/**
 * `@perp/adapters-node`: serves the engine as a venue over HTTP and WebSocket, with an on-disk
 * journal and a CLI.
 *
 * @module
 */
export { ChainDesk, type ReplayableChain } from './chain/desk.js';
export * from './config.js';
export { type Clock, ManualClock, SystemClock } from './engine/clock.js';
export * from './engine/host.js';
export { WalletQueue } from './engine/wallet-queue.js';
export {
  clientAddress,
  compileProxyTrust,
  limitKey,
  normalizeAddress,
  type ProxyTrust,
  TRUST_PROXY_KEYWORDS,
  trustProxyEntryError,
} from './http/client-address.js';
export * from './journal/file-journal.js';
export { RulesVersionMismatchError } from './journal/rules-version.js';
export { JournalBehindSnapshotError, type SnapshotPolicy } from './journal/snapshots.js';
export * from './marketdata/index.js';
export type {
  BackfillOutcome,
  BackfillProgress,
  HistoryBackfill,
  ProjectionRebuild,
} from './read/backfill.js';
export {
  type HistoryQuery,
  HistoryStore,
  type OrderRecord as HistoryOrderRecord,
  type Page,
  type TradeRecord as HistoryTradeRecord,
} from './read/history.js';
export { type Replay, type ReportListener, ReportStreams } from './read/report-streams.js';
export { StartupError } from './startup-error.js';
export { type StartVenueOptions, startVenue, type Venue } from './venue.js';
export type { VenueChain, VenueContext } from './venue-context.js';
export * from './wire/format.js';
