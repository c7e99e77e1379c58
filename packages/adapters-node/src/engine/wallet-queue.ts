/**
 * Per-wallet ordering (interface-spec "WebSocket authentication", rule 2; protocol.md section 5):
 * the requests of one wallet run strictly one at a time, in arrival order, across all its
 * connections and REST. Different wallets do not wait for each other.
 *
 * @module
 */

/** Serialises async work per key. */
export class WalletQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Runs `task` after every earlier task of `wallet` has finished. */
  run<T>(wallet: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(wallet) ?? Promise.resolve();
    const next = previous.then(task, task);
    // Keep the chain alive but never let a failure leak into the next task's result.
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(wallet, settled);
    void settled.then(() => {
      if (this.tails.get(wallet) === settled) this.tails.delete(wallet);
    });
    return next;
  }

  /** Wallets with work queued or running. */
  get size(): number {
    return this.tails.size;
  }
}
