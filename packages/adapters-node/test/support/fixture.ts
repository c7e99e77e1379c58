/**
 * A venue on 127.0.0.1 (port 0, in memory, no price feed) and the steps every end-to-end test
 * needs: onboarding a wallet, funding it through the simulated chain, signing orders.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { DEFAULT_CONFIG, type StartVenueOptions, startVenue, type Venue } from '../../src/index.js';
import {
  freshNonce,
  fundWallet,
  http,
  KEYS,
  type NetworkInfo,
  Wallet,
  WsClient,
} from './client.js';

/** 10^18: prices are 18-decimal integers in signed structs. */
export const PRICE = 10n ** 18n;
/** Raw quantity of `n` BTC (4 quantity decimals). */
export const btc = (n: number): bigint => BigInt(Math.round(n * 10_000));
/** A price in signed-struct units. */
export const px = (p: number | string): bigint => {
  const [w, f = ''] = String(p).split('.');
  return BigInt(w ?? '0') * PRICE + BigInt((f + '0'.repeat(18)).slice(0, 18));
};
/** Micro-units of collateral. */
export const usd = (n: number): bigint => BigInt(Math.round(n * 1_000_000));

/** A running venue plus helpers bound to it. */
export interface TestVenue {
  readonly venue: Venue;
  readonly net: NetworkInfo;
  readonly rest: string;
  /** `GET|POST {rest}{path}`. */
  api(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): ReturnType<typeof http>;
  /** Admin call with the bearer token. */
  admin(method: string, path: string, body?: unknown): ReturnType<typeof http>;
  /** A wallet for `KEYS[i]` (or any key). */
  wallet(i: number | `0x${string}`): Wallet;
  /** Applies the bootstrap invite code for a wallet (201 expected). */
  invite(w: Wallet): Promise<void>;
  /** Faucet + permit deposit into cross margin; waits until the collateral is in the account. */
  fund(w: Wallet, amount: string): Promise<void>;
  /**
   * `POST /margin/withdrawal` from cross margin signed by `w`; `owner` overrides the struct's
   * owner (a forged request) and `bodyAmount` the body's amount (a disagreement with the payload).
   */
  withdraw(
    w: Wallet,
    amount: string,
    options?: { owner?: string; bodyAmount?: string },
  ): ReturnType<typeof http>;
  /** Opens a trading socket authenticated as `w`. */
  connect(w: Wallet): Promise<WsClient>;
  /** Sets the oracle (index) price of instruments. */
  oracle(prices: Record<string, string>): Promise<void>;
  /** The state hash and journal seq (admin). */
  stateHash(): Promise<{ seq: number; hash: string }>;
  close(): Promise<void>;
}

/** Starts an in-memory venue for a test. */
export async function startTestVenue(options: StartVenueOptions = {}): Promise<TestVenue> {
  // Every test client comes from 127.0.0.1, and a file's tests make many fresh wallets on one
  // venue: the per-address budget of wallets without app access is lifted unless a test sets it.
  const config = options.config ?? DEFAULT_CONFIG;
  const defaults = DEFAULT_CONFIG.limits;
  const budgetSet =
    config.limits.noAccessRequestsPerSecondPerIp !== defaults.noAccessRequestsPerSecondPerIp ||
    config.limits.noAccessRequestsPer5MinutesPerIp !== defaults.noAccessRequestsPer5MinutesPerIp;
  const venue = await startVenue({
    dataDir: null,
    port: 0,
    priceFeed: 'none',
    log: () => {},
    ...options,
    config: budgetSet
      ? config
      : {
          ...config,
          limits: {
            ...config.limits,
            noAccessRequestsPerSecondPerIp: 100_000,
            noAccessRequestsPer5MinutesPerIp: 1_000_000,
          },
        },
  });
  const rest = venue.rest;
  const netRes = await http('GET', `${rest}/network`);
  const net = netRes.body as unknown as NetworkInfo;
  const api = (
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) => http(method, `${rest}${path}`, body, headers);
  const admin = (method: string, path: string, body?: unknown) =>
    api(method, path, body, { authorization: `Bearer ${venue.adminToken}` });
  const sockets: WsClient[] = [];

  const t: TestVenue = {
    venue,
    net,
    rest,
    api,
    admin,
    wallet: (i) => new Wallet(typeof i === 'number' ? (KEYS[i] as `0x${string}`) : i, net),
    async invite(w) {
      const code = venue.inviteCode;
      if (code === null) throw new Error('no bootstrap invite code');
      const r = await w.referral(code);
      const res = await api('POST', '/referral/apply', r.body, r.headers);
      if (res.status !== 201)
        throw new Error(`invite failed: ${res.status} ${JSON.stringify(res.body)}`);
    },
    fund: (w, amount) => fundWallet(rest, venue.adminToken, net, w, amount),
    async withdraw(w, amount, options = {}) {
      const signature = await w.sign('Withdrawal', {
        ...(options.owner === undefined ? {} : { owner: options.owner }),
        amount: usd(Number(amount)),
        market: 0,
        flags: 0,
        nonce: freshNonce(),
        deadline: Wallet.deadline(),
      });
      return api('POST', '/margin/withdrawal', {
        amount: options.bodyAmount ?? amount,
        instrument: null,
        marginMode: 'Cross',
        signature,
      });
    },
    async connect(w) {
      const ws = await WsClient.connect(venue.ws);
      sockets.push(ws);
      const auth = await ws.request({ type: 'authenticate', signature: await w.authenticate() });
      if (auth.type !== 'authenticateSuccess')
        throw new Error(`authenticate failed: ${JSON.stringify(auth)}`);
      return ws;
    },
    async oracle(prices) {
      const r = await admin('POST', '/admin/oracle', { prices });
      if (r.status !== 200) throw new Error(`oracle failed: ${JSON.stringify(r.body)}`);
    },
    async stateHash() {
      const r = await admin('GET', '/admin/state-hash');
      return r.body as unknown as { seq: number; hash: string };
    },
    async close() {
      for (const s of sockets) await s.close().catch(() => {});
      await venue.close();
    },
  };
  return t;
}

/** Fields of an `Order` struct with defaults for a GTC limit order. */
export function limitOrder(
  isBuy: boolean,
  price: bigint,
  quantity: bigint,
  extra: Partial<
    Record<
      | 'market'
      | 'orderType'
      | 'timeInForce'
      | 'triggerPrice'
      | 'flags'
      | 'expiry'
      | 'cloid'
      | 'parentCloid'
      | 'nonce'
      | 'deadline',
      bigint | number | string
    >
  > = {},
): Record<string, bigint | number | boolean | string> {
  return {
    market: 1,
    isBuy,
    orderType: 0,
    timeInForce: 0,
    price,
    triggerPrice: 0n,
    quantity,
    flags: 0,
    expiry: 0n,
    cloid: `0x${'0'.repeat(32)}`,
    parentCloid: `0x${'0'.repeat(32)}`,
    nonce: freshNonce(),
    deadline: Wallet.deadline(),
    ...extra,
  };
}

/** A `POST /admin/instruments` body that sets every instrument setting, optional ones included. */
export function everyInstrumentSetting(id: number, symbol: string): Record<string, unknown> {
  return {
    id,
    symbol,
    tickSize: '0.5',
    lotSize: '0.0001',
    quantityDecimals: 4,
    maxLeverage: 20,
    defaultLeverage: 10,
    openInterestCap: '100',
    maintenanceMarginRate: '0.01',
    marginTiers: [{ notionalFloor: '100000', maxLeverage: 10 }],
    minNotional: '5',
    makerFeeRate: '0.0002',
    takerFeeRate: '0.0005',
    funding: { intervalMs: 3_600_000, interestRate8h: '0.0001', impactNotional: '1000' },
    liquidation: { partialThreshold: '10000', auctionDurationMs: 30_000, feeRate: '0.01' },
  };
}

/** A 16-byte cloid from a small number. */
export function cloid(n: number): string {
  return `0x${n.toString(16).padStart(32, '0')}`;
}

/**
 * Runs `connect` and returns the client it opened with the venue's end of its TCP connection.
 * Corking that end makes the client look like one that reads nothing while the kernel's buffers
 * are full: nothing the venue sends gets out.
 */
export async function withVenueEnd(
  t: TestVenue,
  connect: () => Promise<WsClient>,
): Promise<{ client: WsClient; venueEnd: Socket }> {
  const server = t.venue.app.server;
  const accepted: Socket[] = [];
  const onConnection = (s: Socket): void => {
    accepted.push(s);
  };
  server.on('connection', onConnection);
  let client: WsClient;
  try {
    client = await connect();
  } finally {
    server.off('connection', onConnection);
  }
  const local = (client.ws as unknown as { _socket: Socket })._socket.localPort;
  const venueEnd = accepted.find((s) => s.remotePort === local);
  if (venueEnd === undefined) throw new Error("the client's connection was not seen");
  return { client, venueEnd };
}

/**
 * Places an order on the trading socket `ws` signed by `w` (a GTC limit unless `fields` say
 * otherwise; `isBuy` 1 buys), expects the ack and returns the order id.
 */
export async function placeOrder(
  w: Wallet,
  ws: WsClient,
  fields: Record<string, bigint | number | string>,
): Promise<string> {
  const { isBuy, price, quantity, ...extra } = fields;
  const r = await ws.request({
    type: 'placeOrder',
    signature: await w.sign(
      'Order',
      limitOrder(isBuy === 1, price as bigint, quantity as bigint, extra),
    ),
  });
  if (r.type !== 'orderAck') throw new Error(`order refused: ${JSON.stringify(r)}`);
  return (r.order as { orderId: string }).orderId;
}

/** Cancels `orderId` on market 1 over the trading socket `ws`, signed by `w`; expects the ack. */
export async function cancelOrder(w: Wallet, ws: WsClient, orderId: string): Promise<void> {
  const r = await ws.request({
    type: 'cancelOrder',
    signature: await w.sign('Cancel', {
      market: 1,
      orderId: BigInt(orderId),
      nonce: freshNonce(),
      deadline: Wallet.deadline(),
    }),
  });
  if (r.type !== 'cancelAck') throw new Error(`cancel refused: ${JSON.stringify(r)}`);
}

/** Two traders of a test: Alice (`KEYS[0]`) and Bob (`KEYS[1]`) with their trading sockets. */
export interface Traders {
  alice: Wallet;
  bob: Wallet;
  a: WsClient;
  b: WsClient;
}

/** Alice and Bob connected, first invited and funded with 100,000 when `onboard`. */
export async function traders(t: TestVenue, onboard: boolean): Promise<Traders> {
  const [alice, bob] = [t.wallet(0), t.wallet(1)];
  if (onboard) {
    for (const w of [alice, bob]) {
      await t.invite(w);
      await t.fund(w, '100000');
    }
  }
  return { alice, bob, a: await t.connect(alice), b: await t.connect(bob) };
}

/** Every file of `dir` with its SHA-256: what a test compares to show nothing changed. */
export function fileListing(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir).sort())
    out[name] = createHash('sha256')
      .update(readFileSync(join(dir, name)))
      .digest('hex');
  return out;
}
