import { describe, expect, it } from 'vitest';
import { ackOf, parseRequest, topicKey, unsubscribeKeys } from './requests.js';

const markets: Record<string, number> = { 'BTC-PERP': 1, 'ETH-PERP': 2 };
const marketOf = (s: string) => (Object.hasOwn(markets, s) ? markets[s] : undefined);
const parse = (m: unknown) => parseRequest(typeof m === 'string' ? m : JSON.stringify(m), marketOf);
const refusal = (m: unknown) => {
  const r = parse(m);
  if (r.ok) throw new Error('accepted');
  return r.error;
};

describe('parseRequest', () => {
  it('resolves each channel to a topic with its key', () => {
    const cases: [unknown, string][] = [
      [{ type: 'subscribe', channel: 'tickers' }, 'tickers'],
      [{ type: 'subscribe', channel: 'ticker', instrument: 'ETH-PERP' }, 'ticker|2'],
      [{ type: 'subscribe', channel: 'orderbook', instrument: 'BTC-PERP' }, 'orderbook|1|20'],
      [
        { type: 'subscribe', channel: 'orderbook', instrument: 'BTC-PERP', depth: 50 },
        'orderbook|1|50',
      ],
      [
        { type: 'unsubscribe', channel: 'candles', instrument: 'BTC-PERP', interval: '4h' },
        'candles|1|4h',
      ],
      [{ type: 'subscribe', channel: 'liquidations' }, 'liquidations|*'],
      [{ type: 'subscribe', channel: 'liquidations', instrument: 'ETH-PERP' }, 'liquidations|2'],
      [{ type: 'subscribe', channel: 'trades', instrument: 'ETH-PERP' }, 'trades|2'],
      [{ type: 'unsubscribe', channel: 'trades', instrument: 'BTC-PERP' }, 'trades|1'],
    ];
    for (const [message, key] of cases) {
      const r = parse(message);
      if (!r.ok || r.request.type === 'ping') throw new Error(`refused ${JSON.stringify(message)}`);
      const keys =
        r.request.type === 'subscribe'
          ? [topicKey(r.request.topic)]
          : unsubscribeKeys(r.request.topic);
      expect(keys).toEqual([key]);
    }
  });

  it('an orderbook unsubscribe without depth names every depth, and its ack has no depth', () => {
    const keysOf = (m: unknown) => {
      const r = parse(m);
      if (!r.ok || r.request.type !== 'unsubscribe') throw new Error('refused');
      return {
        keys: unsubscribeKeys(r.request.topic),
        ack: ackOf('unsubscribe', 'u', r.request.topic),
      };
    };
    const book = { type: 'unsubscribe', channel: 'orderbook', instrument: 'ETH-PERP' };
    expect(keysOf(book)).toEqual({
      keys: ['orderbook|2|5', 'orderbook|2|10', 'orderbook|2|20', 'orderbook|2|50'],
      ack: { type: 'unsubscribed', id: 'u', channel: 'orderbook', instrument: 'ETH-PERP' },
    });
    expect(keysOf({ ...book, depth: null }).keys).toHaveLength(4);
    expect(keysOf({ ...book, depth: 5 })).toEqual({
      keys: ['orderbook|2|5'],
      ack: {
        type: 'unsubscribed',
        id: 'u',
        channel: 'orderbook',
        instrument: 'ETH-PERP',
        depth: 5,
      },
    });
    expect(refusal({ ...book, depth: 15 }).message).toMatch(/depth must be/);
  });

  it('a candles unsubscribe without interval names every interval, and its ack has no interval', () => {
    const r = parse({ type: 'unsubscribe', id: 'c', channel: 'candles', instrument: 'BTC-PERP' });
    if (!r.ok || r.request.type !== 'unsubscribe') throw new Error('refused');
    expect(unsubscribeKeys(r.request.topic)).toEqual(
      ['1m', '3m', '5m', '15m', '30m', '1h', '2h', '4h', '6h', '8h', '12h', '1d'].map(
        (i) => `candles|1|${i}`,
      ),
    );
    expect(ackOf('unsubscribe', 'c', r.request.topic)).toEqual({
      type: 'unsubscribed',
      id: 'c',
      channel: 'candles',
      instrument: 'BTC-PERP',
    });
    // A subscribe still needs one, and a named interval still must be one of the list.
    const candles = { channel: 'candles', instrument: 'BTC-PERP' };
    expect(refusal({ type: 'subscribe', ...candles }).message).toBe(
      'INVALID_REQUEST: channel candles needs an interval, one of 1m 3m 5m 15m 30m 1h 2h 4h 6h 8h 12h 1d',
    );
    expect(refusal({ type: 'subscribe', ...candles, interval: null }).message).toMatch(
      /needs an interval, one of 1m 3m/,
    );
    expect(refusal({ type: 'unsubscribe', ...candles, interval: '1w' }).message).toMatch(
      /interval must be/,
    );
  });

  it('echoes the normalised subscription in the acknowledgement', () => {
    const r = parse({ type: 'subscribe', id: 'x-1', channel: 'orderbook', instrument: 'BTC-PERP' });
    if (!r.ok || r.request.type === 'ping') throw new Error('refused');
    expect(ackOf('subscribe', r.request.id, r.request.topic)).toEqual({
      type: 'subscribed',
      id: 'x-1',
      channel: 'orderbook',
      instrument: 'BTC-PERP',
      depth: 20,
    });
    const l = parse({ type: 'unsubscribe', channel: 'liquidations' });
    if (!l.ok || l.request.type === 'ping') throw new Error('refused');
    expect(ackOf('unsubscribe', undefined, l.request.topic)).toEqual({
      type: 'unsubscribed',
      channel: 'liquidations',
    });
  });

  it('parses ping with and without an id', () => {
    expect(parse({ type: 'ping' })).toEqual({ ok: true, request: { type: 'ping', id: undefined } });
    expect(parse({ type: 'ping', id: 'a' })).toEqual({
      ok: true,
      request: { type: 'ping', id: 'a' },
    });
  });

  it('refuses with 4000, echoing the id when it is valid', () => {
    const cases: [unknown, string | undefined, RegExp][] = [
      [
        { type: 'subscribe', id: 'a', channel: 'fills' },
        'a',
        /unknown channel "fills"; expected one of tickers, ticker, orderbook, candles, liquidations, trades$/,
      ],
      [
        { type: 'subscribe', id: 'a', channel: 'trades' },
        'a',
        /channel trades needs an instrument/,
      ],
      [{ type: 'subscribe', id: 'a' }, 'a', /unknown channel undefined/],
      [{ type: 'subscribe', id: 'a', channel: 'ticker' }, 'a', /needs an instrument/],
      [
        { type: 'subscribe', id: 'a', channel: 'ticker', instrument: 'btc-perp' },
        'a',
        /unknown instrument/,
      ],
      [
        { type: 'subscribe', id: 'a', channel: 'ticker', instrument: '__proto__' },
        'a',
        /unknown instrument/,
      ],
      [
        { type: 'subscribe', channel: 'orderbook', instrument: 'BTC-PERP', depth: 15 },
        undefined,
        /depth/,
      ],
      [
        { type: 'subscribe', channel: 'orderbook', instrument: 'BTC-PERP', depth: '20' },
        undefined,
        /depth/,
      ],
      [{ type: 'subscribe', channel: 'candles', instrument: 'BTC-PERP' }, undefined, /interval/],
      [
        { type: 'subscribe', channel: 'candles', instrument: 'BTC-PERP', interval: '1w' },
        undefined,
        /interval/,
      ],
      [
        { type: 'subscribe', channel: 'candles', instrument: 'BTC-PERP', interval: 'constructor' },
        undefined,
        /interval/,
      ],
      [
        { type: 'subscribe', channel: 'liquidations', instrument: 'X' },
        undefined,
        /unknown instrument/,
      ],
      // Optional there: a value that is not a string is refused as such, not as a missing one.
      [
        { type: 'subscribe', id: 'l', channel: 'liquidations', instrument: 7 },
        'l',
        /^INVALID_REQUEST: instrument must be a symbol string \(or absent for every instrument\), got 7$/,
      ],
      // Absent (or null) means every instrument; an empty symbol is not a way to say so.
      [
        { type: 'subscribe', channel: 'liquidations', instrument: '' },
        undefined,
        /unknown instrument ""/,
      ],
      [{ type: 'Subscribe', id: 'a', channel: 'tickers' }, 'a', /unknown message type/],
      [{ type: 'subscribe', id: '', channel: 'tickers' }, undefined, /id must be/],
      [{ type: 'subscribe', id: 'x'.repeat(65), channel: 'tickers' }, undefined, /id must be/],
      [{ type: 'subscribe', id: 7, channel: 'tickers' }, undefined, /id must be/],
      [{ channel: 'tickers' }, undefined, /string type/],
      [[1, 2], undefined, /JSON object/],
      ['null', undefined, /JSON object/],
      ['{"type":"subscribe"', undefined, /malformed JSON/],
      ['{"type":"subscribe","channel":"tickers","__proto__":{"a":1}}', undefined, /malformed JSON/],
      ['{"type":"subscribe","constructor":{"prototype":1}}', undefined, /malformed JSON/],
      [
        '{"type":"subscribe","channel":"tickers","x":{"y":{"z":1}}}',
        undefined,
        /nested deeper than 2/,
      ],
      // Refused before its fields are read, a request still gets its id back (protocol.md 1).
      [
        '{"type":"subscribe","id":"n1","channel":"ticker","instrument":{"a":{"b":1}}}',
        'n1',
        /nested deeper than 2/,
      ],
      [{ id: 'no-type', channel: 'tickers' }, 'no-type', /string type/],
      [{ type: 5, id: 'num-type' }, 'num-type', /string type/],
      [{ type: 5, id: 'bad id' }, undefined, /string type/],
      ['{"type":"subscribe","id":"cut"', undefined, /malformed JSON/],
    ];
    for (const [message, id, pattern] of cases) {
      const e = refusal(message);
      expect(e.code).toBe(4000);
      expect(e.id).toBe(id);
      expect(e.message).toMatch(/^INVALID_REQUEST: /);
      expect(e.message).toMatch(pattern);
    }
  });
});
