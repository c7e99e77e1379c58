/**
 * `permitVerifier` never throws: a permit whose fields the `Permit` struct cannot hold (a value
 * or deadline of 2^256 or more, a negative nonce, an owner that is not an address) cannot have
 * been signed, so it is `false`, and a SimulatedChain refuses the deposit as data. (Real
 * signatures: adapters-node/test/permit-verifier.test.ts.)
 */
import { type ChainDeposit, createSigningContext } from '@perp/core';
import { describe, expect, it } from 'vitest';
import { permitVerifier } from './permit-verifier.js';
import { ChainRefusal, SimulatedChain } from './simulated-chain.js';

const TOKEN = `0x${'7e'.repeat(20)}`;
const VAULT = `0x${'d0'.repeat(20)}`;
const OWNER = `0x${'11'.repeat(20)}`;
const signing = createSigningContext({
  network: 'testnet',
  vaultName: 'Vault',
  vaultAddress: VAULT,
  tokenName: 'Test USD',
  tokenAddress: TOKEN,
});
const deposit: ChainDeposit = {
  commandId: 1,
  owner: OWNER,
  amount: 5_000_000n,
  permit: {
    spender: VAULT,
    value: 5_000_000n,
    nonce: 0n,
    deadline: 2_000_000_000n,
    signature: `0x${'5a'.repeat(64)}1b`,
  },
};
const UINT256_END = 2n ** 256n;

describe('permitVerifier', () => {
  const verify = permitVerifier(signing);

  it.each([
    ['a value of 2^256', { ...deposit, permit: { ...deposit.permit, value: UINT256_END } }],
    ['a deadline of 2^256', { ...deposit, permit: { ...deposit.permit, deadline: UINT256_END } }],
    ['a negative nonce', { ...deposit, permit: { ...deposit.permit, nonce: -1n } }],
    ['an owner that is not an address', { ...deposit, owner: '0x1234' }],
    [
      'a spender that is not an address',
      { ...deposit, permit: { ...deposit.permit, spender: '' } },
    ],
  ])('is false, not an exception, for %s', (_name, request: ChainDeposit) => {
    expect(verify(request)).toBe(false);
  });

  it('lets a SimulatedChain refuse such a deposit as data, remembered by commandId', async () => {
    const chain = new SimulatedChain({
      tokenName: 'Test USD',
      tokenAddress: TOKEN,
      vaultAddress: VAULT,
      verifyPermit: verify,
      now: () => 1_700_000_000_000,
    });
    chain.faucet(OWNER, 10_000_000n);
    const request = { ...deposit, permit: { ...deposit.permit, deadline: UINT256_END } };
    const refused = { ok: false, reason: ChainRefusal.INVALID_PERMIT_SIGNATURE };
    await expect(chain.executeDeposit(request)).resolves.toEqual(refused);
    await expect(chain.resultOf('deposit', 1)).resolves.toEqual(refused);
    expect(await chain.balanceOf(OWNER)).toBe(10_000_000n);
  });
});
