/**
 * Randomized end-to-end test of the trading socket's ordering now that a signed request no
 * longer holds its connection until its answer (protocol.md section 5): several wallets, each
 * with 2-3 sockets plus REST, send bursts without waiting for answers (places, cancels by cloid
 * of orders that may not exist yet, replaces, cancelAll, duplicates, logout/authenticate,
 * subscriptions, malformed and wrongly signed messages, sockets closed mid-burst). Checked:
 * exactly one answer per id on a socket that stayed open; each wallet's accepted requests were
 * applied in per-connection send order and in causal order across connections; cancels and
 * replaces see exactly the orders sent before them on their socket; report streams have no gaps;
 * no unhandled error, no send on a closed socket, a clean close and the core's invariants.
 *
 * `WS_CONCURRENCY_SEED` (default 1) seeds the run; `WS_CONCURRENCY_ROUNDS` (default 4) and
 * `WS_CONCURRENCY_BURST` (messages per wallet per round, default 40) make it longer.
 */
import { accountOrders } from '@perp/core';
import { checkInvariants } from '@perp/core/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import { DEFAULT_CONFIG, type VenueConfig } from '../src/index.js';
import { freshNonce, type Msg, Wallet, type WsClient } from './support/client.js';
import { btc, cloid, limitOrder, px, startTestVenue, type TestVenue } from './support/fixture.js';

const SEED = Number(process.env.WS_CONCURRENCY_SEED ?? 1);
const ROUNDS = Number(process.env.WS_CONCURRENCY_ROUNDS ?? 12);
const BURST = Number(process.env.WS_CONCURRENCY_BURST ?? 40);
const WALLETS = 3;

/** mulberry32. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T,
    chance: (p: number) => next() < p,
  };
}

// ---- process-wide watchers -----------------------------------------------------------------

const problems: string[] = [];
const onUnhandled = (e: unknown) => problems.push(`unhandled rejection: ${String(e)}`);
const onUncaught = (e: unknown) => problems.push(`uncaught exception: ${String(e)}`);
const sendsAfterClose: string[] = [];
const sendsWhileClosing: string[] = [];
const originalSend = WebSocket.prototype.send;
const originalConsoleError = console.error;

beforeAll(() => {
  process.on('unhandledRejection', onUnhandled);
  process.on('uncaughtException', onUncaught);
  // Both ends share this module: the test's clients never send on a socket they closed, so a
  // send on a socket that is not open is the server answering on a closed connection.
  WebSocket.prototype.send = function (this: WebSocket, ...args: Parameters<WebSocket['send']>) {
    if (this.readyState === WebSocket.CLOSED) sendsAfterClose.push(String(args[0]).slice(0, 200));
    else if (this.readyState === WebSocket.CLOSING) {
      sendsWhileClosing.push(String(args[0]).slice(0, 200));
      if (process.env.WS_CONCURRENCY_DEBUG !== undefined && sendsWhileClosing.length < 4)
        originalConsoleError(String(args[0]).slice(0, 120), new Error('send while closing').stack);
    }
    return originalSend.apply(this, args);
  } as WebSocket['send'];
  console.error = (...args: unknown[]) => {
    problems.push(`console.error: ${args.map(String).join(' ').slice(0, 300)}`);
    originalConsoleError(...args);
  };
});
afterAll(() => {
  process.off('unhandledRejection', onUnhandled);
  process.off('uncaughtException', onUncaught);
  WebSocket.prototype.send = originalSend;
  console.error = originalConsoleError;
});

// ---- bookkeeping ---------------------------------------------------------------------------

let clock = 0;

type Kind =
  | 'place'
  | 'cancel'
  | 'replace'
  | 'cancelAll'
  | 'dup'
  | 'logout'
  | 'authenticate'
  | 'subscribeTrading'
  | 'unsubscribeTrading'
  | 'subscribeAccountSummary'
  | 'unsubscribeAccountSummary'
  | 'ping'
  | 'malformed'
  | 'badSig'
  | 'otherWallet'
  | 'transfer'
  | 'claim';

interface Sent {
  readonly id: string;
  readonly kind: Kind;
  readonly conn: Conn;
  readonly text: string;
  /** Predicted session state when this message runs (session messages run to the end). */
  readonly loggedIn: boolean;
  /** Expected exact answer type / error code for messages whose answer is determined. */
  expectType?: string;
  expectCode?: number;
  /** place: the cloid created; replace: new cloid; cancel/replace: the target cloid. */
  creates?: string;
  target?: string;
  dupOf?: Sent;
  sentAt: number;
  answers: Msg[];
  answeredAt?: number;
}

interface Conn {
  readonly name: string;
  readonly client: WsClient;
  readonly wallet: number;
  /** Closed by the test mid-burst: its answers are not required. */
  closedByUs: boolean;
  loggedIn: boolean;
  subscribed: boolean;
  sent: Sent[];
  byId: Map<string, Sent>;
  /** Id-less malformed messages sent and id-less errors received. */
  idlessSent: number;
  idlessGot: number;
  /** Next expected live report seq while subscribed (client view). */
  window: { next: number } | null;
  counter: number;
}

interface WalletRun {
  readonly index: number;
  readonly w: Wallet;
  conns: Conn[];
  /** Persistent observer: subscribed once, never touched. */
  observer: WsClient;
  observerNext: number;
  /** seq -> report seen by the observer. */
  reports: Map<number, Msg>;
  /** Signed messages sent so far (candidates for duplicates). */
  signed: Sent[];
  /** cloid -> side and the socket that created it. */
  cloids: Map<string, { isBuy: boolean; conn: Conn; tainted: boolean }>;
  allSent: Sent[];
}

const ACKS = new Set(['orderAck', 'cancelAck', 'replaceAck', 'cancelAllAck']);
const isAck = (m: Msg | undefined): m is Msg => m !== undefined && ACKS.has(m.type);
const SIGNED = new Set<Kind>([
  'place',
  'cancel',
  'replace',
  'cancelAll',
  'dup',
  'badSig',
  'otherWallet',
  'transfer',
  'claim',
]);

function withLimits(): VenueConfig {
  return {
    ...DEFAULT_CONFIG,
    verifyWorkers: SEED % 2 === 0 ? 0 : 1,
    limits: {
      ...DEFAULT_CONFIG.limits,
      walletRequestsPerSecond: 1_000_000,
      signedRequestsPer5Minutes: 1_000_000,
      publicReadsPerSecond: 1_000_000,
      connectionsPerIp: 1_000,
    },
  };
}

let t: TestVenue | undefined;
let nextCloid = 1;

function fail(v: string[], message: string): void {
  if (v.length < 50) v.push(message);
}

function attach(conn: Conn, violations: string[]): void {
  conn.client.ws.on('message', (data) => {
    const m = JSON.parse(String(data)) as Msg;
    const at = ++clock;
    if (m.type === 'executionReport') {
      const seq = m.seq as number;
      if (m.replay === true) return;
      if (conn.window === null) {
        fail(violations, `${conn.name}: report seq ${seq} outside a subscription`);
      } else {
        if (seq !== conn.window.next)
          fail(violations, `${conn.name}: report seq ${seq}, expected ${conn.window.next}`);
        conn.window.next = seq + 1;
      }
      return;
    }
    if (typeof m.id !== 'string') {
      if (m.type === 'error') conn.idlessGot++;
      return;
    }
    const s = conn.byId.get(m.id);
    if (s === undefined) return; // the fixture's own authenticate
    s.answers.push(m);
    if (s.answers.length === 1) s.answeredAt = at;
    if (m.type === 'subscribeTradingSuccess') conn.window = { next: (m.seq as number) + 1 };
    if (m.type === 'unsubscribeTradingSuccess' || m.type === 'logoutSuccess') conn.window = null;
  });
}

async function openConn(run: WalletRun, name: string, violations: string[]): Promise<Conn> {
  const client = await t!.connect(run.w);
  const conn: Conn = {
    name,
    client,
    wallet: run.index,
    closedByUs: false,
    loggedIn: true,
    subscribed: false,
    sent: [],
    byId: new Map(),
    idlessSent: 0,
    idlessGot: 0,
    window: null,
    counter: 0,
  };
  attach(conn, violations);
  return conn;
}

/** A message ready to send: built (and signed) ahead so the burst goes out in one go. */
interface Planned {
  conn: Conn | 'rest' | 'close';
  kind: Kind;
  body?: Record<string, unknown>;
  raw?: string;
  idless?: boolean;
  creates?: string;
  target?: string;
  dupOf?: Sent;
  restBody?: Record<string, unknown>;
}

it(`a wallet's requests are applied in arrival order under concurrent bursts (seed ${SEED})`, async () => {
  const violations: string[] = [];
  const rnd = prng(SEED);
  try {
    t = await startTestVenue({ config: withLimits() });
    await t.oracle({ 'BTC-PERP': '60000' });
    const runs: WalletRun[] = [];
    for (let i = 0; i < WALLETS; i++) {
      const w = t.wallet(i);
      await t.invite(w);
      await t.fund(w, '1000000');
      const observer = await t.connect(w);
      const ack = await observer.request({ type: 'subscribeTrading' });
      expect(ack.type).toBe('subscribeTradingSuccess');
      const run: WalletRun = {
        index: i,
        w,
        conns: [],
        observer,
        observerNext: (ack.seq as number) + 1,
        reports: new Map(),
        signed: [],
        cloids: new Map(),
        allSent: [],
      };
      observer.ws.on('message', (data) => {
        const m = JSON.parse(String(data)) as Msg;
        if (m.type !== 'executionReport') return;
        const seq = m.seq as number;
        if (seq !== run.observerNext)
          fail(violations, `observer ${i}: report seq ${seq}, expected ${run.observerNext}`);
        run.observerNext = seq + 1;
        run.reports.set(seq, m);
      });
      runs.push(run);
    }
    const tv = t;
    const other = (i: number) => runs[(i + 1) % runs.length]!;
    let connCount = 0;
    const restPending: Promise<void>[] = [];

    for (let round = 0; round < ROUNDS; round++) {
      // Top every wallet up to 2-3 sockets.
      for (const run of runs) {
        run.conns = run.conns.filter((c) => !c.closedByUs);
        // Rounds end quiet (every answer in): checks look at one round at a time.
        run.allSent = [];
        for (const c of run.conns) c.sent = [];
        const want = 2 + rnd.int(2);
        while (run.conns.length < want)
          run.conns.push(await openConn(run, `w${run.index}c${connCount++}`, violations));
      }

      // Plan (and sign) every wallet's burst, keeping a send-order model of each socket.
      const plans: Planned[][] = [];
      for (const run of runs) {
        const plan: Planned[] = [];
        const model = new Map(
          run.conns.map((c) => [c, { loggedIn: c.loggedIn, placed: [] as string[] }]),
        );
        const future: { conn: Conn; cloid: string }[] = [];
        let closed = false;
        for (let k = 0; k < BURST; k++) {
          const open = run.conns.filter(
            (c) => !plan.some((p) => p.conn === 'close' && p.body?.name === c.name),
          );
          const conn = rnd.pick(open);
          const m = model.get(conn)!;
          const r = rnd.next();
          const fresh = () => cloid(nextCloid++);
          const buyPrice = () => px(50_000 + rnd.int(5_000));
          const sellPrice = () => px(65_000 + rnd.int(5_000));
          if (r < 0.28) {
            // Place, sometimes a cloid a cancel already asked for.
            const pending = future.findIndex((f) => f.conn === conn);
            const c =
              pending >= 0 && rnd.chance(0.5) ? future.splice(pending, 1)[0]!.cloid : fresh();
            const isBuy = rnd.chance(0.5);
            run.cloids.set(c, { isBuy, conn, tainted: false });
            const signature = await run.w.sign(
              'Order',
              limitOrder(isBuy, isBuy ? buyPrice() : sellPrice(), btc(0.01), { cloid: c }),
            );
            plan.push({
              conn,
              kind: 'place',
              body: { type: 'placeOrder', instrument: 'BTC-PERP', signature },
              creates: c,
            });
            m.placed.push(c);
          } else if (r < 0.46) {
            // Cancel by cloid: own earlier order, another socket's, one not placed yet, none.
            const q = rnd.next();
            let c: string;
            if (q < 0.6 && m.placed.length > 0) c = rnd.pick(m.placed);
            else if (q < 0.75 && run.cloids.size > 0) c = rnd.pick([...run.cloids.keys()]);
            else if (q < 0.9) {
              c = fresh();
              future.push({ conn, cloid: c });
            } else c = fresh();
            const signature = await run.w.sign('Cancel', {
              market: 1,
              orderId: 0n,
              cloid: c,
              nonce: freshNonce(),
              deadline: Wallet.deadline(),
            });
            plan.push({
              conn,
              kind: 'cancel',
              body: { type: 'cancelOrder', signature },
              target: c,
            });
          } else if (r < 0.56 && m.placed.length > 0) {
            const c = rnd.pick(m.placed);
            const info = run.cloids.get(c)!;
            const n = fresh();
            run.cloids.set(n, { isBuy: info.isBuy, conn, tainted: false });
            const signature = await run.w.sign('Replace', {
              market: 1,
              orderId: 0n,
              origCloid: c,
              price: info.isBuy ? buyPrice() : sellPrice(),
              triggerPrice: 0n,
              quantity: btc(0.01),
              cloid: n,
              nonce: freshNonce(),
              deadline: Wallet.deadline(),
            });
            plan.push({
              conn,
              kind: 'replace',
              body: { type: 'replaceOrder', signature },
              target: c,
              creates: n,
            });
            m.placed.push(n);
          } else if (r < 0.59) {
            const signature = await run.w.sign('CancelAll', {
              market: 1,
              nonce: freshNonce(),
              deadline: Wallet.deadline(),
            });
            plan.push({ conn, kind: 'cancelAll', body: { type: 'cancelAll', signature } });
          } else if (r < 0.64) {
            // Duplicate nonce: the same signed message again, on this or another socket.
            const prior = plan.filter(
              (p) =>
                p.conn !== 'rest' &&
                p.conn !== 'close' &&
                SIGNED.has(p.kind) &&
                !['badSig', 'otherWallet', 'dup'].includes(p.kind),
            );
            if (prior.length === 0) continue;
            const orig = rnd.pick(prior);
            plan.push({
              conn,
              kind: 'dup',
              body: { ...orig.body! },
              dupOf: orig as unknown as Sent,
            });
            if (orig.creates !== undefined && orig.conn !== conn)
              run.cloids.get(orig.creates)!.tainted = true;
          } else if (r < 0.68) {
            plan.push({ conn, kind: 'logout', body: { type: 'logout' } });
            m.loggedIn = false;
            if (rnd.chance(0.7)) {
              plan.push({
                conn,
                kind: 'authenticate',
                body: { type: 'authenticate', signature: await run.w.authenticate() },
              });
              m.loggedIn = true;
            }
          } else if (r < 0.7 && !m.loggedIn) {
            plan.push({
              conn,
              kind: 'authenticate',
              body: { type: 'authenticate', signature: await run.w.authenticate() },
            });
            m.loggedIn = true;
          } else if (r < 0.75) {
            plan.push({ conn, kind: 'subscribeTrading', body: { type: 'subscribeTrading' } });
          } else if (r < 0.78) {
            plan.push({ conn, kind: 'unsubscribeTrading', body: { type: 'unsubscribeTrading' } });
          } else if (r < 0.8) {
            plan.push({
              conn,
              kind: rnd.chance(0.5) ? 'subscribeAccountSummary' : 'unsubscribeAccountSummary',
              body: {
                type: rnd.chance(0.5) ? 'subscribeAccountSummary' : 'unsubscribeAccountSummary',
              },
            });
            const last = plan[plan.length - 1]!;
            last.kind = last.body!.type as Kind;
          } else if (r < 0.82) {
            plan.push({ conn, kind: 'ping', body: { type: 'ping' } });
          } else if (r < 0.87) {
            const v = rnd.int(5);
            if (v === 0)
              plan.push({ conn, kind: 'malformed', raw: '{"type": "placeOrder", ', idless: true });
            else if (v === 1)
              plan.push({
                conn,
                kind: 'malformed',
                raw: JSON.stringify({ type: 'ping', id: 'bad id!' }),
                idless: true,
              });
            else if (v === 2)
              plan.push({
                conn,
                kind: 'malformed',
                body: { type: 'placeOrder', signature: 'nope' },
              });
            else if (v === 3)
              plan.push({ conn, kind: 'malformed', body: { type: 'noSuchMessage' } });
            else
              plan.push({
                conn,
                kind: 'malformed',
                body: { type: 'cancelOrder', signature: { sig: '0x12', payload: '0x' } },
              });
          } else if (r < 0.92) {
            // Wrongly signed: this wallet's struct signed by another key (4001), or another
            // wallet's struct on this wallet's socket (4004).
            const o = other(run.index).w;
            const order = limitOrder(true, buyPrice(), btc(0.01), { cloid: fresh() });
            if (rnd.chance(0.5)) {
              const signature = await o.sign('Order', { ...order, account: run.w.address });
              plan.push({ conn, kind: 'badSig', body: { type: 'placeOrder', signature } });
            } else {
              const signature = await o.sign('Order', order);
              plan.push({ conn, kind: 'otherWallet', body: { type: 'placeOrder', signature } });
            }
          } else if (r < 0.935) {
            // Margin transfers and claims of auctions that do not exist: answered, never ordered.
            if (rnd.chance(0.5)) {
              const signature = await run.w.sign('MarginTransfer', {
                amount: 1_000_000n,
                market: 1,
                flags: 0,
                nonce: freshNonce(),
                deadline: Wallet.deadline(),
              });
              plan.push({
                conn,
                kind: 'transfer',
                body: {
                  type: 'transferMargin',
                  amount: '1',
                  direction: 'crossToIsolated',
                  instrument: 'BTC-PERP',
                  signature,
                },
              });
            } else {
              const signature = await run.w.sign('ClaimLiquidation', {
                auctionId: BigInt(1 + rnd.int(1000)),
                quantity: btc(0.01),
                maxPrice: px(70_000),
                nonce: freshNonce(),
                deadline: Wallet.deadline(),
              });
              plan.push({ conn, kind: 'claim', body: { type: 'claimLiquidation', signature } });
            }
          } else if (r < 0.96) {
            const leverage = rnd.pick([1000, 2000]);
            const signature = await run.w.sign('UpdateLeverage', {
              market: 1,
              leverage,
              flags: 0,
              nonce: freshNonce(),
              deadline: Wallet.deadline(),
            });
            plan.push({
              conn: 'rest',
              kind: 'ping',
              restBody: { leverage, instrument: 'BTC-PERP', marginMode: 'Cross', signature },
            });
          } else if (!closed && rnd.chance(0.5) && open.length > 1) {
            closed = true;
            plan.push({ conn: 'close', kind: 'ping', body: { name: conn.name } });
            // Later messages of this burst skip the closed socket (see `open` above).
          }
        }
        plans.push(plan);
      }

      // Send every burst at once, interleaving the wallets.
      const cursors = plans.map(() => 0);
      const closedNow = new Set<Conn>();
      for (let live = true; live; ) {
        live = false;
        for (let i = 0; i < plans.length; i++) {
          const plan = plans[i]!;
          const run = runs[i]!;
          const step = 1 + rnd.int(3);
          for (let j = 0; j < step && cursors[i]! < plan.length; j++) {
            const p = plan[cursors[i]!++]!;
            live = true;
            if (p.conn === 'close') {
              const c = run.conns.find((x) => x.name === p.body!.name)!;
              c.closedByUs = true;
              closedNow.add(c);
              c.client.ws.close();
              continue;
            }
            if (p.conn === 'rest') {
              restPending.push(
                tv.api('POST', '/update_leverage', p.restBody).then((res) => {
                  if (
                    res.status >= 500 ||
                    (res.status === 200 && res.body.command_id === undefined)
                  )
                    fail(violations, `REST ${res.status} ${JSON.stringify(res.body)}`);
                }),
              );
              continue;
            }
            const conn = p.conn;
            if (conn.closedByUs) continue;
            if (p.idless) {
              conn.idlessSent++;
              conn.client.ws.send(p.raw!);
              continue;
            }
            const id = `${conn.name}m${conn.counter++}`;
            const text = JSON.stringify({ ...p.body, id });
            const s: Sent = {
              id,
              kind: p.kind,
              conn,
              text,
              loggedIn: conn.loggedIn,
              sentAt: ++clock,
              answers: [],
            };
            if (p.creates !== undefined) s.creates = p.creates;
            if (p.target !== undefined) s.target = p.target;
            const orig = (p.dupOf as unknown as { sent?: Sent } | undefined)?.sent;
            if (orig !== undefined) s.dupOf = orig;
            (p as unknown as { sent: Sent }).sent = s;
            // Session effects and determined answers, in this socket's send order.
            switch (p.kind) {
              case 'logout':
                conn.loggedIn = false;
                conn.subscribed = false;
                s.expectType = 'logoutSuccess';
                break;
              case 'authenticate':
                conn.loggedIn = true;
                s.expectType = 'authenticateSuccess';
                break;
              case 'subscribeTrading':
                if (!conn.loggedIn) s.expectCode = 4003;
                else if (conn.subscribed) s.expectCode = 4033;
                else {
                  s.expectType = 'subscribeTradingSuccess';
                  conn.subscribed = true;
                }
                break;
              case 'unsubscribeTrading':
                conn.subscribed = false;
                s.expectType = 'unsubscribeTradingSuccess';
                break;
              case 'subscribeAccountSummary':
                if (!conn.loggedIn) s.expectCode = 4003;
                else s.expectType = 'accountSummary';
                break;
              case 'unsubscribeAccountSummary':
                s.expectType = 'unsubscribeAccountSummarySuccess';
                break;
              case 'ping':
                s.expectType = 'pong';
                break;
              case 'malformed':
                // A malformed signed message on a logged-out socket is refused for the session.
                s.expectCode = !conn.loggedIn && p.body!.type !== 'noSuchMessage' ? 4003 : 4000;
                break;
              default:
                if (!conn.loggedIn) s.expectCode = 4003;
                else if (p.kind === 'badSig') s.expectCode = 4001;
                else if (p.kind === 'otherWallet') s.expectCode = 4004;
                else if (p.kind === 'place') s.expectType = 'orderAck';
                else if (p.kind === 'cancelAll') s.expectType = 'cancelAllAck';
                else if (p.kind === 'transfer') s.expectType = 'marginTransferred';
                else if (p.kind === 'claim') s.expectType = 'error';
            }
            conn.sent.push(s);
            conn.byId.set(id, s);
            run.allSent.push(s);
            conn.client.ws.send(text);
          }
        }
      }

      // Wait for every answer owed on the sockets that stayed open, then a little for extras.
      const deadline = Date.now() + 15_000;
      const owed = () =>
        runs
          .flatMap((r) => r.conns)
          .filter(
            (c) =>
              !c.closedByUs &&
              (c.sent.some((s) => s.answers.length === 0) || c.idlessGot < c.idlessSent),
          );
      while (owed().length > 0 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      await Promise.all(restPending.splice(0));
      await new Promise((r) => setTimeout(r, 100));
      // The observers see every report of their wallet (they are other sockets: they may lag).
      const caughtUp = () =>
        runs.every(
          (r) =>
            r.observerNext - 1 >=
            (tv.venue.context.host.state.accounts.get(r.w.address)?.reportSeq ?? 0),
        );
      while (!caughtUp() && Date.now() < deadline + 5_000)
        await new Promise((r) => setTimeout(r, 20));
      for (const c of owed())
        for (const s of c.sent)
          if (s.answers.length === 0)
            fail(
              violations,
              `round ${round}: no answer to ${s.id} (${s.kind}) ${s.text.slice(0, 80)}`,
            );

      // ---- checks -------------------------------------------------------------------------
      for (const run of runs) {
        for (const conn of run.conns) {
          for (const s of conn.sent) {
            if (s.answers.length > 1)
              fail(violations, `${s.id}: ${s.answers.length} answers ${JSON.stringify(s.answers)}`);
            const a = s.answers[0];
            if (a === undefined) continue;
            if (a.code === 5000 || a.code === 5001 || a.code === 5002)
              fail(violations, `${s.id}: internal error ${JSON.stringify(a)}`);
            // A copy on another socket of the wallet may run first and spend the nonce.
            const raced =
              a.code === 4002 && run.allSent.some((d) => d.dupOf === s && d.conn !== s.conn);
            if (s.expectType !== undefined && a.type !== s.expectType && !raced)
              fail(
                violations,
                `${s.id} (${s.kind}): expected ${s.expectType}, got ${JSON.stringify(a)}`,
              );
            if (s.expectCode !== undefined && a.code !== s.expectCode)
              fail(
                violations,
                `${s.id} (${s.kind}): expected ${s.expectCode}, got ${JSON.stringify(a)}`,
              );
            if (SIGNED.has(s.kind) && s.loggedIn && a.code === 4003)
              fail(violations, `${s.id}: 4003 on a socket authenticated when it ran`);
          }
          if (!conn.closedByUs && conn.idlessGot !== conn.idlessSent)
            fail(
              violations,
              `${conn.name}: ${conn.idlessGot} id-less errors for ${conn.idlessSent} id-less messages`,
            );
        }
        orderingChecks(run, violations);
      }
      for (const c of closedNow) await c.client.close();
      if (violations.length > 0) break;
    }

    // Everything answered: the wallet queues are empty, streams complete, state consistent.
    await new Promise((r) => setTimeout(r, 100));
    expect(t.venue.context.walletQueue.size).toBe(0);
    const state = t.venue.context.host.state;
    for (const run of runs) {
      const acct = state.accounts.get(run.w.address)!;
      if (run.observerNext !== acct.reportSeq + 1)
        fail(
          violations,
          `observer ${run.index} saw up to ${run.observerNext - 1}, account seq ${acct.reportSeq}`,
        );
      const live = liveFromReports(run);
      const engine = new Set(accountOrders(state, acct).map((o) => o.cloid));
      const a = [...live].sort().join(',');
      const b = [...engine].sort().join(',');
      if (a !== b)
        fail(violations, `wallet ${run.index}: live cloids from reports ${a} != engine ${b}`);
    }
    checkInvariants(state);
    const closing = t.close();
    t = undefined;
    await Promise.race([
      closing,
      new Promise((_, reject) => setTimeout(() => reject(new Error('venue close hung')), 10_000)),
    ]);
    await new Promise((r) => setTimeout(r, 50));
    if (sendsAfterClose.length > 0)
      fail(violations, `${sendsAfterClose.length} sends on closed sockets: ${sendsAfterClose[0]}`);
    for (const p of problems) fail(violations, p);
    if (sendsWhileClosing.length > 0)
      console.log(`note: ${sendsWhileClosing.length} sends on closing sockets (dropped by ws)`);
    expect(violations).toEqual([]);
  } catch (e) {
    console.log(`trading-ws-concurrency failed with WS_CONCURRENCY_SEED=${SEED}`);
    await t?.close().catch(() => {});
    t = undefined;
    throw e;
  }
});

/** Live cloids of a wallet from its observer's report stream. */
function liveFromReports(run: WalletRun): Set<string> {
  const live = new Set<string>();
  for (const [, r] of [...run.reports].sort(([a], [b]) => a - b)) {
    const c = (r.order as { cloid: string | null } | undefined)?.cloid ?? null;
    if (r.kind === 'OrderAccepted' && c !== null) live.add(c);
    else if (r.kind === 'OrderCancelled' && c !== null) live.delete(c);
    else if (r.kind === 'OrderReplaced') {
      if (typeof r.origCloid === 'string') live.delete(r.origCloid);
      if (c !== null) live.add(c);
    }
  }
  return live;
}

/** Seq at which a cloid stopped working (cancelled or replaced away), from the reports. */
function endsOf(run: WalletRun): Map<string, number[]> {
  const ends = new Map<string, number[]>();
  const add = (c: string, seq: number) => ends.set(c, [...(ends.get(c) ?? []), seq]);
  for (const [seq, r] of run.reports) {
    const c = (r.order as { cloid: string | null } | undefined)?.cloid ?? null;
    if (r.kind === 'OrderCancelled' && c !== null) add(c, seq);
    if (r.kind === 'OrderReplaced' && typeof r.origCloid === 'string' && r.origCloid !== c)
      add(r.origCloid, seq);
  }
  return ends;
}

function ackSeq(s: Sent): number | undefined {
  const a = s.answers[0];
  return isAck(a) ? (a.seq as number) : undefined;
}
/** A cancelAll that cancelled nothing reports nothing: its seq may equal the previous one. */
const weak = (s: Sent) => s.answers[0]?.type === 'cancelAllAck' && s.answers[0].cancelled === 0;

function orderingChecks(run: WalletRun, v: string[]): void {
  const ends = endsOf(run);
  // (a) per connection: accepted requests took report seqs in send order.
  for (const conn of run.conns) {
    let prev: Sent | undefined;
    for (const s of conn.sent) {
      const seq = ackSeq(s);
      if (seq === undefined) continue;
      if (prev !== undefined) {
        const p = ackSeq(prev)!;
        if (weak(s) ? seq < p : seq <= p)
          fail(
            v,
            `${conn.name}: ${s.id} (${s.kind}) seq ${seq} not after ${prev.id} (${prev.kind}) seq ${p}`,
          );
      }
      prev = s;
    }
  }
  // (b) causal across connections. A signed request has joined its wallet's queue once any
  // later message of its socket was answered (that message only started after it joined), so a
  // request sent on another socket after that point must be applied after it.
  const joinedBy = new Map<Sent, number>();
  for (const conn of run.conns) {
    let first = Infinity;
    for (let i = conn.sent.length - 1; i >= 0; i--) {
      const s = conn.sent[i]!;
      first = Math.min(first, s.answeredAt ?? Infinity);
      joinedBy.set(s, first);
    }
  }
  const accepted = run.allSent.filter((s) => ackSeq(s) !== undefined);
  for (const x of accepted)
    for (const y of accepted)
      if (x !== y && (joinedBy.get(x) ?? Infinity) < y.sentAt) {
        const sx = ackSeq(x)!;
        const sy = ackSeq(y)!;
        if (weak(y) ? sy < sx : sy <= sx)
          fail(v, `${x.id} had joined its queue before ${y.id} was sent, but seq ${sx} >= ${sy}`);
      }
  // (c) cancels and replaces see exactly what their socket sent before them.
  for (const conn of run.conns) {
    conn.sent.forEach((s, i) => {
      if (s.target === undefined || s.answers.length === 0 || !s.loggedIn) return;
      const info = run.cloids.get(s.target);
      if (info === undefined || info.conn !== conn || info.tainted) return;
      const creation = conn.sent.findIndex((x) => x.creates === s.target && x.kind !== 'dup');
      const answer = s.answers[0]!;
      if (creation < 0 || creation > i) {
        // Created later on this socket (or never): must not be found.
        if (creation > i && isAck(answer))
          fail(
            v,
            `${s.id} (${s.kind}) found ${s.target}, which its socket only creates later (${conn.sent[creation]!.id})`,
          );
        return;
      }
      const created = ackSeq(conn.sent[creation]!);
      if (created === undefined || answer.code !== 4041) return;
      // Not found: it must have stopped working before the next accepted request of the socket.
      // (A cancelAll that cancelled nothing carries the seq of the last report before it.)
      const after = conn.sent.slice(i + 1).find((x) => ackSeq(x) !== undefined);
      const next = after === undefined ? Infinity : ackSeq(after)! + (weak(after) ? 1 : 0);
      const stopped = (ends.get(s.target) ?? []).some((e) => e > created && e < next);
      if (!stopped) {
        fail(
          v,
          `${s.id} (${s.kind}) got 4041 for ${s.target}, created by ${conn.sent[creation]!.id} at seq ${created} and still working`,
        );
        if (process.env.WS_CONCURRENCY_DEBUG !== undefined) {
          for (const x of conn.sent.slice(creation, i + 1))
            console.log(
              x.id,
              x.kind,
              x.target,
              x.creates,
              x.loggedIn,
              JSON.stringify(x.answers).slice(0, 300),
            );
          for (const [seq, r] of [...run.reports].sort(([a], [b]) => a - b))
            if (seq >= created - 3)
              console.log(seq, r.kind, JSON.stringify(r.order ?? null).slice(0, 200), r.origCloid);
        }
      }
    });
  }
  // (d) duplicates: at most one of a signed message's copies is accepted; on one socket the
  // later copy is the replay.
  for (const s of run.allSent) {
    if (s.dupOf === undefined) continue;
    const o = s.dupOf;
    if (isAck(o.answers[0]) && isAck(s.answers[0]))
      fail(v, `${o.id} and its copy ${s.id} both accepted`);
    if (
      o.conn === s.conn &&
      o.loggedIn &&
      s.loggedIn &&
      o.answers.length > 0 &&
      s.answers.length > 0 &&
      // Only a copy of a message that spent its nonce (refusals before the engine's nonce
      // check, like a claim of an auction that does not exist, spend nothing).
      (isAck(o.answers[0]) ||
        o.answers[0]!.type === 'marginTransferred' ||
        o.answers[0]!.code === 4041)
    ) {
      if (s.answers[0]!.code !== 4002)
        fail(
          v,
          `${s.id}, a later copy of ${o.id} on its socket, got ${JSON.stringify(s.answers[0])}`,
        );
    }
  }
}
