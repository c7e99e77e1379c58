/**
 * The collateral `amount` of a signed margin write (deposit, withdrawal, transfer), checked as
 * input before anything is consumed: REST and the trading socket share it.
 *
 * @module
 */
import { formatCollateral, parseDecimal } from '@perp/core';

/**
 * The largest amount a margin write may name: 2^64 - 1 micro-units (about 18.4 trillion). The
 * signed structs carry a uint256, but no collateral token's supply comes near this (USDC's is
 * below 10^11), so a larger amount is a client's mistake, refused as input (reliability-anchors
 * B6: 10^30 is 400) rather than taken to the engine as a refusal that consumes the nonce.
 */
export const MAX_AMOUNT = 2n ** 64n - 1n;

/** `value` as micro-units, or why it is not an amount (a sentence for a 4000 / 400 message). */
export function parseAmount(
  value: unknown,
): { readonly ok: true; readonly value: bigint } | { readonly ok: false; readonly error: string } {
  if (typeof value !== 'string') return { ok: false, error: 'amount must be a decimal string' };
  const parsed = parseDecimal(value, 6);
  if (!parsed.ok)
    return { ok: false, error: `amount "${value}" is not a decimal with at most 6 decimals` };
  if (parsed.value <= 0n) return { ok: false, error: 'amount must be positive' };
  if (parsed.value > MAX_AMOUNT)
    return {
      ok: false,
      error: `amount ${value} is above the largest amount, ${formatCollateral(MAX_AMOUNT)}`,
    };
  return { ok: true, value: parsed.value };
}
