/**
 * The market-data socket end to end: a real EngineHost over an in-test journal, driven with core
 * commands, served over real sockets on 127.0.0.1 and read with the `ws` client.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  auctionEvents,
  type Command,
  createEngineState,
  depthOf,
  type EngineState,
  formatDecimal,
  formatPrice,
  type InstrumentSettings,
  type JournalRecord,
  type JournalStore,
  liveAuctions,
  type Outcome,
} from '@perp/core';
import {
  BTC_SETTINGS,
  ETH_SETTINGS,
  instrument,
  type OrderSpec,
  orderRequest,
  px,
  T0,
  usd,
  wallet,
} from '@perp/core/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { ManualClock } from '../engine/clock.js';
import { type CommandInput, type CommandResult, EngineHost } from '../engine/host.js';
import type { LiveAuction } from './liquidations.js';
import {
  createMarketDataService,
  type MarketDataOptions,
  type MarketDataService,
} from './service.js';

type Msg = Record<string, unknown>;
type Level = [string, string];

/** A journal that keeps commands in memory: append returns the next seq. */
class TestJournal implements JournalStore {
  readonly records: JournalRecord[] = [];
  lastSeq = 0;
  /** While set, appends wait for it: their records are not durable yet. */
  private held: { promise: Promise<void>; release: () => void } | null = null;
  async append(commands: readonly Command[]): Promise<number> {
    if (this.held !== null) await this.held.promise;
    for (const command of commands) this.records.push({ seq: ++this.lastSeq, command });
    return this.lastSeq;
  }
  /** Holds every append until {@link release}. */
  hold(): void {
    let release = () => {};
    const promise = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.held = { promise, release };
  }
  release(): void {
    this.held?.release();
    this.held = null;
  }
  async *read(afterSeq = 0): AsyncIterable<JournalRecord> {
    for (const r of this.records) if (r.seq > afterSeq) yield r;
  }
  async close(): Promise<void> {}
}

/** A venue: host, clock, market-data service and an HTTP server that hands it upgrades. */
class Venue {
  readonly clock = new ManualClock(T0 + 10_000);
  readonly journal = new TestJournal();
  readonly host: EngineHost;
  service!: MarketDataService;
  server!: Server;
  url = '';
  private readonly clients: Client[] = [];

  constructor() {
    this.host = new EngineHost({
      // The slow-consumer floods rest thousands of orders from one account: no working-order cap.
      state: createEngineState({ maxWorkingOrdersPerAccount: Number.MAX_SAFE_INTEGER }, T0),
      journal: this.journal,
      clock: this.clock,
    });
  }

  static async start(options: Partial<MarketDataOptions> = {}): Promise<Venue> {
    const v = new Venue();
    v.service = createMarketDataService({ host: v.host, now: () => v.clock.now(), ...options });
    v.server = createServer();
    v.server.on('upgrade', (req, socket, head) => v.service.handleUpgrade(req, socket, head));
    await new Promise<void>((resolve) => v.server.listen(0, '127.0.0.1', resolve));
    v.url = `ws://127.0.0.1:${(v.server.address() as AddressInfo).port}`;
    return v;
  }

  async stop(): Promise<void> {
    for (const c of this.clients) c.ws.terminate();
    await this.service.close();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  async connect(): Promise<Client> {
    const c = await Client.connect(this.url);
    this.clients.push(c);
    return c;
  }

  get state(): EngineState {
    return this.host.state;
  }

  async run(input: CommandInput): Promise<CommandResult> {
    const r = await this.host.submit(input);
    if (!r.outcome.ok) throw new Error(`refused: ${r.outcome.code} ${r.outcome.message}`);
    return r;
  }

  async list(settings: InstrumentSettings): Promise<void> {
    await this.run({ type: 'setInstrument', instrument: instrument(settings) });
  }

  async fund(address: string, amount = '100000000'): Promise<void> {
    await this.run({ type: 'openAccount', account: address });
    const r = await this.run({
      type: 'deposit',
      account: address,
      amount: usd(amount),
      target: { mode: 'Cross', market: 0 },
    });
    const o = r.outcome as Outcome & { ok: true; kind: 'command' };
    await this.run({ type: 'settleDeposit', commandId: o.commandId, success: true });
  }

  async oracle(prices: Record<string, string>): Promise<void> {
    await this.run({
      type: 'oracle',
      prices: Object.entries(prices).map(([symbol, p]) => ({
        market: this.marketOf(symbol),
        price: px(p),
      })),
    });
  }

  marketOf(symbol: string): number {
    const id = this.state.symbols.get(symbol);
    if (id === undefined) throw new Error(`unknown ${symbol}`);
    return id;
  }

  submitOrder(address: string, symbol: string, order: OrderSpec): Promise<CommandResult> {
    const spec = this.state.markets.get(this.marketOf(symbol))!.spec;
    return this.run({ type: 'placeOrder', account: address, order: orderRequest(spec, order) });
  }

  /** A trade of `qty` at `price`: a resting sell from `maker`, crossed by an IOC buy from `taker`. */
  async trade(symbol: string, price: string, qty: string, maker = A, taker = B): Promise<void> {
    await this.submitOrder(maker, symbol, { side: 'Sell', qty, price });
    await this.submitOrder(taker, symbol, { side: 'Buy', qty, price, tif: 'IOC' });
  }

  /** The engine's top `depth` levels in wire form. */
  levels(symbol: string, depth: number): { bids: Level[]; asks: Level[]; seq: number } {
    const m = this.state.markets.get(this.marketOf(symbol))!;
    const qd = m.spec.quantityDecimals;
    const side = (levels: typeof m.bids): Level[] =>
      depthOf(levels, depth).map((l) => [formatPrice(l.price), formatDecimal(l.quantity, qd)]);
    return { bids: side(m.bids), asks: side(m.asks), seq: m.bookSeq };
  }
}

/** A market-data client that records every message. */
class Client {
  readonly ws: WebSocket;
  readonly inbox: Msg[] = [];
  private cursor = 0;

  private constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on('message', (data) => this.inbox.push(JSON.parse(String(data)) as Msg));
    ws.on('error', () => {});
  }

  static connect(url: string): Promise<Client> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      ws.once('open', () => resolve(new Client(ws)));
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    });
  }

  send(message: Msg | string): void {
    this.ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  /** The next message (after the previous `next`) that matches, waiting up to `ms`. */
  async next(match: (m: Msg) => boolean = () => true, ms = 3_000): Promise<Msg> {
    const deadline = Date.now() + ms;
    for (;;) {
      while (this.cursor < this.inbox.length) {
        const m = this.inbox[this.cursor++] as Msg;
        if (match(m)) return m;
      }
      if (Date.now() > deadline) throw new Error(`no matching message within ${ms} ms`);
      await sleep(5);
    }
  }

  /** Waits until some message from index `from` on matches, without moving the cursor. */
  async waitFor(match: (m: Msg) => boolean, from = 0, ms = 3_000): Promise<Msg> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = this.inbox.slice(from).find(match);
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error(`no matching message within ${ms} ms`);
      await sleep(5);
    }
  }

  /** Sends a request and returns the next message with its id. */
  async request(message: Msg): Promise<Msg> {
    this.send(message);
    return this.next((m) => m.id === message.id);
  }

  /** Every message of a type received so far. */
  all(type: string): Msg[] {
    return this.inbox.filter((m) => m.type === type);
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls until `check` passes or `ms` elapse (then throws its last error). */
async function eventually(check: () => void, ms = 3_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      check();
      return;
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await sleep(10);
    }
  }
}

const A = wallet(1);
const B = wallet(2);

let venues: Venue[] = [];
afterEach(async () => {
  for (const v of venues) await v.stop();
  venues = [];
  vi.restoreAllMocks();
});

/** A started venue with BTC and ETH listed, prices set and two funded accounts. */
async function venue(options: Partial<MarketDataOptions> = {}): Promise<Venue> {
  const v = await Venue.start(options);
  venues.push(v);
  await v.list(BTC_SETTINGS);
  await v.list(ETH_SETTINGS);
  await v.oracle({ 'BTC-PERP': '60000', 'ETH-PERP': '3000' });
  await v.fund(A);
  await v.fund(B);
  return v;
}

/** Bids strictly descending, asks strictly ascending, best bid below best ask. */
function expectWellFormed(bids: Level[], asks: Level[]): void {
  const p = (l: Level) => Number(l[0]);
  for (let i = 1; i < bids.length; i++) expect(p(bids[i - 1]!)).toBeGreaterThan(p(bids[i]!));
  for (let i = 1; i < asks.length; i++) expect(p(asks[i - 1]!)).toBeLessThan(p(asks[i]!));
  if (bids.length > 0 && asks.length > 0) expect(p(bids[0]!)).toBeLessThan(p(asks[0]!));
}

/** A deterministic PRNG (mulberry32). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

describe('subscriptions', () => {
  const auction: LiveAuction = {
    auctionId: 7,
    market: 1,
    side: 'Buy',
    remaining: 5_000n,
    price: px('59000'),
    startPrice: px('59500'),
    endPrice: px('58000'),
    endTime: T0 + 70_000,
    status: 'Live',
  };

  it('acknowledges every channel and follows with an immediate snapshot', async () => {
    const v = await venue({
      auctions: () => [auction],
      auctionEvents: (events) =>
        events.some((e) => e.type === 'trade') ? [{ ...auction, remaining: 2_500n }] : [],
    });
    await v.submitOrder(A, 'BTC-PERP', { side: 'Buy', qty: '0.5', price: '59990' });
    await v.submitOrder(A, 'BTC-PERP', { side: 'Buy', qty: '0.2', price: '59980' });
    await v.submitOrder(B, 'BTC-PERP', { side: 'Sell', qty: '0.3', price: '60020' });
    await v.trade('BTC-PERP', '60010', '0.25');
    const now = v.clock.now();
    const btc = v.state.markets.get(1)!;
    const eth = v.state.markets.get(2)!;
    const btcTicker = {
      instrument: 'BTC-PERP',
      status: 'Active',
      last: '60010',
      mark: formatPrice(btc.prices.mark!),
      index: '60000',
      bestBid: '59990',
      bestAsk: '60020',
      open24h: '60010',
      high24h: '60010',
      low24h: '60010',
      volume24h: '0.25',
      quoteVolume24h: '15002.5',
      priceChange24h: '0',
      priceChangePct24h: '0',
      fundingRate: null,
      nextFundingTime: null,
      openInterest: '0.25',
    };
    const ethTicker = {
      instrument: 'ETH-PERP',
      status: 'Active',
      last: null,
      mark: formatPrice(eth.prices.mark!),
      index: '3000',
      bestBid: null,
      bestAsk: null,
      open24h: null,
      high24h: null,
      low24h: null,
      volume24h: '0',
      quoteVolume24h: '0',
      priceChange24h: null,
      priceChangePct24h: null,
      fundingRate: null,
      nextFundingTime: null,
      openInterest: '0',
    };
    const c = await v.connect();

    expect(await c.request({ type: 'subscribe', id: 's1', channel: 'tickers' })).toEqual({
      type: 'subscribed',
      id: 's1',
      channel: 'tickers',
    });
    expect(await c.next()).toEqual({ type: 'tickers', time: now, tickers: [btcTicker, ethTicker] });

    await c.request({ type: 'subscribe', id: 's2', channel: 'ticker', instrument: 'BTC-PERP' });
    const { instrument: _, ...btcRest } = btcTicker;
    expect(await c.next()).toEqual({
      type: 'ticker',
      instrument: 'BTC-PERP',
      time: now,
      ...btcRest,
    });

    expect(
      await c.request({
        type: 'subscribe',
        id: 's3',
        channel: 'orderbook',
        instrument: 'BTC-PERP',
        depth: 5,
      }),
    ).toEqual({
      type: 'subscribed',
      id: 's3',
      channel: 'orderbook',
      instrument: 'BTC-PERP',
      depth: 5,
    });
    expect(await c.next()).toEqual({
      type: 'orderbook',
      instrument: 'BTC-PERP',
      depth: 5,
      seq: btc.bookSeq,
      time: now,
      bids: [
        ['59990', '0.5'],
        ['59980', '0.2'],
      ],
      asks: [['60020', '0.3']],
    });

    // Without a depth, 20.
    expect(
      await c.request({
        type: 'subscribe',
        id: 's4',
        channel: 'orderbook',
        instrument: 'ETH-PERP',
      }),
    ).toEqual({
      type: 'subscribed',
      id: 's4',
      channel: 'orderbook',
      instrument: 'ETH-PERP',
      depth: 20,
    });
    expect(await c.next()).toMatchObject({ type: 'orderbook', depth: 20, bids: [], asks: [] });

    expect(
      await c.request({
        type: 'subscribe',
        id: 's5',
        channel: 'candles',
        instrument: 'BTC-PERP',
        interval: '1m',
      }),
    ).toEqual({
      type: 'subscribed',
      id: 's5',
      channel: 'candles',
      instrument: 'BTC-PERP',
      interval: '1m',
    });
    expect(await c.next()).toEqual({
      type: 'candle',
      instrument: 'BTC-PERP',
      interval: '1m',
      openTime: T0,
      closeTime: T0 + 59_999,
      open: '60010',
      high: '60010',
      low: '60010',
      close: '60010',
      volume: '0.25',
      quoteVolume: '15002.5',
      trades: 1,
      closed: false,
    });

    expect(await c.request({ type: 'subscribe', id: 's6', channel: 'liquidations' })).toEqual({
      type: 'subscribed',
      id: 's6',
      channel: 'liquidations',
    });
    const wireAuction = {
      type: 'liquidationAuction',
      auctionId: '7',
      instrument: 'BTC-PERP',
      side: 'Buy',
      remaining: '0.5',
      price: '59000',
      startPrice: '59500',
      endPrice: '58000',
      endTime: T0 + 70_000,
      status: 'Live',
    };
    expect(await c.next()).toEqual(wireAuction);

    // An instrument filter: the BTC auction is not in the ETH snapshot.
    const ethOnly = await v.connect();
    expect(
      await ethOnly.request({
        type: 'subscribe',
        id: 's7',
        channel: 'liquidations',
        instrument: 'ETH-PERP',
      }),
    ).toEqual({ type: 'subscribed', id: 's7', channel: 'liquidations', instrument: 'ETH-PERP' });

    expect(
      await c.request({ type: 'unsubscribe', id: 'u1', channel: 'ticker', instrument: 'BTC-PERP' }),
    ).toEqual({ type: 'unsubscribed', id: 'u1', channel: 'ticker', instrument: 'BTC-PERP' });

    // A new trade: the book, the list, the candle and the auction move; the dropped ticker does not.
    const before = c.inbox.length;
    await v.trade('BTC-PERP', '60015', '0.1');
    await c.waitFor((m) => m.type === 'liquidationAuction', before);
    await c.waitFor((m) => m.type === 'orderbook' && m.instrument === 'BTC-PERP', before);
    await c.waitFor((m) => m.type === 'tickers', before);
    await c.waitFor((m) => m.type === 'candle', before);
    const after = c.inbox.slice(before);
    expect(after.filter((m) => m.type === 'ticker')).toEqual([]);
    expect(after.filter((m) => m.type === 'liquidationAuction')).toEqual([
      { ...wireAuction, remaining: '0.25' },
    ]);
    await sleep(100);
    expect(ethOnly.all('liquidationAuction')).toEqual([]);
  });

  it('an orderbook unsubscribe without depth ends every depth of that instrument, and only those', async () => {
    const v = await venue({ limits: { maxSubscriptionsPerSocket: 3 } });
    const c = await v.connect();
    const book = (id: string, instrument: string, depth: number) =>
      c.request({ type: 'subscribe', id, channel: 'orderbook', instrument, depth });
    await book('b5', 'BTC-PERP', 5);
    await book('b50', 'BTC-PERP', 50);
    await book('e5', 'ETH-PERP', 5);
    expect(
      await c.request({
        type: 'unsubscribe',
        id: 'u',
        channel: 'orderbook',
        instrument: 'BTC-PERP',
      }),
    ).toEqual({ type: 'unsubscribed', id: 'u', channel: 'orderbook', instrument: 'BTC-PERP' });
    const before = c.inbox.length;
    await v.submitOrder(A, 'BTC-PERP', { side: 'Buy', qty: '0.5', price: '59990' });
    await v.submitOrder(A, 'ETH-PERP', { side: 'Buy', qty: '1', price: '2990' });
    await c.waitFor((m) => m.type === 'orderbook' && m.instrument === 'ETH-PERP', before);
    await sleep(300);
    expect(c.all('orderbook').slice(-1)).toMatchObject([{ instrument: 'ETH-PERP', depth: 5 }]);
    expect(
      c.inbox.slice(before).filter((m) => m.type === 'orderbook' && m.instrument === 'BTC-PERP'),
    ).toEqual([]);
    // Both BTC subscriptions are gone from the connection's count (3): two more fit.
    expect(await book('b10', 'BTC-PERP', 10)).toMatchObject({ type: 'subscribed', depth: 10 });
    expect(await book('b20', 'BTC-PERP', 20)).toMatchObject({ type: 'subscribed', depth: 20 });
  });

  it('a candles unsubscribe without interval ends every interval of that instrument, and only those', async () => {
    const v = await venue({ limits: { maxSubscriptionsPerSocket: 3 } });
    const c = await v.connect();
    const candles = (id: string, instrument: string, interval: string) =>
      c.request({ type: 'subscribe', id, channel: 'candles', instrument, interval });
    await candles('b1', 'BTC-PERP', '1m');
    await candles('b5', 'BTC-PERP', '5m');
    await candles('e1', 'ETH-PERP', '1m');
    expect(
      await c.request({ type: 'unsubscribe', id: 'u', channel: 'candles', instrument: 'BTC-PERP' }),
    ).toEqual({ type: 'unsubscribed', id: 'u', channel: 'candles', instrument: 'BTC-PERP' });
    // Both BTC subscriptions are gone from the connection's count (3), the ETH one stays.
    expect(await candles('b15', 'BTC-PERP', '15m')).toMatchObject({ type: 'subscribed' });
    expect(await candles('b1h', 'BTC-PERP', '1h')).toMatchObject({ type: 'subscribed' });
    expect(await candles('b4h', 'BTC-PERP', '4h')).toMatchObject({ type: 'error', code: 4000 });
  });

  it('answers a repeated subscription again without counting it twice', async () => {
    const v = await venue({ limits: { maxSubscriptionsPerSocket: 2 } });
    const c = await v.connect();
    const sub = (id: string, instrument: string) =>
      c.request({ type: 'subscribe', id, channel: 'ticker', instrument });
    expect(await sub('r1', 'BTC-PERP')).toMatchObject({ type: 'subscribed' });
    expect(await sub('r2', 'BTC-PERP')).toMatchObject({ type: 'subscribed' });
    expect(await sub('r3', 'ETH-PERP')).toMatchObject({ type: 'subscribed' });
    // 4000, not 4029: waiting would not help (spec: 4029 means wait and retry).
    expect(await c.request({ type: 'subscribe', id: 'r4', channel: 'tickers' })).toMatchObject({
      type: 'error',
      id: 'r4',
      code: 4000,
      message: 'INVALID_REQUEST: at most 2 subscriptions per connection; unsubscribe one first',
    });
    // Unsubscribing frees a slot; unsubscribing twice is acknowledged twice.
    await c.request({ type: 'unsubscribe', id: 'r5', channel: 'ticker', instrument: 'ETH-PERP' });
    expect(
      await c.request({ type: 'unsubscribe', id: 'r6', channel: 'ticker', instrument: 'ETH-PERP' }),
    ).toMatchObject({ type: 'unsubscribed', id: 'r6' });
    expect(await c.request({ type: 'subscribe', id: 'r7', channel: 'tickers' })).toMatchObject({
      type: 'subscribed',
    });
  });
});

describe('order book', () => {
  it('every snapshot is the engine book at its seq: increasing seq, never crossed', async () => {
    // No coalescing: every batch that changes the top of the book is pushed and checked.
    const v = await venue({ pacing: { orderbookMinIntervalMs: 0, orderbookKeepAliveMs: 60_000 } });
    // Record the engine's book at every seq, as the service saw it.
    const history = new Map<number, Map<number, { bids: Level[]; asks: Level[] }>>();
    const record = () => {
      const byDepth = new Map<number, { bids: Level[]; asks: Level[] }>();
      for (const d of [5, 50]) {
        const { bids, asks } = v.levels('BTC-PERP', d);
        byDepth.set(d, { bids, asks });
      }
      history.set(v.state.markets.get(1)!.bookSeq, byDepth);
    };
    record();
    v.host.subscribe(record);
    const clients = new Map<number, Client>();
    for (const depth of [5, 50]) {
      const c = await v.connect();
      await c.request({
        type: 'subscribe',
        id: 'b',
        channel: 'orderbook',
        instrument: 'BTC-PERP',
        depth,
      });
      clients.set(depth, c);
    }
    const random = prng(42);
    const resting: { account: string; orderId: number }[] = [];
    for (let step = 0; step < 160; step++) {
      const r = random();
      if (r < 0.15 && resting.length > 0) {
        const [o] = resting.splice(Math.floor(random() * resting.length), 1);
        await v.host.submit({
          type: 'cancelOrder',
          account: o!.account,
          market: 1,
          orderId: BigInt(o!.orderId),
          cloid: null,
        });
        continue;
      }
      const buy = r < 0.575;
      // Mostly passive prices around 60000; about one order in eight crosses the spread.
      const k = Math.floor(random() * 60) * 0.5;
      const cross = random() < 0.12;
      const price = buy ? (cross ? 60_020 : 59_995 - k) : cross ? 59_980 : 60_005 + k;
      const result = await v.submitOrder(buy ? A : B, 'BTC-PERP', {
        side: buy ? 'Buy' : 'Sell',
        qty: (0.001 * (1 + Math.floor(random() * 20))).toFixed(3),
        price: String(price),
      });
      const o = result.outcome;
      if (o.ok && o.kind === 'order' && o.order.ordStatus !== 'Filled') {
        resting.push({ account: o.order.account, orderId: o.order.orderId });
      }
    }
    expect(v.state.counters.trade).toBeGreaterThan(5);
    for (const [depth, c] of clients) {
      await eventually(() => {
        const books = c.all('orderbook');
        const last = books[books.length - 1]!;
        const engine = v.levels('BTC-PERP', depth);
        expect({ bids: last.bids, asks: last.asks }).toEqual({
          bids: engine.bids,
          asks: engine.asks,
        });
      });
      const books = c.all('orderbook');
      expect(books.length).toBeGreaterThan(depth === 50 ? 100 : 20);
      let seq = -1;
      for (const m of books) {
        expect(m.seq as number).toBeGreaterThan(seq);
        seq = m.seq as number;
        expect(m.depth).toBe(depth);
        const bids = m.bids as Level[];
        const asks = m.asks as Level[];
        expect(bids.length).toBeLessThanOrEqual(depth);
        expect(asks.length).toBeLessThanOrEqual(depth);
        expectWellFormed(bids, asks);
        expect({ bids, asks }).toEqual(history.get(seq)?.get(depth));
      }
    }
  });

  it('coalesces a burst of book changes into a few snapshots, at most 10 per second', async () => {
    const v = await venue();
    const c = await v.connect();
    await c.request({
      type: 'subscribe',
      id: 'b',
      channel: 'orderbook',
      instrument: 'BTC-PERP',
      depth: 20,
    });
    await c.request({ type: 'subscribe', id: 't', channel: 'ticker', instrument: 'BTC-PERP' });
    const seq0 = v.state.markets.get(1)!.bookSeq;
    const started = performance.now();
    for (let i = 0; i < 80; i++) {
      await v.submitOrder(A, 'BTC-PERP', { side: 'Buy', qty: '0.001', price: String(59_000 + i) });
    }
    const elapsed = performance.now() - started;
    expect(v.state.markets.get(1)!.bookSeq - seq0).toBe(80);
    await eventually(() => {
      const books = c.all('orderbook');
      expect(books[books.length - 1]!.bids).toEqual(v.levels('BTC-PERP', 20).bids);
    });
    const books = c.all('orderbook').slice(1);
    expect(books.length).toBeLessThanOrEqual(Math.ceil(elapsed / 100) + 2);
    expect(books.length).toBeLessThan(40);
    for (let i = 1; i < books.length; i++) {
      const gap = (books[i]!.seq as number) - (books[i - 1]!.seq as number);
      expect(gap).toBeGreaterThan(0);
    }
    // The ticker moved 80 times too (its best bid): at most one push per second.
    await sleep(1_100);
    const tickers = c.all('ticker').slice(1);
    expect(tickers.length).toBeGreaterThanOrEqual(1);
    expect(tickers.length).toBeLessThanOrEqual(Math.ceil((elapsed + 1_100) / 1_000) + 1);
    expect(tickers[tickers.length - 1]!.bestBid).toBe('59079');
  });

  it('a client that joins while a push is pending gets the current book and ticker at the next push', async () => {
    // A wide coalescing window makes the race deterministic; keep-alives far away, so only the
    // paced push can bring the late client up to date.
    const v = await venue({
      pacing: {
        orderbookMinIntervalMs: 500,
        tickerMinIntervalMs: 500,
        orderbookKeepAliveMs: 60_000,
        tickerKeepAliveMs: 60_000,
      },
    });
    const book = { id: 'b', channel: 'orderbook', instrument: 'BTC-PERP', depth: 5 };
    const ticker = { id: 't', channel: 'ticker', instrument: 'BTC-PERP' };
    const early = await v.connect();
    await early.request({ type: 'subscribe', ...book });
    await early.request({ type: 'subscribe', ...ticker });
    const quote = { side: 'Buy', qty: '0.5', price: '59990' } as const;
    // Leading-edge pushes of the quote to the early client...
    await v.submitOrder(A, 'BTC-PERP', quote);
    await early.waitFor((m) => m.type === 'orderbook' && (m.bids as Level[]).length === 1);
    await early.waitFor((m) => m.type === 'ticker' && m.bestBid === '59990');
    // ...the quote is pulled (pushes pending) and a client joins, seeing the empty book...
    await v.run({ type: 'cancelAll', account: A, market: 1 });
    const late = await v.connect();
    await late.request({ type: 'subscribe', ...book });
    await late.request({ type: 'subscribe', ...ticker });
    await late.waitFor((m) => m.type === 'ticker');
    expect(late.all('orderbook')).toMatchObject([{ bids: [], asks: [] }]);
    expect(late.all('ticker')).toMatchObject([{ bestBid: null }]);
    // ...and the same quote comes back before the pending pushes: the book the early client has.
    await v.submitOrder(A, 'BTC-PERP', quote);

    await eventually(() => {
      const books = late.all('orderbook');
      const { seq, bids, asks } = books[books.length - 1]!;
      expect({ seq, bids, asks }).toEqual(v.levels('BTC-PERP', 5));
      expect(late.all('ticker').at(-1)!.bestBid).toBe('59990');
    }, 2_000);
    // The race took place: the early client never saw the empty book, so it needed no push.
    expect(early.all('orderbook').map((m) => (m.bids as Level[]).length)).toEqual([0, 1]);
    expect(early.all('ticker').map((m) => m.bestBid)).toEqual([null, '59990']);
  });

  it('repeats an unchanged book and ticker as keep-alives', async () => {
    const v = await venue({
      pacing: { orderbookKeepAliveMs: 200, tickerKeepAliveMs: 300, housekeepingMs: 20 },
    });
    await v.submitOrder(A, 'BTC-PERP', { side: 'Buy', qty: '0.5', price: '59990' });
    const c = await v.connect();
    await c.request({
      type: 'subscribe',
      id: 'b',
      channel: 'orderbook',
      instrument: 'BTC-PERP',
      depth: 5,
    });
    await c.request({ type: 'subscribe', id: 't', channel: 'ticker', instrument: 'BTC-PERP' });
    await sleep(800);
    const books = c.all('orderbook');
    expect(books.length).toBeGreaterThanOrEqual(3);
    expect(new Set(books.map((m) => m.seq)).size).toBe(1);
    expect(c.all('ticker').length).toBeGreaterThanOrEqual(2);
  });
});

describe('tickers', () => {
  it('24 h rolling statistics are exact over trades spanning more than a day', async () => {
    const v = await venue();
    const c = await v.connect();
    let n = 0;
    const tickerAt = async (time: number): Promise<Msg> => {
      v.clock.set(time);
      const id = `q${++n}`;
      await c.request({ type: 'subscribe', id, channel: 'ticker', instrument: 'BTC-PERP' });
      const t = await c.next((m) => m.type === 'ticker' && m.time === time);
      await c.request({
        type: 'unsubscribe',
        id: `${id}u`,
        channel: 'ticker',
        instrument: 'BTC-PERP',
      });
      return t;
    };
    const H = 3_600_000;
    const M = 60_000;
    const script: [number, string, string][] = [
      [T0 + 10_000, '60000', '0.1'],
      [T0 + H, '61000', '0.2'],
      [T0 + 5 * H, '59000', '0.1'],
      [T0 + 24 * H - 30_000, '60500', '0.3'],
      [T0 + 24 * H + 30_000, '62000', '0.1'],
      [T0 + 25 * H, '60800', '0.2'],
    ];
    const stats = (t: Msg) => ({
      last: t.last,
      open24h: t.open24h,
      high24h: t.high24h,
      low24h: t.low24h,
      volume24h: t.volume24h,
      quoteVolume24h: t.quoteVolume24h,
      priceChange24h: t.priceChange24h,
      priceChangePct24h: t.priceChangePct24h,
    });
    for (const [time, price, qty] of script.slice(0, 2)) {
      v.clock.set(time);
      await v.trade('BTC-PERP', price, qty);
    }
    // Younger than a day: open is the first trade.
    expect(stats(await tickerAt(T0 + H + 30_000))).toEqual({
      last: '61000',
      open24h: '60000',
      high24h: '61000',
      low24h: '60000',
      volume24h: '0.3',
      quoteVolume24h: '18200',
      priceChange24h: '1000',
      priceChangePct24h: '1.67',
    });
    for (const [time, price, qty] of script.slice(2)) {
      v.clock.set(time);
      await v.trade('BTC-PERP', price, qty);
    }
    // The window starts at the minute containing time - 24 h: the trade at exactly T0 + 1 h is in.
    expect(stats(await tickerAt(T0 + 25 * H + 20_000))).toEqual({
      last: '60800',
      open24h: '60000',
      high24h: '62000',
      low24h: '59000',
      volume24h: '0.9',
      quoteVolume24h: '54610',
      priceChange24h: '800',
      priceChangePct24h: '1.33',
    });
    // One minute later it is out, and its price becomes open24h.
    expect(stats(await tickerAt(T0 + 25 * H + M))).toEqual({
      last: '60800',
      open24h: '61000',
      high24h: '62000',
      low24h: '59000',
      volume24h: '0.7',
      quoteVolume24h: '42410',
      priceChange24h: '-200',
      priceChangePct24h: '-0.33',
    });
    expect(stats(await tickerAt(T0 + 48 * H + 30_000))).toEqual({
      last: '60800',
      open24h: '60500',
      high24h: '62000',
      low24h: '60800',
      volume24h: '0.3',
      quoteVolume24h: '18360',
      priceChange24h: '300',
      priceChangePct24h: '0.5',
    });
    // No trade in the last day: nothing moved.
    const quiet = await tickerAt(T0 + 49 * H + M);
    expect(stats(quiet)).toEqual({
      last: '60800',
      open24h: '60800',
      high24h: '60800',
      low24h: '60800',
      volume24h: '0',
      quoteVolume24h: '0',
      priceChange24h: '0',
      priceChangePct24h: '0',
    });
    expect(quiet.openInterest).toBe('1');
    expect(v.service.tickers()[0]).toMatchObject(stats(quiet));
  });

  it('shows the funding the injected source reports', async () => {
    const v = await venue({
      funding: (_state, market) =>
        market === 1 ? { rate: '0.0000125', nextFundingTime: T0 + 3_600_000 } : null,
    });
    const c = await v.connect();
    await c.request({ type: 'subscribe', id: 't', channel: 'tickers' });
    const t = await c.next((m) => m.type === 'tickers');
    expect((t.tickers as Msg[]).map((x) => [x.fundingRate, x.nextFundingTime])).toEqual([
      ['0.0000125', T0 + 3_600_000],
      [null, null],
    ]);
  });
});

describe('candles', () => {
  it('open, update, close exactly once, and fill intervals without trades', async () => {
    const v = await venue({ pacing: { housekeepingMs: 20 } });
    const c = await v.connect();
    const sub = { type: 'subscribe', channel: 'candles', instrument: 'BTC-PERP', interval: '1m' };
    // No trade yet: nothing to show after the ack.
    await c.request({ ...sub, id: 'c1' });
    v.clock.set(T0 + 10_000);
    await v.trade('BTC-PERP', '60000', '0.1');
    expect(await c.next((m) => m.type === 'candle')).toMatchObject({
      openTime: T0,
      open: '60000',
      close: '60000',
      volume: '0.1',
      trades: 1,
      closed: false,
    });
    v.clock.set(T0 + 20_000);
    await v.trade('BTC-PERP', '60100', '0.2');
    const first = {
      type: 'candle',
      instrument: 'BTC-PERP',
      interval: '1m',
      openTime: T0,
      closeTime: T0 + 59_999,
      open: '60000',
      high: '60100',
      low: '60000',
      close: '60100',
      volume: '0.3',
      quoteVolume: '18020',
      trades: 2,
    };
    expect(await c.next((m) => m.type === 'candle' && m.trades === 2)).toEqual({
      ...first,
      closed: false,
    });
    v.clock.set(T0 + 60_000);
    expect(await c.next((m) => m.type === 'candle' && m.closed === true)).toEqual({
      ...first,
      closed: true,
    });
    // Two minutes without trades: two empty candles at the previous close.
    v.clock.set(T0 + 180_005);
    const empty = (openTime: number) => ({
      type: 'candle',
      instrument: 'BTC-PERP',
      interval: '1m',
      openTime,
      closeTime: openTime + 59_999,
      open: '60100',
      high: '60100',
      low: '60100',
      close: '60100',
      volume: '0',
      quoteVolume: '0',
      trades: 0,
      closed: true,
    });
    expect(await c.next((m) => m.type === 'candle')).toEqual(empty(T0 + 60_000));
    expect(await c.next((m) => m.type === 'candle')).toEqual(empty(T0 + 120_000));
    v.clock.set(T0 + 185_000);
    await v.trade('BTC-PERP', '59900', '0.1');
    expect(await c.next((m) => m.type === 'candle')).toMatchObject({
      openTime: T0 + 180_000,
      open: '59900',
      high: '59900',
      low: '59900',
      trades: 1,
      closed: false,
    });
    await sleep(300);
    const closes = c.all('candle').filter((m) => m.closed === true);
    expect(closes.map((m) => m.openTime)).toEqual([T0, T0 + 60_000, T0 + 120_000]);

    // REST history: closed candles and the open one, oldest first.
    const history = v.service.candles('BTC-PERP', '1m')!;
    expect(history.map((h) => [h.openTime, h.closed, h.volume])).toEqual([
      [T0, true, '0.3'],
      [T0 + 60_000, true, '0'],
      [T0 + 120_000, true, '0'],
      [T0 + 180_000, false, '0.1'],
    ]);
    expect(
      v.service.candles('BTC-PERP', '1m', undefined, undefined, 2)!.map((h) => h.openTime),
    ).toEqual([T0 + 120_000, T0 + 180_000]);
    expect(
      v.service.candles('BTC-PERP', '1m', T0 + 60_000, undefined, 2)!.map((h) => h.openTime),
    ).toEqual([T0 + 60_000, T0 + 120_000]);
    expect(v.service.candles('BTC-PERP', '5m')).toEqual([
      {
        instrument: 'BTC-PERP',
        interval: '5m',
        openTime: T0,
        closeTime: T0 + 299_999,
        open: '60000',
        high: '60100',
        low: '59900',
        close: '59900',
        volume: '0.4',
        quoteVolume: '24010',
        trades: 3,
        closed: false,
      },
    ]);
    expect(v.service.candles('BTC-PERP', '2m')).toBeUndefined();
    expect(v.service.candles('DOGE-PERP', '1m')).toBeUndefined();
  });
});

describe('candle snapshots', () => {
  it('a subscriber joining after a minute ended gets the candle open now, before any housekeeping', async () => {
    // Housekeeping would close the minute on its own: here it never runs during the test.
    const v = await venue({ pacing: { housekeepingMs: 600_000 } });
    v.clock.set(T0 + 10_000);
    await v.trade('BTC-PERP', '60000', '0.1');
    v.clock.set(T0 + 130_000);
    const c = await v.connect();
    const sub = { type: 'subscribe', channel: 'candles', instrument: 'BTC-PERP', interval: '1m' };
    expect(await c.request({ ...sub, id: 'c' })).toMatchObject({ type: 'subscribed' });
    // The snapshot is the candle open now, not the one open when the last trade came.
    expect(await c.next((m) => m.type === 'candle' && m.closed === false)).toMatchObject({
      type: 'candle',
      openTime: T0 + 120_000,
      open: '60000',
      close: '60000',
      volume: '0',
      trades: 0,
      closed: false,
    });
  });
});

describe('market status', () => {
  it('tickers carry the status; a pause and a resume are pushed at once, past the pacing', async () => {
    // Pacing an hour apart: only the status push can bring a change within the test.
    const v = await venue({
      pacing: { tickerMinIntervalMs: 3_600_000, tickerKeepAliveMs: 3_600_000 },
    });
    const c = await v.connect();
    await c.request({ type: 'subscribe', id: 't', channel: 'ticker', instrument: 'BTC-PERP' });
    expect(await c.next((m) => m.type === 'ticker')).toMatchObject({ status: 'Active' });
    await c.request({ type: 'subscribe', id: 'l', channel: 'tickers' });
    const list = await c.next((m) => m.type === 'tickers');
    expect((list.tickers as Msg[]).map((x) => [x.instrument, x.status])).toEqual([
      ['BTC-PERP', 'Active'],
      ['ETH-PERP', 'Active'],
    ]);
    // A price change takes each channel's leading-edge push: the next would wait an hour.
    await v.oracle({ 'BTC-PERP': '60100' });
    await c.next((m) => m.type === 'ticker' && m.index === '60100');
    await c.next((m) => m.type === 'tickers');
    await v.oracle({ 'BTC-PERP': '60200' });
    await v.run({ type: 'setMarketStatus', market: 1, status: 'Paused' });
    // The pushed ticker is the whole current one: the paced price change comes with it.
    expect(await c.next((m) => m.type === 'ticker', 1_000)).toMatchObject({
      instrument: 'BTC-PERP',
      status: 'Paused',
      index: '60200',
    });
    const paused = await c.next((m) => m.type === 'tickers', 1_000);
    expect((paused.tickers as Msg[]).map((x) => x.status)).toEqual(['Paused', 'Active']);
    expect(v.service.tickers().map((x) => x.status)).toEqual(['Paused', 'Active']);
    await v.run({ type: 'setMarketStatus', market: 1, status: 'Active' });
    expect(await c.next((m) => m.type === 'ticker', 1_000)).toMatchObject({ status: 'Active' });
    const resumed = await c.next((m) => m.type === 'tickers', 1_000);
    expect((resumed.tickers as Msg[]).map((x) => x.status)).toEqual(['Active', 'Active']);
    // Another market's subscriber is not pushed; re-sending a status that did not change pushes
    // nothing either (the pacing holds for everything else).
    const eth = await v.connect();
    await eth.request({ type: 'subscribe', id: 'e', channel: 'ticker', instrument: 'ETH-PERP' });
    await eth.next((m) => m.type === 'ticker');
    await v.run({ type: 'setMarketStatus', market: 1, status: 'Paused' });
    await c.next((m) => m.type === 'ticker' && m.status === 'Paused', 1_000);
    await sleep(100);
    expect(eth.all('ticker')).toHaveLength(1);
    await v.run({ type: 'setMarketStatus', market: 1, status: 'Paused' });
    await v.oracle({ 'BTC-PERP': '60300' });
    await sleep(300);
    expect(c.all('ticker').at(-1)).toMatchObject({ status: 'Paused', index: '60200' });
  });

  it('a pause and a resume in one batch push nothing: the market is as it was', async () => {
    const v = await venue({
      pacing: { tickerMinIntervalMs: 3_600_000, tickerKeepAliveMs: 3_600_000 },
    });
    const c = await v.connect();
    await c.request({ type: 'subscribe', id: 't', channel: 'ticker', instrument: 'BTC-PERP' });
    await c.next((m) => m.type === 'ticker');
    await v.oracle({ 'BTC-PERP': '60100' });
    await c.next((m) => m.type === 'ticker' && m.index === '60100');
    await Promise.all([
      v.run({ type: 'setMarketStatus', market: 1, status: 'Paused' }),
      v.run({ type: 'setMarketStatus', market: 1, status: 'Active' }),
    ]);
    expect(v.state.markets.get(1)!.status).toBe('Active');
    await sleep(300);
    expect(c.all('ticker')).toHaveLength(2);
  });
});

describe('default pacing', () => {
  it('an open candle at most every 250 ms and a ticker at most once a second, the latest values winning', async () => {
    const v = await venue();
    v.clock.set(T0 + 10_000);
    await v.trade('BTC-PERP', '60000', '0.1');
    const c = await v.connect();
    const candle = { channel: 'candles', instrument: 'BTC-PERP', interval: '1m' };
    await c.request({ type: 'subscribe', id: 'c', ...candle });
    await c.request({ type: 'subscribe', id: 't', channel: 'ticker', instrument: 'BTC-PERP' });
    await c.waitFor((m) => m.type === 'ticker');
    const candles = c.all('candle').length;
    const tickers = c.all('ticker').length;
    // Twenty trades spread over more than 600 ms.
    const started = performance.now();
    for (let i = 1; i <= 20; i++) {
      await v.trade('BTC-PERP', String(60_000 + i), '0.1');
      await sleep(30);
    }
    const elapsed = performance.now() - started;
    await c.waitFor((m) => m.type === 'candle' && m.trades === 21, 0, 2_000);
    await c.waitFor((m) => m.type === 'ticker' && m.last === '60020', 0, 3_000);
    // Leading edge, then at most one per interval (the last a trailing flush).
    expect(c.all('candle').length - candles).toBeLessThanOrEqual(Math.ceil(elapsed / 250) + 1);
    expect(c.all('ticker').length - tickers).toBeLessThanOrEqual(Math.ceil(elapsed / 1_000) + 1);
    expect(c.all('candle').at(-1)).toMatchObject({ close: '60020', volume: '2.1', closed: false });
  });
});

describe('liquidation auctions', () => {
  it('the subscribe snapshot prices a live auction now, not at the engine’s last event', async () => {
    const v = await venue({ auctions: liveAuctions, auctionEvents });
    const [C, D] = [wallet(3), wallet(4)];
    await v.fund(C);
    // D: 0.1 BTC at 60,000 on 700 of margin (10x), so a maximum of 2x (maintenance 25 %, 1,500)
    // puts it below maintenance: an auction that runs from the mark to the bankruptcy price (a
    // forced one of a healthy scope would stay at the mark).
    await v.fund(D, '700');
    await v.submitOrder(A, 'BTC-PERP', { side: 'Sell', qty: '0.1', price: '60000' });
    await v.submitOrder(D, 'BTC-PERP', { side: 'Buy', qty: '0.1', price: '60000', tif: 'IOC' });
    const watcher = await v.connect();
    await watcher.request({ type: 'subscribe', id: 'w', channel: 'liquidations' });
    await v.list({ ...BTC_SETTINGS, maxLeverage: 2, defaultLeverage: 2 });
    const started = await watcher.next((m) => m.type === 'liquidationAuction');
    expect(started).toMatchObject({ status: 'Live', remaining: '0.1' });
    expect(started.price).toBe(started.startPrice);
    const duration = v.state.markets.get(1)!.spec.liquidation.auctionDurationMs;

    // Half the auction later, with no engine event in between, a new subscriber asks.
    v.clock.set(v.clock.now() + duration / 2);
    const late = await v.connect();
    await late.request({ type: 'subscribe', id: 'l', channel: 'liquidations' });
    const snapshot = await late.next((m) => m.type === 'liquidationAuction');
    // What a claim would pay right now.
    const claim = await v.run({
      type: 'claimLiquidation',
      account: C,
      auctionId: Number(started.auctionId),
      quantity: 10n,
      maxPrice: px('100000'),
    });
    const o = claim.outcome as Outcome & { ok: true; kind: 'claim' };
    expect(snapshot.price).toBe(formatPrice(o.price));
    expect(snapshot.price).not.toBe(started.startPrice);
    // The claim's own event carries the same price.
    expect(await watcher.next((m) => m.type === 'liquidationAuction')).toMatchObject({
      price: snapshot.price,
      remaining: '0.099',
    });
  });
});

describe('liquidation auction events', () => {
  it('reach the subscribers of their instrument and of every instrument, not those of another', async () => {
    const auction: LiveAuction = {
      auctionId: 9,
      market: 1,
      side: 'Sell',
      remaining: 10_000n,
      price: px('59000'),
      startPrice: px('61000'),
      endPrice: px('58000'),
      endTime: T0 + 600_000,
      status: 'Live',
    };
    const v = await venue({
      auctionEvents: (events) => (events.some((e) => e.type === 'trade') ? [auction] : []),
    });
    const [btc, all, eth] = [await v.connect(), await v.connect(), await v.connect()];
    const sub = (c: Client, instrument?: string) =>
      c.request({ type: 'subscribe', id: 'l', channel: 'liquidations', instrument });
    await sub(btc, 'BTC-PERP');
    await sub(all);
    await sub(eth, 'ETH-PERP');
    await v.trade('BTC-PERP', '60000', '0.1');
    for (const c of [btc, all]) {
      expect(await c.next((m) => m.type === 'liquidationAuction')).toMatchObject({
        auctionId: '9',
        instrument: 'BTC-PERP',
        remaining: '1',
      });
    }
    await sleep(100);
    expect(eth.all('liquidationAuction')).toEqual([]);
    expect(btc.all('liquidationAuction')).toHaveLength(1);
  });
});

describe('trade busts', () => {
  it('a busted trade leaves the candles and the 24 h ticker, live and in the history', async () => {
    const v = await venue({ pacing: { housekeepingMs: 20 } });
    const c = await v.connect();
    await c.request({
      type: 'subscribe',
      channel: 'candles',
      instrument: 'BTC-PERP',
      interval: '1m',
      id: 'c',
    });
    await c.request({ type: 'subscribe', channel: 'ticker', instrument: 'BTC-PERP', id: 't' });
    v.clock.set(T0 + 10_000);
    await v.trade('BTC-PERP', '60000', '0.1');
    v.clock.set(T0 + 20_000);
    await v.trade('BTC-PERP', '90000', '0.1');
    const fatFinger = v.state.counters.trade;
    v.clock.set(T0 + 30_000);
    await v.trade('BTC-PERP', '60100', '0.1');
    v.clock.set(T0 + 60_000);
    expect(await c.next((m) => m.type === 'candle' && m.closed === true)).toMatchObject({
      openTime: T0,
      high: '90000',
      volume: '0.3',
      trades: 3,
    });
    await eventually(() =>
      expect(c.all('ticker').at(-1)).toMatchObject({ high24h: '90000', volume24h: '0.3' }),
    );
    const seen = c.inbox.length;

    await v.run({ type: 'bustTrade', tradeId: fatFinger, reason: 'fat finger' });
    const restated = {
      type: 'candle',
      instrument: 'BTC-PERP',
      interval: '1m',
      openTime: T0,
      closeTime: T0 + 59_999,
      open: '60000',
      high: '60100',
      low: '60000',
      close: '60100',
      volume: '0.2',
      quoteVolume: '12010',
      trades: 2,
      closed: true,
    };
    expect(await c.next((m) => m.type === 'candle' && m.openTime === T0)).toEqual(restated);
    await c.waitFor((m) => m.type === 'ticker' && m.high24h === '60100', seen);
    expect(c.all('ticker').at(-1)).toMatchObject({
      last: '60100',
      open24h: '60000',
      high24h: '60100',
      low24h: '60000',
      volume24h: '0.2',
      quoteVolume24h: '12010',
    });
    const { type: _, ...wire } = restated;
    expect(v.service.candles('BTC-PERP', '1m')?.[0]).toEqual(wire);
    expect(v.service.candles('BTC-PERP', '1h')?.[0]).toMatchObject({
      high: '60100',
      volume: '0.2',
      trades: 2,
      closed: false,
    });
    expect(v.service.tickers()[0]).toMatchObject({ high24h: '60100', volume24h: '0.2' });
  });

  it('busting a market’s only trade leaves a ticker as before it traded: last and 24 h prices null', async () => {
    const v = await venue({ pacing: { housekeepingMs: 20 } });
    const c = await v.connect();
    await c.request({ type: 'subscribe', channel: 'ticker', instrument: 'BTC-PERP', id: 't' });
    const untraded = c.all('ticker')[0];
    expect(untraded).toMatchObject({ last: null, open24h: null, high24h: null, volume24h: '0' });
    v.clock.set(T0 + 10_000);
    await v.trade('BTC-PERP', '65000', '0.1');
    await c.waitFor((m) => m.type === 'ticker' && m.last === '65000');
    const seen = c.inbox.length;

    await v.run({ type: 'bustTrade', tradeId: v.state.counters.trade, reason: 'fat finger' });
    await c.waitFor((m) => m.type === 'ticker' && m.volume24h === '0', seen);
    const restated = {
      last: null,
      open24h: null,
      high24h: null,
      low24h: null,
      volume24h: '0',
      quoteVolume24h: '0',
      priceChange24h: null,
      priceChangePct24h: null,
      openInterest: '0',
    };
    expect(c.all('ticker').at(-1)).toMatchObject(restated);
    expect(v.service.tickers()[0]).toMatchObject(restated);
    // The candles forget the market had traded too: no open candle, no history.
    expect(v.service.candles('BTC-PERP', '1m')).toEqual([]);
  });
});

describe('candles and trades still in flight at a minute edge', () => {
  it('a candle closes only once the trades stamped in it are durable, so they count in it', async () => {
    const v = await venue({ pacing: { housekeepingMs: 20 } });
    const c = await v.connect();
    await c.request({
      type: 'subscribe',
      id: 'c',
      channel: 'candles',
      instrument: 'BTC-PERP',
      interval: '1m',
    });
    v.clock.set(T0 + 10_000);
    await v.trade('BTC-PERP', '60000', '0.1');
    await v.submitOrder(A, 'BTC-PERP', { side: 'Sell', qty: '0.2', price: '60100' });
    // Stamped 10 ms before the edge, journaled after it: a slow fsync.
    v.clock.set(T0 + 59_990);
    v.journal.hold();
    const taken = v.submitOrder(B, 'BTC-PERP', {
      side: 'Buy',
      qty: '0.2',
      price: '60100',
      tif: 'IOC',
    });
    await sleep(20);
    v.clock.set(T0 + 60_010);
    // Housekeeping runs meanwhile, and so does a REST read of the history.
    await sleep(150);
    expect(v.service.candles('BTC-PERP', '1m')!.map((k) => k.closed)).toEqual([false]);
    v.journal.release();
    await taken;
    const time = v.state.trades.get(v.state.counters.trade)!.time;
    expect(time).toBe(T0 + 59_990);
    // The trade counts in the minute it was made in, as a replay of the journal counts it, and
    // that minute closes once, with it.
    const closed = await c.next((m) => m.type === 'candle' && m.closed === true);
    expect(closed).toMatchObject({ openTime: T0, close: '60100', volume: '0.3', trades: 2 });
    expect(v.service.candles('BTC-PERP', '1m')).toMatchObject([
      { openTime: T0, trades: 2, closed: true },
      { openTime: T0 + 60_000, trades: 0, open: '60100', closed: false },
    ]);
    await sleep(100);
    expect(c.all('candle').filter((m) => m.closed === true)).toHaveLength(1);
  });
});

describe('trade tape', () => {
  it('pushes a print only once the batch that made it is durable, in trade order', async () => {
    const v = await venue();
    const c = await v.connect();
    await c.request({ type: 'subscribe', id: 's', channel: 'trades', instrument: 'BTC-PERP' });
    await v.submitOrder(A, 'BTC-PERP', { side: 'Sell', qty: '0.1', price: '60000' });
    await v.submitOrder(A, 'BTC-PERP', { side: 'Sell', qty: '0.2', price: '60010' });
    v.journal.hold();
    const taken = v.submitOrder(B, 'BTC-PERP', {
      side: 'Buy',
      qty: '0.3',
      price: '60010',
      tif: 'IOC',
    });
    // Matched in memory, not journaled: nothing is public yet.
    await sleep(100);
    expect(c.all('trade')).toEqual([]);
    expect(v.service.trades('BTC-PERP', 10)).toEqual([]);
    v.journal.release();
    await taken;
    await c.waitFor((m) => m.type === 'trade' && m.price === '60010');
    const ids = [v.state.counters.trade - 1, v.state.counters.trade].map(String);
    expect(c.all('trade')).toEqual([
      {
        type: 'trade',
        instrument: 'BTC-PERP',
        tradeId: ids[0],
        price: '60000',
        quantity: '0.1',
        side: 'Buy',
        time: v.state.time,
      },
      {
        type: 'trade',
        instrument: 'BTC-PERP',
        tradeId: ids[1],
        price: '60010',
        quantity: '0.2',
        side: 'Buy',
        time: v.state.time,
      },
    ]);
    expect(v.service.trades('BTC-PERP', 10)?.map((t) => t.tradeId)).toEqual([ids[1], ids[0]]);
  });

  it('never skips a print or a bust for a socket above the soft cap (a tape must not gap)', async () => {
    // A soft cap of -1 puts every socket above it: pacing-driven snapshots are all skipped.
    const v = await venue({ limits: { softBufferBytes: -1 } });
    const c = await v.connect();
    await c.request({ type: 'subscribe', id: 's', channel: 'trades', instrument: 'BTC-PERP' });
    await c.request({ type: 'subscribe', id: 't', channel: 'ticker', instrument: 'BTC-PERP' });
    const skipped = v.service.skipped;
    await v.trade('BTC-PERP', '60000', '0.1');
    const id = v.state.counters.trade;
    await v.run({ type: 'bustTrade', tradeId: id, reason: 'test' });
    await c.waitFor((m) => m.type === 'tradeBust');
    expect(c.inbox.filter((m) => m.type === 'trade' || m.type === 'tradeBust')).toEqual([
      expect.objectContaining({ type: 'trade', tradeId: String(id), price: '60000' }),
      { type: 'tradeBust', instrument: 'BTC-PERP', tradeId: String(id), time: v.state.time },
    ]);
    // The ticker's update after the trade was skipped (the ack's snapshot was not).
    await eventually(() => expect(v.service.skipped).toBeGreaterThan(skipped));
    expect(v.service.trades('BTC-PERP', 10)).toEqual([]);
  });
});

describe('errors and limits', () => {
  it('refuses bad requests with 4000 and keeps the connection open', async () => {
    const v = await venue();
    const c = await v.connect();
    const refused = async (message: Msg | string, id?: string): Promise<string> => {
      c.send(message);
      const e = await c.next();
      expect(e).toMatchObject({ type: 'error', code: 4000 });
      expect(e.id).toBe(id);
      return e.message as string;
    };
    expect(await refused({ type: 'subscribe', id: 'e1', channel: 'fills' }, 'e1')).toMatch(
      /unknown channel/,
    );
    expect(
      await refused(
        { type: 'subscribe', id: 'e2', channel: 'orderbook', instrument: 'BTC-PERP', depth: 7 },
        'e2',
      ),
    ).toMatch(/depth/);
    expect(
      await refused(
        { type: 'subscribe', id: 'e3', channel: 'ticker', instrument: 'DOGE-PERP' },
        'e3',
      ),
    ).toMatch(/unknown instrument/);
    expect(
      await refused(
        { type: 'subscribe', id: 'e4', channel: 'candles', instrument: 'BTC-PERP', interval: '2m' },
        'e4',
      ),
    ).toMatch(/interval/);
    expect(await refused({ type: 'subscribe', id: 'e5', channel: 'ticker' }, 'e5')).toMatch(
      /needs an instrument/,
    );
    expect(await refused({ type: 'hello', id: 'e6' }, 'e6')).toMatch(/unknown message type/);
    expect(await refused({ type: 'ping', id: 'not valid!' })).toMatch(/id must be/);
    expect(await refused('{"type":"subscribe",')).toMatch(/malformed JSON/);
    expect(await refused('{"type":"subscribe","channel":"tickers","__proto__":{"x":1}}')).toMatch(
      /malformed JSON/,
    );
    expect(
      await refused('{"type":"subscribe","channel":"tickers","constructor":{"prototype":{}}}'),
    ).toMatch(/malformed JSON|nested/);
    expect(await refused(`${'['.repeat(50)}${']'.repeat(50)}`)).toMatch(/nested deeper/);
    expect(await refused('[]')).toMatch(/JSON object/);
    c.ws.send(Buffer.from([1, 2, 3]), { binary: true });
    expect(await c.next()).toMatchObject({ type: 'error', code: 4000 });
    // Nothing reached Object.prototype.
    expect(({} as Msg).x).toBeUndefined();
    // Still open.
    expect(await c.request({ type: 'ping', id: 'p1' })).toEqual({
      type: 'pong',
      id: 'p1',
      serverTime: v.clock.now(),
    });
    expect(await c.request({ type: 'subscribe', id: 'ok', channel: 'tickers' })).toMatchObject({
      type: 'subscribed',
    });
  });

  it('closes a connection that sends more than 4 KiB in one message (1009)', async () => {
    const v = await venue();
    const c = await v.connect();
    const closed = new Promise<number>((resolve) => c.ws.once('close', (code) => resolve(code)));
    c.send({ type: 'ping', id: 'big', pad: 'x'.repeat(5_000) });
    expect(await closed).toBe(1009);
  });

  it('answers 4029 above the per-IP message budget', async () => {
    const v = await venue({ limits: { messagesPerSecondPerIp: 5 } });
    const c = await v.connect();
    for (let i = 0; i < 6; i++) c.send({ type: 'ping', id: `p${i}` });
    for (let i = 0; i < 5; i++) expect(await c.next()).toMatchObject({ type: 'pong', id: `p${i}` });
    const e = await c.next();
    expect(e).toMatchObject({ type: 'error', id: 'p5', code: 4029 });
    expect(e.retryAfterMs as number).toBeGreaterThan(0);
  });

  it('malformed frames count against the per-IP budget too', async () => {
    const v = await venue({ limits: { messagesPerSecondPerIp: 5 } });
    const c = await v.connect();
    for (let i = 0; i < 5; i++) c.send('{"type":');
    c.send({ type: 'ping', id: 'p' });
    c.send('{"type":');
    for (let i = 0; i < 5; i++) expect(await c.next()).toMatchObject({ type: 'error', code: 4000 });
    expect(await c.next()).toMatchObject({ type: 'error', id: 'p', code: 4029 });
    // Over the budget, a malformed frame gets 4029 too: the budget is checked first.
    expect(await c.next()).toMatchObject({ type: 'error', code: 4029 });
  });

  it('refuses connections above the per-IP cap at upgrade with HTTP 429', async () => {
    const v = await venue({ limits: { maxConnectionsPerIp: 3 } });
    const open = [await v.connect(), await v.connect(), await v.connect()];
    await expect(v.connect()).rejects.toThrow('HTTP 429');
    expect(v.service.connections).toBe(3);
    open[0]!.ws.close();
    await eventually(() => expect(v.service.connections).toBe(2));
    const again = await v.connect();
    expect(await again.request({ type: 'ping', id: 'p' })).toMatchObject({ type: 'pong' });
  });

  it('closes a socket that neither answers pings nor sends anything (4408)', async () => {
    const v = await venue({ limits: { pingIntervalMs: 50, idleTimeoutMs: 200 } });
    const alive = await v.connect();
    const silent = await new Promise<WebSocket>((resolve, reject) => {
      const ws = new WebSocket(v.url, { autoPong: false });
      ws.once('open', () => resolve(ws));
      ws.once('error', reject);
    });
    const code = await new Promise<number>((resolve) => silent.once('close', (c) => resolve(c)));
    expect(code).toBe(4408);
    expect(alive.ws.readyState).toBe(WebSocket.OPEN);
    expect(await alive.request({ type: 'ping', id: 'p' })).toMatchObject({ type: 'pong' });
    expect(v.service.connections).toBe(1);
  });
});

describe('slow consumers', () => {
  /** Lists six more BTC-like books so one change can fan out to many channels. */
  async function manyBooks(v: Venue): Promise<string[]> {
    const symbols = ['BTC-PERP', 'ETH-PERP'];
    for (let i = 3; i <= 8; i++) {
      const symbol = `X${i}-PERP`;
      await v.list({ ...BTC_SETTINGS, id: i, symbol });
      symbols.push(symbol);
    }
    await v.oracle(Object.fromEntries(symbols.map((s) => [s, '1000'])));
    return symbols;
  }

  it('a consumer that stops reading gets no more snapshots, then is shed; the other sees every change', async () => {
    const v = await venue({
      // No keep-alive repeats (the same seq again) while the test runs.
      pacing: { orderbookMinIntervalMs: 0, orderbookKeepAliveMs: 600_000 },
      limits: {
        softBufferBytes: 64 * 1024,
        hardBufferBytes: 512 * 1024,
        pingIntervalMs: 100,
        // Long enough for both floods on a loaded machine: the paused socket answers no ping, so
        // an idle close before they end would take it away before the skips are counted.
        idleTimeoutMs: 8_000,
      },
    });
    const symbols = await manyBooks(v);
    // 50 bid levels per book, so every depth-50 snapshot is about 1 KiB.
    await Promise.all(
      symbols.flatMap((s) =>
        Array.from({ length: 50 }, (_, k) =>
          v.submitOrder(A, s, { side: 'Buy', qty: '0.01', price: String(900 + k) }),
        ),
      ),
    );
    const healthy = await v.connect();
    const slow = await v.connect();
    for (const c of [healthy, slow]) {
      for (const s of symbols) {
        for (const depth of [5, 10, 20, 50]) {
          await c.request({
            type: 'subscribe',
            id: 'b',
            channel: 'orderbook',
            instrument: s,
            depth,
          });
        }
      }
    }
    slow.ws.pause();
    const flood = async (rounds: number) => {
      // Each round changes the best bid of every book: 32 snapshots per socket.
      for (let round = 0; round < rounds; round++) {
        await Promise.all(
          symbols.map((s) => v.submitOrder(A, s, { side: 'Buy', qty: '0.01', price: '949' })),
        );
        if (v.service.skipped > 0 && rounds > 1_000) return;
      }
    };
    // Once the kernel buffers are full, the slow socket's updates are skipped, not queued.
    await flood(3_000);
    expect(v.service.skipped).toBeGreaterThan(0);
    const skipped = v.service.skipped;
    await flood(100);
    expect(v.service.skipped - skipped).toBe(100 * 32);
    expect(v.service.connections).toBe(2);
    expect(v.service.cutOff).toBe(0);
    // It cannot answer pings either: the heartbeat sheds it.
    await eventually(() => expect(v.service.connections).toBe(1), 12_000);
    // The healthy consumer saw every book in order and ends on the engine's.
    await eventually(() => {
      for (const s of symbols) {
        for (const depth of [5, 10, 20, 50]) {
          const books = healthy
            .all('orderbook')
            .filter((m) => m.instrument === s && m.depth === depth);
          expect(books[books.length - 1]!.bids).toEqual(v.levels(s, depth).bids);
          const seqs = books.map((m) => m.seq as number);
          expect(seqs).toEqual([...new Set(seqs)].sort((a, b) => a - b));
        }
      }
    }, 5_000);
    expect(healthy.ws.readyState).toBe(WebSocket.OPEN);
    slow.ws.terminate();
  });

  it('above the soft cap only updates are skipped: replies, subscribe snapshots and candle closes still go out', async () => {
    // A soft cap of -1 puts every socket above it, whatever it has unsent.
    const v = await venue({ limits: { softBufferBytes: -1 }, pacing: { housekeepingMs: 20 } });
    v.clock.set(T0 + 10_000);
    await v.trade('BTC-PERP', '60000', '0.1');
    const c = await v.connect();
    const sub = { type: 'subscribe', channel: 'candles', instrument: 'BTC-PERP', interval: '1m' };
    expect(await c.request({ ...sub, id: 'c' })).toMatchObject({ type: 'subscribed' });
    expect(await c.next()).toMatchObject({
      type: 'candle',
      openTime: T0,
      trades: 1,
      closed: false,
    });
    const skipped = v.service.skipped;
    v.clock.set(T0 + 20_000);
    await v.trade('BTC-PERP', '90000', '0.1');
    const fatFinger = v.state.counters.trade;
    await eventually(() => expect(v.service.skipped).toBeGreaterThan(skipped));
    v.clock.set(T0 + 60_000);
    expect(await c.next((m) => m.type === 'candle')).toMatchObject({
      openTime: T0,
      high: '90000',
      volume: '0.2',
      trades: 2,
      closed: true,
    });
    // A bust sends the restated close again, also not skipped.
    await v.run({ type: 'bustTrade', tradeId: fatFinger, reason: 'fat finger' });
    expect(await c.next((m) => m.type === 'candle')).toMatchObject({
      openTime: T0,
      high: '60000',
      volume: '0.1',
      trades: 1,
      closed: true,
    });
    expect(await c.request({ type: 'ping', id: 'p' })).toMatchObject({ type: 'pong' });
    // The only open candle it got is the subscribe snapshot.
    expect(c.all('candle').filter((m) => m.closed === false)).toHaveLength(1);
  });

  it('a consumer that drained below the soft cap gets the snapshots it missed, not only the next change', async () => {
    const v = await venue({
      // No keep-alive repeats while the test runs: only the catch-up can bring the book.
      pacing: { orderbookMinIntervalMs: 0, orderbookKeepAliveMs: 600_000, housekeepingMs: 20 },
      limits: {
        softBufferBytes: 64 * 1024,
        hardBufferBytes: 64 * 1024 * 1024,
        pingIntervalMs: 600_000,
        idleTimeoutMs: 600_000,
      },
    });
    // 50 bid levels, so every depth-50 snapshot is about 1 KiB.
    await Promise.all(
      Array.from({ length: 50 }, (_, k) =>
        v.submitOrder(A, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: String(50_000 + k) }),
      ),
    );
    await v.trade('BTC-PERP', '60000', '0.1');
    const c = await v.connect();
    const book = { channel: 'orderbook', instrument: 'BTC-PERP', depth: 50 };
    await c.request({ type: 'subscribe', id: 'b', ...book });
    await c.request({
      type: 'subscribe',
      id: 'c',
      channel: 'candles',
      instrument: 'BTC-PERP',
      interval: '1m',
    });
    c.ws.pause();
    let rounds = 0;
    while (v.service.skipped === 0 && rounds < 5_000) {
      await v.submitOrder(A, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: '50049' });
      rounds++;
    }
    expect(v.service.skipped).toBeGreaterThan(0);
    // More changes while it is behind, then a quiet market: a bigger level and a second trade.
    for (let i = 0; i < 5; i++)
      await v.submitOrder(A, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: '50049' });
    await v.trade('BTC-PERP', '60010', '0.1');
    const skipped = v.service.skipped;
    c.ws.resume();
    await eventually(() => {
      const last = c.all('orderbook').at(-1)!;
      const engine = v.levels('BTC-PERP', 50);
      expect(last.seq).toBe(engine.seq);
      expect(last.bids).toEqual(engine.bids);
      expect(last.asks).toEqual(engine.asks);
      expect(c.all('candle').at(-1)).toMatchObject({ trades: 2, close: '60010', volume: '0.2' });
    }, 3_000);
    // The catch-up went out once: nothing more was skipped and nothing repeats.
    const count = c.inbox.length;
    await sleep(200);
    expect(c.inbox.length).toBe(count);
    expect(v.service.skipped).toBe(skipped);
    // Still subscribed and current: the next change arrives as usual.
    await v.submitOrder(B, 'BTC-PERP', { side: 'Sell', qty: '0.01', price: '70000' });
    await eventually(() => expect(c.all('orderbook').at(-1)!.asks).toEqual([['70000', '0.01']]));
    c.ws.terminate();
  });

  /** Auction events, which are never skipped: `perBatch` of them for each batch that moves a book. */
  const auctionFlood =
    (perBatch: number): NonNullable<MarketDataOptions['auctionEvents']> =>
    (events) =>
      events.some((e) => e.type === 'bookChanged')
        ? Array.from({ length: perBatch }, (_, k) => ({
            auctionId: k + 1,
            market: 1,
            side: 'Sell' as const,
            remaining: 10_000n,
            price: px('59000'),
            startPrice: px('61000'),
            endPrice: px('58000'),
            endTime: T0 + 600_000,
            status: 'Live' as const,
          }))
        : [];

  it('terminates a socket above the hard cap on messages that cannot be skipped', async () => {
    const perBatch = 100;
    const v = await venue({
      limits: { softBufferBytes: 64 * 1024, hardBufferBytes: 256 * 1024 },
      auctionEvents: auctionFlood(perBatch),
    });
    const healthy = await v.connect();
    const slow = await v.connect();
    for (const c of [healthy, slow])
      await c.request({ type: 'subscribe', id: 'l', channel: 'liquidations' });
    slow.ws.pause();
    let batches = 0;
    while (v.service.cutOff === 0 && batches < 3_000) {
      await v.submitOrder(A, 'BTC-PERP', { side: 'Buy', qty: '0.001', price: '59000' });
      batches++;
    }
    expect(v.service.cutOff).toBe(1);
    expect(v.service.connections).toBe(1);
    // Auction events are never skipped for a consumer that keeps up.
    await eventually(() =>
      expect(healthy.all('liquidationAuction').length).toBe(batches * perBatch),
    );
    slow.ws.terminate();
  });

  it('at the default caps, which the venue runs on: snapshots skipped above 1 MiB unsent, terminated above 4 MiB', async () => {
    const v = await venue({
      // Every book change pushes a snapshot; the paused socket is not shed by the heartbeat.
      pacing: { orderbookMinIntervalMs: 0, orderbookKeepAliveMs: 600_000 },
      limits: { pingIntervalMs: 600_000, idleTimeoutMs: 600_000 },
      auctionEvents: auctionFlood(100),
    });
    const healthy = await v.connect();
    const slow = await v.connect();
    for (const c of [healthy, slow]) {
      await c.request({ type: 'subscribe', id: 'l', channel: 'liquidations' });
      await c.request({
        type: 'subscribe',
        id: 'b',
        channel: 'orderbook',
        instrument: 'BTC-PERP',
        depth: 50,
      });
    }
    // What the service had for each subscriber: the healthy one reads all of it.
    let bytes = 0;
    healthy.ws.on('message', (data: Buffer) => {
      bytes += data.length;
    });
    slow.ws.pause();
    let batches = 0;
    while (v.service.cutOff === 0 && batches < 3_000) {
      await v.submitOrder(A, 'BTC-PERP', { side: 'Buy', qty: '0.001', price: '59000' });
      batches++;
    }
    expect(v.service.cutOff, `not cut off after ${bytes} bytes`).toBe(1);
    // Snapshots to it were skipped on the way, between the two caps.
    expect(v.service.skipped).toBeGreaterThan(0);
    expect(v.service.connections).toBe(1);
    await eventually(() => expect(healthy.all('liquidationAuction').length).toBe(batches * 100));
    // Not before the hard cap: more than 4 MiB was made for each subscriber before the cut-off.
    expect(bytes).toBeGreaterThan(4 * 1024 * 1024);
    await eventually(() => {
      const books = healthy.all('orderbook');
      expect(books[books.length - 1]!.bids).toEqual(v.levels('BTC-PERP', 50).bids);
    });
    expect(healthy.ws.readyState).toBe(WebSocket.OPEN);
    slow.ws.terminate();
  });
});

describe('shutdown', () => {
  it('close() clears every timer the service started and closes its sockets with 1001', async () => {
    const made: { handle: NodeJS.Timeout; interval: boolean }[] = [];
    const done = new Set<NodeJS.Timeout>();
    const ours = () => /marketdata[/\\](service|pacing)\.ts/.test(new Error().stack ?? '');
    const realSetTimeout = globalThis.setTimeout;
    const realSetInterval = globalThis.setInterval;
    const realClearTimeout = globalThis.clearTimeout;
    const realClearInterval = globalThis.clearInterval;
    vi.spyOn(globalThis, 'setTimeout').mockImplementation(((
      fn: (...args: unknown[]) => void,
      ms?: number,
      ...args: unknown[]
    ) => {
      const mine = ours();
      const handle: NodeJS.Timeout = realSetTimeout(
        (...a: unknown[]) => {
          done.add(handle);
          fn(...a);
        },
        ms,
        ...args,
      );
      if (mine) made.push({ handle, interval: false });
      return handle;
    }) as unknown as typeof setTimeout);
    vi.spyOn(globalThis, 'setInterval').mockImplementation(((
      fn: (...args: unknown[]) => void,
      ms?: number,
      ...args: unknown[]
    ) => {
      const handle = realSetInterval(fn, ms, ...args);
      if (ours()) made.push({ handle, interval: true });
      return handle;
    }) as unknown as typeof setInterval);
    const clear = (h: unknown) => {
      if (h !== undefined && h !== null) done.add(h as NodeJS.Timeout);
    };
    vi.spyOn(globalThis, 'clearTimeout').mockImplementation(((h?: NodeJS.Timeout) => {
      clear(h);
      realClearTimeout(h);
    }) as typeof clearTimeout);
    vi.spyOn(globalThis, 'clearInterval').mockImplementation(((h?: NodeJS.Timeout) => {
      clear(h);
      realClearInterval(h);
    }) as typeof clearInterval);

    const v = await Venue.start({ pacing: { orderbookMinIntervalMs: 1_000 } });
    await v.list(BTC_SETTINGS);
    await v.fund(A);
    const c = await v.connect();
    for (const depth of [5, 10]) {
      await c.request({
        type: 'subscribe',
        id: 'b',
        channel: 'orderbook',
        instrument: 'BTC-PERP',
        depth,
      });
    }
    await c.request({ type: 'subscribe', id: 't', channel: 'tickers' });
    // Two quick changes leave a trailing book flush scheduled.
    await v.submitOrder(A, 'BTC-PERP', { side: 'Buy', qty: '0.001', price: '60000' });
    await v.submitOrder(A, 'BTC-PERP', { side: 'Buy', qty: '0.001', price: '60001' });
    const closed = new Promise<number>((resolve) => c.ws.once('close', (code) => resolve(code)));
    await v.service.close();
    expect(await closed).toBe(1001);
    expect(v.service.connections).toBe(0);
    expect(made.filter((t) => t.interval).length).toBeGreaterThanOrEqual(2);
    expect(made.some((t) => !t.interval)).toBe(true);
    for (const t of made) expect(done.has(t.handle)).toBe(true);
    // Upgrades after close are refused.
    await expect(Client.connect(v.url)).rejects.toThrow('HTTP 503');
    v.server.closeAllConnections();
    await new Promise<void>((resolve) => v.server.close(() => resolve()));
  });
});
