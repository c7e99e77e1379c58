/**
 * The reducer: the only way engine state changes. `reduce(state, command)` returns a new state
 * and the command's events and never mutates its input; `reduceAll` does the same for a batch
 * and pays each copy-on-write copy once per batch.
 *
 * @module
 */

import { authenticate, pruneNonces } from '../access/admission.js';
import { applyReferral, createReferralCode, revokeReferralCode } from '../access/referral.js';
import { InvariantError, reject } from '../errors.js';
import {
  deposit,
  openAccount,
  settle,
  transferMargin,
  updateLeverage,
  withdraw,
} from '../margin/commands.js';
import { cancelAllCommand, cancelOrderCommand } from '../orders/cancel.js';
import { pruneCloids } from '../orders/cloids.js';
import { latestOrder, placeOrder } from '../orders/place.js';
import { replaceOrderCommand } from '../orders/replace.js';
import { expireDue, fireArmed } from '../orders/trigger.js';
import { bustTrade } from '../risk/bust.js';
import { settleFundingDue, settleFundingNow } from '../risk/funding.js';
import {
  claimLiquidation,
  liquidateCommand,
  riskSweep,
  settleAuctionsDue,
} from '../risk/liquidation.js';
import { pruneTrades } from '../risk/trades.js';
import { feePayout, insuranceTransfer } from '../risk/venue-funds.js';
import { commandShapeProblem } from './command-shape.js';
import type { Command } from './commands.js';
import { Ctx } from './context.js';
import type { EngineEvent, Outcome } from './events.js';
import { oracle, setInstrument, setMarketStatus } from './markets.js';
import { declareRules } from './rules.js';
import { nextWakeTime } from './schedule.js';
import type { EngineState } from './types.js';
import { setVenueSettings } from './venue-settings.js';

/** The result of one command. */
export interface ReduceResult {
  /** The next state; the input object itself when the command changed nothing. */
  readonly state: EngineState;
  readonly events: EngineEvent[];
}

/** The result of a batch: the final state and each command's events, in order. */
export interface BatchResult {
  readonly state: EngineState;
  readonly events: EngineEvent[][];
  /**
   * Per command, whether it changed the state. Replaying exactly the commands that did
   * reproduces the state: a journal needs to keep only those.
   */
  readonly changed: boolean[];
}

function dispatch(ctx: Ctx, cmd: Command): void {
  switch (cmd.type) {
    case 'placeOrder':
      return placeOrder(ctx, cmd);
    case 'cancelOrder':
      return cancelOrderCommand(ctx, cmd);
    case 'replaceOrder':
      return replaceOrderCommand(ctx, cmd);
    case 'cancelAll':
      return cancelAllCommand(ctx, cmd);
    case 'oracle':
      return oracle(ctx, cmd);
    case 'setInstrument':
      return setInstrument(ctx, cmd);
    case 'setMarketStatus':
      return setMarketStatus(ctx, cmd);
    case 'openAccount':
      return openAccount(ctx, cmd);
    case 'deposit':
      return deposit(ctx, cmd);
    case 'settleDeposit':
    case 'settleWithdrawal':
      return settle(ctx, cmd);
    case 'withdraw':
      return withdraw(ctx, cmd);
    case 'transferMargin':
      return transferMargin(ctx, cmd);
    case 'updateLeverage':
      return updateLeverage(ctx, cmd);
    case 'createReferralCode':
      return createReferralCode(ctx, cmd);
    case 'revokeReferralCode':
      return revokeReferralCode(ctx, cmd);
    case 'applyReferral':
      return applyReferral(ctx, cmd);
    case 'authenticate':
      return authenticate(ctx, cmd);
    case 'tick':
      ctx.emit({ type: 'outcome', ok: true, kind: 'done' });
      return;
    case 'declareRules':
      return declareRules(ctx, cmd);
    case 'settleFunding':
      return settleFunding(ctx, cmd.market);
    case 'liquidate':
      return liquidateCommand(ctx, cmd);
    case 'claimLiquidation':
      return claimLiquidation(ctx, cmd);
    case 'bustTrade':
      return bustTrade(ctx, cmd);
    case 'insuranceTransfer':
      return insuranceTransfer(ctx, cmd);
    case 'feePayout':
      return feePayout(ctx, cmd);
    case 'setVenueSettings':
      return setVenueSettings(ctx, cmd);
    default: {
      const never: never = cmd;
      throw new InvariantError(`unknown command ${JSON.stringify(never)}`);
    }
  }
}

function settleFunding(ctx: Ctx, market: number | undefined): void {
  if (market !== undefined && market !== 0 && ctx.market(market) === undefined) {
    const r = reject('INVALID_REQUEST', `unknown market ${market}`);
    return ctx.fail(r.code, r.message);
  }
  const settlements = settleFundingNow(ctx, market);
  ctx.emit({ type: 'outcome', ok: true, kind: 'funding', settlements });
}

function findOutcome(events: readonly EngineEvent[]): Outcome | undefined {
  for (const e of events) if (e.type === 'outcome') return e;
  return undefined;
}

/**
 * The outcome of one command from its events (every command has exactly one): accepted or
 * refused, with the code, message, ids and seq the command produced.
 */
export function outcomeOf(events: readonly EngineEvent[]): Outcome {
  const outcome = findOutcome(events);
  if (outcome === undefined) throw new InvariantError('these events hold no command outcome');
  return outcome;
}

/**
 * Runs the time-driven work due by the command time in the order of its due times: everything
 * due at the earliest time (expiries, then funding, then auction ends), then the next time. A
 * host that ticks at {@link nextWakeTime} meets one due time per command; a command after a
 * silence (an embedder that never ticks, a venue back from downtime) must not charge funding on
 * a position an auction that ended earlier had already closed. Returns whether any work ran.
 */
function settleDueWork(ctx: Ctx): boolean {
  let any = false;
  for (;;) {
    const due = nextWakeTime(ctx.state);
    if (due === null || due > ctx.time) return any;
    // Each step settles everything of its kind due at or before `due`, so the next is later.
    expireDue(ctx, due);
    settleFundingDue(ctx, due);
    settleAuctionsDue(ctx, due);
    any = true;
  }
}

/**
 * Applies one command inside a write session. Returns whether it changed the state: a command
 * refused before admission (bad fields, bad window) with no due housekeeping changes nothing.
 */
function apply(ctx: Ctx, cmd: Command): { changed: boolean; events: EngineEvent[] } {
  const malformed = commandShapeProblem(cmd);
  if (malformed !== undefined) {
    // Nothing of it is trusted, its time included: refused at the engine's time, no work done.
    ctx.begin(ctx.state.time);
    ctx.fail(malformed.code, malformed.message);
    return { changed: false, events: ctx.end() };
  }
  if (!Number.isSafeInteger(cmd.time)) {
    throw new InvariantError(
      `command time ${String(cmd.time)} is not a whole number of milliseconds (a safe integer)`,
    );
  }
  if (cmd.time < ctx.state.time) {
    throw new InvariantError(
      `command time ${cmd.time} is before the engine time ${ctx.state.time}`,
    );
  }
  ctx.begin(cmd.time);
  // Time-driven work first: expiry applies before any command at or after it.
  let housekeeping = settleDueWork(ctx);
  housekeeping = pruneNonces(ctx) || housekeeping;
  housekeeping = pruneCloids(ctx) || housekeeping;
  housekeeping = pruneTrades(ctx) || housekeeping;
  dispatch(ctx, cmd);
  // Children armed by the command's fills fire, then liquidation checks follow everything that
  // can move equity (fills, marks, funding, busts); a liquidation's fill can arm more children,
  // whose fills are checked in turn.
  do {
    fireArmed(ctx);
    riskSweep(ctx);
  } while (ctx.hasArmedMarkets());
  finishRequestOutcome(ctx, cmd);
  const events = ctx.end();
  const outcome = findOutcome(events);
  if (outcome === undefined) throw new InvariantError(`command ${cmd.type} produced no outcome`);
  const pureRefusal = !outcome.ok && !outcome.nonceConsumed && outcome.commandId === undefined;
  const changed = housekeeping || !pureRefusal;
  if (changed) {
    ctx.state.time = cmd.time;
    ctx.state.commandCount++;
  }
  return { changed, events };
}

/**
 * Brings the outcome of an order request up to date with the command's follow-ups. Its handler
 * emits it (what `orderAck`, `cancelAck`, `replaceAck`, `cancelAllAck` and `claimAck` answer)
 * before the command's own follow-ups run: managed children its fills armed fire at once, and
 * the liquidation checks may end the order and report to the same account. The answer names the
 * seq of the last report the command produced for the account and the order as the command left
 * it (research 6.3), so both are read again here, and an outcome they changed moves after the
 * reports it now names.
 */
function finishRequestOutcome(ctx: Ctx, cmd: Command): void {
  const events = ctx.events;
  let at = events.length - 1;
  while (at >= 0 && events[at]!.type !== 'outcome') at--;
  // Nothing emitted after the outcome: no follow-up reported, so what it names stands (the
  // common case, kept to one comparison on the hot path).
  if (at < 0 || at === events.length - 1) return;
  const o = events[at] as Outcome;
  if (!o.ok) return;
  let updated: Outcome | undefined;
  if (o.kind === 'order' || o.kind === 'cancel' || o.kind === 'replace') {
    const seq = ctx.account(o.order.account)!.reportSeq;
    const order = latestOrder(ctx, o.order.orderId);
    if (seq !== o.seq || order !== o.order) updated = { ...o, seq, order };
  } else if (o.kind === 'cancelAll' || o.kind === 'claim') {
    const account = 'account' in cmd ? ctx.account(cmd.account) : undefined;
    if (account !== undefined && account.reportSeq !== o.seq) {
      updated = { ...o, seq: account.reportSeq };
    }
  }
  if (updated === undefined) return;
  events.splice(at, 1);
  events.push(updated);
}

/** Applies one command. Never mutates `state`. */
export function reduce(state: EngineState, command: Command): ReduceResult {
  const ctx = new Ctx(state);
  const { changed, events } = apply(ctx, command);
  return { state: changed ? publish(ctx) : state, events };
}

/**
 * Applies a batch of commands. Never mutates `state`; copies each shared record once for the
 * whole batch, so a batch is much cheaper than the same commands one by one.
 */
export function reduceAll(state: EngineState, commands: readonly Command[]): BatchResult {
  const ctx = new Ctx(state);
  const out: EngineEvent[][] = [];
  const changed: boolean[] = [];
  let any = false;
  for (const cmd of commands) {
    const r = apply(ctx, cmd);
    any = any || r.changed;
    changed.push(r.changed);
    out.push(r.events);
  }
  return { state: any ? publish(ctx) : state, events: out, changed };
}

/** Ends a write session: the state it built is handed out and must not change again. */
function publish(ctx: Ctx): EngineState {
  ctx.state.edit = null;
  return ctx.state;
}
