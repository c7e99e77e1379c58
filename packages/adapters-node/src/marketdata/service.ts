/**
 * The public market-data WebSocket (protocol.md section 6, research 6.6): tickers, partial order
 * books, candles, liquidation auctions and (our extension) the public trade tape, no
 * authentication. Projections are fed by the engine
 * host's committed batches; pushes are full snapshots, serialized once per channel and sent as
 * the same string to every subscriber, paced per channel (a market's pause or resume goes out
 * at once) and skipped for consumers that fall behind (reliability-anchors 3.1).
 *
 * Clocks: `now()` stamps `time` fields, drives the 24 h window and closes candles at interval
 * ends (held back while a command stamped before the end is not durable yet, see
 * `MarketDataHost.unpublishedSince`); pacing, heartbeats and idle deadlines run on the process clock, the per-IP message
 * budget on `limiterNow` (the venue's process clock `rateNow`, shared with REST and the trading
 * socket).
 *
 * Decisions the protocol leaves open (see README.md beside this file): connections above the
 * per-IP cap are refused at upgrade with HTTP 429 (cheaper than a handshake and a 1013 close);
 * an unchanged book is repeated every 5 s with the same `seq`, which a client that keeps the
 * highest `seq` ignores; snapshots are skipped for a socket above the soft buffer cap (and the
 * current one of each channel it missed is sent once it drains below it), while replies, candle
 * closes, auction events and trade prints are never skipped and end the socket at the hard cap.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type EngineEvent, type EngineState, type Market, RateLimiter } from '@perp/core';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import type { CommittedBatch } from '../engine/host.js';
import { clientAddress, limitKey } from '../http/client-address.js';
import type { CheckpointPart, ProjectionRebuild } from '../read/checkpoint.js';
import { ConnectionSlots } from '../ws/connection-slots.js';
import { armIdle } from '../ws/idle.js';
import {
  type Candle,
  type CandleChanges,
  CandleProjection,
  DEFAULT_CANDLE_HISTORY,
  isCandleInterval,
  type WireCandle,
  wireCandle,
} from './candles.js';
import {
  captureMarketData,
  MARKET_DATA_PART,
  MARKET_DATA_PART_READS,
  MARKET_DATA_PART_VERSION,
  MarketDataRestore,
} from './checkpoint.js';
import {
  type AuctionEventSource,
  type AuctionSource,
  noAuctionEvents,
  noAuctions,
  pricedAt,
  wireAuction,
} from './liquidations.js';
import { BOOK_DEPTHS, orderBookSnapshot } from './orderbook.js';
import { DEFAULT_PACING, deliveryAction, type MarketDataPacing, Pacer } from './pacing.js';
import { ackOf, parseRequest, type Topic, topicKey, unsubscribeKeys } from './requests.js';
import { type FundingViewSource, TickerProjection, type WireTicker } from './ticker.js';
import { DEFAULT_TRADE_TAPE, type PublicTrade, publicTrade, TradeTape } from './trades.js';

/** What the service needs from the engine host (an `EngineHost` fits). */
export interface MarketDataHost {
  readonly state: EngineState;
  subscribe(listener: (batch: CommittedBatch) => void): () => void;
  /**
   * The stamp of the oldest command not published yet (`null`: none). Candles close no later
   * than it: a trade stamped in a minute and still on its way to the journal counts in that
   * minute, as a replay of the journal counts it. Without it, candles close at `now()`.
   */
  unpublishedSince?(): number | null;
}

/** Connection and resource limits. */
export interface MarketDataLimits {
  /**
   * Open sockets per client IP; more are refused at upgrade with HTTP 429. Applies to the
   * service's own counter only: a shared `connectionSlots` brings its own cap.
   */
  readonly maxConnectionsPerIp: number;
  /** Subscriptions per socket; more get error 4000 (unsubscribe one first). */
  readonly maxSubscriptionsPerSocket: number;
  /** Largest client frame, bytes; a larger one closes the socket with 1009 (`ws`). */
  readonly maxPayload: number;
  /** Client messages per rolling second per IP (protocol.md 5: 100 public reads); more get 4029. */
  readonly messagesPerSecondPerIp: number;
  /** Unsent bytes above which snapshot updates to a socket are skipped. */
  readonly softBufferBytes: number;
  /** Unsent bytes above which a socket is terminated. */
  readonly hardBufferBytes: number;
  /** Protocol ping period. */
  readonly pingIntervalMs: number;
  /** A socket with no pong and no message for this long is terminated. */
  readonly idleTimeoutMs: number;
}

/** Research 6.6 and reliability-anchors 3.1. */
export const DEFAULT_MARKET_DATA_LIMITS: MarketDataLimits = {
  maxConnectionsPerIp: 30,
  maxSubscriptionsPerSocket: 100,
  maxPayload: 4 * 1024,
  messagesPerSecondPerIp: 100,
  softBufferBytes: 1024 * 1024,
  hardBufferBytes: 4 * 1024 * 1024,
  pingIntervalMs: 15_000,
  idleTimeoutMs: 30_000,
};

/** Options of {@link createMarketDataService}. */
export interface MarketDataOptions {
  readonly host: MarketDataHost;
  /** Business time, ms (the host's clock in a venue). */
  readonly now: () => number;
  /** Funding rate and next funding time of a market; default: none (`null` fields). */
  readonly funding?: FundingViewSource;
  /** Live liquidation auctions of a state; default: none. */
  readonly auctions?: AuctionSource;
  /** Auction changes found in a batch's events; default: none. */
  readonly auctionEvents?: AuctionEventSource;
  readonly limits?: Partial<MarketDataLimits>;
  readonly pacing?: Partial<MarketDataPacing>;
  /** Closed candles kept per (instrument, interval), default 1,000. */
  readonly candleHistory?: number;
  /** Public prints kept per instrument for `GET /api/trades`, default 1,000. */
  readonly tradeTape?: number;
  /**
   * Per-IP message budget to share with other public surfaces (keys are client IPs); default: a
   * private one allowing `limits.messagesPerSecondPerIp`.
   */
  readonly readLimiter?: RateLimiter;
  /**
   * The clock `readLimiter` is kept on; default `Date.now`. A limiter shared with other surfaces
   * must be fed one clock by all of them (the venue passes `rateNow`, its monotonic process
   * clock, which REST and the trading socket use): entries on two clocks that drift apart never
   * age out, or go at once.
   */
  readonly limiterNow?: () => number;
  /**
   * Per-IP connection slots to share with the trading socket (protocol.md 5 caps an address's
   * connections to the venue, not to each path); default: a private counter allowing
   * `limits.maxConnectionsPerIp`.
   */
  readonly connectionSlots?: ConnectionSlots;
  /**
   * The client of an upgrade request, as the connection slots and the message budget key on it;
   * default: the TCP peer's `limitKey` (an IPv6 peer's /64). The venue passes its trusted-proxy
   * aware one (`http/client-address.ts`), the same REST and the trading socket use.
   */
  readonly clientAddress?: (request: IncomingMessage) => string;
}

/** The running market-data service. */
export interface MarketDataService {
  /** Takes over an HTTP upgrade request (path routing is the caller's). */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Closes every socket (1001) and clears every timer. */
  close(): Promise<void>;
  /**
   * Candles of an instrument for REST, oldest first, the open one included; `undefined` for an
   * unknown instrument or interval. With `startTime`, the first `limit` from there; otherwise the
   * last `limit` up to `endTime` (default limit 500).
   */
  candles(
    instrument: string,
    interval: string,
    startTime?: number,
    endTime?: number,
    limit?: number,
  ): WireCandle[] | undefined;
  /** Every instrument's ticker now. */
  tickers(): WireTicker[];
  /**
   * The newest `limit` public prints of an instrument for REST, newest first, busted ones left
   * out; `undefined` for an unknown instrument. At most the tape's size (1,000 by default).
   */
  trades(instrument: string, limit: number): PublicTrade[] | undefined;
  /**
   * Fresh ticker, candle and trade-tape projections for a history backfill
   * (`read/backfill.ts`): they are fed batches from the journal's first record on and push
   * nothing; `commit` makes them the service's projections (ticker and candle channels then get
   * their next paced snapshot; the `trades` channel has none, its prints went out live).
   */
  rebuild(): ProjectionRebuild;
  /**
   * The ticker, candle and tape projections as a read-model checkpoint part (`marketData`, see
   * `marketdata/checkpoint.ts`). Its capture covers the projections live when it starts; its
   * restorer fills fresh ones (`check` refuses a market that lacks some of its series), is fed
   * the batches since the checkpoint, and `commit` makes them the service's as a rebuild's does.
   */
  checkpoint(): CheckpointPart;
  /** Open sockets. */
  readonly connections: number;
  /** Updates skipped because their socket was above the soft buffer cap (a metric). */
  readonly skipped: number;
  /** Sockets terminated above the hard buffer cap (a metric). */
  readonly cutOff: number;
}

interface Session {
  readonly ws: WebSocket;
  readonly ip: string;
  readonly keys: Set<string>;
  /**
   * Body of the snapshot a subscriber got on joining a busy channel: not pushed to it again, and
   * pushed to it alone when the channel's next push finds the others already have it (`catchUp`).
   */
  readonly seen: Map<string, string>;
  /**
   * Channels whose last push to this socket was skipped (it was above the soft buffer cap): once
   * it is below the cap again, housekeeping sends it their current snapshot, as no later push may
   * come (a quiet book waits for its keep-alive, an open candle for its next trade or its close).
   */
  readonly owed: Set<string>;
  /** `performance.now()` of the last message or pong. */
  lastActivity: number;
  /** Fires when the connection may have been idle for `idleTimeoutMs`; see `armIdle`. */
  idleTimer: NodeJS.Timeout | null;
  closed: boolean;
}

interface Channel {
  readonly key: string;
  readonly topic: Topic;
  readonly subscribers: Set<Session>;
  pacer: Pacer | null;
  /** The pushed content without its `time`, to skip pushes that would repeat it. */
  lastBody: string | null;
  /** Process-clock time of the last push. */
  lastSentAt: number;
}

/** A push ready to go: `body` is compared with the last push, `text` is what is sent. */
interface Built {
  readonly body: string;
  readonly text: string;
}

const SHUTDOWN_GRACE_MS = 1_000;
const monotonic = (): number => performance.now();

/** Creates the market-data WebSocket service over an engine host. */
export function createMarketDataService(options: MarketDataOptions): MarketDataService {
  const limits: MarketDataLimits = { ...DEFAULT_MARKET_DATA_LIMITS, ...options.limits };
  const pacing: MarketDataPacing = { ...DEFAULT_PACING, ...options.pacing };
  const { host, now } = options;
  const limiterNow = options.limiterNow ?? Date.now;
  const auctions = options.auctions ?? noAuctions;
  const auctionEvents = options.auctionEvents ?? noAuctionEvents;
  const limiter =
    options.readLimiter ??
    new RateLimiter({
      perWindow: limits.messagesPerSecondPerIp,
      windowMs: 1_000,
      sustained: Number.MAX_SAFE_INTEGER,
      sustainedWindowMs: 1_000,
      cancelHeadroom: 1,
    });

  let tickerProjection = new TickerProjection(options.funding);
  let candleProjection = new CandleProjection(options.candleHistory ?? DEFAULT_CANDLE_HISTORY);
  let tradeTape = new TradeTape(options.tradeTape ?? DEFAULT_TRADE_TAPE);
  tickerProjection.seedFrom(host.state);
  /**
   * Each market's status in the last committed batch that showed it (seeded from the starting
   * state): a batch that changes it (a pause or a resume) pushes its tickers at once, not at the
   * pace of price changes.
   */
  const statuses = new Map<number, Market['status']>();
  host.state.markets.forEach((m, id) => {
    statuses.set(id, m.status);
  });
  // At the state's own time (a snapshot's), not now: the journal's tail, replayed next, trades
  // in the minutes after it and must land in them.
  candleProjection.seedFrom(host.state, host.state.time);

  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: limits.maxPayload,
    perMessageDeflate: false,
    maxFragments: 32,
    maxBufferedChunks: 256,
  });
  wss.on('error', () => {});
  const sessions = new Set<Session>();
  const slots = options.connectionSlots ?? new ConnectionSlots(limits.maxConnectionsPerIp);
  const clientAddressOf =
    options.clientAddress ??
    ((request: IncomingMessage): string => limitKey(clientAddress(request, null)));
  const channels = new Map<string, Channel>();
  let closing = false;
  let skipped = 0;
  let cutOff = 0;

  // ---- delivery ------------------------------------------------------------------------

  const detach = (s: Session): void => {
    if (s.closed) return;
    s.closed = true;
    if (s.idleTimer !== null) clearTimeout(s.idleTimer);
    s.idleTimer = null;
    sessions.delete(s);
    slots.release(s.ip);
    for (const key of s.keys) leave(s, key);
    s.keys.clear();
  };

  const terminate = (s: Session): void => {
    detach(s);
    s.ws.terminate();
  };

  /**
   * Sends one serialized message to one socket under the slow-consumer policy. `channel`: the
   * channel key of a snapshot push, so a skipped one is owed to the socket (`Session.owed`) and
   * a sent one settles that debt.
   */
  const deliver = (s: Session, text: string, droppable: boolean, channel?: string): void => {
    if (s.closed || s.ws.readyState !== s.ws.OPEN) return;
    const action = deliveryAction(s.ws.bufferedAmount, droppable, limits);
    if (action === 'drop') {
      skipped++;
      if (channel !== undefined) s.owed.add(channel);
      return;
    }
    if (channel !== undefined) s.owed.delete(channel);
    if (action === 'terminate') {
      cutOff++;
      return terminate(s);
    }
    s.ws.send(text);
    if (s.ws.bufferedAmount > limits.hardBufferBytes) {
      cutOff++;
      terminate(s);
    }
  };

  const reply = (s: Session, message: Record<string, unknown>): void =>
    deliver(s, JSON.stringify(message), false);

  const error = (
    s: Session,
    id: string | undefined,
    code: number,
    message: string,
    extra: Record<string, unknown> = {},
  ): void =>
    reply(
      s,
      id === undefined
        ? { type: 'error', code, message, ...extra }
        : { type: 'error', id, code, message, ...extra },
    );

  const broadcast = (ch: Channel, text: string, droppable: boolean, body?: string): void => {
    for (const s of [...ch.subscribers]) {
      const seen = s.seen.get(ch.key);
      if (seen !== undefined) {
        s.seen.delete(ch.key);
        if (seen === body) continue;
      }
      deliver(s, text, droppable, ch.key);
    }
  };

  // ---- building pushes -----------------------------------------------------------------

  const symbolOf = (market: number): { symbol: string; qd: number } | undefined => {
    const spec = host.state.markets.get(market)?.spec;
    return spec === undefined ? undefined : { symbol: spec.symbol, qd: spec.quantityDecimals };
  };

  const candleBuilt = (c: Candle): Built | undefined => {
    const s = symbolOf(c.market);
    if (s === undefined) return undefined;
    const wire = wireCandle(c, s.symbol, s.qd);
    const body = JSON.stringify(wire);
    return { body, text: `{"type":"candle",${body.slice(1)}` };
  };

  /** Asks every ticker and candle channel for a push (the projections were replaced). */
  const requestProjectionPushes = (): void => {
    for (const ch of channels.values()) {
      const c = ch.topic.channel;
      if (c === 'tickers' || c === 'ticker' || c === 'candles') ch.pacer?.request();
    }
  };

  /**
   * Projections built aside (a backfill's, a checkpoint's restore), fed batches, then swapped in
   * for the live ones between two batches.
   */
  const swapIn = (
    ticker: TickerProjection,
    candles: CandleProjection,
    tape: TradeTape,
  ): ProjectionRebuild => ({
    apply(batch) {
      ticker.apply(batch);
      ticker.restate(candles.apply(batch).busts);
      tape.apply(batch);
    },
    commit() {
      if (closing) return;
      // Candles that ended by now: the live projection pushes its closes as usual, the one
      // swapped in closes the same intervals silently (a candle is closed once on the wire).
      const time = closeBefore();
      sendClosed(candleProjection.advance(time));
      candles.advance(time);
      tickerProjection = ticker;
      candleProjection = candles;
      tradeTape = tape;
      requestProjectionPushes();
    },
  });

  /**
   * The time candles may be closed up to: `now()`, held back to the stamp of the oldest command
   * not published yet, whose trades belong to the candle of their own time (a slow journal append
   * across a minute's end must not push that minute closed without them).
   */
  const closeBefore = (): number => {
    const time = now();
    const pending = host.unpublishedSince?.() ?? null;
    return pending === null ? time : Math.min(time, pending);
  };

  /** Closes candles up to {@link closeBefore} and pushes each close to its channel, never dropped. */
  const advanceCandles = (): void => sendClosed(candleProjection.advance(closeBefore()));

  const sendClosed = (closed: readonly Candle[]): void => {
    for (const c of closed) {
      const ch = channels.get(`candles|${c.market}|${c.interval}`);
      if (ch === undefined) continue;
      const built = candleBuilt(c);
      if (built === undefined) continue;
      ch.lastBody = built.body;
      ch.lastSentAt = monotonic();
      broadcast(ch, built.text, false);
    }
  };

  /** The current push of a channel; `undefined` when there is nothing to show yet. */
  const build = (topic: Topic): Built | undefined => {
    const state = host.state;
    const time = now();
    switch (topic.channel) {
      case 'tickers': {
        const list = tickerProjection.tickers(state, time);
        const body = JSON.stringify(list);
        return { body, text: `{"type":"tickers","time":${time},"tickers":${body}}` };
      }
      case 'ticker': {
        const t = tickerProjection.ticker(state, topic.market, time);
        if (t === undefined) return undefined;
        const { instrument, ...rest } = t;
        const body = JSON.stringify(rest);
        return {
          body,
          text: `{"type":"ticker","instrument":${JSON.stringify(instrument)},"time":${time},${body.slice(1)}`,
        };
      }
      case 'orderbook': {
        const m = state.markets.get(topic.market);
        if (m === undefined) return undefined;
        const snap = orderBookSnapshot(m, topic.depth, time);
        return { body: JSON.stringify([snap.bids, snap.asks]), text: JSON.stringify(snap) };
      }
      case 'candles': {
        advanceCandles();
        const c = candleProjection.current(topic.market, topic.interval);
        return c === undefined ? undefined : candleBuilt(c);
      }
      case 'liquidations':
      case 'trades':
        return undefined;
    }
  };

  /**
   * Sends an unchanged push to the subscribers whose join snapshot differs from it. A client that
   * joins while a coalesced push is pending gets the book as it is then, which the others never
   * see; when the channel then returns to what it last pushed, only the newcomer needs the push,
   * and without this it would keep the intermediate state until the keep-alive.
   */
  const catchUp = (ch: Channel, built: Built): boolean => {
    let sent = false;
    for (const s of [...ch.subscribers]) {
      const seen = s.seen.get(ch.key);
      if (seen === undefined) continue;
      s.seen.delete(ch.key);
      if (seen === built.body) continue;
      deliver(s, built.text, true, ch.key);
      sent = true;
    }
    return sent;
  };

  /**
   * Pushes a channel's current content if it changed (or always, for a keep-alive); when it did
   * not change, only to subscribers that joined with a different snapshot (`catchUp`).
   */
  const flush = (ch: Channel, force: boolean): boolean => {
    if (ch.subscribers.size === 0) return false;
    const built = build(ch.topic);
    if (built === undefined) return false;
    if (!force && built.body === ch.lastBody) return catchUp(ch, built);
    ch.lastBody = built.body;
    ch.lastSentAt = monotonic();
    broadcast(ch, built.text, true, built.body);
    return true;
  };

  const minIntervalOf = (topic: Topic): number | null => {
    switch (topic.channel) {
      case 'tickers':
      case 'ticker':
        return pacing.tickerMinIntervalMs;
      case 'orderbook':
        return pacing.orderbookMinIntervalMs;
      case 'candles':
        return pacing.candleMinIntervalMs;
      case 'liquidations':
      case 'trades':
        return null;
    }
  };

  // ---- subscriptions -------------------------------------------------------------------

  const join = (s: Session, topic: Topic): Channel => {
    const key = topicKey(topic);
    let ch = channels.get(key);
    if (ch === undefined) {
      const created: Channel = {
        key,
        topic,
        subscribers: new Set(),
        pacer: null,
        lastBody: null,
        lastSentAt: monotonic(),
      };
      const interval = minIntervalOf(topic);
      if (interval !== null) {
        created.pacer = new Pacer(interval, monotonic, () => flush(created, false));
      }
      ch = created;
      channels.set(key, ch);
    }
    ch.subscribers.add(s);
    s.keys.add(key);
    return ch;
  };

  function leave(s: Session, key: string): void {
    const ch = channels.get(key);
    if (ch === undefined) return;
    ch.subscribers.delete(s);
    s.seen.delete(key);
    s.owed.delete(key);
    if (ch.subscribers.size === 0) {
      ch.pacer?.cancel();
      channels.delete(key);
    }
  }

  const request = (key: string): void => channels.get(key)?.pacer?.request();

  /**
   * Pushes a channel now if its content changed, past its pacing; the push restarts the pacing
   * interval (a pending trailing push still goes, and finds nothing new unless more changed).
   */
  const pushNow = (key: string): void => {
    const ch = channels.get(key);
    if (ch !== undefined && flush(ch, false)) ch.pacer?.sent();
  };

  /**
   * Markets of a batch whose status (`Active`/`Paused`) differs from the one last seen: an
   * operator's pause or resume. A newly listed market is recorded, not counted: its first ticker
   * goes out at the usual pace.
   */
  const statusChanges = (batch: CommittedBatch): Set<number> => {
    const changed = new Set<number>();
    for (const events of batch.events) {
      for (const e of events) {
        if (e.type !== 'marketChanged') continue;
        const status = batch.state.markets.get(e.market)?.status;
        if (status === undefined) continue;
        const before = statuses.get(e.market);
        statuses.set(e.market, status);
        if (before !== undefined && before !== status) changed.add(e.market);
      }
    }
    return changed;
  };

  /**
   * Sends the snapshot a new subscriber gets right after its ack. `trades` has none: a subscriber
   * gets the prints after its ack, the recent ones come from `GET /api/trades`.
   */
  const snapshot = (s: Session, ch: Channel, fresh: boolean): void => {
    const topic = ch.topic;
    if (topic.channel === 'liquidations') {
      const state = host.state;
      const time = now();
      for (const a of auctions(state)) {
        if (topic.market !== null && a.market !== topic.market) continue;
        const spec = state.markets.get(a.market)?.spec;
        if (spec === undefined) continue;
        deliver(s, JSON.stringify(wireAuction(pricedAt(a, state, time), spec)), false);
      }
      return;
    }
    const built = build(topic);
    if (built === undefined) return;
    if (fresh) ch.lastBody = built.body;
    else s.seen.set(ch.key, built.body);
    deliver(s, built.text, false, ch.key);
  };

  const onMessage = (s: Session, data: RawData, isBinary: boolean): void => {
    s.lastActivity = monotonic();
    if (isBinary) {
      return error(
        s,
        undefined,
        4000,
        'INVALID_REQUEST: binary frames are not accepted; send JSON text',
      );
    }
    const text = Array.isArray(data)
      ? Buffer.concat(data).toString('utf8')
      : Buffer.from(data as ArrayBuffer).toString('utf8');
    const parsed = parseRequest(text, (symbol) => host.state.symbols.get(symbol));
    // Every frame counts against the IP's budget, malformed ones included.
    const admitted = limiter.admit(s.ip, limiterNow(), 'unsigned');
    const id = parsed.ok ? parsed.request.id : parsed.error.id;
    if (!admitted.ok) {
      return error(s, id, 4029, admitted.message, { retryAfterMs: admitted.retryAfterMs });
    }
    if (!parsed.ok) return error(s, id, parsed.error.code, parsed.error.message);
    const req = parsed.request;
    if (req.type === 'ping') {
      return reply(
        s,
        req.id === undefined
          ? { type: 'pong', serverTime: now() }
          : { type: 'pong', id: req.id, serverTime: now() },
      );
    }
    if (req.type === 'unsubscribe') {
      // Idempotent: unsubscribing from something not subscribed is acknowledged too.
      for (const key of unsubscribeKeys(req.topic)) if (s.keys.delete(key)) leave(s, key);
      return reply(s, ackOf('unsubscribe', req.id, req.topic));
    }
    const key = topicKey(req.topic);
    if (!s.keys.has(key) && s.keys.size >= limits.maxSubscriptionsPerSocket) {
      // 4000, not 4029: waiting does not help, an unsubscribe (or another connection) does.
      return error(
        s,
        req.id,
        4000,
        `INVALID_REQUEST: at most ${limits.maxSubscriptionsPerSocket} subscriptions per connection; unsubscribe one first`,
      );
    }
    const fresh = !channels.has(key);
    const ch = join(s, req.topic);
    reply(s, ackOf('subscribe', req.id, req.topic));
    snapshot(s, ch, fresh);
  };

  // ---- engine batches ------------------------------------------------------------------

  const onBatch = (batch: CommittedBatch): void => {
    const tickerTouched = tickerProjection.apply(batch);
    const candles: CandleChanges = candleProjection.apply(batch);
    for (const m of tickerProjection.restate(candles.busts)) tickerTouched.add(m);
    sendClosed(candles.closed);
    // A bust sends each closed candle it restated again, closed, with its corrected values.
    sendClosed(candles.restated);
    for (const series of candles.touched) request(`candles|${series}`);
    const books = new Set<number>();
    const flat: EngineEvent[] = [];
    for (const events of batch.events) {
      for (const e of events) {
        flat.push(e);
        if (e.type === 'bookChanged') books.add(e.market);
      }
    }
    for (const m of books) for (const d of BOOK_DEPTHS) request(`orderbook|${m}|${d}`);
    // A pause or resume goes out at once (its ticker and the list), other changes paced.
    const statusChanged = statusChanges(batch);
    for (const m of tickerTouched) if (!statusChanged.has(m)) request(`ticker|${m}`);
    for (const m of statusChanged) pushNow(`ticker|${m}`);
    if (statusChanged.size > 0) pushNow('tickers');
    else if (tickerTouched.size > 0) request('tickers');
    // Prints and busts in trade order, one message each, never skipped: a tape with a gap is
    // wrong, not stale. The batch is committed (durable) before the host publishes it.
    for (const t of tradeTape.apply(batch)) {
      const ch = channels.get(`trades|${t.market}`);
      if (ch === undefined) continue;
      const spec = batch.state.markets.get(t.market)?.spec;
      if (spec === undefined) continue;
      const text =
        t.kind === 'trade'
          ? JSON.stringify({ type: 'trade', ...publicTrade(t.print, spec) })
          : JSON.stringify({
              type: 'tradeBust',
              instrument: spec.symbol,
              tradeId: String(t.tradeId),
              time: t.time,
            });
      broadcast(ch, text, false);
    }
    const changed = auctionEvents(flat, batch.state);
    for (const a of changed) {
      const spec = batch.state.markets.get(a.market)?.spec;
      if (spec === undefined) continue;
      const text = JSON.stringify(wireAuction(a, spec));
      for (const key of ['liquidations|*', `liquidations|${a.market}`]) {
        const ch = channels.get(key);
        if (ch !== undefined) broadcast(ch, text, false);
      }
    }
  };
  const unsubscribeHost = host.subscribe((batch) => {
    if (!closing) onBatch(batch);
  });

  // ---- timers ----------------------------------------------------------------------------

  /**
   * Sends each socket that drained below the soft cap the current snapshot of every channel
   * whose push it missed, so it ends on the venue's state rather than on the last push it got.
   */
  const settleOwed = (): void => {
    for (const s of sessions) {
      if (s.owed.size === 0 || s.ws.bufferedAmount > limits.softBufferBytes) continue;
      for (const key of [...s.owed]) {
        s.owed.delete(key);
        const ch = channels.get(key);
        if (ch === undefined || !ch.subscribers.has(s)) continue;
        const built = build(ch.topic);
        if (built === undefined) continue;
        // It now has this snapshot: a push of the same content later is not sent again.
        s.seen.set(key, built.body);
        deliver(s, built.text, true, key);
      }
    }
  };

  const housekeeping = setInterval(() => {
    advanceCandles();
    settleOwed();
    const t = monotonic();
    for (const ch of [...channels.values()]) {
      switch (ch.topic.channel) {
        case 'tickers':
        case 'ticker':
          // The window slides and funding moves without any event: check, paced.
          if (t - ch.lastSentAt >= pacing.tickerKeepAliveMs) {
            if (flush(ch, true)) ch.pacer?.sent();
          } else ch.pacer?.request();
          break;
        case 'orderbook':
          if (t - ch.lastSentAt >= pacing.orderbookKeepAliveMs && ch.pacer?.pending !== true) {
            if (flush(ch, true)) ch.pacer?.sent();
          }
          break;
        default:
          break;
      }
    }
  }, pacing.housekeepingMs);
  housekeeping.unref();

  const heartbeat = setInterval(() => {
    for (const s of sessions) s.ws.ping();
    limiter.sweep(limiterNow());
  }, limits.pingIntervalMs);
  heartbeat.unref();

  // ---- the service -----------------------------------------------------------------------

  /** `retryAfter`: seconds, for a refusal the client may retry (a slot frees when one closes). */
  const refuse = (socket: Duplex, status: string, retryAfter?: number): void => {
    const retry = retryAfter === undefined ? '' : `Retry-After: ${retryAfter}\r\n`;
    socket.write(`HTTP/1.1 ${status}\r\n${retry}Connection: close\r\nContent-Length: 0\r\n\r\n`);
    socket.destroy();
  };

  return {
    handleUpgrade(request, socket, head) {
      socket.on('error', () => {});
      if (closing) return refuse(socket, '503 Service Unavailable');
      const ip = clientAddressOf(request);
      if (!slots.take(ip)) return refuse(socket, '429 Too Many Requests', 1);
      let attached = false;
      // A handshake that fails never reaches the callback: give its slot back.
      socket.once('close', () => {
        if (!attached) slots.release(ip);
      });
      wss.handleUpgrade(request, socket, head, (ws) => {
        attached = true;
        const s: Session = {
          ws,
          ip,
          keys: new Set(),
          seen: new Map(),
          owed: new Set(),
          lastActivity: monotonic(),
          idleTimer: null,
          closed: false,
        };
        if (closing) {
          slots.release(ip);
          ws.terminate();
          return;
        }
        sessions.add(s);
        // Closed at its idle deadline with 4408, as on the trading socket (ws/idle.ts).
        armIdle(s, limits.idleTimeoutMs, detach);
        ws.on('error', () => terminate(s));
        ws.on('close', () => detach(s));
        ws.on('pong', () => {
          s.lastActivity = monotonic();
        });
        ws.on('message', (data, isBinary) => {
          try {
            onMessage(s, data, isBinary);
          } catch (e) {
            error(s, undefined, 5000, 'INTERNAL_ERROR: the request failed; retry with backoff');
            console.error('market-data message failed', e);
          }
        });
      });
    },

    async close() {
      if (closing) return;
      closing = true;
      clearInterval(housekeeping);
      clearInterval(heartbeat);
      unsubscribeHost();
      for (const ch of channels.values()) ch.pacer?.cancel();
      channels.clear();
      const open = [...sessions];
      const gone = Promise.all(
        open.map(
          (s) =>
            new Promise<void>((resolve) => {
              if (s.ws.readyState === s.ws.CLOSED) return resolve();
              s.ws.once('close', () => resolve());
            }),
        ),
      );
      for (const s of open) {
        s.ws.close(1001, 'server shutting down');
        detach(s);
      }
      let grace: NodeJS.Timeout | undefined;
      await Promise.race([
        gone,
        new Promise<void>((resolve) => {
          grace = setTimeout(resolve, SHUTDOWN_GRACE_MS);
        }),
      ]);
      clearTimeout(grace);
      // A peer that does not answer the close handshake is cut off.
      for (const s of open) s.ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },

    candles(instrument, interval, startTime, endTime, limit) {
      const market = host.state.symbols.get(instrument);
      if (market === undefined || !isCandleInterval(interval)) return undefined;
      advanceCandles();
      const spec = host.state.markets.get(market)?.spec;
      if (spec === undefined) return undefined;
      return candleProjection
        .range(market, interval, { startTime, endTime, limit })
        .map((c) => wireCandle(c, spec.symbol, spec.quantityDecimals));
    },

    tickers() {
      return tickerProjection.tickers(host.state, now());
    },

    trades(instrument, limit) {
      const market = host.state.symbols.get(instrument);
      const spec = market === undefined ? undefined : host.state.markets.get(market)?.spec;
      if (market === undefined || spec === undefined) return undefined;
      return tradeTape.recent(market, limit).map((p) => publicTrade(p, spec));
    },

    rebuild() {
      return swapIn(
        new TickerProjection(options.funding),
        new CandleProjection(options.candleHistory ?? DEFAULT_CANDLE_HISTORY),
        tradeTape.emptyCopy(),
      );
    },

    checkpoint() {
      return {
        name: MARKET_DATA_PART,
        version: MARKET_DATA_PART_VERSION,
        reads: MARKET_DATA_PART_READS,
        capture: () => captureMarketData(tickerProjection, candleProjection, tradeTape),
        restorer() {
          // The live projections' configuration (history size, window, funding), not the file's.
          const ticker = tickerProjection.emptyCopy();
          const candles = candleProjection.emptyCopy();
          const tape = tradeTape.emptyCopy();
          const restore = new MarketDataRestore(ticker, candles, tape);
          return {
            add: (entry) => restore.add(entry),
            // Every market has all its series, then the candles are filled (aside).
            check: () => restore.finish(),
            ...swapIn(ticker, candles, tape),
          };
        },
      };
    },

    get connections() {
      return sessions.size;
    },

    get skipped() {
      return skipped;
    },

    get cutOff() {
      return cutOff;
    },
  };
}
