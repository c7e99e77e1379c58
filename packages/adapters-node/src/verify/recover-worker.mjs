// @ts-check
/**
 * The signature-verification worker: receives batches of job records, answers each with its
 * result records (see recover-batch.mjs). `workerData.backend` picks native libsecp256k1 or
 * @noble/curves; a native binding that fails to load here falls back to noble (same results).
 *
 * Messages in: `{ id, count, jobs }`; out: `{ id, out }` (buffers transferred).
 *
 * @module
 */
import { parentPort, workerData } from 'node:worker_threads';
import { loadNativeRecovery, nobleRecovery, recoverBatch } from './recover-batch.mjs';

const data = /** @type {{ backend?: string } | null} */ (workerData);
const recover = (data?.backend === 'native' ? loadNativeRecovery() : undefined) ?? nobleRecovery;
const port = parentPort;
if (port === null) throw new Error('recover-worker.mjs runs as a worker thread');

port.on('message', (/** @type {{ id: number, count: number, jobs: Uint8Array }} */ msg) => {
  const out = recoverBatch(recover, msg.jobs, msg.count);
  port.postMessage({ id: msg.id, out }, [out.buffer]);
});
