/**
 * A state hash that shares the event loop: a million-record venue's state takes about a second
 * to hash, which in one piece would hold every socket and every engine batch that long.
 *
 * @module
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { type EngineState, StateHasher } from '@perp/core';
import { stateKeccak } from './native-keccak.js';

/**
 * The state hash of `state`, computed in slices of about `sliceMs` with a turn of the event loop
 * between them. The state is immutable, so the hash is the state's as it was passed, whatever
 * the engine does meanwhile. Resolves to `null` when `stop` says to give up between slices.
 */
export async function stateHashInSlices(
  state: EngineState,
  sliceMs = 4,
  stop: () => boolean = () => false,
): Promise<string | null> {
  const hasher = new StateHasher(state, stateKeccak());
  for (;;) {
    if (stop()) return null;
    const until = performance.now() + sliceMs;
    do if (hasher.step(512)) return hasher.hash;
    while (performance.now() < until);
    await yieldToLoop();
  }
}
