/**
 * Focused regressions for defects found by hostile-input.e2e.test.ts, one per fix: each failed
 * before its fix and names the rule it holds the venue to.
 */
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { DEFAULT_CONFIG } from '../src/config.js';
import { freshNonce, http, WsClient } from './support/client.js';
import { startTestVenue } from './support/fixture.js';

/** Writes `text` on a fresh TCP connection; resolves with what the server wrote before closing. */
function raw(port: number, text: string, waitMs = 2_000): Promise<string> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    let out = '';
    const t = setTimeout(() => s.destroy(), waitMs);
    s.on('data', (d) => {
      out += d.toString('latin1');
    });
    s.on('close', () => {
      clearTimeout(t);
      resolve(out);
    });
    s.on('error', () => {});
    s.write(text);
  });
}

describe('trading socket: a refused handshake gives its per-address slot back', () => {
  it('more refused handshakes than the cap still leave room for real connections', async () => {
    const t = await startTestVenue();
    try {
      const cap = DEFAULT_CONFIG.limits.connectionsPerIp;
      for (let i = 0; i <= cap; i++) {
        // No Sec-WebSocket-Key: the WebSocket server refuses with 400 and never opens a session.
        const answer = await raw(
          t.venue.port,
          'GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n',
        );
        expect(answer).toMatch(/^HTTP\/1\.1 400/);
      }
      const ws = new WebSocket(t.venue.ws);
      const outcome = await new Promise<string>((resolve) => {
        ws.once('open', () => resolve('open'));
        ws.once('unexpected-response', (_req, res) => resolve(String(res.statusCode)));
      });
      expect(outcome).toBe('open');
      ws.close();
    } finally {
      await t.close();
    }
  });
});

describe('HTTP: a request that never completes is answered 408 at the request timeout', () => {
  it('silent body, trickling body, endless headers and a silent connection each get 408 {error} and a close', async () => {
    const requestTimeoutMs = 1_000;
    const t = await startTestVenue({
      config: { ...DEFAULT_CONFIG, limits: { ...DEFAULT_CONFIG.limits, requestTimeoutMs } },
    });
    try {
      const head =
        'POST /api/margin/withdrawal HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n';
      /** Sends `first`, then `trickle` one byte every 200 ms; resolves with the answer and its time. */
      const slow = (first: string, trickle = '') =>
        new Promise<{ text: string; ms: number }>((resolve) => {
          const started = performance.now();
          const s = connect(t.venue.port, '127.0.0.1');
          let text = '';
          let i = 0;
          const drip = setInterval(() => {
            if (i < trickle.length && !s.destroyed) s.write(trickle[i++]!);
          }, 200);
          const stop = setTimeout(() => s.destroy(), requestTimeoutMs + 4_000);
          s.on('data', (d) => {
            text += d.toString('utf8');
          });
          s.on('error', () => {});
          s.on('close', () => {
            clearInterval(drip);
            clearTimeout(stop);
            resolve({ text, ms: performance.now() - started });
          });
          if (first !== '') s.write(first);
        });
      const socket = await WsClient.connect(t.venue.ws);
      const answers = await Promise.all([
        slow(`${head}{"amount":`),
        slow(head, ' '.repeat(40)),
        slow('GET /api/time HTTP/1.1\r\n', 'X'.repeat(40)),
        slow(''),
      ]);
      for (const a of answers) {
        expect(a.text).toMatch(/^HTTP\/1\.1 408 /);
        const body = JSON.parse(a.text.slice(a.text.indexOf('\r\n\r\n') + 4)) as { error: string };
        expect(body.error).toMatch(/^request timeout: /);
        // Closed at the timeout (checked on a sub-second tick), not at a 30 s sweep or never.
        expect(a.ms).toBeGreaterThan(requestTimeoutMs - 50);
        expect(a.ms).toBeLessThan(requestTimeoutMs + 1_500);
      }
      // An upgraded WebSocket is not an HTTP request: it outlives the request timeout.
      expect((await socket.request({ type: 'ping' })).type).toBe('pong');
      await socket.close();
    } finally {
      await t.close();
    }
  });

  it('an over-long header block and bytes that are not HTTP are 400 {error}, not a bare close', async () => {
    const t = await startTestVenue();
    try {
      const long = await raw(
        t.venue.port,
        `GET /api/time?x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
      );
      expect(long).toMatch(/^HTTP\/1\.1 400 /);
      expect(JSON.parse(long.slice(long.indexOf('\r\n\r\n') + 4)).error).toMatch(/headers exceed/);
      const garbage = await raw(t.venue.port, '\u0000\u0001 GARBAGE\r\n\r\n');
      expect(garbage).toMatch(/^HTTP\/1\.1 400 /);
      expect(JSON.parse(garbage.slice(garbage.indexOf('\r\n\r\n') + 4)).error).toMatch(
        /malformed HTTP/,
      );
    } finally {
      await t.close();
    }
  });
});

describe("HTTP: refusals made by the router answer the venue's {error} naming the check", () => {
  it('bad percent-encoding and an over-long path parameter are 400; an unknown route is 404 naming it', async () => {
    const t = await startTestVenue();
    try {
      const bad = await raw(
        t.venue.port,
        'GET /api/user/access-status/%E0%A4%A HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      );
      expect(bad).toMatch(/^HTTP\/1\.1 400 /);
      expect(JSON.parse(bad.slice(bad.indexOf('\r\n\r\n') + 4))).toEqual({
        error: "bad request: '/api/user/access-status/%E0%A4%A' is not a valid url component",
      });
      const long = await fetch(`${t.rest}/user/access-status/0x${'a'.repeat(400)}`);
      expect(long.status).toBe(400);
      expect(await long.json()).toEqual({
        error: 'bad request: a path parameter is longer than 100 characters',
      });
      const none = await fetch(`${t.rest}/margin/withdrawal?x=1`, { method: 'PUT' });
      expect(none.status).toBe(404);
      expect(await none.json()).toEqual({
        error: 'not found: no route PUT /api/margin/withdrawal',
      });
    } finally {
      await t.close();
    }
  });
});

describe('history reads: malformed orderId and cloid filters are 400, not an empty page', () => {
  it('orderId must be a u64 decimal, cloid 0x and 32 hex digits', async () => {
    const t = await startTestVenue();
    try {
      const w = `0x${'1'.repeat(40)}`;
      for (const path of ['/historic/orders', '/account/trades']) {
        for (const orderId of ['abc', '-1', '01', '1e3', '18446744073709551616', ' 1']) {
          const r = await t.api(
            'GET',
            `${path}?wallet=${w}&orderId=${encodeURIComponent(orderId)}`,
          );
          expect(r, orderId).toMatchObject({
            status: 400,
            body: { error: 'orderId must be a u64 decimal string' },
          });
        }
        for (const cloid of [
          'xyz',
          `0x${'0'.repeat(31)}`,
          `0x${'0'.repeat(33)}`,
          `${'0'.repeat(34)}`,
        ]) {
          const r = await t.api('GET', `${path}?wallet=${w}&cloid=${cloid}`);
          expect(r, cloid).toMatchObject({
            status: 400,
            body: { error: 'cloid must be 0x and 32 hex digits' },
          });
        }
        for (const q of [
          'orderId=0',
          'orderId=18446744073709551615',
          `cloid=0x${'A'.repeat(32)}`,
        ]) {
          expect((await t.api('GET', `${path}?wallet=${w}&${q}`)).status, q).toBe(200);
        }
      }
    } finally {
      await t.close();
    }
  });
});

describe('signed requests: a signature that is not a {sig, payload} object is refused naming its field', () => {
  it('an array signature on REST and WS, and a bad depositSignature', async () => {
    const t = await startTestVenue();
    try {
      const w = t.wallet(0);
      await t.invite(w);
      const sig = await w.sign('Withdrawal', { amount: 1_000_000n, market: 0, flags: 0 });
      const r = await t.api('POST', '/margin/withdrawal', {
        amount: '1',
        instrument: null,
        marginMode: 'Cross',
        signature: [sig.sig, sig.payload],
      });
      expect(r).toMatchObject({
        status: 400,
        body: { error: 'INVALID_REQUEST: signature must be an object { sig, payload }' },
      });
      const ws = await t.connect(w);
      const m = await ws.request({ type: 'placeOrder', signature: [sig.sig, sig.payload] });
      expect(m).toMatchObject({
        code: 4000,
        message: 'INVALID_REQUEST: signature must be an object { sig, payload }',
      });
      const permit = await w.sign('Permit', {
        spender: t.net.vault.address,
        value: 1_000_000n,
        nonce: 0n,
        deadline: BigInt(Math.floor(Date.now() / 1000) + 600),
      });
      const d = await t.api('POST', '/margin/deposit', {
        amount: '1',
        instrument: null,
        marginMode: 'Cross',
        permitSignature: permit,
        depositSignature: 'x',
      });
      expect(d).toMatchObject({
        status: 400,
        body: { error: 'INVALID_REQUEST: depositSignature must be an object { sig, payload }' },
      });
      await ws.close();
    } finally {
      await t.close();
    }
  });
});

describe('a deposit names which of its two signature objects failed', () => {
  it("the permit's payload errors say permit:, the deposit's payload and signature errors deposit:; nothing is spent", async () => {
    const t = await startTestVenue();
    try {
      const w = t.wallet(0);
      const other = t.wallet(1);
      await t.invite(w);
      await t.admin('POST', '/admin/faucet', { wallet: w.address, amount: '1' });
      const deadline = BigInt(Math.floor(Date.now() / 1000) + 600);
      const permit = await w.sign('Permit', {
        spender: t.net.vault.address,
        value: 1_000_000n,
        nonce: 0n,
        deadline,
      });
      const deposit = await w.sign('Deposit', {
        amount: 1_000_000n,
        market: 0,
        flags: 0,
        nonce: freshNonce(),
        deadline,
      });
      const post = (permitSignature: unknown, depositSignature: unknown) =>
        t.api('POST', '/margin/deposit', {
          amount: '1',
          instrument: null,
          marginMode: 'Cross',
          permitSignature,
          depositSignature,
        });
      const before = await t.stateHash();
      const cases: readonly (readonly [unknown, unknown, RegExp])[] = [
        // The permit's payload: its form, its discriminator.
        [
          { ...permit, payload: `0X${permit.payload.slice(2)}` },
          deposit,
          /^permit: INVALID_REQUEST: payload/,
        ],
        [
          { sig: permit.payload, payload: permit.sig },
          deposit,
          /^permit: INVALID_REQUEST: .*discriminator/,
        ],
        [
          { ...permit, payload: `${permit.payload}00` },
          deposit,
          /^permit: INVALID_REQUEST: .*length/,
        ],
        // The deposit's payload, its signature's form, and a signature by another wallet.
        [
          permit,
          { ...deposit, payload: `0X${deposit.payload.slice(2)}` },
          /^deposit: INVALID_REQUEST: payload/,
        ],
        [
          permit,
          { sig: deposit.payload, payload: deposit.sig },
          /^deposit: INVALID_REQUEST: .*discriminator/,
        ],
        [permit, { ...deposit, sig: deposit.sig.slice(0, -2) }, /^deposit: INVALID_SIGNATURE: /],
        [
          permit,
          {
            ...deposit,
            sig: (
              await other.sign('Deposit', {
                owner: w.address,
                amount: 1_000_000n,
                nonce: freshNonce(),
                deadline,
              })
            ).sig,
          },
          /^deposit: INVALID_SIGNATURE: signer 0x[0-9a-f]{40} does not match/,
        ],
      ];
      for (const [p, d, pattern] of cases) {
        const r = await post(p, d);
        expect(r.status, JSON.stringify(r.body)).toBe(400);
        expect(String(r.body.error)).toMatch(pattern);
      }
      expect(await t.stateHash()).toEqual(before);
      // Neither nonce was spent: the untouched deposit goes through.
      const ok = await post(permit, deposit);
      expect(ok.body, JSON.stringify(ok.body)).toMatchObject({ status: 'Submitted' });
    } finally {
      await t.close();
    }
  });
});

describe('signed REST writes: an unknown instrument is named in at most 64 characters', () => {
  it('a 50,000-character instrument is not echoed whole (the trading socket bounds it too)', async () => {
    const t = await startTestVenue();
    try {
      const w = t.wallet(0);
      await t.invite(w);
      const huge = `Z${'\u202e'.repeat(10)}${'Z'.repeat(50_000)}`;
      const deadline = BigInt(Math.floor(Date.now() / 1000) + 600);
      const sign = (name: string, fields: Record<string, bigint | number>) =>
        w.sign(name, { ...fields, nonce: freshNonce(), deadline });
      const before = await t.stateHash();
      const answers = [
        await t.api('POST', '/update_leverage', {
          leverage: 1000,
          instrument: huge,
          marginMode: 'Cross',
          signature: await sign('UpdateLeverage', { market: 1, leverage: 1000, flags: 0 }),
        }),
        await t.api('POST', '/margin/transfer', {
          amount: '1',
          instrument: huge,
          direction: 'crossToIsolated',
          signature: await sign('MarginTransfer', { amount: 1_000_000n, market: 1, flags: 0 }),
        }),
        await t.api('POST', '/margin/withdrawal', {
          amount: '1',
          instrument: huge,
          marginMode: 'Isolated',
          signature: await sign('Withdrawal', { amount: 1_000_000n, market: 1, flags: 1 }),
        }),
      ];
      for (const r of answers) {
        expect(r.status).toBe(400);
        expect(String(r.body.error)).toMatch(/^INVALID_REQUEST: unknown instrument Z/);
        expect(String(r.body.error).length).toBeLessThan(120);
      }
      expect(await t.stateHash()).toEqual(before);
    } finally {
      await t.close();
    }
  });
});

describe('admin: instrument settings of the wrong JSON type are 400 naming the field, never 500', () => {
  it('marginTiers, a tier, funding and liquidation fields and the numeric fields', async () => {
    const t = await startTestVenue();
    try {
      const base = {
        id: 77,
        symbol: 'HOST-PERP',
        tickSize: '0.5',
        lotSize: '0.0001',
        quantityDecimals: 4,
        maxLeverage: 20,
        openInterestCap: '100',
      };
      const before = await t.stateHash();
      const cases: readonly (readonly [Record<string, unknown>, string])[] = [
        [{ marginTiers: 'x' }, 'marginTiers must be an array of { notionalFloor, maxLeverage }'],
        [{ marginTiers: {} }, 'marginTiers must be an array of { notionalFloor, maxLeverage }'],
        [
          { marginTiers: [null] },
          'marginTiers[0] must be an object { notionalFloor, maxLeverage }',
        ],
        [
          { marginTiers: [{ notionalFloor: 1, maxLeverage: 10 }] },
          'marginTiers[0].notionalFloor must be a string',
        ],
        [
          { marginTiers: [{ notionalFloor: '1', maxLeverage: '10' }] },
          'marginTiers[0].maxLeverage must be a number',
        ],
        [{ funding: 'x' }, 'funding must be an object'],
        [{ funding: { intervalMs: '3600000' } }, 'funding.intervalMs must be a number'],
        [{ liquidation: [] }, 'liquidation must be an object'],
        [{ liquidation: { feeRate: 0.01 } }, 'liquidation.feeRate must be a string'],
        [{ maxLeverage: '20' }, 'maxLeverage must be a number'],
        [{ maxLeverage: [20] }, 'maxLeverage must be a number'],
        [{ defaultLeverage: true }, 'defaultLeverage must be a number'],
        [{ tickSize: 0.5 }, 'tickSize must be a string'],
      ];
      for (const [extra, error] of cases) {
        const r = await t.admin('POST', '/admin/instruments', { ...base, ...extra });
        expect(r, JSON.stringify(extra)).toMatchObject({ status: 400, body: { error } });
      }
      expect(await t.stateHash()).toEqual(before);
      expect((await t.admin('POST', '/admin/instruments', base)).status).toBe(200);
    } finally {
      await t.close();
    }
  });
});

describe('an instrument given as a JSON object with its own toString is a 4000/400, not a 5000/500', () => {
  it('placeOrder on the socket and funding/settle on the admin surface', async () => {
    const t = await startTestVenue();
    try {
      const w = t.wallet(0);
      await t.invite(w);
      const ws = await t.connect(w);
      const order = await w.sign('Order', {
        market: 1,
        isBuy: true,
        orderType: 0,
        timeInForce: 0,
        price: 60_000n * 10n ** 18n,
        triggerPrice: 0n,
        quantity: 100n,
        flags: 0,
        expiry: 0n,
        nonce: BigInt(Date.now()),
        deadline: BigInt(Math.floor(Date.now() / 1000) + 600),
      });
      ws.ws.send(
        `{"type":"placeOrder","id":"x","instrument":{"toString":1},"signature":${JSON.stringify(order)}}`,
      );
      const m = await ws.waitFor((r) => r.id === 'x');
      expect(m).toMatchObject({
        type: 'error',
        code: 4000,
        message: 'INVALID_REQUEST: instrument {"toString":1} does not name the signed market 1',
      });
      const r = await t.admin('POST', '/admin/funding/settle', '{"instrument":{"toString":1}}');
      expect(r).toMatchObject({
        status: 400,
        body: { error: 'instrument must be a symbol string such as BTC-PERP, not {"toString":1}' },
      });
      // A number is malformed too (it was 404 "unknown instrument 5"); an unknown symbol is 404.
      expect(await t.admin('POST', '/admin/funding/settle', '{"instrument":5}')).toMatchObject({
        status: 400,
        body: { error: 'instrument must be a symbol string such as BTC-PERP, not 5' },
      });
      expect(
        await t.admin('POST', '/admin/funding/settle', '{"instrument":"NOPE-PERP"}'),
      ).toMatchObject({ status: 404, body: { error: 'unknown instrument NOPE-PERP' } });
      await ws.close();
    } finally {
      await t.close();
    }
  });
});

describe('requests that leave HTTP (CONNECT, an upgrade to an unknown path) get a 404 {error}', () => {
  it('answers instead of a bare close or an empty 404', async () => {
    const t = await startTestVenue();
    try {
      const body = (text: string) => JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
      const connectAnswer = await raw(
        t.venue.port,
        'CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: x\r\n\r\n',
      );
      expect(connectAnswer).toMatch(/^HTTP\/1\.1 404 /);
      expect(body(connectAnswer)).toEqual({ error: 'not found: no route CONNECT 127.0.0.1:1' });
      const upgrade = await raw(
        t.venue.port,
        'GET /api/time HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
      );
      expect(upgrade).toMatch(/^HTTP\/1\.1 404 /);
      expect(body(upgrade)).toEqual({
        error: 'not found: no WebSocket at /api/time (the venue serves /ws and /marketdata)',
      });
    } finally {
      await t.close();
    }
  });

  it("counts an upgrade to an unknown path against the address's budget, as a missing route", async () => {
    const t = await startTestVenue({
      config: { ...DEFAULT_CONFIG, limits: { ...DEFAULT_CONFIG.limits, publicReadsPerSecond: 3 } },
    });
    try {
      const upgrade = () =>
        raw(
          t.venue.port,
          'GET /nope HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
        );
      const answers = await Promise.all(Array.from({ length: 5 }, upgrade));
      const statuses = answers.map((a) => a.slice(9, 12));
      // At most the budget (3, less what the fixture's start-up read took) is answered 404.
      expect(statuses.filter((s) => s === '404').length).toBeGreaterThan(0);
      expect(statuses.filter((s) => s === '429').length).toBeGreaterThanOrEqual(2);
      expect(statuses.every((s) => s === '404' || s === '429')).toBe(true);
      expect(answers.find((a) => a.startsWith('HTTP/1.1 429'))).toMatch(/\r\nRetry-After: 1\r\n/);
      // The budget is the address's: its plain reads are refused now too.
      expect((await http('GET', `${t.rest}/time`)).status).toBe(429);
    } finally {
      await t.close();
    }
  });
});

describe('a WebSocket upgrade over the per-address connection cap', () => {
  it('is answered 429 with Retry-After on both paths (a slot frees when a socket closes)', async () => {
    const t = await startTestVenue({
      config: { ...DEFAULT_CONFIG, limits: { ...DEFAULT_CONFIG.limits, connectionsPerIp: 1 } },
    });
    const held = await WsClient.connect(t.venue.ws);
    try {
      const upgrade = (path: string) =>
        raw(
          t.venue.port,
          `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
        );
      for (const path of ['/ws', '/marketdata']) {
        const answer = await upgrade(path);
        expect(answer).toMatch(/^HTTP\/1\.1 429 /);
        expect(answer).toMatch(/\r\nRetry-After: 1\r\n/);
      }
    } finally {
      await held.close();
      await t.close();
    }
  });
});
