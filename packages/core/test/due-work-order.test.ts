/**
 * Time-driven work runs in the order of its due times, whether or not a command arrived at each
 * of them: a host that ticks at `nextWakeTime` and an embedder that sends its next command late
 * end with the same positions and the same funding payments.
 */
import { describe, expect, it } from 'vitest';
import { type EngineEvent, nextWakeTime, positionOf } from '../src/index.js';
import { BTC_SETTINGS, T0, TestVenue, wallet } from '../src/testing/index.js';

const HOUR = 3_600_000;

/** A long liquidated 40 s before the funding hour; its auction ends before the hour too. */
function liquidatedBeforeTheHour(): { v: TestVenue; long: string; short: string } {
  const v = new TestVenue();
  v.list(BTC_SETTINGS);
  const short = wallet(1);
  const long = wallet(2);
  for (const w of [short, long]) {
    v.open(w);
    v.fund(w, '10000');
  }
  v.oracle({ 'BTC-PERP': '65000' });
  v.expectOk(v.place(short, 'BTC-PERP', { side: 'Sell', qty: '1', price: '65000' }));
  v.expectOk(v.place(long, 'BTC-PERP', { side: 'Buy', qty: '1', price: '65000' }));
  const crash = v.oracle({ 'BTC-PERP': '45800' }, T0 + HOUR - 40_000);
  expect(crash.some((e) => e.type === 'auction')).toBe(true);
  return { v, long, short };
}

const fundingPayments = (events: readonly EngineEvent[]) =>
  events.flatMap((e) =>
    e.type === 'executionReport' && e.kind === 'Funding' ? [[e.account, e.payment]] : [],
  );

describe('due work in time order', () => {
  it('an auction that ended before the funding hour closes its position before funding is paid', () => {
    const ticked = liquidatedBeforeTheHour();
    const auctionEnd = nextWakeTime(ticked.v.state)!;
    expect(auctionEnd).toBeLessThan(T0 + HOUR);
    const tickedEvents = [
      ...ticked.v.run({ type: 'tick', time: auctionEnd }),
      ...ticked.v.run({ type: 'tick', time: T0 + HOUR + 30_000 }),
    ];

    const late = liquidatedBeforeTheHour();
    const lateEvents = late.v.run({ type: 'tick', time: T0 + HOUR + 30_000 });

    // The position was gone at the hour either way: nobody pays or receives funding on it.
    expect(fundingPayments(tickedEvents)).toEqual([]);
    expect(fundingPayments(lateEvents)).toEqual([]);
    for (const { v, long, short } of [ticked, late]) {
      expect(positionOf(v.state.accounts.get(long)!, 1, 'Cross')?.size ?? 0n).toBe(0n);
      expect(v.state.auctions.size).toBe(0);
      void short;
    }
    const cashOf = (v: TestVenue, w: string) => v.state.accounts.get(w)!.crossCash;
    expect(cashOf(late.v, late.short)).toBe(cashOf(ticked.v, ticked.short));
    expect(cashOf(late.v, late.long)).toBe(cashOf(ticked.v, ticked.long));
  });
});
