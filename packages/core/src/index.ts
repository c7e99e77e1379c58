/**
 * `@perp/core`: the pure, deterministic engine of the perpetual-futures venue. State changes only
 * through {@link reduce} / {@link reduceAll}; time, prices and chain results arrive inside
 * commands; ids come from counters in state.
 *
 * @module
 */

export { MAX_DEADLINE_AHEAD_MS, NONCE_WINDOW_MS } from './access/admission.js';
export { depthOf, levelOrderIds } from './book/levels.js';
export * from './engine/commands.js';
export * from './engine/events.js';
export { createEngineState, DEFAULT_VENUE_SETTINGS } from './engine/genesis.js';
export { type BatchResult, type ReduceResult, reduce, reduceAll } from './engine/reduce.js';
export { canonicalText, stateHash } from './engine/state-hash.js';
export * from './engine/types.js';
export * from './errors.js';
export * from './instruments/instrument.js';
export { type ValidOrder, validateOrderRequest } from './orders/validate.js';
export type { Edit } from './persistent/edit.js';
export { PMap } from './persistent/hamt.js';
export * from './units/decimal.js';
export * from './units/rounding.js';
export * from './units/rational.js';
export {
  accountSummary,
  emptyAccountSummary,
  type AccountSummary,
  type AssetPosition,
  type MarginSummary,
} from './margin/summary.js';
export { liquidationPrice, bankruptcyPrice, maintenanceExact } from './margin/liquidation-price.js';
export {
  measureScope,
  availableToOpen,
  transferableOf,
  initialMargin,
  maintenanceMargin,
  positionOf,
  leverageOf,
  isolatedCash,
  valuationPrice,
  type ScopeMetrics,
} from './margin/scope.js';
export { quoteAmount, feeAmount } from './margin/ledger.js';
export { viewOf } from './engine/events.js';
export * from './limits/rate-limiter.js';
export {
  hasAppAccess,
  generatedCode,
  REFERRAL_CODE_RE,
  REFERRAL_NONCE_RE,
  type ReferralError,
} from './access/referral.js';
export { nonceFailure, notInvited } from './access/admission.js';
