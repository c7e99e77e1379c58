/**
 * `@perp/core`: the pure, deterministic engine of the perpetual-futures venue. State changes only
 * through {@link reduce} / {@link reduceAll}; time, prices and chain results arrive inside
 * commands; ids come from counters in state.
 *
 * @module
 */
export * from './errors.js';
export * from './units/decimal.js';
export * from './units/rounding.js';
export * from './instruments/instrument.js';
export type { Edit } from './persistent/edit.js';
export { PMap } from './persistent/hamt.js';
export * from './engine/types.js';
export * from './engine/commands.js';
export * from './engine/events.js';
export { reduce, reduceAll, type ReduceResult, type BatchResult } from './engine/reduce.js';
export { createEngineState, DEFAULT_VENUE_SETTINGS } from './engine/genesis.js';
export { canonicalText, stateHash } from './engine/state-hash.js';
export { validateOrderRequest, type ValidOrder } from './orders/validate.js';
export { depthOf, levelOrderIds } from './book/levels.js';
export { NONCE_WINDOW_MS, MAX_DEADLINE_AHEAD_MS } from './access/admission.js';
