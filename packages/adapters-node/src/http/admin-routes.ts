/**
 * The operator surface (protocol.md section 8) behind `Authorization: Bearer <admin token>`:
 * instruments, oracle prices, invite codes, the simulated faucet, market pause/resume, funding
 * settlement, manual liquidation, trade busts, transfers between the venue's fee pool and
 * insurance fund, fee-pool payouts, the venue-wide settings, the solvency report and the state
 * hash. Everything that changes state goes through the engine host like any other command.
 *
 * @module
 */
import { timingSafeEqual } from 'node:crypto';
import {
  buildInstrument,
  DEFAULT_VENUE_SETTINGS,
  formatCollateral,
  formatDecimal,
  formatPrice,
  type Instrument,
  type InstrumentSettings,
  instrumentSettingsOf,
  type Outcome,
  parseDecimal,
  type ReferralCode,
  solvencyReport,
  type VenueSettings,
  venueSettingsOf,
} from '@perp/core';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  parseInstrumentSettings,
  requireNewInstrumentSettings,
  SettingsTypeError,
} from '../instrument-settings.js';
import { stateHashInSlices } from '../sliced-hash.js';
import type { VenueContext } from '../venue-context.js';
import { HttpError, statusOf } from './errors.js';
import { createRandomInviteCode } from './invite-codes.js';
import { showValue } from './json.js';
import { walletParam, wireInstrument } from './public-routes.js';

function requireAdmin(ctx: VenueContext, req: FastifyRequest): void {
  // Without a token there is nothing to compare with: `Bearer ` (or `Bearer undefined`, from a
  // token that is not a string) must never match. Start-up refuses such a venue.json already.
  if (typeof ctx.adminToken !== 'string' || ctx.adminToken.length === 0)
    throw new HttpError(401, 'Unauthorized: admin bearer token required');
  const header = req.headers.authorization;
  // The scheme is case-insensitive (RFC 9110 11.1: `bearer` is `Bearer`); the token is not.
  const credentials = typeof header === 'string' ? /^bearer +(\S*)$/i.exec(header)?.[1] : undefined;
  const expected = Buffer.from(ctx.adminToken);
  const given = Buffer.from(credentials ?? '');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new HttpError(401, 'Unauthorized: admin bearer token required');
  }
}

function body(req: FastifyRequest): Record<string, unknown> {
  const b = req.body;
  if (b === null || typeof b !== 'object' || Array.isArray(b))
    throw new HttpError(400, 'body must be a JSON object');
  return b as Record<string, unknown>;
}

/**
 * Refuses a body field this route does not read, naming it: a typo would otherwise be dropped and
 * the request carried out without it (`{"instrumnet":"BTC-PERP"}` settling funding in every
 * market, `{"forced":true}` a liquidation that is not forced, `{"cod":"VIP"}` a random code).
 */
function onlyFields(b: Record<string, unknown>, fields: readonly string[]): void {
  for (const key of Object.keys(b)) {
    if (fields.includes(key)) continue;
    throw new HttpError(
      400,
      fields.length === 0
        ? `unknown field ${showValue(key)}: this request takes no body fields`
        : `unknown field ${showValue(key)} (this request takes: ${fields.join(', ')})`,
    );
  }
}

/** A body-less action's body, if any, must hold no field (a `reason` would not be kept). */
function noFields(req: FastifyRequest): void {
  if (req.body !== undefined && req.body !== null) onlyFields(body(req), []);
}

/** A request body as instrument settings, every field's JSON type checked (400 naming it). */
function instrumentSettings(b: Record<string, unknown>): InstrumentSettings {
  try {
    return parseInstrumentSettings(b);
  } catch (e) {
    if (e instanceof SettingsTypeError) throw new HttpError(400, e.message);
    throw e;
  }
}

/**
 * The settings of a listed instrument with `patch` applied: fields the patch leaves out keep
 * their values (inside `funding` and `liquidation` too), `null` resets one to its default, and
 * `marginTiers` is replaced whole when given. The default leverage and maintenance rate follow a
 * new `maxLeverage` when they were at their defaults (`instrumentSettingsOf`).
 */
function patchedSettings(current: Instrument, patch: InstrumentSettings): InstrumentSettings {
  const base = instrumentSettingsOf(current);
  // A top-level `null` overrides the base value and buildInstrument takes the default for it;
  // `funding: null` and `liquidation: null` reset the whole group (spreading null would keep it).
  return {
    ...base,
    ...patch,
    funding: patch.funding === null ? null : { ...base.funding, ...patch.funding },
    liquidation: patch.liquidation === null ? null : { ...base.liquidation, ...patch.liquidation },
  };
}

/** The outcome of an accepted admin command, or its refusal as the spec's HTTP status. */
function ok(outcome: Outcome): Outcome & { ok: true } {
  if (!outcome.ok) throw new HttpError(statusOf(outcome.code), outcome.message);
  return outcome;
}

/** A collateral amount field: a positive decimal string of at most 6 decimals, in micro-units. */
function positiveCollateral(value: unknown): bigint {
  const amount = typeof value === 'string' ? parseDecimal(value, 6) : undefined;
  if (amount === undefined || !amount.ok || amount.value <= 0n) {
    throw new HttpError(400, 'amount must be a positive decimal string with at most 6 decimals');
  }
  return amount.value;
}

/** A referral code record on the wire. */
export function wireCode(c: ReferralCode): Record<string, unknown> {
  return {
    code: c.code,
    kind: c.kind,
    owner: c.owner,
    maxUses: c.maxUses,
    uses: c.uses,
    revoked: c.revoked,
    createdTime: c.createdTime,
  };
}

/**
 * The market a body's instrument names: a value that is no symbol at all (a number, an object)
 * is malformed (400); a symbol no instrument has is a resource not found (404).
 */
function marketId(ctx: VenueContext, symbol: unknown): number {
  if (typeof symbol !== 'string')
    throw new HttpError(
      400,
      `instrument must be a symbol string such as BTC-PERP, not ${showValue(symbol)}`,
    );
  const id = ctx.host.state.symbols.get(symbol);
  if (id === undefined) throw new HttpError(404, `unknown instrument ${showValue(symbol)}`);
  return id;
}

/**
 * The venue-wide settings on the wire: the whole of what the state hash covers, the settable cap
 * and the ones this venue keeps at their defaults alike. Each field is named (a setting added to
 * the state fails to compile here until someone decides how it is shown, never a bigint by
 * accident).
 */
function wireVenueSettings(s: VenueSettings): Record<string, unknown> {
  return {
    maxWorkingOrdersPerAccount: s.maxWorkingOrdersPerAccount,
    tradeRetentionMs: s.tradeRetentionMs,
    maxRetainedTrades: s.maxRetainedTrades,
    cloidRetentionMs: s.cloidRetentionMs,
    marginChecks: s.marginChecks,
  } satisfies Record<keyof VenueSettings, number | boolean>;
}

/** The venue settings `setVenueSettings` changes; the others stay as the genesis set them. */
const SETTABLE_VENUE_SETTINGS = ['maxWorkingOrdersPerAccount'] as const;

/**
 * A `POST /admin/venue-settings` body as the working-order cap to set: every field named and
 * checked here (400 naming the failed check) so a bad body journals nothing.
 */
function venueSettingsChange(b: Record<string, unknown>): number {
  const settable: readonly string[] = SETTABLE_VENUE_SETTINGS;
  for (const key of Object.keys(b)) {
    if (settable.includes(key)) continue;
    throw new HttpError(
      400,
      Object.hasOwn(DEFAULT_VENUE_SETTINGS, key)
        ? `${key} cannot be set at runtime: only ${settable.join(', ')} can`
        : `unknown venue setting ${showValue(key)} (settable: ${settable.join(', ')})`,
    );
  }
  if (!Object.hasOwn(b, 'maxWorkingOrdersPerAccount'))
    throw new HttpError(400, 'maxWorkingOrdersPerAccount is required');
  const cap = b.maxWorkingOrdersPerAccount;
  if (typeof cap !== 'number' || !Number.isSafeInteger(cap))
    throw new HttpError(
      400,
      `maxWorkingOrdersPerAccount must be an integer of at most ${Number.MAX_SAFE_INTEGER}, not ${showValue(JSON.stringify(cap) ?? String(cap))}`,
    );
  // The least value is core's (genesis, config and setVenueSettings refuse the same).
  try {
    venueSettingsOf({ maxWorkingOrdersPerAccount: cap });
  } catch (e) {
    if (e instanceof TypeError) throw new HttpError(400, e.message);
    throw e;
  }
  return cap;
}

/** Registers the admin routes under `/api/admin`. */
export function registerAdminRoutes(app: FastifyInstance, ctx: VenueContext): void {
  app.register(async (admin) => {
    admin.addHook('onRequest', async (req) => requireAdmin(ctx, req));

    admin.post('/api/admin/instruments', async (req) => {
      const settings = instrumentSettings(body(req));
      // A listed instrument is updated field by field; a new one needs every required field.
      const current = Number.isInteger(settings.id)
        ? ctx.host.state.markets.get(settings.id)
        : undefined;
      if (current === undefined) {
        try {
          requireNewInstrumentSettings(settings);
        } catch (e) {
          if (e instanceof SettingsTypeError) throw new HttpError(400, e.message);
          throw e;
        }
      }
      const built = buildInstrument(
        current === undefined ? settings : patchedSettings(current.spec, settings),
      );
      if (!built.ok) throw new HttpError(400, built.error);
      const r = await ctx.host.submit({ type: 'setInstrument', instrument: built.instrument });
      ok(r.outcome);
      // The instrument as GET /instruments lists it (protocol.md section 8: "-> the instrument").
      const market = ctx.host.state.markets.get(built.instrument.id);
      if (market === undefined) throw new HttpError(500, 'unexpected outcome');
      return wireInstrument(market);
    });

    admin.post('/api/admin/oracle', async (req) => {
      const b = body(req);
      onlyFields(b, ['prices']);
      const prices = b.prices;
      if (prices === null || typeof prices !== 'object' || Array.isArray(prices)) {
        throw new HttpError(400, 'prices must be an object of symbol -> decimal price');
      }
      // An empty update would still be journaled and act as a clock tick (expiries, funding due):
      // an operator's script sending an empty map means a mistake, not a tick.
      if (Object.keys(prices).length === 0)
        throw new HttpError(400, 'prices names no instrument: give at least one symbol -> price');
      const entries = Object.entries(prices as Record<string, unknown>).map(([symbol, p]) => {
        const parsed = typeof p === 'string' ? parseDecimal(p, 18) : undefined;
        if (parsed === undefined || !parsed.ok || parsed.value <= 0n)
          throw new HttpError(
            400,
            `price of ${symbol} must be a positive decimal string with at most 18 decimals, not ${showValue(JSON.stringify(p) ?? String(p))}`,
          );
        return { market: marketId(ctx, symbol), price: parsed.value };
      });
      const r = await ctx.host.submit({ type: 'oracle', prices: entries });
      ok(r.outcome);
      const state = ctx.host.state;
      return {
        marks: Object.fromEntries(
          entries.map(({ market }) => {
            const m = state.markets.get(market)!;
            return [
              m.spec.symbol,
              { index: formatPrice(m.prices.index!), mark: formatPrice(m.prices.mark!) },
            ];
          }),
        ),
      };
    });

    admin.post('/api/admin/referral-codes', async (req) => {
      const b = body(req);
      onlyFields(b, ['code', 'kind', 'owner', 'maxUses']);
      const kind = b.kind;
      if (kind !== 'system' && kind !== 'attributed')
        throw new HttpError(400, 'kind must be system or attributed');
      // Core's own check of a non-integer names its command field (`createReferralCode.maxUses`).
      if (typeof b.maxUses !== 'number' || !Number.isSafeInteger(b.maxUses))
        throw new HttpError(
          400,
          `maxUses must be a positive integer, not ${showValue(JSON.stringify(b.maxUses) ?? String(b.maxUses))}`,
        );
      // `null` is "none", as the code record shows a system code's owner (`"owner":null`) and as
      // the other admin bodies read an optional field.
      const code = b.code ?? undefined;
      if (code !== undefined && typeof code !== 'string')
        throw new HttpError(400, 'code must be a string');
      const owner =
        (b.owner ?? undefined) === undefined ? undefined : walletParam(b.owner, 'owner');
      const fields = { kind, maxUses: b.maxUses, owner } as const;
      // Without `code`, the value is drawn from the CSPRNG (invite codes must not be guessable).
      const r =
        code === undefined
          ? await createRandomInviteCode(ctx.host, fields)
          : await ctx.host.submit({
              type: 'createReferralCode',
              code,
              kind,
              maxUses: b.maxUses,
              ...(owner === undefined ? {} : { owner }),
            });
      const o = ok(r.outcome);
      if (o.kind !== 'referralCode') throw new HttpError(500, 'unexpected outcome');
      return wireCode(o.code);
    });

    admin.post('/api/admin/referral-codes/:code/revoke', async (req) => {
      noFields(req);
      const code = (req.params as Record<string, string>).code ?? '';
      // The path names the resource: one that does not exist is 404, as an unknown instrument is.
      if (!ctx.host.state.referralCodes.has(code))
        throw new HttpError(404, `no referral code ${showValue(code)}`);
      const r = await ctx.host.submit({ type: 'revokeReferralCode', code });
      const o = ok(r.outcome);
      if (o.kind !== 'referralCode') throw new HttpError(500, 'unexpected outcome');
      return wireCode(o.code);
    });

    admin.get('/api/admin/referral-codes', async () => ({
      codes: ctx.host.state.referralCodes.values().map(wireCode),
    }));

    admin.post('/api/admin/faucet', async (req) => {
      const b = body(req);
      onlyFields(b, ['wallet', 'amount']);
      const wallet = walletParam(b.wallet);
      const amount = positiveCollateral(b.amount);
      if (ctx.chain.faucet === undefined)
        throw new HttpError(400, 'this venue has no faucet (real chain)');
      let balance: bigint;
      try {
        balance = ctx.chain.faucet(wallet, amount);
      } catch (e) {
        // The chain's refusal of a request that can never succeed (the vault or the token as
        // the wallet): a 400 naming it, not a 500 that tells the operator to retry.
        if (e instanceof RangeError) throw new HttpError(400, e.message);
        throw e;
      }
      return { wallet, balance: formatCollateral(balance) };
    });

    const setStatus = (status: 'Active' | 'Paused') => async (req: FastifyRequest) => {
      noFields(req);
      const market = marketId(ctx, (req.params as Record<string, string>).instrument);
      const r = await ctx.host.submit({ type: 'setMarketStatus', market, status });
      ok(r.outcome);
      return { instrument: (req.params as Record<string, string>).instrument, status };
    };
    admin.post('/api/admin/markets/:instrument/pause', setStatus('Paused'));
    admin.post('/api/admin/markets/:instrument/resume', setStatus('Active'));

    admin.post('/api/admin/funding/settle', async (req) => {
      const b = req.body === undefined || req.body === null ? {} : body(req);
      onlyFields(b, ['instrument']);
      const market =
        b.instrument === undefined || b.instrument === null
          ? undefined
          : marketId(ctx, b.instrument);
      const r = await ctx.host.submit({
        type: 'settleFunding',
        ...(market === undefined ? {} : { market }),
      });
      const o = ok(r.outcome);
      if (o.kind !== 'funding') throw new HttpError(500, 'unexpected outcome');
      const state = ctx.host.state;
      return {
        settlements: o.settlements.map((st) => {
          const spec = state.markets.get(st.market)!.spec;
          return {
            instrument: spec.symbol,
            fundingTime: st.fundingTime,
            fundingRate: formatDecimal(st.rate, 18),
            premium: formatDecimal(st.premium, 18),
            samples: st.sampleCount,
            indexPrice: st.indexPrice === null ? null : formatPrice(st.indexPrice),
            residue: formatCollateral(st.residue),
            payments: st.payments.map((p) => ({
              wallet: p.account,
              marginMode: p.marginMode,
              positionSize: formatDecimal(p.positionSize, spec.quantityDecimals),
              payment: formatCollateral(p.payment),
            })),
          };
        }),
      };
    });

    admin.post('/api/admin/liquidate', async (req) => {
      const b = body(req);
      onlyFields(b, ['wallet', 'instrument', 'marginMode', 'force']);
      const wallet = walletParam(b.wallet);
      // protocol.md section 8: `{wallet, instrument?, marginMode, force?}`. marginMode has no
      // default: a forced liquidation of the wrong scope cannot be undone.
      const mode = b.marginMode;
      if (mode !== 'Cross' && mode !== 'Isolated')
        throw new HttpError(400, 'marginMode is required: Cross or Isolated');
      // An instrument is checked whenever given (null is "none", as in the margin requests):
      // a typo must not be dropped and turn into a liquidation of the whole cross account.
      const instrument = b.instrument ?? undefined;
      if (instrument !== undefined) {
        if (typeof instrument !== 'string')
          throw new HttpError(400, 'instrument must be a symbol such as BTC-PERP');
        if (!ctx.host.state.symbols.has(instrument))
          throw new HttpError(400, `unknown instrument ${showValue(instrument)}`);
        if (mode === 'Cross')
          throw new HttpError(
            400,
            'instrument is only for an Isolated liquidation: a Cross one covers the whole cross account',
          );
      }
      if (mode === 'Isolated' && instrument === undefined)
        throw new HttpError(400, 'instrument is required for Isolated');
      if (b.force !== undefined && typeof b.force !== 'boolean')
        throw new HttpError(400, 'force must be a boolean');
      const market = mode === 'Isolated' ? marketId(ctx, instrument) : 0;
      const r = await ctx.host.submit({
        type: 'liquidate',
        account: wallet,
        mode,
        market,
        force: b.force === true,
      });
      // protocol.md section 6: a refused liquidation is 400, an unknown wallet (4040) included.
      if (!r.outcome.ok) throw new HttpError(400, r.outcome.message);
      const o = r.outcome;
      if (o.kind !== 'liquidation') throw new HttpError(500, 'unexpected outcome');
      return {
        liquidationId: String(o.liquidationId),
        wallet: o.account,
        marginMode: o.marginMode,
        instrument:
          o.market === 0 ? null : (ctx.host.state.markets.get(o.market)?.spec.symbol ?? null),
        result: o.result,
      };
    });

    admin.post('/api/admin/trades/:tradeId/bust', async (req) => {
      const raw = (req.params as Record<string, string>).tradeId ?? '';
      if (!/^\d{1,15}$/.test(raw)) throw new HttpError(400, 'tradeId must be a decimal trade id');
      const b = req.body === undefined || req.body === null ? {} : body(req);
      onlyFields(b, ['reason']);
      const reason = b.reason === undefined ? 'operator' : b.reason;
      if (typeof reason !== 'string' || reason.length === 0 || reason.length > 200)
        throw new HttpError(400, 'reason must be a string of 1-200 characters');
      const r = await ctx.host.submit({ type: 'bustTrade', tradeId: Number(raw), reason });
      const o = ok(r.outcome);
      if (o.kind !== 'bust') throw new HttpError(500, 'unexpected outcome');
      return {
        tradeId: String(o.tradeId),
        instrument: ctx.host.state.markets.get(o.market)?.spec.symbol ?? null,
        wallets: o.accounts,
        reason,
      };
    });

    // Not in protocol.md section 8 (an addition): seeds the insurance fund from the venue's
    // trading revenue (or moves a surplus back), docs/risk-engine.md "Venue pools".
    admin.post('/api/admin/insurance-fund/transfer', async (req) => {
      const b = body(req);
      onlyFields(b, ['direction', 'amount']);
      const direction = b.direction;
      if (direction !== 'ToInsuranceFund' && direction !== 'ToFeePool')
        throw new HttpError(400, 'direction must be ToInsuranceFund or ToFeePool');
      const amount = positiveCollateral(b.amount);
      const r = await ctx.host.submit({
        type: 'insuranceTransfer',
        direction,
        amount,
      });
      const o = ok(r.outcome);
      if (o.kind !== 'insuranceTransfer') throw new HttpError(500, 'unexpected outcome');
      return {
        insuranceFund: formatCollateral(o.insuranceFund),
        feePool: formatCollateral(o.feePool),
      };
    });

    // Not in protocol.md section 8 (an addition): pays trading revenue out of the fee pool into
    // an account's cross pool, from where it is withdrawn like any collateral.
    admin.post('/api/admin/fee-pool/payout', async (req) => {
      const b = body(req);
      onlyFields(b, ['wallet', 'amount']);
      const wallet = walletParam(b.wallet);
      const amount = positiveCollateral(b.amount);
      const r = await ctx.host.submit({ type: 'feePayout', account: wallet, amount });
      const o = ok(r.outcome);
      if (o.kind !== 'feePayout') throw new HttpError(500, 'unexpected outcome');
      return {
        wallet: o.account,
        amount: formatCollateral(o.amount),
        feePool: formatCollateral(o.feePool),
      };
    });

    // Not in protocol.md section 8 (an addition): the venue-wide settings as the state holds
    // them, and the working-order cap changed at runtime by the same journaled command a
    // config's value at a new venue's start is (so a replay meets it where it happened).
    admin.get('/api/admin/venue-settings', async () => {
      await ctx.host.idle();
      return wireVenueSettings(ctx.host.state.settings);
    });

    admin.post('/api/admin/venue-settings', async (req) => {
      const maxWorkingOrdersPerAccount = venueSettingsChange(body(req));
      const r = await ctx.host.submit({ type: 'setVenueSettings', maxWorkingOrdersPerAccount });
      ok(r.outcome);
      return wireVenueSettings(ctx.host.state.settings);
    });

    // Not in protocol.md section 8 (an addition): the venue's own pools and every scope below
    // zero, the shortfall of docs/risk-engine.md, as the operator needs to watch them.
    admin.get('/api/admin/solvency', async () => {
      await ctx.host.idle();
      const state = ctx.host.state;
      const r = solvencyReport(state);
      return {
        insuranceFund: formatCollateral(r.insuranceFund),
        feePool: formatCollateral(r.feePool),
        totalDeposits: formatCollateral(r.totalDeposits),
        totalWithdrawals: formatCollateral(r.totalWithdrawals),
        totalDebt: formatCollateral(r.totalDebt),
        debts: r.debts.map((d) => ({
          wallet: d.account,
          marginMode: d.marginMode,
          instrument: d.market === 0 ? null : (state.markets.get(d.market)?.spec.symbol ?? null),
          debt: formatCollateral(d.debt),
          inAuction: d.inAuction,
        })),
      };
    });

    // Not in protocol.md section 8 (an addition): after a restart from a snapshot the read models
    // reach back to the first record only once the history backfill is done (durability.md).
    admin.get('/api/admin/read-models', async () => ctx.readModels());

    admin.get('/api/admin/state-hash', async () => {
      await ctx.host.idle();
      // The state and seq of one moment; the hash is taken in slices, so a large state does not
      // hold the venue while batches after that moment go on.
      const state = ctx.host.state;
      const seq = ctx.host.journalSeq;
      return {
        seq,
        hash: (await stateHashInSlices(state)) as string,
        rulesVersion: state.rulesVersion,
      };
    });
  });
}
