// Loads the shared order-flow generator (../shared/bench/workload.mjs beside the repository).
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const candidates = [
  process.env.PERP_WORKLOAD,
  resolve(here, '../../../../shared/bench/workload.mjs'),
  resolve(here, '../../../shared/bench/workload.mjs'),
].filter(Boolean);

export async function loadWorkload() {
  for (const path of candidates) {
    if (existsSync(path)) return import(pathToFileURL(path).href);
  }
  throw new Error(`workload.mjs not found; looked in ${candidates.join(', ')} (set PERP_WORKLOAD)`);
}

/** The two workloads of shared/bench/README.md. */
export const WORKLOADS = {
  W1: { preload: 10_000, maxOffset: 20 },
  W2: { preload: 1_000, maxOffset: 50 },
};
