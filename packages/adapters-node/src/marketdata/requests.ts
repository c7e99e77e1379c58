/**
 * Client messages of the market-data socket (research 6.6, protocol.md sections 1 and 6):
 * `subscribe` / `unsubscribe` to a channel and `ping`. Messages are small flat JSON objects;
 * anything else is refused with 4000 and the connection stays open.
 *
 * @module
 */
import {
  isRecord,
  MESSAGE_ID_RE,
  parseJson,
  refusedMessageId,
  refusedTextId,
} from '../http/json.js';
import { type CandleInterval, INTERVALS, isCandleInterval } from './candles.js';
import { BOOK_DEPTHS, type BookDepth, DEFAULT_BOOK_DEPTH, isBookDepth } from './orderbook.js';

/** Channels of the market-data socket. */
export const CHANNELS = [
  'tickers',
  'ticker',
  'orderbook',
  'candles',
  'liquidations',
  'trades',
] as const;

/** A channel name. */
export type ChannelName = (typeof CHANNELS)[number];

/** What a subscription follows, with instruments resolved to market ids. */
export type Topic =
  | { readonly channel: 'tickers' }
  | { readonly channel: 'ticker'; readonly market: number; readonly instrument: string }
  | {
      readonly channel: 'orderbook';
      readonly market: number;
      readonly instrument: string;
      readonly depth: BookDepth;
    }
  | {
      readonly channel: 'candles';
      readonly market: number;
      readonly instrument: string;
      readonly interval: CandleInterval;
    }
  | {
      readonly channel: 'liquidations';
      readonly market: number | null;
      readonly instrument: string | null;
    }
  | { readonly channel: 'trades'; readonly market: number; readonly instrument: string };

/**
 * An `unsubscribe` from `orderbook` without `depth`: every depth of the instrument the connection
 * holds. Filling in the subscribe default (20) instead would acknowledge the request and leave a
 * depth-5 subscription streaming.
 */
export interface EveryBookDepth {
  readonly channel: 'orderbook';
  readonly market: number;
  readonly instrument: string;
  readonly depth: null;
}

/**
 * An `unsubscribe` from `candles` without `interval`: every interval of the instrument the
 * connection holds, as {@link EveryBookDepth} is for books (research 6.6 makes `interval`
 * optional there).
 */
export interface EveryCandleInterval {
  readonly channel: 'candles';
  readonly market: number;
  readonly instrument: string;
  readonly interval: null;
}

/** What an `unsubscribe` names. */
export type UnsubscribeTarget = Topic | EveryBookDepth | EveryCandleInterval;

/** A valid client request. */
export type ClientRequest =
  | { readonly type: 'subscribe'; readonly id: string | undefined; readonly topic: Topic }
  | {
      readonly type: 'unsubscribe';
      readonly id: string | undefined;
      readonly topic: UnsubscribeTarget;
    }
  | { readonly type: 'ping'; readonly id: string | undefined };

/** A refused client message: the `error` reply's fields. */
export interface RequestError {
  readonly id: string | undefined;
  readonly code: 4000;
  readonly message: string;
}

/** Result of {@link parseRequest}. */
export type ParsedRequest =
  | { readonly ok: true; readonly request: ClientRequest }
  | { readonly ok: false; readonly error: RequestError };

/** A subscription is a flat object; one level of nesting is tolerated, more is refused. */
const MAX_JSON_DEPTH = 2;

/** The channel key a topic is multiplexed under (one serialization per key and push). */
export function topicKey(topic: Topic): string {
  switch (topic.channel) {
    case 'tickers':
      return 'tickers';
    case 'ticker':
      return `ticker|${topic.market}`;
    case 'orderbook':
      return `orderbook|${topic.market}|${topic.depth}`;
    case 'candles':
      return `candles|${topic.market}|${topic.interval}`;
    case 'liquidations':
      return `liquidations|${topic.market ?? '*'}`;
    case 'trades':
      return `trades|${topic.market}`;
  }
}

/** The channel keys an `unsubscribe` removes (those the connection does not hold are ignored). */
export function unsubscribeKeys(target: UnsubscribeTarget): string[] {
  if (target.channel === 'orderbook' && target.depth === null)
    return BOOK_DEPTHS.map((depth) => topicKey({ ...target, depth }));
  if (target.channel === 'candles' && target.interval === null)
    return INTERVALS.map((interval) => topicKey({ ...target, interval }));
  return [topicKey(target as Topic)];
}

/**
 * The `subscribed` / `unsubscribed` acknowledgement of a request. An `unsubscribe` of every book
 * depth (candle interval) is acknowledged without `depth` (`interval`), as it was asked: research
 * 6.6 gives an ack one of each.
 */
export function ackOf(
  type: 'subscribe' | 'unsubscribe',
  id: string | undefined,
  topic: UnsubscribeTarget,
) {
  const ack: Record<string, unknown> = {
    type: type === 'subscribe' ? 'subscribed' : 'unsubscribed',
  };
  if (id !== undefined) ack.id = id;
  ack.channel = topic.channel;
  if (topic.channel !== 'tickers' && topic.instrument !== null) ack.instrument = topic.instrument;
  if (topic.channel === 'orderbook' && topic.depth !== null) ack.depth = topic.depth;
  if (topic.channel === 'candles' && topic.interval !== null) ack.interval = topic.interval;
  return ack;
}

const bad = (id: string | undefined, message: string): ParsedRequest => ({
  ok: false,
  error: { id, code: 4000, message: `INVALID_REQUEST: ${message}` },
});

const show = (value: unknown): string => (JSON.stringify(value) ?? String(value)).slice(0, 64);

/**
 * Parses one text frame. `marketOf` resolves an instrument symbol to its market id (undefined
 * when unknown).
 */
export function parseRequest(
  text: string,
  marketOf: (symbol: string) => number | undefined,
): ParsedRequest {
  const parsed = parseJson(text, MAX_JSON_DEPTH);
  if (!parsed.ok) return bad(refusedTextId(text), parsed.error);
  const msg = parsed.value;
  if (!isRecord(msg) || typeof msg.type !== 'string') {
    return bad(refusedMessageId(msg), 'a message is a JSON object with a string type');
  }
  let id: string | undefined;
  if (msg.id !== undefined) {
    if (typeof msg.id !== 'string' || !MESSAGE_ID_RE.test(msg.id)) {
      return bad(undefined, 'id must be 1-64 characters of [A-Za-z0-9_-]');
    }
    id = msg.id;
  }
  if (msg.type === 'ping') return { ok: true, request: { type: 'ping', id } };
  if (msg.type !== 'subscribe' && msg.type !== 'unsubscribe') {
    return bad(
      id,
      `unknown message type ${show(msg.type)}; expected subscribe, unsubscribe or ping`,
    );
  }
  const channel = msg.channel;
  if (typeof channel !== 'string' || !(CHANNELS as readonly string[]).includes(channel)) {
    return bad(id, `unknown channel ${show(channel)}; expected one of ${CHANNELS.join(', ')}`);
  }
  const type = msg.type;
  const instrument = (): { market: number; instrument: string } | string => {
    if (typeof msg.instrument !== 'string') {
      // `liquidations` reaches here only with an instrument that is neither absent nor null.
      return channel === 'liquidations'
        ? `instrument must be a symbol string (or absent for every instrument), got ${show(msg.instrument)}`
        : `channel ${channel} needs an instrument`;
    }
    const market = marketOf(msg.instrument);
    if (market === undefined) return `unknown instrument ${show(msg.instrument)}`;
    return { market, instrument: msg.instrument };
  };
  switch (channel as ChannelName) {
    case 'tickers':
      return { ok: true, request: { type, id, topic: { channel: 'tickers' } } };
    case 'ticker': {
      const i = instrument();
      if (typeof i === 'string') return bad(id, i);
      return { ok: true, request: { type, id, topic: { channel: 'ticker', ...i } } };
    }
    case 'orderbook': {
      const i = instrument();
      if (typeof i === 'string') return bad(id, i);
      // Without a depth, an unsubscribe names the instrument's book at every depth (see
      // `EveryBookDepth`); a subscribe gets the default.
      if (type === 'unsubscribe' && msg.depth == null) {
        return {
          ok: true,
          request: { type, id, topic: { channel: 'orderbook', ...i, depth: null } },
        };
      }
      const depth = msg.depth ?? DEFAULT_BOOK_DEPTH;
      if (!isBookDepth(depth)) return bad(id, `depth must be 5, 10, 20 or 50, got ${show(depth)}`);
      return { ok: true, request: { type, id, topic: { channel: 'orderbook', ...i, depth } } };
    }
    case 'candles': {
      const i = instrument();
      if (typeof i === 'string') return bad(id, i);
      if (type === 'unsubscribe' && msg.interval == null) {
        return {
          ok: true,
          request: { type, id, topic: { channel: 'candles', ...i, interval: null } },
        };
      }
      if (msg.interval === undefined || msg.interval === null) {
        return bad(id, `channel candles needs an interval, one of ${INTERVALS.join(' ')}`);
      }
      if (!isCandleInterval(msg.interval)) {
        return bad(id, `interval must be one of ${INTERVALS.join(' ')}, got ${show(msg.interval)}`);
      }
      return {
        ok: true,
        request: { type, id, topic: { channel: 'candles', ...i, interval: msg.interval } },
      };
    }
    case 'liquidations': {
      if (msg.instrument === undefined || msg.instrument === null) {
        return {
          ok: true,
          request: { type, id, topic: { channel: 'liquidations', market: null, instrument: null } },
        };
      }
      const i = instrument();
      if (typeof i === 'string') return bad(id, i);
      return { ok: true, request: { type, id, topic: { channel: 'liquidations', ...i } } };
    }
    case 'trades': {
      const i = instrument();
      if (typeof i === 'string') return bad(id, i);
      return { ok: true, request: { type, id, topic: { channel: 'trades', ...i } } };
    }
  }
}
