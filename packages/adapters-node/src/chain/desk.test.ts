/**
 * The chain desk on its own: one chain call per accepted command however often it is asked, a
 * chain that throws settles as Failed (so a withdrawal is refunded, never left pending), and a
 * restart settles exactly what the engine still has pending. Found by mutation: without the
 * catch, or with a restart re-executing a withdrawal the chain already reported, every
 * end-to-end test still passed, because the simulated chain is idempotent and never throws; a
 * real chain adapter need not be either.
 */
import type {
  ChainDeposit,
  ChainResult,
  ChainWithdrawal,
  Command,
  EngineState,
  Outcome,
} from '@perp/core';
import { TestVenue, usd, wallet } from '@perp/core/testing';
import { describe, expect, it } from 'vitest';
import type { CommandInput, CommandResult, EngineHost } from '../engine/host.js';
import { ChainDesk, type ReplayableChain } from './desk.js';

const A = wallet(0xd1);

/** A host that records what the desk submits and answers every settlement ok. */
function fakeHost(): { host: EngineHost; submitted: CommandInput[] } {
  const submitted: CommandInput[] = [];
  const host = {
    submit(input: CommandInput): Promise<CommandResult> {
      submitted.push(input);
      const outcome: Outcome = { type: 'outcome', ok: true, kind: 'done' };
      return Promise.resolve({
        command: { ...input, time: 0 } as Command,
        events: [outcome],
        outcome,
        seq: undefined,
      });
    },
  } as unknown as EngineHost;
  return { host, submitted };
}

/** A chain whose calls wait for `release` and can be told to throw. */
class FakeChain implements ReplayableChain {
  withdrawals: ChainWithdrawal[] = [];
  deposits: ChainDeposit[] = [];
  done: { commandId: number; kind: 'deposit' | 'withdrawal'; result: ChainResult }[] = [];
  throwWith: Error | undefined;
  private gate: Promise<void> = Promise.resolve();
  private open: () => void = () => {};

  hold(): void {
    this.gate = new Promise((resolve) => {
      this.open = resolve;
    });
  }
  release(): void {
    this.open();
  }
  balanceOf(): Promise<bigint> {
    return Promise.resolve(0n);
  }
  permitNonce(): Promise<bigint> {
    return Promise.resolve(0n);
  }
  async executeDeposit(request: ChainDeposit): Promise<ChainResult> {
    this.deposits.push(request);
    await this.gate;
    if (this.throwWith !== undefined) throw this.throwWith;
    return { ok: true, txHash: `0xd${request.commandId}` };
  }
  async executeWithdrawal(request: ChainWithdrawal): Promise<ChainResult> {
    this.withdrawals.push(request);
    await this.gate;
    if (this.throwWith !== undefined) throw this.throwWith;
    return { ok: true, txHash: `0xw${request.commandId}` };
  }
  processed() {
    return this.done;
  }
}

const deposit = (commandId: number): ChainDeposit => ({
  commandId,
  owner: A,
  amount: 5n,
  permit: { spender: A, value: 5n, nonce: 0n, deadline: 1n, signature: '0x' },
});

describe('ChainDesk', () => {
  it('calls the chain once for a command asked for twice while in flight, then settles it once', async () => {
    const chain = new FakeChain();
    const { host, submitted } = fakeHost();
    const desk = new ChainDesk(chain, host);
    chain.hold();
    const first = desk.withdrawal(7, A, 100n);
    const second = desk.withdrawal(7, A, 100n);
    const third = desk.deposit(deposit(8));
    const fourth = desk.deposit(deposit(8));
    chain.release();
    await Promise.all([first, second, third, fourth]);
    expect(chain.withdrawals.map((w) => w.commandId)).toEqual([7]);
    expect(chain.deposits.map((d) => d.commandId)).toEqual([8]);
    expect(submitted).toEqual([
      { type: 'settleWithdrawal', commandId: 7, success: true, txHash: '0xw7' },
      { type: 'settleDeposit', commandId: 8, success: true, txHash: '0xd8' },
    ]);
  });

  it('settles a command whose chain call threw as Failed, naming the error', async () => {
    const chain = new FakeChain();
    chain.throwWith = new Error('rpc timeout');
    const { host, submitted } = fakeHost();
    const desk = new ChainDesk(chain, host);
    await desk.withdrawal(3, A, 100n);
    await desk.deposit(deposit(4));
    expect(submitted).toEqual([
      { type: 'settleWithdrawal', commandId: 3, success: false, reason: 'Error: rpc timeout' },
      { type: 'settleDeposit', commandId: 4, success: false, reason: 'Error: rpc timeout' },
    ]);
  });

  it('after a restart reports what the chain did, pays unseen withdrawals, fails unseen deposits', async () => {
    const v = new TestVenue();
    const ids: number[] = [];
    v.run({ type: 'openAccount', account: A });
    v.fund(A, '100');
    for (const cmd of [
      { type: 'deposit' as const, amount: usd('1') },
      { type: 'deposit' as const, amount: usd('2') },
      { type: 'withdraw' as const, amount: usd('3') },
      { type: 'withdraw' as const, amount: usd('4') },
    ]) {
      const o = v.outcome(v.run({ ...cmd, account: A, target: { mode: 'Cross', market: 0 } }));
      ids.push(o.ok && o.kind === 'command' ? o.commandId : -1);
    }
    const [seenDeposit, unseenDeposit, seenWithdrawal, unseenWithdrawal] = ids as [
      number,
      number,
      number,
      number,
    ];
    const chain = new FakeChain();
    chain.done = [
      { commandId: seenDeposit, kind: 'deposit', result: { ok: true, txHash: '0xseen-d' } },
      { commandId: seenWithdrawal, kind: 'withdrawal', result: { ok: false, reason: 'vault' } },
    ];
    const { host, submitted } = fakeHost();
    await new ChainDesk(chain, host).reconcile(v.state as EngineState);
    expect(chain.deposits).toEqual([]);
    expect(chain.withdrawals).toEqual([
      { commandId: unseenWithdrawal, owner: A, amount: usd('4') },
    ]);
    const byId = new Map(submitted.map((s) => [(s as { commandId: number }).commandId, s]));
    expect(byId.size).toBe(4);
    expect(byId.get(seenDeposit)).toEqual({
      type: 'settleDeposit',
      commandId: seenDeposit,
      success: true,
      txHash: '0xseen-d',
    });
    expect(byId.get(unseenDeposit)).toMatchObject({
      type: 'settleDeposit',
      commandId: unseenDeposit,
      success: false,
    });
    expect(byId.get(seenWithdrawal)).toEqual({
      type: 'settleWithdrawal',
      commandId: seenWithdrawal,
      success: false,
      reason: 'vault',
    });
    expect(byId.get(unseenWithdrawal)).toEqual({
      type: 'settleWithdrawal',
      commandId: unseenWithdrawal,
      success: true,
      txHash: `0xw${unseenWithdrawal}`,
    });
  });
});
