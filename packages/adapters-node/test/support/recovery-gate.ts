/**
 * A signature recovery a test can hold back or fail, wrapped around the real one: `vi.mock` of
 * `src/verify/pool.js` replaces `createSignatureRecovery` with one that returns
 * `gatedRecovery(real, gate)`. Only types come from the pool module here, so the mock factory
 * can import this file without importing the module it replaces.
 */
import type { SignatureRecovery } from '../../src/verify/pool.js';

/** What the test controls and observes; one object per test file, shared with the mock. */
export interface RecoveryGate {
  /** Hold the next recovery until released (a slow verification worker). */
  holdNext: boolean;
  /** Releases of the held recoveries, oldest first. */
  held: (() => void)[];
  /** Fail every recovery (a dead worker). */
  fail: boolean;
  /** Recoveries started. */
  started: number;
}

/** A new gate that holds and fails nothing. */
export function recoveryGate(): RecoveryGate {
  return { holdNext: false, held: [], fail: false, started: 0 };
}

/** Sets the gate back to holding and failing nothing, releasing what it held. */
export function openGate(gate: RecoveryGate): void {
  gate.fail = false;
  gate.holdNext = false;
  for (const release of gate.held.splice(0)) release();
}

/** `inner`, with its recoveries counted, held or failed as `gate` says. */
export function gatedRecovery(inner: SignatureRecovery, gate: RecoveryGate): SignatureRecovery {
  return {
    get backend() {
      return inner.backend;
    },
    get workers() {
      return inner.workers;
    },
    recover(digest, signature) {
      gate.started++;
      if (gate.fail) return Promise.reject(new Error('verification worker 0 exited'));
      const answer = inner.recover(digest, signature);
      if (!gate.holdNext) return answer;
      gate.holdNext = false;
      return new Promise((resolve, reject) => {
        gate.held.push(() => answer.then(resolve, reject));
      });
    },
    close: () => inner.close(),
  };
}
