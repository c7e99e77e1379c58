/**
 * The market-data socket of a running venue: orders placed through the trading socket show up in
 * the public book, trades in tickers and candles, with no authentication, and the books rebuild
 * from the journal on a restart.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listCheckpointFiles } from '../src/journal/read-model-files.js';
import { listSnapshotFiles } from '../src/journal/snapshots.js';
import { type Msg, WsClient } from './support/client.js';
import { btc, limitOrder, px, startTestVenue, type TestVenue } from './support/fixture.js';

describe('market data through the venue', () => {
  let t: TestVenue;
  let md: WsClient;
  /** The book's seq after the last change before the restart. */
  let lastSeq = 0;
  const dir = mkdtempSync(join(tmpdir(), 'perp-md-'));

  beforeAll(async () => {
    t = await startTestVenue({ dataDir: dir });
    await t.oracle({ 'BTC-PERP': '65000' });
    md = await WsClient.connect(t.venue.marketdata);
  });
  afterAll(async () => {
    await md.close();
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('publishes the book, the trade and the ticker of orders placed on the trading socket', async () => {
    const ack = await md.request({
      type: 'subscribe',
      channel: 'orderbook',
      instrument: 'BTC-PERP',
      depth: 5,
    });
    expect(ack).toMatchObject({
      type: 'subscribed',
      channel: 'orderbook',
      instrument: 'BTC-PERP',
      depth: 5,
    });
    const empty = await md.waitFor((m) => m.type === 'orderbook');
    expect(empty).toMatchObject({ bids: [], asks: [] });

    const [alice, bob] = [t.wallet(0), t.wallet(1)];
    for (const w of [alice, bob]) {
      await t.invite(w);
      await t.fund(w, '10000');
    }
    const [a, b] = [await t.connect(alice), await t.connect(bob)];
    await b.request({
      type: 'placeOrder',
      signature: await bob.sign('Order', limitOrder(false, px(65010), btc(0.2))),
    });
    await a.request({
      type: 'placeOrder',
      signature: await alice.sign('Order', limitOrder(true, px(64990), btc(0.3))),
    });
    const book = await md.waitFor(
      (m) =>
        m.type === 'orderbook' &&
        (m.bids as unknown[]).length === 1 &&
        (m.asks as unknown[]).length === 1,
    );
    expect(book).toMatchObject({ bids: [['64990', '0.3']], asks: [['65010', '0.2']] });

    await md.request({ type: 'subscribe', channel: 'ticker', instrument: 'BTC-PERP' });
    await md.request({
      type: 'subscribe',
      channel: 'candles',
      instrument: 'BTC-PERP',
      interval: '1m',
    });
    // Alice lifts the offer: one trade of 0.2 at 65010.
    await a.request({
      type: 'placeOrder',
      signature: await alice.sign(
        'Order',
        limitOrder(true, px(65010), btc(0.2), { timeInForce: 2 }),
      ),
    });
    const after = await md.waitFor(
      (m) =>
        m.type === 'orderbook' &&
        (m.asks as unknown[]).length === 0 &&
        (m.bids as unknown[]).length === 1,
    );
    expect(after.bids).toEqual([['64990', '0.3']]);
    expect(after.seq as number).toBeGreaterThan(book.seq as number);
    lastSeq = after.seq as number;
    const ticker = (await md.waitFor(
      (m) => m.type === 'ticker' && m.last === '65010',
      15_000,
    )) as Msg;
    expect(ticker).toMatchObject({
      instrument: 'BTC-PERP',
      volume24h: '0.2',
      quoteVolume24h: '13002',
      index: '65000',
      bestBid: '64990',
      bestAsk: null,
    });
    const candle = await md.waitFor((m) => m.type === 'candle' && m.volume === '0.2', 5_000);
    expect(candle).toMatchObject({
      interval: '1m',
      open: '65010',
      high: '65010',
      low: '65010',
      close: '65010',
      trades: 1,
      closed: false,
    });
    await a.close();
    await b.close();
  });

  it('rebuilds books and 24 h statistics from the journal after a restart', async () => {
    await md.close();
    await t.venue.close();
    t = await startTestVenue({ dataDir: dir });
    // Restarted from its clean-stop snapshot: the statistics from before it come with the history
    // backfill (docs/durability.md, "Read models after a snapshot restart").
    await t.venue.historyBackfill?.done;
    md = await WsClient.connect(t.venue.marketdata);
    await md.request({ type: 'subscribe', channel: 'orderbook', instrument: 'BTC-PERP', depth: 5 });
    await md.request({ type: 'subscribe', channel: 'ticker', instrument: 'BTC-PERP' });
    // The book's seq is the engine's, rebuilt with it: the same book has the same seq, so a
    // client that keeps the highest seq across its reconnect takes the next change.
    expect(await md.waitFor((m) => m.type === 'orderbook')).toMatchObject({
      bids: [['64990', '0.3']],
      asks: [],
      seq: lastSeq,
    });
    expect(await md.waitFor((m) => m.type === 'ticker')).toMatchObject({
      last: '65010',
      volume24h: '0.2',
    });
    const bob = t.wallet(1);
    const b = await t.connect(bob);
    await b.request({
      type: 'placeOrder',
      signature: await bob.sign('Order', limitOrder(false, px(65020), btc(0.1))),
    });
    const next = await md.waitFor(
      (m) => m.type === 'orderbook' && (m.asks as unknown[]).length > 0,
    );
    expect(next).toMatchObject({ bids: [['64990', '0.3']], asks: [['65020', '0.1']] });
    expect(next.seq).toBe(lastSeq + 1);
    await b.close();
  });
});

describe('market status on the market-data surface', () => {
  const dir = mkdtempSync(join(tmpdir(), 'perp-md-status-'));
  let t: TestVenue | undefined;
  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const restTickers = async (v: TestVenue): Promise<Record<string, unknown>[]> => {
    const r = await v.api('GET', '/tickers');
    expect(r.status).toBe(200);
    return r.body.tickers as Record<string, unknown>[];
  };
  const statusOf = async (v: TestVenue, symbol: string): Promise<unknown> =>
    (await restTickers(v)).find((x) => x.instrument === symbol)?.status;
  const instrumentStatus = async (v: TestVenue, symbol: string): Promise<unknown> => {
    const r = await v.api('GET', '/instruments');
    const list = (Array.isArray(r.body) ? r.body : r.body.instruments) as Record<string, unknown>[];
    return list.find((x) => x.symbol === symbol)?.status;
  };

  it('a pause and a resume reach ticker and tickers subscribers at once, and GET /api/tickers', async () => {
    // Journal only: the first restart below replays every record.
    t = await startTestVenue({ dataDir: dir, snapshots: false });
    await t.oracle({ 'BTC-PERP': '65000' });
    const md = await WsClient.connect(t.venue.marketdata);
    await md.request({ type: 'subscribe', channel: 'ticker', instrument: 'BTC-PERP' });
    await md.request({ type: 'subscribe', channel: 'tickers' });
    expect(await md.waitFor((m) => m.type === 'ticker')).toMatchObject({ status: 'Active' });
    expect(await statusOf(t, 'BTC-PERP')).toBe('Active');
    // A price change just before takes the ticker's leading-edge push: without the status push
    // the pause would wait for the paced one, up to a second later.
    await t.oracle({ 'BTC-PERP': '65100' });
    await md.waitFor((m) => m.type === 'ticker' && m.index === '65100');
    const seen = md.inbox.length;
    const paused = await t.admin('POST', '/admin/markets/BTC-PERP/pause');
    expect(paused.status, JSON.stringify(paused.body)).toBe(200);
    const since = (m: Msg) => md.inbox.indexOf(m) >= seen;
    const pushed = await md.waitFor((m) => since(m) && m.type === 'ticker', 500);
    expect(pushed).toMatchObject({ instrument: 'BTC-PERP', status: 'Paused', index: '65100' });
    const list = await md.waitFor((m) => since(m) && m.type === 'tickers', 500);
    const others = (list.tickers as Msg[]).filter((x) => x.instrument !== 'BTC-PERP');
    expect((list.tickers as Msg[]).find((x) => x.instrument === 'BTC-PERP')?.status).toBe('Paused');
    expect(others.length).toBeGreaterThan(0);
    for (const x of others) expect(x.status).toBe('Active');
    // REST shows what the socket sent, with the name GET /api/instruments uses.
    expect(await statusOf(t, 'BTC-PERP')).toBe('Paused');
    expect(await instrumentStatus(t, 'BTC-PERP')).toBe('Paused');

    const resumedAt = md.inbox.length;
    expect((await t.admin('POST', '/admin/markets/BTC-PERP/resume')).status).toBe(200);
    expect(
      await md.waitFor((m) => md.inbox.indexOf(m) >= resumedAt && m.type === 'ticker', 500),
    ).toMatchObject({ status: 'Active' });
    expect(await statusOf(t, 'BTC-PERP')).toBe('Active');
    // Paused again for the restarts.
    expect((await t.admin('POST', '/admin/markets/BTC-PERP/pause')).status).toBe(200);
    await md.waitFor((m) => m.type === 'ticker' && m.status === 'Paused' && since(m), 500);
    await md.close();
  });

  it('survives a restart from the journal and from a snapshot', async () => {
    await t?.close();
    // Replayed from the journal's first record (no snapshot was ever written); this one writes a
    // snapshot, and the read models' checkpoint beside it, when it stops.
    expect(listSnapshotFiles(dir)).toEqual([]);
    const lines: string[] = [];
    t = await startTestVenue({ dataDir: dir, log: (line) => lines.push(line) });
    expect(lines.join('\n')).toMatch(/replayed \d+ journal records/);
    expect(lines.join('\n')).not.toMatch(/recovered from snapshot/);
    expect(await statusOf(t, 'BTC-PERP')).toBe('Paused');
    const md = await WsClient.connect(t.venue.marketdata);
    await md.request({ type: 'subscribe', channel: 'ticker', instrument: 'BTC-PERP' });
    expect(await md.waitFor((m) => m.type === 'ticker')).toMatchObject({ status: 'Paused' });
    await md.close();
    await t.close();
    const snapshot = listSnapshotFiles(dir)[0]?.seq;
    expect(snapshot).toBeDefined();
    expect(listCheckpointFiles(dir)[0]?.seq).toBe(snapshot);

    // From that snapshot and checkpoint: nothing of the journal is replayed.
    lines.length = 0;
    t = await startTestVenue({ dataDir: dir, log: (line) => lines.push(line) });
    expect(lines.join('\n')).toMatch(/recovered from snapshot/);
    expect(lines.join('\n')).not.toMatch(/replayed \d+ journal records/);
    expect(await statusOf(t, 'BTC-PERP')).toBe('Paused');
    const again = await WsClient.connect(t.venue.marketdata);
    await again.request({ type: 'subscribe', channel: 'tickers' });
    const list = await again.waitFor((m) => m.type === 'tickers');
    expect((list.tickers as Msg[]).find((x) => x.instrument === 'BTC-PERP')?.status).toBe('Paused');
    // Still a live status after the restart: a resume is pushed at once.
    const at = again.inbox.length;
    expect((await t.admin('POST', '/admin/markets/BTC-PERP/resume')).status).toBe(200);
    const pushed = await again.waitFor(
      (m) => again.inbox.indexOf(m) >= at && m.type === 'tickers',
      500,
    );
    expect((pushed.tickers as Msg[]).find((x) => x.instrument === 'BTC-PERP')?.status).toBe(
      'Active',
    );
    await again.close();
  });
});

describe('GET /api/orderbook', () => {
  let t: TestVenue;
  beforeAll(async () => {
    t = await startTestVenue();
    await t.oracle({ 'BTC-PERP': '65000' });
    const [alice, bob] = [t.wallet(0), t.wallet(1)];
    for (const w of [alice, bob]) {
      await t.invite(w);
      await t.fund(w, '100000');
    }
    const [a, b] = [await t.connect(alice), await t.connect(bob)];
    // Six bid levels (the best one held by two orders of two wallets) and two ask levels.
    const orders: [typeof alice, WsClient, boolean, number, number][] = [
      [alice, a, true, 64990, 0.1],
      [bob, b, true, 64990, 0.25],
      [alice, a, true, 64980, 0.3],
      [alice, a, true, 64970.5, 0.0001],
      [alice, a, true, 64960, 1],
      [alice, a, true, 64950, 2],
      [alice, a, true, 64940, 3],
      [bob, b, false, 65020, 0.5],
      [bob, b, false, 65010, 0.2],
    ];
    for (const [w, ws, buy, price, qty] of orders) {
      expect(
        await ws.request({
          type: 'placeOrder',
          signature: await w.sign('Order', limitOrder(buy, px(price), btc(qty))),
        }),
      ).toMatchObject({ type: 'orderAck' });
    }
  });
  afterAll(async () => t.close());

  it('is the market-data snapshot: same seq and levels, aggregated and sorted, cut at depth', async () => {
    const r = await t.api('GET', '/orderbook?instrument=BTC-PERP&depth=5');
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({
      instrument: 'BTC-PERP',
      depth: 5,
      bids: [
        ['64990', '0.35'],
        ['64980', '0.3'],
        ['64970.5', '0.0001'],
        ['64960', '1'],
        ['64950', '2'],
      ],
      asks: [
        ['65010', '0.2'],
        ['65020', '0.5'],
      ],
    });
    expect(r.body.type).toBeUndefined();
    const md = await WsClient.connect(t.venue.marketdata);
    await md.request({ type: 'subscribe', channel: 'orderbook', instrument: 'BTC-PERP', depth: 5 });
    const {
      type: _type,
      time: _wsTime,
      ...pushed
    } = await md.waitFor((m) => m.type === 'orderbook');
    await md.close();
    const { time, ...rest } = r.body;
    expect(rest).toEqual(pushed);
    expect(typeof time).toBe('number');
    // Without depth: the socket's default, 20.
    const all = await t.api('GET', '/orderbook?instrument=BTC-PERP');
    expect(all.body).toMatchObject({ depth: 20, seq: r.body.seq });
    expect(all.body.bids as unknown[]).toHaveLength(6);
  });

  it('refuses a missing or unknown instrument and a depth the socket does not offer', async () => {
    const cases: [string, number, RegExp][] = [
      ['/orderbook', 400, /instrument is required/],
      ['/orderbook?instrument=NOPE-PERP', 404, /unknown instrument/],
      ['/orderbook?instrument=btc-perp', 404, /unknown instrument/],
      ['/orderbook?instrument=BTC-PERP&depth=7', 400, /depth must be one of 5, 10, 20, 50/],
      ['/orderbook?instrument=BTC-PERP&depth=5.0', 400, /depth/],
      ['/orderbook?instrument=BTC-PERP&depth=', 400, /depth/],
      ['/orderbook?instrument=BTC-PERP&depth=5&depth=10', 400, /depth/],
    ];
    for (const [path, status, message] of cases) {
      const r = await t.api('GET', path);
      expect(r.status, path).toBe(status);
      expect(String(r.body.error), path).toMatch(message);
    }
  });
});
