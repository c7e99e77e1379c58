/**
 * Account and margin commands (engine-rules section 9): account opening, deposits and
 * withdrawals through the chain adapter, margin transfers and leverage updates. Once a signed
 * request is admitted it gets a `command_id`, whether it is then `Submitted` or `Rejected`.
 *
 * @module
 */

import { admitRequest } from '../access/admission.js';
import { LOWERCASE_ADDRESS_PATTERN } from '../auth/canonical-json.js';
import type {
  DepositCommand,
  MarginTarget,
  OpenAccountCommand,
  SettlementCommand,
  TransferMarginCommand,
  UpdateLeverageCommand,
  WithdrawCommand,
} from '../engine/commands.js';
import type { Ctx } from '../engine/context.js';
import { newAccount as makeAccount } from '../engine/records.js';
import type { Account, MarginMode } from '../engine/types.js';
import { ErrorCode, type ErrorName, reject } from '../errors.js';
import { scopeInAuction } from '../risk/health.js';
import { formatCollateral } from '../units/decimal.js';
import {
  availableToOpen,
  claimReserveOf,
  isolatedCash,
  leverageOf,
  maxLeverageProblem,
  measureScope,
  restingOpenQty,
  setIsolatedCash,
  sizeOf,
  tierProblemAfter,
  transferableOf,
  valuationPrice,
} from './scope.js';

const ADDRESS_RE = LOWERCASE_ADDRESS_PATTERN;

/** Whether `address` is an account's spelling: `0x` and 40 lowercase hex digits. */
export function isAccountAddress(address: string): boolean {
  return ADDRESS_RE.test(address);
}

/** Creates an empty account for a lowercase wallet address. */
export function newAccount(ctx: Ctx, address: string): Account {
  return makeAccount(ctx.edit, address, ctx.time);
}

/** Opens the account of `address` if it has none; returns whether it was created. */
export function ensureAccount(ctx: Ctx, address: string): boolean {
  if (ctx.account(address) !== undefined) return false;
  ctx.putAccount(newAccount(ctx, address));
  return true;
}

/** Handles `openAccount`. */
export function openAccount(ctx: Ctx, cmd: OpenAccountCommand): void {
  if (!ADDRESS_RE.test(cmd.account)) {
    const r = reject('INVALID_REQUEST', 'account must be a lowercase 0x address');
    return ctx.fail(r.code, r.message);
  }
  ensureAccount(ctx, cmd.account);
  ctx.emit({ type: 'outcome', ok: true, kind: 'done' });
}

function targetProblem(ctx: Ctx, target: MarginTarget): string | undefined {
  if (target.mode === 'Cross') return target.market === 0 ? undefined : 'cross margin has market 0';
  if (ctx.market(target.market) === undefined) return `unknown market ${target.market}`;
  return undefined;
}

function fail(ctx: Ctx, name: ErrorName, detail: string): void {
  const r = reject(name, detail);
  ctx.fail(r.code, r.message);
}

/**
 * A withdrawal or transfer from a wallet with no trading account (protocol.md 4: "unknown account
 * where one must exist: 404"). It comes after admission, like the invite gate, so it spends the
 * nonce and nothing else: no account is opened and no command id handed out.
 */
function accountMissing(ctx: Ctx, account: string): void {
  const r = reject('ACCOUNT_NOT_FOUND', `no trading account for ${account}: deposit first`);
  ctx.fail(r.code, r.message, { nonceConsumed: true });
}

/** A business refusal after admission: the command gets an id and status `Rejected`. */
function rejectCommand(ctx: Ctx, name: ErrorName, detail: string): void {
  const r = reject(name, detail);
  ctx.fail(r.code, r.message, { nonceConsumed: true, commandId: ctx.nextCommandId() });
}

function submitted(ctx: Ctx, commandId: number): void {
  ctx.emit({ type: 'outcome', ok: true, kind: 'command', commandId, status: 'Submitted' });
}

/**
 * Why nothing may leave a scope now: its liquidation auction runs. Claims made meanwhile buy the
 * position at the auction price, short of the mark, so a transferable measured at the mark would
 * hand out gains on what is already promised, and the claims would then settle into a deficit
 * that ADL passes to other traders (docs/risk-engine.md). Margin may still come in.
 */
function leavingProblem(
  ctx: Ctx,
  account: string,
  mode: MarginMode,
  market: number,
): string | undefined {
  if (!scopeInAuction(ctx.state, account, mode, mode === 'Cross' ? 0 : market)) return undefined;
  const scope = mode === 'Cross' ? 'the cross margin scope' : 'the isolated margin scope';
  return `${scope} is being liquidated: nothing may leave it until its auction ends`;
}

/** What may leave a scope without trading: cross withdrawable or isolated transferable. */
export function freeCollateral(
  ctx: Ctx,
  account: Account,
  mode: MarginMode,
  market: number,
): bigint {
  const m = measureScope(ctx.state, account, mode, market);
  const free = transferableOf(m) - claimReserveOf(account, mode);
  return free > 0n ? free : 0n;
}

function credit(account: Account, mode: MarginMode, market: number, amount: bigint): void {
  if (mode === 'Cross') account.crossCash += amount;
  else setIsolatedCash(account, market, isolatedCash(account, market) + amount);
}

/** Handles `deposit`: admitted deposits wait for the chain adapter (`settleDeposit`). */
export function deposit(ctx: Ctx, cmd: DepositCommand): void {
  const bad = targetProblem(ctx, cmd.target);
  if (bad !== undefined) return fail(ctx, 'INVALID_REQUEST', bad);
  if (cmd.amount <= 0n) return fail(ctx, 'INVALID_REQUEST', 'amount must be positive');
  if (!ADDRESS_RE.test(cmd.account))
    return fail(ctx, 'INVALID_REQUEST', 'account must be a lowercase 0x address');
  if (!admitRequest(ctx, cmd.account, cmd.auth, 'margin', true)) return;
  ensureAccount(ctx, cmd.account);
  const commandId = ctx.nextCommandId();
  ctx.state.pending = ctx.state.pending.set(ctx.edit, commandId, {
    kind: 'deposit',
    commandId,
    account: cmd.account,
    amount: cmd.amount,
    mode: cmd.target.mode,
    market: cmd.target.market,
    submittedTime: ctx.time,
  });
  submitted(ctx, commandId);
}

/** Handles `withdraw`: bounded by withdrawable / transferable; debited at acceptance. */
export function withdraw(ctx: Ctx, cmd: WithdrawCommand): void {
  const bad = targetProblem(ctx, cmd.target);
  if (bad !== undefined) return fail(ctx, 'INVALID_REQUEST', bad);
  if (cmd.amount <= 0n) return fail(ctx, 'INVALID_REQUEST', 'amount must be positive');
  if (!ADDRESS_RE.test(cmd.account))
    return fail(ctx, 'INVALID_REQUEST', 'account must be a lowercase 0x address');
  if (!admitRequest(ctx, cmd.account, cmd.auth, 'margin', true)) return;
  if (ctx.account(cmd.account) === undefined) return accountMissing(ctx, cmd.account);
  const { mode, market } = cmd.target;
  const liquidating = leavingProblem(ctx, cmd.account, mode, market);
  if (liquidating !== undefined) return rejectCommand(ctx, 'INSUFFICIENT_MARGIN', liquidating);
  const free = freeCollateral(ctx, ctx.account(cmd.account)!, mode, market);
  if (cmd.amount > free) {
    const what = mode === 'Cross' ? 'withdrawable' : 'transferable';
    return rejectCommand(
      ctx,
      'INSUFFICIENT_MARGIN',
      `amount ${formatCollateral(cmd.amount)} exceeds ${what} ${formatCollateral(free)}`,
    );
  }
  const commandId = ctx.nextCommandId();
  credit(ctx.writableAccount(cmd.account), mode, market, -cmd.amount);
  ctx.state.totalWithdrawals += cmd.amount;
  // The balance changed now, not at settlement: push the summary (interface-spec: every change
  // of balance state) and include the account in the post-command liquidation check.
  ctx.accountChanged(cmd.account);
  ctx.state.pending = ctx.state.pending.set(ctx.edit, commandId, {
    kind: 'withdrawal',
    commandId,
    account: cmd.account,
    amount: cmd.amount,
    mode,
    market,
    submittedTime: ctx.time,
  });
  submitted(ctx, commandId);
}

/** Handles the chain adapter's result for a pending deposit or withdrawal. */
export function settle(ctx: Ctx, cmd: SettlementCommand): void {
  const p = ctx.state.pending.get(cmd.commandId);
  const kind = cmd.type === 'settleDeposit' ? 'deposit' : 'withdrawal';
  if (p === undefined || p.kind !== kind) {
    return fail(ctx, 'INVALID_REQUEST', `no pending ${kind} with command id ${cmd.commandId}`);
  }
  ctx.state.pending = ctx.state.pending.delete(ctx.edit, cmd.commandId);
  const account = ctx.writableAccount(p.account);
  if (kind === 'deposit' && cmd.success) {
    credit(account, p.mode, p.market, p.amount);
    ctx.state.totalDeposits += p.amount;
  } else if (kind === 'withdrawal' && !cmd.success) {
    // Refund: the amount was debited at acceptance.
    credit(account, p.mode, p.market, p.amount);
    ctx.state.totalWithdrawals -= p.amount;
  }
  ctx.report(p.account, {
    kind: kind === 'deposit' ? 'DepositMargin' : 'WithdrawMargin',
    commandId: p.commandId,
    status: cmd.success ? 'Completed' : 'Failed',
    market: p.market,
    marginMode: p.mode,
    amount: p.amount,
    ...(cmd.txHash === undefined ? {} : { txHash: cmd.txHash }),
    ...(cmd.success
      ? {}
      : {
          code: ErrorCode.EXCHANGE_ERROR,
          message: `chain refused the ${kind}: ${cmd.reason ?? 'unknown reason'}`,
        }),
  });
  ctx.accountChanged(p.account);
  ctx.emit({ type: 'outcome', ok: true, kind: 'done' });
}

/** Handles `transferMargin` between the cross pool and one market's isolated pool. */
export function transferMargin(ctx: Ctx, cmd: TransferMarginCommand): void {
  if (ctx.market(cmd.market) === undefined)
    return fail(ctx, 'INVALID_REQUEST', `unknown market ${cmd.market}`);
  if (cmd.amount <= 0n) return fail(ctx, 'INVALID_REQUEST', 'amount must be positive');
  if (!ADDRESS_RE.test(cmd.account))
    return fail(ctx, 'INVALID_REQUEST', 'account must be a lowercase 0x address');
  if (!admitRequest(ctx, cmd.account, cmd.auth, 'margin', true)) return;
  if (ctx.account(cmd.account) === undefined) return accountMissing(ctx, cmd.account);
  const fromCross = cmd.direction === 'crossToIsolated';
  const source: MarginMode = fromCross ? 'Cross' : 'Isolated';
  const liquidating = leavingProblem(ctx, cmd.account, source, cmd.market);
  if (liquidating !== undefined) return rejectCommand(ctx, 'INSUFFICIENT_MARGIN', liquidating);
  const free = freeCollateral(ctx, ctx.account(cmd.account)!, source, cmd.market);
  if (cmd.amount > free) {
    const what = fromCross ? 'cross withdrawable' : 'isolated transferable';
    return rejectCommand(
      ctx,
      'INSUFFICIENT_MARGIN',
      `amount ${formatCollateral(cmd.amount)} exceeds ${what} ${formatCollateral(free)}`,
    );
  }
  const commandId = ctx.nextCommandId();
  const account = ctx.writableAccount(cmd.account);
  credit(account, 'Cross', 0, fromCross ? -cmd.amount : cmd.amount);
  credit(account, 'Isolated', cmd.market, fromCross ? cmd.amount : -cmd.amount);
  submitted(ctx, commandId);
  ctx.report(cmd.account, {
    kind: 'TransferMargin',
    commandId,
    status: 'Completed',
    market: cmd.market,
    marginMode: 'Isolated',
    amount: cmd.amount,
    direction: cmd.direction,
  });
  ctx.accountChanged(cmd.account);
}

/** Handles `updateLeverage`: raise up to the maximum; lower only while margin still covers. */
export function updateLeverage(ctx: Ctx, cmd: UpdateLeverageCommand): void {
  const market = ctx.market(cmd.market);
  if (market === undefined) return fail(ctx, 'INVALID_REQUEST', `unknown market ${cmd.market}`);
  if (!Number.isInteger(cmd.leverage) || cmd.leverage < 100) {
    return fail(ctx, 'INVALID_REQUEST', 'leverage must be an integer x100 of at least 100 (1x)');
  }
  if (!ADDRESS_RE.test(cmd.account))
    return fail(ctx, 'INVALID_REQUEST', 'account must be a lowercase 0x address');
  if (!admitRequest(ctx, cmd.account, cmd.auth, 'margin', true)) return;
  ensureAccount(ctx, cmd.account);
  const spec = market.spec;
  const aboveMax = maxLeverageProblem(spec, cmd.leverage);
  if (aboveMax !== undefined) return rejectCommand(ctx, 'MAX_LEVERAGE_EXCEEDED', aboveMax);
  const account = ctx.account(cmd.account)!;
  const previous = leverageOf(account, spec, cmd.mode);
  const price = valuationPrice(market);
  if (cmd.leverage > previous && price !== null) {
    // Raising: the margin tier of the position caps the leverage too (research 1.2), with every
    // resting order of a side filled, as placement counts them. Lowering only needs the margin
    // to cover (engine-rules 9), whatever tier the mark has carried the position into.
    const size = sizeOf(account, cmd.market, cmd.mode);
    const tierOfSide = (buy: boolean) =>
      tierProblemAfter(
        spec,
        cmd.leverage,
        size,
        buy,
        restingOpenQty(account, cmd.market, cmd.mode, buy),
        price,
      );
    const tooHigh = tierOfSide(true) ?? tierOfSide(false);
    if (tooHigh !== undefined) return rejectCommand(ctx, 'MAX_LEVERAGE_EXCEEDED', tooHigh);
  }
  if (cmd.leverage < previous) {
    const trial: Account = {
      ...account,
      leverage: [
        ...account.leverage.filter((l) => !(l.market === cmd.market && l.mode === cmd.mode)),
        { market: cmd.market, mode: cmd.mode, leverage: cmd.leverage },
      ],
    };
    const after = measureScope(ctx.state, trial, cmd.mode, cmd.market);
    // Margin reserved for auction claims stays reserved (engine-rules 7), as for orders.
    const room = availableToOpen(after) - claimReserveOf(account, cmd.mode);
    if (room < 0n) {
      return rejectCommand(
        ctx,
        'INSUFFICIENT_MARGIN',
        `lowering ${spec.symbol} ${cmd.mode} leverage to ${cmd.leverage / 100}x needs ${formatCollateral(-room)} more margin`,
      );
    }
  }
  const commandId = ctx.nextCommandId();
  const w = ctx.writableAccount(cmd.account);
  w.leverage = w.leverage.filter((l) => !(l.market === cmd.market && l.mode === cmd.mode));
  w.leverage.push({ market: cmd.market, mode: cmd.mode, leverage: cmd.leverage });
  submitted(ctx, commandId);
  ctx.report(cmd.account, {
    kind: 'UpdateLeverage',
    commandId,
    status: 'Completed',
    market: cmd.market,
    marginMode: cmd.mode,
    leverage: cmd.leverage,
    previousLeverage: previous,
  });
  ctx.accountChanged(cmd.account);
}
