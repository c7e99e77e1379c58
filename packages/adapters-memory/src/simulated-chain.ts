/**
 * The simulated chain: a deterministic, in-memory collateral token (ERC-20 balances plus ERC-2612
 * `nonces(owner)`) and the vault that deposits and withdrawals move it through. It is the embedded
 * default behind the {@link ChainAdapter} port (protocol section 9); a real EVM adapter fits the
 * same port.
 *
 * Every refusal is data (`{ ok: false, reason }`) and changes nothing but the idempotency memory;
 * funds move only after the injected permit verifier returned exactly `true` (reliability-anchors
 * 2.3, the phantom-permit lesson: "no error" is not "verified").
 *
 * @module
 */

import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import {
  type ChainAdapter,
  type ChainDeposit,
  type ChainResult,
  type ChainWithdrawal,
  COLLATERAL_DECIMALS,
} from '@perp/core';

/** Decimals of the simulated collateral token: the core's collateral precision (6). */
export { COLLATERAL_DECIMALS };

/** Format tag of {@link SimulatedChainSnapshot}; bumped when the shape changes. */
export const SIMULATED_CHAIN_SNAPSHOT_FORMAT = 'perp-simulated-chain/1';

/** The `reason` strings of refused chain operations, one per rule. */
export const ChainRefusal = {
  INVALID_COMMAND_ID: 'invalid commandId',
  COMMAND_ID_CONFLICT: 'commandId reused with a different request',
  INVALID_OWNER: 'invalid owner address',
  OWNER_IS_CONTRACT: 'owner is the vault or the token contract',
  AMOUNT_NOT_POSITIVE: 'amount must be positive',
  SPENDER_NOT_VAULT: 'permit spender is not the vault',
  NONCE_USED: 'permit nonce already used',
  NONCE_AHEAD: 'permit nonce ahead',
  PERMIT_EXPIRED: 'permit deadline passed',
  PERMIT_VALUE_TOO_LOW: 'permit value below amount',
  INSUFFICIENT_TOKEN_BALANCE: 'insufficient token balance',
  INVALID_PERMIT_SIGNATURE: 'invalid permit signature',
  INSUFFICIENT_VAULT_BALANCE: 'insufficient vault balance',
} as const;

/** One of the {@link ChainRefusal} reasons. */
export type ChainRefusalReason = (typeof ChainRefusal)[keyof typeof ChainRefusal];

/** Construction options of a {@link SimulatedChain}. */
export interface SimulatedChainOptions {
  /** The token's name (its EIP-712 domain name). */
  readonly tokenName: string;
  /** Address of the collateral token contract. */
  readonly tokenAddress: string;
  /** Address of the vault; every permit must name it as spender. */
  readonly vaultAddress: string;
  /** The permit signature check (the core verifier); only a literal `true` lets funds move. */
  readonly verifyPermit: (request: ChainDeposit) => boolean;
  /** Current time in ms; permit deadlines (seconds) are judged against it. */
  readonly now: () => number;
  /**
   * Called after every mutation with the new state, for persistence. If it throws, the mutation
   * is rolled back and the error reaches the caller, so memory never runs ahead of what was saved.
   */
  readonly onChange?: (snapshot: SimulatedChainSnapshot) => void;
}

/** A processed deposit or withdrawal, as remembered for idempotency. */
export interface ProcessedChainCommand {
  readonly commandId: number;
  readonly kind: 'deposit' | 'withdrawal';
  /** Canonical text of the request; its keccak-256 is the txHash of a successful operation. */
  readonly operation: string;
  readonly result: ChainResult;
}

/** The whole state of a {@link SimulatedChain} as JSON-safe data (amounts as decimal strings). */
export interface SimulatedChainSnapshot {
  readonly format: typeof SIMULATED_CHAIN_SNAPSHOT_FORMAT;
  readonly token: {
    readonly name: string;
    readonly address: string;
    readonly decimals: number;
    readonly totalSupply: string;
  };
  readonly vault: { readonly address: string; readonly balance: string };
  /** Token balances of wallets other than the vault, by lowercase address in ascending order. */
  readonly balances: Readonly<Record<string, string>>;
  /** ERC-2612 nonces, by lowercase address in ascending order. */
  readonly nonces: Readonly<Record<string, string>>;
  /** Every processed command in the order it was first executed. */
  readonly processed: readonly ProcessedChainCommand[];
}

/** A snapshot that cannot be loaded: malformed, inconsistent, or from another chain. */
export class InvalidChainSnapshotError extends Error {
  /** Where in the snapshot the problem is, e.g. `balances.0xab..`. */
  readonly path: string;

  constructor(path: string, message: string) {
    super(`invalid simulated chain snapshot at ${path}: ${message}`);
    this.name = 'InvalidChainSnapshotError';
    this.path = path;
  }
}

const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/;
/** The largest uint256: the bound of an ERC-20 balance and supply. */
const MAX_UINT256 = 2n ** 256n - 1n;
const UINT_RE = /^(0|[1-9][0-9]*)$/;

type Undo = (() => void)[];

/** A deterministic in-memory collateral token and vault implementing {@link ChainAdapter}. */
export class SimulatedChain implements ChainAdapter {
  /** Decimals of the token, always 6. */
  readonly decimals: number = COLLATERAL_DECIMALS;
  /** The token's name. */
  readonly tokenName: string;
  /** Lowercase token address. */
  readonly tokenAddress: string;
  /** Lowercase vault address. */
  readonly vaultAddress: string;

  readonly #verifyPermit: (request: ChainDeposit) => boolean;
  readonly #now: () => number;
  readonly #onChange: ((snapshot: SimulatedChainSnapshot) => void) | undefined;
  readonly #balances = new Map<string, bigint>();
  readonly #nonces = new Map<string, bigint>();
  readonly #byCommandId = new Map<number, ProcessedChainCommand>();
  readonly #processed: ProcessedChainCommand[] = [];
  #vaultBalance = 0n;
  #totalSupply = 0n;

  constructor(options: SimulatedChainOptions) {
    // Checked here, not where first used: an untyped caller (a snapshot restored with only the
    // callbacks) would otherwise meet a TypeError naming nothing, or a deposit that throws.
    if (typeof options.tokenName !== 'string' || options.tokenName.length === 0) {
      throw new TypeError(`tokenName must be a non-empty string, got ${String(options.tokenName)}`);
    }
    for (const name of ['verifyPermit', 'now'] as const) {
      if (typeof options[name] !== 'function') throw new TypeError(`${name} must be a function`);
    }
    if (options.onChange !== undefined && typeof options.onChange !== 'function') {
      throw new TypeError('onChange must be a function when given');
    }
    this.tokenName = options.tokenName;
    this.tokenAddress = normaliseAddress(options.tokenAddress, 'tokenAddress');
    this.vaultAddress = normaliseAddress(options.vaultAddress, 'vaultAddress');
    if (this.tokenAddress === this.vaultAddress) {
      throw new TypeError('tokenAddress and vaultAddress must differ');
    }
    this.#verifyPermit = options.verifyPermit;
    this.#now = options.now;
    this.#onChange = options.onChange;
  }

  /** Restores a saved chain; the options must name the snapshot's token and vault. */
  static fromSnapshot(
    snapshot: SimulatedChainSnapshot,
    options: SimulatedChainOptions,
  ): SimulatedChain {
    const chain = new SimulatedChain(options);
    chain.#load(snapshot);
    return chain;
  }

  /** Token balance of a wallet, micro-units; for the vault address, the vault's holdings. */
  async balanceOf(wallet: string): Promise<bigint> {
    return this.#balanceOf(normaliseAddress(wallet, 'wallet'));
  }

  /** The token's ERC-2612 nonce of a wallet: the nonce its next permit must carry. */
  async permitNonce(wallet: string): Promise<bigint> {
    return this.#nonces.get(normaliseAddress(wallet, 'wallet')) ?? 0n;
  }

  /** Collateral held by the vault, micro-units. */
  vaultBalance(): bigint {
    return this.#vaultBalance;
  }

  /** Every token in existence, micro-units: the sum of all balances plus the vault's. */
  totalSupply(): bigint {
    return this.#totalSupply;
  }

  /** Processed deposits and withdrawals in execution order (refusals included). */
  processed(): readonly ProcessedChainCommand[] {
    return this.#processed.slice();
  }

  /** What this chain did with the `kind` command `commandId`; `null` when it never executed it. */
  resultOf(kind: 'deposit' | 'withdrawal', commandId: number): Promise<ChainResult | null> {
    for (const p of this.#processed)
      if (p.commandId === commandId && p.kind === kind) return Promise.resolve(p.result);
    return Promise.resolve(null);
  }

  /** Mints `amount` tokens to a wallet (the operator faucet) and returns its new balance. */
  faucet(wallet: string, amount: bigint): bigint {
    const owner = normaliseAddress(wallet, 'wallet');
    if (this.#isContract(owner)) {
      throw new RangeError('faucet: the vault and the token contract are not wallets');
    }
    if (amount <= 0n) throw new RangeError(`faucet: amount must be positive, got ${amount}`);
    // Token balances and the supply are uint256 on the contract this simulates, whose mint
    // reverts on overflow: a larger balance could be neither permitted nor deposited whole.
    if (this.#totalSupply + amount > MAX_UINT256)
      throw new RangeError(
        `faucet: the token supply would exceed 2^256 - 1 micro-units (${this.#totalSupply} minted)`,
      );
    return this.#mutate((undo) => {
      const balance = this.#balanceOf(owner) + amount;
      this.#setBalance(owner, balance, undo);
      const supply = this.#totalSupply;
      this.#totalSupply = supply + amount;
      undo.push(() => {
        this.#totalSupply = supply;
      });
      return balance;
    });
  }

  /**
   * Executes a deposit: the permit (spender, nonce, deadline, value, signature), then the vault
   * pulling `amount` from the owner. Idempotent by `commandId`, refusals included.
   */
  async executeDeposit(request: ChainDeposit): Promise<ChainResult> {
    if (!isCommandId(request.commandId)) return refused(ChainRefusal.INVALID_COMMAND_ID);
    const operation = this.#depositOperation(request);
    const earlier = this.#recalled(request.commandId, 'deposit', operation);
    if (earlier !== undefined) return earlier;

    const reason = this.#depositRefusal(request);
    if (reason !== undefined) {
      return this.#mutate((undo) =>
        this.#record(request.commandId, 'deposit', operation, refused(reason), undo),
      );
    }
    const owner = request.owner.toLowerCase();
    return this.#mutate((undo) => {
      const nonce = this.#nonces.get(owner);
      this.#nonces.set(owner, request.permit.nonce + 1n);
      undo.push(() => {
        if (nonce === undefined) this.#nonces.delete(owner);
        else this.#nonces.set(owner, nonce);
      });
      this.#setBalance(owner, this.#balanceOf(owner) - request.amount, undo);
      this.#setVault(this.#vaultBalance + request.amount, undo);
      const result: ChainResult = { ok: true, txHash: txHashOf(operation) };
      return this.#record(request.commandId, 'deposit', operation, result, undo);
    });
  }

  /** Pays `amount` out of the vault to the owner. Idempotent by `commandId`, refusals included. */
  async executeWithdrawal(request: ChainWithdrawal): Promise<ChainResult> {
    if (!isCommandId(request.commandId)) return refused(ChainRefusal.INVALID_COMMAND_ID);
    const operation = this.#withdrawalOperation(request);
    const earlier = this.#recalled(request.commandId, 'withdrawal', operation);
    if (earlier !== undefined) return earlier;

    const reason = this.#withdrawalRefusal(request);
    if (reason !== undefined) {
      return this.#mutate((undo) =>
        this.#record(request.commandId, 'withdrawal', operation, refused(reason), undo),
      );
    }
    const owner = request.owner.toLowerCase();
    return this.#mutate((undo) => {
      this.#setVault(this.#vaultBalance - request.amount, undo);
      this.#setBalance(owner, this.#balanceOf(owner) + request.amount, undo);
      const result: ChainResult = { ok: true, txHash: txHashOf(operation) };
      return this.#record(request.commandId, 'withdrawal', operation, result, undo);
    });
  }

  /** The whole state as JSON-safe data, deterministic for a given history. */
  toSnapshot(): SimulatedChainSnapshot {
    return {
      format: SIMULATED_CHAIN_SNAPSHOT_FORMAT,
      token: {
        name: this.tokenName,
        address: this.tokenAddress,
        decimals: this.decimals,
        totalSupply: this.#totalSupply.toString(),
      },
      vault: { address: this.vaultAddress, balance: this.#vaultBalance.toString() },
      balances: sortedRecord(this.#balances),
      nonces: sortedRecord(this.#nonces),
      // Entries are frozen, so the snapshot can share them.
      processed: this.#processed.slice(),
    };
  }

  // --- rules ---

  #depositRefusal(request: ChainDeposit): ChainRefusalReason | undefined {
    if (!ADDRESS_RE.test(request.owner)) return ChainRefusal.INVALID_OWNER;
    const owner = request.owner.toLowerCase();
    if (this.#isContract(owner)) return ChainRefusal.OWNER_IS_CONTRACT;
    if (request.amount <= 0n) return ChainRefusal.AMOUNT_NOT_POSITIVE;
    const { permit } = request;
    if (permit.spender.toLowerCase() !== this.vaultAddress) return ChainRefusal.SPENDER_NOT_VAULT;
    const expected = this.#nonces.get(owner) ?? 0n;
    if (permit.nonce < expected) return ChainRefusal.NONCE_USED;
    if (permit.nonce > expected) return ChainRefusal.NONCE_AHEAD;
    // As on chain: `block.timestamp <= deadline`, block.timestamp in whole seconds, now() in ms.
    const blockTimestamp = BigInt(Math.floor(this.#now() / 1000));
    if (blockTimestamp > permit.deadline) return ChainRefusal.PERMIT_EXPIRED;
    if (permit.value < request.amount) return ChainRefusal.PERMIT_VALUE_TOO_LOW;
    if (this.#balanceOf(owner) < request.amount) return ChainRefusal.INSUFFICIENT_TOKEN_BALANCE;
    // Last, so the (costly) signature check runs only for otherwise valid permits. Anything but a
    // literal `true` (false, undefined, a truthy object from an untyped verifier) is a refusal.
    if (this.#verifyPermit(request) !== true) return ChainRefusal.INVALID_PERMIT_SIGNATURE;
    return undefined;
  }

  #withdrawalRefusal(request: ChainWithdrawal): ChainRefusalReason | undefined {
    if (!ADDRESS_RE.test(request.owner)) return ChainRefusal.INVALID_OWNER;
    const owner = request.owner.toLowerCase();
    if (this.#isContract(owner)) return ChainRefusal.OWNER_IS_CONTRACT;
    if (request.amount <= 0n) return ChainRefusal.AMOUNT_NOT_POSITIVE;
    if (this.#vaultBalance < request.amount) return ChainRefusal.INSUFFICIENT_VAULT_BALANCE;
    return undefined;
  }

  /** Whether an address is the vault or the token contract, neither of which signs permits. */
  #isContract(address: string): boolean {
    return address === this.vaultAddress || address === this.tokenAddress;
  }

  // --- idempotency ---

  /**
   * The first result for a commandId seen before. A different request under a known commandId is
   * refused and not remembered: returning the first result would report funds moved that this
   * request never moved (for example after an engine restart that reused ids).
   */
  #recalled(
    commandId: number,
    kind: ProcessedChainCommand['kind'],
    operation: string,
  ): ChainResult | undefined {
    const earlier = this.#byCommandId.get(commandId);
    if (earlier === undefined) return undefined;
    if (earlier.kind !== kind || earlier.operation !== operation) {
      return refused(ChainRefusal.COMMAND_ID_CONFLICT);
    }
    return earlier.result;
  }

  #record(
    commandId: number,
    kind: ProcessedChainCommand['kind'],
    operation: string,
    result: ChainResult,
    undo: Undo,
  ): ChainResult {
    const entry: ProcessedChainCommand = Object.freeze({
      commandId,
      kind,
      operation,
      result: Object.freeze(result),
    });
    this.#byCommandId.set(commandId, entry);
    this.#processed.push(entry);
    undo.push(() => {
      this.#byCommandId.delete(commandId);
      this.#processed.pop();
    });
    return entry.result;
  }

  /** Canonical text of a deposit; every field that matters, so a different request differs. */
  #depositOperation(request: ChainDeposit): string {
    const { permit } = request;
    return [
      this.#operationPrefix(),
      'deposit',
      request.commandId,
      request.owner.toLowerCase(),
      request.amount,
      permit.spender.toLowerCase(),
      permit.value,
      permit.nonce,
      permit.deadline,
      permit.signature.toLowerCase(),
    ].join('|');
  }

  #withdrawalOperation(request: ChainWithdrawal): string {
    return [
      this.#operationPrefix(),
      'withdrawal',
      request.commandId,
      request.owner.toLowerCase(),
      request.amount,
    ].join('|');
  }

  #operationPrefix(): string {
    return `${SIMULATED_CHAIN_SNAPSHOT_FORMAT}|${this.tokenAddress}|${this.vaultAddress}`;
  }

  // --- state ---

  #balanceOf(address: string): bigint {
    return address === this.vaultAddress ? this.#vaultBalance : (this.#balances.get(address) ?? 0n);
  }

  #setBalance(owner: string, balance: bigint, undo: Undo): void {
    const before = this.#balances.get(owner);
    this.#balances.set(owner, balance);
    undo.push(() => {
      if (before === undefined) this.#balances.delete(owner);
      else this.#balances.set(owner, before);
    });
  }

  #setVault(balance: bigint, undo: Undo): void {
    const before = this.#vaultBalance;
    this.#vaultBalance = balance;
    undo.push(() => {
      this.#vaultBalance = before;
    });
  }

  /** Applies a mutation, then persists it through `onChange`; a failed persist undoes it. */
  #mutate<T>(apply: (undo: Undo) => T): T {
    const undo: Undo = [];
    const value = apply(undo);
    if (this.#onChange !== undefined) {
      try {
        this.#onChange(this.toSnapshot());
      } catch (error) {
        for (let i = undo.length - 1; i >= 0; i--) undo[i]?.();
        throw error;
      }
    }
    return value;
  }

  #load(snapshot: SimulatedChainSnapshot): void {
    // The snapshot usually comes from JSON.parse: check the shape before trusting the type.
    if (typeof snapshot !== 'object' || snapshot === null) {
      throw new InvalidChainSnapshotError('', 'not an object');
    }
    for (const key of ['token', 'vault', 'balances', 'nonces'] as const) {
      const value: unknown = snapshot[key];
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        throw new InvalidChainSnapshotError(key, 'not an object');
      }
    }
    if (!Array.isArray(snapshot.processed))
      throw new InvalidChainSnapshotError('processed', 'not a list');
    if (snapshot.format !== SIMULATED_CHAIN_SNAPSHOT_FORMAT) {
      throw new InvalidChainSnapshotError('format', `expected ${SIMULATED_CHAIN_SNAPSHOT_FORMAT}`);
    }
    if (snapshot.token.name !== this.tokenName) {
      throw new InvalidChainSnapshotError(
        'token.name',
        `expected ${this.tokenName}, got ${snapshot.token.name}`,
      );
    }
    if (snapshot.token.address !== this.tokenAddress) {
      throw new InvalidChainSnapshotError(
        'token.address',
        `expected ${this.tokenAddress}, got ${snapshot.token.address}`,
      );
    }
    if (snapshot.token.decimals !== COLLATERAL_DECIMALS) {
      throw new InvalidChainSnapshotError('token.decimals', `expected ${COLLATERAL_DECIMALS}`);
    }
    if (snapshot.vault.address !== this.vaultAddress) {
      throw new InvalidChainSnapshotError(
        'vault.address',
        `expected ${this.vaultAddress}, got ${snapshot.vault.address}`,
      );
    }
    const totalSupply = parseUint(snapshot.token.totalSupply, 'token.totalSupply');
    // The faucet never mints beyond it, and every balance is at most the supply.
    if (totalSupply > MAX_UINT256) {
      throw new InvalidChainSnapshotError('token.totalSupply', 'above 2^256 - 1');
    }
    const vault = parseUint(snapshot.vault.balance, 'vault.balance');
    let sum = vault;
    for (const [address, amount] of Object.entries(snapshot.balances)) {
      const path = `balances.${address}`;
      if (!ADDRESS_RE.test(address) || address !== address.toLowerCase()) {
        throw new InvalidChainSnapshotError(path, 'not a lowercase address');
      }
      if (this.#isContract(address)) {
        throw new InvalidChainSnapshotError(path, 'the vault and the token hold no wallet balance');
      }
      const balance = parseUint(amount, path);
      sum += balance;
      this.#balances.set(address, balance);
    }
    if (sum !== totalSupply) {
      throw new InvalidChainSnapshotError(
        'token.totalSupply',
        `${totalSupply} != balances + vault ${sum}`,
      );
    }
    for (const [address, value] of Object.entries(snapshot.nonces)) {
      const path = `nonces.${address}`;
      if (!ADDRESS_RE.test(address) || address !== address.toLowerCase()) {
        throw new InvalidChainSnapshotError(path, 'not a lowercase address');
      }
      this.#nonces.set(address, parseUint(value, path));
    }
    snapshot.processed.forEach((entry, i) => {
      const path = `processed.${i}`;
      if (typeof entry !== 'object' || entry === null) {
        throw new InvalidChainSnapshotError(path, 'not an object');
      }
      if (!isCommandId(entry.commandId)) {
        throw new InvalidChainSnapshotError(path, 'invalid commandId');
      }
      if (this.#byCommandId.has(entry.commandId)) {
        throw new InvalidChainSnapshotError(path, `duplicate commandId ${entry.commandId}`);
      }
      if (entry.kind !== 'deposit' && entry.kind !== 'withdrawal') {
        throw new InvalidChainSnapshotError(path, `unknown kind ${String(entry.kind)}`);
      }
      if (typeof entry.operation !== 'string') {
        throw new InvalidChainSnapshotError(path, 'operation is not text');
      }
      const result = entry.result as { ok?: unknown; txHash?: unknown; reason?: unknown } | null;
      if (typeof result !== 'object' || result === null) {
        throw new InvalidChainSnapshotError(path, 'malformed result');
      }
      let copy: ChainResult;
      if (result.ok === true) {
        if (result.txHash !== txHashOf(entry.operation)) {
          throw new InvalidChainSnapshotError(path, 'txHash is not the hash of the operation');
        }
        copy = { ok: true, txHash: txHashOf(entry.operation) };
      } else if (result.ok === false && typeof result.reason === 'string') {
        copy = { ok: false, reason: result.reason };
      } else {
        throw new InvalidChainSnapshotError(path, 'malformed result');
      }
      this.#record(entry.commandId, entry.kind, entry.operation, copy, []);
    });
    this.#vaultBalance = vault;
    this.#totalSupply = totalSupply;
  }
}

/** keccak-256 of the operation's canonical text, as a 0x-prefixed lowercase hex string. */
function txHashOf(operation: string): string {
  return `0x${bytesToHex(keccak_256(utf8ToBytes(operation)))}`;
}

function refused(reason: ChainRefusalReason): ChainResult {
  return { ok: false, reason };
}

function isCommandId(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0;
}

function normaliseAddress(address: string, what: string): string {
  if (typeof address !== 'string' || !ADDRESS_RE.test(address)) {
    throw new TypeError(
      `${what} must be a 0x-prefixed 20-byte hex address, got ${String(address)}`,
    );
  }
  return address.toLowerCase();
}

function parseUint(text: string, path: string): bigint {
  if (typeof text !== 'string' || !UINT_RE.test(text)) {
    throw new InvalidChainSnapshotError(
      path,
      `expected a non-negative decimal string, got ${String(text)}`,
    );
  }
  return BigInt(text);
}

function sortedRecord(map: ReadonlyMap<string, bigint>): Record<string, string> {
  const record: Record<string, string> = {};
  for (const key of [...map.keys()].sort()) record[key] = (map.get(key) ?? 0n).toString();
  return record;
}
