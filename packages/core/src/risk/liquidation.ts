/**
 * Liquidation (engine-rules section 7): detection after every command that can move equity, the
 * market step through the book bounded by the bankruptcy price, the liquidation auction, ADL at
 * the bankruptcy price, the liquidation fee and deficits through the insurance fund.
 *
 * Scopes: the cross scope (every cross position and the cross pool) or one market's isolated
 * scope. Everything here reads and writes only the liquidated scope's pool and positions, so an
 * isolated liquidation never touches the cross pool or another isolated pool.
 *
 * Bankruptcy price of a position in a scope of equity `A` (others' marks fixed): the scope's
 * equity is shared among its positions by maintenance margin, `w = MM_k / sum MM`, and
 * `P_k = M_k - A x w / s_k`; for a single position this is the rules' `M - A / s`, and closing
 * every position at its `P_k` leaves the scope at exactly zero (dYdX's `TNC x DMMR / TMMR`).
 *
 * Deficits (rule 7.5): whenever a liquidated scope still holding positions is about to be
 * deleveraged with equity below zero (after the market step, which covers a scope already
 * underwater at detection, or when an auction ends), the insurance fund first pays as much of the
 * deficit as it holds. The bankruptcy price is then recomputed against the restored equity, so
 * the covered loss never reaches an ADL counterparty (fully covered: the bankruptcy price is the
 * mark); only what the fund could not pay moves the bankruptcy price beyond the mark. The fund
 * never goes below zero.
 *
 * Choices where the rules are silent (docs/risk-engine.md):
 * - the fund pays after the market step, not before it: the book never fills beyond the
 *   bankruptcy price, so it can only shrink a deficit, and paying first would let the book fill
 *   between the mark and the old bankruptcy price with the fund's money left in the account;
 * - a scope whose equity is zero or negative after the market step (and the fund's payment)
 *   skips the auction (no claimant would pay more than the book) and goes to ADL at once;
 * - when an auction ends, its unclaimed quantity is deleveraged at the bankruptcy price as it is
 *   then (after the fund's payment, if the scope is underwater), whether or not the mark
 *   recovered meanwhile;
 * - an ADL counterparty never loses more than its scope's equity beyond closing at the mark
 *   (a capped fill leaves the rest with the liquidated scope's later fills and positions, and
 *   the position whose queue can absorb the least is deleveraged first), so ADL cannot leave a
 *   counterparty with a deficit of its own;
 * - what is left in a flat scope stays in its pool (fills never move cash between pools); a
 *   negative remainder is paid by the insurance fund as far as it holds.
 *
 * @module
 */

import { admitRequest } from '../access/admission.js';
import { leavesOf, ownSide, slotId } from '../book/levels.js';
import type { ClaimLiquidationCommand, LiquidateCommand } from '../engine/commands.js';
import type { Ctx } from '../engine/context.js';
import type {
  AuctionView,
  EngineEvent,
  Fill,
  LiquidationMethod,
  LiquidationResult,
} from '../engine/events.js';
import type {
  Account,
  Auction,
  EngineState,
  Level,
  MarginMode,
  Market,
  Position,
  Side,
  TradeLeg,
} from '../engine/types.js';
import { reject } from '../errors.js';
import { notionalScale, RATE_SCALE } from '../instruments/instrument.js';
import { type EstimateParts, estimateScope, surelyHealthy } from '../margin/estimate.js';
import { quoteAmount } from '../margin/ledger.js';
import {
  liquidationPrice,
  maintenanceExact,
  priceRational,
  sizeRational,
} from '../margin/liquidation-price.js';
import {
  accountOrders,
  availableToOpen,
  initialMargin,
  isolatedCash,
  leverageOf,
  maxLeverageProblem,
  measureScope,
  positionOf,
  restingOpenQty,
  setIsolatedCash,
  sizeOf,
  tierProblemAfter,
  valuationPrice,
} from '../margin/scope.js';
import {
  cancelOrder,
  fillRestingMaker,
  makerMarginAllows,
  makerTierAllows,
  reducibleBy,
  systemFillMakerRate,
} from '../orders/execution.js';
import { reconcileScopes } from '../orders/managed.js';
import { formatCollateral, formatDecimal, formatPrice } from '../units/decimal.js';
import {
  type Rational,
  radd,
  ratio,
  rcmp,
  rdiv,
  rmul,
  rsub,
  toFixedHalfEven,
} from '../units/rational.js';
import { divCeil, divFloor } from '../units/rounding.js';
import { isLiquidatable, scopeInAuction, scopePositions, scopeRisk } from './health.js';
import { applyTradedLeg, recordTrade } from './trades.js';

const PRICE_ONE = 10n ** 18n;
/** Share of a position closed per market step above the partial threshold: 20%. */
const PARTIAL_NUM = 1n;
const PARTIAL_DEN = 5n;
/** Guard against a liquidation loop that never settles (a bug, not a market state). */
const MAX_SWEEP_STEPS = 1_000_000;

/** What the reports of one liquidation repeat: the mark and liquidation price when triggered. */
interface TriggerInfo {
  readonly markPrice: bigint;
  readonly liquidationPrice: bigint | null;
}

type TriggerMap = Map<number, TriggerInfo>;

// ---- prices -------------------------------------------------------------------------------

function abs(x: bigint): bigint {
  return x < 0n ? -x : x;
}

/** Exact equity (USD) and per-position exact maintenance margin of a scope. */
function scopeExact(
  state: EngineState,
  account: Account,
  mode: MarginMode,
  market: number,
): {
  equity: Rational;
  mm: Map<Position, Rational>;
  totalMm: Rational;
  notional: Map<Position, Rational>;
  totalNotional: Rational;
} {
  const cash = mode === 'Cross' ? account.crossCash : isolatedCash(account, market);
  let equity = ratio(cash, 1_000_000n);
  let totalMm = ratio(0n);
  let totalNotional = ratio(0n);
  const mm = new Map<Position, Rational>();
  const notional = new Map<Position, Rational>();
  for (const p of scopePositions(account, mode, market)) {
    const m = state.markets.get(p.market)!;
    const mark = priceRational(valuationPrice(m)!);
    const s = sizeRational(m.spec, p.size);
    equity = radd(equity, rmul(s, mark));
    const k = maintenanceExact(m.spec, p.size, mark);
    mm.set(p, k);
    totalMm = radd(totalMm, k);
    const n = rmul(sizeRational(m.spec, abs(p.size)), mark);
    notional.set(p, n);
    totalNotional = radd(totalNotional, n);
  }
  return { equity, mm, totalMm, notional, totalNotional };
}

/**
 * Bankruptcy price of `position` in its scope, raw (1e18), rounded for the venue: up for a long
 * (it is sold: never below), down for a short (it is bought back: never above). At least 1.
 */
export function bankruptcyRaw(
  state: EngineState,
  account: Account,
  mode: MarginMode,
  scopeMarket: number,
  position: Position,
): bigint {
  const x = scopeExact(state, account, mode, scopeMarket);
  const m = state.markets.get(position.market)!;
  const mark = priceRational(valuationPrice(m)!);
  let weight: Rational = ratio(1n);
  if (x.totalMm.num !== 0n) weight = rdiv(x.mm.get(position)!, x.totalMm);
  else if (x.totalNotional.num !== 0n) weight = rdiv(x.notional.get(position)!, x.totalNotional);
  const p = rsub(mark, rdiv(rmul(x.equity, weight), sizeRational(m.spec, position.size)));
  const raw =
    position.size > 0n ? divCeil(p.num * PRICE_ONE, p.den) : divFloor(p.num * PRICE_ONE, p.den);
  return raw > 0n ? raw : 1n;
}

function liquidationPriceRaw(state: EngineState, account: Account, p: Position): bigint | null {
  const r = liquidationPrice(state, account, p);
  return r === null ? null : toFixedHalfEven(r, 18);
}

/** Rounds a raw price to the tick: up (`up`) or down. */
function toTick(price: bigint, tick: bigint, up: boolean): bigint {
  const t = up ? divCeil(price, tick) * tick : divFloor(price, tick) * tick;
  return t > 0n ? t : tick;
}

// ---- shared fill helpers ------------------------------------------------------------------

function fillOf(
  tradeId: number,
  market: number,
  side: Side,
  mode: MarginMode,
  qty: bigint,
  price: bigint,
  quote: bigint,
  fee: bigint,
  realizedPnl: bigint,
  before: bigint,
  after: bigint,
  liquidity: 'Maker' | 'Taker',
  time: number,
): Fill {
  return {
    tradeId,
    market,
    side,
    marginMode: mode,
    quantity: qty,
    price,
    quote,
    liquidity,
    fee,
    realizedPnl,
    positionBefore: before,
    positionAfter: after,
    time,
  };
}

/**
 * The liquidation fee of a fill: `feeRate x quote`, rounded up, capped by what the scope has
 * left (never below 0). Debited from the scope's pool to the insurance fund.
 */
function chargePenalty(
  ctx: Ctx,
  address: string,
  mode: MarginMode,
  scopeMarket: number,
  spec: Market['spec'],
  quote: bigint,
): bigint {
  const rate = spec.liquidation.feeRate;
  if (rate === 0n) return 0n;
  const fee = divCeil(quote * rate, RATE_SCALE);
  const left = scopeRisk(ctx.state, ctx.account(address)!, mode, scopeMarket).equity;
  const penalty = fee < left ? fee : left > 0n ? left : 0n;
  if (penalty === 0n) return 0n;
  const account = ctx.writableAccount(address);
  if (mode === 'Cross') account.crossCash -= penalty;
  else setIsolatedCash(account, scopeMarket, isolatedCash(account, scopeMarket) - penalty);
  ctx.state.insuranceFund += penalty;
  ctx.emit({
    type: 'insurance',
    delta: penalty,
    balance: ctx.state.insuranceFund,
    reason: 'LiquidationFee',
    time: ctx.time,
  });
  return penalty;
}

/**
 * Applies the liquidated side of a system fill of signed size `signed` at `price` / `quote` to
 * the scope, charges the fee and reports it. Returns the leg for the trade record.
 */
function liquidatedLeg(
  ctx: Ctx,
  liquidationId: number,
  method: LiquidationMethod,
  address: string,
  mode: MarginMode,
  scopeMarket: number,
  market: Market,
  signed: bigint,
  price: bigint,
  quote: bigint,
  tradeId: number,
  trigger: TriggerInfo,
): TradeLeg {
  const account = ctx.writableAccount(address);
  const traded = applyTradedLeg(
    account,
    market,
    mode,
    signed,
    price,
    quote,
    0n,
    ctx.time,
    0,
    'Taker',
  );
  const leg = traded.fill;
  const penalty = chargePenalty(ctx, address, mode, scopeMarket, market.spec, quote);
  ctx.report(address, {
    kind: 'Liquidation',
    liquidationId,
    market: market.spec.id,
    marginMode: mode,
    method,
    markPrice: trigger.markPrice,
    liquidationPrice: trigger.liquidationPrice,
    penalty,
    fill: fillOf(
      tradeId,
      market.spec.id,
      signed > 0n ? 'Buy' : 'Sell',
      mode,
      abs(signed),
      price,
      quote,
      0n,
      leg.realizedPnl,
      leg.positionBefore,
      leg.positionAfter,
      'Taker',
      ctx.time,
    ),
  });
  ctx.accountChanged(address);
  ctx.positionChanged(address, market.spec.id, mode);
  // The liquidation fee is charged after the fill, so the kept leg takes it in afterwards.
  return { ...traded.trade, penalty };
}

// ---- step 1: cancel the scope's orders ------------------------------------------------------

function cancelScopeOrders(ctx: Ctx, address: string, mode: MarginMode, scopeMarket: number): void {
  const account = ctx.account(address)!;
  for (const o of accountOrders(ctx.state, account)) {
    if (o.marginMode !== mode || (mode === 'Isolated' && o.market !== scopeMarket)) continue;
    if (ctx.order(o.orderId) !== undefined) cancelOrder(ctx, o.orderId, 'Liquidation');
  }
}

/**
 * Gives back the claims `address` holds on live auctions (its cross scope is being liquidated:
 * a claim would settle into it, and its reservation would stand apart from the liquidation). The
 * claimed quantity returns to each auction, the reservation to the cross pool, and the claimant
 * gets a `LiquidationClaim` `Released` report.
 */
function releaseClaimsOf(ctx: Ctx, address: string): void {
  if (ctx.state.auctions.size === 0) return;
  const held: Auction[] = [];
  ctx.state.auctions.forEach((a) => {
    if (a.claims.some((c) => c.claimant === address)) held.push(a);
  });
  held.sort((x, y) => x.auctionId - y.auctionId);
  for (const a of held) {
    const mine = a.claims.filter((c) => c.claimant === address);
    const updated: Auction = {
      ...a,
      remaining: mine.reduce((q, c) => q + c.quantity, a.remaining),
      claims: a.claims.filter((c) => c.claimant !== address),
    };
    ctx.state.auctions = ctx.state.auctions.set(ctx.edit, a.auctionId, updated);
    const claimant = ctx.writableAccount(address);
    for (const c of mine) {
      claimant.claimReserve -= c.reserve;
      ctx.report(address, {
        kind: 'LiquidationClaim',
        auctionId: a.auctionId,
        market: a.market,
        status: 'Released',
        quantity: c.quantity,
        price: c.price,
        reserve: c.reserve,
      });
    }
    ctx.emit({ type: 'auction', auction: auctionView(updated, ctx.time, 'Live') });
  }
}

// ---- step 2: market step ----------------------------------------------------------------------

/** Resting makers that cross `bound`, best first, other accounts only, about `want` of them. */
function crossingMakers(
  ctx: Ctx,
  levels: readonly Level[],
  sell: boolean,
  bound: bigint,
  address: string,
  want: bigint,
): number[] {
  const out: number[] = [];
  let total = 0n;
  for (let li = levels.length - 1; li >= 0 && total < want; li--) {
    const level = levels[li] as Level;
    if (sell ? level.price < bound : level.price > bound) break;
    for (let slot = level.head; slot < level.tail && total < want; slot++) {
      const id = slotId(level, slot);
      if (id === 0) continue;
      const o = ctx.order(id)!;
      if (o.account === address) continue;
      out.push(id);
      total += leavesOf(o);
    }
  }
  return out;
}

/**
 * Closes up to `qty` of the scope's position in `marketId` against the book, never beyond
 * `bound` (the bankruptcy price on the tick). Returns the quantity filled.
 */
function bookStep(
  ctx: Ctx,
  liquidationId: number,
  address: string,
  mode: MarginMode,
  scopeMarket: number,
  marketId: number,
  qty: bigint,
  bound: bigint,
  trigger: TriggerInfo,
): bigint {
  const size = sizeOf(ctx.account(address)!, marketId, mode);
  const sell = size > 0n;
  let remaining = qty;
  for (;;) {
    const market = ctx.writableMarket(marketId);
    const levels = ownSide(market, sell); // selling hits the bids
    const ids = crossingMakers(ctx, levels, sell, bound, address, remaining);
    if (ids.length === 0) break;
    let progress = false;
    for (const id of ids) {
      if (remaining === 0n) break;
      const maker = ctx.order(id);
      if (maker === undefined || maker.slot < 0) continue;
      let q = leavesOf(maker) < remaining ? leavesOf(maker) : remaining;
      if (maker.reduceOnly) {
        const room = reducibleBy(ctx, maker);
        if (room === 0n) {
          const s = sizeOf(ctx.account(maker.account)!, maker.market, maker.marginMode);
          cancelOrder(ctx, id, s === 0n ? 'PositionClosed' : 'ReduceOnly');
          // Off the book now: the next round reaches the makers behind it.
          progress = true;
          continue;
        }
        if (room < q) q = room;
      }
      const m = ctx.writableMarket(marketId);
      if (!makerTierAllows(ctx, m, maker, q)) {
        cancelOrder(ctx, id, 'MaxLeverage');
        progress = true;
        continue;
      }
      if (
        ctx.state.settings.marginChecks &&
        !makerMarginAllows(ctx, m, maker, q, systemFillMakerRate(m.spec))
      ) {
        cancelOrder(ctx, id, 'InsufficientMargin');
        progress = true;
        continue;
      }
      const tradeId = ctx.nextTradeId();
      const made = fillRestingMaker(ctx, m, id, q, tradeId);
      const leg = liquidatedLeg(
        ctx,
        liquidationId,
        'Market',
        address,
        mode,
        scopeMarket,
        m,
        -made.makerSigned,
        made.price,
        made.quote,
        tradeId,
        trigger,
      );
      recordTrade(ctx, {
        tradeId,
        market: marketId,
        time: ctx.time,
        source: 'Liquidation',
        price: made.price,
        quantity: q,
        quote: made.quote,
        legs: [made.leg, leg],
        busted: false,
      });
      ctx.emit({
        type: 'trade',
        market: marketId,
        tradeId,
        price: made.price,
        quantity: q,
        takerSide: sell ? 'Sell' : 'Buy',
        time: ctx.time,
      });
      remaining -= q;
      progress = true;
    }
    if (!progress || remaining === 0n) break;
  }
  reconcileScopes(ctx);
  return qty - remaining;
}

/** Quantity of one market step: 20% (up to the lot) above the partial threshold, else all. */
function stepQuantity(market: Market, size: bigint): bigint {
  const a = abs(size);
  const spec = market.spec;
  const notional = divCeil(a * valuationPrice(market)!, notionalScale(spec));
  if (notional <= spec.liquidation.partialThreshold) return a;
  // 20% of the position rounded up to the lot, in one exact division (never truncated first).
  const part = divCeil(a * PARTIAL_NUM, PARTIAL_DEN * spec.lotSize) * spec.lotSize;
  return part <= 0n ? spec.lotSize : part < a ? part : a;
}

// ---- step 3: auctions ---------------------------------------------------------------------------

/** Current price of an auction at `time`, raw, rounded for the venue. */
export function auctionPrice(a: Auction, time: number): bigint {
  if (time >= a.endTime) return a.endPrice;
  const elapsed = BigInt(time > a.startTime ? time - a.startTime : 0);
  const duration = BigInt(a.endTime - a.startTime);
  const diff = a.endPrice - a.startPrice;
  // A buying claimant pays more when rounded up; a selling claimant receives less rounded down.
  return a.side === 'Buy'
    ? a.startPrice + divCeil(diff * elapsed, duration)
    : a.startPrice + divFloor(diff * elapsed, duration);
}

/** An auction as the market-data channel shows it. */
export function auctionView(a: Auction, time: number, status: 'Live' | 'Ended'): AuctionView {
  return {
    auctionId: a.auctionId,
    market: a.market,
    side: a.side,
    remaining: a.remaining,
    price: auctionPrice(a, time),
    startPrice: a.startPrice,
    endPrice: a.endPrice,
    endTime: a.endTime,
    status,
  };
}

/** The live auctions of a state, in id order, priced at the state's time. */
export function liveAuctions(state: EngineState): AuctionView[] {
  const out: AuctionView[] = [];
  state.auctions.forEach((a) => {
    out.push(auctionView(a, state.time, 'Live'));
  });
  return out;
}

/** The auction changes (start, claim, end) among a batch's events, in order. */
export function auctionEvents(events: readonly EngineEvent[], _state?: EngineState): AuctionView[] {
  const out: AuctionView[] = [];
  for (const e of events) if (e.type === 'auction') out.push(e.auction);
  return out;
}

/** Forced auctions are remembered apart from their record shape (rare, operator only). */
function startAuctions(
  ctx: Ctx,
  liquidationId: number,
  address: string,
  mode: MarginMode,
  scopeMarket: number,
  triggers: TriggerMap,
  forced: boolean,
  atMark: boolean,
): void {
  const account = ctx.account(address)!;
  const positions = scopePositions(account, mode, scopeMarket).sort((a, b) => a.market - b.market);
  for (const p of positions) {
    const market = ctx.market(p.market)!;
    const auctionId = ctx.nextAuctionId();
    const mark = valuationPrice(market)!;
    // A forced auction of a healthy scope stays at the mark: one that ran to the bankruptcy price
    // would sell a solvent account's equity to its claimants (engine-rules 7.5: what remains
    // stays with the account).
    const end = atMark ? mark : bankruptcyRaw(ctx.state, account, mode, scopeMarket, p);
    const t = triggers.get(p.market) ?? { markPrice: mark, liquidationPrice: null };
    const auction: Auction = {
      auctionId,
      liquidationId,
      account: address,
      market: p.market,
      mode,
      side: p.size > 0n ? 'Buy' : 'Sell',
      quantity: abs(p.size),
      remaining: abs(p.size),
      startPrice: mark,
      endPrice: end,
      startTime: ctx.time,
      endTime: ctx.time + market.spec.liquidation.auctionDurationMs,
      claims: [],
      markPrice: t.markPrice,
      liquidationPrice: t.liquidationPrice,
      forced,
    };
    ctx.state.auctions = ctx.state.auctions.set(ctx.edit, auctionId, auction);
    ctx.emit({ type: 'auction', auction: auctionView(auction, ctx.time, 'Live') });
  }
  // Nothing may leave the scope while it is auctioned (margin/commands.ts): its withdrawable or
  // transferable drops to 0, which a forced auction of a healthy scope changes.
  if (positions.length > 0) ctx.accountChanged(address);
}

/** Settles an auction: its claims fill at their prices, the unclaimed rest goes to ADL. */
export function settleAuction(ctx: Ctx, auctionId: number): void {
  const a = ctx.state.auctions.get(auctionId)!;
  ctx.state.auctions = ctx.state.auctions.delete(ctx.edit, auctionId);
  const trigger: TriggerInfo = { markPrice: a.markPrice, liquidationPrice: a.liquidationPrice };
  const scopeMarket = a.mode === 'Cross' ? 0 : a.market;
  for (const claim of a.claims) {
    const claimant = ctx.writableAccount(claim.claimant);
    claimant.claimReserve -= claim.reserve;
    const size = sizeOf(ctx.account(a.account)!, a.market, a.mode);
    const closable = a.side === 'Buy' ? (size > 0n ? size : 0n) : size < 0n ? -size : 0n;
    const q = claim.quantity < closable ? claim.quantity : closable;
    if (q === 0n) {
      ctx.report(claim.claimant, {
        kind: 'LiquidationClaim',
        auctionId,
        market: a.market,
        status: 'Released',
        quantity: claim.quantity,
        price: claim.price,
        reserve: claim.reserve,
      });
      continue;
    }
    const market = ctx.writableMarket(a.market);
    const tradeId = ctx.nextTradeId();
    const quote = quoteAmount(market.spec, q, claim.price);
    const signed = a.side === 'Buy' ? q : -q;
    const w = ctx.writableAccount(claim.claimant);
    const claimed = applyTradedLeg(
      w,
      market,
      'Cross',
      signed,
      claim.price,
      quote,
      0n,
      ctx.time,
      0,
      'Maker',
    );
    const leg = claimed.fill;
    // `quantity` is the claim's, as in a `Released` report; the fill is what settled, less than
    // it when the position shrank during the auction (a bust, or ADL as a counterparty), so
    // the claimant sees what of its claim did not settle.
    ctx.report(claim.claimant, {
      kind: 'LiquidationClaim',
      auctionId,
      market: a.market,
      status: 'Settled',
      quantity: claim.quantity,
      price: claim.price,
      reserve: claim.reserve,
      fill: fillOf(
        tradeId,
        a.market,
        a.side,
        'Cross',
        q,
        claim.price,
        quote,
        0n,
        leg.realizedPnl,
        leg.positionBefore,
        leg.positionAfter,
        'Maker',
        ctx.time,
      ),
    });
    ctx.accountChanged(claim.claimant);
    ctx.positionChanged(claim.claimant, a.market, 'Cross');
    const liq = liquidatedLeg(
      ctx,
      a.liquidationId,
      'Auction',
      a.account,
      a.mode,
      scopeMarket,
      market,
      -signed,
      claim.price,
      quote,
      tradeId,
      trigger,
    );
    recordTrade(ctx, {
      tradeId,
      market: a.market,
      time: ctx.time,
      source: 'Auction',
      price: claim.price,
      quantity: q,
      quote,
      legs: [claimed.trade, liq],
      busted: false,
    });
  }
  ctx.emit({ type: 'auction', auction: auctionView(a, ctx.time, 'Ended') });
  // The scope may give out margin again (withdrawable, transferable): push it, claims or not.
  ctx.accountChanged(a.account);
  const account = ctx.account(a.account)!;
  const position = positionOf(account, a.market, a.mode);
  // Only the position the auction offered goes to ADL: one a bust flipped to the other side
  // meanwhile was never liquidated.
  const offered =
    position !== undefined && (a.side === 'Buy' ? position.size > 0n : position.size < 0n);
  // A scope healthy again (margin added during the auction, or the mark recovered) keeps what
  // was not claimed, as the market step stops once the scope is healthy (rule 7.2): ADL is the
  // last resort against a deficit, not a penalty. A forced liquidation goes on.
  const liquidatable = isLiquidatable(scopeRisk(ctx.state, account, a.mode, scopeMarket));
  const healthy = !a.forced && !liquidatable;
  if (offered && !healthy && a.remaining > 0n) {
    // Step 4: what is left unclaimed closes at the bankruptcy price (as it is now), after the
    // insurance fund has paid what it can of a deficit the mark or the claims left (rule 7.5).
    // A forced liquidation of a scope that is healthy closes it at the mark instead: at the
    // bankruptcy price ADL would hand a solvent account's equity to its counterparties.
    absorbDeficit(ctx, a.account, a.mode, scopeMarket);
    const q = a.remaining < abs(position.size) ? a.remaining : abs(position.size);
    deleverage(
      ctx,
      a.liquidationId,
      a.account,
      a.mode,
      scopeMarket,
      a.market,
      q,
      trigger,
      !liquidatable,
    );
  }
  reconcileScopes(ctx);
  coverDeficit(ctx, a.account, a.mode, scopeMarket);
}

/**
 * Settles every auction that ends at or before `until`, earliest end first (by id within one
 * end time); returns whether any did.
 */
export function settleAuctionsDue(ctx: Ctx, until: number = ctx.time): boolean {
  if (ctx.state.auctions.size === 0) return false;
  const due: { id: number; end: number }[] = [];
  ctx.state.auctions.forEach((a, id) => {
    if (a.endTime <= until) due.push({ id, end: a.endTime });
  });
  due.sort((x, y) => x.end - y.end || x.id - y.id);
  for (const { id } of due) settleAuction(ctx, id);
  return due.length > 0;
}

/** The earliest auction end, ms, or `null`. */
export function nextAuctionEnd(state: EngineState): number | null {
  if (state.auctions.size === 0) return null;
  let t: number | null = null;
  state.auctions.forEach((a) => {
    if (t === null || a.endTime < t) t = a.endTime;
  });
  return t;
}

/**
 * The leverage caps of a claim, as for an order that opens (research 1.2): the claimant's cross
 * leverage may not be above the instrument's maximum, nor above the maximum of the margin tier
 * its position reaches at the mark once this claim, its earlier claims of the market's auctions
 * on that side and its resting orders of that side have filled.
 */
function claimLeverageProblem(
  ctx: Ctx,
  account: Account,
  auction: Auction,
  quantity: bigint,
  leverage: number,
): string | undefined {
  const market = ctx.market(auction.market)!;
  const spec = market.spec;
  const buy = auction.side === 'Buy';
  let stacked = quantity + restingOpenQty(account, auction.market, 'Cross', buy);
  ctx.state.auctions.forEach((a) => {
    if (a.market !== auction.market || a.side !== auction.side) return;
    for (const c of a.claims) if (c.claimant === account.address) stacked += c.quantity;
  });
  const size = sizeOf(account, auction.market, 'Cross');
  const price = market.prices.mark ?? auctionPrice(auction, ctx.time);
  return (
    maxLeverageProblem(spec, leverage) ??
    tierProblemAfter(spec, leverage, size, buy, stacked, price)
  );
}

/** Handles `claimLiquidation` (signed 0x0b). */
export function claimLiquidation(ctx: Ctx, cmd: ClaimLiquidationCommand): void {
  // An auction that ended is a race the claimant lost, like a cancel of a filled order: it is
  // refused after admission and consumes the nonce. Only the request's own form (checked on
  // the auction's instrument while it runs) is refused without consuming it.
  const a = ctx.state.auctions.get(cmd.auctionId);
  if (
    cmd.quantity <= 0n ||
    (a !== undefined && cmd.quantity % ctx.market(a.market)!.spec.lotSize !== 0n)
  ) {
    const r = reject(
      'INVALID_ORDER_QUANTITY',
      'claim quantity must be a positive multiple of the lot size',
    );
    return ctx.fail(r.code, r.message);
  }
  if (ctx.account(cmd.account) === undefined) {
    const r = reject('ACCOUNT_NOT_FOUND', `no trading account for ${cmd.account}`);
    return ctx.fail(r.code, r.message);
  }
  if (!admitRequest(ctx, cmd.account, cmd.auth, 'order')) return;
  const refuse = (name: Parameters<typeof reject>[0], message: string): void => {
    const r = reject(name, message);
    ctx.fail(r.code, r.message, { nonceConsumed: true });
  };
  if (a === undefined)
    return refuse('INVALID_REQUEST', `no live liquidation auction ${cmd.auctionId}`);
  const market = ctx.market(a.market)!;
  const spec = market.spec;
  if (cmd.account === a.account)
    return refuse('INVALID_REQUEST', 'cannot claim your own liquidation');
  // The refusals name their figures, as an order's do: a claimant that lost a race for the
  // last lots, or whose maxPrice the path has not reached, sees what to send instead.
  if (cmd.quantity > a.remaining) {
    const qd = spec.quantityDecimals;
    return refuse(
      'INVALID_ORDER_QUANTITY',
      `claim of ${formatDecimal(cmd.quantity, qd)} exceeds the auction's remaining ${formatDecimal(a.remaining, qd)}`,
    );
  }
  const price = auctionPrice(a, ctx.time);
  if (a.side === 'Buy' ? price > cmd.maxPrice : price < cmd.maxPrice) {
    return refuse(
      'INVALID_ORDER_PRICE',
      `auction price ${formatPrice(price)} is ${a.side === 'Buy' ? 'above' : 'below'} the claim's maxPrice ${formatPrice(cmd.maxPrice)}`,
    );
  }
  // A claim settles into the claimant's cross scope: not into one that is being liquidated.
  if (scopeInAuction(ctx.state, cmd.account, 'Cross', 0)) {
    return refuse('INSUFFICIENT_MARGIN', 'your cross margin is being liquidated');
  }
  const account = ctx.account(cmd.account)!;
  const leverage = leverageOf(account, spec, 'Cross');
  const capped = claimLeverageProblem(ctx, account, a, cmd.quantity, leverage);
  if (capped !== undefined) return refuse('MAX_LEVERAGE_EXCEEDED', capped);
  const reserve = initialMargin(spec, cmd.quantity, price, leverage);
  const available =
    availableToOpen(measureScope(ctx.state, account, 'Cross', 0, undefined, true)) -
    account.claimReserve;
  if (reserve > available) {
    return refuse(
      'INSUFFICIENT_MARGIN',
      `claim needs ${formatCollateral(reserve)} of margin, cross available ${formatCollateral(available > 0n ? available : 0n)}`,
    );
  }
  // A reservation: no account-summary push (interface-spec push triggers).
  ctx.writableAccount(cmd.account).claimReserve += reserve;
  const updated: Auction = {
    ...a,
    remaining: a.remaining - cmd.quantity,
    claims: [
      ...a.claims,
      { claimant: cmd.account, quantity: cmd.quantity, price, reserve, time: ctx.time },
    ],
  };
  ctx.state.auctions = ctx.state.auctions.set(ctx.edit, a.auctionId, updated);
  ctx.emit({ type: 'auction', auction: auctionView(updated, ctx.time, 'Live') });
  if (updated.remaining === 0n) settleAuction(ctx, a.auctionId);
  ctx.emit({
    type: 'outcome',
    ok: true,
    kind: 'claim',
    auctionId: a.auctionId,
    quantity: cmd.quantity,
    price,
    seq: ctx.account(cmd.account)!.reportSeq,
  });
}

// ---- step 4: ADL --------------------------------------------------------------------------------

/** One opposite position in the ADL queue of {@link adlQueue}, with the figures it is ranked by. */
export interface AdlCandidate {
  readonly account: string;
  readonly mode: MarginMode;
  /** The position's signed size, raw quantity units. */
  readonly size: bigint;
  /** Positive unrealized PnL and positive scope equity: ranked first, by `score`. */
  readonly profitable: boolean;
  /** `pnlFactor x leverage` at the mark for a profitable position, else 0. */
  readonly score: Rational;
  /** Unrealized PnL at the mark, exact, in raw price units x raw quantity units. */
  readonly upnl: Rational;
  /** When the position was opened (ms): the older goes first on equal PnL. */
  readonly openedTime: number;
  /**
   * Another scope of the liquidated account: last in the queue, reached only when no one else
   * holds the other side, and then closed at the mark, so the liquidated scope's deficit never
   * reaches the account's other pools (interface-spec: isolated liquidation cannot touch cross
   * collateral).
   */
  readonly own: boolean;
}

function compareCandidates(a: AdlCandidate, b: AdlCandidate): number {
  if (a.own !== b.own) return a.own ? 1 : -1;
  if (a.profitable !== b.profitable) return a.profitable ? -1 : 1;
  if (a.profitable) {
    const s = rcmp(b.score, a.score);
    if (s !== 0) return s;
  }
  const u = rcmp(b.upnl, a.upnl);
  if (u !== 0) return u;
  if (a.openedTime !== b.openedTime) return a.openedTime - b.openedTime;
  if (a.account !== b.account) return a.account < b.account ? -1 : 1;
  return a.mode < b.mode ? -1 : a.mode > b.mode ? 1 : 0;
}

/**
 * The ADL queue against a liquidated position of sign `side` in `marketId`: opposite positions,
 * those with positive unrealized PnL (and positive scope equity) first by
 * `pnlFactor x leverage`, ties by larger unrealized PnL, then older; then the rest by
 * unrealized PnL (sizes sum to zero, so the queue always covers the liquidated size).
 */
export function adlQueue(
  state: EngineState,
  exclude: { account: string; mode: MarginMode },
  marketId: number,
  side: 1n | -1n,
): AdlCandidate[] {
  const market = state.markets.get(marketId)!;
  const mark = valuationPrice(market)!;
  const out: AdlCandidate[] = [];
  market.holders.forEach((_n, address) => {
    const account = state.accounts.get(address)!;
    for (const p of account.positions) {
      if (p.market !== marketId) continue;
      if (p.size === 0n || (p.size > 0n ? 1n : -1n) === side) continue;
      if (address === exclude.account && p.mode === exclude.mode) continue;
      // uPnL x entryQty in raw units: s x (M x entryQty - entryNotional).
      const upnl = ratio(p.size * (mark * p.entryQty - p.entryNotional), p.entryQty);
      const equity = scopeRisk(state, account, p.mode, p.market).equity;
      const profitable = upnl.num > 0n && equity > 0n;
      let score = ratio(0n);
      if (profitable) {
        // pnlFactor: M/E for a long, E/M for a short; leverage |s| x M / equity.
        const factor =
          p.size > 0n
            ? ratio(mark * p.entryQty, p.entryNotional)
            : ratio(p.entryNotional, mark * p.entryQty);
        const notionalMicro = ratio(abs(p.size) * mark, notionalScale(market.spec));
        score = rmul(factor, rdiv(notionalMicro, ratio(equity)));
      }
      out.push({
        account: address,
        mode: p.mode,
        size: p.size,
        profitable,
        score,
        upnl,
        openedTime: p.openedTime,
        own: address === exclude.account,
      });
    }
  });
  return out.sort(compareCandidates);
}

/**
 * What the ADL queue against `position` can absorb beyond the mark: the positive equity of the
 * opposite scopes its size would reach (a scope in several queues counts in each).
 */
function adlCapacity(
  state: EngineState,
  address: string,
  mode: MarginMode,
  position: Position,
): bigint {
  const side: 1n | -1n = position.size > 0n ? 1n : -1n;
  let need = abs(position.size);
  let total = 0n;
  for (const c of adlQueue(state, { account: address, mode }, position.market, side)) {
    if (need <= 0n) break;
    const scope = c.mode === 'Cross' ? 0 : position.market;
    const e = scopeRisk(state, state.accounts.get(c.account)!, c.mode, scope).equity;
    // The account's own other scopes absorb nothing beyond the mark (see `deleverage`).
    if (e > 0n && !c.own) total += e;
    need -= abs(c.size);
  }
  return total;
}

/**
 * Closes `qty` of the scope's position in `marketId` against the ADL queue at bankruptcy, each
 * fill capped so the counterparty loses at most its scope's equity beyond the mark.
 */
function deleverage(
  ctx: Ctx,
  liquidationId: number,
  address: string,
  mode: MarginMode,
  scopeMarket: number,
  marketId: number,
  qty: bigint,
  trigger: TriggerInfo,
  atMark = false,
): void {
  const size0 = sizeOf(ctx.account(address)!, marketId, mode);
  if (size0 === 0n || qty === 0n) return;
  const side: 1n | -1n = size0 > 0n ? 1n : -1n;
  const queue = adlQueue(ctx.state, { account: address, mode }, marketId, side);
  let remaining = qty;
  let rank = 0;
  for (const c of queue) {
    rank++;
    if (remaining === 0n) break;
    const account = ctx.account(address)!;
    const position = positionOf(account, marketId, mode);
    if (position === undefined) break;
    const q = abs(c.size) < remaining ? abs(c.size) : remaining;
    const market = ctx.writableMarket(marketId);
    let price = atMark
      ? valuationPrice(market)!
      : bankruptcyRaw(ctx.state, account, mode, scopeMarket, position);
    const scale = notionalScale(market.spec);
    // The cash leg rounds toward the liquidated scope (it must not end below zero: that would
    // be a venue deficit); the counterparty, in profit, pays the fraction.
    let quote = side > 0n ? divCeil(q * price, scale) : divFloor(q * price, scale);
    // A counterparty never loses more than its scope's equity beyond closing at the mark: ADL
    // must not leave a deficit of its own (a flat scope with negative cash that nothing would
    // cover). A capped fill leaves the rest of the deficit with the liquidated scope, so the
    // bankruptcy price of the next fill (or of the scope's next position) takes it on. The cap
    // rounds against the liquidated scope, so the counterparty cannot end below zero.
    const mark = valuationPrice(market)!;
    const counterparty = ctx.account(c.account)!;
    const cScope = c.mode === 'Cross' ? 0 : marketId;
    const cEquity = scopeRisk(ctx.state, counterparty, c.mode, cScope).equity;
    // Another scope of the liquidated account closes at the mark, losing nothing beyond it: a
    // scope's liquidation never touches the account's other pools (interface-spec: isolated
    // losses are capped at the margin committed there). What it cannot carry stays with the
    // liquidated scope, for the insurance fund and the backstop below.
    const room = c.own || cEquity <= 0n ? 0n : cEquity;
    if (side > 0n) {
      // The counterparty buys: it pays at most the mark value plus its equity.
      const most = divFloor(q * mark, scale) + room;
      if (quote > most) {
        quote = most;
        price = divFloor(most * scale, q);
      }
    } else {
      // The counterparty sells: it receives at least the mark value less its equity.
      const least = divCeil(q * mark, scale) - room;
      if (quote < least) {
        quote = least;
        price = divCeil(least * scale, q);
      }
    }
    const liquidatedSigned = side > 0n ? -q : q;
    const tradeId = ctx.nextTradeId();
    const w = ctx.writableAccount(c.account);
    const counter = applyTradedLeg(
      w,
      market,
      c.mode,
      -liquidatedSigned,
      price,
      quote,
      0n,
      ctx.time,
      0,
      'Maker',
    );
    const leg = counter.fill;
    ctx.report(c.account, {
      kind: 'ADL',
      adlId: liquidationId,
      market: marketId,
      marginMode: c.mode,
      rank,
      fill: fillOf(
        tradeId,
        marketId,
        liquidatedSigned > 0n ? 'Sell' : 'Buy',
        c.mode,
        q,
        price,
        quote,
        0n,
        leg.realizedPnl,
        leg.positionBefore,
        leg.positionAfter,
        'Maker',
        ctx.time,
      ),
    });
    ctx.accountChanged(c.account);
    ctx.positionChanged(c.account, marketId, c.mode);
    const liq = liquidatedLeg(
      ctx,
      liquidationId,
      'ADL',
      address,
      mode,
      scopeMarket,
      market,
      liquidatedSigned,
      price,
      quote,
      tradeId,
      trigger,
    );
    recordTrade(ctx, {
      tradeId,
      market: marketId,
      time: ctx.time,
      source: 'ADL',
      price,
      quantity: q,
      quote,
      legs: [counter.trade, liq],
      busted: false,
    });
    remaining -= q;
  }
  reconcileScopes(ctx);
}

/**
 * The insurance fund pays `amount` (> 0, at most its balance) into the scope's pool: an
 * `insurance` event with a negative delta, reason `Deficit`.
 */
function payFromFund(
  ctx: Ctx,
  address: string,
  mode: MarginMode,
  scopeMarket: number,
  amount: bigint,
): void {
  const w = ctx.writableAccount(address);
  if (mode === 'Cross') w.crossCash += amount;
  else setIsolatedCash(w, scopeMarket, isolatedCash(w, scopeMarket) + amount);
  ctx.state.insuranceFund -= amount;
  ctx.emit({
    type: 'insurance',
    delta: -amount,
    balance: ctx.state.insuranceFund,
    reason: 'Deficit',
    time: ctx.time,
  });
  ctx.accountChanged(address);
}

/**
 * Rule 7.5 before ADL: a scope with positions and exact equity below zero gets as much of its
 * deficit as the insurance fund holds, so the bankruptcy price, recomputed against the restored
 * equity, passes only the uncovered part to ADL counterparties (fully covered: it is the mark).
 * Returns the amount paid.
 *
 * Rounding: the payment is the exact deficit rounded down to the micro-unit, so the fund never
 * pays a fraction it does not owe; the sub-micro rest stays in the bankruptcy price, where ADL
 * already rounds toward the liquidated scope (the counterparty pays the fraction).
 */
function absorbDeficit(ctx: Ctx, address: string, mode: MarginMode, scopeMarket: number): bigint {
  const fund = ctx.state.insuranceFund;
  if (fund <= 0n) return 0n;
  const account = ctx.account(address)!;
  if (scopePositions(account, mode, scopeMarket).length === 0) return 0n;
  const { equity } = scopeExact(ctx.state, account, mode, scopeMarket);
  if (equity.num >= 0n) return 0n;
  const deficit = divFloor(-equity.num * 1_000_000n, equity.den);
  const paid = deficit < fund ? deficit : fund;
  if (paid > 0n) payFromFund(ctx, address, mode, scopeMarket, paid);
  return paid;
}

/**
 * A flat scope with negative cash (the cash legs' rounding, or a loss larger than the fund and
 * the equity of every counterparty ADL reached): the insurance fund pays it, as far as it holds;
 * then, as the last resort, the venue's fee pool (its own trading revenue) pays the rest, as far
 * as it holds, with a `backstop` event. Neither goes below zero; what both cannot pay stays in
 * the pool as the account's debt, the venue's shortfall in plain sight (docs/risk-engine.md).
 */
export function coverDeficit(
  ctx: Ctx,
  address: string,
  mode: MarginMode,
  scopeMarket: number,
): void {
  const account = ctx.account(address)!;
  if (scopePositions(account, mode, scopeMarket).length > 0) return;
  const cash = mode === 'Cross' ? account.crossCash : isolatedCash(account, scopeMarket);
  if (cash >= 0n) return;
  const fund = ctx.state.insuranceFund;
  const paid = -cash < fund ? -cash : fund;
  if (paid > 0n) payFromFund(ctx, address, mode, scopeMarket, paid);
  const owed = -cash - paid;
  if (owed === 0n) return;
  const pool = ctx.state.feePool > 0n ? ctx.state.feePool : 0n;
  const backstop = owed < pool ? owed : pool;
  if (backstop > 0n) {
    const w = ctx.writableAccount(address);
    if (mode === 'Cross') w.crossCash += backstop;
    else setIsolatedCash(w, scopeMarket, isolatedCash(w, scopeMarket) + backstop);
    ctx.state.feePool -= backstop;
    ctx.accountChanged(address);
  }
  ctx.emit({
    type: 'backstop',
    account: address,
    marginMode: mode,
    market: scopeMarket,
    amount: backstop,
    feePool: ctx.state.feePool,
    debt: owed - backstop,
    time: ctx.time,
  });
}

// ---- the process ----------------------------------------------------------------------------------

/**
 * Runs the liquidation of a scope as far as it goes within this command. `forced` (operator)
 * closes the whole scope even if it is or becomes healthy.
 */
export function liquidateScope(
  ctx: Ctx,
  address: string,
  mode: MarginMode,
  scopeMarket: number,
  manual: boolean,
  forced: boolean,
): { liquidationId: number; result: LiquidationResult } {
  const liquidationId = ctx.nextLiquidationId();
  const account0 = ctx.account(address)!;
  const risk0 = scopeRisk(ctx.state, account0, mode, scopeMarket);
  const triggers: TriggerMap = new Map();
  for (const p of scopePositions(account0, mode, scopeMarket)) {
    triggers.set(p.market, {
      markPrice: valuationPrice(ctx.market(p.market)!)!,
      liquidationPrice: liquidationPriceRaw(ctx.state, account0, p),
    });
  }
  ctx.emit({
    type: 'liquidationStarted',
    liquidationId,
    account: address,
    market: scopeMarket,
    marginMode: mode,
    manual,
    equity: risk0.equity,
    maintenanceMargin: risk0.maintenance,
    time: ctx.time,
  });
  cancelScopeOrders(ctx, address, mode, scopeMarket);
  if (mode === 'Cross') releaseClaimsOf(ctx, address);

  // Market step: largest notional first; above the partial threshold 20% per step; stop as soon
  // as the scope is healthy (unless forced) or the book has nothing left above bankruptcy.
  const exhausted = new Set<number>();
  for (;;) {
    const account = ctx.account(address)!;
    const risk = scopeRisk(ctx.state, account, mode, scopeMarket);
    if (!risk.hasPosition) break;
    if (!forced && !isLiquidatable(risk)) {
      coverDeficit(ctx, address, mode, scopeMarket);
      return { liquidationId, result: 'Healthy' };
    }
    let pick: Position | undefined;
    let pickNotional = -1n;
    for (const p of scopePositions(account, mode, scopeMarket)) {
      if (exhausted.has(p.market)) continue;
      const m = ctx.market(p.market)!;
      const n = abs(p.size) * valuationPrice(m)!;
      const scaled = n / notionalScale(m.spec);
      if (
        scaled > pickNotional ||
        (scaled === pickNotional && pick !== undefined && p.market < pick.market)
      ) {
        pick = p;
        pickNotional = scaled;
      }
    }
    if (pick === undefined) break;
    const market = ctx.market(pick.market)!;
    const qty = stepQuantity(market, pick.size);
    const bankrupt = bankruptcyRaw(ctx.state, account, mode, scopeMarket, pick);
    const bound = toTick(bankrupt, market.spec.tickSize, pick.size > 0n);
    const trigger = triggers.get(pick.market)!;
    const filled = bookStep(
      ctx,
      liquidationId,
      address,
      mode,
      scopeMarket,
      pick.market,
      qty,
      bound,
      trigger,
    );
    if (filled < qty) exhausted.add(pick.market);
  }

  const account = ctx.account(address)!;
  const risk = scopeRisk(ctx.state, account, mode, scopeMarket);
  if (!risk.hasPosition) {
    coverDeficit(ctx, address, mode, scopeMarket);
    return { liquidationId, result: 'Closed' };
  }
  if (risk.equity > 0n) {
    const atMark = forced && !isLiquidatable(risk);
    startAuctions(ctx, liquidationId, address, mode, scopeMarket, triggers, forced, atMark);
    return { liquidationId, result: 'Auction' };
  }
  // Zero or negative equity: the insurance fund pays what it can of the deficit first (rule
  // 7.5), then everything left is deleveraged at the bankruptcy price against the restored
  // equity, so counterparties absorb only the uncovered part.
  absorbDeficit(ctx, address, mode, scopeMarket);
  // The position whose counterparties can absorb the least goes first: what a capped fill
  // leaves (see `deleverage`) then moves on to the positions deleveraged after it.
  const capacity = new Map<number, bigint>();
  for (const p of scopePositions(account, mode, scopeMarket)) {
    capacity.set(p.market, adlCapacity(ctx.state, address, mode, p));
  }
  const positions = scopePositions(account, mode, scopeMarket).sort((a, b) => {
    const ca = capacity.get(a.market)!;
    const cb = capacity.get(b.market)!;
    return ca !== cb ? (ca < cb ? -1 : 1) : a.market - b.market;
  });
  for (const p of positions) {
    const size = sizeOf(ctx.account(address)!, p.market, mode);
    deleverage(
      ctx,
      liquidationId,
      address,
      mode,
      scopeMarket,
      p.market,
      abs(size),
      triggers.get(p.market)!,
    );
  }
  coverDeficit(ctx, address, mode, scopeMarket);
  return { liquidationId, result: 'Closed' };
}

/** The liquidation check's estimate: maintenance margin, no order holds (they do not count). */
const LIQUIDATION_PARTS: EstimateParts = { maintenance: true, holds: false };

/** Checks every scope of an account and liquidates those below maintenance margin. */
function checkAccount(ctx: Ctx, address: string): void {
  const account = ctx.account(address);
  if (account === undefined || account.positions.length === 0) return;
  let cross = false;
  const isolated: number[] = [];
  for (const p of account.positions) {
    if (p.mode === 'Cross') cross = true;
    else isolated.push(p.market);
  }
  // Far from the boundary a float estimate with an error bound shows a scope healthy
  // (margin/estimate.ts); near it, the exact figures decide.
  if (cross && !scopeInAuction(ctx.state, address, 'Cross', 0)) {
    if (
      !surelyHealthy(estimateScope(ctx.state, account, 'Cross', 0, undefined, LIQUIDATION_PARTS)) &&
      isLiquidatable(scopeRisk(ctx.state, account, 'Cross', 0))
    ) {
      liquidateScope(ctx, address, 'Cross', 0, false, false);
    }
  }
  for (const m of isolated.sort((a, b) => a - b)) {
    const a = ctx.account(address)!;
    if (scopeInAuction(ctx.state, address, 'Isolated', m)) continue;
    if (
      !surelyHealthy(estimateScope(ctx.state, a, 'Isolated', m, undefined, LIQUIDATION_PARTS)) &&
      isLiquidatable(scopeRisk(ctx.state, a, 'Isolated', m))
    ) {
      liquidateScope(ctx, address, 'Isolated', m, false, false);
    }
  }
}

/**
 * Liquidation checks at the end of a command: every account the command touched, and every
 * holder of a market whose mark moved; accounts touched by a liquidation are checked again.
 */
export function riskSweep(ctx: Ctx): void {
  const moved = ctx.movedMarkets;
  const changed = ctx.changedAccounts();
  if (moved.length === 0 && changed.length === 0) return;
  // Book-only simulations run without margin: nothing to liquidate.
  if (!ctx.state.settings.marginChecks) return;
  const queue: string[] = changed.slice();
  const pending = new Set<string>(queue);
  for (const id of moved) {
    const m = ctx.market(id);
    if (m === undefined) continue;
    for (const a of m.holders.keys().sort()) {
      if (!pending.has(a)) {
        pending.add(a);
        queue.push(a);
      }
    }
  }
  let steps = 0;
  for (let i = 0; i < queue.length; i++) {
    const address = queue[i] as string;
    pending.delete(address);
    const start = ctx.events.length;
    checkAccount(ctx, address);
    // Everyone a liquidation touched is checked again, the liquidated account too (ADL can hit
    // its other scopes after they were checked).
    for (let k = start; k < ctx.events.length; k++) {
      const e = ctx.events[k]!;
      if (e.type !== 'executionReport' || pending.has(e.account)) continue;
      pending.add(e.account);
      queue.push(e.account);
    }
    if (++steps > MAX_SWEEP_STEPS) throw new Error('liquidation sweep does not settle');
  }
}

/** Handles `liquidate` (operator, `POST /admin/liquidate`). */
export function liquidateCommand(ctx: Ctx, cmd: LiquidateCommand): void {
  const account = ctx.account(cmd.account);
  if (account === undefined) {
    const r = reject('ACCOUNT_NOT_FOUND', `no trading account for ${cmd.account}`);
    return ctx.fail(r.code, r.message);
  }
  const scopeMarket = cmd.mode === 'Cross' ? 0 : cmd.market;
  if (cmd.mode === 'Isolated' && ctx.market(scopeMarket) === undefined) {
    const r = reject('INVALID_REQUEST', `unknown market ${cmd.market}`);
    return ctx.fail(r.code, r.message);
  }
  const risk = scopeRisk(ctx.state, account, cmd.mode, scopeMarket);
  if (!risk.hasPosition) {
    const r = reject('INVALID_REQUEST', 'the scope has no open position');
    return ctx.fail(r.code, r.message);
  }
  if (scopeInAuction(ctx.state, cmd.account, cmd.mode, scopeMarket)) {
    const r = reject('INVALID_REQUEST', 'the scope is already being liquidated');
    return ctx.fail(r.code, r.message);
  }
  const liquidatable = isLiquidatable(risk);
  if (!liquidatable && cmd.force !== true) {
    const r = reject(
      'INVALID_REQUEST',
      `the scope is not liquidatable: equity ${risk.equity} >= maintenance margin ${risk.maintenance} (micro-units)`,
    );
    return ctx.fail(r.code, r.message);
  }
  const { liquidationId, result } = liquidateScope(
    ctx,
    cmd.account,
    cmd.mode,
    scopeMarket,
    true,
    !liquidatable,
  );
  ctx.emit({
    type: 'outcome',
    ok: true,
    kind: 'liquidation',
    liquidationId,
    account: cmd.account,
    market: scopeMarket,
    marginMode: cmd.mode,
    result,
  });
}
