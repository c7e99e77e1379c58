/**
 * `permitVerifier` (adapters-memory): the simulated token's permit check, with real EIP-712
 * signatures made by viem, so an embedder's SimulatedChain checks permits as the venue does.
 */
import { permitVerifier } from '@perp/adapters-memory';
import { type ChainDeposit, createSigningContext } from '@perp/core';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../src/index.js';
import { type NetworkInfo, Wallet } from './support/client.js';

const config = DEFAULT_CONFIG;
const signing = createSigningContext({
  network: config.network,
  vaultName: config.vault.name,
  vaultAddress: config.vault.address,
  tokenName: config.token.name,
  tokenAddress: config.token.address,
});
const net: NetworkInfo = {
  network: signing.network,
  chainId: signing.chainId,
  vault: { ...signing.vaultDomain, address: signing.vaultDomain.verifyingContract },
  token: { ...signing.tokenDomain, address: signing.tokenDomain.verifyingContract, decimals: 6 },
};
const owner = new Wallet(`0x${'11'.repeat(32)}`, net);
const other = new Wallet(`0x${'22'.repeat(32)}`, net);

async function deposit(
  signer: Wallet,
  fields: { value?: bigint; nonce?: bigint; deadline?: bigint } = {},
): Promise<ChainDeposit> {
  const permit = {
    spender: net.vault.address,
    value: fields.value ?? 5_000_000n,
    nonce: fields.nonce ?? 0n,
    deadline: fields.deadline ?? 2_000_000_000n,
  };
  const signed = await signer.sign('Permit', { ...permit, owner: owner.address });
  return {
    commandId: 1,
    owner: owner.address,
    amount: 5_000_000n,
    permit: { ...permit, signature: signed.sig },
  };
}

describe('permitVerifier', () => {
  const verify = permitVerifier(signing);

  it('accepts a permit its owner signed on the token domain', async () => {
    expect(verify(await deposit(owner))).toBe(true);
  });

  it('refuses another signer, a changed field, the vault domain and a malformed signature', async () => {
    expect(verify(await deposit(other))).toBe(false);
    const good = await deposit(owner);
    expect(verify({ ...good, permit: { ...good.permit, value: good.permit.value + 1n } })).toBe(
      false,
    );
    expect(verify({ ...good, permit: { ...good.permit, nonce: 1n } })).toBe(false);
    expect(verify({ ...good, owner: other.address })).toBe(false);
    const onVault = await owner.sign(
      'Permit',
      {
        owner: owner.address,
        spender: net.vault.address,
        value: 5_000_000n,
        nonce: 0n,
        deadline: 2_000_000_000n,
      },
      {
        domain: {
          name: net.vault.name,
          version: net.vault.version,
          chainId: net.chainId,
          verifyingContract: net.vault.address as `0x${string}`,
        },
      },
    );
    expect(verify({ ...good, permit: { ...good.permit, signature: onVault.sig } })).toBe(false);
    expect(verify({ ...good, permit: { ...good.permit, signature: '0x1234' } })).toBe(false);
  });
});
