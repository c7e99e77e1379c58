/**
 * Money leaving a scope whose liquidation auction runs (engine-rules 7 and 9,
 * docs/risk-engine.md "Liquidation"). Claims made during the auction are promises to buy the
 * position at the auction price, which is below the mark for a long; the scope's transferable at
 * the mark counts gains on the part already claimed. A withdrawal or a transfer out of it while
 * the auction runs took that money out, and the claims then settled at their lower price into a
 * deficit that ADL handed to an unrelated counterparty far beyond the mark. So nothing leaves a
 * scope under auction: the withdrawal or transfer is `Rejected` (4100, nonce consumed), the
 * summary shows 0 to take out, and margin can still be added.
 */
import { describe, expect, it } from 'vitest';
import {
  accountSummary,
  type EngineEvent,
  liveAuctions,
  type Outcome,
  solvencyReport,
} from '../src/index.js';
import { px, T0, TestVenue, usd, wallet } from '../src/testing/index.js';

const LIQ = wallet(0xa0); // the account being liquidated
const SHORT = wallet(0xa1); // its counterparty, then the first in the ADL queue
const MM = wallet(0xa2); // a market maker whose quotes set the mark
const CL = wallet(0xa3); // the claimant

/** ISO-PERP (market 3, whole lots, no fees, mmr 2.5%): LIQ long 100 at 100 with 1,000 of margin. */
function venue(mode: 'Cross' | 'Isolated'): TestVenue {
  const v = new TestVenue();
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
  // LIQ signs its requests (nonces), so it needs app access.
  v.expectOk(v.run({ type: 'createReferralCode', code: 'AUC', kind: 'system', maxUses: 1 }));
  v.expectOk(
    v.run({
      type: 'applyReferral',
      wallet: LIQ,
      code: 'AUC',
      nonce: 'auction-n1',
      timestamp: v.time,
    }),
  );
  for (const w of [LIQ, SHORT, MM, CL]) v.open(w);
  v.fund(SHORT, '100000');
  v.fund(MM, '1000000');
  v.fund(CL, '100000');
  v.fund(LIQ, '1000', mode === 'Isolated' ? 'ISO-PERP' : undefined);
  v.oracle({ 'ISO-PERP': '100' });
  const isolated = mode === 'Isolated';
  v.expectOk(v.place(SHORT, 'ISO-PERP', { side: 'Sell', qty: '100', price: '100' }));
  v.expectOk(v.place(LIQ, 'ISO-PERP', { side: 'Buy', qty: '100', price: '100', isolated }));
  // No bid reaches the bankruptcy price 90: the market step fills nothing, the auction starts.
  quote(v, '89.5', '94.5');
  v.run({ type: 'oracle', time: T0 + 10 * 60_000, prices: [{ market: 3, price: px('92') }] });
  expect(v.state.markets.get(3)!.prices.mark).toBe(px('92'));
  expect(liveAuctions(v.state).length).toBe(1);
  return v;
}

function quote(v: TestVenue, bid: string, ask: string): void {
  v.run({ type: 'cancelAll', account: MM, market: 3 });
  v.expectOk(v.place(MM, 'ISO-PERP', { side: 'Buy', qty: '1', price: bid }));
  v.expectOk(v.place(MM, 'ISO-PERP', { side: 'Sell', qty: '1', price: ask }));
}

/** CL claims 90 of the 100 at the auction's start price, then the mark recovers to 200. */
function claimThenRecover(v: TestVenue): number {
  const auction = liveAuctions(v.state)[0]!;
  v.expectOk(
    v.run({
      type: 'claimLiquidation',
      account: CL,
      auctionId: auction.auctionId,
      quantity: 90n,
      maxPrice: px('92'),
    }),
  );
  quote(v, '200', '200.5');
  v.oracle({ 'ISO-PERP': '200' });
  expect(v.state.markets.get(3)!.prices.mark).toBe(px('200'));
  expect(liveAuctions(v.state).length).toBe(1);
  return auction.endTime;
}

const cashOf = (v: TestVenue, mode: 'Cross' | 'Isolated'): bigint => {
  const a = v.state.accounts.get(LIQ)!;
  return mode === 'Cross' ? a.crossCash : (a.isolated.find((p) => p.market === 3)?.cash ?? 0n);
};

function refusedForAuction(v: TestVenue, events: readonly EngineEvent[]): void {
  const o: Outcome = v.outcome(events);
  expect(o).toMatchObject({ ok: false, code: 4100 });
  expect(o.ok ? '' : o.message).toMatch(/being liquidated/);
  // A business refusal: the command has an id (Rejected) and consumed its nonce.
  expect(o.ok ? undefined : o.commandId).toBeTypeOf('number');
}

describe('an isolated scope under liquidation auction', () => {
  it('refuses a withdrawal of its transferable at the mark: the claims settle without a deficit', () => {
    const v = venue('Isolated');
    const endTime = claimThenRecover(v);
    // At mark 200 the scope's equity is -9,000 + 20,000: 9,000 would be transferable at the mark,
    // although 90 of its 100 are already promised to CL at 92.
    const before = cashOf(v, 'Isolated');
    const nonce = BigInt(v.time);
    const events = v.run({
      type: 'withdraw',
      account: LIQ,
      amount: usd('9000'),
      target: { mode: 'Isolated', market: 3 },
      auth: { nonce, deadline: BigInt(Math.floor(v.time / 1000) + 60) },
    });
    refusedForAuction(v, events);
    expect(cashOf(v, 'Isolated')).toBe(before);
    expect(v.state.totalWithdrawals).toBe(0n);
    expect(v.state.pending.size).toBe(0);
    // Its nonce is spent: the same signed withdrawal cannot pass once the auction is over.
    const again = v.run({
      type: 'withdraw',
      account: LIQ,
      amount: usd('9000'),
      target: { mode: 'Isolated', market: 3 },
      auth: { nonce, deadline: BigInt(Math.floor(v.time / 1000) + 60) },
    });
    expect(v.outcome(again)).toMatchObject({ ok: false, code: 4002 });
    // The summary offers nothing to take out while the auction runs.
    const summary = accountSummary(v.state, LIQ, v.time)!;
    expect(summary.assetPositions.map((p) => [p.marginMode, p.transferable])).toEqual([
      ['Isolated', '0'],
    ]);
    // The claims settle at 92: 10 left at the mark 200, equity -9,000 + 8,280 + 2,000 > 0.
    const end = v.run({ type: 'tick', time: endTime + 1 });
    expect(end.filter((e) => e.type === 'executionReport' && e.kind === 'ADL')).toEqual([]);
    expect(solvencyReport(v.state).totalDebt).toBe(0n);
    expect(cashOf(v, 'Isolated')).toBe(usd('-9000') + 8_279_994_000n);
    // Over: the healthy remainder can be taken out again.
    const after = accountSummary(v.state, LIQ, v.time)!.assetPositions[0]!;
    expect(after.szi).toBe('10');
    expect(after.transferable).not.toBe('0');
  });

  it('refuses a transfer to cross, and still takes a deposit or a transfer in', () => {
    const v = venue('Isolated');
    claimThenRecover(v);
    v.fund(LIQ, '500');
    const out = v.run({
      type: 'transferMargin',
      account: LIQ,
      market: 3,
      amount: usd('1'),
      direction: 'isolatedToCross',
    });
    refusedForAuction(v, out);
    expect(cashOf(v, 'Isolated')).toBe(usd('-9000'));
    // Margin may come in: it only makes the scope safer.
    v.expectOk(
      v.run({
        type: 'transferMargin',
        account: LIQ,
        market: 3,
        amount: usd('100'),
        direction: 'crossToIsolated',
      }),
    );
    v.fund(LIQ, '50', 'ISO-PERP');
    expect(cashOf(v, 'Isolated')).toBe(usd('-8850'));
  });
});

describe('a cross scope under liquidation auction', () => {
  it('refuses a withdrawal and a transfer to isolated, and shows withdrawable 0', () => {
    const v = venue('Cross');
    claimThenRecover(v);
    const before = cashOf(v, 'Cross');
    refusedForAuction(
      v,
      v.run({
        type: 'withdraw',
        account: LIQ,
        amount: usd('1'),
        target: { mode: 'Cross', market: 0 },
      }),
    );
    refusedForAuction(
      v,
      v.run({
        type: 'transferMargin',
        account: LIQ,
        market: 3,
        amount: usd('1'),
        direction: 'crossToIsolated',
      }),
    );
    expect(cashOf(v, 'Cross')).toBe(before);
    expect(accountSummary(v.state, LIQ, v.time)!.withdrawable).toBe('0');
  });
});

describe('the account summary of a scope under auction', () => {
  const pushed = (events: readonly EngineEvent[]): boolean =>
    events.some((e) => e.type === 'accountChanged' && e.account === LIQ);

  it('is pushed when the auction starts and when it ends, as what may leave the scope changes', () => {
    const v = new TestVenue();
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
    for (const w of [LIQ, SHORT, MM]) v.open(w);
    v.fund(SHORT, '100000');
    v.fund(MM, '1000000');
    v.fund(LIQ, '3000', 'ISO-PERP');
    v.oracle({ 'ISO-PERP': '100' });
    v.expectOk(v.place(SHORT, 'ISO-PERP', { side: 'Sell', qty: '100', price: '100' }));
    v.expectOk(v.place(LIQ, 'ISO-PERP', { side: 'Buy', qty: '100', price: '100', isolated: true }));
    quote(v, '60', '140');
    // A healthy scope the operator liquidates by force: no book fill, an auction, no push yet.
    const transferable = () =>
      accountSummary(v.state, LIQ, v.time)!.assetPositions[0]!.transferable;
    expect(transferable()).not.toBe('0');
    const start = v.run({
      type: 'liquidate',
      account: LIQ,
      mode: 'Isolated',
      market: 3,
      force: true,
    });
    const auction = liveAuctions(v.state)[0]!;
    expect(auction).toBeDefined();
    expect(transferable()).toBe('0');
    expect(pushed(start)).toBe(true);
    const end = v.run({ type: 'tick', time: auction.endTime + 1 });
    expect(liveAuctions(v.state)).toEqual([]);
    expect(pushed(end)).toBe(true);
  });
});
