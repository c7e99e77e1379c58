/**
 * Public REST reads (interface-spec "Public REST reads", protocol.md sections 7 and 8):
 * account summary, order, trade and funding history, access status, instruments, time, network,
 * the simulated chain's token view, candle and funding-rate history, tickers, order books and
 * recent public trades.
 * No signature; limited per client IP.
 *
 * @module
 */
import {
  accountSummary,
  formatCollateral,
  formatDecimal,
  formatPrice,
  hasAppAccess,
  type Market,
} from '@perp/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { chainIdOf, tokenVersionOf } from '../config.js';
import { INTERVALS, isCandleInterval } from '../marketdata/candles.js';
import { BOOK_DEPTHS, DEFAULT_BOOK_DEPTH, orderBookSnapshot } from '../marketdata/orderbook.js';
import { DEFAULT_TRADE_TAPE } from '../marketdata/trades.js';
import { type CursorKind, type HistoryQuery, isValidCursor } from '../read/history.js';
import type { VenueContext } from '../venue-context.js';
import { HttpError } from './errors.js';
import { chargeAddress } from './ip-limit.js';
import { showValue } from './json.js';

const ADDRESS_ANY_CASE = /^0x[0-9a-fA-F]{40}$/;
/** A u64 identifier as the wire writes it (protocol.md section 1): decimal, no leading zeros. */
const U64_RE = /^(0|[1-9]\d{0,19})$/;
const CLOID_RE = /^0x[0-9a-fA-F]{32}$/;

/** A wallet from a public read: any case accepted, normalised to lowercase. */
export function walletParam(value: unknown, name = 'wallet'): string {
  once(value, name);
  if (typeof value !== 'string' || !ADDRESS_ANY_CASE.test(value)) {
    throw new HttpError(400, `${name} must be a 0x address`);
  }
  return value.toLowerCase();
}

/**
 * A query parameter a read takes one value of: a repeated one (`?limit=1&limit=2` arrives as an
 * array) is named as such, not as missing or of the wrong form. Parameters a read does not take
 * are ignored, repeated or not.
 */
function once(value: unknown, name: string): unknown {
  if (Array.isArray(value)) throw new HttpError(400, `${name} given more than once`);
  return value;
}

function intParam(value: unknown, name: string, min: number, max: number): number | undefined {
  if (once(value, name) === undefined) return undefined;
  if (typeof value !== 'string' || !/^\d{1,16}$/.test(value))
    throw new HttpError(400, `${name} must be an integer`);
  const n = Number(value);
  if (n < min || n > max) throw new HttpError(400, `${name} must be in ${min}..${max}`);
  return n;
}

/** `startTime` and `endTime` of a read; swapped bounds are refused, not answered empty. */
function timeWindow(q: Record<string, unknown>): {
  startTime: number | undefined;
  endTime: number | undefined;
} {
  const startTime = intParam(q.startTime, 'startTime', 0, Number.MAX_SAFE_INTEGER);
  const endTime = intParam(q.endTime, 'endTime', 0, Number.MAX_SAFE_INTEGER);
  if (startTime !== undefined && endTime !== undefined && startTime > endTime)
    throw new HttpError(400, `startTime ${startTime} is after endTime ${endTime}`);
  return { startTime, endTime };
}

function historyQuery(
  q: Record<string, unknown>,
  kind: CursorKind,
  symbols: { has(symbol: string): boolean },
): HistoryQuery {
  const orders = kind === 'orders';
  // Funding payments belong to positions, not orders: a filter that filtered nothing would read
  // as "this order's funding".
  if (kind === 'funding')
    for (const name of ['orderId', 'cloid', 'status'])
      if (q[name] !== undefined)
        throw new HttpError(400, `${name} does not apply to funding payments (instrument does)`);
  const str = (name: string): string | undefined => {
    const v = once(q[name], name);
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || v.length > 128)
      throw new HttpError(400, `${name} must be a string`);
    return v;
  };
  // A symbol no instrument has (a typo, the wrong case) would filter every row out and read as
  // "no history there": refused like a bad orderId (instruments are never removed).
  const instrument = str('instrument');
  if (instrument !== undefined && !symbols.has(instrument))
    throw new HttpError(
      400,
      `instrument must be a listed symbol such as BTC-PERP (GET /instruments), not ${JSON.stringify(instrument)}`,
    );
  const status = str('status');
  if (
    orders &&
    status !== undefined &&
    status !== 'open' &&
    status !== 'closed' &&
    status !== 'all'
  ) {
    throw new HttpError(400, 'status must be open, closed or all');
  }
  // An empty cursor is the first page; anything else must be a nextCursor of this read.
  const cursor = str('cursor');
  if (cursor !== undefined && cursor !== '' && !isValidCursor(kind, cursor))
    throw new HttpError(400, 'cursor must be a nextCursor returned by this endpoint');
  const orderId = str('orderId');
  if (orderId !== undefined && !(U64_RE.test(orderId) && BigInt(orderId) < 2n ** 64n))
    throw new HttpError(400, 'orderId must be a u64 decimal string');
  const cloid = str('cloid');
  if (cloid !== undefined && !CLOID_RE.test(cloid))
    throw new HttpError(400, 'cloid must be 0x and 32 hex digits');
  return {
    instrument,
    status: status as HistoryQuery['status'],
    orderId,
    cloid: cloid?.toLowerCase(),
    ...timeWindow(q),
    limit: intParam(q.limit, 'limit', 1, 500),
    cursor,
  };
}

/** An instrument as `GET /instruments` lists it (also the answer of `POST /admin/instruments`). */
export function wireInstrument(m: Market): Record<string, unknown> {
  const rate = (r: bigint) => formatDecimal(r, 18);
  const s = m.spec;
  return {
    id: s.id,
    symbol: s.symbol,
    status: m.status,
    tickSize: formatPrice(s.tickSize),
    lotSize: formatDecimal(s.lotSize, s.quantityDecimals),
    quantityDecimals: s.quantityDecimals,
    maxLeverage: s.maxLeverage / 100,
    defaultLeverage: s.defaultLeverage / 100,
    maintenanceMarginRate: rate(s.tiers[0]!.maintenanceMarginRate),
    marginTiers: s.tiers.map((t) => ({
      notionalFloor: formatCollateral(t.notionalFloor),
      maxLeverage: t.maxLeverage / 100,
      maintenanceMarginRate: rate(t.maintenanceMarginRate),
    })),
    openInterestCap: formatDecimal(s.openInterestCap, s.quantityDecimals),
    minNotional: formatCollateral(s.minNotional),
    makerFeeRate: rate(s.makerFeeRate),
    takerFeeRate: rate(s.takerFeeRate),
    funding: {
      intervalMs: s.funding.intervalMs,
      interestRate8h: rate(s.funding.interestRate8h),
      premiumClamp: rate(s.funding.premiumClamp),
      capPerHour: rate(s.funding.capPerHour),
      impactNotional: formatCollateral(s.funding.impactNotional),
    },
    liquidation: {
      partialThreshold: formatCollateral(s.liquidation.partialThreshold),
      auctionDurationMs: s.liquidation.auctionDurationMs,
      feeRate: rate(s.liquidation.feeRate),
    },
    // The same three under engine-rules section 2's names (protocol.md section 7 lists the
    // instrument by those); POST /admin/instruments accepts either spelling.
    liquidationPartialThreshold: formatCollateral(s.liquidation.partialThreshold),
    liquidationAuctionDurationMs: s.liquidation.auctionDurationMs,
    liquidationFeeRate: rate(s.liquidation.feeRate),
    openInterest: formatDecimal(m.openInterest, s.quantityDecimals),
    markPrice: m.prices.mark === null ? null : formatPrice(m.prices.mark),
    indexPrice: m.prices.index === null ? null : formatPrice(m.prices.index),
  };
}

/**
 * The required `instrument` query parameter of a market read: 400 when it is missing or no
 * string, 404 when no listed instrument has that symbol.
 */
function listedInstrument(
  ctx: VenueContext,
  q: Record<string, unknown>,
): { readonly instrument: string; readonly market: Market } {
  const instrument = once(q.instrument, 'instrument');
  if (typeof instrument !== 'string' || instrument === '')
    throw new HttpError(400, 'instrument is required (a symbol such as BTC-PERP)');
  const state = ctx.host.state;
  const id = state.symbols.get(instrument);
  const market = id === undefined ? undefined : state.markets.get(id);
  if (market === undefined) throw new HttpError(404, `unknown instrument ${showValue(instrument)}`);
  return { instrument, market };
}

/** Registers the public reads under the `/api` prefix of `app`. */
export function registerPublicRoutes(app: FastifyInstance, ctx: VenueContext): void {
  const limited = (req: FastifyRequest, reply: FastifyReply): void =>
    chargeAddress(ctx, req, reply);

  // Every public read counts toward the per-IP budget (protocol.md section 5), these two included.
  app.get('/api/time', async (req, reply) => {
    limited(req, reply);
    return { serverTime: ctx.host.now() };
  });

  app.get('/api/network', async (req, reply) => {
    limited(req, reply);
    return {
      network: ctx.config.network,
      chainId: chainIdOf(ctx.config.network),
      vault: {
        name: ctx.config.vault.name,
        version: '1',
        address: ctx.config.vault.address.toLowerCase(),
      },
      token: {
        name: ctx.config.token.name,
        version: tokenVersionOf(ctx.config.network),
        address: ctx.config.token.address.toLowerCase(),
        decimals: ctx.config.token.decimals,
      },
    };
  });

  app.get('/api/instruments', async (req, reply) => {
    limited(req, reply);
    const state = ctx.host.state;
    return { instruments: state.markets.values().map(wireInstrument) };
  });

  // Candle history (research 6.6: "history comes from REST"): the closed candles and the open
  // one, oldest first, as the market-data socket sends them (without `type`).
  app.get('/api/candles', async (req, reply) => {
    limited(req, reply);
    const q = req.query as Record<string, unknown>;
    const { instrument } = listedInstrument(ctx, q);
    const interval = once(q.interval, 'interval');
    if (typeof interval !== 'string' || !isCandleInterval(interval))
      throw new HttpError(400, `interval must be one of ${INTERVALS.join(' ')}`);
    const { startTime, endTime } = timeWindow(q);
    const limit = intParam(q.limit, 'limit', 1, 1_000) ?? 500;
    const candles = ctx.marketData.candles(instrument, interval, startTime, endTime, limit) ?? [];
    return { instrument, interval, candles };
  });

  // Funding-rate history (our extension, docs/protocol-decisions.md): the instrument's funding
  // settlements, scheduled and the operator's, oldest first and windowed as `/api/candles`.
  app.get('/api/funding', async (req, reply) => {
    limited(req, reply);
    const q = req.query as Record<string, unknown>;
    const { instrument, market } = listedInstrument(ctx, q);
    const { startTime, endTime } = timeWindow(q);
    const limit = intParam(q.limit, 'limit', 1, 1_000) ?? 500;
    const funding = ctx.history.settlements(market.spec.id, { startTime, endTime, limit });
    return { instrument, funding };
  });

  // Recent public prints (our extension, docs/protocol-decisions.md): the newest first, as the
  // market-data `trades` channel sends them (without `type`); busted prints are left out. The
  // venue keeps the last 1,000 per instrument (`DEFAULT_TRADE_TAPE`), the largest `limit`.
  app.get('/api/trades', async (req, reply) => {
    limited(req, reply);
    const q = req.query as Record<string, unknown>;
    const { instrument } = listedInstrument(ctx, q);
    const limit = intParam(q.limit, 'limit', 1, DEFAULT_TRADE_TAPE) ?? 100;
    const trades = ctx.marketData.trades(instrument, limit) ?? [];
    return { instrument, trades };
  });

  // The top of one instrument's book, as the market-data `orderbook` channel sends it (without
  // `type`): a client that starts from REST gets the same `seq` and levels the socket would.
  app.get('/api/orderbook', async (req, reply) => {
    limited(req, reply);
    const q = req.query as Record<string, unknown>;
    const { market } = listedInstrument(ctx, q);
    // The socket's depths and default; anything else is refused, not rounded to a depth.
    const depthParam = once(q.depth, 'depth');
    const depth =
      depthParam === undefined
        ? DEFAULT_BOOK_DEPTH
        : BOOK_DEPTHS.find((d) => String(d) === depthParam);
    if (depth === undefined)
      throw new HttpError(400, `depth must be one of ${BOOK_DEPTHS.join(', ')}`);
    const { type: _type, ...book } = orderBookSnapshot(market, depth, ctx.host.now());
    return book;
  });

  // Every instrument's ticker, as the market-data `tickers` channel sends it.
  app.get('/api/tickers', async (req, reply) => {
    limited(req, reply);
    return { time: ctx.host.now(), tickers: ctx.marketData.tickers() };
  });

  app.get('/api/account_summary', async (req, reply) => {
    limited(req, reply);
    const wallet = walletParam((req.query as Record<string, unknown>).wallet);
    const summary = accountSummary(ctx.host.state, wallet, ctx.host.now());
    if (summary === undefined)
      throw new HttpError(404, `ACCOUNT_NOT_FOUND: no trading account for ${wallet}`);
    return summary;
  });

  app.get('/api/user/access-status/:walletAddress', async (req, reply) => {
    limited(req, reply);
    const wallet = walletParam(
      (req.params as Record<string, unknown>).walletAddress,
      'walletAddress',
    );
    return { hasAppAccess: hasAppAccess(ctx.host.state, wallet) };
  });

  app.get('/api/historic/orders', async (req, reply) => {
    limited(req, reply);
    const q = req.query as Record<string, unknown>;
    const wallet = walletParam(q.wallet);
    const page = ctx.history.orders(
      wallet,
      historyQuery(q, 'orders', ctx.host.state.symbols),
      ctx.host.now(),
    );
    return { orders: page.rows, nextCursor: page.nextCursor };
  });

  const trades = async (req: FastifyRequest, reply: FastifyReply) => {
    limited(req, reply);
    const q = req.query as Record<string, unknown>;
    const wallet = walletParam(q.wallet);
    const page = ctx.history.trades(
      wallet,
      historyQuery(q, 'trades', ctx.host.state.symbols),
      ctx.host.now(),
    );
    return { trades: page.rows, nextCursor: page.nextCursor };
  };
  app.get('/api/account/trades', trades);
  app.get('/api/historic/trades', async (req, reply) => {
    reply.header('Deprecation', 'true');
    reply.header('Link', '</api/account/trades>; rel="successor-version"');
    return trades(req, reply);
  });

  // The account's funding payments (our extension, docs/protocol-decisions.md): its `Funding`
  // reports, paged as `/account/trades` (newest first, cursor, limit 1-500, the last 7 days by
  // default), the window on `fundingTime`; `instrument` filters, `orderId`, `cloid` and `status`
  // are refused.
  app.get('/api/account/funding', async (req, reply) => {
    limited(req, reply);
    const q = req.query as Record<string, unknown>;
    const wallet = walletParam(q.wallet);
    const page = ctx.history.funding(
      wallet,
      historyQuery(q, 'funding', ctx.host.state.symbols),
      ctx.host.now(),
    );
    return { funding: page.rows, nextCursor: page.nextCursor };
  });

  app.get('/api/chain/token/:wallet', async (req, reply) => {
    limited(req, reply);
    const wallet = walletParam((req.params as Record<string, unknown>).wallet);
    const [balance, nonce] = await Promise.all([
      ctx.chain.balanceOf(wallet),
      ctx.chain.permitNonce(wallet),
    ]);
    return { balance: formatCollateral(balance), nonce: nonce.toString() };
  });
}
