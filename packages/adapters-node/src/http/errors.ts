/**
 * The one place where engine refusals become HTTP answers (interface-spec "Errors",
 * protocol.md section 4): REST bodies are `{ error }` with a status from the spec's list.
 *
 * @module
 */
import { ErrorCode } from '@perp/core';
import { HostStoppedError } from '../engine/host.js';

/** An HTTP error answer. */
export class HttpError extends Error {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** Which check failed, when the answer's `error` is a fixed text (the referral's 400). */
  readonly detail: string | undefined;

  constructor(
    status: number,
    message: string,
    headers: Record<string, string> = {},
    detail?: string,
  ) {
    super(message);
    this.status = status;
    this.headers = headers;
    this.detail = detail;
  }
}

/**
 * Whether an error is answered 400: an {@link HttpError} with that status, or a request Fastify
 * refused before any handler (malformed, empty, oversized or wrongly typed body: its
 * `FST_ERR_CTP_*` errors, whose 413 and 415 are 400 here because the spec's status list lacks
 * them; schema validation).
 */
export function isBadRequest(error: unknown): boolean {
  if (error instanceof HttpError) return error.status === 400;
  if (typeof error !== 'object' || error === null) return false;
  const { code, statusCode } = error as { code?: unknown; statusCode?: unknown };
  const text = typeof code === 'string' ? code : '';
  return text.startsWith('FST_ERR_CTP') || text === 'FST_ERR_VALIDATION' || statusCode === 400;
}

/**
 * The answer to a request Node's HTTP parser refused before any route saw it (its `clientError`):
 * an incomplete request at the request timeout is 408 (an extension to the spec's status list,
 * like 429: the client may resend), every other framing problem 400 (the spec's list has no 431).
 */
export function clientErrorAnswer(
  code: string | undefined,
  requestTimeoutMs: number,
): { status: number; message: string } {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return {
      status: 408,
      message: `request timeout: the request (headers and body) did not arrive within ${requestTimeoutMs} ms`,
    };
  }
  if (code === 'HPE_HEADER_OVERFLOW')
    return { status: 400, message: 'bad request: the request line and headers exceed 16 KiB' };
  return { status: 400, message: `bad request: malformed HTTP (${code ?? 'unknown'})` };
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

/** Seconds a client is told to wait before retrying on a stopped engine (5002, HTTP 503). */
export const ENGINE_RETRY_AFTER_SECONDS = 5;

/**
 * The HTTP answer of a request the engine host could not carry out because it stopped (the
 * spec's 5001 or 5002), or `undefined` for any other error.
 */
export function stoppedEngineAnswer(error: unknown): HttpError | undefined {
  if (!(error instanceof HostStoppedError)) return undefined;
  const headers: Record<string, string> =
    error.code === ErrorCode.LEDGER_UNAVAILABLE
      ? { 'retry-after': String(ENGINE_RETRY_AFTER_SECONDS) }
      : {};
  return new HttpError(statusOf(error.code), error.message, headers);
}
