import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import type { ChainDeposit, ChainResult, ChainWithdrawal } from '@perp/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ChainRefusal,
  InvalidChainSnapshotError,
  SimulatedChain,
  type SimulatedChainOptions,
  type SimulatedChainSnapshot,
} from './simulated-chain.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 200);

const TOKEN = `0x${'7e'.repeat(20)}`;
const VAULT = `0x${'d0'.repeat(20)}`;
const VAULT_MIXED_CASE = `0x${'D0'.repeat(10)}${'d0'.repeat(10)}`;
const ALICE = `0x${'aa'.repeat(20)}`;
const BOB = `0x${'bb'.repeat(20)}`;
const CAROL = `0x${'cc'.repeat(20)}`;
/** 2023-11-14T22:13:20.250Z: a non-whole second, so the seconds/ms boundary is exercised. */
const NOW_MS = 1_700_000_000_250;
const NOW_S = 1_700_000_000n;
const GOOD_SIG = `0x${'5a'.repeat(64)}1b`;
const BAD_SIG = `0x${'00'.repeat(64)}1c`;
const USDC = (units: number): bigint => BigInt(units) * 1_000_000n;

interface Harness {
  chain: SimulatedChain;
  options: SimulatedChainOptions;
  /** Requests the verifier was asked about. */
  verified: ChainDeposit[];
  /** Replaces the verifier's verdict (or makes it throw). */
  setVerdict(verdict: (request: ChainDeposit) => boolean): void;
  setNow(ms: number): void;
  snapshots: SimulatedChainSnapshot[];
}

function harness(extra: Partial<SimulatedChainOptions> = {}): Harness {
  const verified: ChainDeposit[] = [];
  let verdict = (request: ChainDeposit): boolean => request.permit.signature === GOOD_SIG;
  let now = NOW_MS;
  const snapshots: SimulatedChainSnapshot[] = [];
  const options: SimulatedChainOptions = {
    tokenName: 'Test USD',
    tokenAddress: TOKEN,
    vaultAddress: VAULT,
    verifyPermit: (request) => {
      verified.push(request);
      return verdict(request);
    },
    now: () => now,
    onChange: (snapshot) => snapshots.push(snapshot),
    ...extra,
  };
  return {
    chain: new SimulatedChain(options),
    options,
    verified,
    setVerdict: (v) => {
      verdict = v;
    },
    setNow: (ms) => {
      now = ms;
    },
    snapshots,
  };
}

interface DepositFields {
  commandId?: number;
  owner?: string;
  amount?: bigint;
  spender?: string;
  value?: bigint;
  nonce?: bigint;
  deadline?: bigint;
  signature?: string;
}

function deposit(fields: DepositFields = {}): ChainDeposit {
  const amount = fields.amount ?? USDC(100);
  return {
    commandId: fields.commandId ?? 1,
    owner: fields.owner ?? ALICE,
    amount,
    permit: {
      spender: fields.spender ?? VAULT,
      value: fields.value ?? amount,
      nonce: fields.nonce ?? 0n,
      deadline: fields.deadline ?? NOW_S + 3600n,
      signature: fields.signature ?? GOOD_SIG,
    },
  };
}

function withdrawal(commandId: number, owner: string, amount: bigint): ChainWithdrawal {
  return { commandId, owner, amount };
}

/** The balances, nonces, vault and supply: everything but the idempotency memory. */
function funds(chain: SimulatedChain): Omit<SimulatedChainSnapshot, 'processed' | 'format'> {
  const { processed: _processed, format: _format, ...rest } = chain.toSnapshot();
  return rest;
}

function conserved(snapshot: SimulatedChainSnapshot): boolean {
  let sum = BigInt(snapshot.vault.balance);
  for (const balance of Object.values(snapshot.balances)) sum += BigInt(balance);
  return sum === BigInt(snapshot.token.totalSupply);
}

const keccakHex = (text: string): string => `0x${bytesToHex(keccak_256(utf8ToBytes(text)))}`;

describe('SimulatedChain: construction and reads', () => {
  it('reports 6 decimals, lowercase addresses and an empty ledger', async () => {
    const { chain } = harness({
      tokenAddress: `0x${'7E'.repeat(20)}`,
      vaultAddress: VAULT_MIXED_CASE,
    });
    expect(chain.decimals).toBe(6);
    expect(chain.tokenName).toBe('Test USD');
    expect(chain.tokenAddress).toBe(TOKEN);
    expect(chain.vaultAddress).toBe(VAULT);
    expect(await chain.balanceOf(ALICE)).toBe(0n);
    expect(await chain.permitNonce(ALICE)).toBe(0n);
    expect(chain.vaultBalance()).toBe(0n);
    expect(chain.totalSupply()).toBe(0n);
  });

  it('refuses malformed or coinciding contract addresses', () => {
    expect(() => harness({ vaultAddress: '0x1234' })).toThrow(TypeError);
    expect(() => harness({ vaultAddress: TOKEN })).toThrow(/must differ/);
    expect(() => harness({ tokenName: '' })).toThrow(/tokenName/);
  });

  it('names a missing option instead of failing on it later (an untyped caller)', async () => {
    // fromSnapshot with only the callbacks, as if the snapshot's token and vault were enough:
    // a TypeError reading .length of undefined named nothing.
    const { chain } = harness();
    const partial = {
      verifyPermit: () => true,
      now: () => NOW_MS,
    } as unknown as SimulatedChainOptions;
    expect(() => SimulatedChain.fromSnapshot(chain.toSnapshot(), partial)).toThrow(
      /^tokenName must be a non-empty string/,
    );
    const missing = (name: keyof SimulatedChainOptions) =>
      harness({ [name]: undefined } as Partial<SimulatedChainOptions>);
    expect(() => missing('verifyPermit')).toThrow(/^verifyPermit must be a function/);
    expect(() => missing('now')).toThrow(/^now must be a function/);
    expect(() => harness({ onChange: 5 } as unknown as Partial<SimulatedChainOptions>)).toThrow(
      /^onChange must be a function/,
    );
  });

  it('rejects a read of a malformed wallet address', async () => {
    const { chain } = harness();
    await expect(chain.balanceOf('alice')).rejects.toThrow(TypeError);
    await expect(chain.permitNonce(`0x${'g'.repeat(40)}`)).rejects.toThrow(TypeError);
  });
});

describe('SimulatedChain: faucet', () => {
  it('mints to a wallet, returns the new balance and grows the supply', async () => {
    const { chain } = harness();
    expect(chain.faucet(ALICE, USDC(5))).toBe(USDC(5));
    expect(chain.faucet(ALICE, 7n)).toBe(USDC(5) + 7n);
    expect(await chain.balanceOf(ALICE)).toBe(5_000_007n);
    expect(chain.totalSupply()).toBe(5_000_007n);
  });

  it('compares addresses lowercase', async () => {
    const { chain } = harness();
    chain.faucet(`0x${'AA'.repeat(20)}`, 10n);
    expect(await chain.balanceOf(ALICE)).toBe(10n);
    expect(await chain.balanceOf(`0x${'aA'.repeat(20)}`)).toBe(10n);
  });

  it('refuses a non-positive amount, the vault, the token and malformed addresses', () => {
    const { chain, snapshots } = harness();
    expect(() => chain.faucet(ALICE, 0n)).toThrow(RangeError);
    expect(() => chain.faucet(ALICE, -1n)).toThrow(RangeError);
    expect(() => chain.faucet(VAULT, 1n)).toThrow(RangeError);
    expect(() => chain.faucet(TOKEN, 1n)).toThrow(RangeError);
    expect(() => chain.faucet('0xabc', 1n)).toThrow(TypeError);
    expect(chain.totalSupply()).toBe(0n);
    expect(snapshots).toHaveLength(0);
  });

  it('refuses a mint that would take the supply above uint256, as the contract would', async () => {
    const { chain } = harness();
    const max = 2n ** 256n - 1n;
    expect(chain.faucet(ALICE, max - 5n)).toBe(max - 5n);
    expect(() => chain.faucet(`0x${'bb'.repeat(20)}`, 6n)).toThrow(/exceed 2\^256 - 1/);
    expect(chain.totalSupply()).toBe(max - 5n);
    expect(chain.faucet(`0x${'bb'.repeat(20)}`, 5n)).toBe(5n);
    expect(chain.totalSupply()).toBe(max);
  });
});

describe('SimulatedChain: deposits', () => {
  it('moves the amount from owner to vault, consumes the nonce and returns the keccak txHash', async () => {
    const { chain, verified } = harness();
    chain.faucet(ALICE, USDC(250));
    const request = deposit({
      commandId: 7,
      amount: USDC(100),
      value: USDC(120),
      spender: VAULT_MIXED_CASE,
    });
    const result = await chain.executeDeposit(request);
    const operation = [
      'perp-simulated-chain/1',
      TOKEN,
      VAULT,
      'deposit',
      '7',
      ALICE,
      '100000000',
      VAULT,
      '120000000',
      '0',
      (NOW_S + 3600n).toString(),
      GOOD_SIG,
    ].join('|');
    expect(result).toEqual({ ok: true, txHash: keccakHex(operation) });
    expect(await chain.balanceOf(ALICE)).toBe(USDC(150));
    expect(chain.vaultBalance()).toBe(USDC(100));
    expect(await chain.balanceOf(VAULT)).toBe(USDC(100));
    expect(await chain.permitNonce(ALICE)).toBe(1n);
    expect(chain.totalSupply()).toBe(USDC(250));
    expect(verified).toEqual([request]);
  });

  it('gives the same txHash for the same history on another instance', async () => {
    const a = harness().chain;
    const b = harness().chain;
    a.faucet(ALICE, USDC(1));
    b.faucet(ALICE, USDC(1));
    const request = deposit({ amount: USDC(1) });
    expect(await a.executeDeposit(request)).toEqual(await b.executeDeposit(request));
  });

  it('accepts a deadline equal to the current whole second (block.timestamp <= deadline)', async () => {
    const { chain } = harness();
    chain.faucet(ALICE, USDC(1));
    const result = await chain.executeDeposit(deposit({ amount: USDC(1), deadline: NOW_S }));
    expect(result.ok).toBe(true);
  });

  interface RefusalCase {
    rule: string;
    setup?: (h: Harness) => Promise<void>;
    request: ChainDeposit;
    reason: string;
    verifierAsked: boolean;
  }

  const refusals: RefusalCase[] = [
    {
      rule: 'the permit spender must be the vault',
      request: deposit({ spender: BOB }),
      reason: ChainRefusal.SPENDER_NOT_VAULT,
      verifierAsked: false,
    },
    {
      rule: 'the permit nonce must not be used already',
      setup: async ({ chain }) => {
        const first = await chain.executeDeposit(deposit({ commandId: 100, amount: USDC(1) }));
        expect(first.ok).toBe(true);
      },
      request: deposit({ nonce: 0n }),
      reason: ChainRefusal.NONCE_USED,
      verifierAsked: false,
    },
    {
      rule: 'the permit nonce must not be ahead of the token nonce',
      request: deposit({ nonce: 1n }),
      reason: ChainRefusal.NONCE_AHEAD,
      verifierAsked: false,
    },
    {
      rule: 'the permit deadline (seconds) must not have passed',
      request: deposit({ deadline: NOW_S - 1n }),
      reason: ChainRefusal.PERMIT_EXPIRED,
      verifierAsked: false,
    },
    {
      rule: 'the deadline is judged in whole seconds: one second past it is expired',
      setup: async ({ setNow }) => setNow(Number(NOW_S + 1n) * 1000),
      request: deposit({ deadline: NOW_S }),
      reason: ChainRefusal.PERMIT_EXPIRED,
      verifierAsked: false,
    },
    {
      rule: 'the permit value must cover the amount',
      request: deposit({ amount: USDC(100), value: USDC(100) - 1n }),
      reason: ChainRefusal.PERMIT_VALUE_TOO_LOW,
      verifierAsked: false,
    },
    {
      rule: 'the owner must hold the amount',
      request: deposit({ amount: USDC(1000) + 1n }),
      reason: ChainRefusal.INSUFFICIENT_TOKEN_BALANCE,
      verifierAsked: false,
    },
    {
      rule: 'the permit signature must verify',
      request: deposit({ signature: BAD_SIG }),
      reason: ChainRefusal.INVALID_PERMIT_SIGNATURE,
      verifierAsked: true,
    },
    {
      rule: 'only a literal true from the verifier counts (phantom permit)',
      setup: async ({ setVerdict }) => setVerdict(() => 'yes' as unknown as boolean),
      request: deposit(),
      reason: ChainRefusal.INVALID_PERMIT_SIGNATURE,
      verifierAsked: true,
    },
    {
      rule: 'the amount must be positive',
      request: deposit({ amount: 0n, value: 0n }),
      reason: ChainRefusal.AMOUNT_NOT_POSITIVE,
      verifierAsked: false,
    },
    {
      rule: 'a negative amount is refused (it would mint)',
      request: deposit({ amount: -5n, value: 0n }),
      reason: ChainRefusal.AMOUNT_NOT_POSITIVE,
      verifierAsked: false,
    },
    {
      rule: 'the owner must be an address',
      request: deposit({ owner: 'alice' }),
      reason: ChainRefusal.INVALID_OWNER,
      verifierAsked: false,
    },
    {
      rule: 'the owner must not be the vault',
      request: deposit({ owner: VAULT }),
      reason: ChainRefusal.OWNER_IS_CONTRACT,
      verifierAsked: false,
    },
  ];

  it.each(refusals)('refuses with no state change: $rule', async (c) => {
    const h = harness();
    h.chain.faucet(ALICE, USDC(1000));
    await c.setup?.(h);
    const before = funds(h.chain);
    const processedBefore = h.chain.processed().length;
    h.verified.length = 0;

    const result = await h.chain.executeDeposit(c.request);

    expect(result).toEqual({ ok: false, reason: c.reason });
    expect(funds(h.chain)).toEqual(before);
    expect(conserved(h.chain.toSnapshot())).toBe(true);
    expect(h.verified.length > 0).toBe(c.verifierAsked);
    // The refusal itself is remembered (idempotency covers failures too).
    expect(h.chain.processed()).toHaveLength(processedBefore + 1);
  });

  it('refuses an invalid commandId without remembering it', async () => {
    const { chain } = harness();
    chain.faucet(ALICE, USDC(1));
    for (const commandId of [-1, 1.5, Number.NaN, 2 ** 53]) {
      expect(await chain.executeDeposit(deposit({ commandId, amount: USDC(1) }))).toEqual({
        ok: false,
        reason: ChainRefusal.INVALID_COMMAND_ID,
      });
    }
    expect(chain.processed()).toHaveLength(0);
    expect(await chain.balanceOf(ALICE)).toBe(USDC(1));
  });

  it('lets a throwing verifier reject the call and remembers nothing, so a retry can succeed', async () => {
    const h = harness();
    h.chain.faucet(ALICE, USDC(100));
    h.setVerdict(() => {
      throw new Error('verifier down');
    });
    await expect(h.chain.executeDeposit(deposit())).rejects.toThrow('verifier down');
    expect(h.chain.processed()).toHaveLength(0);
    expect(await h.chain.balanceOf(ALICE)).toBe(USDC(100));
    h.setVerdict(() => true);
    expect((await h.chain.executeDeposit(deposit())).ok).toBe(true);
    expect(await h.chain.balanceOf(ALICE)).toBe(0n);
  });
});

describe('SimulatedChain: idempotency by commandId', () => {
  it('answers resultOf with what it did, by kind and id; null for what it never executed', async () => {
    const { chain } = harness();
    chain.faucet(ALICE, USDC(300));
    const done = await chain.executeDeposit(deposit({ commandId: 5, amount: USDC(100) }));
    expect(await chain.resultOf('deposit', 5)).toEqual(done);
    // The same id as another kind is another request; an id never seen is nothing.
    expect(await chain.resultOf('withdrawal', 5)).toBeNull();
    expect(await chain.resultOf('deposit', 6)).toBeNull();
  });

  it('returns the first success again without moving funds or asking the verifier', async () => {
    const { chain, verified } = harness();
    chain.faucet(ALICE, USDC(300));
    const request = deposit({ commandId: 3, amount: USDC(100) });
    const first = await chain.executeDeposit(request);
    const second = await chain.executeDeposit({
      ...request,
      owner: ALICE.toUpperCase().replace('0X', '0x'),
    });
    expect(first.ok).toBe(true);
    expect(second).toEqual(first);
    expect(await chain.balanceOf(ALICE)).toBe(USDC(200));
    expect(chain.vaultBalance()).toBe(USDC(100));
    expect(await chain.permitNonce(ALICE)).toBe(1n);
    expect(verified).toHaveLength(1);
    expect(chain.processed()).toHaveLength(1);
  });

  it('returns the first refusal again even after the cause went away', async () => {
    const { chain } = harness();
    const request = deposit({ commandId: 4, amount: USDC(10) });
    const refusal = { ok: false, reason: ChainRefusal.INSUFFICIENT_TOKEN_BALANCE };
    expect(await chain.executeDeposit(request)).toEqual(refusal);
    chain.faucet(ALICE, USDC(10));
    expect(await chain.executeDeposit(request)).toEqual(refusal);
    expect(await chain.balanceOf(ALICE)).toBe(USDC(10));
    // A new command id is a new attempt.
    expect((await chain.executeDeposit({ ...request, commandId: 5 })).ok).toBe(true);
  });

  it('refuses a different request under a known commandId and keeps the first result', async () => {
    const { chain } = harness();
    chain.faucet(ALICE, USDC(300));
    const request = deposit({ commandId: 9, amount: USDC(100) });
    const first = await chain.executeDeposit(request);
    const before = funds(chain);
    const conflict = { ok: false, reason: ChainRefusal.COMMAND_ID_CONFLICT };
    expect(
      await chain.executeDeposit(deposit({ commandId: 9, amount: USDC(50), nonce: 1n })),
    ).toEqual(conflict);
    expect(await chain.executeWithdrawal(withdrawal(9, ALICE, USDC(100)))).toEqual(conflict);
    expect(funds(chain)).toEqual(before);
    expect(chain.processed()).toHaveLength(1);
    expect(await chain.executeDeposit(request)).toEqual(first);
  });
});

describe('SimulatedChain: withdrawals', () => {
  async function funded(): Promise<Harness> {
    const h = harness();
    h.chain.faucet(ALICE, USDC(500));
    expect((await h.chain.executeDeposit(deposit({ commandId: 1, amount: USDC(500) }))).ok).toBe(
      true,
    );
    return h;
  }

  it('pays out of the vault to the owner with a deterministic txHash', async () => {
    const { chain } = await funded();
    const result = await chain.executeWithdrawal(withdrawal(2, BOB, USDC(200)));
    const operation = [
      'perp-simulated-chain/1',
      TOKEN,
      VAULT,
      'withdrawal',
      '2',
      BOB,
      '200000000',
    ].join('|');
    expect(result).toEqual({ ok: true, txHash: keccakHex(operation) });
    expect(await chain.balanceOf(BOB)).toBe(USDC(200));
    expect(chain.vaultBalance()).toBe(USDC(300));
    expect(chain.totalSupply()).toBe(USDC(500));
  });

  it('refuses more than the vault holds, with no state change', async () => {
    const { chain } = await funded();
    const before = funds(chain);
    expect(await chain.executeWithdrawal(withdrawal(2, ALICE, USDC(500) + 1n))).toEqual({
      ok: false,
      reason: ChainRefusal.INSUFFICIENT_VAULT_BALANCE,
    });
    expect(funds(chain)).toEqual(before);
  });

  it('refuses a non-positive amount, a malformed owner and the vault as owner', async () => {
    const { chain } = await funded();
    const before = funds(chain);
    const cases: [ChainWithdrawal, string][] = [
      [withdrawal(2, ALICE, 0n), ChainRefusal.AMOUNT_NOT_POSITIVE],
      [withdrawal(3, ALICE, -1n), ChainRefusal.AMOUNT_NOT_POSITIVE],
      [withdrawal(4, '0xnothex', 1n), ChainRefusal.INVALID_OWNER],
      [withdrawal(5, VAULT, 1n), ChainRefusal.OWNER_IS_CONTRACT],
      [withdrawal(6, TOKEN, 1n), ChainRefusal.OWNER_IS_CONTRACT],
    ];
    for (const [request, reason] of cases) {
      expect(await chain.executeWithdrawal(request)).toEqual({ ok: false, reason });
    }
    expect(funds(chain)).toEqual(before);
  });

  it('is idempotent by commandId', async () => {
    const { chain } = await funded();
    const first = await chain.executeWithdrawal(withdrawal(2, ALICE, USDC(100)));
    const again = await chain.executeWithdrawal(withdrawal(2, ALICE, USDC(100)));
    expect(again).toEqual(first);
    expect(await chain.balanceOf(ALICE)).toBe(USDC(100));
    expect(chain.vaultBalance()).toBe(USDC(400));
  });
});

describe('SimulatedChain: onChange', () => {
  it('is called once per mutation with the new state, and not for reads or replays', async () => {
    const { chain, snapshots } = harness();
    chain.faucet(ALICE, USDC(10));
    await chain.executeDeposit(deposit({ amount: USDC(10) }));
    await chain.executeDeposit(deposit({ amount: USDC(10) }));
    await chain.executeWithdrawal(withdrawal(2, ALICE, USDC(99)));
    await chain.balanceOf(ALICE);
    expect(snapshots).toHaveLength(3);
    expect(snapshots[0]?.balances[ALICE]).toBe('10000000');
    expect(snapshots[1]?.vault.balance).toBe('10000000');
    expect(snapshots[2]?.processed.map((p) => p.commandId)).toEqual([1, 2]);
    expect(snapshots.at(-1)).toEqual(chain.toSnapshot());
  });

  it('rolls the mutation back when persisting it fails, and the error reaches the caller', async () => {
    let failing = false;
    const h = harness({
      onChange: () => {
        if (failing) throw new Error('disk full');
      },
    });
    h.chain.faucet(ALICE, USDC(10));
    const before = h.chain.toSnapshot();
    failing = true;
    expect(() => h.chain.faucet(ALICE, 1n)).toThrow('disk full');
    await expect(h.chain.executeDeposit(deposit({ amount: USDC(10) }))).rejects.toThrow(
      'disk full',
    );
    await expect(h.chain.executeDeposit(deposit({ commandId: 2, nonce: 5n }))).rejects.toThrow(
      'disk full',
    );
    expect(h.chain.toSnapshot()).toEqual(before);
    failing = false;
    // Nothing was remembered, so the same commandId now executes.
    expect((await h.chain.executeDeposit(deposit({ amount: USDC(10) }))).ok).toBe(true);
    expect(await h.chain.balanceOf(ALICE)).toBe(0n);
  });
});

describe('SimulatedChain: snapshots', () => {
  async function busyChain(): Promise<Harness> {
    const h = harness();
    h.chain.faucet(ALICE, USDC(100));
    h.chain.faucet(BOB, USDC(50));
    await h.chain.executeDeposit(deposit({ commandId: 1, amount: USDC(60) }));
    await h.chain.executeDeposit(deposit({ commandId: 2, owner: BOB, amount: USDC(60) }));
    await h.chain.executeDeposit(
      deposit({ commandId: 3, owner: BOB, amount: USDC(10), signature: BAD_SIG }),
    );
    await h.chain.executeWithdrawal(withdrawal(4, CAROL, USDC(25)));
    return h;
  }

  it('is JSON-safe and round-trips through fromSnapshot', async () => {
    const { chain, options } = await busyChain();
    const snapshot = chain.toSnapshot();
    const json = JSON.stringify(snapshot);
    const restored = SimulatedChain.fromSnapshot(
      JSON.parse(json) as SimulatedChainSnapshot,
      options,
    );
    expect(restored.toSnapshot()).toEqual(snapshot);
    expect(JSON.stringify(restored.toSnapshot())).toBe(json);
    expect(await restored.balanceOf(ALICE)).toBe(USDC(40));
    expect(await restored.balanceOf(BOB)).toBe(USDC(50));
    expect(await restored.balanceOf(CAROL)).toBe(USDC(25));
    expect(restored.vaultBalance()).toBe(USDC(35));
    expect(await restored.permitNonce(ALICE)).toBe(1n);
    expect(await restored.permitNonce(BOB)).toBe(0n);
  });

  it('restores the idempotency memory: replays return the first result with no side effect', async () => {
    const { chain, options } = await busyChain();
    const restored = SimulatedChain.fromSnapshot(chain.toSnapshot(), options);
    const replays = [
      () => restored.executeDeposit(deposit({ commandId: 1, amount: USDC(60) })),
      () =>
        restored.executeDeposit(
          deposit({ commandId: 3, owner: BOB, amount: USDC(10), signature: BAD_SIG }),
        ),
      () => restored.executeWithdrawal(withdrawal(4, CAROL, USDC(25))),
    ];
    const results: ChainResult[] = [];
    for (const replay of replays) results.push(await replay());
    expect(results).toEqual(
      chain
        .processed()
        .filter((p) => p.commandId !== 2)
        .map((p) => p.result),
    );
    expect(restored.toSnapshot()).toEqual(chain.toSnapshot());
  });

  it('behaves like the original on new operations', async () => {
    const { chain, options } = await busyChain();
    const restored = SimulatedChain.fromSnapshot(chain.toSnapshot(), options);
    const next = deposit({ commandId: 5, amount: USDC(40), nonce: 1n });
    expect(await restored.executeDeposit(next)).toEqual(await chain.executeDeposit(next));
    expect(restored.toSnapshot()).toEqual(chain.toSnapshot());
  });

  it('refuses a snapshot of another chain or with a broken field', async () => {
    const { chain, options } = await busyChain();
    const good = chain.toSnapshot();
    const load = (snapshot: unknown, opts = options): SimulatedChain =>
      SimulatedChain.fromSnapshot(snapshot as SimulatedChainSnapshot, opts);
    const broken: [string, unknown, SimulatedChainOptions?][] = [
      ['vault.address', good, { ...options, vaultAddress: CAROL }],
      ['token.name', good, { ...options, tokenName: 'Other' }],
      ['format', { ...good, format: 'perp-simulated-chain/0' }],
      ['token.decimals', { ...good, token: { ...good.token, decimals: 18 } }],
      ['token.totalSupply', { ...good, token: { ...good.token, totalSupply: '1' } }],
      [`balances.${ALICE}`, { ...good, balances: { ...good.balances, [ALICE]: '-1' } }],
      [`balances.${ALICE}`, { ...good, balances: { ...good.balances, [ALICE]: '01' } }],
      [`balances.${VAULT}`, { ...good, balances: { ...good.balances, [VAULT]: '0' } }],
      [`nonces.${BOB}`, { ...good, nonces: { ...good.nonces, [BOB]: 'x' } }],
      ['processed', { ...good, processed: {} }],
      ['processed.1', { ...good, processed: [good.processed[0], good.processed[0]] }],
      [
        'processed.0',
        {
          ...good,
          processed: [
            { ...good.processed[0], result: { ok: true, txHash: `0x${'0'.repeat(64)}` } },
          ],
        },
      ],
      ['balances', { ...good, balances: null }],
      // Found by fuzzing: a null entry threw a TypeError, which the venue's start-up does not
      // turn into its one-line StartupError.
      ['processed.1', { ...good, processed: [good.processed[0], null] }],
      // The token is a uint256 contract: its faucet never mints beyond 2^256 - 1.
      [
        'token.totalSupply',
        {
          ...good,
          token: { ...good.token, totalSupply: String(2n ** 256n + 1n) },
          vault: { ...good.vault, balance: String(2n ** 256n + 1n - sumOf(good.balances)) },
        },
      ],
    ];
    for (const [path, snapshot, opts] of broken) {
      let error: unknown;
      try {
        load(snapshot, opts);
      } catch (e) {
        error = e;
      }
      expect(error, path).toBeInstanceOf(InvalidChainSnapshotError);
      expect((error as InvalidChainSnapshotError).path).toBe(path);
    }
  });
});

describe('SimulatedChain: conservation (property)', () => {
  const wallets = [ALICE, BOB, CAROL];
  type Op =
    | { kind: 'faucet'; wallet: number; amount: bigint }
    | {
        kind: 'deposit';
        wallet: number;
        amount: bigint;
        nonceSkew: number;
        goodSig: boolean;
        replay: number | null;
      }
    | { kind: 'withdraw'; wallet: number; amount: bigint; replay: number | null };

  const amount = fc.bigInt({ min: 1n, max: 2_000_000n });
  const wallet = fc.integer({ min: 0, max: wallets.length - 1 });
  const replay = fc.option(fc.nat({ max: 50 }), { freq: 3 });
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant('faucet' as const), wallet, amount }),
    fc.record({
      kind: fc.constant('deposit' as const),
      wallet,
      amount,
      nonceSkew: fc.constantFrom(0, 0, 0, -1, 1),
      goodSig: fc.boolean(),
      replay,
    }),
    fc.record({ kind: fc.constant('withdraw' as const), wallet, amount, replay }),
  );

  it('keeps totalSupply == balances + vault, memory of first results, and snapshot equivalence', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), async (ops) => {
        const h = harness();
        const { chain } = h;
        /** Every request sent under a commandId, with its first result. */
        const sent = new Map<number, { run: () => Promise<ChainResult>; first: ChainResult }>();
        let nextId = 1;
        for (const o of ops) {
          const owner = wallets[o.wallet] as string;
          if (o.kind === 'faucet') {
            chain.faucet(owner, o.amount);
          } else if (o.replay !== null && sent.size > 0) {
            const earlier = sent.get((o.replay % sent.size) + 1);
            expect(earlier).toBeDefined();
            const before = chain.toSnapshot();
            expect(await earlier?.run()).toEqual(earlier?.first);
            expect(chain.toSnapshot()).toEqual(before);
          } else {
            const commandId = nextId++;
            let run: () => Promise<ChainResult>;
            if (o.kind === 'deposit') {
              const nonce = (await chain.permitNonce(owner)) + BigInt(o.nonceSkew);
              const request = deposit({
                commandId,
                owner,
                amount: o.amount,
                nonce,
                signature: o.goodSig ? GOOD_SIG : BAD_SIG,
              });
              run = () => chain.executeDeposit(request);
            } else {
              const request = withdrawal(commandId, owner, o.amount);
              run = () => chain.executeWithdrawal(request);
            }
            sent.set(commandId, { run, first: await run() });
          }
          const snapshot = chain.toSnapshot();
          expect(conserved(snapshot)).toBe(true);
          for (const balance of Object.values(snapshot.balances))
            expect(BigInt(balance) >= 0n).toBe(true);
          expect(BigInt(snapshot.vault.balance) >= 0n).toBe(true);
        }
        const restored = SimulatedChain.fromSnapshot(
          JSON.parse(JSON.stringify(chain.toSnapshot())) as SimulatedChainSnapshot,
          h.options,
        );
        expect(restored.toSnapshot()).toEqual(chain.toSnapshot());
      }),
      { numRuns: runs },
    );
  });
});

/** The sum of a snapshot's wallet balances. */
function sumOf(balances: Readonly<Record<string, string>>): bigint {
  return Object.values(balances).reduce((sum, b) => sum + BigInt(b), 0n);
}
