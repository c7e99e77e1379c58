/**
 * The one place where engine refusals become HTTP answers (interface-spec "Errors",
 * protocol.md section 4): REST bodies are `{ error }` with a status from the spec's list.
 *
 * @module
 */
import { ErrorCode } from '@perp/core';

/** An HTTP error answer. */
export class HttpError extends Error {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;

  constructor(status: number, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.headers = headers;
  }
}

/**
 * HTTP status of a refusal on a signed REST write: bad input, signatures and nonces are 400,
 * the invite gate 403, a missing account 404, rate limits 429 (an extension the spec's status
 * list lacks, as clients expect), server trouble 5xx.
 */
export function statusOf(code: number): number {
  switch (code) {
    case ErrorCode.USER_NOT_INVITED:
      return 403;
    case ErrorCode.ACCOUNT_NOT_FOUND:
      return 404;
    case ErrorCode.RATE_LIMIT_EXCEEDED:
    case ErrorCode.SUSTAINED_RATE_LIMIT_EXCEEDED:
      return 429;
    case ErrorCode.INTERNAL_ERROR:
    case ErrorCode.EXCHANGE_ERROR:
      return 500;
    case ErrorCode.LEDGER_UNAVAILABLE:
    case ErrorCode.EXCHANGE_ACCOUNT_ERROR:
      return 503;
    default:
      return 400;
  }
}
