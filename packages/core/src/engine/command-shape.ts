/**
 * Runtime shape of commands. The types protect TypeScript callers; a command built from parsed
 * JSON, or by JavaScript, may carry a `number` where the engine computes in `bigint`, or a field
 * of the wrong kind. The reducer checks every command's fields against this table before it
 * touches the state, and refuses a malformed one with 4000 naming the field, instead of
 * failing deep inside the reducer or storing the wrong kind of value.
 *
 * @module
 */
import { type Rejection, reject } from '../errors.js';
import type { Instrument } from '../instruments/instrument.js';
import type { Command, OrderRequest } from './commands.js';

/** What one field must hold. */
type FieldSpec =
  | 'bigint'
  | 'int'
  | 'bool'
  | 'string'
  | { readonly nullable: FieldSpec }
  | { readonly optional: FieldSpec }
  | { readonly oneOf: readonly string[] }
  | { readonly fields: Shape }
  | { readonly list: Shape };

type Shape = { readonly [field: string]: FieldSpec };

/** Every field of every command but `type` and `time` (checked before this). */
type CommandShapes = {
  readonly [K in Command['type']]: {
    readonly [F in Exclude<keyof Extract<Command, { type: K }>, 'type' | 'time'>]-?: FieldSpec;
  };
};

const opt = (spec: FieldSpec): FieldSpec => ({ optional: spec });
const nullable = (spec: FieldSpec): FieldSpec => ({ nullable: spec });
const oneOf = (...values: string[]): FieldSpec => ({ oneOf: values });

const AUTH: FieldSpec = opt({ fields: { nonce: 'bigint', deadline: 'bigint' } });
const MODE = oneOf('Cross', 'Isolated');
const TARGET: FieldSpec = { fields: { mode: MODE, market: 'int' } };

type FieldsOf<T> = { readonly [F in keyof T]-?: FieldSpec };

const ORDER: FieldsOf<OrderRequest> = {
  market: 'int',
  isBuy: 'bool',
  orderType: 'int',
  timeInForce: 'int',
  price: 'bigint',
  triggerPrice: 'bigint',
  quantity: 'bigint',
  flags: 'int',
  expiry: 'bigint',
  cloid: nullable('string'),
  parentCloid: nullable('string'),
};

/** An instrument as `buildInstrument` makes it (its values are that function's to check). */
const INSTRUMENT: FieldsOf<Instrument> = {
  id: 'int',
  symbol: 'string',
  tickSize: 'bigint',
  lotSize: 'bigint',
  quantityDecimals: 'int',
  maxLeverage: 'int',
  defaultLeverage: 'int',
  tiers: {
    list: {
      notionalFloor: 'bigint',
      maxLeverage: 'int',
      maintenanceMarginRate: 'bigint',
      deduction: 'bigint',
    },
  },
  openInterestCap: 'bigint',
  minNotional: 'bigint',
  makerFeeRate: 'bigint',
  takerFeeRate: 'bigint',
  funding: {
    fields: {
      intervalMs: 'int',
      interestRate8h: 'bigint',
      premiumClamp: 'bigint',
      capPerHour: 'bigint',
      impactNotional: 'bigint',
    },
  },
  liquidation: {
    fields: { partialThreshold: 'bigint', auctionDurationMs: 'int', feeRate: 'bigint' },
  },
};

const SHAPES: CommandShapes = {
  placeOrder: {
    account: 'string',
    order: { fields: ORDER },
    auth: AUTH,
  },
  cancelOrder: {
    account: 'string',
    market: 'int',
    orderId: 'bigint',
    cloid: nullable('string'),
    auth: AUTH,
  },
  replaceOrder: {
    account: 'string',
    market: 'int',
    orderId: 'bigint',
    origCloid: nullable('string'),
    price: 'bigint',
    triggerPrice: 'bigint',
    quantity: 'bigint',
    cloid: nullable('string'),
    auth: AUTH,
  },
  cancelAll: { account: 'string', market: 'int', auth: AUTH },
  oracle: { prices: { list: { market: 'int', price: 'bigint' } } },
  setInstrument: { instrument: { fields: INSTRUMENT } },
  setMarketStatus: { market: 'int', status: oneOf('Active', 'Paused') },
  openAccount: { account: 'string' },
  deposit: { account: 'string', amount: 'bigint', target: TARGET, auth: AUTH },
  settleDeposit: {
    commandId: 'int',
    success: 'bool',
    txHash: opt('string'),
    reason: opt('string'),
  },
  settleWithdrawal: {
    commandId: 'int',
    success: 'bool',
    txHash: opt('string'),
    reason: opt('string'),
  },
  withdraw: { account: 'string', amount: 'bigint', target: TARGET, auth: AUTH },
  transferMargin: {
    account: 'string',
    amount: 'bigint',
    market: 'int',
    direction: oneOf('crossToIsolated', 'isolatedToCross'),
    auth: AUTH,
  },
  updateLeverage: { account: 'string', market: 'int', mode: MODE, leverage: 'int', auth: AUTH },
  createReferralCode: {
    code: opt('string'),
    kind: oneOf('system', 'attributed'),
    owner: opt('string'),
    maxUses: 'int',
  },
  revokeReferralCode: { code: 'string' },
  applyReferral: { wallet: 'string', code: 'string', nonce: 'string', timestamp: 'int' },
  authenticate: { account: 'string', nonce: 'bigint' },
  tick: {},
  declareRules: { version: 'int', replayed: opt('int') },
  settleFunding: { market: opt('int') },
  liquidate: { account: 'string', mode: MODE, market: 'int', force: opt('bool') },
  claimLiquidation: {
    account: 'string',
    auctionId: 'int',
    quantity: 'bigint',
    maxPrice: 'bigint',
    auth: AUTH,
  },
  bustTrade: { tradeId: 'int', reason: 'string' },
  insuranceTransfer: { direction: oneOf('ToInsuranceFund', 'ToFeePool'), amount: 'bigint' },
  feePayout: { account: 'string', amount: 'bigint' },
  setVenueSettings: { maxWorkingOrdersPerAccount: 'int' },
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function kindOf(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** Why `value` does not fit `spec` (with `path` naming it), or `undefined`. */
function fieldProblem(value: unknown, spec: FieldSpec, path: string): string | undefined {
  if (typeof spec === 'string') {
    switch (spec) {
      case 'bigint':
        return typeof value === 'bigint'
          ? undefined
          : `${path} must be a bigint, not ${kindOf(value)}`;
      case 'int':
        return Number.isSafeInteger(value)
          ? undefined
          : `${path} must be a safe integer, not ${typeof value === 'number' ? value : kindOf(value)}`;
      case 'bool':
        return typeof value === 'boolean'
          ? undefined
          : `${path} must be a boolean, not ${kindOf(value)}`;
      case 'string':
        return typeof value === 'string'
          ? undefined
          : `${path} must be a string, not ${kindOf(value)}`;
    }
  }
  if ('optional' in spec)
    return value === undefined ? undefined : fieldProblem(value, spec.optional, path);
  if ('nullable' in spec)
    return value === null ? undefined : fieldProblem(value, spec.nullable, path);
  if ('oneOf' in spec) {
    return typeof value === 'string' && spec.oneOf.includes(value)
      ? undefined
      : `${path} must be one of ${spec.oneOf.join(', ')}`;
  }
  if ('fields' in spec) {
    if (!isRecord(value)) return `${path} must be an object, not ${kindOf(value)}`;
    return shapeProblem(value, spec.fields, path);
  }
  if (!Array.isArray(value)) return `${path} must be an array, not ${kindOf(value)}`;
  for (let i = 0; i < value.length; i++) {
    const item: unknown = value[i];
    if (!isRecord(item)) return `${path}[${i}] must be an object, not ${kindOf(item)}`;
    const problem = shapeProblem(item, spec.list, `${path}[${i}]`);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

function shapeProblem(
  value: Record<string, unknown>,
  shape: Shape,
  path: string,
): string | undefined {
  for (const field in shape) {
    const problem = fieldProblem(value[field], shape[field] as FieldSpec, `${path}.${field}`);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/** A compiled check of one field spec: the fast path, with no message. */
type Check = (value: unknown) => boolean;

const isBigint: Check = (v) => typeof v === 'bigint';
const isBool: Check = (v) => typeof v === 'boolean';
const isString: Check = (v) => typeof v === 'string';

function compile(spec: FieldSpec): Check {
  if (spec === 'bigint') return isBigint;
  if (spec === 'int') return Number.isSafeInteger;
  if (spec === 'bool') return isBool;
  if (spec === 'string') return isString;
  if ('optional' in spec) {
    const inner = compile(spec.optional);
    return (v) => v === undefined || inner(v);
  }
  if ('nullable' in spec) {
    const inner = compile(spec.nullable);
    return (v) => v === null || inner(v);
  }
  if ('oneOf' in spec) {
    const values = spec.oneOf;
    return (v) => typeof v === 'string' && values.includes(v);
  }
  if ('fields' in spec) return compileShape(spec.fields);
  const item = compileShape(spec.list);
  return (v) => {
    if (!Array.isArray(v)) return false;
    for (let i = 0; i < v.length; i++) if (!item(v[i])) return false;
    return true;
  };
}

function compileShape(shape: Shape): Check {
  const names = Object.keys(shape);
  const checks = names.map((k) => compile(shape[k] as FieldSpec));
  return (v) => {
    if (!isRecord(v)) return false;
    for (let i = 0; i < names.length; i++) {
      if (!(checks[i] as Check)(v[names[i] as string])) return false;
    }
    return true;
  };
}

const isAuth = (v: unknown): boolean =>
  v === undefined || (isRecord(v) && typeof v.nonce === 'bigint' && typeof v.deadline === 'bigint');
const isCloid = (v: unknown): boolean => v === null || typeof v === 'string';

/**
 * The order-flow commands written out: they are most of a venue's traffic, and a compiled check
 * calls one closure per field. `SHAPES` stays the definition: the tests refuse a wrong kind in
 * every field of every command, so a field missing here fails them.
 */
const HOT: Readonly<Record<string, Check>> = {
  placeOrder: (c) => {
    const v = c as Record<string, unknown>;
    const o = v.order;
    return (
      typeof v.account === 'string' &&
      isAuth(v.auth) &&
      isRecord(o) &&
      Number.isSafeInteger(o.market) &&
      typeof o.isBuy === 'boolean' &&
      Number.isSafeInteger(o.orderType) &&
      Number.isSafeInteger(o.timeInForce) &&
      typeof o.price === 'bigint' &&
      typeof o.triggerPrice === 'bigint' &&
      typeof o.quantity === 'bigint' &&
      Number.isSafeInteger(o.flags) &&
      typeof o.expiry === 'bigint' &&
      isCloid(o.cloid) &&
      isCloid(o.parentCloid)
    );
  },
  cancelOrder: (c) => {
    const v = c as Record<string, unknown>;
    return (
      typeof v.account === 'string' &&
      Number.isSafeInteger(v.market) &&
      typeof v.orderId === 'bigint' &&
      isCloid(v.cloid) &&
      isAuth(v.auth)
    );
  },
  replaceOrder: (c) => {
    const v = c as Record<string, unknown>;
    return (
      typeof v.account === 'string' &&
      Number.isSafeInteger(v.market) &&
      typeof v.orderId === 'bigint' &&
      isCloid(v.origCloid) &&
      typeof v.price === 'bigint' &&
      typeof v.triggerPrice === 'bigint' &&
      typeof v.quantity === 'bigint' &&
      isCloid(v.cloid) &&
      isAuth(v.auth)
    );
  },
};

/** Every command shape checked without messages: the hot ones written out, the rest compiled. */
const FAST: ReadonlyMap<string, Check> = new Map(
  Object.entries(SHAPES).map(([type, shape]) => [type, HOT[type] ?? compileShape(shape as Shape)]),
);

/**
 * Why a command's fields do not have the kinds its type declares (4000, naming the first field
 * that does not), or `undefined`. `type` must name a command; `time` is checked by the reducer.
 */
export function commandShapeProblem(command: Command): Rejection | undefined {
  const raw: unknown = command;
  if (isRecord(raw) && FAST.get(raw.type as string)?.(raw) === true) return undefined;
  // Malformed: walk it again to name the first field that is wrong.
  if (!isRecord(raw))
    return reject('INVALID_REQUEST', `a command must be an object, not ${kindOf(raw)}`);
  const type = raw.type;
  const shape =
    typeof type === 'string' && Object.hasOwn(SHAPES, type)
      ? (SHAPES[type as Command['type']] as Shape)
      : undefined;
  if (shape === undefined)
    return reject(
      'INVALID_REQUEST',
      `unknown command type ${typeof type === 'string' ? JSON.stringify(type) : kindOf(type)}`,
    );
  const problem = shapeProblem(raw, shape, type as string);
  return problem === undefined ? undefined : reject('INVALID_REQUEST', problem);
}
