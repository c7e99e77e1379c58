import { runEngine } from './book-engines.mjs';
import { loadWorkload, WORKLOADS } from './workloads.mjs';

const wl = await loadWorkload();
const n = Number(process.env.N ?? 300000);
const out = [];
for (const name of (process.env.W ?? 'W2').split(',')) {
  const w = wl.generate({ ...WORKLOADS[name], n });
  for (const margin of (process.env.M ?? '0').split(',').map((x) => x === '1')) {
    const rates = [];
    for (let k = 0; k < Number(process.env.R ?? 5); k++) {
      const r = runEngine(w, { batch: Number(process.env.B ?? 1000), margin });
      rates.push(r.ops / (process.env.CPU ? r.cpuSeconds : r.seconds));
    }
    rates.sort((a, b) => a - b);
    out.push(
      `${name}${margin ? '+margin' : ''} median ${Math.round(rates[rates.length >> 1]).toLocaleString()} ops/s`,
    );
  }
}
console.log(out.join(' | '));
