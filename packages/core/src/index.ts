/**
 * `@perp/core`: the pure, deterministic engine of the perpetual-futures venue.
 *
 * @module
 */
export * from './errors.js';
