/**
 * Authorisation edges of the money paths over real sockets, found unpinned by a mutation pass:
 * nonces are per wallet (two wallets may sign with the same `Date.now()`), a referral `x-nonce`
 * and a wallet nonce with the same digits do not spend each other, and every signed margin
 * write of an uninvited wallet is 403 `USER_NOT_INVITED:` having spent only its nonce.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../src/config.js';
import { freshNonce, Wallet, WsClient } from './support/client.js';
import { startTestVenue, type TestVenue, usd } from './support/fixture.js';

/** A deterministic private key beyond the fixture's five (never use with real funds). */
const key = (n: number): `0x${string}` => `0x${(0xabc000 + n).toString(16).padStart(64, '0')}`;

describe('money-path authorisation edges', () => {
  let t: TestVenue;
  beforeAll(async () => {
    t = await startTestVenue();
  });
  afterAll(async () => t.close());

  it('two wallets withdraw with the same nonce; the same wallet again is 400 replayed', async () => {
    const a = t.wallet(0);
    const b = t.wallet(1);
    for (const w of [a, b]) {
      await t.invite(w);
      await t.fund(w, '10');
    }
    const nonce = freshNonce();
    const body = async (w: Wallet) => ({
      amount: '1',
      instrument: null,
      marginMode: 'Cross',
      signature: await w.sign('Withdrawal', {
        amount: usd(1),
        market: 0,
        flags: 0,
        nonce,
        deadline: Wallet.deadline(),
      }),
    });
    const first = await t.api('POST', '/margin/withdrawal', await body(a));
    expect([first.status, first.body.status]).toEqual([200, 'Submitted']);
    const second = await t.api('POST', '/margin/withdrawal', await body(b));
    expect([second.status, second.body.status]).toEqual([200, 'Submitted']);
    const again = await t.api('POST', '/margin/withdrawal', await body(a));
    expect(again.status).toBe(400);
    expect(String(again.body.error)).toMatch(/^INVALID_NONCE: replayed/);
  });

  it('a referral x-nonce of digits does not spend the same wallet nonce, nor the other way', async () => {
    const c = t.wallet(2);
    const code = t.venue.inviteCode!;
    // Authenticate first (refused 4015: not invited yet, but its nonce is spent) ...
    const n = freshNonce();
    const ws = await WsClient.connect(t.venue.ws);
    const gated = await ws.request({ type: 'authenticate', signature: await c.authenticate(n) });
    expect(gated).toMatchObject({ type: 'error', code: 4015 });
    // ... then apply a code with the same digits as x-nonce: a different key space.
    const r = await c.referral(code, String(n));
    const applied = await t.api('POST', '/referral/apply', r.body, r.headers);
    expect(applied.status).toBe(201);
    // And a referral x-nonce first: the same digits still authenticate.
    const d = t.wallet(3);
    const m = freshNonce();
    const rd = await d.referral(code, String(m));
    expect((await t.api('POST', '/referral/apply', rd.body, rd.headers)).status).toBe(201);
    const ok = await ws.request({ type: 'authenticate', signature: await d.authenticate(m) });
    expect(ok).toMatchObject({ type: 'authenticateSuccess', account: d.address });
    await ws.close();
  });

  // Only the withdrawal's disagreements were pinned: dropping the direction, instrument or
  // leverage comparisons of the other writes left every test passing, and the engine would then
  // execute what the payload says while the body (what the user saw) said something else.
  it('transfer, leverage and deposit bodies that disagree with their payload: 400, nothing consumed', async () => {
    const f = t.wallet(4);
    await t.invite(f);
    await t.fund(f, '50');
    const deadline = Wallet.deadline();
    const transfer = {
      amount: '2',
      instrument: 'BTC-PERP',
      direction: 'crossToIsolated',
      signature: await f.sign('MarginTransfer', {
        amount: usd(2),
        market: 1,
        flags: 0,
        nonce: freshNonce(),
        deadline,
      }),
    };
    const leverage = {
      instrument: 'BTC-PERP',
      marginMode: 'Cross',
      leverage: 500,
      signature: await f.sign('UpdateLeverage', {
        market: 1,
        leverage: 500,
        flags: 0,
        nonce: freshNonce(),
        deadline,
      }),
    };
    const token = await t.api('GET', `/chain/token/${f.address}`);
    const deposit = {
      amount: '3',
      instrument: 'BTC-PERP',
      marginMode: 'Isolated',
      permitSignature: await f.sign('Permit', {
        spender: t.net.vault.address,
        value: usd(3),
        nonce: BigInt(token.body.nonce as string),
        deadline,
      }),
      depositSignature: await f.sign('Deposit', {
        amount: usd(3),
        market: 1,
        flags: 1,
        nonce: freshNonce(),
        deadline,
      }),
    };
    const cases: readonly (readonly [string, Record<string, unknown>, Record<string, unknown>])[] =
      [
        ['/margin/transfer', transfer, { direction: 'isolatedToCross' }],
        ['/margin/transfer', transfer, { instrument: 'ETH-PERP' }],
        ['/margin/transfer', transfer, { amount: '2.000001' }],
        ['/update_leverage', leverage, { leverage: 600 }],
        ['/update_leverage', leverage, { instrument: 'ETH-PERP' }],
        ['/update_leverage', leverage, { marginMode: 'Isolated' }],
        ['/margin/deposit', deposit, { instrument: 'ETH-PERP' }],
        ['/margin/deposit', deposit, { marginMode: 'Cross', instrument: null }],
        ['/margin/deposit', deposit, { amount: '2.999999' }],
      ];
    const before = await t.stateHash();
    for (const [path, body, change] of cases) {
      const r = await t.api('POST', path, { ...body, ...change });
      expect([path, change, r.status]).toEqual([path, change, 400]);
      const named = Object.keys(change).join('|');
      expect(String(r.body.error)).toMatch(new RegExp(`${named}|flags`));
    }
    expect(await t.stateHash()).toEqual(before);
    // None of them consumed a nonce: each untouched request goes through now.
    for (const body of [transfer, leverage]) {
      const path = body === transfer ? '/margin/transfer' : '/update_leverage';
      const r = await t.api('POST', path, body);
      expect([path, r.status, r.body.status]).toEqual([path, 200, 'Submitted']);
    }
    const d = await t.api('POST', '/margin/deposit', deposit);
    expect([d.status, d.body.status]).toEqual([200, 'Submitted']);
  });

  it('a withdrawal signed under any other domain (chain id, version, name, contract) is 400 INVALID_SIGNATURE and spends nothing', async () => {
    const g = t.wallet(key(5));
    await t.invite(g);
    await t.fund(g, '20');
    const vault = {
      name: t.net.vault.name,
      version: t.net.vault.version,
      chainId: t.net.chainId,
      verifyingContract: t.net.vault.address as `0x${string}`,
    };
    expect(vault.chainId).toBe(10143);
    const fields = {
      amount: usd(1),
      market: 0,
      flags: 0,
      nonce: freshNonce(),
      deadline: Wallet.deadline(),
    };
    const send = async (domain: typeof vault) =>
      t.api('POST', '/margin/withdrawal', {
        amount: '1',
        instrument: null,
        marginMode: 'Cross',
        signature: await g.sign('Withdrawal', fields, { domain }),
      });
    const before = await t.stateHash();
    for (const domain of [
      { ...vault, chainId: 143 },
      { ...vault, chainId: 1 },
      { ...vault, version: '2' },
      { ...vault, name: t.net.token.name },
      { ...vault, verifyingContract: t.net.token.address as `0x${string}` },
    ]) {
      const r = await send(domain);
      expect(r.status).toBe(400);
      expect(String(r.body.error)).toMatch(
        new RegExp(`^INVALID_SIGNATURE: signer 0x[0-9a-f]{40} does not match owner ${g.address}`),
      );
      expect(String(r.body.error)).toMatch(/check the domain, chain id/);
    }
    expect(await t.stateHash()).toEqual(before);
    // The same nonce under the venue's own domain is accepted: nothing above consumed it.
    const ok = await send(vault);
    expect([ok.status, ok.body.status]).toEqual([200, 'Submitted']);
  });

  /**
   * A funded wallet with 5 in its token balance and a signed cross deposit of 5: `body` puts a
   * permit signature beside it, `permitFields` are a good permit's, and `refusedLeavesAll` checks
   * that a refusal moved neither the venue's state nor the token's balance and nonce.
   */
  async function depositOfFive(n: number) {
    const h = t.wallet(key(n));
    await t.invite(h);
    await t.fund(h, '20');
    await t.admin('POST', '/admin/faucet', { wallet: h.address, amount: '5' });
    const chainBefore = (await t.api('GET', `/chain/token/${h.address}`)).body;
    const deadline = Wallet.deadline();
    const permitFields = {
      spender: t.net.vault.address,
      value: usd(5),
      nonce: BigInt(chainBefore.nonce as string),
      deadline,
    };
    const depositSignature = await h.sign('Deposit', {
      amount: usd(5),
      market: 0,
      flags: 0,
      nonce: freshNonce(),
      deadline,
    });
    const body = (permitSignature: unknown) => ({
      amount: '5',
      instrument: null,
      marginMode: 'Cross',
      permitSignature,
      depositSignature,
    });
    const before = await t.stateHash();
    const refusedLeavesAll = async () => {
      expect(await t.stateHash()).toEqual(before);
      expect((await t.api('GET', `/chain/token/${h.address}`)).body).toEqual(chainBefore);
    };
    return { h, permitFields, body, refusedLeavesAll };
  }

  it('a deposit whose permit is signed under the vault domain is refused and spends neither nonce', async () => {
    const { h, permitFields, body, refusedLeavesAll } = await depositOfFive(6);
    const wrong = await h.sign('Permit', permitFields, {
      domain: {
        name: t.net.vault.name,
        version: t.net.vault.version,
        chainId: t.net.chainId,
        verifyingContract: t.net.vault.address as `0x${string}`,
      },
    });
    const r = await t.api('POST', '/margin/deposit', body(wrong));
    expect(r.status).toBe(400);
    expect(String(r.body.error)).toMatch(
      /^permit: INVALID_SIGNATURE: signer 0x[0-9a-f]{40} does not match owner/,
    );
    await refusedLeavesAll();
    const good = await t.api('POST', '/margin/deposit', body(await h.sign('Permit', permitFields)));
    expect([good.status, good.body.status]).toEqual([200, 'Submitted']);
  });

  it('a deposit whose permit has expired is 400 INVALID_NONCE (4002) and spends neither nonce', async () => {
    const { h, permitFields, body, refusedLeavesAll } = await depositOfFive(10);
    const expired = await h.sign('Permit', { ...permitFields, deadline: 1n });
    const r = await t.api('POST', '/margin/deposit', body(expired));
    expect(r.status).toBe(400);
    expect(String(r.body.error)).toMatch(/^INVALID_NONCE: permit deadline passed: 1 s/);
    await refusedLeavesAll();
    const good = await t.api('POST', '/margin/deposit', body(await h.sign('Permit', permitFields)));
    expect([good.status, good.body.status]).toEqual([200, 'Submitted']);
  });

  it("a permit signature that is missing or malformed is 400 before any recovery, and costs the wallet's rate nothing", async () => {
    const { h, permitFields, body, refusedLeavesAll } = await depositOfFive(11);
    const good = await h.sign('Permit', permitFields);
    const missing = await t.api('POST', '/margin/deposit', body({ payload: good.payload }));
    expect(missing).toMatchObject({
      status: 400,
      body: { error: 'INVALID_REQUEST: permitSignature.sig must be a 0x-prefixed hex string' },
    });
    const short = await t.api(
      'POST',
      '/margin/deposit',
      body({ payload: good.payload, sig: good.sig.slice(0, 130) }),
    );
    expect(short).toMatchObject({
      status: 400,
      body: {
        error: 'permit: INVALID_SIGNATURE: signature must be 65 bytes (r || s || v), got 64',
      },
    });
    // Malformed input is refused before the wallet's 20 per second is counted: more of them than
    // the limit, then the good deposit, all within one second.
    const limit = DEFAULT_CONFIG.limits.walletRequestsPerSecond;
    const refused = await Promise.all(
      Array.from({ length: limit + 5 }, () =>
        t.api('POST', '/margin/deposit', body({ payload: good.payload })),
      ),
    );
    expect(refused.map((r) => r.status)).toEqual(refused.map(() => 400));
    await refusedLeavesAll();
    const ok = await t.api('POST', '/margin/deposit', body(good));
    expect([ok.status, ok.body.status]).toEqual([200, 'Submitted']);
    // The burst also used most of this address's budget (100 a second): let its window pass, so
    // the next tests start with a full one.
    await new Promise((r) => setTimeout(r, 1_100));
  });

  // Found by mutation: sending every answered withdrawal to the chain desk, Rejected ones
  // included, passed every test; the simulated chain would then pay out what the engine refused.
  it('a withdrawal Rejected for margin pays nothing out on chain; a Submitted one pays exactly its amount', async () => {
    const k = t.wallet(key(7));
    await t.invite(k);
    await t.fund(k, '20');
    // Another wallet's collateral in the vault, so the vault could pay the refused amount.
    const other = t.wallet(key(8));
    await t.invite(other);
    await t.fund(other, '50');
    const balance = async () => {
      const text = (await t.api('GET', `/chain/token/${k.address}`)).body.balance as string;
      const [whole = '0', fraction = ''] = text.split('.');
      return BigInt(whole) * 1_000_000n + BigInt(fraction.padEnd(6, '0'));
    };
    const had = await balance();
    const refused = await t.withdraw(k, '20.5');
    expect(refused.status).toBe(200);
    expect(refused.body).toMatchObject({ status: 'Rejected', code: 4100 });
    expect(typeof refused.body.command_id).toBe('number');
    const accepted = await t.withdraw(k, '7');
    expect(accepted.body.status).toBe('Submitted');
    for (let i = 0; i < 200 && (await balance()) === had; i++)
      await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 100));
    expect((await balance()) - had).toBe(usd(7));
    const summary = await t.api('GET', `/account_summary?wallet=${k.address}`);
    expect(summary.body.withdrawable).toBe('13');
  });

  // Found by mutation: a zero amount on the admin money routes was not pinned (it reached the
  // simulated chain, which throws, or the engine).
  it('admin faucet, insurance transfer and fee payout refuse a zero or over-precise amount with 400', async () => {
    const w = t.wallet(key(9));
    const before = (await t.api('GET', `/chain/token/${w.address}`)).body;
    const hash = await t.stateHash();
    for (const amount of ['0', '0.0', '0.0000001', '-1']) {
      for (const [path, body] of [
        ['/admin/faucet', { wallet: w.address, amount }],
        ['/admin/insurance-fund/transfer', { direction: 'ToFeePool', amount }],
        ['/admin/fee-pool/payout', { wallet: w.address, amount }],
      ] as const) {
        const r = await t.admin('POST', path, body);
        expect([path, amount, r.status]).toEqual([path, amount, 400]);
        expect(String(r.body.error)).toMatch(/amount must be a positive decimal/);
      }
    }
    expect((await t.api('GET', `/chain/token/${w.address}`)).body).toEqual(before);
    expect(await t.stateHash()).toEqual(hash);
  });

  it('the faucet refuses the vault and the token contract with 400, minting nothing', async () => {
    const hash = await t.stateHash();
    for (const contract of [DEFAULT_CONFIG.vault.address, DEFAULT_CONFIG.token.address]) {
      const before = (await t.api('GET', `/chain/token/${contract}`)).body;
      const r = await t.admin('POST', '/admin/faucet', { wallet: contract, amount: '10' });
      expect([r.status, r.body.error]).toEqual([
        400,
        'faucet: the vault and the token contract are not wallets',
      ]);
      expect((await t.api('GET', `/chain/token/${contract}`)).body).toEqual(before);
    }
    expect(await t.stateHash()).toEqual(hash);
  });

  it('transfer and leverage of an uninvited wallet: 403 USER_NOT_INVITED, nonce spent, no account', async () => {
    const e = t.wallet('0x4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c');
    const transfer = {
      amount: '1',
      instrument: 'BTC-PERP',
      direction: 'crossToIsolated',
      signature: await e.sign('MarginTransfer', {
        amount: usd(1),
        market: 1,
        flags: 0,
        nonce: freshNonce(),
        deadline: Wallet.deadline(),
      }),
    };
    const leverage = {
      instrument: 'BTC-PERP',
      marginMode: 'Cross',
      leverage: 500,
      signature: await e.sign('UpdateLeverage', {
        market: 1,
        leverage: 500,
        flags: 0,
        nonce: freshNonce(),
        deadline: Wallet.deadline(),
      }),
    };
    for (const [path, body] of [
      ['/margin/transfer', transfer],
      ['/update_leverage', leverage],
    ] as const) {
      const before = await t.stateHash();
      const r = await t.api('POST', path, body);
      expect([path, r.status]).toEqual([path, 403]);
      expect(String(r.body.error)).toMatch(/^USER_NOT_INVITED:/);
      // Only the nonce was recorded: one journaled command, and a resend is a replay.
      expect((await t.stateHash()).seq).toBe(before.seq + 1);
      const replay = await t.api('POST', path, body);
      expect(replay.status).toBe(400);
      expect(String(replay.body.error)).toMatch(/^INVALID_NONCE: replayed/);
    }
    expect((await t.api('GET', `/account_summary?wallet=${e.address}`)).status).toBe(404);
  });
});
