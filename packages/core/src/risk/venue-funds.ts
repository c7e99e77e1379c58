/**
 * The venue's own pools: the fee pool (trading revenue) and the insurance fund (rule 7.5's first
 * payer of liquidation deficits). The operator moves collateral between them, typically to seed
 * the insurance fund from revenue before the first liquidation needs it, and pays revenue out of
 * the fee pool into an account (its own, to withdraw it like any collateral, or a user's as
 * compensation). Nothing enters or leaves the venue, so deposits minus withdrawals still equals
 * every pool plus both venue pools.
 *
 * @module
 */
import type { FeePayoutCommand, InsuranceTransferCommand } from '../engine/commands.js';
import type { Ctx } from '../engine/context.js';
import { reject } from '../errors.js';
import { formatCollateral } from '../units/decimal.js';

/**
 * Moves `amount` micro-units from the fee pool into the insurance fund (`ToInsuranceFund`) or
 * back (`ToFeePool`). Refused (4000, nothing changes) when the amount is not positive or the
 * source holds less than it; a pool never goes below zero by an operator's hand.
 */
export function insuranceTransfer(ctx: Ctx, cmd: InsuranceTransferCommand): void {
  const { amount, direction } = cmd;
  if (direction !== 'ToInsuranceFund' && direction !== 'ToFeePool') {
    const r = reject('INVALID_REQUEST', `direction must be ToInsuranceFund or ToFeePool`);
    return ctx.fail(r.code, r.message);
  }
  if (amount <= 0n) {
    const r = reject('INVALID_REQUEST', `amount must be positive, got ${formatCollateral(amount)}`);
    return ctx.fail(r.code, r.message);
  }
  const toFund = direction === 'ToInsuranceFund';
  const source = toFund ? ctx.state.feePool : ctx.state.insuranceFund;
  if (source < amount) {
    const r = reject(
      'INVALID_REQUEST',
      `the ${toFund ? 'fee pool' : 'insurance fund'} holds ${formatCollateral(source)}, less than ${formatCollateral(amount)}`,
    );
    return ctx.fail(r.code, r.message);
  }
  const delta = toFund ? amount : -amount;
  ctx.state.feePool -= delta;
  ctx.state.insuranceFund += delta;
  ctx.emit({
    type: 'insurance',
    delta,
    balance: ctx.state.insuranceFund,
    reason: 'Transfer',
    time: ctx.time,
  });
  ctx.emit({
    type: 'outcome',
    ok: true,
    kind: 'insuranceTransfer',
    insuranceFund: ctx.state.insuranceFund,
    feePool: ctx.state.feePool,
  });
}

/**
 * Pays `amount` micro-units from the fee pool into `account`'s cross pool. Refused (nothing
 * changes) with 4040 for an unknown account and 4000 for a non-positive amount or one the fee
 * pool does not hold. The account gets an account-summary push (its balance changed).
 */
export function feePayout(ctx: Ctx, cmd: FeePayoutCommand): void {
  const { account, amount } = cmd;
  if (amount <= 0n) {
    const r = reject('INVALID_REQUEST', `amount must be positive, got ${formatCollateral(amount)}`);
    return ctx.fail(r.code, r.message);
  }
  if (ctx.account(account) === undefined) {
    const r = reject('ACCOUNT_NOT_FOUND', `no trading account for ${account}`);
    return ctx.fail(r.code, r.message);
  }
  if (ctx.state.feePool < amount) {
    const r = reject(
      'INVALID_REQUEST',
      `the fee pool holds ${formatCollateral(ctx.state.feePool)}, less than ${formatCollateral(amount)}`,
    );
    return ctx.fail(r.code, r.message);
  }
  ctx.state.feePool -= amount;
  ctx.writableAccount(account).crossCash += amount;
  ctx.accountChanged(account);
  ctx.emit({
    type: 'outcome',
    ok: true,
    kind: 'feePayout',
    account,
    amount,
    feePool: ctx.state.feePool,
  });
}
