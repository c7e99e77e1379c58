/**
 * Instrument settings from JSON (the admin route's body, a `--config` file): the JSON type of
 * every field is checked here, so `buildInstrument` (which checks values, trusting its types)
 * never sees a string where it iterates an array or does arithmetic on a number.
 *
 * @module
 */
import { type Instrument, type InstrumentSettings, instrumentSettingsOf } from '@perp/core';

/** A settings field of the wrong JSON type; the message names it. */
export class SettingsTypeError extends Error {
  override readonly name = 'SettingsTypeError';
}

type JsonType = 'number' | 'string';
const INSTRUMENT_FIELDS: Readonly<Record<string, JsonType>> = {
  id: 'number',
  symbol: 'string',
  tickSize: 'string',
  lotSize: 'string',
  quantityDecimals: 'number',
  maxLeverage: 'number',
  defaultLeverage: 'number',
  maintenanceMarginRate: 'string',
  openInterestCap: 'string',
  minNotional: 'string',
  makerFeeRate: 'string',
  takerFeeRate: 'string',
};
const TIER_FIELDS: Readonly<Record<string, JsonType>> = {
  notionalFloor: 'string',
  maxLeverage: 'number',
};
const FUNDING_FIELDS: Readonly<Record<string, JsonType>> = {
  intervalMs: 'number',
  interestRate8h: 'string',
  premiumClamp: 'string',
  capPerHour: 'string',
  impactNotional: 'string',
};
const LIQUIDATION_FIELDS: Readonly<Record<string, JsonType>> = {
  partialThreshold: 'string',
  auctionDurationMs: 'number',
  feeRate: 'string',
};

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Settings without a default: `null` (which resets a setting to its default) cannot apply to
 * them, and buildInstrument would otherwise report it as a malformed value.
 */
const REQUIRED: ReadonlySet<string> = new Set([
  'id',
  'symbol',
  'tickSize',
  'lotSize',
  'quantityDecimals',
  'maxLeverage',
  'openInterestCap',
]);

/**
 * Refuses a present field of `obj` whose JSON type is not the one listed, and `null` for a
 * setting without a default (`required`: every field of a margin tier is).
 */
function checkTypes(
  obj: Record<string, unknown>,
  fields: Readonly<Record<string, JsonType>>,
  prefix: string,
  required: (name: string) => boolean = (name) => REQUIRED.has(name),
): void {
  for (const [name, type] of Object.entries(fields)) {
    const v = obj[name];
    if (v === null && required(name))
      throw new SettingsTypeError(`${prefix}${name} has no default: null is refused`);
    if (v !== undefined && v !== null && typeof v !== type)
      throw new SettingsTypeError(`${prefix}${name} must be a ${type}`);
  }
}

/**
 * Instrument settings from a JSON value, every field's JSON type checked; `prefix` names where
 * they came from in messages (`instruments[2].`). Throws {@link SettingsTypeError}.
 */
export function parseInstrumentSettings(value: unknown, prefix = ''): InstrumentSettings {
  if (!isObject(value)) {
    throw new SettingsTypeError(
      `${prefix.replace(/\.$/, '') || 'instrument settings'} must be an object`,
    );
  }
  const b = value;
  checkTypes(b, INSTRUMENT_FIELDS, prefix);
  const tiers = b.marginTiers;
  if (tiers !== undefined && tiers !== null) {
    if (!Array.isArray(tiers))
      throw new SettingsTypeError(
        `${prefix}marginTiers must be an array of { notionalFloor, maxLeverage }`,
      );
    tiers.forEach((tier: unknown, i) => {
      if (!isObject(tier))
        throw new SettingsTypeError(
          `${prefix}marginTiers[${i}] must be an object { notionalFloor, maxLeverage }`,
        );
      checkTypes(tier, TIER_FIELDS, `${prefix}marginTiers[${i}].`, () => true);
    });
  }
  for (const [name, fields] of [
    ['funding', FUNDING_FIELDS],
    ['liquidation', LIQUIDATION_FIELDS],
  ] as const) {
    const v = b[name];
    if (v === undefined || v === null) continue;
    if (!isObject(v)) throw new SettingsTypeError(`${prefix}${name} must be an object`);
    checkTypes(v, fields, `${prefix}${name}.`);
  }
  return b as unknown as InstrumentSettings;
}

/**
 * The settings (as an operator names them: `takerFeeRate`, `funding.intervalMs`, `marginTiers`)
 * in which two instruments differ, in settings order; empty when they are the same.
 */
export function instrumentDifferences(a: Instrument, b: Instrument): string[] {
  const sa = instrumentSettingsOf(a) as unknown as Record<string, unknown>;
  const sb = instrumentSettingsOf(b) as unknown as Record<string, unknown>;
  const out: string[] = [];
  // Both settings objects list every field except the defaulted leverage and maintenance rate,
  // so the union of their keys covers all; nested objects are compared field by field.
  for (const key of new Set([...Object.keys(sa), ...Object.keys(sb)])) {
    const va = sa[key];
    const vb = sb[key];
    if ((key === 'funding' || key === 'liquidation') && isObject(va) && isObject(vb)) {
      for (const sub of new Set([...Object.keys(va), ...Object.keys(vb)]))
        if (JSON.stringify(va[sub]) !== JSON.stringify(vb[sub])) out.push(`${key}.${sub}`);
    } else if (JSON.stringify(va) !== JSON.stringify(vb)) {
      out.push(key);
    }
  }
  return out;
}
