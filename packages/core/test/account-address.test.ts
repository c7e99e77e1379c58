/**
 * docs/core-library.md says "Accounts are lowercase 0x addresses: openAccount
 * refuses any other spelling, and reads such as accountSummary find nothing under a checksummed
 * one". `deposit` checks the spelling too, but `withdraw`, `transferMargin` and
 * `updateLeverage` (on the unsigned path of simulations and tests) used to create an account
 * under whatever string they were given (`ensureAccount` without the address check). After that
 * the checksummed twin traded (placeOrder no longer answered 4040) and `accountSummary` found
 * it. Found by a review. `authenticate` took any string too, consuming a nonce under it.
 */

import { accountSummary, type Command, outcomeOf } from '@perp/core';
import { BTC_SETTINGS, TestVenue, wallet } from '@perp/core/testing';
import { describe, expect, it } from 'vitest';

const CHECKSUMMED = `0x${'AB'.repeat(20)}`;

function venue(): TestVenue {
  const v = new TestVenue();
  v.list(BTC_SETTINGS);
  v.open(wallet(1));
  return v;
}

describe('account spellings other than lowercase 0x addresses', () => {
  const commands: [string, (account: string) => Omit<Command, 'time'>][] = [
    [
      'updateLeverage',
      (account) => ({ type: 'updateLeverage', account, market: 1, mode: 'Cross', leverage: 500 }),
    ],
    [
      'withdraw',
      (account) => ({
        type: 'withdraw',
        account,
        amount: 1n,
        target: { mode: 'Cross', market: 0 },
      }),
    ],
    [
      'transferMargin',
      (account) => ({
        type: 'transferMargin',
        account,
        amount: 1n,
        market: 1,
        direction: 'crossToIsolated',
      }),
    ],
  ];

  for (const [name, make] of commands) {
    for (const account of [CHECKSUMMED, 'not-a-wallet']) {
      it(`${name} from ${account} is refused and opens no account`, () => {
        const v = venue();
        const out = outcomeOf(v.run(make(account) as never));
        // As openAccount and deposit: 4000 "account must be a lowercase 0x address".
        expect(out.ok ? 'accepted' : out.code).toBe(4000);
        expect(v.state.accounts.get(account)).toBeUndefined();
        expect(accountSummary(v.state, account, v.time)).toBeUndefined();
      });
    }
  }

  for (const account of [CHECKSUMMED, 'not-a-wallet']) {
    it(`authenticate from ${account} is refused as bad input and changes nothing`, () => {
      // It answered 4015 and consumed a nonce under the string (state changed for bad input);
      // the service's adapter passes the recovered, lowercase signer, an embedder any string.
      const v = venue();
      const before = v.state;
      const out = outcomeOf(v.run({ type: 'authenticate', account, nonce: BigInt(v.time + 1) }));
      expect(out.ok ? 'accepted' : [out.code, out.message]).toEqual([
        4000,
        'INVALID_REQUEST: account must be a lowercase 0x address',
      ]);
      expect(v.state).toBe(before);
    });
  }

  it('openAccount and deposit refuse the same spelling', () => {
    const v = venue();
    expect(outcomeOf(v.run({ type: 'openAccount', account: CHECKSUMMED })).ok).toBe(false);
    const deposit = outcomeOf(
      v.run({
        type: 'deposit',
        account: CHECKSUMMED,
        amount: 1n,
        target: { mode: 'Cross', market: 0 },
      }),
    );
    expect(deposit.ok).toBe(false);
    expect(v.state.accounts.get(CHECKSUMMED)).toBeUndefined();
  });
});
