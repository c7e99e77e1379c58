// `pnpm bench` (core part): the order-book workloads of shared/bench against nodejs-order-book,
// in one process, alternating engines round by round, medians of the rounds, ratios printed.
// Every run is checked against the workload's reference book (same final resting orders, lots
// and best prices) before its figure counts. The `floor:` rows are not engines: they build the
// same commands and allocate the same events the engine emits, and nothing else (floor.mjs), so
// they show the ceiling of this interface and event model in the same run.
//
//   BENCH_OPS     timed operations per workload (default 1,000,000; the workload's own size)
//   BENCH_ROUNDS  rounds per engine (default 3)
//   BENCH_BATCH   commands per reduceAll call for the batched engine runs (default 256)
//
// `pnpm bench` runs this with `--max-semi-space-size=64`, as `pnpm start` runs the venue: the
// engine allocates short-lived events and copies at a high rate, and a larger young generation
// lets more of them die before a scavenge copies them. Both engines run in this one process under
// the same flags; the header prints them.

import { runEngine, runNob } from './book-engines.mjs';
import { runFloor } from './floor.mjs';
import { summaryBench } from './summary-bench.mjs';
import { loadWorkload, WORKLOADS } from './workloads.mjs';

const ops = Number(process.env.BENCH_OPS ?? 1_000_000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const batch = Number(process.env.BENCH_BATCH ?? 256);

const wl = await loadWorkload();
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const rateOf = (res) => res.ops / res.seconds;
const fmt = (x) => Math.round(x).toLocaleString('en-US');

// nodejs-order-book's depth() gives lots and prices, not order counts.
function sameBook(a, ref) {
  return (
    (a.restingOrders === undefined || a.restingOrders === ref.restingOrders) &&
    a.restingLots === ref.restingLots &&
    a.bestBid === ref.bestBid &&
    a.bestAsk === ref.bestAsk
  );
}

const engines = {
  'nodejs-order-book': (w) => runNob(w),
  'engine, book only, batch': (w) => runEngine(w, { batch }),
  'engine, book only, 1 command per reduce': (w) => runEngine(w, { batch: 1 }),
  'engine, margin on (1,000 accounts), batch': (w) => runEngine(w, { batch, margin: true }),
};
// Not engines: what building the same commands and allocating the same events costs alone
// (floor.mjs). No engine with this interface and event model can run faster than its floor.
const floors = {
  'floor: commands + events only, book only': (w) => runFloor(w, { batch }),
  'floor: commands + events only, margin on': (w) => runFloor(w, { batch, margin: true }),
};

console.log(
  `# Order book: ${ops.toLocaleString('en-US')} timed ops per workload, ${rounds} rounds, batch ${batch}, Node ${process.version}${process.execArgv.length ? ` ${process.execArgv.join(' ')}` : ''}`,
);
const results = {};
for (const [name, opts] of Object.entries(WORKLOADS)) {
  const w = wl.generate({ ...opts, n: ops });
  const rates = Object.fromEntries(
    [...Object.keys(engines), ...Object.keys(floors)].map((k) => [k, []]),
  );
  for (let r = 0; r < rounds; r++) {
    for (const [floor, run] of Object.entries(floors)) rates[floor].push(rateOf(run(w)));
    for (const [engine, run] of Object.entries(engines)) {
      const res = run(w);
      if (!sameBook(res.final, w.final)) {
        console.error(
          `${name} ${engine}: final book differs from the reference`,
          res.final,
          w.final,
        );
        process.exitCode = 1;
      }
      if (res.failures) {
        console.error(`${name} ${engine}: ${res.failures} refused commands`);
        process.exitCode = 1;
      }
      rates[engine].push(rateOf(res));
    }
  }
  results[name] = Object.fromEntries(Object.entries(rates).map(([k, v]) => [k, median(v)]));
  const nob = results[name]['nodejs-order-book'];
  console.log(
    `\n## ${name} (preload ${opts.preload}, offsets 1..${opts.maxOffset}; reference book: ${w.final.restingOrders} orders)`,
  );
  console.log('| engine | ops/s (median) | x nodejs-order-book |');
  console.log('|---|---:|---:|');
  for (const [engine, rate] of Object.entries(results[name])) {
    console.log(`| ${engine} | ${fmt(rate)} | ${(rate / nob).toFixed(2)}x |`);
  }
}

console.log('\n## Account summary');
const s = summaryBench();
console.log(
  `| account with ${s.positions} positions | ${fmt(s.perSecond)} summaries/s | ${s.microseconds.toFixed(1)} us each |`,
);
