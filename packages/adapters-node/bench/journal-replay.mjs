// Durability benchmark (performance-anchors G9): journal replay rate against nodejs-order-book's
// own journal replay on the same order flow, snapshot restore time, and the acknowledgement
// latency of EngineHost + FileJournal with fsync on.
//
//   node packages/adapters-node/bench/journal-replay.mjs      (after npx tsc -b)
//
//   BENCH_OPS      timed ops of the workload (default 1,000,000; shared/bench/workload.mjs)
//   BENCH_WORKLOAD W1 or W2 (default W2, the workload performance-anchors M6 measured)
//   BENCH_ROUNDS   replay rounds per engine, median reported (default 3)
//   BENCH_ACKS     acknowledged commands per latency run (default 2,000)
//   BENCH_OPEN     open-loop ack phases, rate/s x seconds, comma-separated (default 1000x2,4000x2)
//   BENCH_ONLY     sections to run, comma-separated: replay, restart (open the journal and read
//                  the tail after a snapshot, the whole file scanned against the scan resumed at
//                  the snapshot's position), snapshot (one-shot encode/decode/hash), stall
//                  (background snapshot write under an event-loop delay monitor), readmodels
//                  (read models rebuilt from the journal against written to and loaded from a
//                  checkpoint), acks, archive (--archive-journal on a stopped venue's directory
//                  with a snapshot of the last record; not in the default set)
//                  (default: the first six)
//   BENCH_JSON     1: print one JSON line with every figure at the end
//
// ab-durability.mjs runs the stall and acks sections of two builds alternately.
//
// Replay, ours: read the journal file, check every frame's CRC and seq, decode every record
// (bigint-safe JSON), and reduce them in batches of 4,096 with margin checks on over 1,000
// funded accounts, as the venue does at start-up. nodejs-order-book: `new OrderBook({ journal })`
// over its own log entries, from memory (its native form, no file and no parsing: its best
// case) and from a JSON file (read + JSON.parse + replay, the same steps as ours). Ratios are
// taken inside this one run; absolute figures drift 10-25 % between runs on shared machines.

import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  createEngineState,
  decodeSnapshot,
  encodeJson,
  encodeSnapshot,
  reduceAll,
  SnapshotEncoder,
  StateHasher,
  stateHash,
} from '@perp/core';
import { archiveJournal } from '../dist/archive-journal.js';
import { checkDataDir } from '../dist/data-dir-check.js';
import { SystemClock } from '../dist/engine/clock.js';
import { EngineHost } from '../dist/engine/host.js';
import { encodeRecord, FileJournal, scanFrames } from '../dist/journal/file-journal.js';
import {
  captureReadModels,
  loadCheckpoint,
  writeCheckpointFile,
} from '../dist/journal/read-model-files.js';
import { Snapshotter } from '../dist/journal/snapshots.js';
import { createMarketDataService } from '../dist/marketdata/service.js';
import { stateKeccak } from '../dist/native-keccak.js';
import { HistoryStore } from '../dist/read/history.js';
import { ReportStreams } from '../dist/read/report-streams.js';

const here = dirname(fileURLToPath(import.meta.url));
const coreDir = resolve(here, '../../core');
const { OrderBook } = createRequire(join(coreDir, 'package.json'))('nodejs-order-book');
const { loadWorkload, WORKLOADS } = await import(
  pathToFileURL(join(coreDir, 'bench/workloads.mjs')).href
);
// The same order flow as commands for our engine, as the book benchmark maps it.
const { engineFlow, T0 } = await import(
  pathToFileURL(join(coreDir, 'bench/book-engines.mjs')).href
);

const OPS = Number(process.env.BENCH_OPS ?? 1_000_000);
const WORKLOAD = process.env.BENCH_WORKLOAD ?? 'W2';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ACKS = Number(process.env.BENCH_ACKS ?? 2_000);
const OPEN = (process.env.BENCH_OPEN ?? '1000x2,4000x2')
  .split(',')
  .filter((x) => x !== '')
  .map((x) => x.split('x').map(Number));
const ONLY = new Set(
  (process.env.BENCH_ONLY ?? 'replay,restart,snapshot,stall,readmodels,acks').split(','),
);
const JSON_OUT = process.env.BENCH_JSON === '1';
const BATCH = 4096;
/** Every figure, for BENCH_JSON. */
const figures = { acks: [], open: [] };

const fmt = (x) => Math.round(x).toLocaleString('en-US');
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const seconds = (t0) => Number(process.hrtime.bigint() - t0) / 1e9;
const gc = () => globalThis.gc?.();

function nobJournal(w) {
  const { type, side, price, size, id } = w.ops;
  const ob = new OrderBook({ enableJournaling: true });
  const journal = [];
  for (let i = 0; i < w.preload + w.n; i++) {
    const s = side[i] === 0 ? 'buy' : 'sell';
    let r;
    if (type[i] === 0) r = ob.limit({ id: `o${id[i]}`, side: s, size: size[i], price: price[i] });
    else if (type[i] === 1) r = ob.market({ side: s, size: size[i] });
    else r = ob.cancel(`o${id[i]}`);
    // cancel() answers a plain object with its log; limit and market an IProcessOrder.
    if (r?.log !== undefined) journal.push(r.log);
  }
  return { journal, depth: ob.depth() };
}

// ---- replay runs ----------------------------------------------------------------------------------

function replayOurs(path, settings = {}) {
  const t0 = process.hrtime.bigint();
  const j = FileJournal.open(path, { log: () => {} });
  let state = null;
  let batch = [];
  let n = 0;
  for (const r of j.readSync(0)) {
    if (state === null) state = createEngineState(settings, r.command.time);
    batch.push(r.command);
    if (batch.length === BATCH) {
      state = reduceAll(state, batch).state;
      n += batch.length;
      batch = [];
    }
  }
  if (batch.length > 0) {
    state = reduceAll(state, batch).state;
    n += batch.length;
  }
  const s = seconds(t0);
  j.close();
  return { n, s, state };
}

/** The same replay in phases: open + frame check, decode, reduce (where the time goes). */
function replayPhases(path) {
  let t0 = process.hrtime.bigint();
  const j = FileJournal.open(path, { log: () => {} });
  const open = seconds(t0);
  t0 = process.hrtime.bigint();
  const commands = [];
  for (const r of j.readSync(0)) commands.push(r.command);
  const decode = seconds(t0);
  j.close();
  t0 = process.hrtime.bigint();
  let state = createEngineState({}, commands[0].time);
  for (let i = 0; i < commands.length; i += BATCH)
    state = reduceAll(state, commands.slice(i, i + BATCH)).state;
  return { n: commands.length, open, decode, reduce: seconds(t0) };
}

function replayNobMemory(journal) {
  const t0 = process.hrtime.bigint();
  const ob = new OrderBook({ journal });
  return { n: journal.length, s: seconds(t0), ob };
}

function replayNobFile(path) {
  const t0 = process.hrtime.bigint();
  const journal = JSON.parse(readFileSync(path, 'utf8'));
  const ob = new OrderBook({ journal });
  return { n: journal.length, s: seconds(t0), ob };
}

function sameDepth(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

// ---- read models ---------------------------------------------------------------------------------

/** The venue's read models over a host that publishes replayed batches, as at start-up. */
function readModels(state, limits) {
  const listeners = new Set();
  const host = {
    state,
    subscribe: (l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    publish(batch) {
      this.state = batch.state;
      for (const l of listeners) l(batch);
    },
  };
  const history = new HistoryStore(limits.history);
  const streams = new ReportStreams(limits.streams);
  const md = createMarketDataService({
    host,
    now: () => host.state.time,
    pacing: { housekeepingMs: 3_600_000 },
  });
  host.subscribe((b) => history.apply(b));
  host.subscribe((b) => streams.apply(b));
  const parts = [history.checkpoint(), streams.checkpoint(), md.checkpoint()];
  return { host, history, streams, md, parts };
}

/** What a sample of accounts and the market read from `m` (to compare two read models). */
function answers(m, state) {
  const out = [];
  let k = 0;
  state.accounts.forEach((a) => {
    if (k++ % 97 !== 0) return;
    out.push(m.history.orders(a.address, { startTime: 0, limit: 50 }, state.time + 1));
    out.push(m.history.trades(a.address, { startTime: 0, limit: 50 }, state.time + 1));
    out.push(m.streams.since(a.address, Math.max(0, a.reportSeq - 20), a.reportSeq));
  });
  out.push(m.md.tickers(), m.md.candles('BENCH-PERP', '1m', undefined, undefined, 100));
  return encodeJson(out);
}

/**
 * The read models after `commands` rebuilt as the backfill does (re-reduce, feed the batches),
 * written to a checkpoint in slices under an event-loop delay monitor, and loaded from it.
 */
async function readModelFigures(commands, hash, limits) {
  gc();
  let t0 = process.hrtime.bigint();
  const built = readModels(createEngineState({}, commands[0].time), limits);
  let state = built.host.state;
  for (let i = 0; i < commands.length; i += BATCH) {
    const slice = commands.slice(i, i + BATCH);
    const r = reduceAll(state, slice);
    state = r.state;
    built.host.publish({ commands: slice, events: r.events, state });
  }
  const rebuildS = seconds(t0);

  gc();
  const ckptDir = mkdtempSync(join(dir, 'ckpt-'));
  const stalls = monitorEventLoopDelay({ resolution: 1 });
  const ticker = setInterval(() => {}, 1);
  stalls.enable();
  t0 = process.hrtime.bigint();
  const written = await writeCheckpointFile({
    dir: ckptDir,
    seq: commands.length,
    stateHash: hash,
    capture: captureReadModels(built.parts),
    sliceMs: () => 4,
    abandoned: () => false,
  });
  const writeS = seconds(t0);
  stalls.disable();
  clearInterval(ticker);

  gc();
  const loadedInto = readModels(state, limits);
  t0 = process.hrtime.bigint();
  const loaded = await loadCheckpoint(
    { dir: ckptDir, snapshot: { seq: commands.length, hash }, parts: loadedInto.parts },
    { sliceMs: 10, cancelled: () => false },
  );
  if (!loaded?.restored) throw new Error(`checkpoint not loaded: ${loaded?.reason}`);
  for (const r of loaded.restorers) r.commit();
  const loadS = seconds(t0);
  if (answers(loadedInto, state) !== answers(built, state))
    throw new Error('the loaded read models answer differently');
  await built.md.close();
  await loadedInto.md.close();
  rmSync(ckptDir, { recursive: true, force: true });
  return {
    rebuildS,
    writeS,
    loadS,
    bytes: written.bytes,
    p99: stalls.percentile(99) / 1e6,
    max: stalls.max / 1e6,
  };
}

// ---- main -------------------------------------------------------------------------------------------

// fsync must reach a real disk: put BENCH_DIR on the volume a venue's data directory would use.
const dir = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), 'perp-replay-bench-'));
try {
  const wl = await loadWorkload();
  const w = wl.generate({ ...WORKLOADS[WORKLOAD], n: OPS });
  console.log(
    `# Journal replay: ${WORKLOAD}, ${fmt(w.preload)} preload + ${fmt(OPS)} ops, ${ROUNDS} rounds, Node ${process.version}`,
  );

  // Our journal file, written as the host writes it (one framed record per command).
  const engine = engineFlow(w);
  const commands = [...engine.setup];
  for (let i = 0; i < w.preload + w.n; i++) commands.push(engine.at(i));
  const ourPath = join(dir, 'journal.log');
  {
    const chunk = [];
    let bytes = 0;
    const parts = [];
    for (let i = 0; i < commands.length; i++) {
      const rec = encodeRecord(i + 1, commands[i]);
      chunk.push(rec);
      bytes += rec.length;
      if (chunk.length === 65_536) parts.push(Buffer.concat(chunk.splice(0)));
    }
    parts.push(Buffer.concat(chunk));
    writeFileSync(ourPath, Buffer.concat(parts));
    console.log(
      `our journal: ${fmt(commands.length)} records, ${fmt(bytes / 1e6)} MB (${(bytes / commands.length).toFixed(0)} B/record)`,
    );
  }
  const needState = ['replay', 'snapshot', 'stall', 'readmodels', 'archive'].some((x) =>
    ONLY.has(x),
  );
  const live = needState
    ? reduceAll(createEngineState({}, commands[0].time), commands).state
    : null;
  const liveHash = needState ? stateHash(live) : null;

  if (ONLY.has('replay')) {
    const nob = nobJournal(w);
    const nobPath = join(dir, 'nob-journal.json');
    const nobText = JSON.stringify(nob.journal);
    writeFileSync(nobPath, nobText);
    console.log(
      `nodejs-order-book journal: ${fmt(nob.journal.length)} entries, ${fmt(nobText.length / 1e6)} MB as JSON`,
    );

    const bookOnlyHash = stateHash(
      reduceAll(createEngineState({ marginChecks: false }, commands[0].time), commands).state,
    );
    const rates = { ours: [], bookOnly: [], nobMemory: [], nobFile: [] };
    for (let r = 0; r < ROUNDS; r++) {
      gc();
      const ours = replayOurs(ourPath);
      if (stateHash(ours.state) !== liveHash)
        throw new Error('our replay differs from the live state');
      rates.ours.push(ours.n / ours.s);
      gc();
      const book = replayOurs(ourPath, { marginChecks: false });
      if (stateHash(book.state) !== bookOnlyHash) throw new Error('our book-only replay differs');
      rates.bookOnly.push(book.n / book.s);
      gc();
      const m = replayNobMemory(nob.journal);
      if (!sameDepth(m.ob.depth(), nob.depth))
        throw new Error('nodejs-order-book memory replay differs');
      rates.nobMemory.push(m.n / m.s);
      gc();
      const f = replayNobFile(nobPath);
      if (!sameDepth(f.ob.depth(), nob.depth))
        throw new Error('nodejs-order-book file replay differs');
      rates.nobFile.push(f.n / f.s);
    }
    const ours = median(rates.ours);
    const bookOnly = median(rates.bookOnly);
    const nobMem = median(rates.nobMemory);
    const nobFile = median(rates.nobFile);
    gc();
    const phases = replayPhases(ourPath);
    const total = phases.open + phases.decode + phases.reduce;
    const pct = (x) => `${((x / total) * 100).toFixed(0)} %`;
    console.log('\n## Replay rate (read + decode + reduce; medians)');
    console.log('| replay | entries/s | x nob in memory | x nob from file |');
    console.log('|---|---:|---:|---:|');
    const row = (name, rate) =>
      console.log(
        `| ${name} | ${fmt(rate)} | ${(rate / nobMem).toFixed(2)}x | ${(rate / nobFile).toFixed(2)}x |`,
      );
    row('ours: file, CRC/seq check, JSON decode, reduceAll (margin on, 1,000 accounts)', ours);
    row('ours, margin checks off (book only, like nodejs-order-book)', bookOnly);
    row('nodejs-order-book: journal array in memory (its native replay)', nobMem);
    row('nodejs-order-book: JSON file, JSON.parse, replay', nobFile);
    console.log(
      `\nOur replay's time (margin on, one run): open + frame/CRC check ${(phases.open * 1e3).toFixed(0)} ms (${pct(phases.open)}), decode ${(phases.decode * 1e3).toFixed(0)} ms (${pct(phases.decode)}), reduce ${(phases.reduce * 1e3).toFixed(0)} ms (${pct(phases.reduce)}; the engine alone: ${fmt(phases.n / phases.reduce)} commands/s).`,
    );
    console.log(
      `Target G9 (ours >= 3x nodejs-order-book's replay): ${ours / nobMem >= 3 ? 'met' : 'NOT met'}: ${(ours / nobMem).toFixed(2)}x its in-memory replay, ${(ours / nobFile).toFixed(2)}x its file replay.`,
    );

    figures.replay = { ours, bookOnly, nobMem, nobFile };
  }

  // Restart: opening the journal and reading the records after a snapshot, as a start does,
  // with the whole file scanned (no journal position in the snapshot) and with the scan resumed
  // at the snapshot's recorded position; on a tenth of the journal and on all of it, so the
  // figures show which one grows with history.
  if (ONLY.has('restart')) {
    const TAIL = 1_000;
    const data = readFileSync(ourPath);
    const frames = scanFrames(ourPath, data);
    console.log(
      `\n## Restart: open the journal and read the ${fmt(TAIL)} records after the snapshot (medians of ${ROUNDS})`,
    );
    console.log(
      '| journal | whole file scanned | scan resumed at the snapshot | resumed / whole |',
    );
    console.log('|---:|---:|---:|---:|');
    figures.restart = [];
    for (const records of [Math.floor(frames.offsets.length / 10), frames.offsets.length]) {
      const path = join(dir, `restart-${records}.log`);
      const end = records < frames.offsets.length ? frames.offsets[records] : data.length;
      writeFileSync(path, data.subarray(0, end));
      const tail = Math.min(TAIL, Math.floor(records / 2));
      const seq = records - tail;
      const at = frames.offsets[seq - 1];
      const position = { offset: at, crc: data.readUInt32LE(at + 12) };
      const time = (options) => {
        gc();
        const t0 = process.hrtime.bigint();
        const j = FileJournal.open(path, { log: () => {}, ...options });
        let n = 0;
        for (const _r of j.readSync(seq)) n++;
        const s = seconds(t0);
        if (n !== tail) throw new Error(`read ${n} records after seq ${seq}, not ${tail}`);
        void j.close();
        return s * 1e3;
      };
      const whole = [];
      const resumed = [];
      for (let r = 0; r < ROUNDS; r++) {
        whole.push(time({}));
        resumed.push(time({ resumeAfter: { seq, position } }));
      }
      const f = { records, mb: end / 1e6, wholeMs: median(whole), resumedMs: median(resumed) };
      figures.restart.push(f);
      console.log(
        `| ${fmt(records)} records, ${f.mb.toFixed(0)} MB | ${f.wholeMs.toFixed(1)} ms | ${f.resumedMs.toFixed(1)} ms | ${(f.resumedMs / f.wholeMs).toFixed(3)} |`,
      );
      rmSync(path);
    }
  }

  // Archive: `--archive-journal` on a stopped venue's directory whose snapshot (with a read-model
  // checkpoint) is of the last record, so every record but that one leaves journal.log. The
  // read models are empty: the figure is the archive's journal work (the check's walk and
  // decode of the covered records, the walk that checks them again, the copies).
  if (ONLY.has('archive')) {
    const venueDir = join(dir, 'archive-venue');
    mkdirSync(venueDir);
    const journalPath = join(venueDir, 'journal.log');
    copyFileSync(ourPath, journalPath);
    const frames = scanFrames(journalPath, readFileSync(journalPath));
    const seq = frames.offsets.length;
    const at = frames.offsets[seq - 1];
    const position = { offset: at, crc: readFileSync(journalPath).readUInt32LE(at + 12) };
    const models = readModels(live, {});
    const snapshotter = new Snapshotter({
      dir: venueDir,
      log: () => {},
      readModels: () => models.parts,
      journalPosition: () => position,
    });
    await snapshotter.write(live, seq);
    await snapshotter.close();
    models.md.close();
    writeFileSync(
      join(venueDir, 'venue.json'),
      JSON.stringify({ adminToken: 'x', createdTime: T0 }),
    );
    gc();
    let t0 = process.hrtime.bigint();
    const report = checkDataDir(venueDir);
    const checkS = seconds(t0);
    if (!report.ok) throw new Error(`the bench directory fails its check: ${report.problems}`);
    gc();
    t0 = process.hrtime.bigint();
    const result = archiveJournal(venueDir);
    const archiveS = seconds(t0);
    if (result.lastSeq !== seq - 1)
      throw new Error(`archived up to ${result.lastSeq}, not ${seq - 1}`);
    console.log(
      `\n## Archive (--archive-journal) of ${fmt(seq - 1)} records (${fmt(result.bytes / 1e6)} MB)`,
    );
    console.log('| the check alone (--check) | the archive (check included) | records/s | MB/s |');
    console.log('|---:|---:|---:|---:|');
    console.log(
      `| ${(checkS * 1e3).toFixed(0)} ms | ${(archiveS * 1e3).toFixed(0)} ms | ${fmt((seq - 1) / archiveS)} | ${fmt(result.bytes / 1e6 / archiveS)} |`,
    );
    figures.archive = { records: seq - 1, bytes: result.bytes, checkS, archiveS };
    rmSync(venueDir, { recursive: true, force: true });
  }

  // Snapshot restore: what a restart pays instead of the full replay above.
  if (ONLY.has('snapshot')) {
    gc();
    let t0 = process.hrtime.bigint();
    const text = encodeSnapshot(live);
    const encodeS = seconds(t0);
    t0 = process.hrtime.bigint();
    const restored = decodeSnapshot(text);
    const decodeS = seconds(t0);
    t0 = process.hrtime.bigint();
    const restoredHash = stateHash(restored);
    const hashS = seconds(t0);
    if (restoredHash !== liveHash) throw new Error('snapshot round trip changed the state');
    // The venue hashes with the native keccak binding when it loads (the same hash).
    t0 = process.hrtime.bigint();
    const nativeHash = stateHash(restored, stateKeccak());
    const nativeHashS = seconds(t0);
    if (nativeHash !== liveHash) throw new Error('the native keccak gave another state hash');
    console.log('\n## Snapshot of the final state');
    console.log(
      `| snapshot size | encode | decode | verify hash (noble) | verify hash (venue's keccak) | full replay of ${fmt(commands.length)} records |`,
    );
    console.log('|---:|---:|---:|---:|---:|---:|');
    console.log(
      `| ${fmt(text.length / 1e3)} kB | ${(encodeS * 1e3).toFixed(0)} ms | ${(decodeS * 1e3).toFixed(0)} ms | ${(hashS * 1e3).toFixed(0)} ms | ${(nativeHashS * 1e3).toFixed(0)} ms | ${figures.replay ? `${((commands.length / figures.replay.ours) * 1e3).toFixed(0)} ms` : '-'} |`,
    );
    figures.snapshot = { bytes: text.length, encodeS, decodeS, hashS, nativeHashS };
  }

  // The background snapshot write of the same state: how long does it hold the event loop?
  if (ONLY.has('stall')) {
    // First the walk alone, synchronously: the duration of each step of 512 values, as the
    // snapshotter calls them (a step that expands a large map at once is the long one).
    // Wall time and this process's CPU time per step: on a shared VM another process can take
    // the core in the middle of a step (wall), which the CPU time leaves out.
    const stepTimes = (step) => {
      gc();
      const wall = [];
      const cpu = [];
      for (let done = false; !done; ) {
        const c = process.cpuUsage();
        const t = performance.now();
        done = step();
        wall.push(performance.now() - t);
        const d = process.cpuUsage(c);
        cpu.push((d.user + d.system) / 1e3);
      }
      const top = (xs) => {
        xs.sort((a, b) => a - b);
        return {
          p999: xs[Math.min(xs.length - 1, Math.floor(0.999 * xs.length))],
          max: xs[xs.length - 1],
        };
      };
      const w = top(wall);
      const c = top(cpu);
      return { steps: wall.length, p999: w.p999, max: w.max, cpuP999: c.p999, cpuMax: c.max };
    };
    // Each walk BENCH_STEP_WALKS times (default 3): noise (another process taking the core, a
    // GC) lengthens a random step of one walk, while a step that is long by construction is long
    // in every walk, so the shortest of the walks' longest steps is the robust figure.
    const walks = Number(process.env.BENCH_STEP_WALKS ?? 3);
    const repeat = (make) => {
      const runs = Array.from({ length: walks }, () => stepTimes(make()));
      const best = runs.reduce((a, b) => (b.max < a.max ? b : a));
      return { ...best, longestPerWalk: runs.map((r) => r.max), floor: best.max };
    };
    const encodeSteps = repeat(() => {
      const encoder = new SnapshotEncoder(live);
      return () => encoder.step(512) === null;
    });
    const hashSteps = repeat(() => {
      const hasher = new StateHasher(live);
      return () => hasher.step(512);
    });
    console.log(
      `\nWalk steps of 512 values, ${walks} walks each: encode ${fmt(encodeSteps.steps)} steps, longest step per walk ${encodeSteps.longestPerWalk.map((x) => x.toFixed(1)).join(' / ')} ms; hash ${fmt(hashSteps.steps)} steps, longest per walk ${hashSteps.longestPerWalk.map((x) => x.toFixed(1)).join(' / ')} ms.`,
    );
    gc();
    const stalls = monitorEventLoopDelay({ resolution: 1 });
    const ticker = setInterval(() => {}, 1);
    stalls.enable();
    const written = await new Snapshotter({ dir, log: () => {} }).write(live, commands.length);
    stalls.disable();
    clearInterval(ticker);
    if (written?.hash !== liveHash) throw new Error('snapshot file hash differs');
    const ms = (q) => stalls.percentile(q) / 1e6;
    figures.stall = {
      encodeSteps,
      hashSteps,
      writeS: written.ms / 1e3,
      bytes: written.bytes,
      p50: ms(50),
      p99: ms(99),
      p999: ms(99.9),
      max: stalls.max / 1e6,
    };
    console.log(
      `\nBackground snapshot write (encode + hash + CRC + write + fsync + rename): ${(written.ms / 1e3).toFixed(1)} s, ${fmt(written.bytes / 1e6)} MB; event-loop delay while it ran: p50 ${ms(50).toFixed(2)} ms, p99 ${ms(99).toFixed(2)} ms, p99.9 ${ms(99.9).toFixed(2)} ms, max ${(stalls.max / 1e6).toFixed(1)} ms.`,
    );
  }

  // ---- read models: rebuilt from the journal (the backfill) against loaded from a checkpoint ----
  // Twice: with the venue's retention, which keeps all of this run (the worst case for a
  // checkpoint: it holds as much as the journal), and with a tenth of it, as a venue whose journal
  // outgrew what its read models keep (history and report buffers are bounded per account).
  if (ONLY.has('readmodels')) {
    const perAccount = Math.max(1, Math.round(commands.length / 1000));
    const retentions = [
      ["the venue's (all of this run)", {}],
      [
        `a tenth of this run (${fmt(perAccount / 10)} reports, closed orders and trades per account)`,
        {
          history: { maxClosedOrders: perAccount / 10, maxTrades: perAccount / 10 },
          streams: { capacity: perAccount / 10 },
        },
      ],
    ];
    console.log(`\n## Read models at the end of ${fmt(commands.length)} records`);
    console.log(
      '| retention | rebuilt from the journal (backfill: reduce + projections) | checkpoint size | written in slices | event-loop delay while writing p99 / max | loaded from it (read + CRC + decode) | load / rebuild |',
    );
    console.log('|---|---:|---:|---:|---:|---:|---:|');
    figures.readModels = [];
    for (const [name, limits] of retentions) {
      const row = await readModelFigures(commands, liveHash, limits);
      figures.readModels.push({ retention: name, ...row });
      console.log(
        `| ${name} | ${row.rebuildS.toFixed(1)} s | ${fmt(row.bytes / 1e6)} MB | ${row.writeS.toFixed(1)} s | ${row.p99.toFixed(1)} / ${row.max.toFixed(1)} ms | ${row.loadS.toFixed(1)} s | ${(row.loadS / row.rebuildS).toFixed(2)} |`,
      );
    }
  }

  // ---- acknowledgement latency with fsync on ----------------------------------------------------
  if (ONLY.has('acks')) {
    console.log(
      `\n## Acknowledgement latency: EngineHost.submit -> resolved (reduce + write + fdatasync) in ${dir}`,
    );
    const setup = commands.slice(0, engine.setup.length);
    const flow = commands.slice(setup.length);
    const setupState = reduceAll(createEngineState({}, T0), setup).state;
    /** A host over a fresh FileJournal, counting appends (one append = one write + fdatasync). */
    const freshHost = (name) => {
      const journal = FileJournal.open(join(dir, `acks-${name}.log`), { log: () => {} });
      const counter = { syncs: 0 };
      const host = new EngineHost({
        state: setupState,
        journal: {
          append: (cs) => {
            counter.syncs++;
            return journal.append(cs);
          },
          read: (a) => journal.read(a),
          get lastSeq() {
            return journal.lastSeq;
          },
          close: () => journal.close(),
        },
        clock: new SystemClock(T0 + 10_000_000),
      });
      return { host, journal, counter };
    };
    const quantiles = (lat) => {
      lat.sort((a, b) => a - b);
      const q = (p) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))];
      return { n: lat.length, p50: q(0.5), p99: q(0.99), max: lat[lat.length - 1] };
    };
    // The event loop while acks run: a synchronous flush holds it for the whole fsync. A 1 ms
    // timer counts the turns that reached the timers phase (about 1,000/s when the loop is free;
    // 0 when the run never yielded, and then the delay histogram has no sample either).
    const loopMonitor = () => {
      const h = monitorEventLoopDelay({ resolution: 1 });
      let ticks = 0;
      const ticker = setInterval(() => ticks++, 1);
      const t0 = performance.now();
      h.enable();
      return () => {
        h.disable();
        clearInterval(ticker);
        const wallS = (performance.now() - t0) / 1e3;
        const sampled = h.count > 0;
        return {
          p99: sampled ? h.percentile(99) / 1e6 : null,
          max: sampled ? h.max / 1e6 : null,
          ticksPerSecond: ticks / wallS,
        };
      };
    };
    const loopText = (l) =>
      l.p99 === null
        ? `held (${fmt(l.ticksPerSecond)} ticks/s)`
        : `${l.p99.toFixed(1)} / ${l.max.toFixed(1)} ms, ${fmt(l.ticksPerSecond)} ticks/s`;

    console.log(
      '\nClosed loop: each client submits its next command when the previous one is acknowledged.',
    );
    console.log(
      '| clients in flight | acks | p50 | p99 | max | acks/s | records per fsync | event loop: delay p99 / max, 1 ms timer ticks/s |',
    );
    console.log('|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const clients of [1, 16, 128]) {
      const { host, journal, counter } = freshHost(`closed-${clients}`);
      const lat = [];
      let next = 0;
      const total = Math.min(flow.length, clients === 1 ? ACKS : ACKS * 4);
      const stop = loopMonitor();
      const started = process.hrtime.bigint();
      const worker = async () => {
        while (next < total) {
          // In order: each order id a cancel names is the one the host assigns here too.
          const { time: _t, ...input } = flow[next++];
          const t = process.hrtime.bigint();
          await host.submit(input);
          lat.push(Number(process.hrtime.bigint() - t) / 1e6);
        }
      };
      await Promise.all(Array.from({ length: clients }, worker));
      const wall = seconds(started);
      const loop = stop();
      await journal.close();
      const r = {
        clients,
        ...quantiles(lat),
        perSecond: lat.length / wall,
        perFsync: lat.length / counter.syncs,
        loop,
      };
      figures.acks.push(r);
      console.log(
        `| ${clients} | ${fmt(r.n)} | ${r.p50.toFixed(2)} ms | ${r.p99.toFixed(2)} ms | ${r.max.toFixed(2)} ms | ${fmt(r.perSecond)} | ${r.perFsync.toFixed(1)} | ${loopText(loop)} |`,
      );
    }

    // Open loop: commands arrive on a schedule whatever the host does (as requests from many
    // connections do); latency counts from the scheduled arrival, so time the event loop was held
    // (arrivals not even read) counts too.
    console.log(
      '\nOpen loop: commands arrive at a fixed rate; latency from the scheduled arrival to the ack.',
    );
    console.log(
      '| offered/s | acks | p50 | p99 | max | records per fsync | event loop: delay p99 / max, 1 ms timer ticks/s |',
    );
    console.log('|---:|---:|---:|---:|---:|---:|---:|');
    for (const [rate, secs] of OPEN) {
      const { host, journal, counter } = freshHost(`open-${rate}`);
      const total = Math.min(flow.length, Math.round(rate * secs));
      const lat = [];
      const pending = [];
      const stop = loopMonitor();
      const t0 = performance.now();
      let sent = 0;
      await new Promise((resolve) => {
        const tick = () => {
          const now = performance.now();
          const due = Math.min(total, Math.floor(((now - t0) / 1e3) * rate) + 1);
          for (; sent < due; sent++) {
            const at = t0 + (sent / rate) * 1e3;
            const { time: _t, ...input } = flow[sent];
            pending.push(host.submit(input).then(() => lat.push(performance.now() - at)));
          }
          if (sent < total) setTimeout(tick, 1);
          else resolve();
        };
        tick();
      });
      await Promise.all(pending);
      const loop = stop();
      await journal.close();
      const r = { rate, ...quantiles(lat), perFsync: lat.length / counter.syncs, loop };
      figures.open.push(r);
      console.log(
        `| ${fmt(rate)} | ${fmt(r.n)} | ${r.p50.toFixed(2)} ms | ${r.p99.toFixed(2)} ms | ${r.max.toFixed(2)} ms | ${r.perFsync.toFixed(1)} | ${loopText(loop)} |`,
      );
    }
  }
  if (JSON_OUT) console.log(JSON.stringify(figures));
} finally {
  if (process.env.BENCH_KEEP === undefined) rmSync(dir, { recursive: true, force: true });
  else console.log(`kept ${dir}`);
}
