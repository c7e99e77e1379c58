/**
 * Hostile input at every network surface of a running venue: REST (public reads, signed writes,
 * the referral, admin), the trading WebSocket and the market-data WebSocket. The rule checked
 * everywhere (interface-spec "Errors", protocol.md sections 3-5): bad input (malformed, badly
 * signed, outside the window) gets the spec's 4xx status or WebSocket code with a message that
 * names the check, and changes nothing (state hash, nonces, balances); the service never answers
 * 500, never stops, never hangs a request, and one client's garbage does not disturb another.
 *
 * Property-based parts use fast-check with a fixed seed (`HOSTILE_SEED` picks another);
 * `HOSTILE_RUNS` multiplies their runs (default 1: 40-150 runs per property, the file takes about
 * 15 s on two cores) for a longer local run, e.g. `HOSTILE_RUNS=20`.
 */
import { request } from 'node:http';
import { connect } from 'node:net';
import { SECP256K1_HALF_N, SECP256K1_N } from '@perp/core';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { DEFAULT_CONFIG, type VenueConfig } from '../src/config.js';
import { ManualClock } from '../src/engine/clock.js';
import { freshNonce, http, type Msg, type Wallet, WsClient } from './support/client.js';
import {
  btc,
  everyInstrumentSetting,
  limitOrder,
  px,
  startTestVenue,
  type TestVenue,
  usd,
} from './support/fixture.js';

const MULTIPLIER = Math.max(1, Number(process.env.HOSTILE_RUNS ?? 1));
const runs = (n: number): number => Math.round(n * MULTIPLIER);
/** Deterministic by default so CI failures replay; `HOSTILE_SEED` picks another path. */
const SEED = Number(process.env.HOSTILE_SEED ?? 20_260_101);
const fcOptions = (n: number) => ({ numRuns: runs(n), seed: SEED, endOnFailure: true });

/** Short request timeout so the slow-body checks fit the suite's time budget. */
const REQUEST_TIMEOUT_MS = 1_500;

function config(limits: Partial<VenueConfig['limits']> = {}): VenueConfig {
  return {
    ...DEFAULT_CONFIG,
    limits: {
      ...DEFAULT_CONFIG.limits,
      walletRequestsPerSecond: 100_000,
      publicReadsPerSecond: 100_000,
      signedRequestsPer5Minutes: 1_000_000,
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      ...limits,
    },
  };
}

// ---- raw transport helpers ---------------------------------------------------------------

interface RawAnswer {
  /** HTTP status, 0 when the server answered nothing. */
  readonly status: number;
  readonly head: string;
  readonly body: string;
  /** Whether the server closed the connection before `waitMs`. */
  readonly closed: boolean;
  readonly ms: number;
}

/**
 * Writes `parts` to a fresh TCP connection (`gapMs` apart) and reads until the server closes it,
 * answers one complete response, or `waitMs` passes.
 */
function rawHttp(
  port: number,
  parts: readonly (string | Buffer)[],
  options: { gapMs?: number; waitMs?: number } = {},
): Promise<RawAnswer> {
  const waitMs = options.waitMs ?? 3_000;
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    let done = false;
    const timers: NodeJS.Timeout[] = [];
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      for (const t of timers) clearTimeout(t);
      socket.destroy();
      const text = data.toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const head = split < 0 ? text : text.slice(0, split);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
      resolve({
        status,
        head,
        body: split < 0 ? '' : Buffer.from(text.slice(split + 4), 'latin1').toString('utf8'),
        closed,
        ms: performance.now() - started,
      });
    };
    socket.on('data', (d) => {
      data = Buffer.concat([data, d]);
      const text = data.toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const length = /content-length: (\d+)/i.exec(text.slice(0, split))?.[1];
      if (split >= 0 && length !== undefined && data.length >= split + 4 + Number(length))
        finish(false);
    });
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true));
    const gap = options.gapMs ?? 0;
    parts.forEach((p, i) => {
      timers.push(
        setTimeout(() => {
          if (!done && !socket.destroyed) socket.write(p);
        }, i * gap),
      );
    });
    timers.push(setTimeout(() => finish(false), waitMs));
  });
}

/** `GET path` from a given local address (loopback has many); resolves with the status. */
function getFrom(localAddress: string, port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, localAddress }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Opens a trading or market-data socket without authenticating. */
async function wsOpen(url: string): Promise<WsClient> {
  return WsClient.connect(url);
}

/** Waits for a socket to close; resolves with its close code (or -1 on timeout). */
function closedWith(ws: WebSocket, timeoutMs = 3_000): Promise<number> {
  return new Promise((resolve) => {
    if (ws.readyState === WebSocket.CLOSED) return resolve(-2);
    const t = setTimeout(() => resolve(-1), timeoutMs);
    ws.once('close', (code) => {
      clearTimeout(t);
      resolve(code);
    });
  });
}

/** Messages a refusal must never be: generic texts that do not name the check. */
const GENERIC = /^(bad request|not found|internal server error|error|client error)\.?$/i;

/** Asserts a REST refusal: status, a string `error` naming the check (optional pattern). */
function expectRefusal(
  res: { status: number; body: Record<string, unknown> },
  status: number | readonly number[],
  pattern?: RegExp,
  label = '',
): void {
  const statuses = typeof status === 'number' ? [status] : status;
  const context = `${label} ${JSON.stringify(res.body).slice(0, 300)}`;
  expect(statuses, context).toContain(res.status);
  expect(typeof res.body.error, context).toBe('string');
  const error = res.body.error as string;
  expect(error.length, context).toBeGreaterThan(3);
  expect(error, context).not.toMatch(GENERIC);
  if (pattern !== undefined) expect(error, context).toMatch(pattern);
}

/** Asserts a WebSocket error reply: one of `codes` and a message naming the check. */
function expectWsError(m: Msg, codes: number | readonly number[], pattern?: RegExp): void {
  const list = typeof codes === 'number' ? [codes] : codes;
  expect(m.type, JSON.stringify(m)).toBe('error');
  expect(list, JSON.stringify(m)).toContain(m.code);
  expect(typeof m.message).toBe('string');
  expect((m.message as string).length).toBeGreaterThan(3);
  if (pattern !== undefined) expect(m.message as string).toMatch(pattern);
}

/** A body with `field` replaced by raw JSON text (so `1e400`, `-0` and bad JSON reach the server). */
function withRawField(body: Record<string, unknown>, field: string, raw: string | null): string {
  const copy: Record<string, unknown> = { ...body };
  if (raw === null) {
    delete copy[field];
    return JSON.stringify(copy);
  }
  copy[field] = '\u0000HOSTILE\u0000';
  return JSON.stringify(copy).replace('"\\u0000HOSTILE\\u0000"', () => raw);
}

// ---- hostile value generators ------------------------------------------------------------

/** Raw JSON tokens (and a few non-JSON ones) that break type, range or format rules. */
const HOSTILE_TOKENS: readonly string[] = [
  'null',
  'true',
  'false',
  '0',
  '-0',
  '-1',
  '1.5',
  '1e400',
  '-1e400',
  '18446744073709551616',
  '4294967296',
  '9007199254740993',
  '1e-400',
  '[]',
  '[1]',
  '{}',
  '{"a":1}',
  '""',
  '" "',
  '"null"',
  '"NaN"',
  '"Infinity"',
  '"-Infinity"',
  '"1e3"',
  '"1E-2"',
  '"0x10"',
  '"05"',
  '"00.5"',
  '" 5"',
  '"5 "',
  '"\\t5"',
  '"5\\u200b"',
  '"\\u202e5"',
  '"\\ufeff5"',
  '"\\ud800"',
  '"\\udfff5"',
  '"\uff15"',
  '"\u0665"',
  '"5.0000001"',
  '"0.00000000000000000000001"',
  '"-5"',
  '"+5"',
  '".5"',
  '"5."',
  '"5,0"',
  '"1_000"',
  `"${'9'.repeat(120)}"`,
  `"${'x'.repeat(20_000)}"`,
  '"Cross\\u0000"',
  '"cross"',
  '"CROSS"',
  '"BTC-PERP "',
  '"btc-perp"',
  '"__proto__"',
  '"constructor"',
  '{"__proto__":{"x":1}}',
  '{"toString":1}',
  '{"toString":1,"valueOf":1}',
  '{"toJSON":1}',
  '{"then":1}',
  '["toString"]',
  '{"constructor":{"prototype":{"x":1}}}',
  // Not JSON at all: the whole body becomes malformed.
  'NaN',
  'Infinity',
  'undefined',
  '01',
  "'5'",
  '0x10',
];

/** Any JSON value as text, plus the curated hostile tokens. */
const hostileToken: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_TOKENS) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? 'null') },
  {
    weight: 1,
    arbitrary: fc.string({ unit: 'binary', maxLength: 40 }).map((s) => JSON.stringify(s)),
  },
);

/** Whether a raw token is a JSON text equal in meaning to `original` (then it is not hostile). */
function sameMeaning(raw: string, original: unknown): boolean {
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return false;
  }
  if (typeof original === 'string' && typeof v === 'string' && /^\d+$/.test(original))
    return new RegExp(`^${original}(\\.0+)?$`).test(v);
  return JSON.stringify(v) === JSON.stringify(original);
}

// ---- the suite -----------------------------------------------------------------------------

describe('hostile input', () => {
  let t: TestVenue;
  let alice: Wallet;
  let bob: Wallet;
  let carol: Wallet; // uninvited until the referral test grants it access
  let aliceWs: WsClient;
  let bobWs: WsClient;

  async function unchanged<T>(fn: () => Promise<T>): Promise<T> {
    const before = await t.stateHash();
    const out = await fn();
    await new Promise((r) => setTimeout(r, 10));
    expect(await t.stateHash()).toEqual(before);
    return out;
  }
  const post = async (
    path: string,
    body: string | Buffer,
    headers: Record<string, string> = {},
  ) => {
    if (typeof body === 'string')
      return http('POST', `${t.rest}${path}`, body, {
        'content-type': 'application/json',
        ...headers,
      });
    const res = await fetch(`${t.rest}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: new Uint8Array(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    t = await startTestVenue({ config: config() });
    alice = t.wallet(0);
    bob = t.wallet(1);
    carol = t.wallet(2);
    await t.oracle({ 'BTC-PERP': '65000' });
    await t.invite(alice);
    await t.invite(bob);
    await t.fund(alice, '10000');
    aliceWs = await t.connect(alice);
    bobWs = await t.connect(bob);
  });
  afterAll(async () => t.close());

  // After every test the venue still serves normal requests on both transports.
  afterEach(async () => {
    expect((await t.api('GET', '/time')).status).toBe(200);
    expect((await aliceWs.request({ type: 'ping' })).type).toBe('pong');
    expect((await bobWs.request({ type: 'ping' })).type).toBe('pong');
  });

  // ---- REST: routing, methods, paths, queries ----------------------------------------------

  describe('REST routing, paths and queries', () => {
    const ROUTES: readonly (readonly [string, string])[] = [
      ['GET', '/time'],
      ['GET', '/network'],
      ['GET', '/instruments'],
      ['GET', `/account_summary?wallet=0x${'1'.repeat(40)}`],
      ['GET', `/user/access-status/0x${'1'.repeat(40)}`],
      ['GET', `/historic/orders?wallet=0x${'1'.repeat(40)}`],
      ['GET', `/account/trades?wallet=0x${'1'.repeat(40)}`],
      ['GET', `/historic/trades?wallet=0x${'1'.repeat(40)}`],
      ['GET', `/chain/token/0x${'1'.repeat(40)}`],
      ['POST', '/margin/withdrawal'],
      ['POST', '/margin/transfer'],
      ['POST', '/margin/deposit'],
      ['POST', '/update_leverage'],
      ['POST', '/referral/apply'],
    ];

    it('wrong methods and unknown paths are 404 with a message; nothing changes', async () => {
      await unchanged(async () => {
        for (const [method, path] of ROUTES) {
          for (const wrong of ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
            if (wrong === method) continue;
            const r = await http(wrong, `${t.rest}${path}`, wrong === 'GET' ? undefined : '{}');
            expectRefusal(r, 404, /not found/);
          }
        }
        for (const path of [
          '/api/../api/time',
          '/api/%2e%2e/api/time',
          '/api/time/',
          '/API/time',
          '/api//time',
          '/api/user/access-status/..%2f..%2fadmin%2fstate-hash',
          '/api/admin/../time',
          '/api/chain/token/%00',
          '/api/\u202etime',
          '/%',
        ]) {
          const r = await rawHttp(t.venue.port, [`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`]);
          expect(r.status, path).toBeGreaterThanOrEqual(200);
          expect(r.status, path).toBeLessThan(500);
          if (r.status >= 400)
            expectRefusal({ status: r.status, body: JSON.parse(r.body) }, r.status);
        }
      });
    });

    it('a malformed percent-encoding or an over-long path parameter is 400 naming the check', async () => {
      await unchanged(async () => {
        const bad = await rawHttp(t.venue.port, [
          'GET /api/user/access-status/%E0%A4%A HTTP/1.1\r\nHost: x\r\n\r\n',
        ]);
        expectRefusal({ status: bad.status, body: JSON.parse(bad.body) }, 400, /url|encod|path/i);
        const long = await t.api('GET', `/user/access-status/0x${'a'.repeat(400)}`);
        expectRefusal(long, 400, /walletAddress|long|length/i);
        const longToken = await t.api('GET', `/chain/token/${'%41'.repeat(300)}`);
        expectRefusal(longToken, 400);
      });
    });

    it('hostile path ids: 400 naming the parameter', async () => {
      await unchanged(async () => {
        const ids = [
          '-1',
          '0',
          '0x',
          `0x${'1'.repeat(39)}`,
          `0x${'1'.repeat(41)}`,
          `0x${'g'.repeat(40)}`,
          `0X${'1'.repeat(40)}`,
          '18446744073709551616',
          '1e3',
          '%20',
          '%00',
          '%E2%80%AE',
          'null',
          'undefined',
          '__proto__',
          'constructor',
          '..%2F..',
          encodeURIComponent(`0x${'1'.repeat(40)}\u200b`),
        ];
        for (const id of ids) {
          expectRefusal(await t.api('GET', `/user/access-status/${id}`), 400, /walletAddress/);
          expectRefusal(await t.api('GET', `/chain/token/${id}`), 400, /wallet/);
        }
        // Any case is accepted and normalised (protocol.md section 3).
        const upper = await t.api(
          'GET',
          `/user/access-status/0x${alice.address.slice(2).toUpperCase()}`,
        );
        expect(upper).toMatchObject({ status: 200, body: { hasAppAccess: true } });
        for (const id of ['-1', '1e3', '0x10', '99999999999999999999', '1.0', '%20', '__proto__']) {
          const r = await t.admin('POST', `/admin/trades/${id}/bust`, {});
          expectRefusal(r, 400, /tradeId/);
        }
        expectRefusal(await t.admin('POST', '/admin/trades/424242/bust', {}), [400, 404]);
        for (const sym of ['NOPE', '__proto__', 'constructor', 'toString', '%00', 'btc-perp']) {
          expectRefusal(await t.admin('POST', `/admin/markets/${sym}/pause`), 404, /instrument/);
        }
        for (const code of ['%00', '__proto__', 'x'.repeat(90), 'NOPE123']) {
          expectRefusal(await t.admin('POST', `/admin/referral-codes/${code}/revoke`), [400, 404]);
        }
      });
    });

    it('hostile query strings (repeated, array-ish, out-of-range, non-numeric): 400 naming the parameter', async () => {
      await unchanged(async () => {
        const w = `wallet=${alice.address}`;
        const cases: readonly (readonly [string, RegExp])[] = [
          ['/account_summary', /wallet/],
          ['/account_summary?wallet=', /wallet/],
          [`/account_summary?${w}&${w}`, /wallet/],
          [`/account_summary?wallet[]=${alice.address}`, /wallet/],
          [`/account_summary?wallet[a]=${alice.address}`, /wallet/],
          [`/account_summary?wallet=${alice.address}%00`, /wallet/],
          [`/historic/orders?${w}&limit=0`, /limit/],
          [`/historic/orders?${w}&limit=-1`, /limit/],
          [`/historic/orders?${w}&limit=501`, /limit/],
          [`/historic/orders?${w}&limit=1e2`, /limit/],
          [`/historic/orders?${w}&limit=1.5`, /limit/],
          [`/historic/orders?${w}&limit=%201`, /limit/],
          [`/historic/orders?${w}&limit=abc`, /limit/],
          [`/historic/orders?${w}&limit=18446744073709551616`, /limit/],
          [`/historic/orders?${w}&limit=1&limit=2`, /limit/],
          [`/historic/orders?${w}&limit=`, /limit/],
          [`/historic/orders?${w}&startTime=-1`, /startTime/],
          [`/historic/orders?${w}&startTime=1e12`, /startTime/],
          [`/historic/orders?${w}&startTime=NaN`, /startTime/],
          [`/historic/orders?${w}&startTime=99999999999999999999`, /startTime/],
          [`/historic/orders?${w}&endTime=Infinity`, /endTime/],
          [`/historic/orders?${w}&endTime=0x10`, /endTime/],
          [`/historic/orders?${w}&endTime=1&endTime=2`, /endTime/],
          [`/historic/orders?${w}&status=bogus`, /status/],
          [`/historic/orders?${w}&status=open&status=closed`, /status/],
          [`/historic/orders?${w}&cursor=abc`, /cursor/],
          [`/historic/orders?${w}&cursor=${'A'.repeat(10_000)}`, /cursor/],
          [`/historic/orders?${w}&cursor=${Buffer.from('t:1:1').toString('base64url')}`, /cursor/],
          [`/historic/orders?${w}&orderId=abc`, /orderId/],
          [`/historic/orders?${w}&orderId=-1`, /orderId/],
          [`/historic/orders?${w}&orderId=18446744073709551616`, /orderId/],
          [`/historic/orders?${w}&orderId=1e3`, /orderId/],
          [`/historic/orders?${w}&orderId=01`, /orderId/],
          [`/historic/orders?${w}&orderId=1&orderId=2`, /orderId/],
          [`/historic/orders?${w}&cloid=xyz`, /cloid/],
          [`/historic/orders?${w}&cloid=0x${'0'.repeat(31)}`, /cloid/],
          [`/account/trades?${w}&limit=0`, /limit/],
          [`/account/trades?${w}&orderId=abc`, /orderId/],
          [`/account/trades?${w}&cursor=${Buffer.from('o:1:1').toString('base64url')}`, /cursor/],
          [`/historic/trades?${w}&startTime=-5`, /startTime/],
        ];
        for (const [path, pattern] of cases) {
          const r = await t.api('GET', path);
          expect(r.status, path).toBe(400);
          expectRefusal(r, 400, pattern);
        }
        // Well-formed edges are answered normally.
        for (const path of [
          `/historic/orders?${w}&limit=500&startTime=0&endTime=${Number.MAX_SAFE_INTEGER}`,
          `/historic/orders?${w}&orderId=18446744073709551615`,
          `/account/trades?${w}&limit=1&cursor=`,
          `/historic/orders?${w}&unknown=1&unknown=2`,
        ]) {
          expect((await t.api('GET', path)).status, path).toBe(200);
        }
      });
    });

    it('odd request lines (absolute URI, HTTP/1.0, OPTIONS *, CONNECT, lower-case or unknown methods) never get a 5xx', async () => {
      await unchanged(async () => {
        for (const line of [
          `GET http://127.0.0.1:${t.venue.port}/api/time HTTP/1.1\r\nHost: x`,
          'GET /api/time HTTP/1.0',
          'GET /api/time HTTP/9.9\r\nHost: x',
          'OPTIONS * HTTP/1.1\r\nHost: x',
          'CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: x',
          'get /api/time HTTP/1.1\r\nHost: x',
          'FLY /api/time HTTP/1.1\r\nHost: x',
          `${'A'.repeat(5_000)} /api/time HTTP/1.1\r\nHost: x`,
          'GET /api/time HTTP/1.1\r\nHost: x\r\nHost: y',
          'GET /api/time HTTP/1.1\r\nHost: x\r\nContent-Length: -1',
          'GET /api/time HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked',
          'POST /api/margin/withdrawal HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
        ]) {
          const r = await rawHttp(t.venue.port, [`${line}\r\n\r\n`], { waitMs: 2_000 });
          expect(r.status, line.slice(0, 60)).toBeGreaterThanOrEqual(200);
          expect(r.status, line.slice(0, 60)).toBeLessThan(500);
          if (r.status >= 400)
            expect(JSON.parse(r.body).error, line.slice(0, 60)).toMatch(/\w+ \w+/);
        }
      });
    });

    it('an over-long URL or header block is refused with a 4xx and a JSON error, not dropped', async () => {
      const longUrl = await rawHttp(t.venue.port, [
        `GET /api/time?x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
      ]);
      expect(longUrl.status).toBe(400);
      expectRefusal(
        { status: longUrl.status, body: JSON.parse(longUrl.body) },
        400,
        /header|large|long/i,
      );
      const garbage = await rawHttp(t.venue.port, ['\u0000\u0001 GARBAGE\r\n\r\n']);
      expect(garbage.status).toBe(400);
      expectRefusal(
        { status: garbage.status, body: JSON.parse(garbage.body) },
        400,
        /HTTP|malformed/i,
      );
    });
  });

  // ---- REST: bodies --------------------------------------------------------------------

  describe('REST bodies', () => {
    const SIGNED = [
      '/margin/withdrawal',
      '/margin/transfer',
      '/margin/deposit',
      '/update_leverage',
    ];

    it('non-objects, malformed JSON, duplicate and prototype keys, deep nesting, BOM and non-UTF-8 bytes: 400 naming the problem', async () => {
      await unchanged(async () => {
        const bodies: readonly (readonly [string | Buffer, RegExp])[] = [
          ['null', /JSON object|body/],
          ['[]', /JSON object|body/],
          ['"x"', /JSON object|body/],
          ['1', /JSON object|body/],
          ['true', /JSON object|body/],
          ['{', /JSON/],
          ['{"a":}', /JSON/],
          ["{'a':1}", /JSON/],
          ['{}x', /JSON/],
          ['{"a":1,}', /JSON/],
          ['{"a":NaN}', /JSON/],
          ['{"a":1e400}', /amount|signature|leverage|permit|body|JSON/],
          ['\ufeff{}', /JSON|body|amount|signature|leverage|permit/],
          ['{"__proto__":{"x":1}}', /JSON|prototype/],
          ['{"constructor":{"prototype":{"x":1}}}', /JSON|prototype|constructor/],
          [`${'['.repeat(33)}${']'.repeat(33)}`, /nested|deep/],
          [`${'{"a":'.repeat(33)}1${'}'.repeat(33)}`, /nested|deep/],
          [`${'['.repeat(200_00)}`, /nested|deep|large|JSON/],
          [Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), /JSON/],
          [Buffer.from([0xc0, 0xaf]), /JSON/],
          [Buffer.from('{"amount":"\xff"}', 'latin1'), /amount|signature|leverage|permit/],
          ['{"amount":"5","amount":"6"}', /amount|signature|leverage|permit|duplicate/],
          ['\u0000{}', /JSON/],
          [Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00]), /JSON/],
          [Buffer.from('{"a":1}', 'utf16le'), /JSON/],
        ];
        for (const path of SIGNED) {
          for (const [body, pattern] of bodies) {
            const r = await post(path, body);
            expectRefusal(r, 400, pattern, `${path} ${String(body).slice(0, 40)}`);
          }
        }
        expect(({} as Record<string, unknown>).x).toBeUndefined();
      });
    });

    it('empty bodies, missing and wrong content types: 400 naming the problem', async () => {
      await unchanged(async () => {
        for (const path of [...SIGNED, '/admin/oracle']) {
          const auth = path.startsWith('/admin')
            ? { authorization: `Bearer ${t.venue.adminToken}` }
            : {};
          const empty = await http('POST', `${t.rest}${path}`, '', {
            'content-type': 'application/json',
            ...auth,
          });
          expectRefusal(empty, 400, /empty|body|JSON/i);
          const none = await fetch(`${t.rest}${path}`, { method: 'POST', headers: auth });
          expectRefusal(
            { status: none.status, body: (await none.json()) as Record<string, unknown> },
            400,
            /body/i,
          );
          for (const type of [
            'text/plain',
            'application/x-www-form-urlencoded',
            'multipart/form-data; boundary=x',
            'application/jsonx',
            'application/xml',
            'json',
            '',
          ]) {
            const r = await fetch(`${t.rest}${path}`, {
              method: 'POST',
              headers: { 'content-type': type, ...auth },
              body: '{"amount":"1"}',
            });
            const body = (await r.json()) as Record<string, unknown>;
            expect(r.status, `${path} ${type}`).toBe(400);
            expectRefusal({ status: r.status, body }, 400, /content.type|media|body/i);
          }
        }
      });
    });

    it('bodies around the 64 KiB limit: just under is parsed, just over is 400 naming the size, chunked too', async () => {
      await unchanged(async () => {
        const limit = DEFAULT_CONFIG.limits.maxMessageBytes;
        const pad = (total: number) => {
          const shell = '{"pad":""}';
          return `{"pad":"${'x'.repeat(total - shell.length)}"}`;
        };
        const under = await post('/margin/withdrawal', pad(limit));
        expectRefusal(under, 400, /signature/); // parsed: the field checks answer
        const over = await post('/margin/withdrawal', pad(limit + 1));
        expectRefusal(over, 400, /large|size|limit/i);
        // Chunked (no Content-Length), over the limit.
        const chunk = 'x'.repeat(8_192);
        const parts = [
          'POST /api/margin/withdrawal HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n',
          `1\r\n{\r\n`,
          ...Array.from(
            { length: 9 },
            () => `${(chunk.length + 2).toString(16)}\r\n"${chunk}"\r\n`,
          ),
          '0\r\n\r\n',
        ];
        const chunked = await rawHttp(t.venue.port, parts);
        expect(chunked.status).toBe(400);
        expect(JSON.parse(chunked.body).error).toMatch(/large|size|limit/i);
        // A Content-Length far beyond the limit is refused before the body arrives.
        const declared = await rawHttp(t.venue.port, [
          'POST /api/margin/withdrawal HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 999999999\r\n\r\n{',
        ]);
        expect(declared.status).toBe(400);
        expect(JSON.parse(declared.body).error).toMatch(/large|size|limit/i);
        // Contradictory framing is refused by the HTTP parser.
        const both = await rawHttp(t.venue.port, [
          'POST /api/margin/withdrawal HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n',
        ]);
        expect(both.status).toBe(400);
      });
    });

    it('a body that never finishes, or trickles, is answered 408 at the request timeout and never hangs others', async () => {
      await unchanged(async () => {
        const head =
          'POST /api/margin/withdrawal HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n';
        const started = performance.now();
        const [silent, trickle, headers] = await Promise.all([
          rawHttp(t.venue.port, [head, '{"amount":'], { waitMs: REQUEST_TIMEOUT_MS + 5_000 }),
          // One byte every 300 ms keeps the socket busy but never completes the body.
          rawHttp(t.venue.port, [head, ...Array.from({ length: 30 }, () => ' ')], {
            gapMs: 300,
            waitMs: REQUEST_TIMEOUT_MS + 5_000,
          }),
          // Headers that never end.
          rawHttp(
            t.venue.port,
            [
              'GET /api/time HTTP/1.1\r\n',
              ...Array.from({ length: 30 }, (_, i) => `X-${i}: y\r\n`),
            ],
            { gapMs: 300, waitMs: REQUEST_TIMEOUT_MS + 5_000 },
          ),
          // Meanwhile the venue serves everyone else at once.
          (async () => {
            for (let i = 0; i < 5; i++) {
              const s = performance.now();
              expect((await t.api('GET', '/time')).status).toBe(200);
              expect(performance.now() - s).toBeLessThan(1_500);
              await new Promise((r) => setTimeout(r, 200));
            }
          })(),
        ]);
        for (const r of [silent, trickle, headers]) {
          expect(r.status).toBe(408);
          expect(r.closed || r.head.toLowerCase().includes('connection: close')).toBe(true);
          expect(JSON.parse(r.body).error).toMatch(/timeout|time out|timed out/i);
          expect(r.ms).toBeLessThan(REQUEST_TIMEOUT_MS + 3_000);
          expect(r.ms).toBeGreaterThan(REQUEST_TIMEOUT_MS - 100);
        }
        expect(performance.now() - started).toBeLessThan(REQUEST_TIMEOUT_MS + 4_500);
      });
    });

    it('a half-open connection that says nothing is closed at the request timeout', async () => {
      const r = await rawHttp(t.venue.port, [], { waitMs: REQUEST_TIMEOUT_MS + 5_000 });
      expect(r.status).toBe(408);
      expect(JSON.parse(r.body).error).toMatch(/^request timeout/);
      expect(r.ms).toBeLessThan(REQUEST_TIMEOUT_MS + 3_000);
    });
  });

  // ---- REST: signed writes, field by field -----------------------------------------------

  describe('signed REST writes: every field with every wrong type', () => {
    /** A valid request of each signed write, signed by alice (fresh nonce each call). */
    const valid = {
      async '/margin/withdrawal'() {
        return {
          amount: '5',
          instrument: null,
          marginMode: 'Cross',
          signature: await alice.sign('Withdrawal', {
            amount: usd(5),
            market: 0,
            flags: 0,
            nonce: freshNonce(),
            deadline: BigInt(Math.floor(Date.now() / 1000) + 600),
          }),
        };
      },
      async '/margin/transfer'() {
        return {
          amount: '5',
          instrument: 'BTC-PERP',
          direction: 'crossToIsolated',
          signature: await alice.sign('MarginTransfer', {
            amount: usd(5),
            market: 1,
            flags: 0,
            nonce: freshNonce(),
            deadline: BigInt(Math.floor(Date.now() / 1000) + 600),
          }),
        };
      },
      async '/update_leverage'() {
        return {
          leverage: 1000,
          instrument: 'BTC-PERP',
          marginMode: 'Cross',
          signature: await alice.sign('UpdateLeverage', {
            market: 1,
            leverage: 1000,
            flags: 0,
            nonce: freshNonce(),
            deadline: BigInt(Math.floor(Date.now() / 1000) + 600),
          }),
        };
      },
      async '/margin/deposit'() {
        await t.admin('POST', '/admin/faucet', { wallet: alice.address, amount: '5' });
        const token = await t.api('GET', `/chain/token/${alice.address}`);
        return {
          amount: '5',
          instrument: null,
          marginMode: 'Cross',
          permitSignature: await alice.sign('Permit', {
            spender: t.net.vault.address,
            value: usd(5),
            nonce: BigInt(token.body.nonce as string),
            deadline: BigInt(Math.floor(Date.now() / 1000) + 600),
          }),
          depositSignature: await alice.sign('Deposit', {
            amount: usd(5),
            market: 0,
            flags: 0,
            nonce: freshNonce(),
            deadline: BigInt(Math.floor(Date.now() / 1000) + 600),
          }),
        };
      },
    } as const;

    for (const path of Object.keys(valid) as (keyof typeof valid)[]) {
      it(`${path}: each field replaced or removed is 400 naming the field; the untouched request still works`, async () => {
        const body = await valid[path]();
        const fields = Object.keys(body);
        const token = async () => (await t.api('GET', `/chain/token/${alice.address}`)).body;
        const tokenBefore = await token();
        await unchanged(async () => {
          // Every field missing.
          for (const f of fields) {
            const r = await post(path, withRawField(body, f, null));
            expectRefusal(r, 400);
          }
          await fc.assert(
            fc.asyncProperty(fc.constantFrom(...fields), hostileToken, async (field, raw) => {
              fc.pre(!sameMeaning(raw, (body as Record<string, unknown>)[field]));
              const r = await post(path, withRawField(body, field, raw));
              expect(r.status, `${field}=${raw.slice(0, 60)}: ${JSON.stringify(r.body)}`).toBe(400);
              expectRefusal(r, 400);
              const error = r.body.error as string;
              // The message names the field, the signature part, or the JSON problem.
              const names = field.endsWith('ignature')
                ? /signature|payload|permit|JSON|prototype/i
                : new RegExp(`${field}|JSON|prototype`, 'i');
              expect(error, `${field}=${raw.slice(0, 60)}`).toMatch(names);
            }),
            fcOptions(60),
          );
        });
        // No token balance or permit nonce moved on the simulated chain either.
        expect(await token()).toEqual(tokenBefore);
        // Nothing above consumed the nonce: the untouched request is accepted now.
        const ok = await post(path, JSON.stringify(body));
        expect(ok.status, JSON.stringify(ok.body)).toBe(200);
        expect(ok.body.status).toBe('Submitted');
      });
    }

    it('body/payload disagreement on every field is 400 and consumes no nonce', async () => {
      const body = await valid['/margin/withdrawal']();
      await unchanged(async () => {
        for (const [field, value] of [
          ['amount', '5.000001'],
          ['amount', '4.999999'],
          ['marginMode', 'Isolated'],
          ['instrument', 'BTC-PERP'],
        ] as const) {
          const r = await post('/margin/withdrawal', JSON.stringify({ ...body, [field]: value }));
          expectRefusal(r, 400, new RegExp(`${field}|marginMode|instrument`));
        }
      });
      expect((await post('/margin/withdrawal', JSON.stringify(body))).body.status).toBe(
        'Submitted',
      );
    });
  });

  // ---- signed payloads and signatures ------------------------------------------------------

  describe('signed payloads', () => {
    const deadline = () => BigInt(Math.floor(Date.now() / 1000) + 600);
    const leverageBody = async (fields: Record<string, bigint | number> = {}) => ({
      leverage: 1000,
      instrument: 'BTC-PERP',
      marginMode: 'Cross',
      signature: await alice.sign('UpdateLeverage', {
        market: 1,
        leverage: 1000,
        flags: 0,
        nonce: freshNonce(),
        deadline: deadline(),
        ...fields,
      }),
    });
    const withPayload = (body: Awaited<ReturnType<typeof leverageBody>>, payload: string) => ({
      ...body,
      signature: { ...body.signature, payload },
    });
    const withSig = (body: Awaited<ReturnType<typeof leverageBody>>, sig: string) => ({
      ...body,
      signature: { ...body.signature, sig },
    });
    const rest = (body: unknown) => post('/update_leverage', JSON.stringify(body));

    it('every discriminator byte but the right one, off-by-one lengths and broken hex: 400 naming the check, REST and WS', async () => {
      const body = await leverageBody();
      const order = await alice.sign('Order', limitOrder(true, px(60000), btc(0.01)));
      const payload = body.signature.payload;
      await unchanged(async () => {
        for (let d = 0; d < 256; d++) {
          if (d === 0x04) continue;
          const p = `0x${d.toString(16).padStart(2, '0')}${payload.slice(4)}`;
          const r = await rest(withPayload(body, p));
          expectRefusal(r, 400, /discriminator|not accepted here|length/);
          if (d !== 0x01) {
            const m = await aliceWs.request({
              type: 'placeOrder',
              signature: {
                ...order,
                payload: `0x${d.toString(16).padStart(2, '0')}${order.payload.slice(4)}`,
              },
            });
            expectWsError(m, 4000, /discriminator|not accepted here|length/);
          }
        }
        const lengths = [
          '0x',
          '0x04',
          payload.slice(0, -2),
          `${payload}00`,
          payload.slice(0, -64),
          `${payload}${'00'.repeat(32)}`,
          `${payload}${'00'.repeat(4096)}`,
        ];
        for (const p of lengths)
          expectRefusal(await rest(withPayload(body, p)), 400, /length|empty/);
        const hex = [
          payload.slice(2),
          `0X${payload.slice(2)}`,
          payload.slice(0, -1),
          `${payload.slice(0, -2)}zz`,
          `${payload.slice(0, -2)}\u0660\u0661`,
          ` ${payload}`,
          `${payload} `,
          `${payload}\n`,
          `0x${payload.slice(2).replace(/./g, (c, i) => (i === 10 ? 'g' : c))}`,
        ];
        for (const p of hex) expectRefusal(await rest(withPayload(body, p)), 400, /payload|hex|0x/);
        for (const p of [123, null, [payload], { payload }, true]) {
          expectRefusal(
            await rest({ ...body, signature: { ...body.signature, payload: p } }),
            400,
            /payload/,
          );
        }
      });
      // Upper-case hex is the same bytes: accepted (and only now the nonce is used).
      const upper = withPayload(body, `0x${payload.slice(2).toUpperCase()}`);
      const ok = await rest(withSig(upper, `0x${body.signature.sig.slice(2).toUpperCase()}`));
      expect(ok.body.status).toBe('Submitted');
    });

    it('words that overflow their type, unknown flag bits, non-canonical bool/address/bytes16 words: 4000 naming the field', async () => {
      const body = await leverageBody();
      const order = await alice.sign('Order', limitOrder(true, px(60000), btc(0.01)));
      /** Replaces byte `at` of word `word` (0-based) of a payload. */
      const poke = (payload: string, word: number, at: number, byte: number) => {
        const i = 2 + 2 * (1 + 32 * word + at);
        return `${payload.slice(0, i)}${byte.toString(16).padStart(2, '0')}${payload.slice(i + 2)}`;
      };
      await unchanged(async () => {
        // UpdateLeverage words: account, market, leverage, flags, nonce, deadline.
        const cases: readonly (readonly [number, number, RegExp])[] = [
          [0, 0, /account.*address word/],
          [0, 11, /account.*address word/],
          [1, 27, /market.*uint32 overflow/],
          [1, 0, /market.*uint32 overflow/],
          [2, 27, /leverage.*uint32 overflow/],
          [3, 27, /flags.*uint32 overflow/],
          [4, 23, /nonce.*uint64 overflow/],
          [5, 0, /deadline.*uint64 overflow/],
        ];
        for (const [word, at, pattern] of cases) {
          const r = await rest(withPayload(body, poke(body.signature.payload, word, at, 1)));
          expectRefusal(r, 400, pattern);
        }
        for (const flags of [2, 0x80, 0x80000000, 0xffffffff]) {
          const p = `${body.signature.payload.slice(0, 2 + 2 * (1 + 32 * 3))}${flags.toString(16).padStart(64, '0')}${body.signature.payload.slice(2 + 2 * (1 + 32 * 4))}`;
          expectRefusal(await rest(withPayload(body, p)), 400, /flags: unused flag bits/);
        }
        // Order words: isBuy (2) must be 0/1, cloid (10) left-aligned, flags (8) 4 bits.
        const ws = (payload: string) =>
          aliceWs.request({ type: 'placeOrder', signature: { ...order, payload } });
        expectWsError(await ws(poke(order.payload, 2, 31, 2)), 4000, /isBuy.*bool/);
        expectWsError(await ws(poke(order.payload, 2, 0, 1)), 4000, /isBuy.*bool/);
        expectWsError(await ws(poke(order.payload, 10, 31, 1)), 4000, /cloid.*bytes16/);
        expectWsError(await ws(poke(order.payload, 8, 31, 0x10)), 4000, /flags: unused flag bits/);
        expectWsError(await ws(poke(order.payload, 3, 30, 1)), 4000, /orderType.*uint8 overflow/);
        expectWsError(await ws(poke(order.payload, 1, 0, 0x80)), 4000, /market.*uint32 overflow/);
      });
      expect((await aliceWs.request({ type: 'placeOrder', signature: order })).type).toBe(
        'orderAck',
      );
    });

    it('random payload mutations never pass, never 500, never consume the nonce', async () => {
      const body = await leverageBody();
      const bytes = (body.signature.payload.length - 2) / 2;
      await unchanged(async () => {
        await fc.assert(
          fc.asyncProperty(
            fc.array(fc.tuple(fc.nat(bytes - 1), fc.integer({ min: 1, max: 255 })), {
              minLength: 1,
              maxLength: 4,
            }),
            async (edits) => {
              const hex = body.signature.payload.slice(2).split('');
              for (const [at, xor] of edits) {
                const b = Number.parseInt(hex.slice(2 * at, 2 * at + 2).join(''), 16) ^ xor;
                const h = b.toString(16).padStart(2, '0');
                hex[2 * at] = h[0]!;
                hex[2 * at + 1] = h[1]!;
              }
              const p = `0x${hex.join('')}`;
              fc.pre(p !== body.signature.payload);
              const r = await rest(withPayload(body, p));
              expect(r.status, JSON.stringify(r.body)).toBe(400);
              expectRefusal(r, 400);
            },
          ),
          fcOptions(40),
        );
      });
      expect((await rest(body)).body.status).toBe('Submitted');
    });

    it('signatures of the wrong length, v outside {0,1,27,28}, r or s zero or >= n, high s: 4001 naming the check', async () => {
      const body = await leverageBody();
      const sig = body.signature.sig;
      const r = sig.slice(2, 66);
      const s = sig.slice(66, 130);
      const v = Number.parseInt(sig.slice(130), 16);
      const word = (n: bigint) => n.toString(16).padStart(64, '0');
      await unchanged(async () => {
        const wrongLength = [
          '0x',
          sig.slice(0, 130),
          sig.slice(0, 128),
          `${sig}00`,
          `${sig}${'00'.repeat(65)}`,
          `0x${'00'.repeat(4096)}`,
        ];
        for (const x of wrongLength)
          expectRefusal(await rest(withSig(body, x)), 400, /65 bytes|signature/);
        for (let vv = 0; vv < 256; vv++) {
          if ([0, 1, 27, 28].includes(vv)) continue;
          const x = `0x${r}${s}${vv.toString(16).padStart(2, '0')}`;
          expectRefusal(await rest(withSig(body, x)), 400, /signature v must be 27, 28, 0 or 1/);
        }
        const bad: readonly (readonly [string, RegExp])[] = [
          [`0x${word(0n)}${s}1b`, /r is not in/],
          [`0x${word(SECP256K1_N)}${s}1b`, /r is not in/],
          [`0x${'f'.repeat(64)}${s}1b`, /r is not in/],
          [`0x${r}${word(0n)}1b`, /s is not in/],
          [`0x${r}${word(SECP256K1_N)}1b`, /s is not in/],
          [`0x${r}${'f'.repeat(64)}1b`, /s is not in/],
          [
            `0x${r}${word(SECP256K1_N - BigInt(`0x${s}`))}${(v === 27 ? 28 : 27).toString(16)}`,
            /high s/,
          ],
          [`0x${r}${word(SECP256K1_HALF_N + 1n)}1b`, /high s/],
          // Valid form, wrong parity / other v encodings: recovers someone else.
          [
            `0x${r}${s}${(v === 27 ? 1 : 0).toString(16).padStart(2, '0')}`,
            /does not match|does not recover/,
          ],
          [`0x${word(1n)}${word(1n)}1b`, /does not match|does not recover/],
          [`0x${'11'.repeat(64)}1c`, /does not match|does not recover/],
          [`${sig.slice(0, -2)}zz`, /hex/],
          [sig.slice(2), /0x/],
          [`${sig.slice(0, -1)}`, /odd/],
        ];
        for (const [x, pattern] of bad) expectRefusal(await rest(withSig(body, x)), 400, pattern);
        for (const x of [null, 1, [sig], { sig }, true]) {
          expectRefusal(
            await rest({ ...body, signature: { ...body.signature, sig: x } }),
            400,
            /signature/,
          );
        }
        expectRefusal(await rest({ ...body, signature: null }), 400, /signature/);
        expectRefusal(
          await rest({ ...body, signature: [sig, body.signature.payload] }),
          400,
          /signature/,
        );
        expectRefusal(await rest({ ...body, signature: `${sig}` }), 400, /signature/);
      });
      // v as 0/1 instead of 27/28 is the same signature: accepted.
      const alt = `0x${r}${s}${(v - 27).toString(16).padStart(2, '0')}`;
      expect((await rest(withSig(body, alt))).body.status).toBe('Submitted');
    });

    it('deadlines passed or too far ahead: 4002 / 4000 naming the deadline; nothing consumed', async () => {
      const now = Math.floor(Date.now() / 1000);
      await unchanged(async () => {
        for (const d of [0n, 1n, BigInt(now - 1), BigInt(now - 3600)]) {
          const r = await rest(await leverageBody({ deadline: d }));
          expectRefusal(r, 400, /INVALID_NONCE: deadline passed/);
        }
        for (const d of [BigInt(now + 3_700), 2n ** 64n - 1n, 2n ** 63n]) {
          const r = await rest(await leverageBody({ deadline: d }));
          expectRefusal(r, 400, /deadline (too far|.* more than 1 hour ahead)/);
        }
        for (const n of [
          0n,
          1n,
          BigInt(Date.now() - 400_000),
          BigInt(Date.now() + 400_000),
          2n ** 64n - 1n,
        ]) {
          const r = await rest(await leverageBody({ nonce: n }));
          expectRefusal(r, 400, /INVALID_NONCE/);
        }
      });
    });
  });

  // ---- the referral ---------------------------------------------------------------------

  describe('POST /referral/apply', () => {
    it('hostile bodies are 400 with the spec text; hostile headers 401 naming the header; nothing changes', async () => {
      const code = t.venue.inviteCode!;
      const good = await carol.referral(code);
      await unchanged(async () => {
        const bodies = [
          '',
          'null',
          '[]',
          '{}',
          `{"walletAddress":"${carol.address}","code":"${code}","code":"${code}"}`,
          `{"walletAddress":"${carol.address.toUpperCase().replace('0X', '0x')}","code":"${code}"}`,
          `{"walletAddress":"${carol.address}","code":"${code.toLowerCase()}"}`,
          `{"walletAddress":"${carol.address}","code":"ABCDEFGH"}`,
          `{"walletAddress":"${carol.address}","code":"\\ud800"}`,
          `{"walletAddress":"${carol.address}","code":"A\\u200b"}`,
          `{"walletAddress":"${carol.address}","code":1}`,
          `{"walletAddress":"${carol.address}","code":null}`,
          `{"walletAddress":"${carol.address}","code":["${code}"]}`,
          `{"__proto__":{},"walletAddress":"${carol.address}","code":"${code}"}`,
          `{"walletAddress":"${carol.address}","code":"${code}"`,
          `${'['.repeat(40)}`,
          `{"walletAddress":"${carol.address}","code":"${'A'.repeat(70_000)}"}`,
        ];
        for (const b of bodies) {
          const r = await post('/referral/apply', b, good.headers);
          expect(r, b.slice(0, 60)).toMatchObject({
            status: 400,
            body: { error: 'walletAddress and code are required' },
          });
        }
        const headerCases: readonly (readonly [Record<string, string>, RegExp])[] = [
          [{ 'x-timestamp': '1e12' }, /x-timestamp/],
          [{ 'x-timestamp': '-1' }, /x-timestamp/],
          [{ 'x-timestamp': '18446744073709551616' }, /x-timestamp/],
          [{ 'x-timestamp': '0' }, /expired/],
          [{ 'x-timestamp': String(Date.now() + 301_000) }, /expired/],
          [{ 'x-timestamp': 'NaN' }, /x-timestamp/],
          [{ 'x-nonce': 'short' }, /x-nonce/],
          [{ 'x-nonce': 'a'.repeat(129) }, /x-nonce/],
          [{ 'x-nonce': 'abc def ghi' }, /x-nonce/],
          [{ 'x-nonce': 'abcdefgh\u00e9' }, /x-nonce|signer/],
          [{ 'x-signature': '0x' }, /signer|signature/],
          [{ 'x-signature': 'zz' }, /signer|signature/],
          [{ 'x-signature': `0x${'00'.repeat(65)}` }, /signer|signature/],
          [{ 'x-signature': `0x${'ab'.repeat(5000)}` }, /signer|signature/],
        ];
        // A flat body may carry more than walletAddress and code (protocol.md), but the
        // signature covers the whole body: these headers were signed over another one.
        expectRefusal(
          await post(
            '/referral/apply',
            `{"walletAddress":"${carol.address}","code":"${code}","x":1}`,
            good.headers,
          ),
          401,
          /signer/,
        );
        for (const [h, pattern] of headerCases) {
          let r: Awaited<ReturnType<typeof post>>;
          try {
            r = await post('/referral/apply', good.body, { ...good.headers, ...h });
          } catch {
            continue; // fetch refuses some header values itself (non-Latin-1)
          }
          expectRefusal(r, 401, pattern);
          expect(r.body.error).toMatch(/^Unauthorized: /);
        }
      });
      // Random bodies under the good headers: 400 (the spec text) or 401 (the signature no longer
      // covers the body), nothing else, nothing changed.
      await unchanged(async () => {
        await fc.assert(
          fc.asyncProperty(
            fc.oneof(
              fc.json({ maxDepth: 3 }),
              fc.string({ unit: 'binary', maxLength: 60 }),
              fc
                .dictionary(
                  fc.constantFrom('walletAddress', 'code', 'x', '__proto__'),
                  hostileToken,
                  { maxKeys: 3 },
                )
                .map(
                  (d) =>
                    `{${Object.entries(d)
                      .map(([k, v]) => `${JSON.stringify(k)}:${v}`)
                      .join(',')}}`,
                ),
            ),
            async (text) => {
              fc.pre(text !== good.body);
              const r = await post('/referral/apply', text, good.headers);
              expect([400, 401], `${text.slice(0, 80)} ${JSON.stringify(r.body)}`).toContain(
                r.status,
              );
              if (r.status === 400) {
                // The spec's text, and a `detail` naming the check (an addition).
                expect(r.body.error).toBe('walletAddress and code are required');
                expect(Object.keys(r.body).sort()).toEqual(['detail', 'error']);
                expect(typeof r.body.detail).toBe('string');
              } else expect(r.body.error).toMatch(/^Unauthorized: /);
            },
          ),
          fcOptions(60),
        );
      });
      // Nothing was consumed: the original request grants access.
      expect((await post('/referral/apply', good.body, good.headers)).status).toBe(201);
    });
  });

  // ---- admin --------------------------------------------------------------------------------

  describe('admin', () => {
    it('without or with a wrong token every admin route is 401; nothing changes', async () => {
      await unchanged(async () => {
        const token = t.venue.adminToken;
        for (const auth of [
          undefined,
          '',
          'Bearer',
          `Bearer ${token.slice(0, -1)}`,
          `Bearer ${token}x`,
          `Basic ${token}`,
          `Bearer ${token} x`,
          token,
          `Bearer ${'x'.repeat(8_000)}`,
        ]) {
          for (const [m, p] of [
            ['GET', '/admin/state-hash'],
            ['POST', '/admin/oracle'],
            ['POST', '/admin/faucet'],
            ['GET', '/admin/referral-codes'],
          ] as const) {
            const r = await http(
              m,
              `${t.rest}${p}`,
              m === 'POST' ? '{}' : undefined,
              auth === undefined ? {} : { authorization: auth },
            );
            expectRefusal(r, 401, /Unauthorized/);
          }
        }
      });
    });

    it('the scheme is case-insensitive (RFC 9110), the token is not', async () => {
      const token = t.venue.adminToken;
      for (const scheme of ['bearer', 'BEARER', 'Bearer']) {
        const r = await http('GET', `${t.rest}/admin/state-hash`, undefined, {
          authorization: `${scheme} ${token}`,
        });
        expect(r.status).toBe(200);
      }
    });

    it('hostile bodies on every admin write are 400 (or 404 for an unknown instrument), never 500', async () => {
      const shapes: Record<string, Record<string, unknown>> = {
        '/admin/instruments': everyInstrumentSetting(77, 'HOST-PERP'),
        '/admin/oracle': { prices: { 'BTC-PERP': '65000' } },
        '/admin/referral-codes': { kind: 'system', maxUses: 3, code: 'HOSTL' },
        '/admin/faucet': { wallet: alice.address, amount: '1' },
        '/admin/liquidate': {
          wallet: alice.address,
          marginMode: 'Isolated',
          instrument: 'BTC-PERP',
          force: false,
        },
        '/admin/insurance-fund/transfer': { direction: 'ToInsuranceFund', amount: '1' },
        '/admin/fee-pool/payout': { wallet: alice.address, amount: '1' },
        '/admin/funding/settle': { instrument: 'BTC-PERP' },
        '/admin/venue-settings': { maxWorkingOrdersPerAccount: 1_000 },
      };
      const before = await t.stateHash();
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...Object.keys(shapes)),
          fc.nat(20),
          hostileToken,
          async (path, fieldIndex, raw) => {
            const shape = shapes[path]!;
            const fields = Object.keys(shape);
            const field = fields[fieldIndex % fields.length]!;
            fc.pre(!sameMeaning(raw, shape[field]));
            const r = await http('POST', `${t.rest}${path}`, withRawField(shape, field, raw), {
              'content-type': 'application/json',
              authorization: `Bearer ${t.venue.adminToken}`,
            });
            // Some replacements are legitimate (e.g. another valid price); the rest are refusals.
            expect(
              r.status,
              `${path} ${field}=${raw.slice(0, 60)} ${JSON.stringify(r.body)}`,
            ).toBeLessThan(500);
            if (r.status !== 200) expectRefusal(r, [400, 404]);
          },
        ),
        fcOptions(120),
      );
      // The engine kept going through all of it, whatever the admin changed.
      expect((await t.stateHash()).seq).toBeGreaterThanOrEqual(before.seq);
      await t.oracle({ 'BTC-PERP': '65000' });
      // A legitimate replacement may have lowered the working-order cap: later tests rest orders.
      const reset = { maxWorkingOrdersPerAccount: 1_000 };
      expect((await t.admin('POST', '/admin/venue-settings', reset)).status).toBe(200);
    });
  });

  // ---- trading WebSocket ------------------------------------------------------------------

  describe('trading WebSocket', () => {
    it('binary frames, non-JSON text, non-objects and bad ids: 4000 naming the problem; the socket stays usable', async () => {
      const DUPLICATE_KEYS = '{"type":"ping","type":"ping"}';
      const c = await wsOpen(t.venue.ws);
      await unchanged(async () => {
        const texts: readonly (readonly [string | Buffer, RegExp, boolean])[] = [
          [Buffer.from([1, 2, 3]), /binary/, true],
          ['hello', /JSON/, false],
          ['', /JSON/, false],
          ['{', /JSON/, false],
          ['[]', /object with a string type/, false],
          ['null', /object with a string type/, false],
          ['1', /object with a string type/, false],
          ['"ping"', /object with a string type/, false],
          ['{"type":1}', /object with a string type/, false],
          ['{"type":null}', /object with a string type/, false],
          ['{"type":["ping"]}', /object with a string type/, false],
          ['{"type":"ping","id":1}', /id must be/, false],
          ['{"type":"ping","id":""}', /id must be/, false],
          [`{"type":"ping","id":"${'a'.repeat(65)}"}`, /id must be/, false],
          ['{"type":"ping","id":"a b"}', /id must be/, false],
          ['{"type":"ping","id":"\\u00e9"}', /id must be/, false],
          ['{"__proto__":{"type":"ping"}}', /JSON|prototype/, false],
          [`${'['.repeat(33)}${']'.repeat(33)}`, /nested/, false],
          [DUPLICATE_KEYS, /./, false],
        ];
        for (const [frame, pattern, binary] of texts) {
          c.inbox.length = 0;
          c.ws.send(frame, { binary });
          const m = await c.waitFor((x) => x.type === 'error' || x.type === 'pong');
          // Only the duplicate-keys frame may be answered (JSON's last one wins): a pong to any
          // other frame here, a bad id above all, is a request the venue should have refused.
          if (m.type === 'pong' && frame === DUPLICATE_KEYS) continue;
          expectWsError(m, 4000, pattern);
        }
        for (const type of [
          'fly',
          '',
          '__proto__',
          'constructor',
          'toString',
          'hasOwnProperty',
          'valueOf',
          'PING',
          'ping ',
          'x'.repeat(3_000), // under the 4 KiB an unauthenticated message may have
        ]) {
          expectWsError(await c.request({ type }), 4000, /unknown message type/);
        }
      });
      expect((await c.request({ type: 'ping' })).type).toBe('pong');
      await c.close();
    });

    it('a request refused before its fields are read still gets its id back', async () => {
      const c = await wsOpen(t.venue.ws);
      await unchanged(async () => {
        for (const [frame, id, pattern] of [
          ['{"type":5,"id":"num-type"}', 'num-type', /object with a string type/],
          ['{"id":"no-type"}', 'no-type', /object with a string type/],
          [`{"type":"ping","id":"deep","x":${'['.repeat(40)}${']'.repeat(40)}}`, 'deep', /nested/],
        ] as const) {
          c.ws.send(frame);
          expectWsError(await c.waitFor((x) => x.id === id), 4000, pattern);
        }
      });
      await c.close();
    });

    it('before authenticate a message over 4 KiB is refused unread (4000); the socket stays usable', async () => {
      const c = await wsOpen(t.venue.ws);
      await unchanged(async () => {
        const shell = '{"type":"ping","id":"p","pad":""}';
        // Exactly 4 KiB is read (and answered); one byte more is not parsed, so no id comes back.
        c.ws.send(`{"type":"ping","id":"p","pad":"${'x'.repeat(4096 - shell.length)}"}`);
        expect((await c.waitFor((m) => m.id === 'p')).type).toBe('pong');
        c.ws.send(`{"type":"ping","id":"q","pad":"${'x'.repeat(4097 - shell.length)}"}`);
        const refused = await c.waitFor((m) => m.type === 'error');
        expectWsError(
          refused,
          4000,
          /before authenticate may be at most 4096 bytes, this one has 4097/,
        );
        expect(refused.id).toBeUndefined();
      });
      expect(
        (await c.request({ type: 'authenticate', signature: await alice.authenticate() })).type,
      ).toBe('authenticateSuccess');
      await c.close();
    });

    it('a text frame that is not UTF-8 closes with 1007; one over 64 KiB with 1009; exactly 64 KiB is read', async () => {
      const a = await wsOpen(t.venue.ws);
      a.ws.send(Buffer.from([0x7b, 0xff, 0x7d]), { binary: false });
      expect(await closedWith(a.ws)).toBe(1007);
      // Authenticated: before that a connection may send 4 KiB at most (the test above).
      const b = await t.connect(alice);
      const limit = DEFAULT_CONFIG.limits.maxMessageBytes;
      const shell = '{"type":"ping","id":"big","pad":""}';
      b.ws.send(`{"type":"ping","id":"big","pad":"${'x'.repeat(limit - shell.length)}"}`);
      expect((await b.waitFor((m) => m.id === 'big')).type).toBe('pong');
      b.ws.send(`{"type":"ping","pad":"${'x'.repeat(limit)}"}`);
      expect(await closedWith(b.ws)).toBe(1009);
    });

    it('a message in more than 32 fragments closes with 1008; 32 fragments are reassembled', async () => {
      const ok = await wsOpen(t.venue.ws);
      const text = JSON.stringify({ type: 'ping', id: 'frag' });
      const pieces = (n: number) =>
        Array.from({ length: n }, (_, i) =>
          text.slice((i * text.length) / n, ((i + 1) * text.length) / n),
        );
      const parts = pieces(32);
      for (const [i, p] of parts.entries()) ok.ws.send(p, { fin: i === parts.length - 1 });
      expect((await ok.waitFor((m) => m.id === 'frag')).type).toBe('pong');
      await ok.close();
      const many = await wsOpen(t.venue.ws);
      const more = `${text}${' '.repeat(40)}`;
      const tooMany = Array.from({ length: 40 }, (_, i) =>
        more.slice(i * (more.length / 40), (i + 1) * (more.length / 40)),
      );
      for (const [i, p] of tooMany.entries()) many.ws.send(p, { fin: i === tooMany.length - 1 });
      expect(await closedWith(many.ws)).toBe(1008);
    });

    it('the ninth authenticated connection of one wallet gets 5000 and close 4429; the eight keep working', async () => {
      const frank = t.wallet(`0x${'5a'.repeat(32)}`);
      await t.invite(frank);
      const open: WsClient[] = [];
      for (let i = 0; i < DEFAULT_CONFIG.limits.connectionsPerAccount; i++)
        open.push(await t.connect(frank));
      const ninth = await wsOpen(t.venue.ws);
      expectWsError(
        await ninth.request({ type: 'authenticate', signature: await frank.authenticate() }),
        5000,
        /connections/,
      );
      expect(await closedWith(ninth.ws)).toBe(4429);
      for (const c of open) {
        expect((await c.request({ type: 'ping' })).type).toBe('pong');
        await c.close();
      }
    });

    it('before authenticate: every account message is 4003; ping and logout answer; nothing changes', async () => {
      const c = await wsOpen(t.venue.ws);
      const order = await alice.sign('Order', limitOrder(true, px(60000), btc(0.01)));
      await unchanged(async () => {
        for (const type of [
          'subscribeTrading',
          'subscribeAccountSummary',
          'placeOrder',
          'cancelOrder',
          'replaceOrder',
          'cancelAll',
          'claimLiquidation',
          'transferMargin',
        ]) {
          expectWsError(await c.request({ type, signature: order }), 4003, /NOT_AUTHENTICATED/);
        }
        expect((await c.request({ type: 'logout' })).type).toBe('logoutSuccess');
        expect((await c.request({ type: 'unsubscribeAccountSummary' })).type).toBe(
          'unsubscribeAccountSummarySuccess',
        );
      });
      // The order was never consumed.
      expect((await aliceWs.request({ type: 'placeOrder', signature: order })).type).toBe(
        'orderAck',
      );
      await c.close();
    });

    it('hostile authenticate messages: 4000/4001/4002/4015 naming the check; no account, no nonce used', async () => {
      const c = await wsOpen(t.venue.ws);
      const sig = await alice.authenticate();
      await unchanged(async () => {
        const cases: readonly (readonly [unknown, number, RegExp])[] = [
          [undefined, 4000, /signature must be an object/],
          [null, 4000, /signature must be an object/],
          ['x', 4000, /signature must be an object/],
          [[sig.sig, sig.payload], 4000, /signature must be an object/],
          [{ sig: sig.sig }, 4000, /signature must be an object/],
          [{ ...sig, payload: 1 }, 4000, /signature must be an object/],
          [{ ...sig, payload: '0x' }, 4000, /payload is empty/],
          [{ ...sig, payload: `0x01${sig.payload.slice(4)}` }, 4000, /not accepted here/],
          [{ ...sig, payload: `${sig.payload}00` }, 4000, /length/],
          [
            { ...sig, payload: `${sig.payload.slice(0, 4)}01${sig.payload.slice(6)}` },
            4000,
            /account.*address word/,
          ],
          [{ ...sig, sig: `${sig.sig.slice(0, -2)}1d` }, 4001, /v must be/],
          [{ ...sig, sig: `0x${'00'.repeat(65)}` }, 4001, /r is not in/],
        ];
        for (const [signature, code, pattern] of cases) {
          expectWsError(await c.request({ type: 'authenticate', signature }), code, pattern);
        }
        expectWsError(
          await c.request({
            type: 'authenticate',
            signature: await alice.authenticate(BigInt(Date.now() - 301_000)),
          }),
          4002,
          /nonce/i,
        );
        expectWsError(
          await c.request({
            type: 'authenticate',
            signature: await alice.authenticate(2n ** 64n - 1n),
          }),
          4002,
          /nonce/i,
        );
      });
      // The good one was never consumed; an uninvited wallet is 4015 (that request is journaled).
      expect((await c.request({ type: 'authenticate', signature: sig })).type).toBe(
        'authenticateSuccess',
      );
      const stranger = t.wallet(`0x${'42'.repeat(32)}`);
      // Authenticated as Alice, the connection takes no other wallet (4004) until it logs out.
      expectWsError(
        await c.request({ type: 'authenticate', signature: await stranger.authenticate() }),
        4004,
        /WALLET_MISMATCH/,
      );
      expect((await c.request({ type: 'logout' })).type).toBe('logoutSuccess');
      expectWsError(
        await c.request({ type: 'authenticate', signature: await stranger.authenticate() }),
        4015,
        /USER_NOT_INVITED/,
      );
      await c.close();
    });

    it('a hostile authenticate on an authenticated socket leaves its session as it was', async () => {
      const c = await t.connect(alice);
      const bad = await bob.authenticate();
      for (const signature of [
        { ...bad, sig: `0x${'00'.repeat(65)}` },
        { ...bad, payload: '0x09' },
        'x',
      ]) {
        expectWsError(await c.request({ type: 'authenticate', signature }), [4000, 4001]);
      }
      expect(await c.request({ type: 'subscribeAccountSummary' })).toMatchObject({
        type: 'accountSummary',
      });
      await c.close();
    });

    it('every message type with random hostile fields: exactly one reply, echoing the id, with a documented code', async () => {
      const c = await t.connect(alice);
      const order = await alice.sign('Order', limitOrder(true, px(60000), btc(0.01)));
      const types = [
        'placeOrder',
        'cancelOrder',
        'replaceOrder',
        'cancelAll',
        'claimLiquidation',
        'transferMargin',
        'subscribeTrading',
        'subscribeAccountSummary',
        'unsubscribeAccountSummary',
        'unsubscribeTrading',
        'ping',
      ];
      const fields = [
        'signature',
        'amount',
        'direction',
        'instrument',
        'fromSeq',
        'id2',
        'sig',
        'payload',
      ];
      let n = 0;
      await unchanged(async () => {
        await fc.assert(
          fc.asyncProperty(
            fc.constantFrom(...types),
            fc.dictionary(fc.constantFrom(...fields), hostileToken, { maxKeys: 3 }),
            async (type, extra) => {
              const id = `h${++n}`;
              const parts = Object.entries(extra).map(([k, v]) => `${JSON.stringify(k)}:${v}`);
              const text = `{"type":${JSON.stringify(type)},"id":"${id}"${parts.map((p) => `,${p}`).join('')}}`;
              c.ws.send(text);
              let valid = true;
              try {
                JSON.parse(text);
              } catch {
                valid = false;
              }
              // A text JSON.parse accepts may still be refused before its id is read (prototype keys).
              const m = await c.waitFor(
                (x) => x.id === id || (x.type === 'error' && x.id === undefined),
              );
              if (m.id === undefined) expect(valid ? m.message : 'JSON').toMatch(/JSON/);
              c.inbox.length = 0;
              if (m.type !== 'error') return; // benign messages (ping, subscribe...) may succeed
              expectWsError(m, [4000, 4001, 4002, 4004, 4030, 4031, 4032, 4033, 4034]);
            },
          ),
          fcOptions(150),
        );
      });
      expect((await c.request({ type: 'placeOrder', signature: order })).type).toBe('orderAck');
      await c.close();
    });

    it('a signature object without a string sig is malformed (4000) on every signed message, and spends nothing', async () => {
      const c = await t.connect(alice);
      const order = await alice.sign('Order', limitOrder(true, px(60000), btc(0.01)));
      await unchanged(async () => {
        for (const sig of [undefined, null, 7, ['0x']]) {
          for (const type of ['placeOrder', 'cancelOrder', 'cancelAll', 'transferMargin']) {
            const m = await c.request({ type, signature: { sig, payload: order.payload } });
            expectWsError(m, 4000, /signature\.sig must be a 0x-prefixed hex string/);
          }
        }
      });
      // The same payload, signed, is still fresh.
      expect((await c.request({ type: 'placeOrder', signature: order })).type).toBe('orderAck');
      await c.close();
    });

    it('random byte mutations of a signed order never pass and never consume its nonce', async () => {
      const order = await alice.sign('Order', limitOrder(true, px(60000), btc(0.01)));
      const bytes = (order.payload.length - 2) / 2;
      await unchanged(async () => {
        await fc.assert(
          fc.asyncProperty(
            fc.nat(bytes - 1),
            fc.integer({ min: 1, max: 255 }),
            fc.boolean(),
            async (at, xor, inSig) => {
              const src = inSig ? order.sig : order.payload;
              const i = 2 + 2 * Math.min(at, (src.length - 2) / 2 - 1);
              const old = Number.parseInt(src.slice(i, i + 2), 16);
              const b = old ^ xor;
              // v 27/28 and 0/1 are the same recovery bit: not a mutation.
              fc.pre(!(inSig && i === src.length - 2 && old - 27 === b));
              const mutated = `${src.slice(0, i)}${b.toString(16).padStart(2, '0')}${src.slice(i + 2)}`;
              const signature = inSig ? { ...order, sig: mutated } : { ...order, payload: mutated };
              const m = await aliceWs.request({ type: 'placeOrder', signature });
              expectWsError(m, [4000, 4001, 4030, 4031, 4032, 4034]);
            },
          ),
          fcOptions(60),
        );
      });
      expect((await aliceWs.request({ type: 'placeOrder', signature: order })).type).toBe(
        'orderAck',
      );
    });

    it('well-formed extremes (u64/u256 maxima, max market ids, huge fromSeq) get a documented code, never 5000', async () => {
      const MAX256 = 2n ** 256n - 1n;
      const MAX64 = 2n ** 64n - 1n;
      const MAX32 = 2 ** 32 - 1;
      const ff = `0x${'f'.repeat(32)}`;
      const nd = () => ({
        nonce: freshNonce(),
        deadline: BigInt(Math.floor(Date.now() / 1000) + 600),
      });
      const documented = [4000, 4002, 4030, 4031, 4032, 4034, 4040, 4041, 4100, 4101, 4102, 4103];
      const cases: readonly (readonly [
        string,
        string,
        Record<string, bigint | number | boolean | string>,
      ])[] = [
        ['placeOrder', 'Order', limitOrder(true, MAX256, MAX256, nd())],
        ['placeOrder', 'Order', limitOrder(true, px(60000), MAX256, nd())],
        [
          'placeOrder',
          'Order',
          limitOrder(false, px(60000), btc(0.01), { ...nd(), market: MAX32 }),
        ],
        [
          'placeOrder',
          'Order',
          limitOrder(true, px(60000), btc(0.01), { ...nd(), timeInForce: 1, expiry: MAX64 }),
        ],
        [
          'placeOrder',
          'Order',
          limitOrder(true, px(60000), btc(0.01), {
            ...nd(),
            orderType: 2,
            triggerPrice: MAX256,
            flags: 2,
          }),
        ],
        [
          'placeOrder',
          'Order',
          limitOrder(true, px(60000), btc(0.01), {
            ...nd(),
            orderType: 3,
            flags: 8,
            cloid: ff,
            parentCloid: ff,
          }),
        ],
        ['cancelOrder', 'Cancel', { market: MAX32, orderId: MAX64, ...nd() }],
        ['cancelOrder', 'Cancel', { market: 0, orderId: 0n, cloid: ff, ...nd() }],
        [
          'replaceOrder',
          'Replace',
          {
            market: 1,
            orderId: MAX64,
            price: MAX256,
            triggerPrice: MAX256,
            quantity: MAX256,
            ...nd(),
          },
        ],
        ['cancelAll', 'CancelAll', { market: MAX32, ...nd() }],
        [
          'claimLiquidation',
          'ClaimLiquidation',
          { auctionId: MAX64, quantity: MAX256, maxPrice: MAX256, ...nd() },
        ],
        [
          'claimLiquidation',
          'ClaimLiquidation',
          { auctionId: 0n, quantity: 0n, maxPrice: 0n, ...nd() },
        ],
      ];
      for (const [type, struct, fields] of cases) {
        const m = await aliceWs.request({ type, signature: await alice.sign(struct, fields) });
        if (m.type !== 'error') continue;
        expectWsError(m, documented);
      }
      const huge = (MAX256 / 1_000_000n).toString();
      const transfer = await aliceWs.request({
        type: 'transferMargin',
        amount: huge,
        direction: 'crossToIsolated',
        instrument: 'BTC-PERP',
        signature: await alice.sign('MarginTransfer', {
          amount: (MAX256 / 1_000_000n) * 1_000_000n,
          market: 1,
          flags: 0,
          ...nd(),
        }),
      });
      expect(transfer.type === 'error' ? documented : ['marginTransferred']).toContain(
        transfer.type === 'error' ? transfer.code : transfer.type,
      );
      for (const [struct, body] of [
        ['Withdrawal', { amount: huge, instrument: null, marginMode: 'Cross' }],
        ['MarginTransfer', { amount: huge, instrument: 'BTC-PERP', direction: 'crossToIsolated' }],
      ] as const) {
        const r = await post(
          struct === 'Withdrawal' ? '/margin/withdrawal' : '/margin/transfer',
          JSON.stringify({
            ...body,
            signature: await alice.sign(struct, {
              amount: (MAX256 / 1_000_000n) * 1_000_000n,
              market: struct === 'Withdrawal' ? 0 : 1,
              flags: 0,
              ...nd(),
            }),
          }),
        );
        // Above 2^64 - 1 micro-units an amount is input no token can back (reliability B6).
        expect(r.status, JSON.stringify(r.body)).toBe(400);
        expect(r.body.error).toMatch(
          /amount \d+ is above the largest amount, 18446744073709\.551615/,
        );
      }
      for (const leverage of [0, 1, MAX32]) {
        const r = await post(
          '/update_leverage',
          JSON.stringify({
            leverage,
            instrument: 'BTC-PERP',
            marginMode: 'Cross',
            signature: await alice.sign('UpdateLeverage', {
              market: 1,
              leverage,
              flags: 0,
              ...nd(),
            }),
          }),
        );
        expect(r.status, JSON.stringify(r.body)).toBeLessThan(500);
        if (r.status !== 200) expectRefusal(r, 400);
      }
      // fromSeq far beyond the stream, at the largest safe integer, and just past it.
      for (const fromSeq of [0, 1_000_000, Number.MAX_SAFE_INTEGER]) {
        const c = await t.connect(alice);
        const m = await c.request({ type: 'subscribeTrading', fromSeq });
        expect(m.type, JSON.stringify(m)).toBe('subscribeTradingSuccess');
        await c.close();
      }
      const c = await t.connect(alice);
      c.ws.send(`{"type":"subscribeTrading","id":"big","fromSeq":9007199254740993}`);
      expectWsError(await c.waitFor((m) => m.id === 'big'), 4000, /fromSeq/);
      await c.close();
    });

    it('a flood from one connection gets 4029 with retryAfterMs and survives; other clients are served meanwhile', async () => {
      const limited = await startTestVenue({
        config: config({ walletRequestsPerSecond: 20, publicReadsPerSecond: 100 }),
      });
      try {
        const dave = limited.wallet(3);
        const erin = limited.wallet(4);
        await limited.invite(dave);
        await limited.invite(erin);
        const flooder = await limited.connect(dave);
        const calm = await limited.connect(erin);
        const anon = await WsClient.connect(limited.venue.ws);
        const N = 400;
        for (let i = 0; i < N; i++) {
          flooder.ws.send(JSON.stringify({ type: 'ping', id: `f${i}` }));
          anon.ws.send(i % 2 === 0 ? 'garbage' : JSON.stringify({ type: 'ping', id: `a${i}` }));
        }
        // The calm client is answered promptly while the flood is being handled.
        const s = performance.now();
        expect((await calm.request({ type: 'ping' })).type).toBe('pong');
        expect(performance.now() - s).toBeLessThan(2_000);
        const replies = await Promise.all(
          Array.from({ length: N }, (_, i) => flooder.waitFor((m) => m.id === `f${i}`)),
        );
        const errors = replies.filter((m) => m.type === 'error');
        expect(errors.length).toBeGreaterThan(N / 2);
        for (const e of errors) {
          expectWsError(e, 4029, /RATE_LIMIT/);
          expect(e.retryAfterMs).toBeGreaterThan(0);
        }
        expect(flooder.closed).toBeNull();
        await new Promise((r) => setTimeout(r, 1_100));
        expect((await flooder.request({ type: 'ping' })).type).toBe('pong');
        // The anonymous flood is counted per address: 4029 too, and the socket survives.
        await anon.waitFor((m) => m.code === 4029);
        expect(anon.closed).toBeNull();
        await anon.close();
      } finally {
        await limited.close();
      }
    });
  });

  // ---- connections: caps, half-open, bad handshakes -----------------------------------------

  describe('connections', () => {
    it('failed WebSocket handshakes and abruptly dropped sockets give their per-address slot back', async () => {
      const v = await startTestVenue({ config: config() });
      try {
        const cap = DEFAULT_CONFIG.limits.connectionsPerIp;
        for (const path of ['/ws', '/marketdata']) {
          // Handshakes the server refuses (no key, bad version), more than the cap.
          for (let i = 0; i < cap + 5; i++) {
            const r = await rawHttp(v.venue.port, [
              `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n${i % 2 === 0 ? '' : 'Sec-WebSocket-Key: x\r\nSec-WebSocket-Version: 99\r\n'}\r\n`,
            ]);
            expect(r.status).toBe(400);
          }
          // Sockets dropped without a close frame.
          const dropped: WebSocket[] = [];
          for (let i = 0; i < cap; i++) {
            const s = new WebSocket(`ws://127.0.0.1:${v.venue.port}${path}`);
            await new Promise((r) => s.once('open', r));
            dropped.push(s);
          }
          for (const s of dropped) s.terminate();
          await new Promise((r) => setTimeout(r, 100));
          // The cap is whole again.
          const fresh: WebSocket[] = [];
          for (let i = 0; i < cap; i++) {
            const s = new WebSocket(`ws://127.0.0.1:${v.venue.port}${path}`);
            const outcome = await new Promise<string>((r) => {
              s.once('open', () => r('open'));
              s.once('unexpected-response', (_q, res) => r(String(res.statusCode)));
            });
            expect(outcome, `${path} connection ${i}`).toBe('open');
            fresh.push(s);
          }
          for (const s of fresh) s.close();
          await new Promise((r) => setTimeout(r, 100));
        }
      } finally {
        await v.close();
      }
    });

    it('a half-open WebSocket that never answers a ping is closed at the idle timeout', async () => {
      const v = await startTestVenue({
        config: config({ pingIntervalMs: 100, idleTimeoutMs: 400 }),
      });
      try {
        // Upgrade completed, then silence: the client neither reads nor pongs.
        const r = await rawHttp(
          v.venue.port,
          [
            'GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
          ],
          { waitMs: 3_000 },
        );
        expect(r.status).toBe(101);
        expect(r.closed).toBe(true);
        expect(r.ms).toBeLessThan(2_500);
        expect((await v.api('GET', '/time')).status).toBe(200);
      } finally {
        await v.close();
      }
    });
  });

  // ---- market-data WebSocket --------------------------------------------------------------

  describe('market-data WebSocket', () => {
    it('hostile messages are 4000 naming the problem; the socket stays usable', async () => {
      const c = await wsOpen(t.venue.marketdata);
      await unchanged(async () => {
        c.ws.send(Buffer.from([1, 2, 3]), { binary: true });
        expectWsError(await c.waitFor((m) => m.type === 'error'), 4000, /binary/);
        const cases: readonly (readonly [Record<string, unknown>, RegExp])[] = [
          [{ type: 'fly' }, /unknown message type/],
          [{ type: 'subscribe' }, /unknown channel/],
          [{ type: 'subscribe', channel: '__proto__' }, /unknown channel/],
          [{ type: 'subscribe', channel: 'ticker' }, /needs an instrument/],
          [{ type: 'subscribe', channel: 'ticker', instrument: 'NOPE' }, /unknown instrument/],
          [
            { type: 'subscribe', channel: 'ticker', instrument: 'constructor' },
            /unknown instrument/,
          ],
          [{ type: 'subscribe', channel: 'ticker', instrument: 5 }, /needs an instrument/],
          [{ type: 'subscribe', channel: 'orderbook', instrument: 'BTC-PERP', depth: 7 }, /depth/],
          [
            { type: 'subscribe', channel: 'orderbook', instrument: 'BTC-PERP', depth: '5' },
            /depth/,
          ],
          [
            { type: 'subscribe', channel: 'orderbook', instrument: 'BTC-PERP', depth: 1e308 },
            /depth/,
          ],
          [
            { type: 'subscribe', channel: 'candles', instrument: 'BTC-PERP', interval: '2m' },
            /interval/,
          ],
          [
            { type: 'subscribe', channel: 'candles', instrument: 'BTC-PERP', interval: ['1m'] },
            /interval/,
          ],
          [
            { type: 'subscribe', channel: 'liquidations', instrument: 'NOPE' },
            /unknown instrument/,
          ],
          // Without an interval an unsubscribe names every interval; a subscribe needs one.
          [{ type: 'subscribe', channel: 'candles', instrument: 'BTC-PERP' }, /interval/],
          [
            { type: 'unsubscribe', channel: 'candles', instrument: 'BTC-PERP', interval: '2m' },
            /interval/,
          ],
        ];
        let n = 0;
        for (const [msg, pattern] of cases) {
          const id = `m${++n}`;
          c.ws.send(JSON.stringify({ ...msg, id }));
          expectWsError(await c.waitFor((m) => m.id === id), 4000, pattern);
        }
        for (const text of [
          'x',
          '',
          '[]',
          '{"type":"subscribe","channel":{"a":{"b":1}}}',
          '{"__proto__":1}',
          '{"type":"ping","id":5}',
        ]) {
          c.inbox.length = 0;
          c.ws.send(text);
          expectWsError(await c.waitFor((m) => m.type === 'error'), 4000);
        }
        await fc.assert(
          fc.asyncProperty(
            fc.dictionary(
              fc.constantFrom('type', 'channel', 'instrument', 'depth', 'interval'),
              hostileToken.filter((x) => x.length < 1_000),
              { maxKeys: 4 },
            ),
            async (fields) => {
              const id = `p${++n}`;
              const text = `{"id":"${id}"${Object.entries(fields)
                .map(([k, v]) => `,${JSON.stringify(k)}:${v}`)
                .join('')}}`;
              c.inbox.length = 0;
              c.ws.send(text);
              const m = await c.waitFor(
                (x) => x.id === id || (x.type === 'error' && x.id === undefined),
              );
              if (m.type === 'error') expectWsError(m, 4000);
            },
          ),
          fcOptions(80),
        );
      });
      c.ws.send(JSON.stringify({ type: 'ping', id: 'last' }));
      expect((await c.waitFor((m) => m.id === 'last')).type).toBe('pong');
      // A frame over the market-data limit (4 KiB) closes with 1009.
      c.ws.send(JSON.stringify({ type: 'ping', pad: 'x'.repeat(8_192) }));
      expect(await closedWith(c.ws)).toBe(1009);
    });
  });
});

describe('floods and storms with the default limits', () => {
  it('a market-data flood gets 4029 and the socket survives; a storm of garbage from many sockets does not delay a normal client', async () => {
    const v = await startTestVenue({
      config: {
        ...DEFAULT_CONFIG,
        limits: { ...DEFAULT_CONFIG.limits, requestTimeoutMs: REQUEST_TIMEOUT_MS },
      },
    });
    try {
      const w = v.wallet(0);
      await v.invite(w);
      const calm = await v.connect(w);
      const md = await WsClient.connect(v.venue.marketdata);
      for (let i = 0; i < 300; i++) md.ws.send(JSON.stringify({ type: 'ping', id: `p${i}` }));
      const limited = await md.waitFor((m) => m.type === 'error' && m.code === 4029);
      expectWsError(limited, 4029);
      expect(md.closed).toBeNull();
      // The storm: 20 sockets of garbage frames and 100 malformed HTTP requests at once.
      const storm: Promise<unknown>[] = [];
      const sockets: WsClient[] = [];
      for (let i = 0; i < 20; i++) {
        const g = await WsClient.connect(v.venue.ws);
        sockets.push(g);
        for (let j = 0; j < 100; j++)
          g.ws.send(j % 3 === 0 ? Buffer.from([0xde, 0xad]) : `{"type":"${'x'.repeat(j)}"`, {
            binary: j % 3 === 0,
          });
      }
      for (let i = 0; i < 100; i++) {
        storm.push(
          fetch(`${v.rest}/margin/withdrawal`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: `{"amount":${'['.repeat(i)}`,
          }).then((r) => r.status),
        );
      }
      const s = performance.now();
      expect((await calm.request({ type: 'ping' })).type).toBe('pong');
      // Another address (the flood spent 127.0.0.1's public-read budget, as it should).
      expect(
        await getFrom('127.0.0.2', v.venue.port, `/api/account_summary?wallet=${w.address}`),
      ).toBe(200);
      expect(performance.now() - s).toBeLessThan(3_000);
      const statuses = await Promise.all(storm);
      expect(new Set(statuses.map((x) => (x === 429 ? 400 : x)))).toEqual(new Set([400]));
      for (const g of sockets) {
        expect(g.closed).toBeNull();
        await g.close();
      }
      await md.close();
    } finally {
      await v.close();
    }
  });
});

// ---- nonce and deadline windows on a manual clock --------------------------------------------

describe('window edges on a manual clock', () => {
  it('nonces at exactly +-5 minutes are accepted, one ms beyond is 4002; deadlines at now and now+1h', async () => {
    const start = Math.ceil(Date.now() / 1000) * 1000;
    const clock = new ManualClock(start);
    const v = await startTestVenue({ config: config(), clock });
    try {
      const w = v.wallet(0);
      await v.invite(w);
      const ws = await v.connect(w);
      const T = clock.now();
      const lev = async (nonce: bigint, deadline: bigint) =>
        postLeverage(v, {
          leverage: 1000,
          instrument: 'BTC-PERP',
          marginMode: 'Cross',
          signature: await w.sign('UpdateLeverage', {
            market: 1,
            leverage: 1000,
            flags: 0,
            nonce,
            deadline,
          }),
        });
      const far = BigInt(T / 1000 + 600);
      const before = await v.stateHash();
      expectRefusal(await lev(BigInt(T - 300_001), far), 400, /INVALID_NONCE/);
      expectRefusal(await lev(BigInt(T + 300_001), far), 400, /INVALID_NONCE/);
      expectRefusal(await lev(BigInt(T - 1), BigInt(T / 1000)), 400, /deadline passed/);
      expectRefusal(
        await lev(BigInt(T - 2), BigInt(T / 1000 + 3601)),
        400,
        /deadline (too far|.* more than 1 hour ahead)/,
      );
      expect(await v.stateHash()).toEqual(before);
      for (const [nonce, deadline] of [
        [BigInt(T - 300_000), far],
        [BigInt(T + 300_000), far],
        [BigInt(T - 3), BigInt(T / 1000 + 1)],
        [BigInt(T - 4), BigInt(T / 1000 + 3600)],
      ] as const) {
        const r = await lev(nonce, deadline);
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        // A replay of the accepted edge is refused.
        expectRefusal(await lev(nonce, deadline), 400, /INVALID_NONCE: replayed/);
      }
      // The same edges on the socket's authenticate.
      // The same edges on the socket's authenticate (another wallet: nonces are per wallet).
      const w2 = v.wallet(1);
      await v.invite(w2);
      const c = await WsClient.connect(v.venue.ws);
      for (const n of [T - 300_001, T + 300_001]) {
        expectWsError(
          await c.request({ type: 'authenticate', signature: await w2.authenticate(BigInt(n)) }),
          4002,
        );
      }
      for (const n of [T - 300_000, T + 300_000]) {
        const r = await c.request({
          type: 'authenticate',
          signature: await w2.authenticate(BigInt(n)),
        });
        expect(r.type).toBe('authenticateSuccess');
      }
      await c.close();
      await ws.close();
    } finally {
      await v.close();
    }
  });
});

function postLeverage(v: TestVenue, body: unknown) {
  return v.api('POST', '/update_leverage', body);
}
