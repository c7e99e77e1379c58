/**
 * Network configuration -> the two EIP-712 domains (interface-spec "EIP-712 domains",
 * protocol.md section 2). `testnet` is chain 10143 with token domain version "1", `mainnet` is
 * chain 143 with "2"; the vault domain's version is always "1". Names and addresses are
 * settings. Both separators are computed once, when the {@link SigningContext} is built.
 *
 * @module
 */
import { domainSeparator, type Eip712Domain } from './eip712.js';
import { parseHex } from './hex.js';
import { nobleVerifier, type SignatureVerifier } from './signature.js';

/** A network the venue can run on. */
export type NetworkName = 'testnet' | 'mainnet';

/** Chain id and token domain version per network. */
export const NETWORK_PARAMETERS: {
  readonly [N in NetworkName]: { readonly chainId: number; readonly tokenVersion: string };
} = Object.freeze({
  testnet: Object.freeze({ chainId: 10143, tokenVersion: '1' }),
  mainnet: Object.freeze({ chainId: 143, tokenVersion: '2' }),
});

/** The vault domain's version on every network. */
export const VAULT_DOMAIN_VERSION = '1';

/** The settings the domains are built from. */
export interface NetworkSettings {
  readonly network: NetworkName;
  /** Vault domain name, e.g. `ExampleVault`. */
  readonly vaultName: string;
  /** Vault contract: the vault domain's verifyingContract and the permit spender. */
  readonly vaultAddress: string;
  /** Collateral token name, the token domain's name (e.g. `USD Coin`). */
  readonly tokenName: string;
  /** Collateral token contract: the token domain's verifyingContract. */
  readonly tokenAddress: string;
}

/** Everything signature verification needs for one network, computed once. */
export interface SigningContext {
  readonly network: NetworkName;
  readonly chainId: number;
  /** Vault domain (orders, cancels, margin, leverage, claims); addresses lowercase. */
  readonly vaultDomain: Eip712Domain;
  /** Collateral token domain (ERC-2612 permits). */
  readonly tokenDomain: Eip712Domain;
  readonly vaultSeparator: Uint8Array;
  readonly tokenSeparator: Uint8Array;
  /** The ECDSA backend. */
  readonly verifier: SignatureVerifier;
}

function address(label: string, value: unknown): string {
  const bytes = parseHex(value);
  if (typeof bytes === 'string' || bytes.length !== 20) {
    throw new RangeError(`network settings: ${label} must be 0x followed by 40 hex digits`);
  }
  return (value as string).toLowerCase();
}

/** The vault and token domains of a network (throws `RangeError` for invalid settings). */
export function networkDomains(settings: NetworkSettings): {
  readonly vault: Eip712Domain;
  readonly token: Eip712Domain;
} {
  const params = Object.hasOwn(NETWORK_PARAMETERS, settings.network)
    ? NETWORK_PARAMETERS[settings.network]
    : undefined;
  if (params === undefined) {
    throw new RangeError(
      `network settings: network must be testnet or mainnet, got ${settings.network}`,
    );
  }
  if (typeof settings.vaultName !== 'string' || typeof settings.tokenName !== 'string') {
    throw new RangeError('network settings: vaultName and tokenName must be strings');
  }
  const vault = Object.freeze({
    name: settings.vaultName,
    version: VAULT_DOMAIN_VERSION,
    chainId: params.chainId,
    verifyingContract: address('vaultAddress', settings.vaultAddress),
  });
  const token = Object.freeze({
    name: settings.tokenName,
    version: params.tokenVersion,
    chainId: params.chainId,
    verifyingContract: address('tokenAddress', settings.tokenAddress),
  });
  return Object.freeze({ vault, token });
}

/** Builds a network's signing context: both domains and their separators, and the verifier. */
export function createSigningContext(
  settings: NetworkSettings,
  verifier: SignatureVerifier = nobleVerifier,
): SigningContext {
  const { vault, token } = networkDomains(settings);
  return Object.freeze({
    network: settings.network,
    chainId: NETWORK_PARAMETERS[settings.network].chainId,
    vaultDomain: vault,
    tokenDomain: token,
    vaultSeparator: domainSeparator(vault),
    tokenSeparator: domainSeparator(token),
    verifier,
  });
}
