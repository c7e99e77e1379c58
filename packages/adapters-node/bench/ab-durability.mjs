// A/B of two builds of the venue on the durability path, in one session: the same benchmark
// scripts run against each build alternately (B A, A B, ...), each in its own child process, and
// the medians are compared as ratios before / after. On the shared 2-vCPU VM absolute figures
// drift between runs; ratios taken in one interleaved session are what to read.
//
//   node packages/adapters-node/bench/ab-durability.mjs --before <root> --after <root>
//        [--rounds 3] [--sections acks,stall,ws] [--stall-ops 1000000] [--json]
//
// <root> is a checkout (built with `npx tsc -b`, with node_modules) whose
// packages/adapters-node/bench holds this version of journal-replay.mjs. Sections:
//   acks   journal-replay.mjs BENCH_ONLY=acks: EngineHost + FileJournal ack latency with fdatasync,
//          closed loop at 1/16/128 clients and open loop at fixed rates, with the event-loop delay
//   stall  journal-replay.mjs BENCH_ONLY=stall: the event-loop delay while a background snapshot
//          of the W2 state after --stall-ops ops is written
//   ws     ws-orders.mjs --journal disk: signed orders over the WebSocket, saturation and half load
//
// Set PERP_WORKLOAD if shared/bench/workload.mjs is not beside the checkouts.

import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const { values: opts } = parseArgs({
  options: {
    before: { type: 'string' },
    after: { type: 'string' },
    rounds: { type: 'string', default: '3' },
    sections: { type: 'string', default: 'acks,stall,ws' },
    'stall-ops': { type: 'string', default: '1000000' },
    json: { type: 'boolean', default: false },
  },
});
if (opts.before === undefined || opts.after === undefined) {
  console.error('usage: ab-durability.mjs --before <root> --after <root> [--rounds 3]');
  process.exit(2);
}
const builds = { before: resolve(opts.before), after: resolve(opts.after) };
const rounds = Number(opts.rounds);
const sections = opts.sections.split(',');

function run(root, section) {
  const bench = join(root, 'packages/adapters-node/bench');
  const env = { ...process.env, BENCH_JSON: '1' };
  let args;
  if (section === 'ws') args = [join(bench, 'ws-orders.mjs'), '--journal', 'disk', '--json'];
  else {
    args = ['--expose-gc', join(bench, 'journal-replay.mjs')];
    env.BENCH_ONLY = section;
    env.BENCH_OPS = section === 'stall' ? opts['stall-ops'] : '40000';
  }
  const r = spawnSync(process.execPath, args, {
    env,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const last = r.stdout.trim().split('\n').pop() ?? '';
  if (r.status !== 0 || !last.startsWith('{'))
    throw new Error(`${section} on ${root} failed (${r.status}):\n${r.stderr}\n${r.stdout}`);
  return JSON.parse(last);
}

/** The figures of one run, flattened to name -> number. */
function flatten(section, j) {
  const out = {};
  if (section === 'acks') {
    for (const a of j.acks) {
      const k = `acks closed ${a.clients} clients`;
      Object.assign(out, {
        [`${k} p50 ms`]: a.p50,
        [`${k} p99 ms`]: a.p99,
        [`${k} acks/s`]: a.perSecond,
        [`${k} loop delay p99 ms`]: a.loop.p99 ?? Number.NaN,
        [`${k} loop 1 ms ticks/s`]: a.loop.ticksPerSecond,
      });
    }
    for (const a of j.open) {
      const k = `acks open ${a.rate}/s`;
      Object.assign(out, {
        [`${k} p50 ms`]: a.p50,
        [`${k} p99 ms`]: a.p99,
        [`${k} loop delay p99 ms`]: a.loop.p99 ?? Number.NaN,
        [`${k} loop 1 ms ticks/s`]: a.loop.ticksPerSecond,
      });
    }
  } else if (section === 'stall') {
    const s = j.stall;
    Object.assign(out, {
      'snapshot encode longest step (shortest of 3 walks) ms': s.encodeSteps.floor,
      'snapshot hash longest step (shortest of 3 walks) ms': s.hashSteps.floor,
      'snapshot write s': s.writeS,
      'snapshot loop delay p50 ms': s.p50,
      'snapshot loop delay p99 ms': s.p99,
      'snapshot loop delay p99.9 ms': s.p999,
      'snapshot loop delay max ms': s.max,
    });
  } else {
    const disk = j.runs.find((r) => r.journal === 'disk');
    Object.assign(out, {
      'ws disk saturation orders/s': disk.saturation.steadyPerSecond ?? disk.saturation.perSecond,
      'ws disk saturation p99 ms': disk.saturation.latencyMs.p99,
      'ws disk half-load p50 ms': disk.halfLoad.latencyMs.p50,
      'ws disk half-load p99 ms': disk.halfLoad.latencyMs.p99,
    });
  }
  return out;
}

const samples = { before: {}, after: {} };
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? ['before', 'after'] : ['after', 'before'];
  for (const section of sections) {
    for (const build of order) {
      const t0 = Date.now();
      const figures = flatten(section, run(builds[build], section));
      for (const [k, v] of Object.entries(figures)) {
        samples[build][k] ??= [];
        samples[build][k].push(v);
      }
      console.error(`round ${round + 1}/${rounds} ${section} ${build}: ${Date.now() - t0} ms`);
    }
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const rows = Object.keys(samples.before).map((k) => {
  const b = median(samples.before[k]);
  const a = median(samples.after[k]);
  return {
    figure: k,
    before: b,
    after: a,
    ratio: b / a,
    samples: [samples.before[k], samples.after[k]],
  };
});
if (opts.json) console.log(JSON.stringify({ builds, rounds, rows }));
else {
  console.log(`# A/B, ${rounds} rounds interleaved; medians; ratio = before / after`);
  console.log(`before: ${builds.before}\nafter:  ${builds.after}\n`);
  console.log('| figure | before | after | before / after |');
  console.log('|---|---:|---:|---:|');
  const f = (x) => (Number.isNaN(x) ? 'no sample' : x >= 100 ? x.toFixed(0) : x.toFixed(2));
  for (const r of rows)
    console.log(`| ${r.figure} | ${f(r.before)} | ${f(r.after)} | ${r.ratio.toFixed(2)} |`);
}
