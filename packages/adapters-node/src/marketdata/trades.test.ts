/**
 * The public trade tape: only the engine's `trade` events are prints (book matches and the
 * liquidation market sweep; auction claims and ADL are not), newest first, bounded per
 * instrument, and a bust takes a print off and is announced only when it was one.
 */
import { type EngineEvent, formatDecimal, liveAuctions } from '@perp/core';
import { BTC_SETTINGS, px, TestVenue, wallet } from '@perp/core/testing';
import { describe, expect, it } from 'vitest';
import type { CommittedBatch } from '../engine/host.js';
import { CandleProjection } from './candles.js';
import { TickerProjection } from './ticker.js';
import { TradeTape } from './trades.js';

/** A batch of `events` with the state `v` has now. */
function batchOf(v: TestVenue, events: EngineEvent[][]): CommittedBatch {
  return { commands: [], events, state: v.state };
}

/** A venue whose ISO-PERP long is liquidated: a market step, an auction, a claim, then ADL. */
function liquidation(): { v: TestVenue; events: EngineEvent[][] } {
  const v = new TestVenue();
  v.list(BTC_SETTINGS);
  // A 20x BTC long that the mark takes below its maintenance, sold into the book (market step).
  const [a, b, l] = [wallet(1), wallet(2), wallet(3)];
  for (const w of [a, b, l]) v.open(w);
  for (const w of [a, b]) v.fund(w, '100000');
  v.fund(l, '200');
  v.oracle({ 'BTC-PERP': '64400' });
  v.run({ type: 'updateLeverage', account: l, market: 1, mode: 'Cross', leverage: 2000 });
  v.place(b, 'BTC-PERP', { side: 'Sell', qty: '0.05', price: '64400' });
  v.place(l, 'BTC-PERP', { side: 'Buy', qty: '0.05', price: '64400' });
  v.place(a, 'BTC-PERP', { side: 'Buy', qty: '0.05', price: '60450' });
  v.place(b, 'BTC-PERP', { side: 'Sell', qty: '0.05', price: '60500.5' });
  v.oracle({ 'BTC-PERP': '60500' });
  // An isolated long too large for the book goes to auction; a claim, then ADL at its end.
  v.list({
    id: 3,
    symbol: 'ISO-PERP',
    tickSize: '0.5',
    lotSize: '1',
    quantityDecimals: 0,
    maxLeverage: 20,
    openInterestCap: '1000000',
    makerFeeRate: '0',
    takerFeeRate: '0',
    liquidation: { feeRate: '0', partialThreshold: '100000' },
  });
  const [gold, short, mm, claimant] = [wallet(0x60), wallet(0x73), wallet(0x62), wallet(0x91)];
  for (const w of [gold, short, mm, claimant]) v.open(w);
  for (const w of [short, mm, claimant]) v.fund(w, '100000');
  v.fund(gold, '1000', 'ISO-PERP');
  v.oracle({ 'ISO-PERP': '100' });
  v.place(gold, 'ISO-PERP', { side: 'Buy', qty: '100', price: '100', isolated: true });
  v.place(short, 'ISO-PERP', { side: 'Sell', qty: '100', price: '100' });
  v.place(mm, 'ISO-PERP', { side: 'Buy', qty: '1', price: '89.5' });
  v.place(mm, 'ISO-PERP', { side: 'Sell', qty: '1', price: '94.5' });
  v.run({ type: 'oracle', time: v.time + 10 * 60_000, prices: [{ market: 3, price: px('92') }] });
  const auction = liveAuctions(v.state)[0];
  if (auction === undefined) throw new Error('the scenario no longer starts an auction');
  v.run({
    type: 'claimLiquidation',
    account: claimant,
    auctionId: auction.auctionId,
    quantity: 10n,
    maxPrice: px('92'),
  });
  v.run({ type: 'tick', time: auction.endTime });
  return { v, events: [...v.history] };
}

const sourcesOf = (v: TestVenue): Map<number, string> => {
  const out = new Map<number, string>();
  v.state.trades.forEach((t, id) => {
    out.set(id, t.source);
  });
  return out;
};

describe('the trade tape', () => {
  it('prints book matches and the liquidation market sweep, not auction claims or ADL', () => {
    const { v, events } = liquidation();
    const sources = sourcesOf(v);
    // The scenario has every kind of trade.
    expect(new Set(sources.values())).toEqual(new Set(['Order', 'Liquidation', 'Auction', 'ADL']));
    const tape = new TradeTape();
    const out = tape.apply(batchOf(v, events));
    const printed = out.map((e) => (e.kind === 'trade' ? e.print.tradeId : -1));
    const expected = [...sources]
      .filter(([, s]) => s === 'Order' || s === 'Liquidation')
      .map(([id]) => id);
    expect(printed).toEqual(expected);
    // In trade order, newest first on the REST read, per instrument.
    const held = [...tape.recent(3, 100), ...tape.recent(1, 100)].map((p) => p.tradeId);
    expect(held.sort((x, y) => y - x)).toEqual([...expected].reverse());
    expect(tape.recent(1, 100).map((p) => p.tradeId)).toEqual(
      expected.filter((id) => v.state.trades.get(id)?.market === 1).reverse(),
    );
    const sweep = out.find(
      (e) => e.kind === 'trade' && sources.get(e.print.tradeId) === 'Liquidation',
    );
    // The liquidated long is sold into the bids: the taker (the liquidation) sells.
    expect(sweep).toMatchObject({ kind: 'trade', market: 1, print: { side: 'Sell' } });
    // Candles and the 24 h ticker count the same prints, and nothing else.
    const candles = new CandleProjection();
    const ticker = new TickerProjection();
    const batch = batchOf(v, events);
    candles.apply(batch);
    ticker.apply(batch);
    for (const market of [1, 3]) {
      const prints = tape.recent(market, 1_000);
      const volume = prints.reduce((sum, p) => sum + p.quantity, 0n);
      const day = candles.range(market, '1d');
      expect(day.reduce((n, c) => n + c.trades, 0)).toBe(prints.length);
      expect(day.reduce((sum, c) => sum + c.volume, 0n)).toBe(volume);
      const spec = v.state.markets.get(market)?.spec;
      expect(ticker.ticker(v.state, market, v.state.time)?.volume24h).toBe(
        formatDecimal(volume, spec?.quantityDecimals ?? 0),
      );
    }
    // The auction claim and ADL moved ISO-PERP positions off the book: not a print.
    expect(
      [...sources].filter(
        ([id, s]) => (s === 'Auction' || s === 'ADL') && v.state.trades.get(id)?.market === 3,
      ),
    ).not.toEqual([]);
    // The first match: l lifted b's offer.
    expect(out[0]).toEqual({
      kind: 'trade',
      market: 1,
      print: {
        tradeId: 1,
        time: expect.any(Number),
        price: px('64400'),
        quantity: 500n,
        side: 'Buy',
      },
    });
  });

  it('announces the bust of a print and takes it off the tape', () => {
    const { v, events } = liquidation();
    // A plain match after the liquidation: only book matches can be busted (claims, ADL and
    // liquidation fills are final).
    v.place(wallet(2), 'BTC-PERP', { side: 'Sell', qty: '0.01', price: '60600' });
    v.place(wallet(1), 'BTC-PERP', { side: 'Buy', qty: '0.01', price: '60600', tif: 'IOC' });
    const tape = new TradeTape();
    tape.apply(batchOf(v, [...events, ...v.history.slice(events.length)]));
    const before = tape.recent(1, 100);
    const id = v.state.counters.trade;
    expect(before[0]).toMatchObject({ tradeId: id, quantity: 100n, side: 'Buy' });
    const e = v.run({ type: 'bustTrade', tradeId: id, reason: 'test' });
    v.expectOk(e);
    expect(tape.apply(batchOf(v, [e]))).toEqual([
      { kind: 'bust', market: 1, tradeId: id, time: v.state.time },
    ]);
    expect(tape.recent(1, 100)).toEqual(before.slice(1));
  });

  it('announces the bust of a print it no longer holds, from the engine record', () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    const [a, b] = [wallet(1), wallet(2)];
    for (const w of [a, b]) {
      v.open(w);
      v.fund(w, '100000');
    }
    v.oracle({ 'BTC-PERP': '65000' });
    const tape = new TradeTape(2);
    for (let i = 0; i < 4; i++) {
      v.place(b, 'BTC-PERP', { side: 'Sell', qty: '0.01', price: String(65000 + i) });
      tape.apply(
        batchOf(v, [
          v.place(a, 'BTC-PERP', {
            side: 'Buy',
            qty: '0.01',
            price: String(65000 + i),
            tif: 'IOC',
          }),
        ]),
      );
    }
    // At most two held, the newest.
    expect(tape.recent(1, 10).map((p) => [p.tradeId, p.price, p.side])).toEqual([
      [4, px('65003'), 'Buy'],
      [3, px('65002'), 'Buy'],
    ]);
    const e = v.run({ type: 'bustTrade', tradeId: 1, reason: 'late' });
    v.expectOk(e);
    expect(tape.apply(batchOf(v, [e]))).toEqual([
      { kind: 'bust', market: 1, tradeId: 1, time: v.state.time },
    ]);
    expect(tape.recent(1, 10)).toHaveLength(2);
  });
});
