/**
 * `@perp/adapters-node`: serves the engine as a venue over HTTP and WebSocket, with an on-disk
 * journal and a CLI.
 *
 * @module
 */
export { ChainDesk } from './chain/desk.js';
export * from './config.js';
export { type Clock, ManualClock, SystemClock } from './engine/clock.js';
export * from './engine/host.js';
export { WalletQueue } from './engine/wallet-queue.js';
export * from './journal/file-journal.js';
export * from './marketdata/index.js';
export { HistoryStore } from './read/history.js';
export { ReportStreams } from './read/report-streams.js';
export { type StartVenueOptions, startVenue, type Venue } from './venue.js';
export * from './wire/format.js';
