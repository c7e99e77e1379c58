/**
 * A clean stop under load (docs/durability.md, "Snapshots"): the requests already received are
 * finished before the stop's snapshot, so it covers the journal's end, and the read models
 * written beside it are those of its seq. Found by the crash harness's archive cycles: requests
 * still on a socket's message chain were applied after the stop's snapshot was decided, and the
 * read models at the journal's end were checkpointed under the older snapshot's seq (a restart
 * from it then listed those trades twice).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { scanFrames } from '../src/journal/file-journal.js';
import { listCheckpointFiles } from '../src/journal/read-model-files.js';
import { listSnapshotFiles } from '../src/journal/snapshots.js';
import type { StartVenueOptions } from '../src/venue.js';
import { btc, limitOrder, px, startTestVenue, type TestVenue, traders } from './support/fixture.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function start(dir: string, options: StartVenueOptions = {}): Promise<TestVenue> {
  return startTestVenue({
    dataDir: dir,
    priceFeed: 'none',
    snapshots: { everyRecords: 1_000_000, everyMs: 0, atClose: true },
    ...options,
  });
}

/** What the read models serve of both traders' history. */
async function history(t: TestVenue): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const w of [t.wallet(0), t.wallet(1)]) {
    out.push((await t.api('GET', `/account/trades?wallet=${w.address}&limit=500`)).body);
    out.push((await t.api('GET', `/historic/orders?wallet=${w.address}&limit=500`)).body);
  }
  return out;
}

/** A venue stopped while 200 signed orders are still on its sockets; see the test. */
async function stopUnderLoad(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'perp-clean-stop-'));
  dirs.push(dir);
  let t = await start(dir);
  await t.oracle({ 'BTC-PERP': '65000' });
  const x = await traders(t, true);
  // Signed first, then sent in one go: most are still queued on the sockets at the stop.
  const orders: { ws: typeof x.a; signature: Awaited<ReturnType<typeof x.alice.sign>> }[] = [];
  for (let i = 0; i < 100; i++) {
    const price = px(65000 + (i % 5));
    orders.push({
      ws: x.b,
      signature: await x.bob.sign('Order', limitOrder(false, price, btc(0.01))),
    });
    orders.push({
      ws: x.a,
      signature: await x.alice.sign(
        'Order',
        limitOrder(true, price, btc(0.01), { timeInForce: 2 }),
      ),
    });
  }
  const answers = orders.map((o) =>
    o.ws.request({ type: 'placeOrder', signature: o.signature }).catch(() => null),
  );
  const onboarded = t.venue.context.host.journalSeq;
  await t.close();
  await Promise.all(answers);

  const journal = join(dir, 'journal.log');
  const lastSeq = scanFrames(journal, readFileSync(journal)).offsets.length;
  // The stop's snapshot covers every journaled record, and has its read models beside it.
  expect(lastSeq).toBeGreaterThan(onboarded);
  expect(listSnapshotFiles(dir)[0]?.seq).toBe(lastSeq);
  expect(listCheckpointFiles(dir)[0]?.seq).toBe(lastSeq);

  // Loaded from that checkpoint, the history is a full replay's.
  t = await start(dir);
  expect(await t.venue.historyBackfill?.done).toBe('complete');
  expect(t.venue.historyBackfill?.progress).toMatchObject({ source: 'checkpoint' });
  const loaded = await history(t);
  await t.close();
  t = await start(dir, { snapshots: false });
  const replayed = await history(t);
  await t.close();
  expect(loaded).toEqual(replayed);
}

it('a stop while requests are still on the sockets finishes them, then snapshots the journal end', async () => {
  // The race is timing-dependent: three venues make a regression likely to show.
  for (let i = 0; i < 3; i++) await stopUnderLoad();
});

it('a clean stop answers the requests it finishes before it closes their sockets', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'perp-clean-stop-'));
  dirs.push(dir);
  let t = await start(dir);
  await t.oracle({ 'BTC-PERP': '65000' });
  const x = await traders(t, true);
  await x.a.request({ type: 'subscribeTrading' });
  // A fresh second of the wallet's 20 requests, so none is refused for the rate.
  await new Promise((r) => setTimeout(r, 1_100));
  const signatures: Awaited<ReturnType<typeof x.alice.sign>>[] = [];
  for (let i = 0; i < 15; i++)
    signatures.push(await x.alice.sign('Order', limitOrder(true, px(60000 - i), btc(0.01))));
  // The stop starts as the first answer arrives: the others are on their way to the engine.
  let stopped: Promise<void> | undefined;
  const replies = await Promise.all(
    signatures.map((signature) =>
      x.a.request({ type: 'placeOrder', signature }).then(
        (m) => {
          stopped ??= t.venue.close();
          return m;
        },
        () => null,
      ),
    ),
  );
  await stopped;
  expect(x.a.closed?.code).toBe(1001);
  const acks = replies.filter((m) => m?.type === 'orderAck');
  // Each acknowledged order's report came before the close, as live reports do.
  for (const ack of acks)
    expect(x.a.reports().some((r) => r.seq === ack?.seq && r.kind === 'OrderAccepted')).toBe(true);
  await t.close();

  // The restarted venue knows which were applied: their nonces are used. Each was answered.
  t = await start(dir);
  const again = await t.connect(x.alice);
  const applied: number[] = [];
  for (const [i, signature] of signatures.entries()) {
    const r = await again.request({ type: 'placeOrder', signature });
    if (r.type === 'error' && r.code === 4002) applied.push(i);
  }
  expect(applied.length).toBeGreaterThan(1);
  expect(applied.filter((i) => replies[i] === null)).toEqual([]);
  await t.close();
});
