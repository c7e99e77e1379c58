/**
 * `POST /referral/apply` signing (interface-spec "Canonical-JSON signed payload", reliability
 * 2.7): a strict parser for its flat JSON body (duplicate keys, `__proto__`, nesting and lone
 * surrogates refused, no recursion so no depth bomb) and the canonical text a wallet signs with
 * `personal_sign`: top-level keys `body, method, nonce, path, timestamp, walletAddress`, the body's
 * keys sorted by UTF-16 code units, no whitespace, `timestamp` a number, `nonce` a string.
 *
 * @module
 */
import type { Rejection } from '../errors.js';
import { reject } from '../errors.js';
import { personalMessageHash } from './eip712.js';
import { nobleVerifier, parseSignature, type SignatureVerifier } from './signature.js';

/** Whether a string has no lone UTF-16 surrogate (I-JSON). */
export function isWellFormedText(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = text.charCodeAt(i + 1);
      if (!(d >= 0xdc00 && d <= 0xdfff)) return false;
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      return false;
    }
  }
  return true;
}

/** A flat JSON value. */
export type FlatValue = string | number | boolean | null;

/** Result of {@link parseFlatJsonObject}. */
export type FlatParse =
  | { ok: true; value: Record<string, FlatValue> }
  | { ok: false; error: string };

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** Parses a JSON text that must be one flat object; see the module comment. */
export function parseFlatJsonObject(text: string): FlatParse {
  let i = 0;
  const n = text.length;
  const fail = (error: string): FlatParse => ({ ok: false, error });
  const ws = (): void => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
      else break;
    }
  };
  const parseString = (): string | undefined => {
    if (text[i] !== '"') return undefined;
    i++;
    let out = '';
    while (i < n) {
      const ch = text[i] as string;
      const code = ch.charCodeAt(0);
      if (ch === '"') {
        i++;
        return out;
      }
      if (code < 0x20) return undefined;
      if (ch === '\\') {
        const e = text[i + 1];
        const simple: Record<string, string> = {
          '"': '"',
          '\\': '\\',
          '/': '/',
          b: '\b',
          f: '\f',
          n: '\n',
          r: '\r',
          t: '\t',
        };
        if (e !== undefined && e in simple) {
          out += simple[e];
          i += 2;
          continue;
        }
        if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) {
          out += String.fromCharCode(Number.parseInt(text.slice(i + 2, i + 6), 16));
          i += 6;
          continue;
        }
        return undefined;
      }
      out += ch;
      i++;
    }
    return undefined;
  };
  const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/;
  ws();
  if (text[i] !== '{') return fail('body must be a JSON object');
  i++;
  const out: Record<string, FlatValue> = Object.create(null);
  ws();
  if (text[i] === '}') {
    i++;
  } else {
    for (;;) {
      ws();
      const key = parseString();
      if (key === undefined) return fail('object keys must be JSON strings');
      if (!isWellFormedText(key)) return fail('keys must be well-formed Unicode');
      if (FORBIDDEN_KEYS.has(key)) return fail(`key ${key} is not allowed`);
      if (Object.hasOwn(out, key)) return fail(`duplicate key ${key}`);
      ws();
      if (text[i] !== ':') return fail('expected :');
      i++;
      ws();
      const c = text[i];
      let value: FlatValue;
      if (c === '"') {
        const s = parseString();
        if (s === undefined) return fail('malformed string');
        if (!isWellFormedText(s))
          return fail('strings must be well-formed Unicode (no lone surrogates)');
        value = s;
      } else if (c === '{' || c === '[') {
        return fail('body must be flat: nested objects and arrays are not allowed');
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
        const m = NUMBER.exec(text.slice(i, i + 64));
        if (m === null) return fail('malformed value');
        const num = Number(m[0]);
        if (!Number.isSafeInteger(num)) return fail('numbers must be safe integers');
        value = num;
        i += m[0].length;
      }
      out[key] = value;
      ws();
      if (text[i] === ',') {
        i++;
        continue;
      }
      if (text[i] === '}') {
        i++;
        break;
      }
      return fail('expected , or }');
    }
  }
  ws();
  if (i !== n) return fail('trailing characters after the object');
  return { ok: true, value: out };
}

/** The parts of a referral application that are signed. */
export interface ReferralSigned {
  readonly body: Readonly<Record<string, FlatValue>>;
  readonly nonce: string;
  readonly timestamp: number;
  readonly walletAddress: string;
}

/** Canonical JSON of a flat object: keys sorted by UTF-16 code units, no whitespace. */
export function canonicalFlat(obj: Readonly<Record<string, FlatValue>>): string {
  const keys = Object.keys(obj).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${JSON.stringify(obj[k])}`).join(',')}}`;
}

/** The exact text the wallet signs for `POST /referral/apply`. */
export function referralSignedMessage(p: ReferralSigned): string {
  return (
    `{"body":${canonicalFlat(p.body)},"method":"POST","nonce":${JSON.stringify(p.nonce)},` +
    `"path":"/referral/apply","timestamp":${p.timestamp},"walletAddress":${JSON.stringify(p.walletAddress)}}`
  );
}

/** Checks a `personal_sign` signature over `message` against `wallet` (4001 with the reason). */
export function verifyPersonalSignature(
  message: string,
  sigHex: unknown,
  wallet: string,
  verifier: SignatureVerifier = nobleVerifier,
): Rejection | undefined {
  const parsed = parseSignature(sigHex);
  if (!parsed.ok) return parsed.error;
  const signer = verifier.recoverAddress(personalMessageHash(message), parsed.signature);
  if (signer === null) return reject('INVALID_SIGNATURE', 'signature does not recover a key');
  if (signer !== wallet)
    return reject('INVALID_SIGNATURE', `signer ${signer} does not match walletAddress ${wallet}`);
  return undefined;
}
