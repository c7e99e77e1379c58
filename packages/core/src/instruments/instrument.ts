/**
 * Instruments: the operator-configured settings of a market (engine-rules section 2), parsed from
 * decimal strings into the integer units the engine computes in.
 *
 * @module
 */
import { type DecimalError, formatDecimal, parseDecimal, pow10 } from '../units/decimal.js';
import { divCeil } from '../units/rounding.js';

/** Decimals of every rate (fees, maintenance, funding): rates are integers at 1e18. */
export const RATE_DECIMALS = 18;
/** 1.0 as a rate. */
export const RATE_SCALE = 10n ** 18n;

/** One maintenance-margin tier: positions whose notional is at or above `notionalFloor` use it. */
export interface MarginTier {
  /** Lower bound of the tier's notional, collateral micro-units. */
  readonly notionalFloor: bigint;
  /** Maximum leverage inside the tier, x100. */
  readonly maxLeverage: number;
  /** Maintenance margin rate, 1e18 scale. */
  readonly maintenanceMarginRate: bigint;
  /**
   * Deduction that keeps MM continuous in notional, in micro-units x 1e18 (exact):
   * `d_n = d_{n-1} + floor_n x (mmr_n - mmr_{n-1})`.
   */
  readonly deduction: bigint;
}

/** Shortest funding interval an instrument may have, ms. */
export const MIN_FUNDING_INTERVAL_MS = 60_000;

/** Funding settings (engine-rules section 6). */
export interface FundingSettings {
  readonly intervalMs: number;
  /** Interest per 8 hours, rate scale. */
  readonly interestRate8h: bigint;
  /** Clamp on `interest - premium`, rate scale. */
  readonly premiumClamp: bigint;
  /** Cap on the hourly rate, rate scale. */
  readonly capPerHour: bigint;
  /** Notional used for impact bid/ask, micro-units. */
  readonly impactNotional: bigint;
}

/** Liquidation settings (engine-rules sections 2 and 7). */
export interface LiquidationSettings {
  /** Positions above this notional close 20% per market step, micro-units. */
  readonly partialThreshold: bigint;
  readonly auctionDurationMs: number;
  /** Fee on liquidated notional to the insurance fund, rate scale. */
  readonly feeRate: bigint;
}

/** A market's settings in engine units. Immutable: a change replaces the object. */
export interface Instrument {
  /** The signed `market` field (u32 >= 1). */
  readonly id: number;
  readonly symbol: string;
  /** Price grid, raw price units (1e18). */
  readonly tickSize: bigint;
  /** Quantity grid, raw quantity units (10^quantityDecimals). */
  readonly lotSize: bigint;
  readonly quantityDecimals: number;
  /** x100 (4000 = 40x). */
  readonly maxLeverage: number;
  /** x100. */
  readonly defaultLeverage: number;
  /** Tier 0 is the base tier (floor 0); more tiers are optional. */
  readonly tiers: readonly MarginTier[];
  /** Cap on open interest (sum of long sizes), raw quantity units. */
  readonly openInterestCap: bigint;
  /** Minimum order notional, micro-units. */
  readonly minNotional: bigint;
  /** Rate scale; negative is a rebate. */
  readonly makerFeeRate: bigint;
  /** Rate scale. */
  readonly takerFeeRate: bigint;
  readonly funding: FundingSettings;
  readonly liquidation: LiquidationSettings;
}

/**
 * Human-readable instrument settings as an operator writes them (admin API, config file). An
 * optional setting left out or `null` takes its default (an admin update uses `null` to reset a
 * field it would otherwise keep).
 */
export interface InstrumentSettings {
  id: number;
  symbol: string;
  tickSize: string;
  lotSize: string;
  quantityDecimals: number;
  /** Maximum leverage as a multiple, e.g. `40` or `12.5` (at most 2 decimals; stored x100). */
  maxLeverage: number;
  /** Default `min(maxLeverage, 10)`. */
  defaultLeverage?: number | null | undefined;
  /** Decimal rate, e.g. `"0.0125"`; default `1 / (2 x maxLeverage)` rounded up to 18 decimals. */
  maintenanceMarginRate?: string | null | undefined;
  /** Extra tiers above the base one: notional floor (USD) and max leverage (multiple). */
  marginTiers?: readonly { notionalFloor: string; maxLeverage: number }[] | null | undefined;
  /** Base units, e.g. `"1000"`. */
  openInterestCap: string;
  /** USD, default `"5"`. */
  minNotional?: string | null | undefined;
  /** Decimal rates; defaults `"0.00015"` and `"0.00045"`. */
  makerFeeRate?: string | null | undefined;
  takerFeeRate?: string | null | undefined;
  funding?: FundingSettingsInput | null | undefined;
  liquidation?: LiquidationSettingsInput | null | undefined;
}

/** Funding settings as an operator writes them; each left out or `null` takes its default. */
export interface FundingSettingsInput {
  intervalMs?: number | null | undefined;
  interestRate8h?: string | null | undefined;
  premiumClamp?: string | null | undefined;
  capPerHour?: string | null | undefined;
  impactNotional?: string | null | undefined;
}

/** Liquidation settings as an operator writes them; each left out or `null` takes its default. */
export interface LiquidationSettingsInput {
  partialThreshold?: string | null | undefined;
  auctionDurationMs?: number | null | undefined;
  feeRate?: string | null | undefined;
}

/** Result of {@link buildInstrument}. */
export type InstrumentResult = { ok: true; instrument: Instrument } | { ok: false; error: string };

const SYMBOL_RE = /^[A-Z0-9][A-Z0-9-]{0,31}$/;

class SettingsError extends Error {}

function parseField(
  name: string,
  text: string | null | undefined,
  fallback: string,
  decimals: number,
  allowNegative = false,
): bigint {
  const value = text ?? fallback;
  // A required setting (no fallback) that was left out: say so, not that "" is malformed.
  if (value === '' && (text === undefined || text === null))
    throw new SettingsError(`${name} is required (a decimal string)`);
  if (typeof value !== 'string') throw new SettingsError(`${name} must be a decimal string`);
  const parsed = parseDecimal(value, decimals, allowNegative);
  if (!parsed.ok)
    throw new SettingsError(`${name} ${describe(parsed.error, decimals)}: "${value}"`);
  return parsed.value;
}

function describe(error: DecimalError, decimals: number): string {
  if (error === 'precision') return `has more than ${decimals} decimals`;
  if (error === 'negative') return 'must not be negative';
  return 'is not a plain decimal';
}

function leverageX100(name: string, multiple: number): number {
  const x100 = Math.round(multiple * 100);
  // x100 too: a finite multiple above Number.MAX_VALUE / 100 overflows to Infinity.
  if (
    !Number.isFinite(multiple) ||
    !Number.isFinite(x100) ||
    Math.abs(x100 - multiple * 100) > 1e-9 ||
    x100 < 100
  ) {
    throw new SettingsError(`${name} must be a multiple >= 1 with at most 2 decimals`);
  }
  return x100;
}

/** Default leverage (x100): 10x, or the maximum when it is lower. */
function defaultLeverageFor(maxLeverageX100: number): number {
  return Math.min(maxLeverageX100, 1000);
}

/** Default maintenance margin rate: half the initial rate at max leverage, rounded up. */
function defaultMmr(maxLeverageX100: number): bigint {
  // 1 / (2 x maxLeverage) = 100 / (2 x maxLeverageX100)
  return divCeil(RATE_SCALE * 100n, 2n * BigInt(maxLeverageX100));
}

/** Validates operator settings and converts them to engine units. */
export function buildInstrument(settings: InstrumentSettings): InstrumentResult {
  try {
    return { ok: true, instrument: build(settings) };
  } catch (e) {
    if (e instanceof SettingsError) return { ok: false, error: e.message };
    throw e;
  }
}

function build(s: InstrumentSettings): Instrument {
  if (!Number.isInteger(s.id) || s.id < 1 || s.id > 0xffffffff) {
    throw new SettingsError('id must be an integer in 1..4294967295');
  }
  if (typeof s.symbol !== 'string' || !SYMBOL_RE.test(s.symbol)) {
    throw new SettingsError('symbol must match [A-Z0-9][A-Z0-9-]{0,31}');
  }
  if (!Number.isInteger(s.quantityDecimals) || s.quantityDecimals < 0 || s.quantityDecimals > 18) {
    throw new SettingsError('quantityDecimals must be an integer in 0..18');
  }
  const tickSize = parseField('tickSize', s.tickSize, '', 18);
  const lotSize = parseField('lotSize', s.lotSize, '', s.quantityDecimals);
  if (tickSize <= 0n) throw new SettingsError('tickSize must be positive');
  if (lotSize <= 0n) throw new SettingsError('lotSize must be positive');
  const maxLeverage = leverageX100('maxLeverage', s.maxLeverage);
  // `null` is "the default" as much as a missing field is (an admin update resets with it).
  const defaultLeverage =
    s.defaultLeverage === undefined || s.defaultLeverage === null
      ? defaultLeverageFor(maxLeverage)
      : leverageX100('defaultLeverage', s.defaultLeverage);
  if (defaultLeverage > maxLeverage) {
    throw new SettingsError('defaultLeverage must not exceed maxLeverage');
  }
  const baseMmr =
    s.maintenanceMarginRate === undefined || s.maintenanceMarginRate === null
      ? defaultMmr(maxLeverage)
      : parseField('maintenanceMarginRate', s.maintenanceMarginRate, '', RATE_DECIMALS);
  if (baseMmr <= 0n || baseMmr >= RATE_SCALE) {
    throw new SettingsError('maintenanceMarginRate must be in (0, 1)');
  }
  // At maximum leverage the initial margin is 1 / maxLeverage of the notional; a maintenance
  // rate at or above it would liquidate a position in the command that opened it.
  if (baseMmr * BigInt(maxLeverage) >= RATE_SCALE * 100n) {
    throw new SettingsError(
      `maintenanceMarginRate must be below the initial margin rate at maximum leverage (1 / ${maxLeverage / 100})`,
    );
  }
  const tiers: MarginTier[] = [
    { notionalFloor: 0n, maxLeverage, maintenanceMarginRate: baseMmr, deduction: 0n },
  ];
  for (const [i, t] of (s.marginTiers ?? []).entries()) {
    const prev = tiers[tiers.length - 1] as MarginTier;
    const floor = parseField(`marginTiers[${i}].notionalFloor`, t.notionalFloor, '', 6);
    const lev = leverageX100(`marginTiers[${i}].maxLeverage`, t.maxLeverage);
    if (floor <= prev.notionalFloor) throw new SettingsError('margin tier floors must increase');
    if (lev > prev.maxLeverage) throw new SettingsError('tier max leverage must not increase');
    const mmr = defaultMmr(lev);
    if (mmr < prev.maintenanceMarginRate) throw new SettingsError('tier rates must not decrease');
    tiers.push({
      notionalFloor: floor,
      maxLeverage: lev,
      maintenanceMarginRate: mmr,
      deduction: prev.deduction + floor * (mmr - prev.maintenanceMarginRate),
    });
  }
  const openInterestCap = parseField('openInterestCap', s.openInterestCap, '', s.quantityDecimals);
  const minNotional = parseField('minNotional', s.minNotional, '5', 6);
  const makerFeeRate = parseField('makerFeeRate', s.makerFeeRate, '0.00015', RATE_DECIMALS, true);
  const takerFeeRate = parseField('takerFeeRate', s.takerFeeRate, '0.00045', RATE_DECIMALS);
  if (makerFeeRate + takerFeeRate < 0n) {
    throw new SettingsError('a maker rebate must not exceed the taker fee');
  }
  const f = s.funding ?? {};
  const intervalMs = f.intervalMs ?? 3_600_000;
  // At least a minute: the engine settles every interval it missed one by one, so a 1 ms
  // interval would turn an hour without commands into 3.6 million settlements in one command.
  if (
    !Number.isInteger(intervalMs) ||
    intervalMs < MIN_FUNDING_INTERVAL_MS ||
    86_400_000 % intervalMs !== 0
  ) {
    throw new SettingsError('funding.intervalMs must be at least one minute and divide a day');
  }
  const l = s.liquidation ?? {};
  const auctionDurationMs = l.auctionDurationMs ?? 30_000;
  if (!Number.isInteger(auctionDurationMs) || auctionDurationMs <= 0) {
    throw new SettingsError('liquidation.auctionDurationMs must be a positive integer');
  }
  return {
    id: s.id,
    symbol: s.symbol,
    tickSize,
    lotSize,
    quantityDecimals: s.quantityDecimals,
    maxLeverage,
    defaultLeverage,
    tiers,
    openInterestCap,
    minNotional,
    makerFeeRate,
    takerFeeRate,
    funding: {
      intervalMs,
      interestRate8h: parseField('funding.interestRate8h', f.interestRate8h, '0.0001', 18),
      premiumClamp: parseField('funding.premiumClamp', f.premiumClamp, '0.0005', 18),
      capPerHour: parseField('funding.capPerHour', f.capPerHour, '0.04', 18),
      impactNotional: parseField('funding.impactNotional', f.impactNotional, '20000', 6),
    },
    liquidation: {
      partialThreshold: parseField('liquidation.partialThreshold', l.partialThreshold, '100000', 6),
      auctionDurationMs,
      feeRate: parseField('liquidation.feeRate', l.feeRate, '0.005', 18),
    },
  };
}

/**
 * The settings an instrument was built from: `buildInstrument` of them gives the same instrument
 * back (for one it built). Every setting is written out except the two that follow
 * `maxLeverage` when they hold its defaults (`defaultLeverage`, `maintenanceMarginRate`), so
 * settings edited to a new maximum leverage keep following it.
 */
export function instrumentSettingsOf(spec: Instrument): InstrumentSettings {
  const base = spec.tiers[0];
  // Only a leverage buildInstrument could have made has a default rate (instrumentProblem
  // hands this any instrument).
  const derivedMmr =
    Number.isSafeInteger(spec.maxLeverage) && spec.maxLeverage > 0
      ? defaultMmr(spec.maxLeverage)
      : undefined;
  return {
    id: spec.id,
    symbol: spec.symbol,
    tickSize: formatDecimal(spec.tickSize, 18),
    lotSize: formatDecimal(spec.lotSize, spec.quantityDecimals),
    quantityDecimals: spec.quantityDecimals,
    maxLeverage: spec.maxLeverage / 100,
    ...(spec.defaultLeverage === defaultLeverageFor(spec.maxLeverage)
      ? {}
      : { defaultLeverage: spec.defaultLeverage / 100 }),
    ...(base === undefined || base.maintenanceMarginRate === derivedMmr
      ? {}
      : { maintenanceMarginRate: formatDecimal(base.maintenanceMarginRate, RATE_DECIMALS) }),
    marginTiers: spec.tiers.slice(1).map((t) => ({
      notionalFloor: formatDecimal(t.notionalFloor, 6),
      maxLeverage: t.maxLeverage / 100,
    })),
    openInterestCap: formatDecimal(spec.openInterestCap, spec.quantityDecimals),
    minNotional: formatDecimal(spec.minNotional, 6),
    makerFeeRate: formatDecimal(spec.makerFeeRate, RATE_DECIMALS),
    takerFeeRate: formatDecimal(spec.takerFeeRate, RATE_DECIMALS),
    funding: {
      intervalMs: spec.funding.intervalMs,
      interestRate8h: formatDecimal(spec.funding.interestRate8h, 18),
      premiumClamp: formatDecimal(spec.funding.premiumClamp, 18),
      capPerHour: formatDecimal(spec.funding.capPerHour, 18),
      impactNotional: formatDecimal(spec.funding.impactNotional, 6),
    },
    liquidation: {
      partialThreshold: formatDecimal(spec.liquidation.partialThreshold, 6),
      auctionDurationMs: spec.liquidation.auctionDurationMs,
      feeRate: formatDecimal(spec.liquidation.feeRate, 18),
    },
  };
}

/**
 * Why an instrument in engine units is not one {@link buildInstrument} could have made (a
 * setting out of range, a tier table whose rates or deductions do not follow from its floors),
 * or `null`. The engine's margin math, its float estimates included, relies on those rules, so
 * `setInstrument` refuses anything else.
 */
export function instrumentProblem(spec: Instrument): string | null {
  if (spec.tiers.length === 0) return 'tiers must hold the base tier';
  const rebuilt = buildInstrument(instrumentSettingsOf(spec));
  if (!rebuilt.ok) return rebuilt.error;
  return firstDifference(spec, rebuilt.instrument, 'instrument');
}

/** The path of the first field where `a` differs from `b` and both values, or `null`. */
function firstDifference(a: unknown, b: unknown, path: string): string | null {
  if (typeof b === 'object' && b !== null) {
    if (typeof a !== 'object' || a === null) return `${path} must be an object`;
    const keysA = Object.keys(a);
    const keysB = Object.keys(b);
    if (Array.isArray(b) && (!Array.isArray(a) || a.length !== b.length)) {
      return `${path} must hold ${b.length} entries`;
    }
    for (const k of keysA) if (!keysB.includes(k)) return `${path}.${k} is not a field`;
    for (const k of keysB) {
      const d = firstDifference(
        (a as Record<string, unknown>)[k],
        (b as Record<string, unknown>)[k],
        Array.isArray(b) ? `${path}[${k}]` : `${path}.${k}`,
      );
      if (d !== null) return d;
    }
    return null;
  }
  return a === b ? null : `${path} is ${String(a)}, its settings give ${String(b)}`;
}

/** Scale that turns `quantity x price` (raw units) into collateral micro-units. */
export function notionalScale(instrument: Instrument): bigint {
  return pow10(instrument.quantityDecimals + 12);
}
