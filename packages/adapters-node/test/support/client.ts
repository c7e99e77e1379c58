/**
 * A test client that talks to a venue the way an integrator would: wallets sign with viem
 * (typed data for structs, personal_sign for authentication and referrals), requests go over
 * real sockets. Payloads are built here with viem's ABI encoder from the protocol's struct
 * list, independently of the core's codec, so the end-to-end tests are also a differential test
 * of the venue's decoder.
 */
import { encodeAbiParameters } from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';
import { privateKeyToAccount } from 'viem/accounts';
import WebSocket from 'ws';

type Field = readonly [name: string, type: string];
interface StructSpec {
  readonly discriminator: number;
  readonly domain: 'vault' | 'token' | 'personal';
  readonly fields: readonly Field[];
}

const COMMON_TAIL: readonly Field[] = [
  ['nonce', 'uint64'],
  ['deadline', 'uint64'],
];
const MONEY: readonly Field[] = [
  ['owner', 'address'],
  ['amount', 'uint256'],
  ['market', 'uint32'],
  ['flags', 'uint32'],
  ...COMMON_TAIL,
];

/** The signed structs of protocol.md section 2, by EIP-712 type name. */
export const STRUCT_SPECS: Readonly<Record<string, StructSpec>> = {
  Order: {
    discriminator: 0x01,
    domain: 'vault',
    fields: [
      ['account', 'address'],
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
      ...COMMON_TAIL,
    ],
  },
  Cancel: {
    discriminator: 0x02,
    domain: 'vault',
    fields: [
      ['account', 'address'],
      ['market', 'uint32'],
      ['orderId', 'uint64'],
      ['cloid', 'bytes16'],
      ...COMMON_TAIL,
    ],
  },
  Withdrawal: { discriminator: 0x03, domain: 'vault', fields: MONEY },
  UpdateLeverage: {
    discriminator: 0x04,
    domain: 'vault',
    fields: [
      ['account', 'address'],
      ['market', 'uint32'],
      ['leverage', 'uint32'],
      ['flags', 'uint32'],
      ...COMMON_TAIL,
    ],
  },
  Permit: {
    discriminator: 0x05,
    domain: 'token',
    fields: [
      ['owner', 'address'],
      ['spender', 'address'],
      ['value', 'uint256'],
      ['nonce', 'uint256'],
      ['deadline', 'uint256'],
    ],
  },
  Replace: {
    discriminator: 0x06,
    domain: 'vault',
    fields: [
      ['account', 'address'],
      ['market', 'uint32'],
      ['orderId', 'uint64'],
      ['origCloid', 'bytes16'],
      ['price', 'uint256'],
      ['triggerPrice', 'uint256'],
      ['quantity', 'uint256'],
      ['cloid', 'bytes16'],
      ...COMMON_TAIL,
    ],
  },
  Deposit: { discriminator: 0x07, domain: 'vault', fields: MONEY },
  MarginTransfer: { discriminator: 0x08, domain: 'vault', fields: MONEY },
  CancelAll: {
    discriminator: 0x0a,
    domain: 'vault',
    fields: [['account', 'address'], ['market', 'uint32'], ...COMMON_TAIL],
  },
  ClaimLiquidation: {
    discriminator: 0x0b,
    domain: 'vault',
    fields: [
      ['account', 'address'],
      ['auctionId', 'uint64'],
      ['quantity', 'uint256'],
      ['maxPrice', 'uint256'],
      ...COMMON_TAIL,
    ],
  },
};

type Value = bigint | number | boolean | string;

/** `discriminator || ABI words`, as protocol.md section 2 lays it out. */
export function encodeStruct(
  discriminator: number,
  fields: readonly Field[],
  values: Record<string, Value>,
): string {
  const words = encodeAbiParameters(
    fields.map(([name, type]) => ({ name, type })),
    fields.map(([name, type]) => {
      const v = values[name];
      if (v === undefined) throw new Error(`missing field ${name}`);
      if (type.startsWith('uint') && typeof v === 'number') return BigInt(v);
      return v;
    }) as never,
  );
  // viem pads bytes16 on the right of its word, as EIP-712 encodes it.
  return `0x${discriminator.toString(16).padStart(2, '0')}${words.slice(2)}`;
}

/** JSON with object keys sorted at every level and no whitespace. */
function sortedJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
    a < b ? -1 : a > b ? 1 : 0,
  );
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${sortedJson(v)}`).join(',')}}`;
}

/** The text a wallet signs for `POST /referral/apply` (protocol.md section 3), built here. */
export function referralText(
  body: Record<string, unknown>,
  nonce: string,
  timestamp: number,
  walletAddress: string,
): string {
  return sortedJson({
    body,
    method: 'POST',
    nonce,
    path: '/referral/apply',
    timestamp,
    walletAddress,
  });
}

/** The network info of `GET /api/network`. */
export interface NetworkInfo {
  network: string;
  chainId: number;
  vault: { name: string; version: string; address: string };
  token: { name: string; version: string; address: string; decimals: number };
}

let nonceClock = Date.now();
/** A fresh ms nonce (strictly increasing within the process). */
export function freshNonce(): bigint {
  nonceClock = Math.max(nonceClock + 1, Date.now());
  return BigInt(nonceClock);
}

/** A wallet that signs through viem. */
export class Wallet {
  readonly account: PrivateKeyAccount;
  readonly address: string;
  readonly net: NetworkInfo;

  constructor(privateKey: `0x${string}`, net: NetworkInfo) {
    this.account = privateKeyToAccount(privateKey);
    this.address = this.account.address.toLowerCase();
    this.net = net;
  }

  private domain(kind: 'vault' | 'token') {
    const d = kind === 'vault' ? this.net.vault : this.net.token;
    return {
      name: d.name,
      version: d.version,
      chainId: this.net.chainId,
      verifyingContract: d.address as `0x${string}`,
    };
  }

  /** Signs a struct (by name) with EIP-712 and returns the signature object of the protocol. */
  async sign(
    name: string,
    values: Record<string, Value>,
    overrides: { domain?: ReturnType<Wallet['domain']> } = {},
  ): Promise<{ sig: string; payload: string }> {
    const spec = STRUCT_SPECS[name];
    if (spec === undefined) throw new Error(`no struct ${name}`);
    const owner = spec.fields[0]![0];
    const message: Record<string, Value> = { ...values };
    if (message[owner] === undefined) message[owner] = this.address;
    for (const [field, type] of spec.fields) {
      const v = message[field];
      if (type.startsWith('uint') && typeof v === 'number') message[field] = BigInt(v);
      if (v === undefined && type === 'bytes16') message[field] = `0x${'0'.repeat(32)}`;
      if (v === undefined && type.startsWith('uint')) message[field] = 0n;
    }
    const payload = encodeStruct(spec.discriminator, spec.fields, message);
    const sig = await this.account.signTypedData({
      domain: overrides.domain ?? this.domain(spec.domain === 'token' ? 'token' : 'vault'),
      types: { [name]: spec.fields.map(([n, t]) => ({ name: n, type: t })) },
      primaryType: name,
      message: message as never,
    });
    return { sig, payload };
  }

  /** The `authenticate` signature object for a nonce. */
  async authenticate(nonce: bigint = freshNonce()): Promise<{ sig: string; payload: string }> {
    const payload = encodeStruct(
      0x09,
      [
        ['account', 'address'],
        ['nonce', 'uint64'],
        ['deadline', 'uint64'],
      ],
      { account: this.address, nonce, deadline: 0n },
    );
    const sig = await this.account.signMessage({ message: `${this.address}:${nonce}` });
    return { sig, payload };
  }

  /** Headers and body of `POST /referral/apply`. */
  async referral(
    code: string,
    nonce = `n${freshNonce()}xyz`,
    timestamp = Date.now(),
    extra: Record<string, string | number | boolean | null> = {},
  ): Promise<{ headers: Record<string, string>; body: string }> {
    const body = { walletAddress: this.address, code, ...extra };
    const message = referralText(body, nonce, timestamp, this.address);
    const sig = await this.account.signMessage({ message });
    return {
      headers: {
        'content-type': 'application/json',
        'x-signature': sig,
        'x-timestamp': String(timestamp),
        'x-nonce': nonce,
      },
      body: JSON.stringify(body),
    };
  }

  /** Deadline seconds five minutes ahead. */
  static deadline(): bigint {
    // Five minutes: a test venue's clock may run up to a minute ahead of the wall clock
    // (backfill.e2e starts it on a minute boundary), and one minute then left no margin.
    return BigInt(Math.floor(Date.now() / 1000) + 300);
  }
}

/** A JSON message from the server. */
export type Msg = Record<string, unknown> & { type: string };

/** A WebSocket client with request/reply by id and an inbox for pushes. */
export class WsClient {
  readonly ws: WebSocket;
  readonly inbox: Msg[] = [];
  private waiters: {
    match: (m: Msg) => boolean;
    resolve: (m: Msg) => void;
    reject: (e: Error) => void;
    timer: NodeJS.Timeout;
  }[] = [];
  private n = 0;
  closed: { code: number; reason: string } | null = null;

  private constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on('message', (data) => {
      const m = JSON.parse(String(data)) as Msg;
      this.inbox.push(m);
      for (const w of [...this.waiters]) {
        if (w.match(m)) {
          clearTimeout(w.timer);
          this.waiters = this.waiters.filter((x) => x !== w);
          w.resolve(m);
        }
      }
    });
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: String(reason) };
      for (const w of this.waiters) {
        clearTimeout(w.timer);
        w.reject(new Error(`socket closed ${code} ${String(reason)}`));
      }
      this.waiters = [];
    });
  }

  /**
   * Connects, sending `headers` with the upgrade request (an `X-Forwarded-For`, say), from
   * `localAddress` when given (any 127.x.y.z is this host).
   */
  static connect(
    url: string,
    headers: Record<string, string> = {},
    localAddress?: string,
  ): Promise<WsClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, {
        headers,
        ...(localAddress === undefined ? {} : { localAddress }),
      });
      ws.once('open', () => resolve(new WsClient(ws)));
      ws.once('error', reject);
    });
  }

  /** Waits for a message matching `match` (already received ones count). */
  waitFor(match: (m: Msg) => boolean, timeoutMs = 5_000): Promise<Msg> {
    const found = this.inbox.find(match);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((x) => x.timer !== timer);
        reject(
          new Error(
            `timed out waiting for a message; inbox: ${JSON.stringify(this.inbox.slice(-5))}`,
          ),
        );
      }, timeoutMs);
      this.waiters.push({ match, resolve, reject, timer });
    });
  }

  /** Sends a request with a fresh id and waits for its reply (ack or error). */
  async request(message: Record<string, unknown>, timeoutMs = 5_000): Promise<Msg> {
    const id = `r${++this.n}`;
    const reply = this.waitFor((m) => m.id === id, timeoutMs);
    this.ws.send(JSON.stringify({ ...message, id }));
    return reply;
  }

  /** Execution reports received so far (optionally of one kind). */
  reports(kind?: string): Msg[] {
    return this.inbox.filter(
      (m) => m.type === 'executionReport' && (kind === undefined || m.kind === kind),
    );
  }

  /** Closes the socket. */
  close(): Promise<void> {
    if (this.closed !== null) return Promise.resolve();
    return new Promise((resolve) => {
      this.ws.once('close', () => resolve());
      this.ws.close();
    });
  }
}

/** JSON over HTTP. */
export async function http(
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    ...(body === undefined
      ? {}
      : {
          body:
            typeof body === 'string'
              ? body
              : JSON.stringify(body, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)),
        }),
  });
  const text = await res.text();
  return {
    status: res.status,
    body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>),
    headers: res.headers,
  };
}

/** Anvil's well-known test keys (never use with real funds). */
export const KEYS = [
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
  '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
  '0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a',
] as const;

/** Micro-units of a human decimal amount with at most 6 decimals. */
function microOf(amount: string): bigint {
  const [whole = '0', fraction = ''] = amount.split('.');
  return BigInt(whole) * 1_000_000n + BigInt(`${fraction}000000`.slice(0, 6));
}

/**
 * Funds a wallet as an integrator would on the embedded chain: admin faucet, then a permit
 * deposit into cross margin; resolves once the account's withdrawable grew by `amount`.
 */
export async function fundWallet(
  rest: string,
  adminToken: string,
  net: NetworkInfo,
  w: Wallet,
  amount: string,
): Promise<void> {
  const f = await http(
    'POST',
    `${rest}/admin/faucet`,
    { wallet: w.address, amount },
    { authorization: `Bearer ${adminToken}` },
  );
  if (f.status !== 200) throw new Error(`faucet failed: ${JSON.stringify(f.body)}`);
  const token = await http('GET', `${rest}/chain/token/${w.address}`);
  const micro = microOf(amount);
  const permit = await w.sign('Permit', {
    spender: net.vault.address,
    value: micro,
    nonce: BigInt(token.body.nonce as string),
    deadline: Wallet.deadline(),
  });
  const deposit = await w.sign('Deposit', {
    amount: micro,
    market: 0,
    flags: 0,
    nonce: freshNonce(),
    deadline: Wallet.deadline(),
  });
  const withdrawable = async (): Promise<bigint> => {
    const s = await http('GET', `${rest}/account_summary?wallet=${w.address}`);
    return s.status === 200 ? microOf((s.body as { withdrawable: string }).withdrawable) : 0n;
  };
  const had = await withdrawable();
  const res = await http('POST', `${rest}/margin/deposit`, {
    amount,
    instrument: null,
    marginMode: 'Cross',
    permitSignature: permit,
    depositSignature: deposit,
  });
  if (res.status !== 200 || res.body.status !== 'Submitted')
    throw new Error(`deposit failed: ${res.status} ${JSON.stringify(res.body)}`);
  for (let i = 0; i < 500; i++) {
    if ((await withdrawable()) >= had + micro) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('deposit did not settle');
}
