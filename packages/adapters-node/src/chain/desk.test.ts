/**
 * The chain desk on its own: one chain call per accepted command however often it is asked; a
 * chain call that throws leaves the command pending and is asked again until the chain answers
 * (the outcome of a thrown call is unknown: refunding a withdrawal the chain may have paid would
 * pay it twice); and a restart settles exactly what the engine still has pending. Found by
 * mutation: without the catch, or with a restart re-executing a withdrawal the chain already
 * reported, every end-to-end test still passed, because the simulated chain is idempotent and
 * never throws; a real chain adapter need not be either.
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
  /** How many more calls throw `throwWith` (then it is cleared); unlimited when undefined. */
  throwTimes: number | undefined;
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
    this.maybeThrow();
    return { ok: true, txHash: `0xd${request.commandId}` };
  }
  async executeWithdrawal(request: ChainWithdrawal): Promise<ChainResult> {
    this.withdrawals.push(request);
    await this.gate;
    this.maybeThrow();
    return { ok: true, txHash: `0xw${request.commandId}` };
  }
  private maybeThrow(): void {
    const e = this.throwWith;
    if (e === undefined) return;
    if (this.throwTimes !== undefined && --this.throwTimes <= 0) this.throwWith = undefined;
    throw e;
  }
  resultOf(kind: 'deposit' | 'withdrawal', commandId: number): Promise<ChainResult | null> {
    if (this.resultOfThrows !== undefined) return Promise.reject(this.resultOfThrows);
    const found = this.done.find((d) => d.kind === kind && d.commandId === commandId);
    return Promise.resolve(found?.result ?? null);
  }
  /** Makes `resultOf` throw (a chain that cannot be asked). */
  resultOfThrows: Error | undefined;
}

/** A venue where A (funded 100) has `commands` pending on the chain, with their command ids. */
function pendingVenue(...commands: { type: 'deposit' | 'withdraw'; amount: string }[]): {
  v: TestVenue;
  ids: number[];
} {
  const v = new TestVenue();
  v.run({ type: 'openAccount', account: A });
  v.fund(A, '100');
  const ids = commands.map(({ type, amount }) => {
    const o = v.outcome(
      v.run({ type, account: A, amount: usd(amount), target: { mode: 'Cross', market: 0 } }),
    );
    return o.ok && o.kind === 'command' ? o.commandId : -1;
  });
  return { v, ids };
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

  it('asks again after a chain call threw, and settles only with the chain answer', async () => {
    const chain = new FakeChain();
    chain.throwWith = new Error('rpc timeout');
    chain.throwTimes = 3;
    const { host, submitted } = fakeHost();
    const lines: string[] = [];
    const desk = new ChainDesk(chain, host, (l) => lines.push(l), { retryDelaysMs: [5, 10] });
    // Three throws for the withdrawal (the fourth call pays it), then one for the deposit.
    await desk.withdrawal(3, A, 100n);
    chain.throwWith = new Error('rpc reset');
    chain.throwTimes = 1;
    await desk.deposit(deposit(4));
    expect(chain.withdrawals.map((w) => w.commandId)).toEqual([3, 3, 3, 3]);
    expect(chain.deposits.map((d) => d.commandId)).toEqual([4, 4]);
    expect(submitted).toEqual([
      { type: 'settleWithdrawal', commandId: 3, success: true, txHash: '0xw3' },
      { type: 'settleDeposit', commandId: 4, success: true, txHash: '0xd4' },
    ]);
    expect(lines[0]).toBe(
      'chain call for command 3 threw (attempt 1): Error: rpc timeout; the outcome is unknown, so the command stays pending and is asked again in 5 ms',
    );
    // The last delay repeats.
    expect(lines[1]).toMatch(/^chain call for command 3 threw \(attempt 2\):.* again in 10 ms$/);
    expect(lines[2]).toMatch(/^chain call for command 3 threw \(attempt 3\):.* again in 10 ms$/);
    expect(lines[3]).toMatch(/^chain call for command 4 threw \(attempt 1\): Error: rpc reset;/);
    expect(lines).toHaveLength(4);
  });

  it('a closed desk stops asking: the command stays pending, nothing is settled', async () => {
    const chain = new FakeChain();
    chain.throwWith = new Error('rpc down');
    const { host, submitted } = fakeHost();
    const desk = new ChainDesk(chain, host, () => {}, { retryDelaysMs: [60_000] });
    const carried = desk.withdrawal(5, A, 100n);
    await new Promise((r) => setTimeout(r, 20));
    desk.close();
    await carried;
    expect(chain.withdrawals.map((w) => w.commandId)).toEqual([5]);
    expect(submitted).toEqual([]);
    // And it takes no new work.
    await desk.withdrawal(6, A, 1n);
    expect(chain.withdrawals).toHaveLength(1);
  });

  it('a restart does not wait for a chain that throws: reconcile returns, the retry settles later', async () => {
    const {
      v,
      ids: [id = -1],
    } = pendingVenue({ type: 'withdraw', amount: '3' });
    const chain = new FakeChain();
    chain.throwWith = new Error('rpc timeout');
    chain.throwTimes = 1;
    const { host, submitted } = fakeHost();
    const desk = new ChainDesk(chain, host, () => {}, { retryDelaysMs: [30] });
    await desk.reconcile(v.state as EngineState);
    expect(submitted).toEqual([]);
    const end = Date.now() + 5_000;
    while (submitted.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
    expect(submitted).toEqual([
      { type: 'settleWithdrawal', commandId: id, success: true, txHash: `0xw${id}` },
    ]);
  });

  it('after a restart reports what the chain did, pays unseen withdrawals, fails unseen deposits', async () => {
    const { v, ids } = pendingVenue(
      { type: 'deposit', amount: '1' },
      { type: 'deposit', amount: '2' },
      { type: 'withdraw', amount: '3' },
      { type: 'withdraw', amount: '4' },
    );
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

describe('ChainDesk reconcile with a chain that cannot answer', () => {
  it('fails the start rather than failing a deposit the chain may have executed', async () => {
    const { v } = pendingVenue({ type: 'deposit', amount: '1' });
    const chain = new FakeChain();
    chain.resultOfThrows = new Error('RPC timeout');
    const { host, submitted } = fakeHost();
    await expect(new ChainDesk(chain, host).reconcile(v.state as EngineState)).rejects.toThrow(
      'RPC timeout',
    );
    expect(submitted).toEqual([]);
  });
});

describe('ChainDesk with a stopped engine', () => {
  it('logs a settlement the engine cannot take instead of rejecting: the command stays pending', async () => {
    const chain = new FakeChain();
    const host = {
      submit(): Promise<CommandResult> {
        return Promise.reject(new Error('the engine host stopped: journal write failed'));
      },
    } as unknown as EngineHost;
    const lines: string[] = [];
    const desk = new ChainDesk(chain, host, (l) => lines.push(l));
    // The routes call the desk without awaiting it: a rejection here would be unhandled.
    await expect(desk.withdrawal(9, A, 100n)).resolves.toBeUndefined();
    await expect(desk.deposit(deposit(10))).resolves.toBeUndefined();
    expect(chain.withdrawals.map((w) => w.commandId)).toEqual([9]);
    expect(lines).toEqual([
      'settlement of command 9 not recorded (Error: the engine host stopped: journal write failed); the next start settles it from the chain',
      'settlement of command 10 not recorded (Error: the engine host stopped: journal write failed); the next start settles it from the chain',
    ]);
  });

  it('still fails a start whose engine cannot take the settlement of a pending command', async () => {
    const {
      v,
      ids: [id = -1],
    } = pendingVenue({ type: 'deposit', amount: '1' });
    const chain = new FakeChain();
    chain.done = [{ commandId: id, kind: 'deposit', result: { ok: true, txHash: '0xd' } }];
    const host = {
      submit: () => Promise.reject(new Error('journal write failed')),
    } as unknown as EngineHost;
    await expect(new ChainDesk(chain, host).reconcile(v.state as EngineState)).rejects.toThrow(
      'journal write failed',
    );
  });

  it("does not settle a pending command with the chain's record of another kind under its id", async () => {
    // A data directory restored from a journal copy older than its chain.json: command ids the
    // chain already saw are given again, here a withdrawal's id the chain knows as a deposit.
    const {
      v,
      ids: [id = -1],
    } = pendingVenue({ type: 'withdraw', amount: '3' });
    const chain = new FakeChain();
    chain.done = [{ commandId: id, kind: 'deposit', result: { ok: true, txHash: '0xother' } }];
    const { host, submitted } = fakeHost();
    await new ChainDesk(chain, host).reconcile(v.state as EngineState);
    // Asked as what it is (the chain answers for that request), never settled as paid by the
    // deposit's record: that would keep the amount debited with nothing paid out.
    expect(chain.withdrawals).toEqual([{ commandId: id, owner: A, amount: usd('3') }]);
    expect(submitted).toEqual([
      { type: 'settleWithdrawal', commandId: id, success: true, txHash: `0xw${id}` },
    ]);
  });
});
