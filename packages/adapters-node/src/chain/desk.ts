/**
 * The chain desk: carries accepted deposits and withdrawals to the chain adapter and brings the
 * chain's answer back into the engine as a settlement command (protocol.md section 9), so the
 * engine never waits on a chain and a replay sees exactly what the chain said. After a restart
 * it settles whatever the engine still has pending.
 *
 * Only the chain's answer settles a command. A call that throws (an RPC timeout, a dropped
 * connection) says nothing about whether the chain executed it: a withdrawal may have been paid.
 * Settling it as Failed would refund it, and pay the user twice. The desk asks again instead,
 * after a growing delay: the chain adapter is idempotent by command id (`ChainAdapter`), so a
 * second call returns the first call's result and never executes it twice. Meanwhile the
 * command stays pending (a withdrawal's amount stays debited); a venue closed while it waits
 * leaves it to the next start's {@link ChainDesk.reconcile}.
 *
 * @module
 */
import type {
  ChainAdapter,
  ChainDeposit,
  ChainResult,
  EngineState,
  PendingChainCommand,
} from '@perp/core';
import type { EngineHost } from '../engine/host.js';

/**
 * The chain adapter a desk drives: the port itself, whose `resultOf` answers for the commands a
 * restart finds pending. (Kept as a name for embedders that typed against it.)
 */
export type ReplayableChain = ChainAdapter;

/** Delays before asking the chain again after a call threw, ms; the last one repeats. */
export const CHAIN_RETRY_DELAYS_MS: readonly number[] = [
  1_000, 2_000, 5_000, 10_000, 30_000, 60_000,
];

/** Options of {@link ChainDesk}. */
export interface ChainDeskOptions {
  /** Delays between attempts of a chain call that threw (default {@link CHAIN_RETRY_DELAYS_MS}). */
  readonly retryDelaysMs?: readonly number[];
}

/** Drives settlements; see the module comment. */
export class ChainDesk {
  private readonly chain: ReplayableChain;
  private readonly host: EngineHost;
  private readonly inFlight = new Set<number>();
  private readonly log: (line: string) => void;
  private readonly retryDelaysMs: readonly number[];
  /** Retries waiting for their delay: each resolves early (with `false`) on {@link close}. */
  private readonly waiting = new Set<() => void>();
  private closed = false;

  constructor(
    chain: ReplayableChain,
    host: EngineHost,
    log: (line: string) => void = () => {},
    options: ChainDeskOptions = {},
  ) {
    this.chain = chain;
    this.host = host;
    this.log = log;
    const delays = options.retryDelaysMs ?? CHAIN_RETRY_DELAYS_MS;
    this.retryDelaysMs = delays.length > 0 ? delays : CHAIN_RETRY_DELAYS_MS;
  }

  /** Executes an accepted deposit and settles it. */
  deposit(request: ChainDeposit): Promise<void> {
    return this.carry('settleDeposit', request.commandId, () => this.chain.executeDeposit(request));
  }

  /**
   * Pays out an accepted withdrawal and settles it. `afterFirstAttempt` is called once the chain
   * has been asked once (answered, or thrown and scheduled to be asked again).
   */
  withdrawal(
    commandId: number,
    owner: string,
    amount: bigint,
    afterFirstAttempt?: () => void,
  ): Promise<void> {
    return this.carry(
      'settleWithdrawal',
      commandId,
      () => this.chain.executeWithdrawal({ commandId, owner, amount }),
      afterFirstAttempt,
    );
  }

  /** Stops asking the chain again: commands still waiting for an answer stay pending. */
  close(): void {
    this.closed = true;
    for (const wake of [...this.waiting]) wake();
  }

  /** One chain call per command at a time, asked again until the chain answers; then settled. */
  private async carry(
    type: 'settleDeposit' | 'settleWithdrawal',
    commandId: number,
    call: () => Promise<ChainResult>,
    afterFirstAttempt: () => void = () => {},
  ): Promise<void> {
    if (this.inFlight.has(commandId) || this.closed) return afterFirstAttempt();
    this.inFlight.add(commandId);
    let first = true;
    const firstDone = (): void => {
      if (first) afterFirstAttempt();
      first = false;
    };
    try {
      for (let attempt = 0; ; attempt++) {
        let result: ChainResult;
        try {
          result = await call();
        } catch (e) {
          const delays = this.retryDelaysMs;
          const delay = delays[Math.min(attempt, delays.length - 1)] ?? 0;
          this.log(
            `chain call for command ${commandId} threw (attempt ${attempt + 1}): ${String(e)}; the outcome is unknown, so the command stays pending and is asked again in ${delay} ms`,
          );
          firstDone();
          if (!(await this.sleep(delay))) return;
          continue;
        }
        await this.settle(type, commandId, result);
        return;
      }
    } finally {
      this.inFlight.delete(commandId);
      firstDone();
    }
  }

  /** Waits `ms` (without holding the process open); `false` when the desk closed meanwhile. */
  private sleep(ms: number): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.waiting.delete(wake);
        resolve(!this.closed);
      };
      const timer = setTimeout(wake, ms);
      timer.unref();
      this.waiting.add(wake);
    });
  }

  private async settle(
    type: 'settleDeposit' | 'settleWithdrawal',
    commandId: number,
    result: ChainResult,
    rethrow = false,
  ): Promise<void> {
    let r: Awaited<ReturnType<EngineHost['submit']>>;
    try {
      r = await this.host.submit(
        result.ok
          ? { type, commandId, success: true, txHash: result.txHash }
          : { type, commandId, success: false, reason: result.reason },
      );
    } catch (e) {
      if (rethrow) throw e;
      // The engine stopped (a journal failure, the venue closing): the command stays pending in
      // the journal, and the next start settles it from the chain's answer (reconcile). Thrown on,
      // it would reject a promise nobody awaits (the routes start the desk and answer at once),
      // and an unhandled rejection ends the process.
      this.log(
        `settlement of command ${commandId} not recorded (${String(e)}); the next start settles it from the chain`,
      );
      return;
    }
    if (!r.outcome.ok) this.log(`settlement of command ${commandId} refused: ${r.outcome.message}`);
  }

  /**
   * Settles what the engine still has pending after a restart: results the chain already has
   * (`ChainAdapter.resultOf`) are reported; withdrawals it never saw are paid out now; deposits
   * it never saw fail (their permit is gone with the old process; the user signs again). A
   * chain that cannot answer (`resultOf` throws) fails the start: a deposit it may have executed
   * must not be failed, nor the venue serve with it unsettled and unknown.
   */
  async reconcile(state: EngineState): Promise<void> {
    const pending: PendingChainCommand[] = [];
    state.pending.forEach((p) => {
      pending.push(p);
    });
    // Asked by kind: a chain record under the same id but of the other kind is another request
    // (a data directory restored from a journal copy older than the chain's state gives ids
    // again); its result says nothing about this command, which is asked for as itself.
    const results = await Promise.all(pending.map((p) => this.chain.resultOf(p.kind, p.commandId)));
    const work: Promise<void>[] = [];
    pending.forEach((p, i) => {
      const type = p.kind === 'deposit' ? 'settleDeposit' : 'settleWithdrawal';
      const known = results[i] ?? null;
      // A start whose engine cannot take a settlement fails (the venue must not serve).
      if (known !== null) work.push(this.settle(type, p.commandId, known, true));
      else if (p.kind === 'withdrawal')
        // A start waits for the first answer only: a chain that throws is asked again later.
        work.push(
          new Promise<void>((resolve) => {
            void this.withdrawal(p.commandId, p.account, p.amount, resolve);
          }),
        );
      else
        work.push(
          this.settle(
            type,
            p.commandId,
            {
              ok: false,
              reason: 'the venue restarted before the chain executed this deposit; sign it again',
            },
            true,
          ),
        );
    });
    await Promise.all(work);
    // A withdrawal paid at this start settles through the retrying path, which only logs an
    // engine that stopped: the start still fails then.
    if (this.host.failed)
      throw new Error('the engine stopped while settling pending chain commands');
  }
}
