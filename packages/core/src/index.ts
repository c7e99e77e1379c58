/**
 * `@perp/core`: the pure, deterministic engine of the perpetual-futures venue. State changes only
 * through {@link reduce} / {@link reduceAll}; time, prices and chain results arrive inside
 * commands; ids come from counters in state.
 *
 * @module
 */

export {
  freshnessProblem,
  MAX_DEADLINE_AHEAD_MS,
  NONCE_WINDOW_MS,
  nonceFailure,
  notInvited,
} from './access/admission.js';
export {
  generatedCode,
  hasAppAccess,
  REFERRAL_CODE_RE,
  REFERRAL_NONCE_RE,
  type ReferralError,
  referralNonceUsed,
} from './access/referral.js';
export * from './auth/index.js';
export { depthOf, levelOrderIds } from './book/levels.js';
export { decodeJson, encodeJson } from './codec/json.js';
export { commandShapeProblem } from './engine/command-shape.js';
export * from './engine/commands.js';
export type { Ctx, PendingScope, ReportDraft } from './engine/context.js';
export * from './engine/events.js';
export { viewOf } from './engine/events.js';
export { createEngineState, DEFAULT_VENUE_SETTINGS, venueSettingsOf } from './engine/genesis.js';
export {
  type BatchResult,
  outcomeOf,
  type ReduceResult,
  reduce,
  reduceAll,
} from './engine/reduce.js';
export {
  ENGINE_RULES_VERSION,
  type ForeignRules,
  ForeignRulesScan,
  foreignRules,
} from './engine/rules.js';
export { nextWakeTime } from './engine/schedule.js';
export {
  type DecodedSnapshot,
  decodeSnapshot,
  decodeSnapshotText,
  encodeSnapshot,
  SNAPSHOT_VERSION,
  SnapshotEncoder,
  SnapshotFormatError,
  StateHasher,
  snapshotHash,
} from './engine/snapshot.js';
export {
  canonicalText,
  type Keccak256,
  nobleKeccak256,
  stateHash,
} from './engine/state-hash.js';
export * from './engine/types.js';
export * from './errors.js';
export * from './instruments/instrument.js';
export * from './limits/rate-limiter.js';
export { feeAmount, quoteAmount } from './margin/ledger.js';
export {
  bankruptcyPrice,
  type CrossExact,
  crossExact,
  liquidationPrice,
  maintenanceExact,
} from './margin/liquidation-price.js';
export {
  accountOrders,
  availableToOpen,
  initialMargin,
  isolatedCash,
  leverageOf,
  maintenanceMargin,
  measureScope,
  positionOf,
  type ScopeChange,
  type ScopeMetrics,
  transferableOf,
  valuationPrice,
} from './margin/scope.js';
export {
  type AccountSummary,
  type AssetPosition,
  accountSummary,
  emptyAccountSummary,
  type MarginSummary,
} from './margin/summary.js';
export { type ValidationResult, type ValidOrder, validateOrderRequest } from './orders/validate.js';
export type { EntryCursor } from './persistent/cursor.js';
export type { Edit } from './persistent/edit.js';
export { type PKey, PMap } from './persistent/hamt.js';
export type { IdList } from './persistent/id-list.js';
export type { IntMap } from './persistent/int-map.js';
export type { TimeIdSet } from './persistent/sorted-set.js';
export * from './ports.js';
export { type BustedOrderFigures, nextPosition, orderAfterBust } from './risk/bust.js';
export {
  averagePremium,
  fundingInfo,
  fundingRateFor,
  impactPrice,
  nextFundingTime,
  predictedRate,
  premiumSample,
} from './risk/funding.js';
export {
  isLiquidatable,
  type ScopeDebt,
  type ScopeRisk,
  type SolvencyReport,
  scopeInAuction,
  scopeRisk,
  solvencyReport,
} from './risk/health.js';
export {
  type AdlCandidate,
  adlQueue,
  auctionEvents,
  auctionPrice,
  auctionView,
  bankruptcyRaw,
  liveAuctions,
} from './risk/liquidation.js';
export type { TradeLog } from './risk/trade-log.js';
export { tradeRecordOf, tradeRecords } from './risk/trades.js';
export * from './units/decimal.js';
export * from './units/rational.js';
export * from './units/rounding.js';
