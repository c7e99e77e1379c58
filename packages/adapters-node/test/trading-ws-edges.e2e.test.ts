/**
 * Trading-socket edges a mutation pass over `ws/trading.ts` and `requests.ts` found unpinned,
 * over real sockets on 127.0.0.1: the cancel class of the sustained budget for `cancelAll`,
 * subscription lifecycles (logout and unsubscribe stop the pushes they started, summaries are
 * coalesced), and the wire details of replies.
 */
import { connect as tcpConnect } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openGate, type RecoveryGate, recoveryGate } from './support/recovery-gate.js';

/**
 * Holds the next signature recovery back until released (a slow verification worker), or fails
 * every recovery (a dead worker).
 */
const gate: RecoveryGate = recoveryGate();

vi.mock('../src/verify/pool.js', async (original) => {
  const mod = (await original()) as typeof import('../src/verify/pool.js');
  const { gatedRecovery } = await import('./support/recovery-gate.js');
  return {
    ...mod,
    createSignatureRecovery: (options: Parameters<typeof mod.createSignatureRecovery>[0]) =>
      gatedRecovery(mod.createSignatureRecovery(options), gate),
  };
});

import { DEFAULT_CONFIG, type VenueConfig } from '../src/index.js';
import { freshNonce, type Msg, Wallet, WsClient } from './support/client.js';
import {
  btc,
  cloid,
  limitOrder,
  px,
  startTestVenue,
  type TestVenue,
  usd,
} from './support/fixture.js';

/** The default config with some limits changed. */
function withLimits(limits: Partial<VenueConfig['limits']>): VenueConfig {
  return { ...DEFAULT_CONFIG, limits: { ...DEFAULT_CONFIG.limits, ...limits } };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let t: TestVenue | undefined;
afterEach(async () => {
  openGate(gate);
  await t?.close();
  t = undefined;
});

describe('sustained budget', () => {
  it('cancelAll keeps the cancel headroom once orders get 4035', async () => {
    t = await startTestVenue({ config: withLimits({ signedRequestsPer5Minutes: 4 }) });
    const bob = t.wallet(1);
    await t.invite(bob);
    const c = await t.connect(bob);
    const codes: unknown[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await c.request({
        type: 'placeOrder',
        signature: await bob.sign('Order', limitOrder(true, px(60000), btc(0.01))),
      });
      codes.push(r.code);
    }
    // Referral, authenticate and two orders spend the budget of 4.
    expect(codes).toEqual([4100, 4100, 4035]);
    const all = await bob.sign('CancelAll', {
      market: 1,
      nonce: freshNonce(),
      deadline: Wallet.deadline(),
    });
    expect(await c.request({ type: 'cancelAll', signature: all })).toMatchObject({
      type: 'cancelAllAck',
      cancelled: 0,
    });
  });
});

/** A margin transfer message of `w` (100 USD cross to isolated on BTC-PERP). */
async function transfer(w: Wallet, amount = 100): Promise<Record<string, unknown>> {
  return {
    type: 'transferMargin',
    amount: String(amount),
    instrument: 'BTC-PERP',
    direction: 'crossToIsolated',
    signature: await w.sign('MarginTransfer', {
      amount: usd(amount),
      market: 1,
      flags: 0,
      nonce: freshNonce(),
      deadline: Wallet.deadline(),
    }),
  };
}

const summaries = (c: WsClient): Msg[] => c.inbox.filter((m) => m.type === 'accountSummary');

describe('subscription lifecycles', () => {
  it('summaries are coalesced, and stop on unsubscribe and on logout', async () => {
    t = await startTestVenue({ config: withLimits({ summaryCoalesceMs: 300 }) });
    const alice = t.wallet(0);
    await t.invite(alice);
    await t.fund(alice, '1000');
    const c = await t.connect(alice);
    expect(await c.request({ type: 'subscribeAccountSummary' })).toMatchObject({
      type: 'accountSummary',
    });
    // Two changes inside one coalescing window: one push.
    const [a, b] = await Promise.all([
      c.request(await transfer(alice, 10)),
      c.request(await transfer(alice, 20)),
    ]);
    expect([a.status, b.status]).toEqual(['Submitted', 'Submitted']);
    await sleep(700);
    expect(summaries(c)).toHaveLength(2);
    // Unsubscribed: a change pushes nothing.
    expect(await c.request({ type: 'unsubscribeAccountSummary' })).toEqual({
      type: 'unsubscribeAccountSummarySuccess',
      id: expect.any(String),
    });
    expect(await c.request(await transfer(alice, 1))).toMatchObject({ status: 'Submitted' });
    await sleep(500);
    expect(summaries(c)).toHaveLength(2);
    // Subscribed again, then logged out and back in: the subscription did not survive.
    await c.request({ type: 'subscribeAccountSummary' });
    expect(summaries(c)).toHaveLength(3);
    expect(await c.request({ type: 'logout' })).toMatchObject({ type: 'logoutSuccess' });
    expect(
      await c.request({ type: 'authenticate', signature: await alice.authenticate() }),
    ).toMatchObject({ type: 'authenticateSuccess' });
    expect(await c.request(await transfer(alice, 1))).toMatchObject({ status: 'Submitted' });
    await sleep(500);
    expect(summaries(c)).toHaveLength(3);
  });

  it('execution reports stop on unsubscribeTrading and on logout; subscribing again is allowed', async () => {
    t = await startTestVenue();
    const alice = t.wallet(0);
    await t.invite(alice);
    await t.fund(alice, '1000');
    const c = await t.connect(alice);
    const place = async (): Promise<Msg> =>
      c.request({
        type: 'placeOrder',
        signature: await alice.sign('Order', limitOrder(true, px(60000), btc(0.01))),
      });
    const first = await c.request({ type: 'subscribeTrading' });
    const seq0 = Number(first.seq);
    expect(await place()).toMatchObject({ type: 'orderAck' });
    await c.waitFor((m) => m.type === 'executionReport');
    const reports = (): number => c.reports().length;
    const seen = reports();
    expect(await c.request({ type: 'unsubscribeTrading' })).toEqual({
      type: 'unsubscribeTradingSuccess',
      id: expect.any(String),
    });
    expect(await place()).toMatchObject({ type: 'orderAck' });
    await sleep(200);
    expect(reports()).toBe(seen);
    // A new subscription is not a second one (no 4033) and resumes the stream.
    const again = await c.request({ type: 'subscribeTrading' });
    expect(again).toMatchObject({ type: 'subscribeTradingSuccess', seq: seq0 + 2 });
    expect(await c.request({ type: 'logout' })).toMatchObject({ type: 'logoutSuccess' });
    expect(
      await c.request({ type: 'authenticate', signature: await alice.authenticate() }),
    ).toMatchObject({ type: 'authenticateSuccess' });
    expect(await place()).toMatchObject({ type: 'orderAck' });
    await sleep(200);
    expect(reports()).toBe(seen);
    // Logged out, the stream is gone: subscribing again is not 4033.
    expect(await c.request({ type: 'subscribeTrading' })).toMatchObject({
      type: 'subscribeTradingSuccess',
      seq: seq0 + 3,
    });
  });
});

/** A funded, invited wallet with an authenticated socket, plus a second funded wallet. */
async function twoTraders(config?: VenueConfig) {
  t = await startTestVenue(config === undefined ? {} : { config });
  await t.oracle({ 'BTC-PERP': '60000' });
  const alice = t.wallet(0);
  const bob = t.wallet(1);
  for (const w of [alice, bob]) {
    await t.invite(w);
    await t.fund(w, '10000');
  }
  const c = await t.connect(alice);
  return { alice, bob, c };
}

/** A fresh nonce and deadline for a signed struct. */
const fresh = (): { nonce: bigint; deadline: bigint } => ({
  nonce: freshNonce(),
  deadline: Wallet.deadline(),
});

describe('every signed message', () => {
  /** One signed message of each kind but orders, all by `wallet`. */
  const signedMessages = async (wallet: Wallet): Promise<Record<string, unknown>[]> => [
    {
      type: 'cancelOrder',
      signature: await wallet.sign('Cancel', { market: 1, orderId: 1n, ...fresh() }),
    },
    {
      type: 'replaceOrder',
      signature: await wallet.sign('Replace', {
        market: 1,
        orderId: 1n,
        price: px(60000),
        quantity: btc(0.01),
        ...fresh(),
      }),
    },
    { type: 'cancelAll', signature: await wallet.sign('CancelAll', { market: 1, ...fresh() }) },
    {
      type: 'claimLiquidation',
      signature: await wallet.sign('ClaimLiquidation', {
        auctionId: 1n,
        quantity: btc(0.01),
        maxPrice: px(60000),
        ...fresh(),
      }),
    },
    await transfer(wallet),
  ];

  it('is 4003 before authentication and changes nothing', async () => {
    const { bob } = await twoTraders();
    const anon = await WsClient.connect(t!.venue.ws);
    const before = await t!.stateHash();
    const messages = await signedMessages(bob);
    for (const m of messages)
      expect(await anon.request(m)).toMatchObject({ type: 'error', code: 4003 });
    expect(await t!.stateHash()).toEqual(before);
    await anon.close();
  });

  it('signed by another wallet is 4004 and changes nothing', async () => {
    const { bob, c } = await twoTraders();
    const before = await t!.stateHash();
    const messages = await signedMessages(bob);
    for (const m of messages)
      expect(await c.request(m)).toMatchObject({ type: 'error', code: 4004 });
    expect(await t!.stateHash()).toEqual(before);
  });

  it('naming an instrument that is not the signed market is 4000 and changes nothing', async () => {
    const { alice, c } = await twoTraders();
    const before = await t!.stateHash();
    const cancel = {
      type: 'cancelOrder',
      instrument: 'ETH-PERP',
      signature: await alice.sign('Cancel', { market: 1, orderId: 1n, ...fresh() }),
    };
    const replace = {
      type: 'replaceOrder',
      instrument: 'ETH-PERP',
      signature: await alice.sign('Replace', {
        market: 1,
        orderId: 1n,
        price: px(60000),
        quantity: btc(0.01),
        ...fresh(),
      }),
    };
    const order = {
      type: 'placeOrder',
      instrument: 'ETH-PERP',
      signature: await alice.sign('Order', limitOrder(true, px(60000), btc(0.01))),
    };
    for (const m of [cancel, replace, order]) {
      const r = await c.request(m);
      expect(r).toMatchObject({ type: 'error', code: 4000 });
      expect(String(r.message)).toMatch(/does not name the signed market 1/);
    }
    expect(await t!.stateHash()).toEqual(before);
  });

  it('a cancelAll whose instrument is not its signed market is 4000 and cancels nothing', async () => {
    const { alice, c } = await twoTraders();
    const ethOrder = limitOrder(true, 3_000n * 10n ** 18n, 10n, { market: 2 });
    for (const o of [limitOrder(true, px(59000), btc(0.01)), ethOrder]) {
      const r = await c.request({ type: 'placeOrder', signature: await alice.sign('Order', o) });
      expect(r.type).toBe('orderAck');
    }
    const before = await t!.stateHash();
    // Market 0 is every market: naming one instrument with it would cancel the other too.
    for (const [market, instrument] of [
      [0, 'BTC-PERP'],
      [1, 'ETH-PERP'],
    ] as const) {
      const r = await c.request({
        type: 'cancelAll',
        instrument,
        signature: await alice.sign('CancelAll', { market, ...fresh() }),
      });
      expect(r).toMatchObject({ type: 'error', code: 4000 });
      expect(String(r.message)).toMatch(`does not name the signed market ${market}`);
    }
    expect(await t!.stateHash()).toEqual(before);
    // Naming the signed market is allowed, as on the other order messages.
    expect(
      await c.request({
        type: 'cancelAll',
        instrument: 'ETH-PERP',
        signature: await alice.sign('CancelAll', { market: 2, ...fresh() }),
      }),
    ).toMatchObject({ type: 'cancelAllAck', cancelled: 1 });
  });
});

describe('order acknowledgements', () => {
  it('replace by orderId and by origCloid: replaceAck carries the order and origCloid', async () => {
    const { alice, c } = await twoTraders();
    const cl = `0x${'ab'.repeat(16)}`;
    const placed = await c.request({
      type: 'placeOrder',
      signature: await alice.sign('Order', limitOrder(true, px(50000), btc(0.01))),
    });
    expect(placed).toMatchObject({ type: 'orderAck', order: { cloid: null } });
    const orderId = BigInt((placed.order as { orderId: string }).orderId);
    const byId = await c.request({
      type: 'replaceOrder',
      instrument: 'BTC-PERP',
      signature: await alice.sign('Replace', {
        market: 1,
        orderId,
        price: px(51000),
        quantity: btc(0.02),
        cloid: cl,
        ...fresh(),
      }),
    });
    expect(byId).toMatchObject({
      type: 'replaceAck',
      origCloid: null,
      order: { price: '51000', quantity: '0.02', cloid: cl },
      seq: expect.any(Number),
    });
    const byCloid = await c.request({
      type: 'replaceOrder',
      signature: await alice.sign('Replace', {
        market: 1,
        origCloid: cl,
        price: px(52000),
        quantity: btc(0.02),
        ...fresh(),
      }),
    });
    expect(byCloid).toMatchObject({
      type: 'replaceAck',
      origCloid: cl,
      order: { price: '52000', cloid: cl },
    });
  });

  it("a replaceAck's seq is the command's last report, a stop its fill fired included", async () => {
    const { alice, bob, c } = await twoTraders();
    await c.request({ type: 'subscribeTrading' });
    const b = await t!.connect(bob);
    const send = async (ws: WsClient, w: Wallet, type: string, struct: string, f: object) =>
      ws.request({ type, signature: await w.sign(struct, { ...f, ...fresh() }) });
    const entry = await send(c, alice, 'placeOrder', 'Order', {
      ...limitOrder(true, px(59000), btc(0.01), { cloid: cloid(1) }),
    });
    const stop = await send(c, alice, 'placeOrder', 'Order', {
      ...limitOrder(false, 0n, btc(0.01), {
        orderType: 2,
        triggerPrice: px(59500),
        flags: 8,
        parentCloid: cloid(1),
      }),
    });
    expect(stop).toMatchObject({ type: 'orderAck', order: { ordStatus: 'Untriggered' } });
    await send(b, bob, 'placeOrder', 'Order', limitOrder(false, px(59400), btc(0.01)));
    // The mark falls below the stop's trigger while the stop waits for its entry.
    await t!.oracle({ 'BTC-PERP': '59000' });
    const amend = await send(c, alice, 'replaceOrder', 'Replace', {
      market: 1,
      orderId: BigInt((entry.order as { orderId: string }).orderId),
      price: px(59400),
      quantity: btc(0.01),
    });
    expect(amend).toMatchObject({ type: 'replaceAck', order: { ordStatus: 'Filled' } });
    // The entry filled, its stop armed and fired at once: its reports come before the ack's seq.
    const stopId = (stop.order as { orderId: string }).orderId;
    const fired = await c.waitFor(
      (m) => m.kind === 'OrderTriggered' && (m.order as { orderId: string }).orderId === stopId,
    );
    const ended = await c.waitFor(
      (m) => m.kind === 'OrderCancelled' && (m.order as { orderId: string }).orderId === stopId,
    );
    expect(fired.seq).toBeLessThan(ended.seq as number);
    expect(amend.seq).toBe(ended.seq);
  });

  it('a duplicate cloid error carries the refused order id and the cloid', async () => {
    const { alice, c } = await twoTraders();
    const cl = `0x${'cd'.repeat(16)}`;
    const placed = await c.request({
      type: 'placeOrder',
      signature: await alice.sign('Order', limitOrder(true, px(50000), btc(0.01), { cloid: cl })),
    });
    const orderId = (placed.order as { orderId: string }).orderId;
    const dup = await c.request({
      type: 'placeOrder',
      signature: await alice.sign('Order', limitOrder(true, px(50000), btc(0.01), { cloid: cl })),
    });
    // The refusal names the live order in its text; `orderId` is the refused order's own id.
    expect(dup).toMatchObject({
      type: 'error',
      code: 4000,
      orderId: String(BigInt(orderId) + 1n),
      cloid: cl,
    });
    expect(String(dup.message)).toContain(orderId);
  });

  it('a claim of an auction id beyond 2^53 names that id, not a small one', async () => {
    const { alice, c } = await twoTraders();
    const r = await c.request({
      type: 'claimLiquidation',
      signature: await alice.sign('ClaimLiquidation', {
        auctionId: 2n ** 64n - 1n,
        quantity: btc(0.01),
        maxPrice: px(60000),
        ...fresh(),
      }),
    });
    expect(r).toMatchObject({ type: 'error', code: 4000 });
    expect(String(r.message)).toBe(
      `INVALID_REQUEST: no live liquidation auction ${Number.MAX_SAFE_INTEGER}`,
    );
  });

  it('a margin transfer beyond the margin is marginTransferred Rejected with the code', async () => {
    const { alice, c } = await twoTraders();
    const r = await c.request(await transfer(alice, 20000));
    expect(r).toMatchObject({
      type: 'marginTransferred',
      status: 'Rejected',
      code: 4100,
      command_id: expect.anything(),
    });
  });
});

describe('connections per account', () => {
  it('re-authenticating a connection as its own wallet on a full account keeps it', async () => {
    t = await startTestVenue({ config: withLimits({ connectionsPerAccount: 1 }) });
    const alice = t.wallet(0);
    await t.invite(alice);
    const c = await t.connect(alice);
    expect(
      await c.request({ type: 'authenticate', signature: await alice.authenticate() }),
    ).toMatchObject({ type: 'authenticateSuccess', account: alice.address });
    expect((await c.request({ type: 'ping' })).type).toBe('pong');
  });

  it('a connection that logs out and authenticates as another wallet frees its place in the first', async () => {
    t = await startTestVenue({ config: withLimits({ connectionsPerAccount: 1 }) });
    const alice = t.wallet(0);
    const bob = t.wallet(1);
    await t.invite(alice);
    await t.invite(bob);
    const c = await t.connect(alice);
    expect(await c.request({ type: 'logout' })).toMatchObject({ type: 'logoutSuccess' });
    expect(
      await c.request({ type: 'authenticate', signature: await bob.authenticate() }),
    ).toMatchObject({ type: 'authenticateSuccess', account: bob.address });
    // Alice's only place is free again; Bob's is taken by `c`.
    const d = await t.connect(alice);
    expect((await d.request({ type: 'ping' })).type).toBe('pong');
    const e = await WsClient.connect(t.venue.ws);
    expect(
      await e.request({ type: 'authenticate', signature: await bob.authenticate() }),
    ).toMatchObject({ type: 'error', code: 5000 });
  });

  it('authenticate by another wallet on an authenticated connection is 4004 and changes nothing', async () => {
    t = await startTestVenue({ config: withLimits({ connectionsPerAccount: 1 }) });
    const alice = t.wallet(0);
    const bob = t.wallet(1);
    for (const w of [alice, bob]) {
      await t.invite(w);
      await t.fund(w, '1000');
    }
    const c = await t.connect(alice);
    await c.request({ type: 'subscribeTrading' });
    await c.request({ type: 'subscribeAccountSummary' });
    const before = await t.stateHash();
    const bobAuth = await bob.authenticate();
    const refused = await c.request({ type: 'authenticate', signature: bobAuth });
    expect(refused).toMatchObject({ type: 'error', code: 4004 });
    expect(refused.message).toMatch(/^WALLET_MISMATCH: .*log out first/);
    // Nothing reached the engine: Bob's nonce is unused, no account or state changed.
    expect(await t.stateHash()).toEqual(before);
    // The connection is still Alice's, with both of its streams: a transfer by Alice pushes a
    // summary and a TransferMargin report on it.
    const pushes = summaries(c).length;
    expect(await c.request(await transfer(alice, 10))).toMatchObject({ status: 'Submitted' });
    await c.waitFor((m) => m.type === 'executionReport' && m.kind === 'TransferMargin');
    await c.waitFor(() => summaries(c).length > pushes);
    // Alice holds her only place: a second socket of hers is refused for the cap.
    const d = await WsClient.connect(t.venue.ws);
    expect(
      await d.request({ type: 'authenticate', signature: await alice.authenticate() }),
    ).toMatchObject({ type: 'error', code: 5000 });
    // The refused message itself still works once the connection has logged out.
    expect(await c.request({ type: 'logout' })).toMatchObject({ type: 'logoutSuccess' });
    expect(await c.request({ type: 'authenticate', signature: bobAuth })).toMatchObject({
      type: 'authenticateSuccess',
      account: bob.address,
    });
  });
});

describe('closing', () => {
  it('a socket that closes while its authenticate is verified holds no place in the cap', async () => {
    t = await startTestVenue({ config: withLimits({ connectionsPerAccount: 1 }) });
    const alice = t.wallet(0);
    await t.invite(alice);
    const gone = await WsClient.connect(t.venue.ws);
    gate.holdNext = true;
    gone.ws.send(JSON.stringify({ type: 'authenticate', signature: await alice.authenticate() }));
    while (gate.held.length === 0) await sleep(5);
    await gone.close();
    await sleep(50);
    gate.held.shift()!();
    await sleep(100);
    const c = await t.connect(alice);
    expect((await c.request({ type: 'ping' })).type).toBe('pong');
  });

  it('shutting down closes sockets with 1001', async () => {
    t = await startTestVenue();
    const c = await WsClient.connect(t.venue.ws);
    const closed = new Promise<number>((r) => c.ws.once('close', (code) => r(code)));
    await t.venue.close();
    expect(await closed).toBe(1001);
    t = undefined;
  });

  it('an idle peer that never answers the close handshake is cut off a second later', async () => {
    t = await startTestVenue({ config: withLimits({ pingIntervalMs: 100, idleTimeoutMs: 200 }) });
    const url = new URL(t.venue.ws);
    const socket = tcpConnect(Number(url.port), url.hostname);
    await new Promise((r) => socket.once('connect', r));
    const started = performance.now();
    socket.write(
      `GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nUpgrade: websocket\r\n` +
        'Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n' +
        'Sec-WebSocket-Version: 13\r\n\r\n',
    );
    let received = '';
    socket.on('data', (d: Buffer) => {
      received += d.toString('latin1');
    });
    // Never answers a ping or the close frame.
    await new Promise((r) => socket.once('close', r));
    const elapsed = performance.now() - started;
    expect(received).toMatch(/^HTTP\/1.1 101/);
    expect(received).toContain('idle timeout');
    expect(elapsed).toBeGreaterThan(1_100);
    expect(elapsed).toBeLessThan(10_000);
  });
});

describe('per-second rate on an authenticated connection', () => {
  it('a signed message counts once: on arrival, not again at its signature', async () => {
    t = await startTestVenue({ config: withLimits({ walletRequestsPerSecond: 7 }) });
    const alice = t.wallet(0);
    await t.invite(alice);
    await sleep(1_100); // the referral leaves the window
    const messages: Record<string, unknown>[] = [
      {
        type: 'placeOrder',
        signature: await alice.sign('Order', limitOrder(true, px(60000), btc(0.01))),
      },
      {
        type: 'cancelOrder',
        signature: await alice.sign('Cancel', { market: 1, orderId: 99n, ...fresh() }),
      },
      {
        type: 'replaceOrder',
        signature: await alice.sign('Replace', {
          market: 1,
          orderId: 99n,
          price: px(60000),
          quantity: btc(0.01),
          ...fresh(),
        }),
      },
      { type: 'cancelAll', signature: await alice.sign('CancelAll', { market: 1, ...fresh() }) },
      {
        type: 'claimLiquidation',
        signature: await alice.sign('ClaimLiquidation', {
          auctionId: 1n,
          quantity: btc(0.01),
          maxPrice: px(60000),
          ...fresh(),
        }),
      },
      await transfer(alice),
    ];
    // The authenticate is the first of 7; the six messages fill the window exactly.
    const c = await t.connect(alice);
    const answers = await Promise.all(messages.map((m) => c.request(m)));
    expect(answers.map((a) => a.code)).not.toContain(4029);
  });

  it('re-authenticating as the same wallet counts once', async () => {
    t = await startTestVenue({ config: withLimits({ walletRequestsPerSecond: 3 }) });
    const alice = t.wallet(0);
    await t.invite(alice);
    await sleep(1_100);
    const again = await alice.authenticate();
    const c = await t.connect(alice);
    expect(await c.request({ type: 'authenticate', signature: again })).toMatchObject({
      type: 'authenticateSuccess',
    });
    // Authenticate, the arrival of the second and this ping: 3 of 3.
    expect((await c.request({ type: 'ping' })).type).toBe('pong');
  });
});

describe('wire details', () => {
  it('ids of 1 to 64 characters of [A-Za-z0-9_-] are echoed; pong and authenticateSuccess carry serverTime', async () => {
    t = await startTestVenue();
    const alice = t.wallet(0);
    await t.invite(alice);
    const c = await WsClient.connect(t.venue.ws);
    for (const id of ['x', '-', '_', 'a-b_C9', 'z'.repeat(64)]) {
      c.ws.send(JSON.stringify({ type: 'ping', id }));
      const pong = await c.waitFor((m) => m.id === id);
      expect(pong).toEqual({ type: 'pong', serverTime: expect.any(Number), id });
    }
    // One character more is refused, and the refusal carries no id (the id is not echoed).
    c.inbox.length = 0;
    c.ws.send(JSON.stringify({ type: 'ping', id: 'z'.repeat(65) }));
    const refused = await c.waitFor((m) => m.type === 'error' || m.type === 'pong');
    expect(refused).toEqual({
      type: 'error',
      code: 4000,
      message: 'INVALID_REQUEST: id must be 1-64 characters of [A-Za-z0-9_-]',
    });
    const before = Date.now();
    const auth = await c.request({ type: 'authenticate', signature: await alice.authenticate() });
    expect(auth).toEqual({
      type: 'authenticateSuccess',
      account: alice.address,
      serverTime: expect.any(Number),
      id: expect.any(String),
    });
    expect(Math.abs(Number(auth.serverTime) - before)).toBeLessThan(5_000);
  });

  it('a rate-limit refusal echoes the request id', async () => {
    t = await startTestVenue({ config: withLimits({ walletRequestsPerSecond: 2 }) });
    const alice = t.wallet(0);
    await t.invite(alice);
    await sleep(1_100);
    const c = await t.connect(alice);
    // One burst: whatever the authenticate left in the window, the third ping is over 2.
    for (const id of ['p1', 'p2', 'over']) c.ws.send(JSON.stringify({ type: 'ping', id }));
    expect(await c.waitFor((m) => m.id === 'over')).toMatchObject({
      type: 'error',
      code: 4029,
      retryAfterMs: expect.any(Number),
    });
  });

  it('a fromSeq with nothing missed answers replay null', async () => {
    t = await startTestVenue();
    const alice = t.wallet(0);
    await t.invite(alice);
    await t.fund(alice, '100');
    const first = await t.connect(alice);
    const seq = Number((await first.request({ type: 'subscribeTrading' })).seq);
    expect(seq).toBeGreaterThan(0);
    const c = await t.connect(alice);
    expect(await c.request({ type: 'subscribeTrading', fromSeq: seq })).toMatchObject({
      type: 'subscribeTradingSuccess',
      seq,
      replay: null,
      resyncRequired: false,
    });
  });

  it('a negative fromSeq is 4000 and subscribes nothing', async () => {
    t = await startTestVenue();
    const alice = t.wallet(0);
    await t.invite(alice);
    const c = await t.connect(alice);
    const r = await c.request({ type: 'subscribeTrading', fromSeq: -1 });
    expect(r).toMatchObject({ type: 'error', code: 4000 });
    expect(String(r.message)).toMatch(/fromSeq/);
    expect(await c.request({ type: 'subscribeTrading' })).toMatchObject({
      type: 'subscribeTradingSuccess',
    });
  });
});

describe('transferMargin body agreement', () => {
  it('each unsigned field that disagrees with the signed payload is 4000 and changes nothing', async () => {
    const { alice, c } = await twoTraders();
    const good = await transfer(alice, 100);
    const zero = {
      ...(await transfer(alice, 0)),
      amount: '0',
    };
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ ...good, amount: 100 }, /amount must be a decimal string/],
      [zero, /amount must be positive/],
      [{ ...good, amount: '100.0000001' }, /is not a decimal with at most 6 decimals/],
      // Reliability-anchors B6: an amount no token can back is input, refused as such.
      [{ ...good, amount: '1000000000000000000000000000000' }, /above the largest amount/],
      [{ ...good, amount: '50' }, /does not match the signed amount 100/],
      [{ ...good, direction: 'sideways' }, /direction must be/],
      [{ ...good, direction: 'isolatedToCross' }, /direction does not match flags/],
      [{ ...good, instrument: 'ETH-PERP' }, /instrument does not name the signed market/],
      [{ ...good, instrument: undefined }, /instrument does not name the signed market/],
    ];
    const before = await t!.stateHash();
    for (const [m, pattern] of cases) {
      const r = await c.request(m);
      expect(r).toMatchObject({ type: 'error', code: 4000 });
      expect(String(r.message)).toMatch(pattern);
    }
    expect(await t!.stateHash()).toEqual(before);
    expect(await c.request(good)).toMatchObject({
      type: 'marginTransferred',
      status: 'Submitted',
    });
  });
});

describe('authenticate whose signature check could not run', () => {
  it('is 5000 with retryAfterMs and consumes nothing: the same message then succeeds', async () => {
    t = await startTestVenue();
    const alice = t.wallet(0);
    await t.invite(alice);
    const c = await WsClient.connect(t.venue.ws);
    const signature = await alice.authenticate();
    gate.fail = true;
    expect(await c.request({ type: 'authenticate', signature })).toMatchObject({
      type: 'error',
      code: 5000,
      retryAfterMs: 1000,
    });
    gate.fail = false;
    expect(await c.request({ type: 'authenticate', signature })).toMatchObject({
      type: 'authenticateSuccess',
    });
  });
});

describe('connections per address', () => {
  it('a closed trading socket gives its per-address slot back', async () => {
    t = await startTestVenue({ config: withLimits({ connectionsPerIp: 2 }) });
    for (let round = 0; round < 3; round++) {
      const open = [await WsClient.connect(t.venue.ws), await WsClient.connect(t.venue.ws)];
      for (const c of open) expect((await c.request({ type: 'ping' })).type).toBe('pong');
      for (const c of open) await c.close();
      await sleep(50);
    }
  });

  it('a closed socket frees exactly one slot', async () => {
    t = await startTestVenue({ config: withLimits({ connectionsPerIp: 2 }) });
    const a = await WsClient.connect(t.venue.ws);
    await WsClient.connect(t.venue.ws);
    await a.close();
    await sleep(50);
    await WsClient.connect(t.venue.ws);
    const refused = await WsClient.connect(t.venue.ws).then(
      () => 'open',
      (e: unknown) => String(e),
    );
    expect(refused).toMatch(/429/);
  });
});
