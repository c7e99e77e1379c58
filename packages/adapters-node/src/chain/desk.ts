/**
 * The chain desk: carries accepted deposits and withdrawals to the chain adapter and brings the
 * chain's answer back into the engine as a settlement command (protocol.md section 9), so the
 * engine never waits on a chain and a replay sees exactly what the chain said. After a restart
 * it settles whatever the engine still has pending.
 *
 * @module
 */
import type { ChainAdapter, ChainDeposit, ChainResult, EngineState } from '@perp/core';
import type { EngineHost } from '../engine/host.js';

/** A chain adapter that can report commands it already executed (the simulated chain can). */
export interface ReplayableChain extends ChainAdapter {
  processed?(): readonly {
    readonly commandId: number;
    readonly kind: 'deposit' | 'withdrawal';
    readonly result: ChainResult;
  }[];
}

/** Drives settlements; see the module comment. */
export class ChainDesk {
  private readonly chain: ReplayableChain;
  private readonly host: EngineHost;
  private readonly inFlight = new Set<number>();
  private readonly log: (line: string) => void;

  constructor(chain: ReplayableChain, host: EngineHost, log: (line: string) => void = () => {}) {
    this.chain = chain;
    this.host = host;
    this.log = log;
  }

  /** Executes an accepted deposit and settles it. */
  async deposit(request: ChainDeposit): Promise<void> {
    if (this.inFlight.has(request.commandId)) return;
    this.inFlight.add(request.commandId);
    try {
      const result = await this.chain
        .executeDeposit(request)
        .catch((e: unknown) => ({ ok: false as const, reason: String(e) }));
      await this.settle('settleDeposit', request.commandId, result);
    } finally {
      this.inFlight.delete(request.commandId);
    }
  }

  /** Pays out an accepted withdrawal and settles it. */
  async withdrawal(commandId: number, owner: string, amount: bigint): Promise<void> {
    if (this.inFlight.has(commandId)) return;
    this.inFlight.add(commandId);
    try {
      const result = await this.chain
        .executeWithdrawal({ commandId, owner, amount })
        .catch((e: unknown) => ({ ok: false as const, reason: String(e) }));
      await this.settle('settleWithdrawal', commandId, result);
    } finally {
      this.inFlight.delete(commandId);
    }
  }

  private async settle(
    type: 'settleDeposit' | 'settleWithdrawal',
    commandId: number,
    result: ChainResult,
  ): Promise<void> {
    const r = await this.host.submit(
      result.ok
        ? { type, commandId, success: true, txHash: result.txHash }
        : { type, commandId, success: false, reason: result.reason },
    );
    if (!r.outcome.ok) this.log(`settlement of command ${commandId} refused: ${r.outcome.message}`);
  }

  /**
   * Settles what the engine still has pending after a restart: results the chain already has
   * are reported; withdrawals it never saw are paid out now; deposits it never saw fail (their
   * permit is gone with the old process; the user signs again).
   */
  async reconcile(state: EngineState): Promise<void> {
    const done = new Map<number, ChainResult>();
    for (const p of this.chain.processed?.() ?? []) done.set(p.commandId, p.result);
    const work: Promise<void>[] = [];
    state.pending.forEach((p) => {
      const type = p.kind === 'deposit' ? 'settleDeposit' : 'settleWithdrawal';
      const known = done.get(p.commandId);
      if (known !== undefined) work.push(this.settle(type, p.commandId, known));
      else if (p.kind === 'withdrawal')
        work.push(this.withdrawal(p.commandId, p.account, p.amount));
      else
        work.push(
          this.settle(type, p.commandId, {
            ok: false,
            reason: 'the venue restarted before the chain executed this deposit; sign it again',
          }),
        );
    });
    await Promise.all(work);
  }
}
