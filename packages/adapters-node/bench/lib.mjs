// Shared pieces of the service benchmarks (ws-orders.mjs, md-fanout.mjs): a wallet that signs
// like an integrator would (viem; payloads built with viem's ABI encoder from the protocol's
// struct list, shapes copied from test/support/client.ts), wallet onboarding over the public
// surface, the venue under test, the noble recovery anchor and small statistics helpers.
//
// Everything here imports built JavaScript only: the venue from ../dist, @perp/core from its
// dist (through the workspace link), viem and ws from this package's dependencies.

import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { encodeAbiParameters, keccak256, stringToHex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';

// ---- signed structs (protocol.md section 2) ---------------------------------------------

const TAIL = [
  ['nonce', 'uint64'],
  ['deadline', 'uint64'],
];
const MONEY = [
  ['owner', 'address'],
  ['amount', 'uint256'],
  ['market', 'uint32'],
  ['flags', 'uint32'],
  ...TAIL,
];

/** The structs the benchmarks sign, by EIP-712 type name. */
export const STRUCT_SPECS = {
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
      ...TAIL,
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
  Deposit: { discriminator: 0x07, domain: 'vault', fields: MONEY },
};

/** `discriminator || ABI words`. */
export function encodeStruct(discriminator, fields, values) {
  const words = encodeAbiParameters(
    fields.map(([name, type]) => ({ name, type })),
    fields.map(([name, type]) => {
      const v = values[name];
      if (v === undefined) throw new Error(`missing field ${name}`);
      return type.startsWith('uint') && typeof v === 'number' ? BigInt(v) : v;
    }),
  );
  return `0x${discriminator.toString(16).padStart(2, '0')}${words.slice(2)}`;
}

function sortedJson(value) {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(',')}]`;
  const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${sortedJson(v)}`).join(',')}}`;
}

/** Deterministic private key of bench wallet `i` (never a real wallet). */
export function benchKey(i, salt = 'perp-bench') {
  return keccak256(stringToHex(`${salt}-wallet-${i}`));
}

let nonceClock = Date.now();
/** A fresh millisecond nonce, strictly increasing within the process. */
export function freshNonce() {
  nonceClock = Math.max(nonceClock + 1, Date.now());
  return BigInt(nonceClock);
}

/** Reserves `n` consecutive nonces and returns the first. */
export function reserveNonces(n) {
  const first = freshNonce();
  nonceClock += n;
  return first;
}

/** Deadline in seconds, `ahead` seconds from now (the venue accepts at most one hour). */
export const deadline = (ahead = 900) => BigInt(Math.floor(Date.now() / 1000) + ahead);

/** A wallet that signs through viem. */
export class Wallet {
  constructor(privateKey, net) {
    this.account = privateKeyToAccount(privateKey);
    this.address = this.account.address.toLowerCase();
    this.net = net;
  }

  domain(kind) {
    const d = kind === 'token' ? this.net.token : this.net.vault;
    return {
      name: d.name,
      version: d.version,
      chainId: this.net.chainId,
      verifyingContract: d.address,
    };
  }

  /** EIP-712 signature object `{sig, payload}` of a struct. */
  async sign(name, values) {
    const spec = STRUCT_SPECS[name];
    const message = { ...values };
    const owner = spec.fields[0][0];
    if (message[owner] === undefined) message[owner] = this.address;
    for (const [field, type] of spec.fields) {
      if (type.startsWith('uint') && typeof message[field] === 'number')
        message[field] = BigInt(message[field]);
    }
    const payload = encodeStruct(spec.discriminator, spec.fields, message);
    const sig = await this.account.signTypedData({
      domain: this.domain(spec.domain),
      types: { [name]: spec.fields.map(([n, t]) => ({ name: n, type: t })) },
      primaryType: name,
      message,
    });
    return { sig, payload };
  }

  /** The `authenticate` signature object (EIP-191 over `<address>:<nonce>`). */
  async authenticate(nonce = freshNonce()) {
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
  async referral(code, nonce = `bench${freshNonce()}`, timestamp = Date.now()) {
    const body = { walletAddress: this.address, code };
    const message = sortedJson({
      body,
      method: 'POST',
      nonce,
      path: '/referral/apply',
      timestamp,
      walletAddress: this.address,
    });
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
}

// ---- HTTP ----------------------------------------------------------------------------------

/** JSON over HTTP; throws on a status other than `expect`. */
export async function http(method, url, { body, headers = {}, expect = 200 } = {}) {
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
  const parsed = text === '' ? {} : JSON.parse(text);
  if (expect !== undefined && res.status !== expect)
    throw new Error(`${method} ${url}: HTTP ${res.status} ${text.slice(0, 300)}`);
  return parsed;
}

/** Applies the invite code for a wallet (signed `POST /referral/apply`, 201). */
export async function invite(w, { rest, inviteCode }) {
  const r = await w.referral(inviteCode);
  await http('POST', `${rest}/referral/apply`, { body: r.body, headers: r.headers, expect: 201 });
}

/**
 * Funds a wallet the way a user would: test tokens from the admin faucet, the token nonce from
 * `/chain/token`, then a cross-margin deposit with an ERC-2612 permit plus the vault's Deposit
 * authorisation. Returns the command id once accepted; settlement comes later as a
 * `DepositMargin` execution report.
 */
export async function fund(w, { rest, adminToken, amount }) {
  await http('POST', `${rest}/admin/faucet`, {
    body: { wallet: w.address, amount },
    headers: { authorization: `Bearer ${adminToken}` },
  });
  const token = await http('GET', `${rest}/chain/token/${w.address}`);
  const micro = BigInt(amount) * 1_000_000n;
  const permit = await w.sign('Permit', {
    spender: w.net.vault.address,
    value: micro,
    nonce: BigInt(token.nonce),
    deadline: deadline(),
  });
  const deposit = await w.sign('Deposit', {
    amount: micro,
    market: 0,
    flags: 0,
    nonce: freshNonce(),
    deadline: deadline(),
  });
  const res = await http('POST', `${rest}/margin/deposit`, {
    body: {
      amount,
      instrument: null,
      marginMode: 'Cross',
      permitSignature: permit,
      depositSignature: deposit,
    },
  });
  if (res.status !== 'Submitted')
    throw new Error(`deposit for ${w.address} not submitted: ${JSON.stringify(res)}`);
  return res.command_id;
}

// ---- the venue under test -----------------------------------------------------------------

const here = fileURLToPath(new URL('.', import.meta.url));
const distUrl = pathToFileURL(`${here}../dist/index.js`).href;

/**
 * Starts a venue in this process: `--price-feed none`, memory journal or a data directory
 * (on-disk journal, fdatasync before every acknowledgement), an oracle price for the markets.
 *
 * `liftWalletLimits` replaces the per-wallet rate limiter (20 requests/s, 3,000 signed per
 * 5 minutes) with one that never refuses: those limits are per wallet by design, so with a
 * handful of wallets they, not the server, would set the rate. `connectionsPerIp` raises the
 * trading socket's per-IP cap for many wallets on one loopback address.
 */
export async function startBenchVenue({
  dataDir = null,
  liftWalletLimits = true,
  connectionsPerIp = 30,
  prices = { 'BTC-PERP': '65000', 'ETH-PERP': '3000', 'SOL-PERP': '150' },
} = {}) {
  const { startVenue, DEFAULT_CONFIG } = await import(distUrl);
  const core = await import('@perp/core');
  const config = {
    ...DEFAULT_CONFIG,
    limits: {
      ...DEFAULT_CONFIG.limits,
      connectionsPerIp: Math.max(connectionsPerIp, DEFAULT_CONFIG.limits.connectionsPerIp),
      // The order mix rests 60 % of its orders and never cancels: a long run would reach the
      // per-account cap and measure its refusals instead of the flow it always measured.
      maxWorkingOrdersPerAccount: Number.MAX_SAFE_INTEGER,
    },
  };
  const venue = await startVenue({ config, dataDir, port: 0, priceFeed: 'none', log: () => {} });
  if (liftWalletLimits) {
    // The limiter keeps a ring of `perWindow` timestamps per wallet: keep it finite.
    venue.context.walletLimiter = new core.RateLimiter({
      ...core.WALLET_LIMITS,
      perWindow: 1_000_000,
      sustained: 100_000_000,
    });
  }
  await http('POST', `${venue.rest}/admin/oracle`, {
    body: { prices },
    headers: { authorization: `Bearer ${venue.adminToken}` },
  });
  const net = await http('GET', `${venue.rest}/network`);
  return { venue, net };
}

// ---- the raw anchor: noble secp256k1 recovery ------------------------------------------------

/** The @noble/curves copy the engine itself links (a dependency of @perp/core, not of this package). */
async function engineNoble() {
  const coreEntry = fileURLToPath(import.meta.resolve('@perp/core'));
  const req = createRequire(coreEntry);
  const curvesPath = req.resolve('@noble/curves/secp256k1.js');
  const curves = await import(pathToFileURL(curvesPath).href);
  const hashes = await import(pathToFileURL(req.resolve('@noble/hashes/sha3.js')).href);
  // secp256k1.js sits at the package root (its package.json is not exported).
  const version = JSON.parse(
    readFileSync(join(dirname(curvesPath), 'package.json'), 'utf8'),
  ).version;
  return { secp256k1: curves.secp256k1, keccak_256: hashes.keccak_256, version };
}

/**
 * Single-thread `secp256k1.recoverPublicKey` per second (research performance-anchors 5, M7):
 * 256 distinct keys, 32-byte digests, 65-byte recovered signatures, cycled; `rounds` windows of
 * `windowMs` after a warm-up; returns the median and the rounds.
 */
export async function nobleRecoverAnchor({ windowMs = 1000, rounds = 3, warmupMs = 300 } = {}) {
  const { secp256k1, keccak_256, version } = await engineNoble();
  const cases = [];
  for (let i = 0; i < 256; i++) {
    const sk = keccak_256(new TextEncoder().encode(`anchor-key-${i}`));
    const digest = keccak_256(new TextEncoder().encode(`anchor-message-${i}`));
    cases.push({
      digest,
      sig: secp256k1.sign(digest, sk, { prehash: false, format: 'recovered' }),
    });
  }
  let sink = 0;
  const window = (ms) => {
    let n = 0;
    let i = 0;
    const start = performance.now();
    let now = start;
    while (now < start + ms) {
      for (let k = 0; k < 8; k++) {
        const c = cases[i];
        sink += secp256k1.recoverPublicKey(c.sig, c.digest, { prehash: false }).length;
        i = (i + 1) & 255;
      }
      n += 8;
      now = performance.now();
    }
    return (n * 1000) / (now - start);
  };
  window(warmupMs);
  const rates = [];
  for (let r = 0; r < rounds; r++) rates.push(window(windowMs));
  if (sink === 0) console.log('(sink)');
  return { perSecond: median(rates), rounds: rates, nobleVersion: version };
}

// ---- statistics ---------------------------------------------------------------------------

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[s.length >> 1];
};

/** Nearest-rank percentile of a sorted array. */
export function percentile(sorted, p) {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export const fmt = (x, digits = 0) =>
  Number.isFinite(x)
    ? x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
    : String(x);

/** Parses `--name value` / `--flag` arguments against defaults (numbers stay numbers). */
export function parseArgs(argv, defaults) {
  const out = { ...defaults };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    const key = a.slice(2).replace(/-([a-z])/g, (_m, c) => c.toUpperCase());
    if (!(key in defaults))
      throw new Error(`unknown option ${a}; options: ${Object.keys(defaults).join(', ')}`);
    if (typeof defaults[key] === 'boolean') out[key] = true;
    else {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      out[key] = typeof defaults[key] === 'number' ? Number(v) : v;
    }
  }
  return out;
}

/** CPU time (user + system, ms) and event-loop utilisation of this process since `mark()`. */
export function processMeter() {
  let cpu = process.cpuUsage();
  let elu = performance.eventLoopUtilization();
  let wall = performance.now();
  return {
    mark() {
      cpu = process.cpuUsage();
      elu = performance.eventLoopUtilization();
      wall = performance.now();
    },
    read() {
      const c = process.cpuUsage(cpu);
      const ms = performance.now() - wall;
      return {
        wallMs: ms,
        cpuMs: (c.user + c.system) / 1000,
        cpuShare: (c.user + c.system) / 1000 / ms,
        elu: performance.eventLoopUtilization(elu).utilization,
      };
    },
  };
}

/** Deterministic PRNG (mulberry32). */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Loopback source address number `i` (127.0.0.2, ...): Linux routes all of 127/8 to lo. */
export function loopbackAddress(i) {
  return `127.0.${1 + Math.floor(i / 250)}.${(i % 250) + 2}`;
}

/**
 * Forks a benchmark child (IPC). `next(type)` resolves with the child's next message of that
 * type; a `fatal` message or a failed exit ends this process with the child's error.
 */
export function startChild(path, label) {
  const child = fork(path, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waiting = new Map();
  const listeners = new Set();
  child.on('message', (m) => {
    if (m.type === 'fatal') {
      console.error(`${label} failed: ${m.message}`);
      process.exit(1);
    }
    for (const l of listeners) l(m);
    const w = waiting.get(m.type);
    if (w !== undefined) {
      waiting.delete(m.type);
      w(m);
    }
  });
  let exiting = false;
  child.on('exit', (code) => {
    if (!exiting && code !== 0) {
      console.error(`${label} exited with ${code}`);
      process.exit(1);
    }
  });
  return {
    child,
    next: (type) => new Promise((resolve) => waiting.set(type, resolve)),
    on: (l) => listeners.add(l),
    send: (m) => child.send(m),
    /** Asks the child to exit and waits for it. */
    async exit() {
      exiting = true;
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send({ type: 'exit' });
      await exited;
    },
  };
}
