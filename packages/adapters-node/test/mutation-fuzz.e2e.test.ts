/**
 * Mutation fuzzing of every client message over real sockets. Each valid request the venue
 * accepts (trading socket, market-data socket, signed REST writes, public reads) is mutated one
 * way at a time: a field dropped, an unknown field added, a field's JSON type changed, numbers at
 * their boundaries, hostile strings, duplicate keys, deep nesting, the wrong letter case, sig and
 * payload swapped, the payload of another struct type. Every mutated request must get the spec's
 * error (a 4xx with a message / a documented WebSocket code), never a 5xx, a 5000, a closed socket
 * or a hang; a refused one must change nothing (state hash and seq) and must not consume the
 * original's nonce: the untouched request succeeds afterwards.
 *
 * Seeded (`FUZZ_SEED`), modest run counts (`FUZZ_RUNS` multiplies them).
 */

import { formatCollateral } from '@perp/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../src/config.js';
import { freshNonce, type Msg, type Wallet, WsClient } from './support/client.js';
import {
  btc,
  cloid,
  everyInstrumentSetting,
  limitOrder,
  px,
  startTestVenue,
  type TestVenue,
  usd,
} from './support/fixture.js';

const SEED = Number(process.env.FUZZ_SEED ?? 424_242);
const RUNS = Math.max(1, Number(process.env.FUZZ_RUNS ?? 1));

/** mulberry32: a small seeded PRNG. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Raw JSON values that break a field's type, range or format. */
const HOSTILE: readonly string[] = [
  'null',
  'true',
  'false',
  '0',
  '-1',
  '9007199254740992',
  '18446744073709551616',
  '1e308',
  '-0',
  '1.5',
  '[]',
  '["x"]',
  '{}',
  '{"sig":"0x","payload":"0x"}',
  '""',
  '"0"',
  '"-1"',
  '"NaN"',
  '"Infinity"',
  '"1e3"',
  '" 1"',
  '"01"',
  '"0x10"',
  '"9007199254740993"',
  '"18446744073709551616"',
  `"${'x'.repeat(60_000)}"`,
  `"${'9'.repeat(5_000)}"`,
  '"\\u0000"',
  '"\\u202e"',
  '"\\ud800"',
  '"\\udfff"',
  '"日本"',
  '"__proto__"',
  '"constructor"',
  '"toString"',
  `${'['.repeat(40)}${']'.repeat(40)}`,
  `${'{"a":'.repeat(40)}1${'}'.repeat(40)}`,
];

type Obj = Record<string, unknown>;

/** A mutation of a message: a name and the JSON text sent. */
interface Mutation {
  readonly name: string;
  readonly text: string;
}

const enc = (v: unknown): string => JSON.stringify(v);

/** The object as JSON text with `key`'s value replaced by raw JSON text (`null`: removed). */
function replaceRaw(obj: Obj, key: string, raw: string | null): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(obj)) {
    if (k !== key) parts.push(`${enc(k)}:${enc(v)}`);
    else if (raw !== null) parts.push(`${enc(k)}:${raw}`);
  }
  return `{${parts.join(',')}}`;
}

/** Every mutation of `obj`, sampled: the fields that are never mutated are `fixed`. */
function mutations(
  obj: Obj,
  rnd: () => number,
  count: number,
  fixed: readonly string[],
  extra: readonly Mutation[] = [],
): Mutation[] {
  const keys = Object.keys(obj).filter((k) => !fixed.includes(k));
  if (keys.length === 0) keys.push('zz');
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const all: Mutation[] = [...extra];
  for (const k of keys) {
    all.push({ name: `drop ${k}`, text: replaceRaw(obj, k, null) });
    const v = obj[k];
    if (typeof v === 'string' && /[a-z]/.test(v) && v !== v.toUpperCase())
      all.push({ name: `${k} upper`, text: replaceRaw(obj, k, enc(v.toUpperCase())) });
    if (typeof v === 'string' && /[A-Z]/.test(v) && v !== v.toLowerCase())
      all.push({ name: `${k} lower`, text: replaceRaw(obj, k, enc(v.toLowerCase())) });
    // Duplicate keys: hostile first and valid last, and valid first and hostile last.
    const h = pick(HOSTILE);
    const whole = JSON.stringify(obj).slice(1, -1);
    all.push({
      name: `dup ${k} hostile-last ${h.slice(0, 20)}`,
      text: `{${whole},${enc(k)}:${h}}`,
    });
    all.push({
      name: `dup ${k} hostile-first ${h.slice(0, 20)}`,
      text: `{${enc(k)}:${h},${whole}}`,
    });
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      // A nested object (the signature): mutate its fields too.
      for (const [ik, iv] of Object.entries(v as Obj)) {
        all.push({
          name: `drop ${k}.${ik}`,
          text: replaceRaw(obj, k, replaceRaw(v as Obj, ik, null)),
        });
        const ih = pick(HOSTILE);
        all.push({
          name: `${k}.${ik}=${ih.slice(0, 20)}`,
          text: replaceRaw(obj, k, replaceRaw(v as Obj, ik, ih)),
        });
        all.push({
          name: `${k}.${ik} unknown sibling`,
          text: replaceRaw(obj, k, JSON.stringify({ ...(v as Obj), extra: 1 })),
        });
        if (typeof iv === 'string')
          all.push({
            name: `${k}.${ik} upper`,
            text: replaceRaw(obj, k, JSON.stringify({ ...(v as Obj), [ik]: iv.toUpperCase() })),
          });
      }
      const sv = v as Obj;
      if ('sig' in sv && 'payload' in sv)
        all.push({
          name: `${k} sig/payload swapped`,
          text: replaceRaw(obj, k, JSON.stringify({ sig: sv.payload, payload: sv.sig })),
        });
    }
  }
  // Field values replaced by every kind of hostile JSON.
  const replaced: Mutation[] = [];
  for (let i = 0; i < count; i++) {
    const k = pick(keys);
    const h = pick(HOSTILE);
    if (h === enc(obj[k])) continue;
    replaced.push({ name: `${k}=${h.slice(0, 30)}`, text: replaceRaw(obj, k, h) });
  }
  const unknown = pick(HOSTILE);
  all.push({
    name: `unknown field ${unknown.slice(0, 20)}`,
    text: replaceRaw({ ...obj, zz: 0 }, 'zz', unknown),
  });
  // Sample the deterministic ones too so the run stays modest.
  const sampled = all.filter(() => rnd() < 0.6 * RUNS);
  return [...sampled, ...replaced];
}

/**
 * Mutations that keep a request's meaning: an unknown field or sibling, an optional field
 * dropped, the upper-case hex of the same bytes, a duplicate key whose last (winning) value is
 * the valid one, a field added to a message that has none.
 */
const BENIGN =
  /^(unknown field|zz=|dup zz |drop (zz|instrument|fromSeq)|\w*ignature\.\w+ unknown sibling|\w*ignature\.(sig|payload) upper|dup \w+ hostile-first|fromSeq=-?0$)/;

/** The field a mutation touched (its top-level key), from the mutation's name. */
function fieldOf(name: string): string | undefined {
  const m = /^(?:drop |dup )?([A-Za-z]+)(?:[.= ]|$)/.exec(name);
  return m?.[1];
}

/** Messages that name the check but not the field: the JSON itself, the frame's size. */
const GENERAL = /JSON|nested|prototype|at most \d+ bytes/i;

/** What a refusal of a mutated signature object names: a part of it or a check it failed. */
const SIGNATURE_PARTS =
  /signature|payload|sig\b|discriminator|not accepted|signer|nonce|deadline|account|owner/i;

/** A refusal names the check that failed: the field the mutation touched, or the JSON. */
function expectNamed(name: string, message: string, ctx: string): void {
  if (BENIGN.test(name) || GENERAL.test(message)) return;
  const field = fieldOf(name);
  if (field === undefined || field === 'unknown' || field === 'zz') return;
  const pattern =
    field === 'signature'
      ? SIGNATURE_PARTS
      : field === 'permitSignature'
        ? /^permit: |permitSignature/
        : field === 'depositSignature'
          ? /^deposit: |depositSignature/
          : new RegExp(field, 'i');
  expect(message, `${ctx}: the message names ${field}`).toMatch(pattern);
}

/** What counts as an error reply on the trading socket (never 5000/5001, never a close). */
const WS_CODES = [
  4000, 4001, 4002, 4003, 4004, 4015, 4029, 4030, 4031, 4032, 4033, 4034, 4035, 4040, 4041, 4100,
  4101, 4102, 4103,
];

describe('mutation fuzz over real sockets', () => {
  let t: TestVenue;
  let alice: Wallet;
  let bob: Wallet;
  let ws: WsClient;
  const accepted: string[] = [];
  const rnd = prng(SEED);

  const stateHash = () => t.stateHash();
  const settle = () => new Promise((r) => setTimeout(r, 5));

  beforeAll(async () => {
    t = await startTestVenue({
      config: {
        ...DEFAULT_CONFIG,
        limits: {
          ...DEFAULT_CONFIG.limits,
          walletRequestsPerSecond: 100_000,
          publicReadsPerSecond: 100_000,
          signedRequestsPer5Minutes: 1_000_000,
        },
      },
    });
    alice = t.wallet(0);
    bob = t.wallet(1);
    await t.oracle({ 'BTC-PERP': '65000' });
    await t.invite(alice);
    await t.invite(bob);
    await t.fund(alice, '100000');
    await t.fund(bob, '100000');
    ws = await t.connect(alice);
  });
  afterAll(async () => {
    if (process.env.FUZZ_VERBOSE !== undefined && accepted.length > 0)
      console.log(`accepted mutations:\n${accepted.join('\n')}`);
    await t.close();
  });

  /** Sends a raw frame on `c` tagged with `id` by text surgery; waits for its reply or a close. */
  async function wsSend(c: WsClient, text: string, id: string): Promise<Msg | 'closed'> {
    // The id goes first so a refusal before parsing the rest still echoes it.
    const tagged = text.startsWith('{}') ? `{"id":"${id}"}` : `{"id":"${id}",${text.slice(1)}`;
    c.inbox.length = 0;
    c.ws.send(tagged);
    try {
      const m = await c.waitFor(
        (x) => x.id === id || (x.type === 'error' && x.id === undefined),
        5_000,
      );
      // Exactly one reply per request, echoing its id (protocol.md section 1); only a frame the
      // venue refuses unread (over the 4 KiB allowed before authenticate) has no id to echo.
      await settle();
      const ctx = `${tagged.slice(0, 200)} -> ${JSON.stringify(c.inbox).slice(0, 300)}`;
      expect(c.inbox.filter((x) => x.id === id || x.type === 'error').length, ctx).toBe(1);
      if (m.id === undefined) expect(m.message, ctx).toMatch(/at most 4096 bytes/);
      return m;
    } catch (e) {
      if (c.closed !== null) return 'closed';
      throw e;
    }
  }

  /** Trading socket: mutations of one valid message; afterwards the valid one must pass. */
  async function fuzzWs(
    label: string,
    make: () => Promise<Obj>,
    ok: (m: Msg) => boolean,
    options: { socket?: () => Promise<WsClient>; extra?: (v: Obj) => Promise<Mutation[]> } = {},
  ): Promise<void> {
    let valid = await make();
    let c = options.socket === undefined ? ws : await options.socket();
    // The same mutations of each fresh valid request (one seed per list): once a mutation that
    // keeps the meaning is processed, the rest are made from a request with an unspent nonce.
    const listSeed = Math.floor(rnd() * 2 ** 32);
    const build = async (v: Obj) =>
      mutations(v, prng(listSeed), 25 * RUNS, ['type'], await (options.extra?.(v) ?? []));
    let muts = await build(valid);
    let n = 0;
    for (let i = 0; i < muts.length; i++) {
      const mut = muts[i] as Mutation;
      const before = await stateHash();
      const id = `f${++n}`;
      const m = await wsSend(c, mut.text, id);
      const ctx = `${label} [${mut.name}] -> ${JSON.stringify(m).slice(0, 300)}`;
      expect(m, ctx).not.toBe('closed');
      expect(typeof m === 'object', ctx).toBe(true);
      const reply = m as Msg;
      if (reply.type === 'error') {
        expect(WS_CODES, ctx).toContain(reply.code);
        expect(String(reply.message).length, ctx).toBeGreaterThan(10);
        expectNamed(mut.name, String(reply.message), ctx);
        // The valid request's nonce is unspent: a replay here means an earlier mutation spent it.
        expect(String(reply.message), ctx).not.toMatch(/replayed/);
      } else {
        expect(ok(reply), ctx).toBe(true);
      }
      await settle();
      const changed = JSON.stringify(await stateHash()) !== JSON.stringify(before);
      if (changed || (reply.type !== 'error' && label !== 'subscribeAccountSummary')) {
        // Only a mutation that leaves the request's meaning whole may be processed: it spent the
        // nonce (or took the session), so the next round needs a fresh valid request.
        expect(mut.name, `${ctx}: processed`).toMatch(BENIGN);
        accepted.push(ctx);
        valid = await make();
        muts = await build(valid);
        if (options.socket !== undefined) {
          await c.close();
          c = await options.socket();
        }
      } else if (reply.type !== 'error') {
        accepted.push(ctx);
      }
    }
    // The untouched request (its nonce unspent) still succeeds.
    if (options.socket !== undefined) {
      await c.close();
      c = await options.socket();
    }
    const last = await wsSend(c, JSON.stringify(valid), 'final');
    expect(ok(last as Msg), `${label} final: ${JSON.stringify(last)}`).toBe(true);
    if (options.socket !== undefined) await c.close();
  }

  const order = (extra: Record<string, bigint | number | string> = {}) =>
    alice.sign('Order', limitOrder(true, px(60000), btc(0.01), extra));

  async function resting(): Promise<string> {
    const r = await ws.request({ type: 'placeOrder', signature: await order() });
    expect(r.type, JSON.stringify(r)).toBe('orderAck');
    return (r.order as { orderId: string }).orderId;
  }

  /** Validly signed payloads of every other struct type, as mutations of `signature`. */
  async function otherStructs(v: Obj, own: string): Promise<Mutation[]> {
    const nd = () => ({
      nonce: freshNonce(),
      deadline: BigInt(Math.floor(Date.now() / 1000) + 600),
    });
    const signed: Record<string, () => Promise<{ sig: string; payload: string }>> = {
      Order: () => order(),
      Cancel: () => alice.sign('Cancel', { market: 1, orderId: 1n, ...nd() }),
      Replace: () =>
        alice.sign('Replace', {
          market: 1,
          orderId: 1n,
          price: px(60000),
          quantity: btc(0.01),
          ...nd(),
        }),
      CancelAll: () => alice.sign('CancelAll', { market: 1, ...nd() }),
      Withdrawal: () => alice.sign('Withdrawal', { amount: usd(1), market: 0, flags: 0, ...nd() }),
      Deposit: () => alice.sign('Deposit', { amount: usd(1), market: 0, flags: 0, ...nd() }),
      MarginTransfer: () =>
        alice.sign('MarginTransfer', { amount: usd(1), market: 1, flags: 0, ...nd() }),
      UpdateLeverage: () =>
        alice.sign('UpdateLeverage', { market: 1, leverage: 1000, flags: 0, ...nd() }),
      ClaimLiquidation: () =>
        alice.sign('ClaimLiquidation', { auctionId: 1n, quantity: 1n, maxPrice: px(1), ...nd() }),
      Authenticate: () => alice.authenticate(),
    };
    const out: Mutation[] = [];
    for (const [name, sign] of Object.entries(signed)) {
      if (name === own) continue;
      out.push({
        name: `signature of a ${name}`,
        text: replaceRaw(v, 'signature', JSON.stringify(await sign())),
      });
    }
    // Signed by another wallet for itself (4004 on an authenticated socket).
    return out;
  }

  it('trading socket: every signed message', async () => {
    const nd = () => ({
      nonce: freshNonce(),
      deadline: BigInt(Math.floor(Date.now() / 1000) + 600),
    });
    await fuzzWs(
      'placeOrder',
      async () => ({ type: 'placeOrder', signature: await order(), instrument: 'BTC-PERP' }),
      (m) => m.type === 'orderAck',
      { extra: (v) => otherStructs(v, 'Order') },
    );
    await ws.request({
      type: 'cancelAll',
      signature: await alice.sign('CancelAll', { market: 0, ...nd() }),
    });
    let target = await resting();
    await fuzzWs(
      'cancelOrder',
      async () => {
        target = await resting();
        return {
          type: 'cancelOrder',
          instrument: 'BTC-PERP',
          signature: await alice.sign('Cancel', { market: 1, orderId: BigInt(target), ...nd() }),
        };
      },
      (m) => m.type === 'cancelAck',
      { extra: (v) => otherStructs(v, 'Cancel') },
    );
    await fuzzWs(
      'replaceOrder',
      async () => {
        target = await resting();
        return {
          type: 'replaceOrder',
          signature: await alice.sign('Replace', {
            market: 1,
            orderId: BigInt(target),
            price: px(59000),
            quantity: btc(0.02),
            cloid: cloid(Math.floor(rnd() * 1e9) + 1),
            ...nd(),
          }),
        };
      },
      (m) => m.type === 'replaceAck',
      { extra: (v) => otherStructs(v, 'Replace') },
    );
    await fuzzWs(
      'cancelAll',
      async () => ({
        type: 'cancelAll',
        instrument: 'BTC-PERP',
        signature: await alice.sign('CancelAll', { market: 1, ...nd() }),
      }),
      (m) => m.type === 'cancelAllAck',
      { extra: (v) => otherStructs(v, 'CancelAll') },
    );
    await fuzzWs(
      'transferMargin',
      async () => ({
        type: 'transferMargin',
        amount: '1',
        direction: 'crossToIsolated',
        instrument: 'BTC-PERP',
        signature: await alice.sign('MarginTransfer', {
          amount: usd(1),
          market: 1,
          flags: 0,
          ...nd(),
        }),
      }),
      (m) => m.type === 'marginTransferred' && m.status === 'Submitted',
      { extra: (v) => otherStructs(v, 'MarginTransfer') },
    );
    // No auction exists: the valid claim is a business refusal (4000, journaled), which spends only
    // its nonce; the mutations must be refused as bad input before that.
    await fuzzWs(
      'claimLiquidation',
      async () => ({
        type: 'claimLiquidation',
        signature: await alice.sign('ClaimLiquidation', {
          auctionId: 1n,
          quantity: btc(0.01),
          maxPrice: px(70000),
          ...nd(),
        }),
      }),
      (m) => m.type === 'error' && /no live liquidation auction/.test(String(m.message)),
      { extra: (v) => otherStructs(v, 'ClaimLiquidation') },
    );
  }, 120_000);

  it('trading socket: authenticate, subscriptions, ping', async () => {
    await fuzzWs(
      'authenticate',
      async () => ({ type: 'authenticate', signature: await alice.authenticate() }),
      (m) => m.type === 'authenticateSuccess',
      {
        socket: () => WsClient.connect(t.venue.ws),
        extra: (v) => otherStructs(v, 'Authenticate'),
      },
    );
    await fuzzWs(
      'subscribeTrading',
      async () => ({ type: 'subscribeTrading', fromSeq: 1 }),
      (m) => m.type === 'subscribeTradingSuccess',
      { socket: () => t.connect(alice) },
    );
    await fuzzWs(
      'subscribeAccountSummary',
      async () => ({ type: 'subscribeAccountSummary' }),
      (m) => m.type === 'accountSummary',
    );
    await fuzzWs(
      'ping',
      async () => ({ type: 'ping' }),
      (m) => m.type === 'pong',
    );
  }, 120_000);

  it('market-data socket: subscribe and unsubscribe on every channel', async () => {
    let md = await WsClient.connect(t.venue.marketdata);
    const valids: Obj[] = [
      { type: 'subscribe', channel: 'tickers' },
      { type: 'subscribe', channel: 'ticker', instrument: 'BTC-PERP' },
      { type: 'subscribe', channel: 'orderbook', instrument: 'BTC-PERP', depth: 10 },
      { type: 'subscribe', channel: 'candles', instrument: 'BTC-PERP', interval: '5m' },
      { type: 'subscribe', channel: 'liquidations', instrument: 'BTC-PERP' },
      { type: 'subscribe', channel: 'trades', instrument: 'BTC-PERP' },
      { type: 'unsubscribe', channel: 'ticker', instrument: 'BTC-PERP' },
      { type: 'unsubscribe', channel: 'orderbook', instrument: 'BTC-PERP', depth: 10 },
      { type: 'unsubscribe', channel: 'candles', instrument: 'BTC-PERP', interval: '5m' },
      { type: 'ping' },
    ];
    const before = await stateHash();
    let n = 0;
    for (const valid of valids) {
      for (const mut of mutations(valid, rnd, 15 * RUNS, [])) {
        const id = `m${++n}`;
        const m = await wsSend(md, mut.text, id);
        if (Buffer.byteLength(mut.text) + 12 > 4_096) {
          // Over the market-data frame limit: close 1009 (protocol.md section 6, tested elsewhere).
          if (m === 'closed') {
            expect(md.closed?.code).toBe(1009);
            md = await WsClient.connect(t.venue.marketdata);
          }
          continue;
        }
        const ctx = `md ${JSON.stringify(valid)} [${mut.name}] -> ${JSON.stringify(m).slice(0, 200)}`;
        expect(m, ctx).not.toBe('closed');
        const reply = m as Msg;
        if (reply.type === 'error') {
          expect([4000, 4029], ctx).toContain(reply.code);
          expect(String(reply.message).length, ctx).toBeGreaterThan(10);
          expectNamed(mut.name, String(reply.message), ctx);
          continue;
        }
        // An ack must acknowledge what was asked: the same channel, instrument, depth, interval.
        const asked = JSON.parse(mut.text) as Obj;
        for (const k of ['channel', 'instrument', 'depth', 'interval'] as const)
          if (reply[k] !== undefined && asked[k] != null) expect(reply[k], ctx).toEqual(asked[k]);
        accepted.push(ctx);
      }
      const ok = (await wsSend(md, JSON.stringify(valid), `v${++n}`)) as Msg;
      expect(ok.type, JSON.stringify(ok)).not.toBe('error');
    }
    expect(await stateHash()).toEqual(before);
    await md.close();
  }, 120_000);

  /** REST: mutations of one valid signed write; afterwards the valid one must pass. */
  async function fuzzRest(
    path: string,
    make: () => Promise<Obj>,
    extra: (v: Obj) => Promise<Mutation[]>,
  ): Promise<void> {
    let valid = await make();
    const listSeed = Math.floor(rnd() * 2 ** 32);
    const build = async (v: Obj) => mutations(v, prng(listSeed), 25 * RUNS, [], await extra(v));
    let muts = await build(valid);
    for (let i = 0; i < muts.length; i++) {
      const mut = muts[i] as Mutation;
      const before = await stateHash();
      const r = await t.api('POST', path, mut.text);
      const ctx = `${path} [${mut.name}] -> ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`;
      expect(r.status, ctx).toBeLessThan(500);
      if (r.status !== 200) {
        expect([400, 401, 403, 404, 422], ctx).toContain(r.status);
        expect(typeof r.body.error, ctx).toBe('string');
        expect(String(r.body.error).length, ctx).toBeGreaterThan(10);
        expectNamed(mut.name, String(r.body.error), ctx);
        expect(String(r.body.error), ctx).not.toMatch(/replayed/);
      }
      await settle();
      const changed = JSON.stringify(await stateHash()) !== JSON.stringify(before);
      if (changed || r.status === 200) {
        expect(mut.name, `${ctx}: processed`).toMatch(BENIGN);
        accepted.push(ctx);
        valid = await make();
        muts = await build(valid);
      }
    }
    const ok = await t.api('POST', path, JSON.stringify(valid));
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.status, JSON.stringify(ok.body)).toBe('Submitted');
  }

  it('REST: every signed write', async () => {
    const nd = () => ({
      nonce: freshNonce(),
      deadline: BigInt(Math.floor(Date.now() / 1000) + 600),
    });
    const sigOf = (own: string) => async (v: Obj) => {
      const key = 'signature' in v ? 'signature' : 'depositSignature';
      const out = await otherStructs({ ...v, signature: v[key] }, own);
      return out.map((m) => ({
        name: m.name,
        text: replaceRaw(v, key, JSON.stringify((JSON.parse(m.text) as Obj).signature)),
      }));
    };
    await fuzzRest(
      '/margin/withdrawal',
      async () => ({
        amount: '1',
        instrument: null,
        marginMode: 'Cross',
        signature: await alice.sign('Withdrawal', { amount: usd(1), market: 0, flags: 0, ...nd() }),
      }),
      sigOf('Withdrawal'),
    );
    await fuzzRest(
      '/margin/transfer',
      async () => ({
        amount: '1',
        instrument: 'BTC-PERP',
        direction: 'crossToIsolated',
        signature: await alice.sign('MarginTransfer', {
          amount: usd(1),
          market: 1,
          flags: 0,
          ...nd(),
        }),
      }),
      sigOf('MarginTransfer'),
    );
    await fuzzRest(
      '/update_leverage',
      async () => ({
        leverage: 1000,
        instrument: 'BTC-PERP',
        marginMode: 'Cross',
        signature: await alice.sign('UpdateLeverage', {
          market: 1,
          leverage: 1000,
          flags: 0,
          ...nd(),
        }),
      }),
      sigOf('UpdateLeverage'),
    );
    await fuzzRest(
      '/margin/deposit',
      async () => {
        await t.admin('POST', '/admin/faucet', { wallet: alice.address, amount: '1' });
        const token = await t.api('GET', `/chain/token/${alice.address}`);
        return {
          amount: '1',
          instrument: null,
          marginMode: 'Cross',
          permitSignature: await alice.sign('Permit', {
            spender: t.net.vault.address,
            value: usd(1),
            nonce: BigInt(token.body.nonce as string),
            deadline: BigInt(Math.floor(Date.now() / 1000) + 600),
          }),
          depositSignature: await alice.sign('Deposit', {
            amount: usd(1),
            market: 0,
            flags: 0,
            ...nd(),
          }),
        };
      },
      sigOf('Deposit'),
    );
  }, 120_000);

  it('REST: public reads with mutated query parameters', async () => {
    const w = alice.address;
    const reads: Record<string, Record<string, string>> = {
      '/candles': {
        instrument: 'BTC-PERP',
        interval: '1m',
        limit: '10',
        startTime: '0',
        endTime: '1',
      },
      '/funding': { instrument: 'BTC-PERP', limit: '10', startTime: '0' },
      '/trades': { instrument: 'BTC-PERP', limit: '10' },
      '/orderbook': { instrument: 'BTC-PERP', depth: '10' },
      '/tickers': {},
      '/account_summary': { wallet: w },
      '/account/funding': { wallet: w, limit: '10', instrument: 'BTC-PERP' },
      '/account/trades': { wallet: w, limit: '10', startTime: '0', endTime: '9' },
      '/historic/orders': { wallet: w, limit: '10', status: 'open' },
      '/historic/trades': { wallet: w, limit: '10' },
    };
    const values = [
      '',
      '0',
      '-1',
      '9007199254740992',
      '18446744073709551616',
      '1e308',
      'NaN',
      '1e3',
      ' 1',
      '01',
      '0x10',
      '%00',
      '%E2%80%AE',
      '%ED%A0%80',
      'x'.repeat(5_000),
      '__proto__',
      'true',
      'null',
      '[]',
    ];
    const before = await stateHash();
    for (const [path, params] of Object.entries(reads)) {
      const qs = (p: Record<string, string>, raw = '') =>
        `${path}?${Object.entries(p)
          .map(([k, v]) => `${k}=${encodeURIComponent(v)}`)
          .join('&')}${raw}`;
      const good = await t.api('GET', qs(params));
      expect(good.status, `${path} ${JSON.stringify(good.body)}`).toBe(200);
      const cases: string[] = [];
      for (const k of Object.keys(params)) {
        const { [k]: _drop, ...rest } = params;
        cases.push(qs(rest));
        cases.push(qs(params, `&${k}=${encodeURIComponent(params[k] as string)}`));
        cases.push(qs(rest, `&${k}[]=${encodeURIComponent(params[k] as string)}`));
        cases.push(qs(rest, `&${k}[a][b]=1`));
        cases.push(qs({ ...params, [k]: (params[k] as string).toLowerCase() }));
        cases.push(qs({ ...params, [k]: (params[k] as string).toUpperCase() }));
        for (let i = 0; i < 6 * RUNS; i++) {
          const v = values[Math.floor(rnd() * values.length)] as string;
          cases.push(qs(rest, `&${k}=${v}`));
        }
      }
      cases.push(qs(params, '&__proto__[x]=1&constructor[prototype][x]=1'));
      for (const c of cases) {
        const r = await t.api('GET', c);
        const ctx = `${c.slice(0, 160)} -> ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`;
        expect(r.status, ctx).toBeLessThan(500);
        if (r.status !== 200) {
          expect([400, 404], ctx).toContain(r.status);
          expect(String(r.body.error).length, ctx).toBeGreaterThan(10);
        }
      }
    }
    expect(await stateHash()).toEqual(before);
    expect(({} as Obj).x).toBeUndefined();
  }, 120_000);

  it('REST: referral/apply body and headers', async () => {
    const carol = t.wallet(2);
    const code = t.venue.inviteCode as string;
    const valid = await carol.referral(code);
    const body = JSON.parse(valid.body) as Obj;
    const bodyMuts = mutations(body, rnd, 20 * RUNS, []);
    const headerMuts: { name: string; headers: Record<string, string> }[] = [];
    for (const h of ['x-signature', 'x-timestamp', 'x-nonce']) {
      const v = valid.headers[h] as string;
      const { [h]: _drop, ...rest } = valid.headers;
      headerMuts.push({ name: `drop ${h}`, headers: rest });
      const alts: Record<string, string> = {
        empty: '',
        space: ' ',
        upper: v.toUpperCase(),
        lower: v.toLowerCase(),
        'leading zero': `0${v}`,
        twice: `${v}${v}`,
        '1e3': '1e3',
        '-1': '-1',
        huge: 'x'.repeat(5_000),
        'comma list': `${v},${v}`,
      };
      for (const [name, alt] of Object.entries(alts))
        if (alt !== v) headerMuts.push({ name: `${h} ${name}`, headers: { ...rest, [h]: alt } });
    }
    headerMuts.push({
      name: 'content-type text',
      headers: { ...valid.headers, 'content-type': 'text/plain' },
    });
    const before = await stateHash();
    const check = (r: { status: number; body: Obj }, ctx: string) => {
      expect(r.status, ctx).not.toBe(201);
      expect([400, 401, 415, 422], ctx).toContain(r.status);
      expect(String(r.body.error).length, ctx).toBeGreaterThan(10);
    };
    for (const mut of bodyMuts) {
      // The body is what was signed: any change to it is a refusal (400 shape, 401 signature),
      // except a duplicate key whose winning value is the signed one.
      const r = await t.api('POST', '/referral/apply', mut.text, valid.headers);
      const ctx = `referral [${mut.name}] -> ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`;
      if (r.status === 201) {
        expect(mut.name, ctx).toMatch(/^dup \w+ hostile-first/);
        accepted.push(ctx);
        throw new Error(`a mutated referral was applied: ${ctx}`);
      }
      check(r, ctx);
    }
    for (const mut of headerMuts) {
      const r = await t.api('POST', '/referral/apply', valid.body, mut.headers);
      check(
        r,
        `referral header [${mut.name}] -> ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`,
      );
    }
    expect(await stateHash()).toEqual(before);
    // The untouched request: its nonce was not spent.
    const ok = await t.api('POST', '/referral/apply', valid.body, valid.headers);
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
  }, 60_000);

  it('REST: admin writes refused with 400/404 change nothing', async () => {
    const shapes: Record<string, Obj> = {
      '/admin/instruments': everyInstrumentSetting(77, 'FUZZ-PERP'),
      '/admin/oracle': { prices: { 'BTC-PERP': '65000' } },
      '/admin/referral-codes': { kind: 'system', maxUses: 3, code: 'FUZZA' },
      '/admin/faucet': { wallet: alice.address, amount: '1' },
      '/admin/insurance-fund/transfer': { direction: 'ToInsuranceFund', amount: '1' },
      '/admin/fee-pool/payout': { wallet: alice.address, amount: '0' },
      '/admin/funding/settle': { instrument: 'BTC-PERP' },
      '/admin/venue-settings': { maxWorkingOrdersPerAccount: 1_000 },
      '/admin/liquidate': {
        wallet: alice.address,
        marginMode: 'Cross',
        instrument: null,
        force: false,
      },
    };
    for (const [path, shape] of Object.entries(shapes)) {
      for (const mut of mutations(shape, rnd, 20 * RUNS, [])) {
        const before = await stateHash();
        const r = await t.api('POST', path, mut.text, {
          'content-type': 'application/json',
          authorization: `Bearer ${t.venue.adminToken}`,
        });
        const ctx = `${path} [${mut.name}] -> ${r.status} ${JSON.stringify(r.body).slice(0, 240)}`;
        expect(r.status, ctx).toBeLessThan(500);
        if (r.status === 200 || r.status === 201) {
          accepted.push(ctx);
          continue;
        }
        expect([400, 404, 409, 422], ctx).toContain(r.status);
        expect(String(r.body.error).length, ctx).toBeGreaterThan(10);
        await settle();
        expect(await stateHash(), ctx).toEqual(before);
      }
    }
    await t.oracle({ 'BTC-PERP': '65000' });
  }, 120_000);

  it('validly signed structs with every field at its boundaries: refusals before the nonce change nothing', async () => {
    const B: Record<string, readonly (bigint | number | boolean | string)[]> = {
      uint8: [0, 1, 2, 3, 255],
      uint32: [0, 1, 2, 0x7fffffff, 0xffffffff],
      uint64: [0n, 1n, 2n ** 53n, 2n ** 63n, 2n ** 64n - 1n],
      uint256: [0n, 1n, 10n ** 18n, 2n ** 255n, 2n ** 256n - 1n],
      bytes16: [`0x${'0'.repeat(32)}`, `0x${'f'.repeat(32)}`, cloid(1)],
      bool: [true, false],
    };
    const FIELDS: Record<string, readonly (readonly [string, string])[]> = {
      Order: [
        ['market', 'uint32'],
        ['isBuy', 'bool'],
        ['orderType', 'uint8'],
        ['timeInForce', 'uint8'],
        ['price', 'uint256'],
        ['triggerPrice', 'uint256'],
        ['quantity', 'uint256'],
        ['flags', 'uint32'],
        ['expiry', 'uint64'],
        ['cloid', 'bytes16'],
        ['parentCloid', 'bytes16'],
      ],
      Cancel: [
        ['market', 'uint32'],
        ['orderId', 'uint64'],
        ['cloid', 'bytes16'],
      ],
      Replace: [
        ['market', 'uint32'],
        ['orderId', 'uint64'],
        ['origCloid', 'bytes16'],
        ['price', 'uint256'],
        ['triggerPrice', 'uint256'],
        ['quantity', 'uint256'],
        ['cloid', 'bytes16'],
      ],
      CancelAll: [['market', 'uint32']],
      ClaimLiquidation: [
        ['auctionId', 'uint64'],
        ['quantity', 'uint256'],
        ['maxPrice', 'uint256'],
      ],
      MarginTransfer: [
        ['amount', 'uint256'],
        ['market', 'uint32'],
        ['flags', 'uint32'],
      ],
    };
    const TYPES: Record<string, string> = {
      Order: 'placeOrder',
      Cancel: 'cancelOrder',
      Replace: 'replaceOrder',
      CancelAll: 'cancelAll',
      ClaimLiquidation: 'claimLiquidation',
      MarginTransfer: 'transferMargin',
    };
    const target = await resting();
    const base: Record<string, Record<string, bigint | number | boolean | string>> = {
      Order: limitOrder(true, px(60000), btc(0.01)),
      Cancel: { market: 1, orderId: BigInt(target) },
      Replace: { market: 1, orderId: BigInt(target), price: px(59000), quantity: btc(0.01) },
      CancelAll: { market: 1 },
      ClaimLiquidation: { auctionId: 1n, quantity: btc(0.01), maxPrice: px(70000) },
      MarginTransfer: { amount: usd(1), market: 1, flags: 0 },
    };
    // Refusals that come before the nonce is spent (protocol.md section 3; interface-spec order
    // validation): the request changes nothing.
    const EARLY = [4001, 4002, 4030, 4031, 4032, 4034];
    let n = 0;
    for (const [struct, fields] of Object.entries(FIELDS)) {
      for (const [field, type] of fields) {
        for (const value of B[type] ?? []) {
          if (rnd() > 0.7 * RUNS) continue;
          const values = {
            ...base[struct],
            [field]: value,
            nonce: freshNonce(),
            deadline: BigInt(Math.floor(Date.now() / 1000) + 600),
          };
          const signature = await alice.sign(
            struct,
            values as Record<string, bigint | number | boolean | string>,
          );
          const msg: Obj = { type: TYPES[struct], signature };
          if (struct === 'MarginTransfer') {
            const v = values as Record<string, bigint | number>;
            msg.amount = formatCollateral(BigInt(v.amount as bigint));
            msg.direction = Number(v.flags) === 1 ? 'isolatedToCross' : 'crossToIsolated';
            msg.instrument = 'BTC-PERP';
          }
          const before = await stateHash();
          const text = JSON.stringify(msg);
          const m = await wsSend(ws, text, `b${++n}`);
          const ctx = `${struct}.${field}=${String(value)} -> ${JSON.stringify(m).slice(0, 300)}`;
          expect(m, ctx).not.toBe('closed');
          const reply = m as Msg;
          await settle();
          const after = await stateHash();
          if (reply.type !== 'error') {
            accepted.push(`boundary ${ctx}`);
            continue;
          }
          expect(WS_CODES, ctx).toContain(reply.code);
          if (EARLY.includes(reply.code as number)) expect(after, ctx).toEqual(before);
          // Whether the nonce was spent shows in the state: unchanged, the same request is
          // answered the same again; changed, it is a replay.
          const again = (await wsSend(ws, text, `b${++n}`)) as Msg;
          if (JSON.stringify(after) === JSON.stringify(before))
            expect(again.code, `${ctx} again ${JSON.stringify(again)}`).toBe(reply.code);
          else expect(again.code, `${ctx} again ${JSON.stringify(again)}`).toBe(4002);
        }
      }
    }
  }, 120_000);
});
