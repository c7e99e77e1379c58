/**
 * `POST /referral/apply` authentication (interface-spec "Canonical-JSON signed payload",
 * protocol.md section 3, reliability 2.7).
 *
 * - A strict, iterative JSON parser: duplicate keys (seen while tokenizing, which `JSON.parse`
 *   cannot report), `__proto__` / `constructor` / `prototype` keys, lone surrogates, non-finite
 *   numbers and nesting deeper than 32 are refused; objects have a null prototype. No recursion,
 *   so a depth bomb is an ordinary refusal, never a `RangeError`.
 * - The canonical text the wallet signs with personal_sign: keys `body, method, nonce, path,
 *   timestamp, walletAddress` in that order, no whitespace, the flat body's keys sorted by UTF-16
 *   code units (`Array.prototype.sort`, never `localeCompare`), `timestamp` a JSON number (ms),
 *   `nonce` a string.
 * - Header rules, the +-5 minute window (inclusive) and the signature check, with the spec's HTTP
 *   results: 400 `walletAddress and code are required` for a malformed body, 401
 *   `Unauthorized: <reason>` for header, window and signature problems.
 *
 * @module
 */
import { personalMessageHash } from './personal-sign.js';
import { parseSignature, type SignatureVerifier } from './signature.js';
import { recoverAndMatch } from './verify.js';

/** A JSON value as {@link parseStrictJson} returns it (objects have a null prototype). */
export type JsonValue = string | number | boolean | null | JsonObject | readonly JsonValue[];
/** A JSON object with a null prototype. */
export interface JsonObject {
  readonly [key: string]: JsonValue;
}

/** A value allowed in a flat body. */
export type FlatJsonValue = string | number | boolean | null;
/** A flat JSON object (null prototype): the only body shape that may be signed. */
export interface FlatJsonObject {
  readonly [key: string]: FlatJsonValue;
}

/** Deepest nesting a request body may have (protocol.md section 4). */
export const MAX_JSON_DEPTH = 32;

/** Keys refused anywhere in a body: they poison prototypes once merged into an object. */
export const FORBIDDEN_JSON_KEYS: ReadonlySet<string> = new Set([
  '__proto__',
  'constructor',
  'prototype',
]);

/** Result of the strict parsers: a value, or the reason the text was refused. */
export type JsonParseResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly reason: string };

/** Whether a string has no lone UTF-16 surrogate (I-JSON, RFC 7493). */
export function isWellFormedUnicode(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    if (c > 0xdbff) return false;
    const next = text.charCodeAt(i + 1);
    if (!(next >= 0xdc00 && next <= 0xdfff)) return false;
    i++;
  }
  return true;
}

const ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};
const HEX4 = /^[0-9a-fA-F]{4}$/;

const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;

/** End offset of the JSON number starting at `start` (RFC 8259 grammar), or -1. */
function numberEnd(text: string, start: number): number {
  let i = start;
  if (text.charCodeAt(i) === 0x2d) i++;
  const first = text.charCodeAt(i);
  if (first === 0x30) i++;
  else if (first > 0x30 && first <= 0x39) while (isDigit(text.charCodeAt(i))) i++;
  else return -1;
  if (text.charCodeAt(i) === 0x2e) {
    i++;
    if (!isDigit(text.charCodeAt(i))) return -1;
    while (isDigit(text.charCodeAt(i))) i++;
  }
  const e = text.charCodeAt(i);
  if (e === 0x65 || e === 0x45) {
    i++;
    const sign = text.charCodeAt(i);
    if (sign === 0x2b || sign === 0x2d) i++;
    if (!isDigit(text.charCodeAt(i))) return -1;
    while (isDigit(text.charCodeAt(i))) i++;
  }
  return i;
}

interface Frame {
  readonly container: Record<string, JsonValue> | JsonValue[];
  readonly isArray: boolean;
  key: string;
}

/**
 * Parses JSON text strictly (see the module comment); never throws. `maxDepth` counts nested
 * objects and arrays, the top level being 1.
 */
export function parseStrictJson(
  text: string,
  maxDepth: number = MAX_JSON_DEPTH,
): JsonParseResult<JsonValue> {
  const n = text.length;
  let i = 0;
  const fail = (reason: string): JsonParseResult<JsonValue> => ({ ok: false, reason });
  const skipWs = (): void => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return;
      i++;
    }
  };
  // Reads the string that starts at text[i] === '"'.
  const readString = (): string | { error: string } => {
    i++;
    let out = '';
    let runStart = i;
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        out += text.slice(runStart, i);
        i++;
        if (!isWellFormedUnicode(out)) return { error: 'string has a lone surrogate' };
        return out;
      }
      if (c < 0x20) return { error: `unescaped control character at offset ${i}` };
      if (c === 0x5c) {
        out += text.slice(runStart, i);
        const e = text[i + 1];
        if (e === 'u') {
          const hex = text.slice(i + 2, i + 6);
          if (!HEX4.test(hex)) return { error: `bad \\u escape at offset ${i}` };
          out += String.fromCharCode(Number.parseInt(hex, 16));
          i += 6;
        } else {
          const mapped = e === undefined ? undefined : ESCAPES[e];
          if (mapped === undefined) return { error: `bad escape at offset ${i}` };
          out += mapped;
          i += 2;
        }
        runStart = i;
        continue;
      }
      i++;
    }
    return { error: 'unterminated string' };
  };

  const stack: Frame[] = [];
  // Parses an object key and its colon into the top frame; returns a reason on failure.
  const readKey = (): string | undefined => {
    const frame = stack[stack.length - 1] as Frame;
    if (text.charCodeAt(i) !== 0x22) return `expected a string key at offset ${i}`;
    const key = readString();
    if (typeof key !== 'string') return key.error;
    if (FORBIDDEN_JSON_KEYS.has(key)) return `key ${JSON.stringify(key)} is not allowed`;
    if (Object.hasOwn(frame.container, key)) return `duplicate key ${JSON.stringify(key)}`;
    skipWs();
    if (text.charCodeAt(i) !== 0x3a) return `expected : at offset ${i}`;
    i++;
    frame.key = key;
    return undefined;
  };

  skipWs();
  if (i === n) return fail('empty text');
  for (;;) {
    // Read one value starting at text[i].
    skipWs();
    let value: JsonValue;
    const c = text.charCodeAt(i);
    if (c === 0x7b || c === 0x5b) {
      if (stack.length >= maxDepth) return fail(`nesting deeper than ${maxDepth}`);
      const isArray = c === 0x5b;
      const container: Record<string, JsonValue> | JsonValue[] = isArray
        ? []
        : (Object.create(null) as Record<string, JsonValue>);
      i++;
      skipWs();
      if (text.charCodeAt(i) === (isArray ? 0x5d : 0x7d)) {
        i++;
        value = container;
      } else {
        stack.push({ container, isArray, key: '' });
        if (!isArray) {
          const bad = readKey();
          if (bad !== undefined) return fail(bad);
        }
        continue;
      }
    } else if (c === 0x22) {
      const s = readString();
      if (typeof s !== 'string') return fail(s.error);
      value = s;
    } else if (text.startsWith('true', i)) {
      value = true;
      i += 4;
    } else if (text.startsWith('false', i)) {
      value = false;
      i += 5;
    } else if (text.startsWith('null', i)) {
      value = null;
      i += 4;
    } else {
      const end = numberEnd(text, i);
      if (end < 0) {
        return fail(i >= n ? 'unexpected end of text' : `unexpected character at offset ${i}`);
      }
      const num = Number(text.slice(i, end));
      if (!Number.isFinite(num)) return fail(`number out of range at offset ${i}`);
      value = num === 0 ? 0 : num; // -0 is 0 in canonical JSON
      i = end;
    }
    // Place the value, then close as many containers as the text closes.
    for (;;) {
      const frame = stack[stack.length - 1];
      if (frame === undefined) {
        skipWs();
        if (i !== n) return fail(`unexpected text after the value at offset ${i}`);
        return { ok: true, value };
      }
      if (frame.isArray) (frame.container as JsonValue[]).push(value);
      else (frame.container as Record<string, JsonValue>)[frame.key] = value;
      skipWs();
      const d = text.charCodeAt(i);
      if (d === 0x2c) {
        i++;
        if (!frame.isArray) {
          skipWs();
          const bad = readKey();
          if (bad !== undefined) return fail(bad);
        }
        break;
      }
      if (d === (frame.isArray ? 0x5d : 0x7d)) {
        i++;
        stack.pop();
        value = frame.container;
        continue;
      }
      return fail(`expected , or ${frame.isArray ? ']' : '}'} at offset ${i}`);
    }
  }
}

/**
 * Parses a body that must be one flat JSON object: values strings, booleans, null or safe
 * integers (the only numbers allowed in signed JSON); null-prototype result.
 */
export function parseFlatJsonObject(text: string): JsonParseResult<FlatJsonObject> {
  const parsed = parseStrictJson(text);
  if (!parsed.ok) return parsed;
  const value = parsed.value;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, reason: 'body must be a JSON object' };
  }
  const obj = value as JsonObject;
  for (const key of Object.keys(obj)) {
    const v = obj[key];
    if (v !== null && typeof v === 'object') {
      return {
        ok: false,
        reason: `body must be flat: ${JSON.stringify(key)} holds an object or array`,
      };
    }
    if (typeof v === 'number' && !Number.isSafeInteger(v)) {
      return { ok: false, reason: `body number ${JSON.stringify(key)} is not a safe integer` };
    }
  }
  return { ok: true, value: obj as FlatJsonObject };
}

/** Canonical JSON of a flat object: keys sorted by UTF-16 code units, no whitespace. */
export function canonicalFlatJson(body: FlatJsonObject): string {
  // Plain sort compares UTF-16 code units; Object.keys alone would put integer-like keys first.
  const keys = Object.keys(body).sort();
  let out = '{';
  for (let k = 0; k < keys.length; k++) {
    const key = keys[k] as string;
    if (k > 0) out += ',';
    out += `${JSON.stringify(key)}:${JSON.stringify(body[key])}`;
  }
  return `${out}}`;
}

/** The signed method of `POST /referral/apply`. */
export const REFERRAL_METHOD = 'POST';
/** The signed path of `POST /referral/apply` (without the `/api` prefix). */
export const REFERRAL_PATH = '/referral/apply';

/** The variable parts of a referral application's signed message. */
export interface ReferralSignedFields {
  /** The flat request body; null for a bodyless request. */
  readonly body: FlatJsonObject | null;
  /** The `x-nonce` header. */
  readonly nonce: string;
  /** The `x-timestamp` header as a number of milliseconds. */
  readonly timestamp: number;
  /** Lowercase wallet applying the code. */
  readonly walletAddress: string;
}

/** The exact text a wallet signs with personal_sign for `POST /referral/apply`. */
export function referralSignedMessage(fields: ReferralSignedFields): string {
  if (!Number.isSafeInteger(fields.timestamp)) {
    throw new RangeError(`timestamp must be a safe integer, got ${fields.timestamp}`);
  }
  const body = fields.body === null ? 'null' : canonicalFlatJson(fields.body);
  return (
    `{"body":${body},"method":"${REFERRAL_METHOD}","nonce":${JSON.stringify(fields.nonce)},` +
    `"path":"${REFERRAL_PATH}","timestamp":${fields.timestamp},` +
    `"walletAddress":${JSON.stringify(fields.walletAddress)}}`
  );
}

/** An HTTP refusal of `POST /referral/apply`: status and the body's `error` string. */
export interface ReferralRefusal {
  readonly ok: false;
  readonly status: 400 | 401;
  /** The response body's `error`. */
  readonly error: string;
  /** Why, for logs (for 401 it is also the tail of `error`). */
  readonly reason: string;
}

/** Result of the referral request checks. */
export type ReferralResult<T> = { readonly ok: true; readonly value: T } | ReferralRefusal;

/** The spec's 400 body error for a malformed referral body. */
export const REFERRAL_BAD_BODY_ERROR = 'walletAddress and code are required';

function badBody(reason: string): ReferralRefusal {
  return { ok: false, status: 400, error: REFERRAL_BAD_BODY_ERROR, reason };
}

/** A 401 refusal: `Unauthorized: <reason>`. */
export function unauthorized(reason: string): ReferralRefusal {
  return { ok: false, status: 401, error: `Unauthorized: ${reason}`, reason };
}

/** Pattern of the `x-nonce` header. */
export const X_NONCE_PATTERN = /^[A-Za-z0-9_-]{8,128}$/;
/** Pattern of an invite code. */
export const INVITE_CODE_PATTERN = /^[A-Z0-9-]{1,7}$/;
/** A lowercase address, the only form a signed body may hold. */
export const LOWERCASE_ADDRESS_PATTERN = /^0x[0-9a-f]{40}$/;
// Canonical decimal milliseconds: no sign, no leading zeros, at most 16 digits.
const TIMESTAMP_PATTERN = /^(?:0|[1-9][0-9]{0,15})$/;

/** The tolerance between `x-timestamp` and server time, inclusive: 5 minutes. */
export const REFERRAL_WINDOW_MS = 300_000;

/** A validated referral body. */
export interface ReferralBody {
  readonly walletAddress: string;
  readonly code: string;
  /** The whole flat body, as signed. */
  readonly body: FlatJsonObject;
}

/** Parses a referral body: flat object with a lowercase `walletAddress` and a valid `code` (else 400). */
export function parseReferralBody(text: string): ReferralResult<ReferralBody> {
  const parsed = parseFlatJsonObject(text);
  if (!parsed.ok) return badBody(parsed.reason);
  const body = parsed.value;
  const walletAddress = body.walletAddress;
  const code = body.code;
  if (typeof walletAddress !== 'string' || !LOWERCASE_ADDRESS_PATTERN.test(walletAddress)) {
    return badBody('walletAddress must be a lowercase 0x address');
  }
  if (typeof code !== 'string' || !INVITE_CODE_PATTERN.test(code)) {
    return badBody('code must match [A-Z0-9-]{1,7}');
  }
  return { ok: true, value: { walletAddress, code, body } };
}

/** Checks the `x-nonce` header: present, one value, `[A-Za-z0-9_-]{8,128}` (else 401). */
export function checkNonceHeader(value: unknown): ReferralResult<string> {
  if (value === undefined) return unauthorized('missing x-nonce header');
  if (typeof value !== 'string' || !X_NONCE_PATTERN.test(value)) {
    return unauthorized('x-nonce must match [A-Za-z0-9_-]{8,128}');
  }
  return { ok: true, value };
}

/** Checks the `x-timestamp` header: present, a canonical decimal integer of ms (else 401). */
export function checkTimestampHeader(value: unknown): ReferralResult<number> {
  if (value === undefined) return unauthorized('missing x-timestamp header');
  if (typeof value !== 'string' || !TIMESTAMP_PATTERN.test(value)) {
    return unauthorized('x-timestamp must be a decimal integer of milliseconds');
  }
  const ms = Number(value);
  if (!Number.isSafeInteger(ms)) return unauthorized('x-timestamp is out of range');
  return { ok: true, value: ms };
}

/** Checks a timestamp is within +-5 minutes of `nowMs`, bounds included (else 401). */
export function checkTimestampWindow(
  timestampMs: number,
  nowMs: number,
): ReferralRefusal | undefined {
  const skew = timestampMs - nowMs;
  if (skew > REFERRAL_WINDOW_MS || skew < -REFERRAL_WINDOW_MS) {
    return unauthorized(
      `expired timestamp: ${timestampMs} is outside the +-5 minute window around server time ${nowMs}`,
    );
  }
  return undefined;
}

/**
 * Checks a personal_sign signature over `message` against `walletAddress`; returns the signer,
 * or 401 naming the problem (form, recovery or signer mismatch).
 */
export function verifyReferralSignature(
  verifier: SignatureVerifier,
  message: string,
  sigHex: unknown,
  walletAddress: string,
): ReferralResult<string> {
  const sig = parseSignature(sigHex);
  if (!sig.ok) return unauthorized(stripName(sig.error.message));
  const match = recoverAndMatch(
    verifier,
    personalMessageHash(message),
    sig.value,
    walletAddress.toLowerCase(),
    'walletAddress',
    'the signed text is personal_sign of the canonical JSON {body, method, nonce, path, timestamp, walletAddress}: keys sorted, path "/referral/apply" (no /api), timestamp a number, nonce a string, the lowercase address',
  );
  if (!match.ok) return unauthorized(stripName(match.error.message));
  return { ok: true, value: match.value };
}

// Rejection messages start with the spec name (`INVALID_SIGNATURE: ...`); the 401 wants the tail.
function stripName(message: string): string {
  const colon = message.indexOf(': ');
  return colon < 0 ? message : message.slice(colon + 2);
}

/** The inputs of a referral application, as the HTTP adapter receives them. */
export interface ReferralRequest {
  /** The raw body text. */
  readonly bodyText: string;
  /** Header values (`undefined` when absent; a repeated header is refused). */
  readonly headers: {
    readonly 'x-signature'?: unknown;
    readonly 'x-timestamp'?: unknown;
    readonly 'x-nonce'?: unknown;
  };
  /** Server time in milliseconds. */
  readonly nowMs: number;
  readonly verifier: SignatureVerifier;
}

/** A referral application whose body, headers, window and signature checked out. */
export interface VerifiedReferral extends ReferralBody {
  readonly nonce: string;
  readonly timestampMs: number;
  /** The canonical text that was signed. */
  readonly message: string;
  /** Lowercase signer, equal to `walletAddress`. */
  readonly signer: string;
}

/**
 * All stateless checks of `POST /referral/apply` in the protocol's order: body shape (400), then
 * headers, window, nonce pattern and signature (401). Replay and the 422 rules come after, in the
 * engine.
 */
export function verifyReferralRequest(req: ReferralRequest): ReferralResult<VerifiedReferral> {
  const body = parseReferralBody(req.bodyText);
  if (!body.ok) return body;
  const { 'x-signature': signature, 'x-timestamp': timestamp, 'x-nonce': nonce } = req.headers;
  if (signature === undefined) return unauthorized('missing x-signature header');
  const ts = checkTimestampHeader(timestamp);
  if (!ts.ok) return ts;
  if (nonce === undefined) return unauthorized('missing x-nonce header');
  const window = checkTimestampWindow(ts.value, req.nowMs);
  if (window !== undefined) return window;
  const nonceOk = checkNonceHeader(nonce);
  if (!nonceOk.ok) return nonceOk;
  const message = referralSignedMessage({
    body: body.value.body,
    nonce: nonceOk.value,
    timestamp: ts.value,
    walletAddress: body.value.walletAddress,
  });
  const signer = verifyReferralSignature(
    req.verifier,
    message,
    signature,
    body.value.walletAddress,
  );
  if (!signer.ok) return signer;
  return {
    ok: true,
    value: {
      ...body.value,
      nonce: nonceOk.value,
      timestampMs: ts.value,
      message,
      signer: signer.value,
    },
  };
}
