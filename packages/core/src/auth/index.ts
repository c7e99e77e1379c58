/**
 * Stateless authorisation: signed-struct codecs, EIP-712 and EIP-191 hashing, signature parsing
 * and recovery, the hot-path payload verifier, deadline and permit checks, and the referral
 * canonical JSON. Nonce stores, rate limits and referral state live in the engine.
 *
 * @module
 */
export * from './canonical-json.js';
export * from './eip712.js';
export * from './network.js';
export * from './personal-sign.js';
export * from './signature.js';
export * from './structs.js';
export * from './verify.js';
