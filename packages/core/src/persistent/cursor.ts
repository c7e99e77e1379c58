/**
 * A resumable walk over a persistent map's entries: each `next()` moves to the next entry and
 * returns `false` at the end. Callers that must bound the work per step (the snapshot encoder and
 * state hasher) take one entry at a time instead of a callback over the whole map.
 *
 * @module
 */

/** A position in a map's entries; `key` and `value` are the current entry after `next()`. */
export interface EntryCursor {
  next(): boolean;
  key: unknown;
  value: unknown;
}
