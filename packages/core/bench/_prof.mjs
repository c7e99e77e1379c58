import { runEngine } from '/work/main/packages/core/bench/book-engines.mjs';
import { loadWorkload, WORKLOADS } from '/work/main/packages/core/bench/workloads.mjs';

const wl = await loadWorkload();
const w = wl.generate({ ...WORKLOADS[process.env.W ?? 'W2'], n: Number(process.env.N ?? 1000000) });
for (let k = 0; k < Number(process.env.R ?? 1); k++) {
  const r = runEngine(w, { batch: 1000, margin: process.env.M === '1' });
  console.log(Math.round(r.ops / r.seconds), r.events, r.failures);
}
