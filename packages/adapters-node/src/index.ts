/**
 * `@perp/adapters-node`: serves the engine as a venue over HTTP and WebSocket, with an on-disk
 * journal and a CLI.
 *
 * @module
 */
export {
  CHAIN_RETRY_DELAYS_MS,
  ChainDesk,
  type ChainDeskOptions,
  type ReplayableChain,
} from './chain/desk.js';
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
export { BufferSource, type ByteSource, FileSource } from './journal/byte-source.js';
export * from './journal/file-journal.js';
export { RulesVersionMismatchError } from './journal/rules-version.js';
export {
  JournalBehindSnapshotError,
  type LoadedSnapshot,
  type SnapshotPolicy,
} from './journal/snapshots.js';
export * from './marketdata/index.js';
export type {
  BackfillOutcome,
  BackfillProgress,
  HistoryBackfill,
  ProjectionRebuild,
} from './read/backfill.js';
export {
  CheckpointEntryError,
  type CheckpointPart,
  type PartRestorer,
  type ReadModelCapture,
  type RowsCapture,
} from './read/checkpoint.js';
export {
  type CursorKind,
  type FundingRecord,
  type FundingSource,
  type HistoryLimits,
  type HistoryQuery,
  HistoryStore,
  isValidCursor,
  type OrderRecord as HistoryOrderRecord,
  type Page,
  type SettlementQuery,
  type SettlementRecord,
  type TradeRecord as HistoryTradeRecord,
} from './read/history.js';
export {
  type Replay,
  type ReportListener,
  ReportStreams,
  type RestatedBust,
} from './read/report-streams.js';
export { StartupError } from './startup-error.js';
export { type StartVenueOptions, startVenue, type Venue } from './venue.js';
export type { ReadModelsStatus, VenueChain, VenueContext } from './venue-context.js';
export * from './wire/format.js';
export { ConnectionSlots } from './ws/connection-slots.js';
