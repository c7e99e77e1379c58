// The longest single step of the snapshot walk (SnapshotEncoder / StateHasher, 512 values a
// step, as the snapshotter calls them) over a synthetic state with one large IntMap and one large
// PMap of small records: the shape of a trade log or an accounts map grown large. A walk that
// expands a whole map into an array in one step has one step proportional to the map's size; an
// entry-at-a-time walk has none. Each walk runs BENCH_WALKS times (default 3) and the shortest
// of the walks' longest steps is reported: noise lengthens a random step of one walk, a step
// long by construction is long in every walk.
//
//   node --expose-gc packages/adapters-node/bench/snapshot-steps.mjs   (after npx tsc -b)
//   BENCH_ENTRIES  entries of each map (default 1,000,000)
//   BENCH_JSON     1: one JSON line

import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createEngineState, PMap, SnapshotEncoder, StateHasher } from '@perp/core';

const here = dirname(fileURLToPath(import.meta.url));
const coreDist = resolve(here, '../../core/dist');
const { IntMap } = await import(pathToFileURL(join(coreDist, 'persistent/int-map.js')).href);

const N = Number(process.env.BENCH_ENTRIES ?? 1_000_000);
const WALKS = Number(process.env.BENCH_WALKS ?? 3);

const edit = { __edit: true };
let ints = IntMap.empty();
let keyed = PMap.empty();
for (let i = 0; i < N; i++) {
  ints = ints.set(edit, i + 1, { id: i + 1, price: 100_000n + BigInt(i % 977), qty: i % 13 });
  keyed = keyed.set(edit, `k${i}`, { n: i, flag: i % 2 === 0 });
}
ints.edit = null;
keyed.edit = null;
const state = { ...createEngineState(), benchInts: ints, benchKeyed: keyed };

function longestStep(step) {
  globalThis.gc?.();
  let max = 0;
  let steps = 0;
  for (let done = false; !done; steps++) {
    const t = performance.now();
    done = step();
    const dt = performance.now() - t;
    if (dt > max) max = dt;
  }
  return { max, steps };
}

function floorOf(make) {
  const runs = Array.from({ length: WALKS }, () => longestStep(make()));
  return {
    longest: Math.min(...runs.map((r) => r.max)),
    perWalk: runs.map((r) => r.max),
    steps: runs[0].steps,
  };
}

const encode = floorOf(() => {
  const e = new SnapshotEncoder(state);
  return () => e.step(512) === null;
});
const hash = floorOf(() => {
  const h = new StateHasher(state);
  return () => h.step(512);
});
if (process.env.BENCH_JSON === '1') console.log(JSON.stringify({ entries: N, encode, hash }));
else {
  const f = (r) =>
    `${r.longest.toFixed(1)} ms (per walk ${r.perWalk.map((x) => x.toFixed(1)).join(' / ')}; ${r.steps.toLocaleString('en-US')} steps)`;
  console.log(
    `Synthetic state: an IntMap and a PMap of ${N.toLocaleString('en-US')} records each.`,
  );
  console.log(`longest encode step: ${f(encode)}`);
  console.log(`longest hash step:   ${f(hash)}`);
}
