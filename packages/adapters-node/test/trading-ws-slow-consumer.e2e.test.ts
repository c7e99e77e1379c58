/**
 * The trading socket's slow-consumer cut-off (`ws/trading.ts`, protocol.md section 5), over real
 * sockets on 127.0.0.1: live messages for a client that stopped reading wait in its connection's
 * queue; above `limits.slowConsumerBytes` (4 MiB by default) there and in its socket's buffer the
 * venue closes it with 1008 `slow consumer` (reports are never dropped), and the client resyncs
 * with `fromSeq`. A client of the same account that reads keeps every report and its socket. A
 * client that never reads again is not kept for `ws`'s 30 s close timeout: its socket goes once
 * the close frame cannot get out.
 */
import type { Socket } from 'node:net';
import type { OrderRequest } from '@perp/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEFAULT_CONFIG } from '../src/index.js';
import { CUT_OFF_GRACE_MS } from '../src/ws/trading.js';
import type { Msg, WsClient } from './support/client.js';
import { btc, px, startTestVenue, type TestVenue, withVenueEnd } from './support/fixture.js';

/** The default `limits.slowConsumerBytes`: unsent live bytes above which a client is cut off. */
const CUT_OFF_BYTES = 4 * 1024 * 1024;
/**
 * Live report bytes the test makes at most before it gives up on a cut-off: the bound plus what
 * the kernel and the socket's own buffer take in first, with a wide margin.
 */
const GIVE_UP_BYTES = 96 * 1024 * 1024;
/** Orders placed (then cancelled: two reports each) per round. */
const ROUND = 500;

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

/** Resolves with how `c` closed; rejects if it is still open after `ms`. */
const closeOf = (c: WsClient, ms: number): Promise<{ code: number; reason: string }> =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`still open after ${ms} ms`)), ms);
    c.ws.once('close', (code: number, reason: Buffer) => {
      clearTimeout(timer);
      resolve({ code, reason: String(reason) });
    });
  });

/** The client-side TCP socket of `c`, to stop and resume reading. */
const socketOf = (c: WsClient): Socket => (c.ws as unknown as { _socket: Socket })._socket;

describe('the default bound over real sockets', () => {
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
    // A generous bound, so a venue that forgot the close frame fails here rather than hangs.
    const closed = closeOf(slow, 120_000);
    // A detached connection gives its per-address slot back: the venue's sign of the cut-off.
    // The client reads again at once: it gets what was handed to its socket, then the close.
    const slots = t.venue.context.connectionSlots;
    const release = slots.release.bind(slots);
    const socket = socketOf(slow);
    const released = vi.spyOn(slots, 'release').mockImplementation((ip) => {
      release(ip);
      socket.resume();
    });
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
    const calls = released.mock.calls.length;
    released.mockRestore();
    expect(calls, `no cut-off after ${liveBytes} bytes of live reports`).toBe(1);
    // Not before the bound: the queue behind the socket only starts past its own buffer.
    expect(liveBytes).toBeGreaterThan(CUT_OFF_BYTES);

    expect(await closed).toEqual({ code: 1008, reason: 'slow consumer' });
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
});

describe('a configured bound, against a client that never reads again', () => {
  /** `limits.slowConsumerBytes` of this venue: a quarter of the default. */
  const BOUND = 1024 * 1024;
  let t: TestVenue;
  beforeAll(async () => {
    t = await startTestVenue({
      config: {
        ...DEFAULT_CONFIG,
        limits: {
          ...DEFAULT_CONFIG.limits,
          slowConsumerBytes: BOUND,
          // Room for every order the test places: no cancels, so one report per order.
          maxWorkingOrdersPerAccount: 100_000,
          idleTimeoutMs: 600_000,
        },
      },
    });
    await t.oracle({ 'BTC-PERP': '60000' });
  });
  afterAll(async () => t.close());

  it('counts the socket buffer with the queue, and lets the socket go once the close frame cannot get out', async () => {
    const alice = t.wallet(1);
    await t.invite(alice);
    await t.fund(alice, '1000000');
    const host = t.venue.context.host;
    const reader = await t.connect(alice);
    expect(await reader.request({ type: 'subscribeTrading' })).toMatchObject({
      type: 'subscribeTradingSuccess',
    });
    // The size of each live frame, by seq (the reader gets each one the slow client is offered).
    const frameBytes = new Map<number, number>();
    reader.ws.on('message', (data: Buffer) => {
      const m = JSON.parse(String(data)) as Msg;
      if (m.type === 'executionReport') frameBytes.set(m.seq as number, data.length);
    });

    // The venue's end of the slow client's connection: corked, it hands the kernel nothing, as
    // when a client reads nothing and the kernel's buffers are full. Frames stay in the socket's
    // buffer (`bufferedAmount`); the connection's queue takes the rest once that is 256 KiB.
    const { client: slow, venueEnd } = await withVenueEnd(t, () => t.connect(alice));
    expect(await slow.request({ type: 'subscribeTrading' })).toMatchObject({
      type: 'subscribeTradingSuccess',
    });
    const closed = closeOf(slow, 60_000);
    const first = host.state.accounts.get(alice.address)!.reportSeq + 1;
    venueEnd.cork();

    // One order, one report, at a time: the report whose offer cut the client off is known.
    const slots = t.venue.context.connectionSlots;
    const release = slots.release.bind(slots);
    let cut: { seq: number; at: number } | null = null;
    const released = vi.spyOn(slots, 'release').mockImplementation((ip) => {
      release(ip);
      cut = { seq: host.state.accounts.get(alice.address)!.reportSeq, at: performance.now() };
    });
    for (let i = 0; cut === null && i < 20_000; i++) {
      const r = await host.submit({ type: 'placeOrder', account: alice.address, order: order(i) });
      expect(r.outcome.ok).toBe(true);
    }
    released.mockRestore();
    if (cut === null) throw new Error('no cut-off after 20,000 reports');
    const { seq: cutSeq, at: cutAt } = cut as { seq: number; at: number };
    await reader.waitFor((m) => m.type === 'executionReport' && m.seq === cutSeq, 60_000);
    const offered = (to: number): number => {
      let bytes = 0;
      for (let seq = first; seq <= to; seq++) bytes += frameBytes.get(seq)!;
      return bytes;
    };
    // Cut off by the report that took what it had not taken past the bound, and not before:
    // frames in the socket's buffer count (each with its 4-byte header), not only the queue's.
    // Counting the queue alone, the client would have been offered 256 KiB more.
    expect(offered(cutSeq - 1)).toBeLessThanOrEqual(BOUND);
    expect(offered(cutSeq) + 4 * (cutSeq - first + 1)).toBeGreaterThan(BOUND);

    // Its close frame is stuck behind the megabyte: the socket goes after the grace, not after
    // ws's 30 s, and the client sees the connection drop (1006: no close frame came).
    expect((await closed).code).toBe(1006);
    const lingered = performance.now() - cutAt;
    expect(lingered).toBeGreaterThanOrEqual(CUT_OFF_GRACE_MS - 50);
    expect(lingered).toBeLessThan(CUT_OFF_GRACE_MS + 5_000);
    expect(venueEnd.destroyed).toBe(true);

    // The reader was not touched.
    expect(reader.closed).toBeNull();
    expect((await reader.request({ type: 'ping' })).type).toBe('pong');
    await reader.close();
  }, 120_000);
});

describe('a bound smaller than a replay', () => {
  /** `limits.slowConsumerBytes` of this venue: less than the replay below. */
  const BOUND = 256 * 1024;
  let t: TestVenue;
  beforeAll(async () => {
    t = await startTestVenue({
      config: {
        ...DEFAULT_CONFIG,
        limits: { ...DEFAULT_CONFIG.limits, slowConsumerBytes: BOUND, idleTimeoutMs: 600_000 },
      },
    });
    await t.oracle({ 'BTC-PERP': '60000' });
  });
  afterAll(async () => t.close());

  it('delivers a fromSeq replay of more than the bound, and live reports after it, to a client that drains late', async () => {
    const alice = t.wallet(2);
    await t.invite(alice);
    await t.fund(alice, '1000000');
    const host = t.venue.context.host;
    const place = (n: number) =>
      Promise.all(
        runOf(1, n).map((i) =>
          host.submit({ type: 'placeOrder', account: alice.address, order: order(i) }),
        ),
      );
    await place(ROUND);
    await host.submit({ type: 'cancelAll', account: alice.address, market: 0 });
    const replayed = host.state.accounts.get(alice.address)!.reportSeq;

    const { client, venueEnd } = await withVenueEnd(t, () => t.connect(alice));
    // Nothing reaches the kernel until the client is said to read again: the replay's frames
    // pile up in the socket's buffer, as far as the venue lets them.
    venueEnd.cork();
    const released = vi.spyOn(t.venue.context.connectionSlots, 'release');
    const ack = client.request({ type: 'subscribeTrading', fromSeq: 0 }, 30_000);
    await new Promise((r) => setTimeout(r, 200));
    // Live reports queue behind the replay; the replay's frames take at most a quarter of the
    // bound, so these few do not reach it.
    await place(10);
    const last = host.state.accounts.get(alice.address)!.reportSeq;
    expect(released).not.toHaveBeenCalled();
    released.mockRestore();

    venueEnd.uncork();
    expect(await ack).toMatchObject({
      type: 'subscribeTradingSuccess',
      replay: { fromSeq: 0, toSeq: replayed },
    });
    await client.waitFor((m) => m.type === 'executionReport' && m.seq === last, 30_000);
    expect(seqsOf(client.reports())).toEqual(runOf(1, last));
    const replayBytes = client
      .reports()
      .filter((m) => m.replay === true)
      .reduce((n, m) => n + JSON.stringify(m).length, 0);
    expect(replayBytes).toBeGreaterThan(BOUND);
    expect(client.closed).toBeNull();
  }, 120_000);
});
