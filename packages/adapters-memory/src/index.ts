/**
 * `@perp/adapters-memory`: in-memory implementations of the core's ports, for embedding the
 * engine and for tests: the {@link MemoryJournal}, the {@link SimulatedChain} and the
 * {@link permitVerifier} it checks real permits with.
 *
 * @module
 */

export { JournalClosedError, MemoryJournal } from './memory-journal.js';
export { permitVerifier } from './permit-verifier.js';
export {
  ChainRefusal,
  type ChainRefusalReason,
  COLLATERAL_DECIMALS,
  InvalidChainSnapshotError,
  type ProcessedChainCommand,
  SIMULATED_CHAIN_SNAPSHOT_FORMAT,
  SimulatedChain,
  type SimulatedChainOptions,
  type SimulatedChainSnapshot,
} from './simulated-chain.js';
