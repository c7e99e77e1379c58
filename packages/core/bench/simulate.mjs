// `node packages/core/bench/simulate.mjs` (after `npx tsc -b`): the seeded crash simulation of
// src/testing/simulation.ts at full length, run twice. Both runs must give the same event stream
// and state hash; every invariant is checked once a simulated minute and at the end. Prints the
// liquidation summary and the insurance fund path.
//
//   SIM_SEED      PRNG seed (default 1)
//   SIM_TAKERS    leveraged takers (default 200)
//   SIM_MINUTES   simulated minutes, one step a second (default 20)
//   SIM_CRASH     crash in percent (default 30), from minute 5 over SIM_CRASH_MINUTES (default 5)

import { formatCollateral } from '@perp/core';
import { runSimulation } from '@perp/core/testing';

const options = {
  seed: Number(process.env.SIM_SEED ?? 1),
  takers: Number(process.env.SIM_TAKERS ?? 200),
  minutes: Number(process.env.SIM_MINUTES ?? 20),
  crashStart: 5,
  crashMinutes: Number(process.env.SIM_CRASH_MINUTES ?? 5),
  crashPercent: Number(process.env.SIM_CRASH ?? 30),
};

const t0 = performance.now();
const a = runSimulation(options);
const t1 = performance.now();
const b = runSimulation(options);
const t2 = performance.now();

const same = a.stateHash === b.stateHash && a.eventsHash === b.eventsHash;
console.log(`# Crash simulation ${JSON.stringify(options)}`);
console.log(
  `runs: ${(t1 - t0).toFixed(0)} ms and ${(t2 - t1).toFixed(0)} ms, ${a.commands} commands each`,
);
console.log(`state hash   ${a.stateHash}`);
console.log(`events hash  ${a.eventsHash}`);
console.log(`deterministic: ${same ? 'yes' : 'NO'}`);
console.log('');
console.log(
  '| trades | liquidations | book fills | auctions | claims settled | ADL fills | funding payments | deficits paid by the fund | by the fee pool | debt left (USD) |',
);
console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
console.log(
  `| ${a.trades} | ${a.liquidations} | ${a.marketSteps} | ${a.auctions} | ${a.claims} | ${a.adlFills} | ${a.fundingPayments} | ${a.deficits} | ${a.backstops} | ${formatCollateral(a.debt)} |`,
);
console.log('');
console.log('insurance fund by minute (USD):');
console.log(a.insurancePath.map((x, i) => `${i + 1}:${formatCollateral(x)}`).join('  '));
if (!same) process.exit(1);
