/**
 * Market data under seeded random trading, over real sockets: several wallets place, cancel,
 * replace and cross orders, the operator busts prints, moves the oracle and settles funding, the
 * clock crosses minute edges, a second client churns its subscriptions, and the venue restarts on
 * its data directory. At every `orderbook` message the client checks the book is sorted,
 * uncrossed, canonical, never older than the last one and equal to the engine's book at that
 * `seq`; at checkpoints `GET /api/orderbook`, the trade tape (`trades` channel and
 * `GET /api/trades`), the candles (`candle` messages and `GET /api/candles`) and the ticker
 * (`ticker` messages and `GET /api/tickers`) must agree with what the tape implies.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type EngineState, levelOrderIds } from '@perp/core';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/index.js';
import { freshNonce, type Msg, Wallet, WsClient } from './support/client.js';
import { limitOrder, PRICE, startTestVenue, type TestVenue } from './support/fixture.js';

const MINUTE = 60_000;
const CANONICAL = /^-?(0|[1-9]\d*)(\.\d*[1-9])?$/;
const QD = 4;

/** mulberry32: a small seeded generator, so a failure replays. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A canonical decimal string of `v / 10^decimals` (written independently of the venue's). */
function dec(v: bigint, decimals: number): string {
  const neg = v < 0n;
  const a = neg ? -v : v;
  const scale = 10n ** BigInt(decimals);
  const whole = a / scale;
  let frac = (a % scale).toString().padStart(decimals, '0').replace(/0+$/, '');
  if (decimals === 0) frac = '';
  const s = frac === '' ? whole.toString() : `${whole}.${frac}`;
  return neg && s !== '0' ? `-${s}` : s;
}

/** Raw units of a decimal string. */
function raw(s: string, decimals: number): bigint {
  const neg = s.startsWith('-');
  const [w = '0', f = ''] = (neg ? s.slice(1) : s).split('.');
  const v =
    BigInt(w) * 10n ** BigInt(decimals) +
    BigInt((f + '0'.repeat(decimals)).slice(0, decimals) || '0');
  return neg ? -v : v;
}

type Levels = [string, string][];
interface Book {
  bids: Levels;
  asks: Levels;
}

/**
 * The top `depth` levels of market 1 from the engine's own orders (leaves quantity summed per
 * level), not from the level totals the venue formats.
 */
function engineBook(state: EngineState, depth: number): Book {
  const m = state.markets.get(1);
  if (m === undefined) throw new Error('no market 1');
  const side = (levels: typeof m.bids): Levels => {
    const out: Levels = [];
    for (let i = levels.length - 1; i >= 0 && out.length < depth; i--) {
      const level = levels[i]!;
      let q = 0n;
      for (const id of levelOrderIds(level)) {
        const o = state.orders.get(id);
        if (o === undefined) throw new Error(`order ${id} on a level but not in the state`);
        q += o.quantity - o.cumQty;
      }
      if (q === 0n) continue;
      out.push([dec(level.price, 18), dec(q, QD)]);
    }
    return out;
  };
  return { bids: side(m.bids), asks: side(m.asks) };
}

interface Print {
  tradeId: string;
  price: string;
  quantity: string;
  side: string;
  time: number;
}

/** A 1m candle from prints (oldest first) of one minute. */
function candleOf(prints: Print[]) {
  const prices = prints.map((p) => raw(p.price, 18));
  let volume = 0n;
  let quote = 0n;
  for (const p of prints) {
    const q = raw(p.quantity, QD);
    volume += q;
    // Cash leg in collateral (6 decimals): price (18) x quantity (4) / 10^16; exact for these
    // prices and sizes (half ticks times 4-decimal sizes have at most 5 decimals).
    quote += (raw(p.price, 18) * q) / 10n ** 16n;
  }
  const max = prices.reduce((a, b) => (b > a ? b : a));
  const min = prices.reduce((a, b) => (b < a ? b : a));
  return {
    open: prints[0]!.price,
    high: dec(max, 18),
    low: dec(min, 18),
    close: prints.at(-1)!.price,
    volume: dec(volume, QD),
    quoteVolume: dec(quote, 6),
    trades: prints.length,
  };
}

describe('market data stays consistent under seeded random trading', () => {
  const dir = mkdtempSync(join(tmpdir(), 'perp-md-consistency-'));
  let t: TestVenue | undefined;
  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('books, tape, candles and tickers agree with the engine and each other', async () => {
    const seed = Number(process.env.MD_SEED ?? 20261129);
    const ops = Number(process.env.MD_OPS ?? 240);
    const random = rng(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
    const failures: string[] = [];
    const fail = (what: string): void => {
      if (failures.length < 20) failures.push(`seed ${seed}: ${what}`);
    };

    // Start a little after a minute edge, so the run crosses several.
    const start = Math.ceil(Date.now() / MINUTE) * MINUTE - 45_000;
    let clock = new ManualClock(Math.max(start, Date.now()));
    t = await startTestVenue({ dataDir: dir, clock });
    await t.oracle({ 'BTC-PERP': '65000' });
    let oracle = 65000;

    // Engine books by seq, from the committed batches (what the market data is fed).
    const books = new Map<number, Book>();
    const record = (state: EngineState): void => {
      const seq = state.markets.get(1)!.bookSeq;
      books.set(seq, engineBook(state, 50));
    };
    let unhook = (): void => {};
    const hook = (tv: TestVenue): void => {
      const host = tv.venue.context.host;
      record(host.state);
      unhook = host.subscribe((b) => record(b.state));
    };
    hook(t);

    const wallets: Wallet[] = [0, 1, 2, 3].map((i) => t!.wallet(i));
    for (const w of wallets) {
      await t.invite(w);
      await t.fund(w, '100000');
    }

    // ---- the observing clients ----------------------------------------------------------
    const tape: Print[] = [];
    const busted = new Set<string>();
    let lastBookSeq = -1;
    let lastBook: (Book & { seq: number }) | null = null;
    const candles = new Map<number, Msg>();
    let lastTicker: Msg | null = null;
    let lastTickers: Msg | null = null;
    const auctions = new Map<string, Msg>();
    const auctionOffered = new Map<string, bigint>();

    const checkBook = (m: Msg, who: string, last: number): number => {
      const seq = m.seq as number;
      const bids = m.bids as Levels;
      const asks = m.asks as Levels;
      if (seq < last) fail(`${who}: book seq went back ${last} -> ${seq}`);
      for (const [p, q] of [...bids, ...asks]) {
        if (!CANONICAL.test(p) || !CANONICAL.test(q) || p.startsWith('-') || q.startsWith('-'))
          fail(`${who}: not canonical ${p} ${q}`);
        if (raw(q, QD) <= 0n) fail(`${who}: empty level ${p} ${q}`);
      }
      for (let i = 1; i < bids.length; i++)
        if (raw(bids[i]![0], 18) >= raw(bids[i - 1]![0], 18)) fail(`${who}: bids not descending`);
      for (let i = 1; i < asks.length; i++)
        if (raw(asks[i]![0], 18) <= raw(asks[i - 1]![0], 18)) fail(`${who}: asks not ascending`);
      if (bids.length > 0 && asks.length > 0 && raw(bids[0]![0], 18) >= raw(asks[0]![0], 18))
        fail(`${who}: crossed book at seq ${seq}: ${bids[0]![0]} >= ${asks[0]![0]}`);
      const depth = m.depth as number;
      if (bids.length > depth || asks.length > depth) fail(`${who}: more levels than depth`);
      const engine = books.get(seq);
      if (engine === undefined) fail(`${who}: seq ${seq} is no committed state's`);
      else {
        const want = { bids: engine.bids.slice(0, depth), asks: engine.asks.slice(0, depth) };
        if (JSON.stringify(want) !== JSON.stringify({ bids, asks }))
          fail(
            `${who}: book at seq ${seq} ${JSON.stringify({ bids, asks })} != engine ${JSON.stringify(want)}`,
          );
      }
      return seq;
    };

    const observe = (md: WsClient): void => {
      md.ws.on('message', (data) => {
        const m = JSON.parse(String(data)) as Msg;
        switch (m.type) {
          case 'orderbook':
            lastBookSeq = checkBook(m, 'md', lastBookSeq);
            lastBook = { seq: m.seq as number, bids: m.bids as Levels, asks: m.asks as Levels };
            break;
          case 'trade': {
            const { type: _t, instrument: _i, ...p } = m;
            const prev = tape.at(-1);
            if (prev !== undefined && BigInt(prev.tradeId) >= BigInt(p.tradeId as string))
              fail(`trade ids not increasing ${prev.tradeId} -> ${p.tradeId}`);
            if (tape.some((x) => x.tradeId === p.tradeId)) fail(`duplicate print ${p.tradeId}`);
            tape.push(p as unknown as Print);
            break;
          }
          case 'tradeBust':
            busted.add(m.tradeId as string);
            break;
          case 'candle':
            candles.set(m.openTime as number, m);
            break;
          case 'ticker':
            lastTicker = m;
            break;
          case 'liquidationAuction': {
            // Each auction: canonical decimals, what is left never above what it first offered
            // (claims given back when a claimant's own scope is liquidated raise it again:
            // docs/risk-engine.md), nothing after its end.
            const id = m.auctionId as string;
            for (const f of ['remaining', 'price', 'startPrice', 'endPrice'])
              if (!CANONICAL.test(m[f] as string))
                fail(`auction ${id}: ${f} ${m[f]} not canonical`);
            const before = auctions.get(id);
            const offered = auctionOffered.get(id) ?? raw(m.remaining as string, QD);
            auctionOffered.set(id, offered);
            if (before !== undefined && before.status === 'Ended')
              fail(`auction ${id}: a message after its end`);
            if (raw(m.remaining as string, QD) > offered)
              fail(`auction ${id}: remaining above what it offered`);
            auctions.set(id, m);
            break;
          }
          case 'tickers':
            lastTickers = (m.tickers as Msg[]).find((x) => x.instrument === 'BTC-PERP') ?? null;
            break;
          default:
            break;
        }
      });
    };

    const openMd = async (): Promise<WsClient> => {
      const md = await WsClient.connect(t!.venue.marketdata);
      observe(md);
      for (const sub of [
        { channel: 'trades', instrument: 'BTC-PERP' },
        { channel: 'orderbook', instrument: 'BTC-PERP', depth: 50 },
        { channel: 'candles', instrument: 'BTC-PERP', interval: '1m' },
        { channel: 'ticker', instrument: 'BTC-PERP' },
        { channel: 'tickers' },
        { channel: 'liquidations' },
      ]) {
        const r = await md.request({ type: 'subscribe', ...sub });
        expect(r.type).toBe('subscribed');
      }
      return md;
    };

    /** A second client that unsubscribes and resubscribes its book at random. */
    let churnSeq = -1;
    const openChurn = async (): Promise<WsClient> => {
      const c = await WsClient.connect(t!.venue.marketdata);
      c.ws.on('message', (data) => {
        const m = JSON.parse(String(data)) as Msg;
        if (m.type === 'orderbook') churnSeq = checkBook(m, `churn depth ${m.depth}`, churnSeq);
      });
      await c.request({
        type: 'subscribe',
        channel: 'orderbook',
        instrument: 'BTC-PERP',
        depth: 5,
      });
      return c;
    };

    let md = await openMd();
    let churn = await openChurn();
    let sockets = await Promise.all(wallets.map((w) => t!.connect(w)));
    const live: { w: number; orderId: string }[] = [];
    const liquidations: number[] = [];

    const quiet = async (): Promise<void> => {
      await t!.venue.context.host.idle();
      // Past the ticker's once-a-second pacing and the book's and candles' coalescing.
      await new Promise((r) => setTimeout(r, 1_300));
    };

    const livePrints = (): Print[] => tape.filter((p) => !busted.has(p.tradeId));

    const checkpoint = async (label: string): Promise<void> => {
      await quiet();
      const state = t!.venue.context.host.state;
      const seq = state.markets.get(1)!.bookSeq;
      // REST book = engine book at the same seq = the socket's last book.
      const rest = (await t!.api('GET', '/orderbook?instrument=BTC-PERP&depth=50')).body;
      if (rest.seq !== seq) fail(`${label}: REST seq ${rest.seq} != engine ${seq}`);
      const engine = books.get(seq);
      if (JSON.stringify({ bids: rest.bids, asks: rest.asks }) !== JSON.stringify(engine))
        fail(`${label}: REST book != engine at ${seq}`);
      const mine = lastBook as (Book & { seq: number }) | null;
      if (
        mine === null ||
        JSON.stringify({ bids: mine.bids, asks: mine.asks }) !== JSON.stringify(engine)
      )
        fail(`${label}: socket book (seq ${mine?.seq}) != engine at ${seq}`);
      // Tape: REST = the socket's prints less the busted ones, newest first.
      const prints = livePrints();
      const restTape = (await t!.api('GET', '/trades?instrument=BTC-PERP&limit=1000')).body
        .trades as Print[];
      const want = prints
        .slice(-1000)
        .reverse()
        .map((p) => ({ instrument: 'BTC-PERP', ...p }));
      if (JSON.stringify(restTape) !== JSON.stringify(want))
        fail(`${label}: REST tape (${restTape.length}) != socket tape (${want.length})`);
      // Candles of every interval from the first print's to now, from the tape.
      const now = clock.now();
      const expectedOf = (interval: string, ms: number): Record<string, unknown>[] => {
        const expected: Record<string, unknown>[] = [];
        if (prints.length === 0) return expected;
        let prevClose: string | null = null;
        for (let open = Math.floor(prints[0]!.time / ms) * ms; open <= now; open += ms) {
          const inSpan = prints.filter((p) => p.time >= open && p.time < open + ms);
          const c: Record<string, unknown> & { close: string | null } =
            inSpan.length > 0
              ? candleOf(inSpan)
              : {
                  open: prevClose,
                  high: prevClose,
                  low: prevClose,
                  close: prevClose,
                  volume: '0',
                  quoteVolume: '0',
                  trades: 0,
                };
          prevClose = c.close;
          expected.push({
            instrument: 'BTC-PERP',
            interval,
            openTime: open,
            closeTime: open + ms - 1,
            ...c,
            closed: open + ms <= now,
          });
        }
        return expected;
      };
      for (const [interval, ms] of [
        ['1m', MINUTE],
        ['3m', 3 * MINUTE],
        ['5m', 5 * MINUTE],
        ['1h', 60 * MINUTE],
        ['1d', 1_440 * MINUTE],
      ] as const) {
        const got = (
          await t!.api('GET', `/candles?instrument=BTC-PERP&interval=${interval}&limit=1000`)
        ).body.candles as Msg[];
        const want = expectedOf(interval, ms);
        if (JSON.stringify(got) !== JSON.stringify(want))
          fail(
            `${label}: REST ${interval} candles ${JSON.stringify(got)} != tape ${JSON.stringify(want)}`,
          );
      }
      const expected = expectedOf('1m', MINUTE);
      if (prints.length > 0) {
        // The socket's latest message per openTime, for the minutes it was subscribed in.
        for (const e of expected) {
          const m = candles.get(e.openTime as number);
          if (m === undefined) continue;
          const { type: _type, ...body } = m;
          if (JSON.stringify(body) !== JSON.stringify(e))
            fail(`${label}: socket candle ${JSON.stringify(body)} != tape ${JSON.stringify(e)}`);
        }
        // Ticker: last, 24 h volume and change from the tape.
        let vol = 0n;
        let quote = 0n;
        for (const p of prints) {
          vol += raw(p.quantity, QD);
          quote += (raw(p.price, 18) * raw(p.quantity, QD)) / 10n ** 16n;
        }
        const last = raw(prints.at(-1)!.price, 18);
        const open = raw(prints[0]!.price, 18);
        const all = prints.map((p) => raw(p.price, 18));
        const pct = ((last - open) * 10_000n * 2n + (last >= open ? open : -open)) / (2n * open);
        const tick = {
          last: prints.at(-1)!.price,
          open24h: prints[0]!.price,
          high24h: dec(
            all.reduce((a, b) => (b > a ? b : a)),
            18,
          ),
          low24h: dec(
            all.reduce((a, b) => (b < a ? b : a)),
            18,
          ),
          volume24h: dec(vol, QD),
          quoteVolume24h: dec(quote, 6),
          priceChange24h: dec(last - open, 18),
          // Half away from zero here; a tie (exactly half a hundredth) would need half-even.
          priceChangePct24h: dec(pct, 2),
        };
        const tk = lastTicker as Msg | null;
        const restTicker = ((await t!.api('GET', '/tickers')).body.tickers as Msg[]).find(
          (x) => x.instrument === 'BTC-PERP',
        );
        for (const [who, x] of [
          ['socket', tk],
          ['REST', restTicker],
          ['tickers', lastTickers],
        ] as const) {
          const gotTick = x && {
            last: x.last,
            open24h: x.open24h,
            high24h: x.high24h,
            low24h: x.low24h,
            volume24h: x.volume24h,
            quoteVolume24h: x.quoteVolume24h,
            priceChange24h: x.priceChange24h,
            priceChangePct24h: x.priceChangePct24h,
          };
          if (JSON.stringify(gotTick) !== JSON.stringify(tick))
            fail(
              `${label}: ${who} ticker ${JSON.stringify(gotTick)} != tape ${JSON.stringify(tick)}`,
            );
          const best = (lastBook as Book | null)?.bids[0]?.[0] ?? null;
          if (x && x.bestBid !== best)
            fail(`${label}: ${who} bestBid ${x.bestBid} != book ${best}`);
        }
      }
    };

    const place = async (
      wi: number,
      isBuy: boolean,
      price: bigint,
      qty: bigint,
      tif = 0,
      extra: Record<string, bigint | number> = {},
    ) => {
      const w = wallets[wi]!;
      const r = await sockets[wi]!.request({
        type: 'placeOrder',
        signature: await w.sign(
          'Order',
          limitOrder(isBuy, price, qty, { timeInForce: tif, ...extra }),
        ),
      });
      if (r.type === 'orderAck') {
        const order = r.order as { orderId: string; status?: string };
        live.push({ w: wi, orderId: order.orderId });
      }
    };

    const priceNear = (): bigint => {
      const mid = 65000 + Math.round((random() - 0.5) * 40) * 5;
      return BigInt(mid) * PRICE + (random() < 0.3 ? PRICE / 2n : 0n);
    };
    const qtyOf = (): bigint => BigInt(10 + Math.floor(random() * 200));

    for (let i = 0; i < ops; i++) {
      const r = random();
      const wi = Math.floor(random() * wallets.length);
      try {
        if (r < 0.06) {
          // A burst from every wallet at once: several commands in one batch.
          await Promise.all(wallets.map((_, k) => place(k, random() < 0.5, priceNear(), qtyOf())));
        } else if (r < 0.3) {
          await place(wi, random() < 0.5, priceNear(), qtyOf());
        } else if (r < 0.35) {
          // A stop-limit that an oracle move may trigger onto the book.
          const buy = random() < 0.5;
          const trigger = BigInt(oracle + (buy ? 1 : -1) * Math.round(random() * 60)) * PRICE;
          await place(wi, buy, priceNear(), qtyOf(), 0, { orderType: 1, triggerPrice: trigger });
        } else if (r < 0.4) {
          // A GTD order that expires within seconds of the venue's clock.
          const expiry = BigInt(Math.ceil(clock.now() / 1000) + 1 + Math.floor(random() * 8));
          await place(wi, random() < 0.5, priceNear(), qtyOf(), 1, { expiry });
        } else if (r < 0.5) {
          // A marketable IOC: fills what it can.
          const buy = random() < 0.5;
          await place(wi, buy, buy ? 66000n * PRICE : 64000n * PRICE, qtyOf(), 2);
        } else if (r < 0.53) {
          // A wallet cancels everything it has on the book.
          await sockets[wi]!.request({
            type: 'cancelAll',
            signature: await wallets[wi]!.sign('CancelAll', {
              market: random() < 0.5 ? 0 : 1,
              nonce: freshNonce(),
              deadline: Wallet.deadline(),
            }),
          });
        } else if (r < 0.62 && live.length > 0) {
          const k = Math.floor(random() * live.length);
          const o = live[k]!;
          live.splice(k, 1);
          await sockets[o.w]!.request({
            type: 'cancelOrder',
            signature: await wallets[o.w]!.sign('Cancel', {
              market: 1,
              orderId: BigInt(o.orderId),
              nonce: freshNonce(),
              deadline: Wallet.deadline(),
            }),
          });
        } else if (r < 0.72 && live.length > 0) {
          const k = Math.floor(random() * live.length);
          const o = live[k]!;
          const rep = await sockets[o.w]!.request({
            type: 'replaceOrder',
            signature: await wallets[o.w]!.sign('Replace', {
              market: 1,
              orderId: BigInt(o.orderId),
              price: priceNear(),
              quantity: qtyOf(),
              nonce: freshNonce(),
              deadline: Wallet.deadline(),
            }),
          });
          if (rep.type === 'replaceAck') {
            const id = (rep.order as { orderId?: string } | undefined)?.orderId;
            if (id !== undefined && id !== o.orderId) live[k] = { w: o.w, orderId: id };
          } else live.splice(k, 1);
        } else if (r < 0.78) {
          const candidates = livePrints().slice(-20);
          if (candidates.length > 0) {
            const p = pick(candidates);
            await t.admin('POST', `/admin/trades/${p.tradeId}/bust`, { reason: 'random' });
          }
        } else if (r < 0.84) {
          const px = 65000 + Math.round((random() - 0.5) * 200);
          await t.oracle({ 'BTC-PERP': String(px) });
          oracle = px;
        } else if (r < 0.85) {
          await t.admin('POST', '/admin/funding/settle', {});
        } else if (r < 0.87) {
          // The operator liquidates a wallet: its market step prints on the tape.
          const res = await t.admin('POST', '/admin/liquidate', {
            wallet: wallets[wi]!.address,
            marginMode: 'Cross',
            force: true,
          });
          liquidations.push(res.status);
        } else if (r < 0.93 && clock.now() - Date.now() < 150_000) {
          // Move the clock, sometimes onto a minute's last millisecond or its edge (staying
          // within the signed nonces' 5-minute window of the wall clock).
          const now = clock.now();
          const edge = Math.ceil((now + 1) / MINUTE) * MINUTE;
          const choice = random();
          if (choice < 0.3) clock.set(edge - 1);
          else if (choice < 0.6) clock.set(edge);
          else clock.advance(Math.floor(random() * 5_000));
        } else if (r < 0.97) {
          await churn.request({
            type: 'unsubscribe',
            channel: 'orderbook',
            instrument: 'BTC-PERP',
          });
          const depth = pick([5, 10, 20, 50]);
          churnSeq = -1;
          await churn.request({
            type: 'subscribe',
            channel: 'orderbook',
            instrument: 'BTC-PERP',
            depth,
          });
        } else {
          await checkpoint(`op ${i}`);
        }
      } catch (e) {
        fail(`op ${i}: ${(e as Error).message}`);
      }
      const restarts = [Math.floor(ops / 3), Math.floor(ops / 2), Math.floor((ops * 3) / 4)];
      if (restarts.includes(i)) {
        // From the clean stop's snapshot and read-model checkpoint; from the snapshot with the
        // read models rebuilt from the journal; from the whole journal.
        const mode = restarts.indexOf(i);
        // SIGTERM's path: a clean stop, then a start on the same data directory.
        await checkpoint('before restart');
        const before = {
          book: (await t.api('GET', '/orderbook?instrument=BTC-PERP&depth=50')).body,
          trades: (await t.api('GET', '/trades?instrument=BTC-PERP&limit=1000')).body,
          candles: (await t.api('GET', '/candles?instrument=BTC-PERP&interval=1m')).body,
          ticker: (await t.api('GET', '/tickers')).body.tickers,
        };
        for (const c of [md, churn, ...sockets]) await c.close();
        unhook();
        const stopped = clock.now();
        await t.venue.close();
        // Down across a minute edge when the nonce window allows: candles close on the start.
        const jumped = stopped - Date.now() < 90_000;
        clock = new ManualClock(jumped ? stopped + 61_000 : stopped);
        t = await startTestVenue({
          dataDir: dir,
          clock,
          ...(mode === 1 ? { snapshots: { readModels: false } } : {}),
          ...(mode === 2 ? { snapshots: false as const } : {}),
        });
        await t.venue.historyBackfill?.done;
        hook(t);
        const after = {
          book: (await t.api('GET', '/orderbook?instrument=BTC-PERP&depth=50')).body,
          trades: (await t.api('GET', '/trades?instrument=BTC-PERP&limit=1000')).body,
          candles: (await t.api('GET', '/candles?instrument=BTC-PERP&interval=1m')).body,
          ticker: (await t.api('GET', '/tickers')).body.tickers,
        };
        const strip = (b: Record<string, unknown>) => ({ ...b, time: 0 });
        expect(strip(after.book)).toEqual(strip(before.book));
        expect(after.trades).toEqual(before.trades);
        if (!jumped) {
          expect(after.candles).toEqual(before.candles);
          expect(after.ticker).toEqual(before.ticker);
        }
        lastBookSeq = -1;
        churnSeq = -1;
        // Candles that closed while the client was away come from REST, not the socket.
        candles.clear();
        md = await openMd();
        // The socket's first book after the start is the one before the stop, at the same seq.
        const first = await md.waitFor((m) => m.type === 'orderbook');
        expect([first.seq, first.bids, first.asks]).toEqual([
          before.book.seq,
          before.book.bids,
          before.book.asks,
        ]);
        churn = await openChurn();
        sockets = await Promise.all(wallets.map((w) => t!.connect(w)));
        await checkpoint(`after restart ${mode}`);
      }
    }
    await checkpoint('end');
    // Each wallet's own trade history agrees with the public tape: the same price, size and time
    // for every print it took part in, flagged busted exactly when the tape dropped it.
    const byId = new Map(tape.map((p) => [p.tradeId, p]));
    const seen = new Map<string, number>();
    for (const w of wallets) {
      const rows: Msg[] = [];
      let cursor = '';
      do {
        const page = (
          await t.api('GET', `/account/trades?wallet=${w.address}&limit=500&cursor=${cursor}`)
        ).body;
        rows.push(...(page.trades as Msg[]));
        cursor = (page.nextCursor as string | null) ?? '';
      } while (cursor !== '');
      for (const r of rows) {
        const p = byId.get(r.tradeId as string);
        if (p === undefined) {
          if (r.source === 'Order') fail(`order fill ${r.tradeId} of ${w.address} not on the tape`);
          continue;
        }
        seen.set(p.tradeId, (seen.get(p.tradeId) ?? 0) + 1);
        const got = [r.lastPx, r.lastQty, r.time, r.busted];
        const want = [p.price, p.quantity, p.time, busted.has(p.tradeId)];
        if (JSON.stringify(got) !== JSON.stringify(want))
          fail(`account trade ${r.tradeId} ${JSON.stringify(got)} != tape ${JSON.stringify(want)}`);
      }
    }
    for (const p of tape)
      if (seen.get(p.tradeId) !== 2)
        fail(`print ${p.tradeId} in ${seen.get(p.tradeId)} account histories`);
    for (const c of [md, churn, ...sockets]) await c.close();
    unhook();
    expect(tape.length).toBeGreaterThan(20);
    expect(busted.size).toBeGreaterThan(0);
    expect(failures).toEqual([]);
  }, 600_000);
});
