/**
 * The trading socket's slow-consumer cut-off (`ws/trading.ts`, protocol.md section 5), over real
 * sockets on 127.0.0.1: live messages for a client that stopped reading wait in its connection's
 * queue; above about 4 MB there the venue closes it with 1008 `slow consumer` (reports are never
 * dropped), and the client resyncs with `fromSeq`. A client of the same account that reads keeps
 * every report and its socket. The bound is a constant, so the test makes the 4 MB and more.
 */
import type { OrderRequest } from '@perp/core';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { DEFAULT_CONFIG } from '../src/index.js';
import type { Msg } from './support/client.js';
import { btc, px, startTestVenue, type TestVenue } from './support/fixture.js';

/** `HARD_BUFFER` in `ws/trading.ts`: unsent live bytes above which a client is cut off. */
const CUT_OFF_BYTES = 4 * 1024 * 1024;
/**
 * Live report bytes the test makes at most before it gives up on a cut-off: the bound plus what
 * the kernel and the socket's own buffer take in first, with a wide margin.
 */
const GIVE_UP_BYTES = 96 * 1024 * 1024;
/** Orders placed (then cancelled: two reports each) per round. */
const ROUND = 500;

let t: TestVenue;
beforeAll(async () => {
  t = await startTestVenue({
    config: {
      ...DEFAULT_CONFIG,
      limits: {
        ...DEFAULT_CONFIG.limits,
        maxWorkingOrdersPerAccount: ROUND,
        // The paused client answers no ping: only the cut-off may end it while the test runs.
        idleTimeoutMs: 600_000,
      },
    },
  });
  await t.oracle({ 'BTC-PERP': '60000' });
});
afterAll(async () => t.close());

const order = (i: number): OrderRequest => ({
  market: 1,
  isBuy: true,
  orderType: 0,
  timeInForce: 0,
  price: px(50_000 - (i % ROUND)),
  triggerPrice: 0n,
  quantity: btc(0.001),
  flags: 0,
  expiry: 0n,
  cloid: null,
  parentCloid: null,
});

const seqsOf = (reports: readonly Msg[]): number[] => reports.map((m) => m.seq as number);
const runOf = (from: number, to: number): number[] =>
  Array.from({ length: to - from + 1 }, (_, k) => from + k);

it('closes a client that stopped reading with 1008 slow consumer past 4 MB of live reports; a reader of the account keeps all', async () => {
  const alice = t.wallet(0);
  await t.invite(alice);
  await t.fund(alice, '1000000');
  const host = t.venue.context.host;
  // Reports before the test's (a deposit's, say) are not live for the clients below.
  const first = host.state.accounts.get(alice.address)!.reportSeq + 1;

  const reader = await t.connect(alice);
  expect(await reader.request({ type: 'subscribeTrading' })).toMatchObject({
    type: 'subscribeTradingSuccess',
  });
  // Bytes of live frames the venue had for the account's subscribers (the reader gets each one).
  let liveBytes = 0;
  reader.ws.on('message', (data: Buffer) => {
    liveBytes += data.length;
  });
  const slow = await t.connect(alice);
  expect(await slow.request({ type: 'subscribeTrading' })).toMatchObject({
    type: 'subscribeTradingSuccess',
  });
  // A detached connection gives its per-address slot back: the venue's sign of the cut-off.
  const released = vi.spyOn(t.venue.context.connectionSlots, 'release');
  const socket = (slow.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
  socket.pause();

  let lastSeq = 0;
  while (released.mock.calls.length === 0 && liveBytes < GIVE_UP_BYTES) {
    const placed = await Promise.all(
      runOf(1, ROUND).map((i) =>
        host.submit({ type: 'placeOrder', account: alice.address, order: order(i) }),
      ),
    );
    expect(placed.every((r) => r.outcome.ok)).toBe(true);
    await host.submit({ type: 'cancelAll', account: alice.address, market: 0 });
    lastSeq = host.state.accounts.get(alice.address)!.reportSeq;
    // The reader keeps up, so `liveBytes` counts what the slow client was offered too.
    await reader.waitFor((m) => m.type === 'executionReport' && m.seq === lastSeq, 60_000);
  }
  expect(released, `no cut-off after ${liveBytes} bytes of live reports`).toHaveBeenCalledTimes(1);
  // Not before the bound: the queue behind the socket only starts past its own buffer.
  expect(liveBytes).toBeGreaterThan(CUT_OFF_BYTES);

  // Reading again, the client gets what was handed to its socket, then the close.
  // A generous bound, so a venue that forgot the close frame fails here rather than hangs.
  const closed = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error('the cut-off client was never closed')),
      60_000,
    );
    slow.ws.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  socket.resume();
  await closed;
  expect(slow.closed).toEqual({ code: 1008, reason: 'slow consumer' });
  const got = seqsOf(slow.reports());
  const last = got[got.length - 1] ?? 0;
  expect(got).toEqual(runOf(first, last));
  expect(last).toBeLessThan(lastSeq);

  // The reader was not touched: every report in order, its socket open and answering.
  expect(seqsOf(reader.reports())).toEqual(runOf(first, lastSeq));
  expect(reader.closed).toBeNull();
  expect((await reader.request({ type: 'ping' })).type).toBe('pong');

  // The cut-off client resyncs with fromSeq and misses nothing.
  const again = await t.connect(alice);
  expect(await again.request({ type: 'subscribeTrading', fromSeq: last }, 60_000)).toMatchObject({
    type: 'subscribeTradingSuccess',
    seq: lastSeq,
    replay: { fromSeq: last, toSeq: lastSeq },
    resyncRequired: false,
  });
  await again.waitFor((m) => m.type === 'executionReport' && m.seq === lastSeq, 60_000);
  expect(seqsOf(again.reports())).toEqual(runOf(last + 1, lastSeq));
  await again.close();
  await reader.close();
}, 300_000);
