import { runEngine, runNob } from './book-engines.mjs';
import { loadWorkload, WORKLOADS } from './workloads.mjs';

const wl = await loadWorkload();
const n = Number(process.env.N ?? 200000);
for (const [name, opts] of Object.entries(WORKLOADS)) {
  const w = wl.generate({ ...opts, n });
  const nob = runNob(w);
  const e1 = runEngine(w, { batch: 1 });
  const eb = runEngine(w, { batch: 1000 });
  const em = runEngine(w, { batch: 1000, margin: true });
  const f = (r) => `${Math.round(r.ops / r.seconds).toLocaleString()} ops/s`;
  console.log(name, 'ref', JSON.stringify(w.final));
  console.log(' nob', f(nob), JSON.stringify(nob.final));
  console.log(' engine batch1', f(e1), JSON.stringify(e1.final), 'fail', e1.failures);
  console.log(' engine batch1000', f(eb), JSON.stringify(eb.final), 'fail', eb.failures);
  console.log(' engine margin', f(em), JSON.stringify(em.final), 'fail', em.failures);
}
