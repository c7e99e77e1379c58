/**
 * `subscribeTrading {fromSeq}` replays of any length reach a client that keeps reading: the
 * replay is paced by the socket's drain, never cut off as a slow consumer (the cut-off is for
 * live messages piling up behind a reader that stopped). And a `fromSeq` the venue never reached
 * asks the client to resync.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../src/index.js';
import { btc, px, startTestVenue, type TestVenue } from './support/fixture.js';

let t: TestVenue;
beforeAll(async () => {
  // The long replay comes from 12,000 orders resting on one account: above the default cap.
  t = await startTestVenue({
    config: {
      ...DEFAULT_CONFIG,
      limits: { ...DEFAULT_CONFIG.limits, maxWorkingOrdersPerAccount: 12_000 },
    },
  });
  await t.oracle({ 'BTC-PERP': '60000' });
});
afterAll(async () => t.close());

it('replays 24,001 reports (about 20 MB, five times the slow-consumer limit) to a reader that paused first', async () => {
  const alice = t.wallet(0);
  await t.invite(alice);
  await t.fund(alice, '1000000');
  const host = t.venue.context.host;
  const N = 12_000;
  const placed = [];
  for (let i = 0; i < N; i++) {
    placed.push(
      host.submit({
        type: 'placeOrder',
        account: alice.address,
        order: {
          market: 1,
          isBuy: true,
          orderType: 0,
          timeInForce: 0,
          price: px(50_000 - (i % 500)),
          triggerPrice: 0n,
          quantity: btc(0.001),
          flags: 0,
          expiry: 0n,
          cloid: null,
          parentCloid: null,
        },
      } as never),
    );
  }
  expect((await Promise.all(placed)).every((r) => r.outcome.ok)).toBe(true);
  await host.submit({ type: 'cancelAll', account: alice.address, market: 0 } as never);
  const seq = host.state.accounts.get(alice.address)!.reportSeq;
  expect(seq).toBe(2 * N + 1);

  const c = await t.connect(alice);
  // Stop reading before asking, so the kernel's buffers fill and the venue must wait.
  const socket = (c.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
  const ack = c.request({ type: 'subscribeTrading', fromSeq: 0 }, 60_000);
  socket.pause();
  await new Promise((r) => setTimeout(r, 1_500));
  socket.resume();
  expect(await ack).toMatchObject({
    type: 'subscribeTradingSuccess',
    seq,
    replay: { fromSeq: 0, toSeq: seq },
    resyncRequired: false,
  });
  await c.waitFor((m) => m.type === 'executionReport' && m.seq === seq, 60_000);
  expect(c.closed).toBeNull();
  const seqs = c.reports().map((m) => m.seq as number);
  expect(seqs.length).toBe(seq);
  expect(seqs.every((s, i) => s === i + 1)).toBe(true);
  // Live reports follow the replay, in order.
  const bob = t.wallet(1);
  await t.invite(bob);
  await t.fund(bob, '1000000');
  await host.submit({
    type: 'placeOrder',
    account: alice.address,
    order: {
      market: 1,
      isBuy: true,
      orderType: 0,
      timeInForce: 0,
      price: px(50_000),
      triggerPrice: 0n,
      quantity: btc(0.001),
      flags: 0,
      expiry: 0n,
      cloid: null,
      parentCloid: null,
    },
  } as never);
  const next = await c.waitFor((m) => m.type === 'executionReport' && m.seq === seq + 1);
  expect(next.kind).toBe('OrderAccepted');
  await c.close();
}, 180_000);

it('answers resyncRequired for a fromSeq beyond the account seq (a seq this venue never sent)', async () => {
  const carol = t.wallet(2);
  await t.invite(carol);
  const c = await t.connect(carol);
  const ack = await c.request({ type: 'subscribeTrading', fromSeq: 999 });
  expect(ack).toMatchObject({
    type: 'subscribeTradingSuccess',
    replay: null,
    resyncRequired: true,
  });
  await c.close();
});
