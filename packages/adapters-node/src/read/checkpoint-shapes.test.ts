/**
 * A read-model checkpoint written by one build is loaded by the next when each part's entry
 * version is the same (`CheckpointPart.version`), so a change to the shape of what a part writes
 * (a history row, an execution report, an order view, a candle) must come with a new version. This
 * pins the record shapes each part writes for a scenario with trades, cancels, a bust, deposits,
 * a leverage update, a margin transfer, a withdrawal, a triggered stop, funding and a
 * liquidation (market, auction, a claim and ADL), by part and version: changing a shape fails
 * here until the part's version is raised and the pin updated with it.
 */
import { type Command, createEngineState, liveAuctions, reduceAll } from '@perp/core';
import { BTC_SETTINGS, px, TestVenue, wallet } from '@perp/core/testing';
import { describe, expect, it } from 'vitest';
import { CandleProjection } from '../marketdata/candles.js';
import { captureMarketData, MARKET_DATA_PART_VERSION } from '../marketdata/checkpoint.js';
import { TickerProjection } from '../marketdata/ticker.js';
import { TradeTape } from '../marketdata/trades.js';
import type { ReadModelCapture } from './checkpoint.js';
import { HistoryStore } from './history.js';
import { ReportStreams } from './report-streams.js';

/**
 * The record shapes (keys and their values' kinds) each part wrote, at the version it had. Update a part's entry
 * here only together with a new version of that part.
 */
const PINNED: Record<string, { version: number; shapes: string[] }> = {
  history: {
    version: 2,
    shapes: [
      'account:string,avgPx:null,cloid:null,closedTime:null,createdTime:number,cumQty:string,expireTime:null,instrument:string,leavesQty:string,managed:boolean,marginMode:string,market:number,ordStatus:string,orderId:string,orderType:string,parentCloid:null,postOnly:boolean,price:string,quantity:string,reason:null,reduceOnly:boolean,side:string,timeInForce:string,triggerPrice:null,updatedTime:number',
      'account:string,avgPx:null,cloid:null,closedTime:number,createdTime:number,cumQty:string,expireTime:null,instrument:string,leavesQty:string,managed:boolean,marginMode:string,market:number,ordStatus:string,orderId:string,orderType:string,parentCloid:null,postOnly:boolean,price:string,quantity:string,reason:string,reduceOnly:boolean,side:string,timeInForce:string,triggerPrice:null,updatedTime:number',
      'account:string,avgPx:string,cloid:null,closedTime:number,createdTime:number,cumQty:string,expireTime:null,instrument:string,leavesQty:string,managed:boolean,marginMode:string,market:number,ordStatus:string,orderId:string,orderType:string,parentCloid:null,postOnly:boolean,price:string,quantity:string,reason:null,reduceOnly:boolean,side:string,timeInForce:string,triggerPrice:null,updatedTime:number',
      'account:string,avgPx:string,cloid:null,closedTime:number,createdTime:number,cumQty:string,expireTime:null,instrument:string,leavesQty:string,managed:boolean,marginMode:string,market:number,ordStatus:string,orderId:string,orderType:string,parentCloid:null,postOnly:boolean,price:string,quantity:string,reason:null,reduceOnly:boolean,side:string,timeInForce:string,triggerPrice:string,updatedTime:number',
      'account:string,avgPx:string,cloid:null,closedTime:number,createdTime:number,cumQty:string,expireTime:null,instrument:string,leavesQty:string,managed:boolean,marginMode:string,market:number,ordStatus:string,orderId:string,orderType:string,parentCloid:null,postOnly:boolean,price:string,quantity:string,reason:string,reduceOnly:boolean,side:string,timeInForce:string,triggerPrice:null,updatedTime:number',
      'account:string,cloid:null,createdTime:number,cumQty:bigint,entryOrderId:null,expireTime:null,filledNotional:bigint,managed:boolean,marginMode:string,market:number,ordStatus:string,orderId:number,orderType:string,parentCloid:null,postOnly:boolean,price:bigint,quantity:bigint,reason:null,reduceOnly:boolean,side:string,timeInForce:string,triggerPrice:bigint,updatedTime:number',
      'account:string,cloid:null,createdTime:number,cumQty:bigint,entryOrderId:null,expireTime:null,filledNotional:bigint,managed:boolean,marginMode:string,market:number,ordStatus:string,orderId:number,orderType:string,parentCloid:null,postOnly:boolean,price:bigint,quantity:bigint,reason:string,reduceOnly:boolean,side:string,timeInForce:string,triggerPrice:bigint,updatedTime:number',
      'bustReason:null,bustTime:null,busted:boolean,cloid:null,execId:string,fee:string,instrument:string,lastPx:string,lastQty:string,liquidity:string,marginMode:string,market:number,orderId:null,positionAfter:string,positionBefore:string,quoteQty:string,realizedPnl:string,seq:number,side:string,source:string,time:number,tradeId:string',
      'bustReason:null,bustTime:null,busted:boolean,cloid:null,execId:string,fee:string,instrument:string,lastPx:string,lastQty:string,liquidity:string,marginMode:string,market:number,orderId:string,positionAfter:string,positionBefore:string,quoteQty:string,realizedPnl:string,seq:number,side:string,source:string,time:number,tradeId:string',
      'bustReason:string,bustTime:number,busted:boolean,cloid:null,execId:string,fee:string,instrument:string,lastPx:string,lastQty:string,liquidity:string,marginMode:string,market:number,orderId:string,positionAfter:string,positionBefore:string,quoteQty:string,realizedPnl:string,seq:number,side:string,source:string,time:number,tradeId:string',
      'execId:string,fundingRate:string,fundingTime:number,indexPrice:string,instrument:string,marginMode:string,markPrice:string,market:number,payment:string,positionSize:string,seq:number,source:string,time:number',
      'fundingRate:string,fundingTime:number,indexPrice:string,premium:string,samples:number,source:string',
    ],
  },
  reportStreams: {
    version: 2,
    shapes: [
      'account:string,adlId:number,execId:number,fill:object,kind:string,marginMode:string,market:number,rank:number,seq:number,time:number,type:string',
      'account:string,amount:bigint,commandId:number,direction:string,execId:number,kind:string,marginMode:string,market:number,seq:number,status:string,time:number,type:string',
      'account:string,amount:bigint,commandId:number,execId:number,kind:string,marginMode:string,market:number,seq:number,status:string,time:number,type:string',
      'account:string,auctionId:number,execId:number,fill:object,kind:string,market:number,price:bigint,quantity:bigint,reserve:bigint,seq:number,status:string,time:number,type:string',
      'account:string,bustReason:string,endedOrder:object,execId:number,fill:object,kind:string,marginMode:string,market:number,orderId:number,positionAfter:bigint,seq:number,time:number,tradeId:number,type:string,workingOrder:undefined',
      'account:string,cloid:null,createdTime:number,cumQty:bigint,entryOrderId:null,expireTime:null,filledNotional:bigint,managed:boolean,marginMode:string,market:number,ordStatus:string,orderId:number,orderType:string,parentCloid:null,postOnly:boolean,price:bigint,quantity:bigint,reason:null,reduceOnly:boolean,side:string,timeInForce:string,triggerPrice:bigint,updatedTime:number',
      'account:string,cloid:null,createdTime:number,cumQty:bigint,entryOrderId:null,expireTime:null,filledNotional:bigint,managed:boolean,marginMode:string,market:number,ordStatus:string,orderId:number,orderType:string,parentCloid:null,postOnly:boolean,price:bigint,quantity:bigint,reason:string,reduceOnly:boolean,side:string,timeInForce:string,triggerPrice:bigint,updatedTime:number',
      'account:string,commandId:number,execId:number,kind:string,leverage:number,marginMode:string,market:number,previousLeverage:number,seq:number,status:string,time:number,type:string',
      'account:string,execId:number,fill:object,kind:string,liquidationId:number,liquidationPrice:bigint,marginMode:string,markPrice:bigint,market:number,method:string,penalty:bigint,seq:number,time:number,type:string',
      'account:string,execId:number,fill:object,kind:string,markPrice:undefined,order:object,seq:number,time:number,type:string',
      'account:string,execId:number,fill:undefined,kind:string,markPrice:bigint,order:object,seq:number,time:number,type:string',
      'account:string,execId:number,fill:undefined,kind:string,markPrice:undefined,order:object,seq:number,time:number,type:string',
      'account:string,execId:number,fundingRate:bigint,fundingTime:number,indexPrice:bigint,kind:string,marginMode:string,markPrice:bigint,market:number,payment:bigint,positionSize:bigint,seq:number,time:number,type:string',
      'fee:bigint,liquidity:string,marginMode:string,market:number,positionAfter:bigint,positionBefore:bigint,price:bigint,quantity:bigint,quote:bigint,realizedPnl:bigint,side:string,time:number,tradeId:number',
    ],
  },
  marketData: {
    version: 2,
    shapes: [
      'buckets:array,kind:string,market:number,priorClose:null',
      'completeFrom:null,current:array,history:array,interval:string,kind:string,market:number,priorClose:null',
      'kind:string,market:number,prints:array',
      'kind:string,market:number,trades:array',
    ],
  },
};

/** The execution-report kinds {@link scenario} produces. */
const SCENARIO_KINDS: string[] = [
  'ADL',
  'DepositMargin',
  'Funding',
  'Liquidation',
  'LiquidationClaim',
  'OrderAccepted',
  'OrderCancelled',
  'OrderFilled',
  'OrderPartiallyFilled',
  'OrderTriggered',
  'TradeBust',
  'TransferMargin',
  'UpdateLeverage',
  'WithdrawMargin',
];

function scenario(): Command[] {
  const v = new TestVenue();
  v.list(BTC_SETTINGS);
  const [a, b] = [wallet(1), wallet(2)];
  for (const w of [a, b]) {
    v.open(w);
    v.fund(w, '100000');
  }
  v.oracle({ 'BTC-PERP': '65000' });
  for (let i = 0; i < 3; i++) {
    v.place(b, 'BTC-PERP', { side: 'Sell', qty: '0.01', price: String(65000 + i) });
    v.place(a, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: String(65000 + i), tif: 'IOC' });
  }
  v.place(a, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: '60000' });
  v.run({ type: 'bustTrade', tradeId: v.state.counters.trade, reason: 'fat finger' });
  // Margin commands and their settlements, a stop that triggers, funding.
  v.run({ type: 'updateLeverage', account: a, market: 1, mode: 'Cross', leverage: 500 });
  v.run({
    type: 'transferMargin',
    account: a,
    amount: 100_000_000n,
    market: 1,
    direction: 'crossToIsolated',
  });
  v.run({ type: 'withdraw', account: b, amount: 1_000_000n, target: { mode: 'Cross', market: 0 } });
  v.run({ type: 'settleWithdrawal', commandId: v.state.counters.command, success: true });
  v.place(b, 'BTC-PERP', {
    side: 'Sell',
    qty: '0.01',
    price: '64000',
    type: 'StopLimit',
    trigger: '64500',
  });
  v.place(a, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: '63900' });
  v.oracle({ 'BTC-PERP': '64400' });
  v.run({ type: 'settleFunding', market: 1 });
  // A liquidation: a 20x long that the mark takes below its maintenance, sold into the book
  // (quotes around the new mark, so the mark follows the oracle).
  const l = wallet(3);
  v.open(l);
  v.fund(l, '200');
  v.run({ type: 'updateLeverage', account: l, market: 1, mode: 'Cross', leverage: 2000 });
  v.place(b, 'BTC-PERP', { side: 'Sell', qty: '0.05', price: '64400' });
  v.place(l, 'BTC-PERP', { side: 'Buy', qty: '0.05', price: '64400' });
  v.run({ type: 'cancelAll', account: a, market: 1 });
  v.run({ type: 'cancelAll', account: b, market: 1 });
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
  return [...v.log];
}

/** Every record shape in `value`: its sorted keys, each with its value's kind. */
function shapesOf(value: unknown, into: Set<string>): void {
  if (value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) {
    for (const item of value) shapesOf(item, into);
    return;
  }
  const record = value as Record<string, unknown>;
  const kind = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);
  into.add(
    Object.keys(record)
      .sort()
      .map((k) => `${k}:${kind(record[k])}`)
      .join(','),
  );
  for (const v of Object.values(record)) shapesOf(v, into);
}

describe('the record shapes each checkpoint part writes', () => {
  it('are pinned per part version', () => {
    const commands = scenario();
    const r = reduceAll(createEngineState({}, (commands[0] as Command).time), commands);
    const batch = { commands, events: r.events, state: r.state };
    // The scenario reaches every kind of report whose shape the pin is meant to hold.
    const kinds = new Set(
      r.events.flat().flatMap((e) => (e.type === 'executionReport' ? [e.kind] : [])),
    );
    expect([...kinds].sort()).toEqual(SCENARIO_KINDS);
    const history = new HistoryStore();
    const streams = new ReportStreams();
    const ticker = new TickerProjection();
    const candles = new CandleProjection();
    const tape = new TradeTape();
    history.apply(batch);
    streams.apply(batch);
    ticker.apply(batch);
    ticker.restate(candles.apply(batch).busts);
    tape.apply(batch);
    const parts: [string, number, ReadModelCapture][] = [
      ['history', history.checkpoint().version, history.checkpoint().capture()],
      ['reportStreams', streams.checkpoint().version, streams.checkpoint().capture()],
      ['marketData', MARKET_DATA_PART_VERSION, captureMarketData(ticker, candles, tape)],
    ];
    const written: Record<string, { version: number; shapes: string[] }> = {};
    for (const [name, version, capture] of parts) {
      const shapes = new Set<string>();
      for (const entry of capture.entries()) shapesOf(entry, shapes);
      capture.release();
      written[name] = { version, shapes: [...shapes].sort() };
    }
    expect(
      written,
      "a part writes other record shapes: raise that part's version, then update PINNED with it",
    ).toEqual(PINNED);
  });
});
