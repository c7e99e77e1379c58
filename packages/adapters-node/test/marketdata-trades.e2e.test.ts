/**
 * The public trade feed of a running venue (our extension, docs/protocol-decisions.md): the
 * market-data `trades` channel pushes each print of a real match in trade order, a bust as
 * `tradeBust`; `GET /api/trades` answers the recent prints newest first, busted ones left out,
 * and answers the same after a restart (from the read-model checkpoint, or the journal).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../src/index.js';
import type { Msg, Wallet, WsClient as WsClientType } from './support/client.js';
import { WsClient } from './support/client.js';
import { btc, limitOrder, px, startTestVenue, type TestVenue } from './support/fixture.js';

const trades = (c: WsClientType): Msg[] =>
  c.inbox.filter((m) => m.type === 'trade' || m.type === 'tradeBust');

/** Every message `c` received up to a ping's answer (the socket delivers in order). */
async function settled(c: WsClientType): Promise<void> {
  await c.request({ type: 'ping' });
}

async function place(
  w: Wallet,
  ws: WsClientType,
  buy: boolean,
  price: number,
  qty: number,
  ioc = false,
): Promise<Msg> {
  const r = await ws.request({
    type: 'placeOrder',
    signature: await w.sign(
      'Order',
      limitOrder(buy, px(price), btc(qty), ioc ? { timeInForce: 2 } : {}),
    ),
  });
  expect(r.type, JSON.stringify(r)).toBe('orderAck');
  return r;
}

describe('the public trade feed', () => {
  let t: TestVenue;
  let md: WsClientType;
  let alice: Wallet;
  let bob: Wallet;
  let a: WsClientType;
  let b: WsClientType;
  const dir = mkdtempSync(join(tmpdir(), 'perp-tape-'));
  /** The prints pushed before the late subscriber joined. */
  let early: Msg[] = [];

  beforeAll(async () => {
    t = await startTestVenue({ dataDir: dir });
    await t.oracle({ 'BTC-PERP': '65000' });
    [alice, bob] = [t.wallet(0), t.wallet(1)];
    for (const w of [alice, bob]) {
      await t.invite(w);
      await t.fund(w, '100000');
    }
    [a, b] = [await t.connect(alice), await t.connect(bob)];
    md = await WsClient.connect(t.venue.marketdata);
  });
  afterAll(async () => {
    for (const c of [md, a, b]) await c?.close();
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('pushes each print of real matches in trade order, with exact fields', async () => {
    const ack = await md.request({ type: 'subscribe', channel: 'trades', instrument: 'BTC-PERP' });
    expect(ack).toEqual({
      type: 'subscribed',
      id: ack.id,
      channel: 'trades',
      instrument: 'BTC-PERP',
    });
    // No snapshot: the recent prints come from REST.
    await settled(md);
    expect(md.inbox.filter((m) => m.type !== 'pong' && m.type !== 'subscribed')).toEqual([]);

    await place(bob, b, false, 65010, 0.1);
    await place(bob, b, false, 65020, 0.2);
    // Alice takes both offers: two prints, the better price first, Alice (the taker) buying.
    await place(alice, a, true, 65020, 0.25, true);
    await place(alice, a, true, 64990, 0.3);
    // Bob hits Alice's bid: the taker sells.
    await place(bob, b, false, 64990, 0.05, true);
    await md.waitFor((m) => m.type === 'trade' && m.side === 'Sell');

    const fills = (await t.api('GET', `/account/trades?wallet=${alice.address}`)).body
      .trades as Record<string, unknown>[];
    // The account history is newest first; the tape pushes oldest first.
    const ids = fills.map((f) => String(f.tradeId)).reverse();
    expect(ids).toHaveLength(3);
    const times = fills.map((f) => f.time).reverse();
    early = trades(md);
    expect(early).toEqual([
      {
        type: 'trade',
        instrument: 'BTC-PERP',
        tradeId: ids[0],
        price: '65010',
        quantity: '0.1',
        side: 'Buy',
        time: times[0],
      },
      {
        type: 'trade',
        instrument: 'BTC-PERP',
        tradeId: ids[1],
        price: '65020',
        quantity: '0.15',
        side: 'Buy',
        time: times[1],
      },
      {
        type: 'trade',
        instrument: 'BTC-PERP',
        tradeId: ids[2],
        price: '64990',
        quantity: '0.05',
        side: 'Sell',
        time: times[2],
      },
    ]);
    expect(Number(ids[1])).toBeGreaterThan(Number(ids[0]));
    expect(Number(ids[2])).toBeGreaterThan(Number(ids[1]));
  });

  it('gives a late subscriber only the prints after its ack; unsubscribe ends them', async () => {
    const late = await WsClient.connect(t.venue.marketdata);
    try {
      await late.request({ type: 'subscribe', channel: 'trades', instrument: 'BTC-PERP' });
      // Subscribed to another instrument too: its prints never carry BTC's.
      await late.request({ type: 'subscribe', channel: 'trades', instrument: 'ETH-PERP' });
      await settled(late);
      expect(trades(late)).toEqual([]);
      await place(bob, b, false, 64990, 0.02, true);
      const next = await late.waitFor((m) => m.type === 'trade');
      expect(next).toMatchObject({ instrument: 'BTC-PERP', price: '64990', quantity: '0.02' });
      await md.waitFor((m) => m.type === 'trade' && m.tradeId === next.tradeId);
      await settled(late);
      expect(trades(late)).toEqual([next]);
      expect(trades(md)).toEqual([...early, next]);

      const off = await late.request({
        type: 'unsubscribe',
        channel: 'trades',
        instrument: 'BTC-PERP',
      });
      expect(off).toEqual({
        type: 'unsubscribed',
        id: off.id,
        channel: 'trades',
        instrument: 'BTC-PERP',
      });
      await place(bob, b, false, 64990, 0.03, true);
      await md.waitFor((m) => m.type === 'trade' && m.quantity === '0.03');
      await settled(late);
      expect(trades(late)).toEqual([next]);
    } finally {
      await late.close();
    }
  });

  it('announces a bust with tradeBust, and REST leaves the busted print out', async () => {
    const before = (await t.api('GET', '/trades?instrument=BTC-PERP')).body.trades as Msg[];
    expect(before).toHaveLength(5);
    const busted = early[1] as Msg;
    const r = await t.admin('POST', `/admin/trades/${busted.tradeId}/bust`, { reason: 'test' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const bust = await md.waitFor((m) => m.type === 'tradeBust');
    expect(bust).toEqual({
      type: 'tradeBust',
      instrument: 'BTC-PERP',
      tradeId: busted.tradeId,
      time: expect.any(Number),
    });
    expect(bust.time as number).toBeGreaterThanOrEqual(busted.time as number);
    // The only message the bust sent on the tape, after every print.
    expect(trades(md).at(-1)).toEqual(bust);
    expect(trades(md).filter((m) => m.type === 'tradeBust')).toHaveLength(1);
    const after = (await t.api('GET', '/trades?instrument=BTC-PERP')).body.trades as Msg[];
    expect(after).toEqual(before.filter((p) => p.tradeId !== busted.tradeId));
  });

  it('GET /api/trades: the newest prints first, as the socket sent them, limited', async () => {
    const pushed = trades(md)
      .filter((m) => m.type === 'trade')
      .map(({ type: _type, ...rest }) => rest);
    const r = await t.api('GET', '/trades?instrument=BTC-PERP');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      instrument: 'BTC-PERP',
      trades: pushed.filter((p) => p.tradeId !== (early[1] as Msg).tradeId).reverse(),
    });
    expect((r.body.trades as Msg[]).map((p) => p.price)).toEqual([
      '64990',
      '64990',
      '64990',
      '65010',
    ]);
    const two = await t.api('GET', '/trades?instrument=BTC-PERP&limit=2');
    expect(two.body.trades).toEqual((r.body.trades as Msg[]).slice(0, 2));
    const eth = await t.api('GET', '/trades?instrument=ETH-PERP&limit=1000');
    expect(eth.body).toEqual({ instrument: 'ETH-PERP', trades: [] });
  });

  it('refuses bad subscriptions and reads as /api/candles does, changing nothing', async () => {
    const state = await t.stateHash();
    const tape = (await t.api('GET', '/trades?instrument=BTC-PERP')).body;
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ type: 'subscribe', channel: 'trades' }, /channel trades needs an instrument/],
      [{ type: 'subscribe', channel: 'trades', instrument: 5 }, /needs an instrument/],
      [{ type: 'subscribe', channel: 'trades', instrument: 'NOPE-PERP' }, /unknown instrument/],
      [{ type: 'unsubscribe', channel: 'trades' }, /needs an instrument/],
    ];
    for (const [message, pattern] of cases) {
      const e = await md.request(message);
      expect(e).toMatchObject({ type: 'error', code: 4000 });
      expect(String(e.message)).toMatch(/^INVALID_REQUEST: /);
      expect(String(e.message)).toMatch(pattern);
    }
    const paths: [string, number, RegExp][] = [
      ['/trades', 400, /instrument is required/],
      ['/trades?instrument=', 400, /instrument is required/],
      ['/trades?instrument=NOPE-PERP', 404, /^unknown instrument NOPE-PERP$/],
      ['/trades?instrument=btc-perp', 404, /unknown instrument/],
      ['/trades?instrument=BTC-PERP&limit=0', 400, /limit must be in 1..1000/],
      ['/trades?instrument=BTC-PERP&limit=1001', 400, /limit must be in 1..1000/],
      ['/trades?instrument=BTC-PERP&limit=abc', 400, /limit must be an integer/],
      ['/trades?instrument=BTC-PERP&limit=1&limit=2', 400, /^limit given more than once$/],
      ['/trades?instrument=BTC-PERP&instrument=ETH-PERP', 400, /^instrument given more than once$/],
    ];
    for (const [path, status, message] of paths) {
      const r = await t.api('GET', path);
      expect(r.status, path).toBe(status);
      expect(String(r.body.error), path).toMatch(message);
      // The same answers as the candle history for the same instrument and limit faults.
      if (!path.includes('limit=1&')) {
        const candles = await t.api(
          'GET',
          path
            .replace('/trades', '/candles')
            .replace('instrument=BTC-PERP', 'instrument=BTC-PERP&interval=1m'),
        );
        expect([candles.status, candles.body.error], path).toEqual([r.status, r.body.error]);
      }
    }
    expect(await t.stateHash()).toEqual(state);
    expect((await t.api('GET', '/trades?instrument=BTC-PERP')).body).toEqual(tape);
    // The socket is still subscribed and usable.
    expect(await md.request({ type: 'ping' })).toMatchObject({ type: 'pong' });
  });

  it('answers the same prints after a restart from its data directory', async () => {
    const before = (await t.api('GET', '/trades?instrument=BTC-PERP&limit=1000')).body;
    expect((before.trades as Msg[]).length).toBe(4);
    for (const c of [md, a, b]) await c.close();
    await t.venue.close();
    // From the clean stop's snapshot and the read-model checkpoint beside it.
    t = await startTestVenue({ dataDir: dir });
    await t.venue.historyBackfill?.done;
    expect(t.venue.historyBackfill?.progress.source).toBe('checkpoint');
    expect((await t.api('GET', '/trades?instrument=BTC-PERP&limit=1000')).body).toEqual(before);
    await t.venue.close();
    // From the whole journal.
    t = await startTestVenue({ dataDir: dir, snapshots: false });
    expect(t.venue.historyBackfill).toBeNull();
    expect((await t.api('GET', '/trades?instrument=BTC-PERP&limit=1000')).body).toEqual(before);
    // And the tape goes on from there.
    [a, b] = [await t.connect(alice), await t.connect(bob)];
    md = await WsClient.connect(t.venue.marketdata);
    await md.request({ type: 'subscribe', channel: 'trades', instrument: 'BTC-PERP' });
    await place(bob, b, false, 65030, 0.01);
    await place(alice, a, true, 65030, 0.01, true);
    const next = await md.waitFor((m) => m.type === 'trade');
    expect(Number(next.tradeId)).toBeGreaterThan(Number((before.trades as Msg[])[0]?.tradeId));
    const now = (await t.api('GET', '/trades?instrument=BTC-PERP&limit=1000')).body.trades;
    const { type: _type, ...row } = next;
    expect(now).toEqual([row, ...(before.trades as Msg[])]);
  });
});

describe('GET /api/trades and the per-IP read budget', () => {
  it('counts toward the public-read budget (429 above it)', async () => {
    const t = await startTestVenue({
      config: { ...DEFAULT_CONFIG, limits: { ...DEFAULT_CONFIG.limits, publicReadsPerSecond: 5 } },
    });
    try {
      const answers = await Promise.all(
        Array.from({ length: 15 }, () => t.api('GET', '/trades?instrument=BTC-PERP')),
      );
      const statuses = answers.map((r) => r.status);
      expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(5);
      expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
    } finally {
      await t.close();
    }
  });
});
