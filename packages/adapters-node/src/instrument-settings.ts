/**
 * Instrument settings from JSON (the admin route's body, a `--config` file): the JSON type of
 * every field is checked here, so `buildInstrument` (which checks values, trusting its types)
 * never sees a string where it iterates an array or does arithmetic on a number. A key that is
 * no setting is refused (a typo such as `takerFee` would otherwise be answered 200 with nothing
 * changed), and engine-rules section 2's flat liquidation names are read as the nested fields.
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

/** A JSON object (not an array, not null). */
export const isObject = (v: unknown): v is Record<string, unknown> =>
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
 * Refuses settings for a new instrument that leave out a setting without a default, naming it
 * (the value checks would otherwise call a missing symbol malformed: "symbol must match ...").
 * `prefix` names where they came from (`instruments[2].`).
 */
export function requireNewInstrumentSettings(settings: InstrumentSettings, prefix = ''): void {
  const given = settings as unknown as Record<string, unknown>;
  const missing = [...REQUIRED].filter((name) => given[name] === undefined);
  if (missing.length === 1)
    throw new SettingsTypeError(
      `${prefix}${missing[0]} is required for a new instrument (it has no default)`,
    );
  if (missing.length > 1)
    throw new SettingsTypeError(
      `${prefix === '' ? '' : `${prefix.slice(0, -1)}: `}${missing.join(', ')} are required for a new instrument (they have no default)`,
    );
}

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
 * Engine-rules section 2 names the liquidation settings flat; the settings nest them under
 * `liquidation` (as `funding` is). Both spellings are accepted and GET /instruments shows both.
 */
const LIQUIDATION_ALIASES: Readonly<Record<string, string>> = {
  liquidationPartialThreshold: 'partialThreshold',
  liquidationAuctionDurationMs: 'auctionDurationMs',
  liquidationFeeRate: 'feeRate',
};

/**
 * Fields GET /instruments shows that are state, not settings: sent back in an update they are
 * refused with a message saying so rather than as unknown.
 */
const READ_ONLY: Readonly<Record<string, string>> = {
  status: 'use POST /admin/markets/:instrument/pause or resume',
  openInterest: 'it is market state',
  markPrice: 'it is market state',
  indexPrice: 'it is market state (set it with POST /admin/oracle)',
};

/**
 * Refuses a key of `obj` that is not one of `known`, naming it; `hint` may say why, for a key
 * that is known to be no setting.
 */
function checkKeys(
  obj: Record<string, unknown>,
  known: (key: string) => boolean,
  prefix: string,
  what: string,
  hint: (key: string) => string | undefined = () => undefined,
): void {
  for (const key of Object.keys(obj)) {
    if (known(key)) continue;
    const why = hint(key);
    throw new SettingsTypeError(
      `${prefix}${key} is not ${what}${why === undefined ? '' : `: ${why}`}`,
    );
  }
}

/** The flat names' JSON types (those of the nested fields), checked under the name given. */
const ALIAS_FIELDS: Readonly<Record<string, JsonType>> = Object.fromEntries(
  Object.entries(LIQUIDATION_ALIASES).map(([flat, nested]) => [
    flat,
    LIQUIDATION_FIELDS[nested] as JsonType,
  ]),
);

const TOP_LEVEL = new Set([
  ...Object.keys(INSTRUMENT_FIELDS),
  'marginTiers',
  'funding',
  'liquidation',
  ...Object.keys(LIQUIDATION_ALIASES),
]);

/**
 * Instrument settings from a JSON value, every key known and every field's JSON type checked;
 * `prefix` names where they came from in messages (`instruments[2].`). The flat engine-rules
 * liquidation names come back nested under `liquidation`. Throws {@link SettingsTypeError}.
 */
export function parseInstrumentSettings(value: unknown, prefix = ''): InstrumentSettings {
  if (!isObject(value)) {
    throw new SettingsTypeError(
      `${prefix.replace(/\.$/, '') || 'instrument settings'} must be an object`,
    );
  }
  const b = value;
  checkKeys(
    b,
    (k) => TOP_LEVEL.has(k),
    prefix,
    'an instrument setting',
    (k) => (Object.hasOwn(READ_ONLY, k) ? READ_ONLY[k] : undefined),
  );
  checkTypes(b, ALIAS_FIELDS, prefix);
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
      const at = `${prefix}marginTiers[${i}].`;
      if ('maintenanceMarginRate' in tier)
        throw new SettingsTypeError(
          `${at}maintenanceMarginRate is not a setting: a tier's rate follows from its maxLeverage`,
        );
      checkKeys(
        tier,
        (k) => Object.hasOwn(TIER_FIELDS, k),
        at,
        'a margin tier setting (notionalFloor, maxLeverage)',
      );
      checkTypes(tier, TIER_FIELDS, at, () => true);
    });
  }
  for (const [name, fields] of [
    ['funding', FUNDING_FIELDS],
    ['liquidation', LIQUIDATION_FIELDS],
  ] as const) {
    const v = b[name];
    if (v === undefined || v === null) continue;
    if (!isObject(v)) throw new SettingsTypeError(`${prefix}${name} must be an object`);
    checkKeys(
      v,
      (k) => Object.hasOwn(fields, k),
      `${prefix}${name}.`,
      `a ${name} setting (${Object.keys(fields).join(', ')})`,
    );
    checkTypes(v, fields, `${prefix}${name}.`);
  }
  return withNestedLiquidation(b, prefix) as unknown as InstrumentSettings;
}

/** `b` with the flat engine-rules liquidation names moved under `liquidation`. */
function withNestedLiquidation(
  b: Record<string, unknown>,
  prefix: string,
): Record<string, unknown> {
  const flat = Object.keys(LIQUIDATION_ALIASES).filter((k) => k in b);
  if (flat.length === 0) return b;
  const renamed = Object.fromEntries(flat.map((k) => [LIQUIDATION_ALIASES[k], b[k]]));
  const nested = b.liquidation;
  // Two spellings of one setting, or a group reset next to a value in it, have no one meaning.
  if (nested === null)
    throw new SettingsTypeError(
      `${prefix}liquidation: null resets the group; drop ${flat.join(', ')} or it`,
    );
  const out: Record<string, unknown> = { ...b };
  for (const k of flat) {
    const field = LIQUIDATION_ALIASES[k] as string;
    if (isObject(nested) && field in nested)
      throw new SettingsTypeError(
        `${prefix}${k} and ${prefix}liquidation.${field} are one setting: give one`,
      );
    delete out[k];
  }
  out.liquidation = { ...(isObject(nested) ? nested : {}), ...renamed };
  return out;
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
