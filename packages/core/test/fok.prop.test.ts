/**
 * FOK is all-or-nothing (engine-rules section 5), checked differentially: on random books with
 * margin checks on (thinly funded makers and takers, reduce-only orders, self-trades, price
 * moves), a FOK order and the same order as IOC are applied to the same state. The FOK fills
 * completely exactly when the IOC would, and then leaves the very same state; otherwise it is
 * cancelled (reason FOK) with no fill, no trade and no other order touched.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Command,
  type EngineEvent,
  type OrderRejectedReport,
  type OrderReport,
  reduce,
  stateHash,
} from '../src/index.js';
import { BTC_SETTINGS, TestVenue, wallet } from '../src/testing/index.js';

const BTC = 'BTC-PERP';
const TRADERS = [wallet(0xf1), wallet(0xf2), wallet(0xf3), wallet(0xf4)];
const FUNDS = ['300', '3000', '20000', '100000'];
const runs = Number(process.env.FC_NUM_RUNS ?? 150);

const step = fc.oneof(
  fc.record({
    k: fc.constant('rest' as const),
    w: fc.nat(3),
    buy: fc.boolean(),
    off: fc.integer({ min: -40, max: 40 }),
    lots: fc.integer({ min: 1, max: 400 }),
    reduceOnly: fc.boolean(),
  }),
  fc.record({
    k: fc.constant('ioc' as const),
    w: fc.nat(3),
    buy: fc.boolean(),
    off: fc.integer({ min: -60, max: 60 }),
    lots: fc.integer({ min: 1, max: 600 }),
  }),
  fc.record({ k: fc.constant('mark' as const), off: fc.integer({ min: -30, max: 30 }) }),
);

const priceAt = (off: number): string => (50_000 + off * 50).toFixed(1);
const lotsText = (lots: number): string => (lots / 1000).toFixed(3);

/**
 * The reports of one order. By order id, not by account: a fill that closes the taker's position
 * also cancels its resting reduce-only orders (reason `PositionClosed`) in the same command.
 */
function orderReports(
  events: readonly EngineEvent[],
  orderId: number,
): (OrderReport | OrderRejectedReport)[] {
  return events.filter(
    (e): e is OrderReport | OrderRejectedReport =>
      e.type === 'executionReport' && 'order' in e && e.order.orderId === orderId,
  );
}

describe('FOK against IOC on the same state', () => {
  it('fills completely exactly when the IOC would, with the same result; otherwise changes no order', () => {
    let filled = 0;
    let killed = 0;
    fc.assert(
      fc.property(
        fc.array(step, { minLength: 10, maxLength: 60 }),
        fc.array(
          fc.record({
            w: fc.nat(3),
            buy: fc.boolean(),
            off: fc.integer({ min: -60, max: 60 }),
            lots: fc.integer({ min: 1, max: 150 }),
            reduceOnly: fc.boolean(),
          }),
          { minLength: 1, maxLength: 6 },
        ),
        (steps, foks) => {
          const v = new TestVenue({ checkInvariants: false });
          v.list({ ...BTC_SETTINGS, takerFeeRate: '0.0005', makerFeeRate: '0.0002' });
          for (const [i, w] of TRADERS.entries()) {
            v.open(w);
            v.fund(w, FUNDS[i]!);
          }
          v.oracle({ [BTC]: '50000' });
          for (const s of steps) {
            if (s.k === 'mark') {
              v.oracle({ [BTC]: priceAt(s.off) });
              continue;
            }
            v.place(TRADERS[s.w]!, BTC, {
              side: s.buy ? 'Buy' : 'Sell',
              qty: lotsText(s.lots),
              price: priceAt(s.off),
              tif: s.k === 'ioc' ? 'IOC' : 'GTC',
              reduceOnly: s.k === 'rest' && s.reduceOnly,
            });
          }
          for (const f of foks) {
            const who = TRADERS[f.w]!;
            const spec = {
              side: f.buy ? ('Buy' as const) : ('Sell' as const),
              qty: lotsText(f.lots),
              price: priceAt(f.off),
              reduceOnly: f.reduceOnly,
            };
            const time = v.time + 1;
            const fok: Command = {
              type: 'placeOrder',
              time,
              account: who,
              order: v.request(BTC, { ...spec, tif: 'FOK' }),
            };
            const ioc: Command = {
              type: 'placeOrder',
              time,
              account: who,
              order: v.request(BTC, { ...spec, tif: 'IOC' }),
            };
            // Both are applied to the same state, so both get the next order id.
            const orderId = v.state.counters.order + 1;
            const asIoc = reduce(v.state, ioc);
            const events = v.run(fok);
            const iocEnd = orderReports(asIoc.events, orderId).at(-1);
            const fokEnd = orderReports(events, orderId).at(-1);
            if (fokEnd === undefined || fokEnd.kind === 'OrderRejected') {
              // Refused before matching (size, margin, reduce-only rules): the IOC is too.
              expect(iocEnd?.kind).toBe('OrderRejected');
              continue;
            }
            if (iocEnd?.kind === 'OrderFilled') {
              filled++;
              expect(fokEnd.kind).toBe('OrderFilled');
              expect(stateHash(v.state)).toBe(stateHash(asIoc.state));
            } else {
              killed++;
              expect(fokEnd.kind).toBe('OrderCancelled');
              expect(fokEnd.order.reason).toBe('FOK');
              expect(fokEnd.order.cumQty).toBe(0n);
              expect(events.some((e) => e.type === 'trade')).toBe(false);
              // No other order was filled or cancelled on the way.
              const others = events.filter(
                (e) =>
                  e.type === 'executionReport' &&
                  'order' in e &&
                  e.order.orderId !== fokEnd.order.orderId,
              );
              expect(others).toEqual([]);
            }
          }
        },
      ),
      { numRuns: runs },
    );
    if (process.env.FC_STATS !== undefined) console.log({ filled, killed });
    // Both outcomes were exercised (the property is not vacuous).
    expect(filled).toBeGreaterThan(0);
    expect(killed).toBeGreaterThan(0);
  });
});
