/**
 * Every error of the spec's tables that the service can produce, provoked over real sockets,
 * with the exact code or status, and the rule of what a refusal may change: bad input (malformed,
 * badly signed, outside the window) changes nothing at all, not even a nonce; a well-signed
 * request refused for a business reason consumes its nonce and nothing else.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { DEFAULT_CONFIG } from '../src/index.js';
import { freshNonce, type Msg, Wallet, WsClient } from './support/client.js';
import { btc, cloid, limitOrder, px, startTestVenue, type TestVenue } from './support/fixture.js';

/** The secp256k1 group order. */
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

/** The same signature with `s` replaced by `n - s` (and `v` flipped): valid ECDSA, high-s. */
function highS(sig: string): string {
  const r = sig.slice(2, 66);
  const s = BigInt(`0x${sig.slice(66, 130)}`);
  const v = Number.parseInt(sig.slice(130, 132), 16);
  return `0x${r}${(N - s).toString(16).padStart(64, '0')}${(v === 27 ? 28 : 27).toString(16)}`;
}

describe('error rows', () => {
  let t: TestVenue;
  let alice: Wallet;
  let bob: Wallet;
  let carol: Wallet; // never invited
  let dave: Wallet; // invited, never opened an account
  let ws: WsClient;
  let bobWs: WsClient;

  /** Runs `fn` and asserts the engine state (hash and journal) did not move. */
  async function unchanged<T>(fn: () => Promise<T>): Promise<T> {
    const before = await t.stateHash();
    const out = await fn();
    await new Promise((r) => setTimeout(r, 20));
    expect(await t.stateHash()).toEqual(before);
    return out;
  }
  /**
   * Alice's account as the public reads show it: balances, positions and working orders. (A
   * refused order still leaves its `OrderRejected` report and a `Rejected` history row, as FIX
   * venues do; it never rests, fills or holds margin.)
   */
  const aliceView = async () => {
    const s = await t.api('GET', `/account_summary?wallet=${alice.address}`);
    const h = await t.api('GET', `/historic/orders?wallet=${alice.address}&status=open`);
    return { summary: { ...s.body, time: 0 }, orders: h.body };
  };
  /** Asserts a business refusal consumed the nonce and nothing else: a resend is 4002. */
  async function onlyNonce(
    signature: { sig: string; payload: string },
    send: () => Promise<Msg>,
  ): Promise<void> {
    const again = await send();
    expect(again).toMatchObject({ type: 'error', code: 4002 });
    expect(String(again.message)).toMatch(/replayed/);
    void signature;
  }
  const order = (w: Wallet, fields: Record<string, bigint | number | boolean | string>) =>
    w.sign('Order', fields);

  beforeAll(async () => {
    // Rate limits have their own tests below; here they would only pace the suite.
    t = await startTestVenue({
      config: {
        ...DEFAULT_CONFIG,
        limits: {
          ...DEFAULT_CONFIG.limits,
          walletRequestsPerSecond: 100_000,
          publicReadsPerSecond: 100_000,
        },
      },
    });
    alice = t.wallet(0);
    bob = t.wallet(1);
    carol = t.wallet(2);
    dave = t.wallet(3);
    await t.oracle({ 'BTC-PERP': '65000' });
    for (const w of [alice, bob, dave]) await t.invite(w);
    await t.fund(alice, '10000');
    await t.fund(bob, '10000');
    ws = await t.connect(alice);
    bobWs = await t.connect(bob);
    await ws.request({ type: 'subscribeTrading' });
  });
  afterAll(async () => t.close());

  describe('4000 INVALID_REQUEST', () => {
    it('malformed JSON, unknown types and wrong payload kinds change nothing and keep the socket', async () => {
      await unchanged(async () => {
        ws.ws.send('{"type":"placeOrder",');
        const bad = await ws.waitFor(
          (m) => m.type === 'error' && String(m.message).includes('JSON'),
        );
        expect(bad.code).toBe(4000);
        expect((await ws.request({ type: 'fly' })).code).toBe(4000);
        const cancelAsOrder = await alice.sign('Cancel', {
          market: 1,
          orderId: 1n,
          nonce: freshNonce(),
          deadline: Wallet.deadline(),
        });
        const r = await ws.request({ type: 'placeOrder', signature: cancelAsOrder });
        expect(r).toMatchObject({ type: 'error', code: 4000 });
        const proto = await ws.request({
          type: 'placeOrder',
          signature: { sig: '0x', payload: '0x01' },
          __proto__: { x: 1 },
        });
        expect(proto.code).toBe(4000);
      });
      expect((await ws.request({ type: 'ping' })).type).toBe('pong');
    });

    it('a reduce-only order without a position consumes only its nonce', async () => {
      const before = await aliceView();
      const sig = await order(alice, limitOrder(false, px(65000), btc(0.01), { flags: 2 }));
      const r = await ws.request({ type: 'placeOrder', signature: sig });
      expect(r).toMatchObject({ type: 'error', code: 4000 });
      expect(String(r.message)).toContain('requires an open position');
      expect(await aliceView()).toEqual(before);
      await onlyNonce(sig, () => ws.request({ type: 'placeOrder', signature: sig }));
    });

    it('a crossing post-only order is refused with an OrderRejected report (PostOnly)', async () => {
      const maker = await bobWs.request({
        type: 'placeOrder',
        signature: await order(bob, limitOrder(false, px(66000), btc(0.01))),
      });
      expect(maker.type).toBe('orderAck');
      const r = await ws.request({
        type: 'placeOrder',
        signature: await order(alice, limitOrder(true, px(66000), btc(0.01), { flags: 4 })),
      });
      expect(r).toMatchObject({ type: 'error', code: 4000 });
      const report = await ws.waitFor(
        (m) => m.kind === 'OrderRejected' && (m.order as { postOnly: boolean }).postOnly,
      );
      expect(report.order).toMatchObject({
        ordStatus: 'Rejected',
        reason: 'PostOnly',
        cumQty: '0',
      });
      expect(report.code).toBe(4000);
    });

    it('a duplicate live cloid names the existing order', async () => {
      const first = await ws.request({
        type: 'placeOrder',
        signature: await order(alice, limitOrder(true, px(60000), btc(0.01), { cloid: cloid(77) })),
      });
      expect(first.type).toBe('orderAck');
      const dup = await ws.request({
        type: 'placeOrder',
        signature: await order(alice, limitOrder(true, px(60500), btc(0.01), { cloid: cloid(77) })),
      });
      expect(dup).toMatchObject({ type: 'error', code: 4000 });
      expect(String(dup.message)).toContain(
        `already used by order ${(first.order as { orderId: string }).orderId}`,
      );
    });

    it('a deadline more than an hour ahead is refused before any work', async () => {
      await unchanged(async () => {
        const far = BigInt(Math.floor(Date.now() / 1000) + 7200);
        const r = await ws.request({
          type: 'placeOrder',
          signature: await order(alice, limitOrder(true, px(60000), btc(0.01), { deadline: far })),
        });
        expect(r).toMatchObject({ type: 'error', code: 4000 });
      });
    });
  });

  describe('4001 INVALID_SIGNATURE', () => {
    it('a struct for one wallet signed by another, a high-s and a 64-byte signature change nothing', async () => {
      await unchanged(async () => {
        const forged = await bob.sign('Order', {
          ...limitOrder(true, px(60000), btc(0.01)),
          account: alice.address,
        });
        expect(await ws.request({ type: 'placeOrder', signature: forged })).toMatchObject({
          type: 'error',
          code: 4001,
        });
        const good = await order(alice, limitOrder(true, px(60000), btc(0.01)));
        expect(
          await ws.request({ type: 'placeOrder', signature: { ...good, sig: highS(good.sig) } }),
        ).toMatchObject({ code: 4001 });
        expect(
          await ws.request({
            type: 'placeOrder',
            signature: { ...good, sig: good.sig.slice(0, 130) },
          }),
        ).toMatchObject({ code: 4001 });
        // Nothing was consumed: the good signature still works afterwards (checked below).
        return good;
      }).then(async (good) => {
        expect((await ws.request({ type: 'placeOrder', signature: good })).type).toBe('orderAck');
      });
    });

    it('a bad signature on a REST write is 400', async () => {
      await unchanged(async () => {
        const r = await t.withdraw(bob, '1', { owner: alice.address });
        expect(r.status).toBe(400);
        expect(String(r.body.error)).toMatch(/signature|signer/i);
      });
    });
  });

  describe('4002 INVALID_NONCE', () => {
    it('a replayed nonce is refused on the socket and on REST', async () => {
      const sig = await order(alice, limitOrder(true, px(60000), btc(0.01)));
      expect((await ws.request({ type: 'placeOrder', signature: sig })).type).toBe('orderAck');
      await unchanged(async () => {
        expect(await ws.request({ type: 'placeOrder', signature: sig })).toMatchObject({
          code: 4002,
        });
      });
      const lev = await alice.sign('UpdateLeverage', {
        market: 1,
        leverage: 1000,
        flags: 0,
        nonce: freshNonce(),
        deadline: Wallet.deadline(),
      });
      const body = { leverage: 1000, instrument: 'BTC-PERP', marginMode: 'Cross', signature: lev };
      expect((await t.api('POST', '/update_leverage', body)).body.status).toBe('Submitted');
      await unchanged(async () => {
        const again = await t.api('POST', '/update_leverage', body);
        expect(again.status).toBe(400);
        expect(again.body.error).toMatch(/^INVALID_NONCE: replayed/);
      });
    });

    it('a nonce outside the 5-minute window and a passed deadline change nothing', async () => {
      await unchanged(async () => {
        const old = BigInt(Date.now() - 6 * 60_000);
        expect(
          await ws.request({
            type: 'placeOrder',
            signature: await order(alice, limitOrder(true, px(60000), btc(0.01), { nonce: old })),
          }),
        ).toMatchObject({ code: 4002 });
        const past = BigInt(Math.floor(Date.now() / 1000) - 1);
        const r = await ws.request({
          type: 'placeOrder',
          signature: await order(alice, limitOrder(true, px(60000), btc(0.01), { deadline: past })),
        });
        expect(r).toMatchObject({ code: 4002 });
        expect(String(r.message)).toContain('deadline');
      });
    });
  });

  describe('authentication', () => {
    it('4003 before authentication, 4015 without app access, 4004 for another wallet', async () => {
      const anon = await WsClient.connect(t.venue.ws);
      await unchanged(async () => {
        expect(
          await anon.request({
            type: 'placeOrder',
            signature: await order(alice, limitOrder(true, px(60000), btc(0.01))),
          }),
        ).toMatchObject({ code: 4003 });
        expect(await anon.request({ type: 'subscribeAccountSummary' })).toMatchObject({
          code: 4003,
        });
        expect(await anon.request({ type: 'subscribeTrading' })).toMatchObject({ code: 4003 });
      });
      const gated = await anon.request({
        type: 'authenticate',
        signature: await carol.authenticate(),
      });
      expect(gated).toMatchObject({ type: 'error', code: 4015 });
      expect(String(gated.message)).toMatch(/^USER_NOT_INVITED/);
      await unchanged(async () => {
        const bad = await carol.authenticate();
        expect(
          await anon.request({ type: 'authenticate', signature: { ...bad, sig: highS(bad.sig) } }),
        ).toMatchObject({ code: 4001 });
        expect(
          await anon.request({
            type: 'authenticate',
            signature: await alice.authenticate(BigInt(Date.now() - 301_000)),
          }),
        ).toMatchObject({ code: 4002 });
        expect(
          await ws.request({
            type: 'placeOrder',
            signature: await order(bob, limitOrder(true, px(60000), btc(0.01))),
          }),
        ).toMatchObject({ code: 4004 });
      });
      await anon.close();
    });

    it('403 USER_NOT_INVITED on a signed REST write, which spends its nonce; 404 for an unknown account', async () => {
      const erin = t.wallet('0x3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b'); // not invited yet
      const request = {
        amount: '1',
        instrument: null,
        marginMode: 'Cross',
        signature: await erin.sign('Withdrawal', {
          amount: 1_000_000n,
          market: 0,
          flags: 0,
          nonce: freshNonce(),
          deadline: Wallet.deadline(),
        }),
      };
      const before = await t.stateHash();
      const r = await t.api('POST', '/margin/withdrawal', request);
      expect(r.status).toBe(403);
      expect(String(r.body.error)).toMatch(/^USER_NOT_INVITED:/);
      // A business refusal after the signature and nonce passed: only the nonce is recorded.
      expect((await t.stateHash()).seq).toBe(before.seq + 1);
      const missing = await t.api('GET', `/account_summary?wallet=${erin.address}`);
      expect(missing.status).toBe(404);
      // Once invited, the refused request cannot be replayed (protocol.md section 3).
      await t.invite(erin);
      const replay = await t.api('POST', '/margin/withdrawal', request);
      expect(replay.status).toBe(400);
      expect(String(replay.body.error)).toMatch(/^INVALID_NONCE: replayed/);
      // protocol.md 4: a withdrawal where no account exists is 404, and opens none.
      const r2 = await t.withdraw(dave, '1');
      expect(r2.status).toBe(404);
      expect(String(r2.body.error)).toMatch(/^ACCOUNT_NOT_FOUND: no trading account for 0x/);
      expect((await t.api('GET', `/account_summary?wallet=${dave.address}`)).status).toBe(404);
    });

    it('4033 on a second subscribeTrading', async () => {
      expect(await ws.request({ type: 'subscribeTrading' })).toMatchObject({ code: 4033 });
    });
  });

  describe('order validation (4030-4034) before any signature work', () => {
    it('refuses bad type, time in force, price and quantity and changes nothing', async () => {
      await unchanged(async () => {
        const cases: [Record<string, bigint | number | string>, number][] = [
          [{ orderType: 7 }, 4030],
          [{ timeInForce: 9 }, 4031],
          [{ timeInForce: 1, expiry: BigInt(Math.floor(Date.now() / 1000) - 10) }, 4031],
          [{ price: 0n }, 4032],
          [{ price: px('65000.3') }, 4032],
          [{ quantity: 0n }, 4034],
        ];
        for (const [extra, code] of cases) {
          const base = limitOrder(true, px(60000), btc(0.01), extra as never);
          const r = await ws.request({
            type: 'placeOrder',
            signature: await order(alice, { ...base, ...extra }),
          });
          expect({ extra: Object.keys(extra), code: r.code }).toEqual({
            extra: Object.keys(extra),
            code,
          });
        }
        const badSig = await order(alice, limitOrder(true, px(60000), btc(0.01), { orderType: 7 }));
        // The type check comes before the signature: a broken signature still gets 4030.
        expect(
          await ws.request({
            type: 'placeOrder',
            signature: { ...badSig, sig: `0x${'11'.repeat(65)}` },
          }),
        ).toMatchObject({ code: 4030 });
      });
    });
  });

  describe('business refusals (41xx, 4041) consume only the nonce', () => {
    it('4041 for an unknown order', async () => {
      const sig = await alice.sign('Cancel', {
        market: 1,
        orderId: 999_999n,
        nonce: freshNonce(),
        deadline: Wallet.deadline(),
      });
      const before = await aliceView();
      expect(await ws.request({ type: 'cancelOrder', signature: sig })).toMatchObject({
        code: 4041,
      });
      expect(await aliceView()).toEqual(before);
      await onlyNonce(sig, () => ws.request({ type: 'cancelOrder', signature: sig }));
    });

    it('4100 for an order beyond the margin, and a Rejected withdrawal', async () => {
      const before = await aliceView();
      const sig = await order(alice, limitOrder(true, px(60000), btc(10)));
      expect(await ws.request({ type: 'placeOrder', signature: sig })).toMatchObject({
        code: 4100,
      });
      expect(await aliceView()).toEqual(before);
      await onlyNonce(sig, () => ws.request({ type: 'placeOrder', signature: sig }));
      const r = await t.withdraw(alice, '1000000');
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ status: 'Rejected', code: 4100 });
      expect(typeof r.body.command_id).toBe('number');
      expect(await aliceView()).toEqual(before);
    });

    it('4101 below the minimum notional', async () => {
      const sig = await order(alice, limitOrder(true, px(40000), btc(0.0001)));
      expect(await ws.request({ type: 'placeOrder', signature: sig })).toMatchObject({
        code: 4101,
      });
    });

    it('4102 for leverage above the instrument maximum (REST Rejected)', async () => {
      const before = await aliceView();
      const sig = await alice.sign('UpdateLeverage', {
        market: 1,
        leverage: 5000,
        flags: 0,
        nonce: freshNonce(),
        deadline: Wallet.deadline(),
      });
      const r = await t.api('POST', '/update_leverage', {
        leverage: 5000,
        instrument: 'BTC-PERP',
        marginMode: 'Cross',
        signature: sig,
      });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ status: 'Rejected', code: 4102 });
      expect(await aliceView()).toEqual(before);
    });

    it('4103 above the open-interest cap', async () => {
      const added = await t.admin('POST', '/admin/instruments', {
        id: 9,
        symbol: 'CAP-PERP',
        tickSize: '0.5',
        lotSize: '0.0001',
        quantityDecimals: 4,
        maxLeverage: 20,
        defaultLeverage: 10,
        openInterestCap: '0.01',
      });
      expect(added.status).toBe(200);
      await t.oracle({ 'CAP-PERP': '65000' });
      const r = await ws.request({
        type: 'placeOrder',
        signature: await order(alice, limitOrder(true, px(65000), btc(0.02), { market: 9 })),
      });
      expect(r).toMatchObject({ code: 4103 });
    });
  });

  describe('REST input hygiene', () => {
    it('body/payload disagreement, oversized and deep bodies, wrong media type: 400 and nothing changes', async () => {
      await unchanged(async () => {
        const mismatch = await t.withdraw(alice, '5', { bodyAmount: '6' });
        expect(mismatch.status).toBe(400);
        expect(String(mismatch.body.error)).toContain('does not match');
        const big = await t.api('POST', '/margin/withdrawal', { pad: 'x'.repeat(70_000) });
        expect(big.status).toBe(400);
        const deep = await t.api(
          'POST',
          '/margin/withdrawal',
          `${'['.repeat(40)}${']'.repeat(40)}`,
        );
        expect(deep.status).toBe(400);
        const text = await fetch(`${t.rest}/margin/withdrawal`, {
          method: 'POST',
          headers: { 'content-type': 'text/plain' },
          body: 'hello',
        });
        expect(text.status).toBe(400);
        const proto = await t.api('POST', '/margin/withdrawal', '{"__proto__":{"polluted":true}}');
        expect(proto.status).toBe(400);
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
        expect((await t.api('GET', '/nothing-here')).status).toBe(404);
      });
    });
  });

  describe('POST /referral/apply', () => {
    it('400 for a malformed body, 401 for every header and signature problem; nothing changes', async () => {
      await unchanged(async () => {
        const good = await carol.referral(t.venue.inviteCode!);
        const post = (body: string, headers: Record<string, string>) =>
          t.api('POST', '/referral/apply', body, headers);
        const malformed = await post(
          JSON.stringify({ walletAddress: carol.address }),
          good.headers,
        );
        expect(malformed).toMatchObject({
          status: 400,
          body: { error: 'walletAddress and code are required' },
        });
        // The spec fixes the text; `detail` says which check failed.
        const checksummed = await post(
          JSON.stringify({ walletAddress: carol.address.replace('0x', '0X'), code: 'ABC' }),
          good.headers,
        );
        expect(checksummed.body).toEqual({
          error: 'walletAddress and code are required',
          detail: 'walletAddress must be a lowercase 0x address',
        });
        const nested = await post(
          JSON.stringify({ walletAddress: carol.address, code: { x: 1 } }),
          good.headers,
        );
        expect(nested.status).toBe(400);
        for (const h of ['x-signature', 'x-timestamp', 'x-nonce']) {
          const headers = { ...good.headers };
          delete headers[h];
          const r = await post(good.body, headers);
          expect(r.status).toBe(401);
          expect(String(r.body.error)).toMatch(/^Unauthorized: /);
        }
        const expired = await carol.referral(
          t.venue.inviteCode!,
          `n${freshNonce()}abc`,
          Date.now() - 6 * 60_000,
        );
        expect((await post(expired.body, expired.headers)).status).toBe(401);
        const badNonce = await carol.referral(t.venue.inviteCode!, 'short');
        expect((await post(badNonce.body, badNonce.headers)).status).toBe(401);
        const otherSigner = await bob.referral(t.venue.inviteCode!);
        expect(
          (
            await post(good.body, {
              ...good.headers,
              'x-signature': otherSigner.headers['x-signature']!,
            })
          ).status,
        ).toBe(401);
        // The body is part of the signed text: another code breaks the signature.
        expect(
          (
            await post(
              JSON.stringify({ walletAddress: carol.address, code: 'OTHER' }),
              good.headers,
            )
          ).status,
        ).toBe(401);
      });
    });

    it("follows core's referral checks: a signed body with an extra flat field is accepted, a zero-padded x-timestamp is 401", async () => {
      const frank = t.wallet('0x6f4c950fbbd3c1e4b5a9e4d3b0c2a1f8e7d6c5b4a3928170f6e5d4c3b2a19081');
      const made = await t.admin('POST', '/admin/referral-codes', { kind: 'system', maxUses: 2 });
      const padded = await frank.referral(made.body.code as string);
      const r = await t.api('POST', '/referral/apply', padded.body, {
        ...padded.headers,
        'x-timestamp': `0${padded.headers['x-timestamp']}`,
      });
      expect(r.status).toBe(401);
      expect(String(r.body.error)).toMatch(/^Unauthorized: x-timestamp/);
      // The body is flat and names walletAddress and code; what else it carries is signed too.
      const extra = await frank.referral(made.body.code as string, undefined, undefined, {
        source: 'app',
      });
      expect(await t.api('POST', '/referral/apply', extra.body, extra.headers)).toMatchObject({
        status: 201,
        body: { kind: 'system', refereeAddress: frank.address },
      });
    });

    it('a 401 for the signature names the check that failed', async () => {
      await unchanged(async () => {
        const good = await carol.referral(t.venue.inviteCode!);
        const post = (headers: Record<string, string>) =>
          t.api('POST', '/referral/apply', good.body, headers);
        const sig = good.headers['x-signature']!;
        // A signature refused for its form says so; it is not a signer mismatch.
        const high = await post({ ...good.headers, 'x-signature': highS(sig) });
        expect(high.status).toBe(401);
        expect(high.body.error).toBe(
          'Unauthorized: high s: signature s must be at most n/2 (low-s form)',
        );
        const short = await post({ ...good.headers, 'x-signature': sig.slice(0, 130) });
        expect(short.body.error).toBe(
          'Unauthorized: signature must be 65 bytes (r || s || v), got 64',
        );
        const noPrefix = await post({ ...good.headers, 'x-signature': sig.slice(2) });
        expect(noPrefix.body.error).toBe('Unauthorized: signature must start with 0x');
        // A valid signature by another wallet names both addresses.
        const other = await bob.referral(t.venue.inviteCode!);
        const mismatch = await post({
          ...good.headers,
          'x-signature': other.headers['x-signature']!,
        });
        expect(mismatch.status).toBe(401);
        expect(String(mismatch.body.error)).toMatch(
          /^Unauthorized: signer 0x[0-9a-f]{40} does not match walletAddress 0x[0-9a-f]{40} /,
        );
      });
    });

    it('401 for a replayed request and the 422 rules in order', async () => {
      const code = async (maxUses: number, owner?: string) => {
        const r = await t.admin('POST', '/admin/referral-codes', {
          kind: owner === undefined ? 'system' : 'attributed',
          maxUses,
          ...(owner === undefined ? {} : { owner }),
        });
        return r.body.code as string;
      };
      const apply = async (w: Wallet, c: string) => {
        const r = await w.referral(c);
        return t.api('POST', '/referral/apply', r.body, r.headers);
      };
      expect((await apply(carol, 'NOPE1')).body).toEqual({ error: 'CODE_NOT_FOUND' });
      const revoked = await code(5);
      await t.admin('POST', `/admin/referral-codes/${revoked}/revoke`);
      expect((await apply(carol, revoked)).body).toEqual({ error: 'CODE_REVOKED' });
      const own = await code(5, carol.address);
      expect(await apply(carol, own)).toMatchObject({
        status: 422,
        body: { error: 'SELF_REFERRAL' },
      });
      const once = await code(1);
      const eve = t.wallet('0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba');
      expect((await apply(eve, once)).status).toBe(201);
      expect(await apply(carol, once)).toMatchObject({
        status: 422,
        body: { error: 'CODE_EXHAUSTED' },
      });
      const attributed = await code(5, bob.address);
      const r = await carol.referral(attributed);
      const first = await t.api('POST', '/referral/apply', r.body, r.headers);
      expect(first).toMatchObject({
        status: 201,
        body: {
          kind: 'attributed',
          refereeAddress: carol.address,
          referrerAddress: bob.address,
          code: attributed,
        },
      });
      const replay = await t.api('POST', '/referral/apply', r.body, r.headers);
      expect(replay.status).toBe(401);
      expect(await apply(carol, t.venue.inviteCode!)).toMatchObject({
        status: 422,
        body: { error: 'ALREADY_REFERRED' },
      });
    });
  });

  describe('connection limits', () => {
    it('the ninth authenticated connection of an account gets 5000 and close 4429', async () => {
      const extra: WsClient[] = [];
      // Alice already has one connection (`ws`).
      for (let i = 0; i < 7; i++) extra.push(await t.connect(alice));
      const ninth = await WsClient.connect(t.venue.ws);
      const r = await ninth.request({
        type: 'authenticate',
        signature: await alice.authenticate(),
      });
      expect(r).toMatchObject({ type: 'error', code: 5000 });
      await new Promise((res) => setTimeout(res, 50));
      expect(ninth.closed?.code).toBe(4429);
      for (const c of extra) await c.close();
    });

    it('a frame above 64 KiB closes with 1009', async () => {
      const c = await WsClient.connect(t.venue.ws);
      c.ws.send(JSON.stringify({ type: 'ping', pad: 'x'.repeat(70_000) }));
      await new Promise((res) => c.ws.once('close', res));
      expect(c.closed?.code).toBe(1009);
    });
  });
});

describe('4000 at the working-order cap (limits.maxWorkingOrdersPerAccount)', () => {
  let t: TestVenue;
  let alice: Wallet;
  let ws: WsClient;
  const lines: string[] = [];
  const place = async (fields: Record<string, bigint | number | boolean | string>) =>
    ws.request({ type: 'placeOrder', signature: await alice.sign('Order', fields) });
  const openOrders = async () =>
    (await t.api('GET', `/historic/orders?wallet=${alice.address}&status=open`)).body;

  beforeAll(async () => {
    t = await startTestVenue({
      config: {
        ...DEFAULT_CONFIG,
        limits: {
          ...DEFAULT_CONFIG.limits,
          walletRequestsPerSecond: 100_000,
          maxWorkingOrdersPerAccount: 2,
        },
      },
      log: (line) => lines.push(line),
    });
    alice = t.wallet(0);
    const bob = t.wallet(1);
    await t.oracle({ 'BTC-PERP': '65000' });
    for (const w of [alice, bob]) {
      await t.invite(w);
      await t.fund(w, '10000');
    }
    const bobWs = await t.connect(bob);
    const ask = await bobWs.request({
      type: 'placeOrder',
      signature: await bob.sign('Order', limitOrder(false, px(65000), btc(0.01))),
    });
    expect(ask.type).toBe('orderAck');
    ws = await t.connect(alice);
    await ws.request({ type: 'subscribeTrading' });
  });
  afterAll(async () => t.close());

  it('the config cap is journaled at start; the third resting order is refused, spending only its nonce', async () => {
    expect(lines).toContain('limits.maxWorkingOrdersPerAccount: 1000 -> 2 (journaled)');
    const first = await place(limitOrder(true, px(60000), btc(0.01)));
    expect(first.type).toBe('orderAck');
    // A stop waits untriggered: it counts like a resting order.
    const stop = await place(
      limitOrder(true, px(70000), btc(0.01), { orderType: 1, triggerPrice: px(69000) }),
    );
    expect(stop.type).toBe('orderAck');
    const before = { orders: await openOrders(), hash: await t.stateHash() };
    const sig = await alice.sign('Order', limitOrder(true, px(60500), btc(0.01)));
    const refused = await ws.request({ type: 'placeOrder', signature: sig });
    expect(refused).toMatchObject({
      type: 'error',
      code: 4000,
      message: 'INVALID_REQUEST: account has 2 working orders, the most allowed is 2',
    });
    const report = await ws.waitFor((m) => m.kind === 'OrderRejected');
    expect(report.order).toMatchObject({ ordStatus: 'Rejected', reason: 'TooManyOrders' });
    expect(await openOrders()).toEqual(before.orders);
    // The refusal is journaled (its nonce), so the hash moves; the same signature is a replay.
    const again = await ws.request({ type: 'placeOrder', signature: sig });
    expect(again).toMatchObject({ type: 'error', code: 4002 });
    expect(String(again.message)).toMatch(/replayed/);
    expect((await t.stateHash()).seq).toBe(before.hash.seq + 1);
  });

  it('an IOC order passes at the cap (it never rests), and a cancel frees a slot', async () => {
    const ioc = await place(limitOrder(true, px(65000), btc(0.01), { timeInForce: 2 }));
    expect(ioc).toMatchObject({ type: 'orderAck' });
    expect(ioc.order).toMatchObject({ ordStatus: 'Filled' });
    const open = (await openOrders()).orders as { orderId: string; orderType: string }[];
    const limit = open.find((o) => o.orderType === 'Limit')!;
    const cancel = await ws.request({
      type: 'cancelOrder',
      signature: await alice.sign('Cancel', {
        market: 1,
        orderId: BigInt(limit.orderId),
        nonce: freshNonce(),
        deadline: Wallet.deadline(),
      }),
    });
    expect(cancel.type).toBe('cancelAck');
    expect((await place(limitOrder(true, px(60500), btc(0.01)))).type).toBe('orderAck');
  });
});

describe('rate limits and time-dependent limits', () => {
  it('more than 20 requests in a second gives 4029 with retryAfterMs; public reads above 100/s get 429', async () => {
    const t = await startTestVenue();
    try {
      const bob = t.wallet(1);
      await t.invite(bob);
      const c = await t.connect(bob);
      const replies = await Promise.all(
        Array.from({ length: 30 }, () => c.request({ type: 'ping' })),
      );
      const limited = replies.filter((m) => m.type === 'error');
      // The authenticate request counted too: 30 pings + 1 against 20 per second.
      expect(limited.length).toBeGreaterThanOrEqual(10);
      for (const m of limited) {
        expect(m.code).toBe(4029);
        expect(m.retryAfterMs).toBeGreaterThan(0);
        // Integer ms on the wire, though the limiters count on a sub-millisecond clock.
        expect(Number.isInteger(m.retryAfterMs)).toBe(true);
        expect(String(m.message)).toMatch(/retry in \d+ ms$/);
      }
      expect(replies.filter((m) => m.type === 'pong').length).toBeGreaterThan(0);
      // The same wallet's REST writes share the budget: 429 with Retry-After.
      const sig = await bob.sign('UpdateLeverage', {
        market: 1,
        leverage: 1000,
        flags: 0,
        nonce: freshNonce(),
        deadline: Wallet.deadline(),
      });
      const rest = await t.api('POST', '/update_leverage', {
        leverage: 1000,
        instrument: 'BTC-PERP',
        marginMode: 'Cross',
        signature: sig,
      });
      expect(rest.status).toBe(429);
      expect(Number(rest.headers.get('retry-after'))).toBeGreaterThan(0);
      // 130 reads at once against 100 per second. On a loaded machine one burst can take longer
      // than a second to arrive, so up to four bursts are sent; the limiter's exact arithmetic is
      // the unit tests' (core access.test.ts), this checks the wiring.
      let tooMany: Awaited<ReturnType<typeof t.api>>[] = [];
      for (let burst = 0; burst < 4 && tooMany.length === 0; burst++) {
        const results = await Promise.all(
          Array.from({ length: 130 }, () => t.api('GET', '/instruments')),
        );
        tooMany = results.filter((r) => r.status === 429);
      }
      expect(tooMany.length).toBeGreaterThan(0);
      expect(String(tooMany[0]!.body.error)).toMatch(
        /too many requests from this address; retry in \d+ ms$/,
      );
      expect(Number(tooMany[0]!.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      await t.close();
    }
  });

  it('signed REST writes count against their address budget first: forged floods get 429', async () => {
    // A small budget, so the flood outruns it even when a loaded machine spreads it over a
    // second or two (40 requests in under 2 s: at most 20 admitted).
    const t = await startTestVenue({
      config: { ...DEFAULT_CONFIG, limits: { ...DEFAULT_CONFIG.limits, publicReadsPerSecond: 10 } },
    });
    try {
      const mallory = t.wallet(4);
      const forged = async () => {
        const sig = await mallory.sign('UpdateLeverage', {
          market: 1,
          leverage: 1000,
          flags: 0,
          nonce: freshNonce(),
          deadline: Wallet.deadline(),
        });
        // A valid signature by mallory over another payload: it recovers someone else.
        return { ...sig, payload: `${sig.payload.slice(0, -2)}00` };
      };
      const bodies = await Promise.all(Array.from({ length: 40 }, forged));
      const before = await t.stateHash();
      const answers = await Promise.all(
        bodies.map((signature) =>
          t.api('POST', '/update_leverage', {
            leverage: 1000,
            instrument: 'BTC-PERP',
            marginMode: 'Cross',
            signature,
          }),
        ),
      );
      const statuses = answers.map((r) => r.status);
      expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(10);
      expect(statuses.every((s) => s === 429 || s === 400)).toBe(true);
      const limited = answers.find((r) => r.status === 429)!;
      expect(String(limited.body.error)).toMatch(/^too many requests from this address/);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await t.stateHash()).toEqual(before);
    } finally {
      await t.close();
    }
  });

  it('4035 when the sustained signed budget is spent; cancels keep their headroom', async () => {
    const t = await startTestVenue({
      config: {
        ...DEFAULT_CONFIG,
        limits: { ...DEFAULT_CONFIG.limits, signedRequestsPer5Minutes: 4 },
      },
    });
    try {
      const bob = t.wallet(1);
      await t.invite(bob);
      const c = await t.connect(bob);
      const codes: unknown[] = [];
      for (let i = 0; i < 5; i++) {
        const r = await c.request({
          type: 'placeOrder',
          signature: await bob.sign('Order', limitOrder(true, px(60000), btc(0.01))),
        });
        codes.push(r.code);
      }
      // The referral and the authenticate request were the first two signed requests of the
      // budget of 4; the orders, refused for lack of collateral (4100), count as well, so the
      // second order is the fourth signed request and the last one admitted.
      expect(codes).toEqual([4100, 4100, 4035, 4035, 4035]);
      const cancel = await bob.sign('Cancel', {
        market: 1,
        orderId: 42n,
        nonce: freshNonce(),
        deadline: Wallet.deadline(),
      });
      expect(await c.request({ type: 'cancelOrder', signature: cancel })).toMatchObject({
        code: 4041,
      });
    } finally {
      await t.close();
    }
  });

  it('closes an idle connection with 4408 and keeps one that answers pings', async () => {
    const { DEFAULT_CONFIG } = await import('../src/index.js');
    const t = await startTestVenue({
      config: {
        ...DEFAULT_CONFIG,
        limits: { ...DEFAULT_CONFIG.limits, pingIntervalMs: 100, idleTimeoutMs: 300 },
      },
    });
    try {
      const silent = new WebSocket(t.venue.ws, { autoPong: false });
      const lively = new WebSocket(t.venue.ws);
      await Promise.all([
        new Promise((r) => silent.once('open', r)),
        new Promise((r) => lively.once('open', r)),
      ]);
      const [code, reason] = await new Promise<[number, string]>((r) =>
        silent.once('close', (c, why) => r([c, String(why)])),
      );
      expect(code).toBe(4408);
      expect(reason).toBe('idle timeout');
      expect(lively.readyState).toBe(WebSocket.OPEN);
      lively.close();
    } finally {
      await t.close();
    }
  });

  it('the 30th connection from one address is accepted and the 31st refused', async () => {
    const t = await startTestVenue();
    const open: WebSocket[] = [];
    try {
      for (let i = 0; i < 30; i++) {
        const s = new WebSocket(t.venue.ws);
        await new Promise((r, j) => {
          s.once('open', r);
          s.once('error', j);
        });
        open.push(s);
      }
      const refused = new WebSocket(t.venue.ws);
      const status = await new Promise<number>((r) =>
        refused.once('unexpected-response', (_req, res) => r(res.statusCode ?? 0)),
      );
      expect(status).toBe(429);
    } finally {
      for (const s of open) s.close();
      await t.close();
    }
  });
});
