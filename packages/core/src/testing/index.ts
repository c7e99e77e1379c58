/**
 * `@perp/core/testing`: builders, a deterministic venue driver and invariant checkers for tests
 * and simulations. Imports no test framework.
 *
 * @module
 */
export * from './builders.js';
export * from './invariants.js';
export * from './legacy-snapshot.js';
export * from './reference-book.js';
export * from './simulation.js';
export * from './venue.js';
