/**
 * Trading-socket rules found by the WebSocket audit, over real sockets: an `authenticate` whose
 * signature and nonce pass consumes its nonce whatever the refusal (invite gate, connection
 * cap), and is counted against the wallet's rate limits; an idle connection closes at its
 * deadline; 4004 is only for a valid signature by another wallet (a bad one is 4001).
 */
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { DEFAULT_CONFIG, type VenueConfig } from '../src/index.js';
import { freshNonce, Wallet, WsClient } from './support/client.js';
import { btc, limitOrder, px, startTestVenue, type TestVenue } from './support/fixture.js';

/** The default config with some limits changed. */
function withLimits(limits: Partial<VenueConfig['limits']>): VenueConfig {
  return { ...DEFAULT_CONFIG, limits: { ...DEFAULT_CONFIG.limits, ...limits } };
}

let t: TestVenue | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe('authenticate consumes its nonce once signature and nonce pass', () => {
  it('a message refused with 4015 cannot be replayed after the wallet is invited', async () => {
    t = await startTestVenue();
    const carol = t.wallet(2);
    const c = await WsClient.connect(t.venue.ws);
    const signature = await carol.authenticate();
    expect(await c.request({ type: 'authenticate', signature })).toMatchObject({
      type: 'error',
      code: 4015,
    });
    await t.invite(carol);
    const replay = await c.request({ type: 'authenticate', signature });
    expect(replay).toMatchObject({ type: 'error', code: 4002 });
    expect(String(replay.message)).toMatch(/replayed/);
    expect(await c.request({ type: 'subscribeTrading' })).toMatchObject({ code: 4003 });
    expect(
      await c.request({ type: 'authenticate', signature: await carol.authenticate() }),
    ).toMatchObject({ type: 'authenticateSuccess', account: carol.address });
    await c.close();
  });

  it('a message refused for the connection cap (5000, close 4429) cannot be replayed later', async () => {
    t = await startTestVenue({ config: withLimits({ connectionsPerAccount: 2 }) });
    const alice = t.wallet(0);
    await t.invite(alice);
    const first = await t.connect(alice);
    await t.connect(alice);
    const third = await WsClient.connect(t.venue.ws);
    const signature = await alice.authenticate();
    expect(await third.request({ type: 'authenticate', signature })).toMatchObject({
      type: 'error',
      code: 5000,
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(third.closed?.code).toBe(4429);
    // A place frees up; the refused message is still spent.
    expect(await first.request({ type: 'logout' })).toMatchObject({ type: 'logoutSuccess' });
    const fourth = await WsClient.connect(t.venue.ws);
    const replay = await fourth.request({ type: 'authenticate', signature });
    expect(replay).toMatchObject({ type: 'error', code: 4002 });
    expect(String(replay.message)).toMatch(/replayed/);
    expect(fourth.closed).toBeNull();
    expect(
      await fourth.request({ type: 'authenticate', signature: await alice.authenticate() }),
    ).toMatchObject({ type: 'authenticateSuccess' });
    await fourth.close();
  });

  it('a replayed or stale authenticate on a full account is refused for the nonce and keeps the socket', async () => {
    t = await startTestVenue({ config: withLimits({ connectionsPerAccount: 1 }) });
    const alice = t.wallet(0);
    await t.invite(alice);
    await t.connect(alice);
    const c = await WsClient.connect(t.venue.ws);
    const stale = await alice.authenticate(freshNonce() - 301_000n);
    expect(await c.request({ type: 'authenticate', signature: stale })).toMatchObject({
      code: 4002,
    });
    expect(c.closed).toBeNull();
    await c.close();
  });
});

describe('authenticate is counted against the wallet once its signature verified', () => {
  it('over the per-second limit: 4029 with retryAfterMs, and the refused message keeps its nonce', async () => {
    t = await startTestVenue({ config: withLimits({ walletRequestsPerSecond: 2 }) });
    const alice = t.wallet(0);
    await t.invite(alice); // the referral is a signed request of alice's too
    await new Promise((r) => setTimeout(r, 1_100));
    // Three fresh sockets: nothing is counted per wallet before the signature (per address only).
    const sockets = await Promise.all([0, 1, 2].map(() => WsClient.connect(t!.venue.ws)));
    const signatures = await Promise.all(sockets.map(() => alice.authenticate()));
    const replies = await Promise.all(
      sockets.map((c, i) => c.request({ type: 'authenticate', signature: signatures[i] })),
    );
    expect(replies.map((r) => r.type).sort()).toEqual([
      'authenticateSuccess',
      'authenticateSuccess',
      'error',
    ]);
    const i = replies.findIndex((r) => r.type === 'error');
    const limited = replies[i]!;
    expect(limited).toMatchObject({ code: 4029 });
    expect(limited.retryAfterMs).toBeGreaterThan(0);
    expect(sockets[i]!.closed).toBeNull();
    // Refused before the engine: once the second is over, the same message is accepted.
    await new Promise((r) => setTimeout(r, Number(limited.retryAfterMs) + 50));
    expect(
      await sockets[i]!.request({ type: 'authenticate', signature: signatures[i] }),
    ).toMatchObject({ type: 'authenticateSuccess', account: alice.address });
    for (const c of sockets) await c.close();
  });

  it('spends the sustained signed budget (4035), also when re-authenticating a connection', async () => {
    t = await startTestVenue({ config: withLimits({ signedRequestsPer5Minutes: 3 }) });
    const alice = t.wallet(0);
    await t.invite(alice); // 1 of 3
    const c = await t.connect(alice); // 2 of 3
    expect(
      await c.request({ type: 'authenticate', signature: await alice.authenticate() }),
    ).toMatchObject({ type: 'authenticateSuccess' }); // 3 of 3
    const again = await c.request({ type: 'authenticate', signature: await alice.authenticate() });
    expect(again).toMatchObject({ type: 'error', code: 4035 });
    expect(again.retryAfterMs).toBeGreaterThan(0);
    const other = await WsClient.connect(t.venue.ws);
    expect(
      await other.request({ type: 'authenticate', signature: await alice.authenticate() }),
    ).toMatchObject({ type: 'error', code: 4035 });
    // The connection stays authenticated as before.
    expect(await c.request({ type: 'subscribeTrading' })).toMatchObject({
      type: 'subscribeTradingSuccess',
    });
    await other.close();
  });
});

describe('idle timeout', () => {
  /** Opens a raw socket that never answers pings; resolves with its close, timed from open. */
  async function silentSocket(url: string): Promise<{
    ws: WebSocket;
    closed: Promise<{ code: number; reason: string; afterMs: number }>;
  }> {
    const ws = new WebSocket(url, { autoPong: false });
    await new Promise((r, j) => {
      ws.once('open', r);
      ws.once('error', j);
    });
    const opened = performance.now();
    const closed = new Promise<{ code: number; reason: string; afterMs: number }>((r) =>
      ws.once('close', (code, reason) =>
        r({ code, reason: String(reason), afterMs: performance.now() - opened }),
      ),
    );
    return { ws, closed };
  }
  const within = <T>(p: Promise<T>, ms: number): Promise<T | 'open'> =>
    Promise.race([p, new Promise<'open'>((r) => setTimeout(() => r('open'), ms))]);

  it('closes a connection with no request and no pong at the idle deadline, not the next ping tick', async () => {
    // Pings every 60 s: before the fix the idle check only ran on that tick.
    t = await startTestVenue({
      config: withLimits({ pingIntervalMs: 60_000, idleTimeoutMs: 300 }),
    });
    const { closed } = await silentSocket(t.venue.ws);
    const c = await within(closed, 2_000);
    expect(c).not.toBe('open');
    if (c === 'open') return;
    expect(c.code).toBe(4408);
    expect(c.reason).toBe('idle timeout');
    expect(c.afterMs).toBeGreaterThanOrEqual(250);
    expect(c.afterMs).toBeLessThan(1_000);
  });

  it('a request moves the deadline: the connection closes idle after the last request', async () => {
    t = await startTestVenue({
      config: withLimits({ pingIntervalMs: 60_000, idleTimeoutMs: 400 }),
    });
    const { ws, closed } = await silentSocket(t.venue.ws);
    await new Promise((r) => setTimeout(r, 250));
    ws.send(JSON.stringify({ type: 'ping' }));
    const c = await within(closed, 2_000);
    expect(c).not.toBe('open');
    if (c === 'open') return;
    expect(c.code).toBe(4408);
    // 250 ms until the request, then the full 400 ms.
    expect(c.afterMs).toBeGreaterThanOrEqual(600);
    expect(c.afterMs).toBeLessThan(1_400);
  });

  it('a connection that only answers pings stays open past the deadline', async () => {
    t = await startTestVenue({
      config: withLimits({ pingIntervalMs: 100, idleTimeoutMs: 300 }),
    });
    const lively = await WsClient.connect(t.venue.ws);
    await new Promise((r) => setTimeout(r, 900));
    expect(lively.closed).toBeNull();
    await lively.close();
  });
});

describe('4004 WALLET_MISMATCH only for a valid signature by another wallet', () => {
  it('a struct for another wallet with a bad signature is 4001; a valid one by that wallet is 4004', async () => {
    t = await startTestVenue();
    const alice = t.wallet(0);
    const bob = t.wallet(1);
    const carol = t.wallet(2);
    for (const w of [alice, bob]) await t.invite(w);
    await t.oracle({ 'BTC-PERP': '65000' });
    const c = await t.connect(alice);
    const before = await t.stateHash();
    const fields = limitOrder(true, px(60000), btc(0.01));
    const good = await bob.sign('Order', fields);
    // Garbage (but well-formed) signature over bob's struct.
    const garbage = { ...good, sig: `0x${'11'.repeat(64)}1b` };
    expect(await c.request({ type: 'placeOrder', signature: garbage })).toMatchObject({
      type: 'error',
      code: 4001,
    });
    // Bob's struct signed by carol: the signer is not the struct's account.
    const forged = await carol.sign('Order', { ...fields, account: bob.address });
    expect(await c.request({ type: 'placeOrder', signature: forged })).toMatchObject({
      code: 4001,
    });
    // A tampered signature of bob's.
    const flipped = `${good.sig.slice(0, 10)}${good.sig[10] === 'a' ? 'b' : 'a'}${good.sig.slice(11)}`;
    expect(
      await c.request({ type: 'placeOrder', signature: { ...good, sig: flipped } }),
    ).toMatchObject({ code: 4001 });
    const cancel = await bob.sign('Cancel', {
      market: 1,
      orderId: 1n,
      nonce: freshNonce(),
      deadline: Wallet.deadline(),
    });
    expect(
      await c.request({ type: 'cancelOrder', signature: { ...cancel, sig: garbage.sig } }),
    ).toMatchObject({ code: 4001 });
    // Bob's own valid signature on alice's connection.
    const mismatch = await c.request({ type: 'placeOrder', signature: good });
    expect(mismatch).toMatchObject({ type: 'error', code: 4004 });
    expect(await c.request({ type: 'cancelOrder', signature: cancel })).toMatchObject({
      code: 4004,
    });
    // Nothing changed, no nonce consumed: bob can still use his signature on his own socket.
    expect(await t.stateHash()).toEqual(before);
    const b = await t.connect(bob);
    expect(await b.request({ type: 'placeOrder', signature: good })).toMatchObject({
      code: 4100,
    });
  });

  it('cheap field checks still come first: a bad quantity for another wallet is 4034', async () => {
    t = await startTestVenue();
    const alice = t.wallet(0);
    const bob = t.wallet(1);
    await t.invite(alice);
    const c = await t.connect(alice);
    const bad = await bob.sign('Order', limitOrder(true, px(60000), 0n));
    expect(await c.request({ type: 'placeOrder', signature: bad })).toMatchObject({
      code: 4034,
    });
  });
});
