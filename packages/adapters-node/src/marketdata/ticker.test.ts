import type { EngineEvent } from '@perp/core';
import { BTC_SETTINGS, ETH_SETTINGS, instrument, T0, TestVenue, wallet } from '@perp/core/testing';
import { describe, expect, it } from 'vitest';
import type { CommittedBatch } from '../engine/host.js';
import { CandleProjection } from './candles.js';
import { orderBookSnapshot } from './orderbook.js';
import { changePercent, TickerProjection } from './ticker.js';

const A = wallet(1);
const B = wallet(2);

/** A TestVenue whose every command is also fed to a projection, as the host would. */
function setup() {
  const venue = new TestVenue({ time: T0 });
  const projection = new TickerProjection((_s, market) =>
    market === 2 ? { rate: '-0.0001', nextFundingTime: T0 + 3_600_000 } : null,
  );
  const run = (events: EngineEvent[]) => {
    const batch: CommittedBatch = { commands: [], events: [events], state: venue.state };
    return projection.apply(batch);
  };
  run(venue.run({ type: 'setInstrument', instrument: instrument(BTC_SETTINGS) }));
  return { venue, projection, run };
}

describe('changePercent', () => {
  it('is a percent with two decimals, rounded half-even', () => {
    expect(changePercent(61_000n, 60_000n)).toBe('1.67');
    expect(changePercent(59_000n, 60_000n)).toBe('-1.67');
    expect(changePercent(60_000n, 60_000n)).toBe('0');
    expect(changePercent(120n, 100n)).toBe('20');
    // 0.005 % ties to even (0), 0.015 % to 0.02.
    expect(changePercent(200_010n, 200_000n)).toBe('0');
    expect(changePercent(200_030n, 200_000n)).toBe('0.02');
    expect(changePercent(199_990n, 200_000n)).toBe('0');
  });
});

describe('TickerProjection', () => {
  it('reads book, prices, open interest and funding from the state; stats from trades', () => {
    const { venue, projection, run } = setup();
    run(venue.run({ type: 'setInstrument', instrument: instrument(ETH_SETTINGS) }));
    for (const a of [A, B]) {
      venue.open(a);
      venue.fund(a, '1000000');
    }
    expect(run(venue.oracle({ 'BTC-PERP': '60000', 'ETH-PERP': '3000' }))).toEqual(new Set([1, 2]));
    expect(run(venue.place(A, 'ETH-PERP', { side: 'Buy', qty: '1.5', price: '2999.5' }))).toEqual(
      new Set([2]),
    );
    run(venue.place(A, 'ETH-PERP', { side: 'Sell', qty: '2', price: '3001' }));
    run(venue.place(B, 'ETH-PERP', { side: 'Buy', qty: '0.5', price: '3001' }));
    const time = venue.time;
    const eth = venue.state.markets.get(2)!;
    expect(projection.ticker(venue.state, 2, time)).toEqual({
      instrument: 'ETH-PERP',
      status: 'Active',
      last: '3001',
      mark: expect.any(String),
      index: '3000',
      bestBid: '2999.5',
      bestAsk: '3001',
      open24h: '3001',
      high24h: '3001',
      low24h: '3001',
      volume24h: '0.5',
      quoteVolume24h: '1500.5',
      priceChange24h: '0',
      priceChangePct24h: '0',
      fundingRate: '-0.0001',
      nextFundingTime: T0 + 3_600_000,
      openInterest: '0.5',
    });
    expect(orderBookSnapshot(eth, 5, time)).toEqual({
      type: 'orderbook',
      instrument: 'ETH-PERP',
      depth: 5,
      seq: eth.bookSeq,
      time,
      bids: [['2999.5', '1.5']],
      asks: [['3001', '1.5']],
    });
    expect(projection.tickers(venue.state, time).map((t) => t.instrument)).toEqual([
      'BTC-PERP',
      'ETH-PERP',
    ]);
    expect(projection.ticker(venue.state, 9, time)).toBeUndefined();
  });

  it('a market seen only through its state shows its last trade as a flat day', () => {
    const { venue, run } = setup();
    for (const a of [A, B]) {
      venue.open(a);
      venue.fund(a, '1000000');
    }
    run(venue.oracle({ 'BTC-PERP': '60000' }));
    venue.place(A, 'BTC-PERP', { side: 'Sell', qty: '0.1', price: '60000' });
    venue.place(B, 'BTC-PERP', { side: 'Buy', qty: '0.1', price: '60000' });
    const fresh = new TickerProjection();
    fresh.seedFrom(venue.state);
    expect(fresh.ticker(venue.state, 1, venue.time)).toMatchObject({
      last: '60000',
      open24h: '60000',
      high24h: '60000',
      low24h: '60000',
      volume24h: '0',
      priceChangePct24h: '0',
      fundingRate: null,
      nextFundingTime: null,
    });
  });
});

describe('TickerProjection with busts in a batch of several commands', () => {
  // The host commits a group of commands as one batch (and a history backfill re-reduces the
  // journal 4,096 records a batch): a trade after a bust in the same batch and minute must stay
  // in the 24 h statistics, as it does when each command is its own batch.
  it('keeps the trades that follow a bust in the same batch and minute', () => {
    const venue = new TestVenue({ time: T0 });
    const events: EngineEvent[][] = [];
    const run = (e: EngineEvent[]) => events.push(e);
    run(venue.run({ type: 'setInstrument', instrument: instrument(BTC_SETTINGS) }));
    for (const a of [A, B]) {
      venue.open(a);
      venue.fund(a, '1000000');
    }
    run(venue.oracle({ 'BTC-PERP': '60000' }));
    const trade = (price: string) => {
      run(venue.place(A, 'BTC-PERP', { side: 'Sell', qty: '0.1', price }));
      run(venue.place(B, 'BTC-PERP', { side: 'Buy', qty: '0.1', price }));
    };
    trade('60000');
    const busted = venue.state.counters.trade;
    trade('60100');
    run(venue.run({ type: 'bustTrade', tradeId: busted, reason: 'test' }));
    trade('59900');

    const feed = (batches: EngineEvent[][][]) => {
      const ticker = new TickerProjection();
      const candles = new CandleProjection();
      for (const b of batches) {
        const batch: CommittedBatch = { commands: [], events: b, state: venue.state };
        ticker.apply(batch);
        ticker.restate(candles.apply(batch).busts);
      }
      return ticker.ticker(venue.state, 1, venue.time);
    };
    const oneByOne = feed(events.map((e) => [e]));
    expect(oneByOne).toMatchObject({
      last: '59900',
      high24h: '60100',
      low24h: '59900',
      volume24h: '0.2',
      quoteVolume24h: '12000',
    });
    expect(feed([events])).toEqual(oneByOne);
  });
});
