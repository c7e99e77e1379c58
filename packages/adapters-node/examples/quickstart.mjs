// Quickstart: one wallet gets access and collateral, then places, amends and cancels an order,
// changes its leverage, moves and withdraws margin, and reads its order history, using only viem
// and ws.
// Run a venue first (`pnpm start`), then:
//   node packages/adapters-node/examples/quickstart.mjs http://127.0.0.1:8080/api <adminToken> <inviteCode>
import { encodeAbiParameters } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import WebSocket from 'ws';

const [rest = 'http://127.0.0.1:8080/api', adminToken, inviteCode] = process.argv.slice(2);
if (adminToken === undefined || inviteCode === undefined) {
  console.error('usage: quickstart.mjs <rest url> <admin token> <invite code>');
  process.exit(2);
}
const ws = rest.replace(/^http/, 'ws').replace(/\/api$/, '/ws');

const call = async (method, path, body, headers = {}) => {
  const res = await fetch(`${rest}${path}`, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const json = await res.json();
  if (res.status >= 300)
    throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
};

// Signed structs: `payload = discriminator byte || ABI words`, signed as EIP-712 typed data.
const STRUCTS = {
  Order: [
    0x01,
    'vault',
    [
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
      ['nonce', 'uint64'],
      ['deadline', 'uint64'],
    ],
  ],
  Cancel: [
    0x02,
    'vault',
    [
      ['account', 'address'],
      ['market', 'uint32'],
      ['orderId', 'uint64'],
      ['cloid', 'bytes16'],
      ['nonce', 'uint64'],
      ['deadline', 'uint64'],
    ],
  ],
  Permit: [
    0x05,
    'token',
    [
      ['owner', 'address'],
      ['spender', 'address'],
      ['value', 'uint256'],
      ['nonce', 'uint256'],
      ['deadline', 'uint256'],
    ],
  ],
  Replace: [
    0x06,
    'vault',
    [
      ['account', 'address'],
      ['market', 'uint32'],
      ['orderId', 'uint64'],
      ['origCloid', 'bytes16'],
      ['price', 'uint256'],
      ['triggerPrice', 'uint256'],
      ['quantity', 'uint256'],
      ['cloid', 'bytes16'],
      ['nonce', 'uint64'],
      ['deadline', 'uint64'],
    ],
  ],
  Deposit: [
    0x07,
    'vault',
    [
      ['owner', 'address'],
      ['amount', 'uint256'],
      ['market', 'uint32'],
      ['flags', 'uint32'],
      ['nonce', 'uint64'],
      ['deadline', 'uint64'],
    ],
  ],
  // The rest of the table in docs/getting-started.md section 3, for the requests of 3.3-3.6 and
  // auction claims.
  Withdrawal: [
    0x03,
    'vault',
    [
      ['owner', 'address'],
      ['amount', 'uint256'],
      ['market', 'uint32'],
      ['flags', 'uint32'],
      ['nonce', 'uint64'],
      ['deadline', 'uint64'],
    ],
  ],
  UpdateLeverage: [
    0x04,
    'vault',
    [
      ['account', 'address'],
      ['market', 'uint32'],
      ['leverage', 'uint32'],
      ['flags', 'uint32'],
      ['nonce', 'uint64'],
      ['deadline', 'uint64'],
    ],
  ],
  MarginTransfer: [
    0x08,
    'vault',
    [
      ['owner', 'address'],
      ['amount', 'uint256'],
      ['market', 'uint32'],
      ['flags', 'uint32'],
      ['nonce', 'uint64'],
      ['deadline', 'uint64'],
    ],
  ],
  CancelAll: [
    0x0a,
    'vault',
    [
      ['account', 'address'],
      ['market', 'uint32'],
      ['nonce', 'uint64'],
      ['deadline', 'uint64'],
    ],
  ],
  ClaimLiquidation: [
    0x0b,
    'vault',
    [
      ['account', 'address'],
      ['auctionId', 'uint64'],
      ['quantity', 'uint256'],
      ['maxPrice', 'uint256'],
      ['nonce', 'uint64'],
      ['deadline', 'uint64'],
    ],
  ],
};
const net = await call('GET', '/network');
const domains = {
  vault: {
    name: net.vault.name,
    version: '1',
    chainId: net.chainId,
    verifyingContract: net.vault.address,
  },
  token: {
    name: net.token.name,
    version: net.token.version,
    chainId: net.chainId,
    verifyingContract: net.token.address,
  },
};
const account = privateKeyToAccount(generatePrivateKey());
const wallet = account.address.toLowerCase();
let lastNonce = 0;
const nonce = () => {
  lastNonce = Math.max(lastNonce + 1, Date.now());
  return BigInt(lastNonce);
};
const deadline = () => BigInt(Math.floor(Date.now() / 1000) + 60);

async function sign(name, message) {
  const [discriminator, domain, fields] = STRUCTS[name];
  const words = encodeAbiParameters(
    fields.map(([n, type]) => ({ name: n, type })),
    fields.map(([n]) => message[n]),
  );
  const payload = `0x${discriminator.toString(16).padStart(2, '0')}${words.slice(2)}`;
  const types = { [name]: fields.map(([n, type]) => ({ name: n, type })) };
  const sig = await account.signTypedData({
    domain: domains[domain],
    types,
    primaryType: name,
    message,
  });
  return { sig, payload };
}

// 1. Invite code: personal_sign over canonical JSON (keys sorted, no whitespace).
const body = { code: inviteCode, walletAddress: wallet };
const referral = { nonce: `qs${Date.now()}`, timestamp: Date.now() };
const signed = JSON.stringify({
  body,
  method: 'POST',
  nonce: referral.nonce,
  path: '/referral/apply',
  timestamp: referral.timestamp,
  walletAddress: wallet,
});
const access = await call('POST', '/referral/apply', JSON.stringify(body), {
  'x-signature': await account.signMessage({ message: signed }),
  'x-timestamp': String(referral.timestamp),
  'x-nonce': referral.nonce,
});
console.log('access', access);

// 2. Test collateral from the simulated chain, then a permit deposit of 1,000.
await call(
  'POST',
  '/admin/faucet',
  { wallet, amount: '1000' },
  { authorization: `Bearer ${adminToken}` },
);
const token = await call('GET', `/chain/token/${wallet}`);
const amount = 1_000_000_000n; // 1,000 with 6 decimals
const permitSignature = await sign('Permit', {
  owner: wallet,
  spender: net.vault.address,
  value: amount,
  nonce: BigInt(token.nonce),
  deadline: deadline(),
});
const depositSignature = await sign('Deposit', {
  owner: wallet,
  amount,
  market: 0,
  flags: 0,
  nonce: nonce(),
  deadline: deadline(),
});
console.log(
  'deposit',
  await call('POST', '/margin/deposit', {
    amount: '1000',
    instrument: null,
    marginMode: 'Cross',
    permitSignature,
    depositSignature,
  }),
);

// 3. Trading socket: authenticate, stream reports, place a resting buy 0.001 BTC at 60,000.
const socket = new WebSocket(ws);
await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
const replies = new Map();
const reports = [];
socket.on('message', (data) => {
  const m = JSON.parse(String(data));
  if (m.id !== undefined) replies.get(m.id)?.(m);
  if (m.type === 'executionReport') reports.push(m);
});
let nextId = 0;
const request = (message) =>
  new Promise((resolve) => {
    const id = `q${++nextId}`;
    replies.set(id, resolve);
    socket.send(JSON.stringify({ ...message, id }));
  });
const authNonce = nonce();
const authPayload = `0x09${encodeAbiParameters([{ type: 'address' }, { type: 'uint64' }, { type: 'uint64' }], [wallet, authNonce, 0n]).slice(2)}`;
console.log(
  await request({
    type: 'authenticate',
    signature: {
      sig: await account.signMessage({ message: `${wallet}:${authNonce}` }),
      payload: authPayload,
    },
  }),
);
// fromSeq 0 replays every report of the account so far (the deposit), then streams live ones.
console.log(await request({ type: 'subscribeTrading', fromSeq: 0 }));
// The account summary now; later pushes (no id) come on fills and settlements, not on orders.
const summaryNow = await request({ type: 'subscribeAccountSummary' });
console.log(
  'summary',
  summaryNow.type,
  'accountValue',
  summaryNow.crossMarginSummary?.accountValue,
);
const zero16 = `0x${'0'.repeat(32)}`;
const order = await sign('Order', {
  account: wallet,
  market: 1,
  isBuy: true,
  orderType: 0,
  timeInForce: 0,
  price: 60_000n * 10n ** 18n,
  triggerPrice: 0n,
  quantity: 10n /* 0.001 BTC, 4 decimals */,
  flags: 0,
  expiry: 0n,
  cloid: zero16,
  parentCloid: zero16,
  nonce: nonce(),
  deadline: deadline(),
});
const ack = await request({ type: 'placeOrder', signature: order });
console.log('order', ack.type, ack.order?.ordStatus, ack.order?.orderId);

// 4. Amend the order to 59,000 (the orderId stays), then cancel it; both target it by orderId.
const orderId = BigInt(ack.order.orderId);
const replace = await sign('Replace', {
  account: wallet,
  market: 1,
  orderId,
  origCloid: zero16,
  price: 59_000n * 10n ** 18n,
  triggerPrice: 0n,
  quantity: 10n /* the new total quantity */,
  cloid: zero16,
  nonce: nonce(),
  deadline: deadline(),
});
const replaced = await request({ type: 'replaceOrder', signature: replace });
console.log('replace', replaced.type, replaced.order?.price, replaced.order?.orderId);
const cancel = await sign('Cancel', {
  account: wallet,
  market: 1,
  orderId,
  cloid: zero16,
  nonce: nonce(),
  deadline: deadline(),
});
const cancelled = await request({ type: 'cancelOrder', signature: cancel });
console.log('cancel', cancelled.type, cancelled.order?.ordStatus, cancelled.order?.orderId);

// 5. Margin over REST: 5x cross leverage on BTC-PERP, 20 into its isolated pool, 10 out of the
// cross pool. Each answers {command_id, status: "Submitted"}; a report follows on the socket.
const leverage = await sign('UpdateLeverage', {
  account: wallet,
  market: 1,
  leverage: 500,
  flags: 0 /* bit 0: 0 Cross, 1 Isolated */,
  nonce: nonce(),
  deadline: deadline(),
});
console.log(
  'leverage',
  await call('POST', '/update_leverage', {
    leverage: 500,
    instrument: 'BTC-PERP',
    marginMode: 'Cross',
    signature: leverage,
  }),
);
const transfer = await sign('MarginTransfer', {
  owner: wallet,
  amount: 20_000_000n,
  market: 1,
  flags: 0 /* bit 0: 0 crossToIsolated, 1 isolatedToCross */,
  nonce: nonce(),
  deadline: deadline(),
});
console.log(
  'transfer',
  await call('POST', '/margin/transfer', {
    amount: '20',
    instrument: 'BTC-PERP',
    direction: 'crossToIsolated',
    signature: transfer,
  }),
);
const withdrawal = await sign('Withdrawal', {
  owner: wallet,
  amount: 10_000_000n,
  market: 0,
  flags: 0,
  nonce: nonce(),
  deadline: deadline(),
});
console.log(
  'withdrawal',
  await call('POST', '/margin/withdrawal', {
    amount: '10',
    instrument: null,
    marginMode: 'Cross',
    signature: withdrawal,
  }),
);

// 6. Order history, newest first; a non-null nextCursor means more pages (pass it as `cursor`).
const history = await call('GET', `/historic/orders?wallet=${wallet}&limit=10`);
console.log(
  'history',
  history.orders.map((o) => `${o.orderId} ${o.ordStatus} ${o.price}`).join(','),
  'nextCursor',
  history.nextCursor,
);
const summary = await call('GET', `/account_summary?wallet=${wallet}`);
console.log('withdrawable', summary.withdrawable, 'reports', reports.map((r) => r.kind).join(','));
socket.close();
