/**
 * Signed structs and their verification: the venue's front door (protocol.md sections 2-3).
 *
 * @module
 */
export * from './canonical-json.js';
export * from './eip712.js';
export * from './hex.js';
export * from './signature.js';
export * from './structs.js';
export * from './verify.js';
