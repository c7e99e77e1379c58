/**
 * The ERC-2612 permit check a {@link SimulatedChain} needs, made with the core's EIP-712 code:
 * the same check the venue's own simulated token runs. An embedder that wants real signatures
 * checked passes `permitVerifier(signing)` as `verifyPermit`; a simulation that trusts every
 * permit passes `() => true`.
 *
 * @module
 */
import {
  type ChainDeposit,
  DISCRIMINATOR,
  encodePayloadHex,
  type SigningContext,
  verifySignedPayload,
} from '@perp/core';

/**
 * A `verifyPermit` for {@link SimulatedChain}: true only when the permit's signature recovers its
 * owner under the token's EIP-712 domain of `signing` (owner, spender, value, nonce and deadline
 * as signed). Never throws: a malformed signature, or a field the `Permit` struct cannot hold,
 * is `false`.
 */
export function permitVerifier(signing: SigningContext): (request: ChainDeposit) => boolean {
  return (r) => {
    let payload: string;
    try {
      payload = encodePayloadHex('Permit', {
        owner: r.owner,
        spender: r.permit.spender,
        value: r.permit.value,
        nonce: r.permit.nonce,
        deadline: r.permit.deadline,
      });
    } catch {
      // A field the struct cannot hold (a value or deadline of 2^256 or more, a negative nonce,
      // an owner that is not an address) was never signed: no permit, not an exception.
      return false;
    }
    return verifySignedPayload(signing, r.permit.signature, payload, {
      discriminator: DISCRIMINATOR.Permit,
    }).ok;
  };
}
