/**
 * The code of docs/core-library.md, run as written: every ```ts block of the guide (apart from
 * its import lines) appears verbatim in this file, which the last test checks, so the guide
 * cannot drift from what the engine does.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  accountSummary,
  buildInstrument,
  type Command,
  createEngineState,
  depthOf,
  type EngineState,
  formatPrice,
  reduce,
  reduceAll,
  stateHash,
} from '../src/index.js';
import {
  BTC_SETTINGS,
  checkInvariants,
  px,
  runSimulation,
  TestVenue,
  totalCollateral,
  wallet,
} from '../src/testing/index.js';

describe('docs/core-library.md', () => {
  it('1. a venue from plain commands', () => {
    const T0 = 1_767_225_600_000; // ms; time only ever arrives inside commands
    const PRICE = 10n ** 18n; // prices are 18-decimal fixed point
    const USD = 10n ** 6n; // collateral is 6-decimal fixed point
    const btc = buildInstrument({
      id: 1,
      symbol: 'BTC-PERP',
      tickSize: '0.5',
      lotSize: '0.001',
      quantityDecimals: 3, // quantities are in thousandths of a BTC
      maxLeverage: 50,
      defaultLeverage: 10,
      openInterestCap: '1000',
      makerFeeRate: '0.0002',
      takerFeeRate: '0.0005',
    });
    if (!btc.ok) throw new Error(btc.error);
    const alice = `0x${'a'.repeat(40)}`;
    const bob = `0x${'b'.repeat(40)}`;

    const setup: Command[] = [
      { type: 'setInstrument', time: T0, instrument: btc.instrument },
      ...[alice, bob].flatMap((account): Command[] => [
        { type: 'openAccount', time: T0, account },
        {
          type: 'deposit',
          time: T0,
          account,
          amount: 10_000n * USD,
          target: { mode: 'Cross', market: 0 },
        },
      ]),
      // Deposits wait for the chain's answer, which arrives as its own command.
      { type: 'settleDeposit', time: T0, commandId: 1, success: true },
      { type: 'settleDeposit', time: T0, commandId: 2, success: true },
      { type: 'oracle', time: T0, prices: [{ market: 1, price: 65_000n * PRICE }] },
    ];
    let state: EngineState = reduceAll(createEngineState({}, T0), setup).state;

    const order = (isBuy: boolean, price: bigint, quantity: bigint, timeInForce = 0) => ({
      market: 1,
      isBuy,
      orderType: 0, // Limit
      timeInForce, // 0 GTC, 1 GTD, 2 IOC, 3 FOK, 4 DAY
      price,
      triggerPrice: 0n,
      quantity,
      flags: 0,
      expiry: 0n,
      cloid: null,
      parentCloid: null,
    });
    // Bob rests 0.100 BTC at 65,000; Alice takes 0.040 of it with an IOC.
    const rest = reduce(state, {
      type: 'placeOrder',
      time: T0 + 1,
      account: bob,
      order: order(false, 65_000n * PRICE, 100n),
    });
    const take = reduce(rest.state, {
      type: 'placeOrder',
      time: T0 + 2,
      account: alice,
      order: order(true, 65_000n * PRICE, 40n, 2),
    });
    state = take.state;

    // reduce never touches its input: the state before the trade is still there, unchanged.
    expect(rest.state.markets.get(1)?.asks[0]?.quantity).toBe(100n);
    const trades = take.events.filter((e) => e.type === 'trade');
    expect(trades).toMatchObject([{ price: 65_000n * PRICE, quantity: 40n, takerSide: 'Buy' }]);
    const kinds = take.events.flatMap((e) => (e.type === 'executionReport' ? [e.kind] : []));
    expect(kinds).toEqual(['OrderAccepted', 'OrderPartiallyFilled', 'OrderFilled']);

    const asks = depthOf(state.markets.get(1)!.asks, 5);
    expect(asks.map((l) => [formatPrice(l.price), l.quantity])).toEqual([['65000', 60n]]);
    const summary = accountSummary(state, alice, T0 + 2)!;
    expect(summary.assetPositions[0]).toMatchObject({ szi: '0.04', entryPx: '65000' });
    // 10,000 - the taker fee of 0.0005 x 2,600 = 1.3.
    expect(summary.crossMarginSummary.accountValue).toBe('9998.7');

    // The same command log always gives the same state, byte for byte.
    const log: Command[] = [
      ...setup,
      {
        type: 'placeOrder',
        time: T0 + 1,
        account: bob,
        order: order(false, 65_000n * PRICE, 100n),
      },
      {
        type: 'placeOrder',
        time: T0 + 2,
        account: alice,
        order: order(true, 65_000n * PRICE, 40n, 2),
      },
    ];
    expect(stateHash(reduceAll(createEngineState({}, T0), log).state)).toBe(stateHash(state));
  });

  it('2. the test venue', () => {
    const v = new TestVenue(); // checks every invariant after every command
    v.list(BTC_SETTINGS);
    const [maker, taker] = [wallet(1), wallet(2)];
    for (const w of [maker, taker]) {
      v.open(w);
      v.fund(w, '10000');
    }
    v.oracle({ 'BTC-PERP': '65000' });
    v.expectOk(v.place(maker, 'BTC-PERP', { side: 'Sell', qty: '1', price: '65000' }));
    const events = v.place(taker, 'BTC-PERP', { side: 'Buy', qty: '1', price: '65000' });
    expect(v.reports(events, taker).map((r) => r.kind)).toEqual(['OrderAccepted', 'OrderFilled']);
    // The index falls to 40,000; with the last trade still at 65,000 the mark (a median, rules
    // section 6) goes to 52,500, and at 10x the taker is liquidated: just more events.
    const crash = v.oracle({ 'BTC-PERP': '40000' });
    expect(v.state.markets.get(1)?.prices.mark).toBe(px('52500'));
    expect(crash.some((e) => e.type === 'liquidationStarted')).toBe(true);
  });

  it('3. a property test of your own', () => {
    const BTC = 'BTC-PERP';
    const TRADERS = [wallet(1), wallet(2), wallet(3)];
    const step = fc.record({
      who: fc.nat(TRADERS.length - 1),
      buy: fc.boolean(),
      ticks: fc.integer({ min: -20, max: 20 }),
      lots: fc.integer({ min: 1, max: 50 }),
      mark: fc.option(fc.integer({ min: -300, max: 300 }), { freq: 5 }),
    });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const v = new TestVenue({ checkPurity: true }); // also: reduce never mutates its input
        v.list(BTC_SETTINGS);
        for (const w of TRADERS) {
          v.open(w);
          v.fund(w, '5000');
        }
        v.oracle({ [BTC]: '65000' });
        const deposited = totalCollateral(v.state);
        for (const s of steps) {
          if (s.mark !== null) v.oracle({ [BTC]: String(65_000 + s.mark * 10) });
          v.place(TRADERS[s.who]!, BTC, {
            side: s.buy ? 'Buy' : 'Sell',
            qty: (s.lots / 1000).toFixed(3),
            price: String(65_000 + s.ticks * 5),
          });
          // Your own rule here; the venue already ran checkInvariants (conservation, zero-sum
          // positions, a book that never crosses, ...) after the command.
          expect(totalCollateral(v.state)).toBe(deposited);
        }
        checkInvariants(v.state);
      }),
      { numRuns: 50 },
    );
  });

  it('4. a seeded market simulation', () => {
    const options = {
      seed: 7,
      takers: 20,
      minutes: 6,
      crashStart: 2,
      crashMinutes: 2,
      crashPercent: 30,
    };
    const a = runSimulation(options);
    const b = runSimulation(options);
    expect(b.stateHash).toBe(a.stateHash); // same seed, same venue, byte for byte
    expect(b.eventsHash).toBe(a.eventsHash);
    expect(a.liquidations).toBeGreaterThan(0);
    expect(a.debt).toBe(0n);
  });

  it('every ts block of the guide is code of this file', () => {
    const guide = readFileSync(new URL('../../../docs/core-library.md', import.meta.url), 'utf8');
    const self = readFileSync(new URL(import.meta.url), 'utf8');
    const squash = (text: string) => text.replace(/\s+/g, ' ').trim();
    const blocks = [...guide.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] as string);
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    const imports = self.slice(0, self.indexOf('\ndescribe('));
    for (const block of blocks) {
      if (block.startsWith('import')) {
        // The guide's imports name packages; this file imports the same names from the sources.
        const names = [...block.matchAll(/(?:type )?(\w+),?\s*(?=[,}\n])/g)].map((m) => m[1]);
        for (const name of names) expect(imports).toMatch(new RegExp(`\\b${name}\\b`));
        continue;
      }
      expect(squash(self)).toContain(squash(block));
    }
  });
});
