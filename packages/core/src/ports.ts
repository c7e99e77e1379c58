/**
 * Ports: the interfaces through which adapters give the engine what it does not own itself, a
 * durable command journal and a chain. Types only; the core never calls them (it is pure), the
 * adapters that host it do.
 *
 * @module
 */
import type { Command } from './engine/commands.js';

/** One journal record: a command the engine applied, with its position in the log. */
export interface JournalRecord {
  /** 1, 2, 3, ... without gaps. */
  readonly seq: number;
  readonly command: Command;
}

/** An append-only, durable log of the commands that changed engine state. */
export interface JournalStore {
  /**
   * Appends commands and resolves once they are durable (flushed to stable storage). Resolves
   * with the seq of the last record. A failure to make them durable rejects, and the host must
   * stop: nothing appended after a failed flush may be acknowledged.
   */
  append(commands: readonly Command[]): Promise<number>;
  /** Every record with `seq > afterSeq`, in order. */
  read(afterSeq?: number): AsyncIterable<JournalRecord>;
  /** Seq of the last durable record (0 when empty). */
  readonly lastSeq: number;
  /** Releases files and handles. */
  close(): Promise<void>;
}

/** The token and vault a deposit or withdrawal moves collateral through. */
export interface ChainAdapter {
  /** Collateral token balance of a wallet, micro-units. */
  balanceOf(wallet: string): Promise<bigint>;
  /** The token's ERC-2612 nonce of a wallet (`nonces(owner)`). */
  permitNonce(wallet: string): Promise<bigint>;
  /**
   * Executes a deposit: the permit, then the vault pulling `amount` from the owner. Idempotent by
   * `commandId`: asking again returns the first result.
   */
  executeDeposit(request: ChainDeposit): Promise<ChainResult>;
  /** Pays out a withdrawal from the vault. Idempotent by `commandId`. */
  executeWithdrawal(request: ChainWithdrawal): Promise<ChainResult>;
  /**
   * What the chain did with the deposit or withdrawal `commandId`, or `null` when it has no
   * record of executing it (a real adapter reads the vault's events). A restarted venue asks
   * this for every command it still has pending: a deposit the chain executed before the crash
   * must be credited, and its permit is not kept to ask again. A record of the other kind under
   * the same id is another request (`null` for this one).
   */
  resultOf(kind: 'deposit' | 'withdrawal', commandId: number): Promise<ChainResult | null>;
}

/** A deposit as the chain sees it. */
export interface ChainDeposit {
  readonly commandId: number;
  readonly owner: string;
  readonly amount: bigint;
  readonly permit: {
    readonly spender: string;
    readonly value: bigint;
    readonly nonce: bigint;
    readonly deadline: bigint;
    /** 65-byte signature, v normalised to 27/28. */
    readonly signature: string;
  };
}

/** A withdrawal as the chain sees it. */
export interface ChainWithdrawal {
  readonly commandId: number;
  readonly owner: string;
  readonly amount: bigint;
}

/** What the chain did. */
export type ChainResult =
  | { readonly ok: true; readonly txHash: string }
  | { readonly ok: false; readonly reason: string };
