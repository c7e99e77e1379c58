/**
 * Referral canonical JSON (interface-spec "Canonical-JSON signed payload", reliability 2.7): key
 * order and escapes of the signed text, the strict parser (duplicates, prototype keys, nesting,
 * depth bombs, lone surrogates, numbers), the header rules and window boundaries, and a viem
 * `signMessage` round trip through the whole request check.
 */
import fc from 'fast-check';
import { privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import {
  canonicalFlatJson,
  checkNonceHeader,
  checkTimestampHeader,
  checkTimestampWindow,
  type FlatJsonObject,
  nobleVerifier,
  parseFlatJsonObject,
  parseReferralBody,
  parseStrictJson,
  REFERRAL_BAD_BODY_ERROR,
  type ReferralRequest,
  referralSignedMessage,
  verifyReferralRequest,
  verifyReferralSignature,
} from '../../src/auth/index.js';
import { A, RUNS } from './fixtures.js';

const wallet = privateKeyToAccount(A.privateKey);
const WALLET = wallet.address.toLowerCase();
const NOW = 1767225600000;
const NONCE = 'n0nce-_abc123';

function reason(text: string): string {
  const r = parseStrictJson(text);
  if (r.ok) throw new Error(`expected a refusal of ${text.slice(0, 40)}`);
  return r.reason;
}

describe('referralSignedMessage', () => {
  it('top-level keys body, method, nonce, path, timestamp, walletAddress; no whitespace', () => {
    const body = { walletAddress: WALLET, code: 'ABC-123' };
    expect(
      referralSignedMessage({ body, nonce: NONCE, timestamp: NOW, walletAddress: WALLET }),
    ).toBe(
      `{"body":{"code":"ABC-123","walletAddress":"${WALLET}"},"method":"POST","nonce":"${NONCE}",` +
        `"path":"/referral/apply","timestamp":1767225600000,"walletAddress":"${WALLET}"}`,
    );
  });

  it('a bodyless request signs body null; timestamp is a number and nonce a string', () => {
    expect(
      referralSignedMessage({ body: null, nonce: '12345678', timestamp: 5, walletAddress: WALLET }),
    ).toBe(
      `{"body":null,"method":"POST","nonce":"12345678","path":"/referral/apply","timestamp":5,"walletAddress":"${WALLET}"}`,
    );
    expect(() =>
      referralSignedMessage({ body: null, nonce: NONCE, timestamp: 1.5, walletAddress: WALLET }),
    ).toThrow(RangeError);
  });

  it('sorts body keys by UTF-16 code units, not code points, locale or integer-key order', () => {
    const body: FlatJsonObject = {
      b: 1,
      B: 2,
      a: 3,
      '10': 4,
      '2': 5,
      é: 6,
      '\uff21': 7, // FULLWIDTH A: code unit 0xff21
      '\u{1f600}': 8, // surrogate pair: first code unit 0xd83d sorts before 0xff21
      Z: 9,
    };
    expect(Object.keys(body).slice(0, 2)).toEqual(['2', '10']); // the JavaScript trap
    expect(canonicalFlatJson(body)).toBe(
      '{"10":4,"2":5,"B":2,"Z":9,"a":3,"b":1,"é":6,"\u{1f600}":8,"\uff21":7}',
    );
  });

  it('escapes as JSON.stringify (RFC 8785): quote, backslash, controls; non-ASCII raw', () => {
    const body = { s: 'a"b\\c\nd\u0001é\u2028', t: true, n: null, z: 0 };
    expect(canonicalFlatJson(body)).toBe(
      '{"n":null,"s":"a\\"b\\\\c\\nd\\u0001é\u2028","t":true,"z":0}',
    );
  });

  it('canonicalises the parsed value, not the raw text', () => {
    const parsed = parseFlatJsonObject('{ "code" : "\\u0041BC", "walletAddress":"0xAb" }');
    if (!parsed.ok) throw new Error(parsed.reason);
    expect(canonicalFlatJson(parsed.value)).toBe('{"code":"ABC","walletAddress":"0xAb"}');
  });
});

describe('parseStrictJson', () => {
  it('returns null-prototype objects', () => {
    const r = parseStrictJson('{"a":{"b":[1,{"c":null}]}}');
    if (!r.ok) throw new Error(r.reason);
    expect(Object.getPrototypeOf(r.value)).toBeNull();
    expect(r.value).toEqual({ a: { b: [1, { c: null }] } });
  });

  it.each([
    ['{"a":1,"a":2}', 'duplicate key "a"'],
    ['{"code":"A","\\u0063ode":"B"}', 'duplicate key "code"'],
    ['{"x":{"k":1,"k":1}}', 'duplicate key "k"'],
    ['{"__proto__":{"x":1}}', 'key "__proto__" is not allowed'],
    ['{"a":{"constructor":1}}', 'key "constructor" is not allowed'],
    ['[{"prototype":1}]', 'key "prototype" is not allowed'],
    ['{"\\u005f_proto__":1}', 'key "__proto__" is not allowed'],
    ['"\ud800"', 'string has a lone surrogate'],
    ['"\\ud800"', 'string has a lone surrogate'],
    ['"\\udc00\\ud800"', 'string has a lone surrogate'],
    ['{"\\ud800":1}', 'string has a lone surrogate'],
    // Two low surrogates are not a pair: a low surrogate never opens one.
    ['"\\udc00\\udc00"', 'string has a lone surrogate'],
    ['"\\udfff\\udfff"', 'string has a lone surrogate'],
  ])('refuses %s', (text, why) => {
    expect(reason(text)).toBe(why);
  });

  it('accepts a well-formed surrogate pair, escaped or raw', () => {
    expect(parseStrictJson('"\\ud83d\\ude00"')).toEqual({ ok: true, value: '\u{1f600}' });
    expect(parseStrictJson('"\u{1f600}"')).toEqual({ ok: true, value: '\u{1f600}' });
    // The last pair, U+10FFFF: the low surrogate range includes 0xdfff.
    expect(parseStrictJson('"\\udbff\\udfff"')).toEqual({ ok: true, value: '\u{10ffff}' });
    expect(parseStrictJson('"\\ud800\\udc00"')).toEqual({ ok: true, value: '\u{10000}' });
  });

  it('reads every RFC 8259 escape, the solidus included', () => {
    expect(parseStrictJson('"\\"\\\\\\/\\b\\f\\n\\r\\t"')).toEqual({
      ok: true,
      value: '"\\/\b\f\n\r\t',
    });
  });

  it('control characters U+0000 to U+001F must be escaped; U+0020 need not be', () => {
    expect(reason('"a\u001fb"')).toBe('unescaped control character at offset 2');
    expect(reason('"\u0000"')).toBe('unescaped control character at offset 1');
    expect(parseStrictJson('"a b\u007f"')).toEqual({ ok: true, value: 'a b\u007f' });
  });

  it.each([
    ['', 'empty text'],
    ['   ', 'empty text'],
    ['{"a":1,}', 'expected a string key at offset 7'],
    ['[1,]', 'unexpected character at offset 3'],
    ['{"a":1} x', 'unexpected text after the value at offset 8'],
    ["{'a':1}", 'expected a string key at offset 1'],
    ['\ufeff{}', 'unexpected character at offset 0'],
    ['{"a":"x\ny"}', 'unescaped control character at offset 7'],
    ['"\\x41"', 'bad escape at offset 1'],
    ['"\\u12"', 'bad \\u escape at offset 1'],
    ['"abc', 'unterminated string'],
    ['{"a" 1}', 'expected : at offset 5'],
    ['{"a":1 "b":2}', 'expected , or } at offset 7'],
    ['[1 2]', 'expected , or ] at offset 3'],
    ['{"a":', 'unexpected end of text'],
    ['01', 'unexpected text after the value at offset 1'],
    ['1.', 'unexpected character at offset 0'],
    ['.5', 'unexpected character at offset 0'],
    ['-', 'unexpected character at offset 0'],
    ['1e', 'unexpected character at offset 0'],
    ['NaN', 'unexpected character at offset 0'],
    ['Infinity', 'unexpected character at offset 0'],
    ['1e400', 'number out of range at offset 0'],
    ['tru', 'unexpected character at offset 0'],
  ])('refuses %j', (text, why) => {
    expect(reason(text)).toBe(why);
  });

  it('numbers follow the JSON grammar; -0 reads as 0', () => {
    expect(parseStrictJson('[0,-1,1.5,1e2,-2.5E-3,-0]')).toEqual({
      ok: true,
      value: [0, -1, 1.5, 100, -0.0025, 0],
    });
    const r = parseStrictJson('-0');
    expect(r.ok && Object.is(r.value, 0)).toBe(true);
  });

  it('nesting: 32 levels parse, 33 are refused', () => {
    expect(parseStrictJson(`${'['.repeat(32)}${']'.repeat(32)}`).ok).toBe(true);
    expect(reason(`${'['.repeat(33)}${']'.repeat(33)}`)).toBe('nesting deeper than 32');
    expect(reason(`${'{"a":'.repeat(33)}1${'}'.repeat(33)}`)).toBe('nesting deeper than 32');
  });

  it('a 20,000-deep array is an ordinary refusal, never a throw', () => {
    const bomb = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
    expect(reason(bomb)).toBe('nesting deeper than 32');
    expect(parseStrictJson(bomb, 1_000_000).ok).toBe(true); // iterative: no stack overflow
    expect(parseReferralBody(bomb)).toEqual({
      ok: false,
      status: 400,
      error: REFERRAL_BAD_BODY_ERROR,
      reason: 'nesting deeper than 32',
    });
  });

  it('agrees with JSON.parse on JSON without duplicates or prototype keys', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (value) => {
        const text = JSON.stringify(value);
        const r = parseStrictJson(text);
        if (!r.ok) {
          expect(r.reason).toMatch(/is not allowed|nesting deeper/);
          return;
        }
        expect(r.value).toEqual(JSON.parse(text));
      }),
      { numRuns: RUNS },
    );
  });
});

describe('parseFlatJsonObject and parseReferralBody', () => {
  const good = `{"walletAddress":"${WALLET}","code":"AB-12"}`;

  it('accepts a flat body with a lowercase wallet and a valid code', () => {
    const r = parseReferralBody(good);
    if (!r.ok) throw new Error(r.reason);
    expect(r.value.walletAddress).toBe(WALLET);
    expect(r.value.code).toBe('AB-12');
    expect(Object.getPrototypeOf(r.value.body)).toBeNull();
  });

  it.each([
    [
      'nested object',
      `{"walletAddress":"${WALLET}","code":"A","x":{}}`,
      'body must be flat: "x" holds an object or array',
    ],
    [
      'nested array',
      `{"walletAddress":"${WALLET}","code":"A","x":[1]}`,
      'body must be flat: "x" holds an object or array',
    ],
    ['a top-level array', '[]', 'body must be a JSON object'],
    ['a top-level null', 'null', 'body must be a JSON object'],
    [
      'an unsafe integer',
      `{"walletAddress":"${WALLET}","code":"A","n":9007199254740992}`,
      'body number "n" is not a safe integer',
    ],
    [
      'a fraction',
      `{"walletAddress":"${WALLET}","code":"A","n":1.5}`,
      'body number "n" is not a safe integer',
    ],
    [
      'a duplicate key',
      `{"walletAddress":"${WALLET}","code":"A","code":"B"}`,
      'duplicate key "code"',
    ],
    [
      '__proto__',
      `{"walletAddress":"${WALLET}","code":"A","__proto__":"x"}`,
      'key "__proto__" is not allowed',
    ],
    [
      'a checksummed wallet',
      `{"walletAddress":"${wallet.address}","code":"A"}`,
      'walletAddress must be a lowercase 0x address',
    ],
    ['a missing wallet', '{"code":"A"}', 'walletAddress must be a lowercase 0x address'],
    [
      'a lowercase code',
      `{"walletAddress":"${WALLET}","code":"abc"}`,
      'code must match [A-Z0-9-]{1,7}',
    ],
    [
      'an 8-character code',
      `{"walletAddress":"${WALLET}","code":"ABCDEFGH"}`,
      'code must match [A-Z0-9-]{1,7}',
    ],
    ['a numeric code', `{"walletAddress":"${WALLET}","code":1}`, 'code must match [A-Z0-9-]{1,7}'],
    ['invalid JSON', '{', 'expected a string key at offset 1'],
  ])('400 for %s', (_, text, why) => {
    expect(parseReferralBody(text)).toEqual({
      ok: false,
      status: 400,
      error: 'walletAddress and code are required',
      reason: why,
    });
  });
});

describe('headers and window', () => {
  it.each([
    ['7 characters', 'a'.repeat(7), false],
    ['8 characters', 'a'.repeat(8), true],
    ['128 characters', 'A_-9'.repeat(32), true],
    ['129 characters', `${'A_-9'.repeat(32)}x`, false],
    ['a dot', 'abcdefg.h', false],
    ['a space', 'abcd efgh', false],
    ['a repeated header (array)', ['abcdefgh', 'abcdefgh'], false],
  ])('x-nonce with %s', (_, value, ok) => {
    const r = checkNonceHeader(value);
    expect(r.ok).toBe(ok);
    if (!r.ok) {
      expect(r).toEqual({
        ok: false,
        status: 401,
        error: 'Unauthorized: x-nonce must match [A-Za-z0-9_-]{8,128}',
        reason: 'x-nonce must match [A-Za-z0-9_-]{8,128}',
      });
    }
  });

  it('missing headers are 401', () => {
    expect(checkNonceHeader(undefined)).toMatchObject({
      status: 401,
      error: 'Unauthorized: missing x-nonce header',
    });
    expect(checkTimestampHeader(undefined)).toMatchObject({
      status: 401,
      error: 'Unauthorized: missing x-timestamp header',
    });
  });

  it.each([
    ['1767225600000', 1767225600000],
    ['0', 0],
    ['9007199254740991', 9007199254740991],
  ])('x-timestamp %s is accepted', (value, ms) => {
    expect(checkTimestampHeader(value)).toEqual({ ok: true, value: ms });
  });

  it.each([
    '-1',
    '01',
    '1.5',
    '1e3',
    ' 1',
    '',
    '0x10',
    '12345678901234567',
    '9007199254740993',
    '+5',
  ])('x-timestamp %j is refused', (value) => {
    const r = checkTimestampHeader(value);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.status).toBe(401);
  });

  it.each([
    [0, true],
    [300_000, true],
    [-300_000, true],
    [300_001, false],
    [-300_001, false],
  ])('timestamp at now %+d ms: accepted %s', (skew, ok) => {
    const r = checkTimestampWindow(NOW + skew, NOW);
    expect(r === undefined).toBe(ok);
    if (r !== undefined) {
      expect(r.status).toBe(401);
      expect(r.error).toBe(
        `Unauthorized: expired timestamp: ${NOW + skew} is outside the +-5 minute window around server time ${NOW}`,
      );
    }
  });
});

describe('signature round trip with viem signMessage', () => {
  const bodyText = `{"code":"AB-12","walletAddress":"${WALLET}"}`;
  const message = referralSignedMessage({
    body: { walletAddress: WALLET, code: 'AB-12' },
    nonce: NONCE,
    timestamp: NOW,
    walletAddress: WALLET,
  });

  it('verifyReferralSignature recovers the wallet', async () => {
    const sig = await wallet.signMessage({ message });
    expect(verifyReferralSignature(nobleVerifier, message, sig, WALLET)).toEqual({
      ok: true,
      value: WALLET,
    });
    const other = privateKeyToAccount(
      '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
    );
    const forged = await other.signMessage({ message });
    const r = verifyReferralSignature(nobleVerifier, message, forged, WALLET);
    expect(!r.ok && r.error).toMatch(
      new RegExp(
        `^Unauthorized: signer ${other.address.toLowerCase()} does not match walletAddress ${WALLET}`,
      ),
    );
    expect(!r.ok && r.error).toMatch(/canonical JSON .*path "\/referral\/apply" \(no \/api\)/);
    // The wallet is compared case-insensitively: a checksummed address names the same signer.
    expect(verifyReferralSignature(nobleVerifier, message, sig, wallet.address)).toEqual({
      ok: true,
      value: WALLET,
    });
    const compact = verifyReferralSignature(nobleVerifier, message, sig.slice(0, 130), WALLET);
    expect(!compact.ok && compact.error).toBe(
      'Unauthorized: signature must be 65 bytes (r || s || v), got 64',
    );
  });

  it('verifyReferralRequest: the whole stateless check in protocol order', async () => {
    const sig = await wallet.signMessage({ message });
    const headers = { 'x-signature': sig, 'x-timestamp': String(NOW), 'x-nonce': NONCE };
    const base: ReferralRequest = {
      bodyText,
      headers,
      nowMs: NOW + 299_999,
      verifier: nobleVerifier,
    };
    const r = verifyReferralRequest(base);
    if (!r.ok) throw new Error(r.error);
    expect(r.value).toMatchObject({
      walletAddress: WALLET,
      code: 'AB-12',
      nonce: NONCE,
      signer: WALLET,
    });
    expect(r.value.message).toBe(message);
    expect(r.value.timestampMs).toBe(NOW);

    // Key order and whitespace of the wire body do not matter: the parsed value is signed.
    const reordered = `{ "walletAddress": "${WALLET}",\n "code": "\\u0041B-12" }`;
    expect(verifyReferralRequest({ ...base, bodyText: reordered }).ok).toBe(true);

    const check = (patch: Partial<ReferralRequest>, status: number, error: string) => {
      const x = verifyReferralRequest({ ...base, ...patch });
      expect(x.ok).toBe(false);
      if (!x.ok) {
        expect(x.status).toBe(status);
        expect(x.error).toContain(error);
      }
    };
    // Body first, even with headers missing.
    check({ bodyText: '{"code":"AB-12"}', headers: {} }, 400, REFERRAL_BAD_BODY_ERROR);
    check({ headers: { ...headers, 'x-signature': undefined } }, 401, 'missing x-signature header');
    check({ headers: { ...headers, 'x-timestamp': undefined } }, 401, 'missing x-timestamp header');
    check({ headers: { ...headers, 'x-nonce': undefined } }, 401, 'missing x-nonce header');
    // Headers before the window: a missing x-nonce is named even when the time is also stale.
    check(
      { headers: { ...headers, 'x-nonce': undefined }, nowMs: NOW + 300_001 },
      401,
      'missing x-nonce header',
    );
    // Window before the nonce pattern.
    check(
      { headers: { ...headers, 'x-nonce': 'short' }, nowMs: NOW + 300_001 },
      401,
      'outside the +-5 minute window',
    );
    check({ headers: { ...headers, 'x-nonce': 'short' } }, 401, 'x-nonce must match');
    // Anything signed that changes breaks the signature.
    check(
      { bodyText: `{"code":"AB-13","walletAddress":"${WALLET}"}` },
      401,
      'does not match walletAddress',
    );
    check(
      { bodyText: `{"code":"AB-12","walletAddress":"${WALLET}","extra":1}` },
      401,
      'does not match',
    );
    check({ headers: { ...headers, 'x-nonce': `${NONCE}x` } }, 401, 'does not match walletAddress');
    check(
      { headers: { ...headers, 'x-timestamp': String(NOW + 1) } },
      401,
      'does not match walletAddress',
    );
    check(
      { headers: { ...headers, 'x-signature': `${sig.slice(0, 130)}1d` } },
      401,
      'signature v must be',
    );
  });
});
