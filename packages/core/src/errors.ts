/**
 * The one table of the interface spec's error codes (WebSocket codes 4000-5003), with the layer
 * that produces each and the client action the spec prescribes. Every rejection anywhere in the
 * product carries one of these codes; adapters map them to wire form in one place.
 *
 * @module
 */

/** Spec error names mapped to their numeric codes (interface-spec "WebSocket error codes"). */
export const ErrorCode = {
  INVALID_REQUEST: 4000,
  INVALID_SIGNATURE: 4001,
  INVALID_NONCE: 4002,
  NOT_AUTHENTICATED: 4003,
  WALLET_MISMATCH: 4004,
  USER_NOT_INVITED: 4015,
  RATE_LIMIT_EXCEEDED: 4029,
  INVALID_ORDER_TYPE: 4030,
  INVALID_TIME_IN_FORCE: 4031,
  INVALID_ORDER_PRICE: 4032,
  ALREADY_SUBSCRIBED: 4033,
  INVALID_ORDER_QUANTITY: 4034,
  SUSTAINED_RATE_LIMIT_EXCEEDED: 4035,
  ACCOUNT_NOT_FOUND: 4040,
  ORDER_NOT_FOUND: 4041,
  INSUFFICIENT_MARGIN: 4100,
  ORDER_TOO_SMALL: 4101,
  MAX_LEVERAGE_EXCEEDED: 4102,
  OI_CAP_EXCEEDED: 4103,
  INTERNAL_ERROR: 5000,
  EXCHANGE_ERROR: 5001,
  LEDGER_UNAVAILABLE: 5002,
  EXCHANGE_ACCOUNT_ERROR: 5003,
} as const;

/** A spec error name such as `INSUFFICIENT_MARGIN`. */
export type ErrorName = keyof typeof ErrorCode;
/** A spec error code such as `4100`. */
export type ErrorCodeValue = (typeof ErrorCode)[ErrorName];

/** Which layer produces a code: the pure core, or an adapter (transport, session, server). */
export type ErrorOwner = 'core' | 'adapter';

/** What the spec's handling table tells a client to do with a code. */
export interface ErrorInfo {
  readonly code: ErrorCodeValue;
  readonly name: ErrorName;
  readonly owner: ErrorOwner;
  /** The spec's one-line meaning. */
  readonly meaning: string;
  /** Whether a retry of the same request may succeed (spec "Handling rules"). */
  readonly retryable: boolean;
}

const info = (
  name: ErrorName,
  owner: ErrorOwner,
  meaning: string,
  retryable = false,
): ErrorInfo => ({ code: ErrorCode[name], name, owner, meaning, retryable });

/** Metadata for every code, in code order. */
export const ERROR_TABLE: readonly ErrorInfo[] = [
  info(
    'INVALID_REQUEST',
    'core',
    'Malformed request, missing required fields, or a rejected reduce-only or SL/TP placement',
  ),
  info('INVALID_SIGNATURE', 'core', 'Signature verification failed'),
  info('INVALID_NONCE', 'core', 'Nonce expired, replayed or outside the window'),
  info('NOT_AUTHENTICATED', 'adapter', 'Connection not authenticated'),
  info('WALLET_MISMATCH', 'adapter', 'Signed wallet differs from authenticated wallet'),
  info('USER_NOT_INVITED', 'core', 'Wallet has no app access'),
  info(
    'RATE_LIMIT_EXCEEDED',
    'core',
    'More than 20 requests per second per authenticated wallet',
    true,
  ),
  info('INVALID_ORDER_TYPE', 'core', 'Invalid order type'),
  info('INVALID_TIME_IN_FORCE', 'core', 'Invalid time in force'),
  info('INVALID_ORDER_PRICE', 'core', 'Invalid or missing price for the order type'),
  info('ALREADY_SUBSCRIBED', 'adapter', 'Connection already subscribed to the trading stream'),
  info('INVALID_ORDER_QUANTITY', 'core', 'Invalid order quantity'),
  info('SUSTAINED_RATE_LIMIT_EXCEEDED', 'core', 'Signed request budget exhausted', true),
  info('ACCOUNT_NOT_FOUND', 'core', 'Trading account not found'),
  info(
    'ORDER_NOT_FOUND',
    'core',
    'Cancel or replace target already filled, cancelled or expired; a benign race',
  ),
  info('INSUFFICIENT_MARGIN', 'core', 'Insufficient margin'),
  info('ORDER_TOO_SMALL', 'core', 'Order notional below the minimum'),
  info('MAX_LEVERAGE_EXCEEDED', 'core', 'Leverage above the instrument maximum'),
  info('OI_CAP_EXCEEDED', 'core', 'Order would exceed the open interest cap'),
  info(
    'INTERNAL_ERROR',
    'adapter',
    'Internal server error; also returned when a connection exceeds 8 per account',
    true,
  ),
  info('EXCHANGE_ERROR', 'adapter', 'Matching engine error', true),
  info('LEDGER_UNAVAILABLE', 'adapter', 'Risk engine unavailable', true),
  info('EXCHANGE_ACCOUNT_ERROR', 'adapter', 'Account creation or retrieval failed', true),
];

const byCode = new Map<number, ErrorInfo>(ERROR_TABLE.map((e) => [e.code, e]));

/** Looks up the metadata of a code; `undefined` for a number outside the table. */
export function errorInfo(code: number): ErrorInfo | undefined {
  return byCode.get(code);
}

/**
 * A refusal as data: the spec code and a message that says which check failed. Rejections are
 * returned, never thrown.
 */
export interface Rejection {
  readonly code: ErrorCodeValue;
  readonly message: string;
}

/** Builds a rejection whose message starts with the spec name, e.g. `INSUFFICIENT_MARGIN: ...`. */
export function reject(name: ErrorName, detail: string): Rejection {
  return { code: ErrorCode[name], message: `${name}: ${detail}` };
}

/**
 * A broken invariant (negative collateral, crossed book, conservation mismatch). It is thrown,
 * and the engine must stop: this is a bug, never a business outcome.
 */
export class InvariantError extends Error {
  override readonly name = 'Core.InvariantError';
}

/** Throws an {@link InvariantError} when `condition` is false. Assertions stay on in production. */
export function invariant(condition: unknown, message: string): asserts condition {
  if (!condition) throw new InvariantError(message);
}
