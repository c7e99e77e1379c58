/**
 * What the answers to order requests carry. The outcome of an order request (what `orderAck`, `replaceAck`, `cancelAck` and
 * `cancelAllAck` carry) names the seq of the last execution report the command produced for the
 * account and the order as the command left it (research 6.3), including the reports of the
 * command's follow-ups: managed children its fills armed that fire at once, and liquidation
 * checks. Both run after the handler emitted its outcome.
 */
import { expect, it } from 'vitest';
import type { EngineEvent, ExecutionReport, Outcome } from '../src/index.js';
import { BTC_SETTINGS, cloid, px, TestVenue, wallet } from '../src/testing/index.js';
import { btcOrderVenue, kinds, orderIdOf } from './order-events.js';

const BTC = 'BTC-PERP';
const A = wallet(0xa);
const B = wallet(0xb);

type Answered = Extract<Outcome, { ok: true; kind: 'order' | 'cancel' | 'replace' }>;

const lastSeq = (events: readonly EngineEvent[], account: string): number =>
  Math.max(
    ...events
      .filter((e): e is ExecutionReport => e.type === 'executionReport' && e.account === account)
      .map((r) => r.seq),
  );

it('a replace whose fill arms a managed stop that fires at once acks the stop reports seq', () => {
  const v = btcOrderVenue();
  const entry = orderIdOf(
    v.place(A, BTC, { side: 'Buy', qty: '1', price: '60000', cloid: cloid(1) }),
  );
  const stop = orderIdOf(
    v.place(A, BTC, {
      side: 'Sell',
      qty: '1',
      trigger: '62000',
      type: 'StopLoss',
      managed: true,
      parentCloid: cloid(1),
    }),
  );
  v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '1', price: '61000' }));
  v.expectOk(v.place(B, BTC, { side: 'Buy', qty: '1', price: '55000' }));
  // The mark falls below the stop's trigger while the stop waits for its entry (not armed).
  v.oracle({ [BTC]: '61000' });
  expect(v.state.markets.get(1)!.prices.mark).toBeLessThan(px('62000'));
  const events = v.run({
    type: 'replaceOrder',
    account: A,
    market: 1,
    orderId: BigInt(entry),
    origCloid: null,
    price: px('61000'),
    triggerPrice: 0n,
    quantity: 10_000n,
    cloid: null,
  });
  // The entry fills, its stop arms and fires in the same command and closes the position.
  expect(kinds(events, A)).toEqual([
    `OrderReplaced#${entry}`,
    `OrderFilled#${entry}`,
    `OrderTriggered#${stop}`,
    `OrderFilled#${stop}`,
  ]);
  const outcome = v.outcome(events) as Answered;
  expect(outcome).toMatchObject({ ok: true, kind: 'replace' });
  expect(outcome.seq).toBe(lastSeq(events, A));
  expect(outcome.seq).toBe(v.state.accounts.get(A)!.reportSeq);
  expect(outcome.order).toMatchObject({ orderId: entry, ordStatus: 'Filled' });
});

it('a placement whose fill makes its scope liquidatable acks the order as the liquidation left it', () => {
  const v = new TestVenue({ checkPurity: true });
  v.list(BTC_SETTINGS);
  v.open(A);
  v.open(B);
  // Holds 0.2 x 90,000 / 10 = 1,800; after the first fill (0.1 at 90,000, mark 65,000) equity is
  // 2,580 - 2,500 - 4.05 = 75.95, below the maintenance margin 6,500 x 0.0125 = 81.25.
  v.fund(A, '2580');
  v.fund(B, '1000000');
  v.oracle({ [BTC]: '65000' });
  v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '0.1', price: '90000' }));
  v.expectOk(v.place(B, BTC, { side: 'Buy', qty: '0.1', price: '64000' }));
  const events = v.place(A, BTC, { side: 'Buy', qty: '0.2', price: '90000' });
  const id = orderIdOf(events);
  expect(kinds(events, A).slice(0, 3)).toEqual([
    `OrderAccepted#${id}`,
    `OrderPartiallyFilled#${id}`,
    `OrderCancelled:Liquidation#${id}`,
  ]);
  const outcome = v.outcome(events) as Answered;
  expect(outcome.seq).toBe(lastSeq(events, A));
  expect(outcome.order).toMatchObject({
    orderId: id,
    ordStatus: 'Cancelled',
    reason: 'Liquidation',
    cumQty: 1_000n,
  });
});

it('a replace of an ended order by orderId is 4041 naming that orderId, as a cancel is', () => {
  const v = btcOrderVenue();
  const id = orderIdOf(v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000' }));
  v.expectOk(v.cancel(A, BTC, { orderId: id }));
  const events = v.run({
    type: 'replaceOrder',
    account: A,
    market: 1,
    orderId: BigInt(id),
    origCloid: null,
    price: px('64000'),
    triggerPrice: 0n,
    quantity: 5_000n,
    cloid: null,
  });
  expect(v.outcome(events)).toMatchObject({
    ok: false,
    code: 4041,
    nonceConsumed: true,
    orderId: id,
    cloid: null,
  });
  expect(v.outcome(v.cancel(A, BTC, { orderId: id }))).toMatchObject({ code: 4041, orderId: id });
});
