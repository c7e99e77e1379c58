/**
 * The public market-data service: projections (tickers, candles, book snapshots, the trade
 * tape) and the WebSocket that serves them.
 *
 * @module
 */
export * from './candles.js';
export * from './checkpoint.js';
export * from './liquidations.js';
export * from './orderbook.js';
export * from './pacing.js';
export * from './prints.js';
export * from './requests.js';
export * from './rolling-window.js';
export * from './service.js';
export * from './ticker.js';
export * from './trades.js';
