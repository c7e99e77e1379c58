/**
 * Instruments in engine units: `instrumentSettingsOf` gives back the settings an instrument was
 * built from, and `setInstrument` refuses an instrument that `buildInstrument` could not have
 * made (the margin math and its float estimates rely on the rules it enforces, such as
 * deductions that keep maintenance margin continuous across tier floors).
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import {
  buildInstrument,
  type EngineEvent,
  formatDecimal,
  type Instrument,
  type InstrumentSettings,
  instrumentProblem,
  instrumentSettingsOf,
  type Outcome,
  stateHash,
} from '../src/index.js';
import { BTC_SETTINGS, TestVenue, wallet } from '../src/testing/index.js';

const outcome = (events: readonly EngineEvent[]): Outcome =>
  events.find((e): e is Outcome => e.type === 'outcome')!;

function built(settings: InstrumentSettings): Instrument {
  const r = buildInstrument(settings);
  if (!r.ok) throw new Error(r.error);
  return r.instrument;
}

/** BTC with two tiers above the base one: 20x from 1M USD, 10x from 5M USD. */
const TIERED = built({
  ...BTC_SETTINGS,
  marginTiers: [
    { notionalFloor: '1000000', maxLeverage: 20 },
    { notionalFloor: '5000000', maxLeverage: 10 },
  ],
});

const decimal = (max: number, decimals: number) =>
  fc
    .tuple(fc.integer({ min: 0, max }), fc.integer({ min: 0, max: 10 ** decimals - 1 }))
    .map(([w, f]) => (decimals === 0 ? `${w}` : `${w}.${String(f).padStart(decimals, '0')}`));

/** Settings over every field `buildInstrument` reads, most of them valid. */
const settings = fc
  .record({
    quantityDecimals: fc.integer({ min: 0, max: 18 }),
    maxLeverage: fc.integer({ min: 100, max: 20_000 }),
    floors: fc.uniqueArray(fc.integer({ min: 1, max: 10 ** 13 }), { maxLength: 4 }),
    leverages: fc.array(fc.integer({ min: 100, max: 20_000 }), { minLength: 4, maxLength: 4 }),
    // Parts per million of the highest valid base rate (1 / (2 x maxLeverage) and below).
    mmrPpm: fc.option(fc.integer({ min: 1, max: 1_000_000 }), { nil: undefined }),
    makerFeeRate: fc.option(
      fc.tuple(fc.boolean(), decimal(0, 6)).map(([neg, d]) => (neg ? `-${d}` : d)),
      { nil: undefined },
    ),
    intervalMs: fc.constantFrom(60_000, 3_600_000, 28_800_000),
  })
  .map((r): InstrumentSettings => {
    const floors = [...r.floors].sort((a, b) => a - b);
    // Tier leverages at most the base one and falling, so their default rates rise.
    const leverages = r.leverages.map((l) => Math.min(l, r.maxLeverage)).sort((a, b) => b - a);
    const mmr =
      r.mmrPpm === undefined
        ? undefined
        : (BigInt(r.mmrPpm) * 10n ** 20n) / (2n * BigInt(r.maxLeverage)) / 1_000_000n;
    return {
      ...BTC_SETTINGS,
      quantityDecimals: r.quantityDecimals,
      lotSize: '1',
      openInterestCap: '1000',
      maxLeverage: r.maxLeverage / 100,
      defaultLeverage: Math.min(r.maxLeverage / 100, 10),
      maintenanceMarginRate: mmr === undefined || mmr === 0n ? undefined : formatDecimal(mmr, 18),
      marginTiers: floors.map((f, i) => ({
        notionalFloor: formatDecimal(BigInt(f), 6),
        maxLeverage: (leverages[i] as number) / 100,
      })),
      makerFeeRate: r.makerFeeRate,
      funding: { intervalMs: r.intervalMs },
    };
  });

describe('buildInstrument', () => {
  it('takes the default for an optional setting given as null, as for one left out', () => {
    const nulls: InstrumentSettings = {
      ...BTC_SETTINGS,
      defaultLeverage: null,
      maintenanceMarginRate: null,
      marginTiers: null,
      minNotional: null,
      makerFeeRate: null,
      takerFeeRate: null,
      funding: { intervalMs: null, interestRate8h: null, capPerHour: null },
      liquidation: null,
    };
    const { id, symbol, tickSize, lotSize, quantityDecimals, maxLeverage, openInterestCap } =
      BTC_SETTINGS;
    const required = {
      id,
      symbol,
      tickSize,
      lotSize,
      quantityDecimals,
      maxLeverage,
      openInterestCap,
    };
    expect(buildInstrument(nulls)).toEqual(buildInstrument(required));
  });

  it('answers a leverage whose x100 overflows a double with a refusal, not a RangeError', () => {
    // 2e306 x 100 is Infinity: BigInt(Infinity) threw out of the result type.
    for (const settings of [
      { ...BTC_SETTINGS, maxLeverage: 2e306 },
      { ...BTC_SETTINGS, defaultLeverage: Number.MAX_VALUE },
      { ...BTC_SETTINGS, marginTiers: [{ notionalFloor: '100000', maxLeverage: 2e306 }] },
    ]) {
      const r = buildInstrument(settings);
      expect(r.ok).toBe(false);
      expect(r.ok ? '' : r.error).toMatch(/[lL]everage must be a multiple >= 1/);
    }
  });
});

describe('instrumentSettingsOf', () => {
  test.prop([settings])('gives back settings that build the same instrument', (s) => {
    const r = buildInstrument(s);
    if (!r.ok) return;
    expect(buildInstrument(instrumentSettingsOf(r.instrument))).toEqual(r);
    expect(instrumentProblem(r.instrument)).toBeNull();
  });

  it('writes every setting out but the two that follow maxLeverage at their defaults', () => {
    const s = instrumentSettingsOf(TIERED);
    expect(s).not.toHaveProperty('defaultLeverage');
    expect(s).not.toHaveProperty('maintenanceMarginRate');
    // Edited to a new maximum, they follow it: 1 / (2 x 8), and 8x (below the 10x default).
    const at8 = built({ ...s, maxLeverage: 8, marginTiers: [] });
    expect(at8.tiers[0]!.maintenanceMarginRate).toBe(62_500_000_000_000_000n);
    expect(at8.defaultLeverage).toBe(800);
    // Set apart from their defaults, they are written out.
    const custom = built({ ...BTC_SETTINGS, defaultLeverage: 5, maintenanceMarginRate: '0.01' });
    expect(instrumentSettingsOf(custom)).toMatchObject({
      defaultLeverage: 5,
      maintenanceMarginRate: '0.01',
    });
    expect(s).toMatchObject({
      tickSize: '0.5',
      lotSize: '0.001',
      maxLeverage: 40,
      marginTiers: [
        { notionalFloor: '1000000', maxLeverage: 20 },
        { notionalFloor: '5000000', maxLeverage: 10 },
      ],
      minNotional: '5',
      makerFeeRate: '0.00015',
      takerFeeRate: '0.00045',
      funding: { intervalMs: 3_600_000, interestRate8h: '0.0001' },
      liquidation: { partialThreshold: '100000', auctionDurationMs: 30_000, feeRate: '0.005' },
    });
  });
});

describe('setInstrument refuses an instrument buildInstrument could not have made', () => {
  const refused = (instrument: Instrument, message: string) => {
    const v = new TestVenue({ checkPurity: true });
    const before = stateHash(v.state);
    const o = outcome(v.run({ type: 'setInstrument', instrument }));
    expect(o).toMatchObject({ ok: false, code: 4000 });
    expect(o.ok ? '' : o.message).toBe(`INVALID_REQUEST: ${message}`);
    expect(stateHash(v.state)).toBe(before);
    expect(v.state.markets.size).toBe(0);
  };

  it('a tier whose deduction does not keep maintenance margin continuous', () => {
    // The float estimates pick a position's tier assuming continuity; with the deduction left
    // at 0, a position at 20x-tier notional needs twice what the base rate gives just below.
    const tiers = TIERED.tiers.map((t, i) => (i === 1 ? { ...t, deduction: 0n } : t));
    refused(
      { ...TIERED, tiers },
      'instrument 1: instrument.tiers[1].deduction is 0, its settings give 12500000000000000000000000000',
    );
  });

  it('a tier rate that is not the default of its leverage', () => {
    const tiers = TIERED.tiers.map((t, i) =>
      i === 2 ? { ...t, maintenanceMarginRate: t.maintenanceMarginRate + 1n } : t,
    );
    refused(
      { ...TIERED, tiers },
      'instrument 1: instrument.tiers[2].maintenanceMarginRate is 50000000000000001, its settings give 50000000000000000',
    );
  });

  it('no base tier, a leverage below 1x, a maintenance rate at the initial rate', () => {
    refused({ ...TIERED, tiers: [] }, 'instrument 1: tiers must hold the base tier');
    refused(
      { ...TIERED, defaultLeverage: 0 },
      'instrument 1: defaultLeverage must be a multiple >= 1 with at most 2 decimals',
    );
    const base = TIERED.tiers[0]!;
    refused(
      { ...TIERED, tiers: [{ ...base, maintenanceMarginRate: 25_000_000_000_000_000n }] },
      'instrument 1: maintenanceMarginRate must be below the initial margin rate at maximum leverage (1 / 40)',
    );
    refused({ ...TIERED, tickSize: 0n }, 'instrument 1: tickSize must be positive');
  });

  it('accepts what buildInstrument made, and a change of its settings', () => {
    const v = new TestVenue({ checkPurity: true });
    expect(outcome(v.run({ type: 'setInstrument', instrument: TIERED })).ok).toBe(true);
    const cheaper = built({ ...instrumentSettingsOf(TIERED), takerFeeRate: '0.0003' });
    expect(outcome(v.run({ type: 'setInstrument', instrument: cheaper })).ok).toBe(true);
    expect(v.state.markets.get(1)!.spec.takerFeeRate).toBe(300_000_000_000_000n);
  });
});

describe('setInstrument keeps every position closable', () => {
  it('refuses a lot size that an open position is not a multiple of, and changes nothing', () => {
    const v = new TestVenue({ checkPurity: true });
    const spec = v.list({
      ...BTC_SETTINGS,
      lotSize: '0.0001',
      makerFeeRate: '0',
      takerFeeRate: '0',
    });
    const [a, b] = [wallet(0xa1), wallet(0xb1)];
    for (const w of [a, b]) {
      v.open(w);
      v.fund(w, '100000');
    }
    v.oracle({ 'BTC-PERP': '50000' });
    v.expectOk(v.place(a, 'BTC-PERP', { side: 'Sell', qty: '0.0006', price: '50000' }));
    v.expectOk(v.place(b, 'BTC-PERP', { side: 'Buy', qty: '0.0006', price: '50000' }));
    const before = stateHash(v.state);
    const coarser = built({ ...instrumentSettingsOf(spec), lotSize: '0.0004' });
    const o = outcome(v.run({ type: 'setInstrument', instrument: coarser }));
    expect(o).toMatchObject({ ok: false, code: 4000 });
    expect(o.ok ? '' : o.message).toMatch(
      /^INVALID_REQUEST: lot size cannot change while a position is not a multiple of the new lot \(0x[0-9a-f]{40} Cross -?0\.0006\)$/,
    );
    expect(stateHash(v.state)).toBe(before);
    // A lot that divides every position is allowed.
    const dividing = built({ ...instrumentSettingsOf(spec), lotSize: '0.0003' });
    expect(outcome(v.run({ type: 'setInstrument', instrument: dividing })).ok).toBe(true);
    // Closed positions are on any grid.
    v.expectOk(v.place(a, 'BTC-PERP', { side: 'Buy', qty: '0.0006', price: '50000' }));
    v.expectOk(v.place(b, 'BTC-PERP', { side: 'Sell', qty: '0.0006', price: '50000' }));
    expect(outcome(v.run({ type: 'setInstrument', instrument: coarser })).ok).toBe(true);
  });
});
