/**
 * Signed requests from both transports, in the check order of reliability-anchors 2.8: decode
 * (4000), field checks that need no signature (4030-4034, body agreement), one signature
 * recovery (4001, 4004), a read-only look at the deadline and nonce (4002, 4000), per-wallet
 * rate accounting (4029/4035), then the engine with the wallet's requests strictly one at a
 * time. Transports only map the result to wire form. The look at the nonce comes before the rate
 * accounting because anyone holding an old signed message (a withdrawal relayed on chain, say)
 * can resend it: a stale or replayed request must not spend its wallet's budget.
 *
 * The recovery starts as soon as the cheap checks pass, on the {@link SignatureRecovery} (a
 * worker pool): requests of different wallets, and the queued requests of one wallet, verify in
 * parallel. Only the answer is awaited inside the wallet queue, so commands still reach the
 * engine in each wallet's arrival order, however the recoveries finish.
 *
 * @module
 */
import {
  type AuthResult,
  type Command,
  claimedSigner,
  type DecodedPayload,
  DISCRIMINATOR,
  type ErrorCodeValue,
  freshnessProblem,
  hasAppAccess,
  MARGIN_FLAG_ISOLATED,
  type OrderRequest,
  type OrderStruct,
  type Outcome,
  type ParsedSignature,
  parseSignature,
  personalMessageHash,
  prepareSignature,
  type ReceivedPayload,
  type ReferralResult,
  type Rejection,
  type RequestAuth,
  receivePayload,
  reject,
  type SignatureVerifier,
  type SigningContext,
  type StructKind,
  settleSignature,
  type VerifiedPayload,
  validateOrderRequest,
  verifyReferralSignature,
} from '@perp/core';
import type { CommandInput, CommandResult } from './engine/host.js';
import type { VenueContext } from './venue-context.js';
import { InlineRecovery, type SignatureRecovery } from './verify/pool.js';

/** A refusal before or by the engine, with what the wire answer needs. */
export interface Refusal {
  readonly ok: false;
  readonly code: ErrorCodeValue;
  readonly message: string;
  readonly retryAfterMs?: number | undefined;
  /**
   * A failure on the venue's side that is safe to retry as is (the signature check could not
   * run: a worker died or hung, or the pool was full). REST answers it 503 with `Retry-After`;
   * the WebSocket 5000 with `retryAfterMs`.
   */
  readonly transient?: boolean | undefined;
  /** The engine's outcome when the refusal came from the engine. */
  readonly outcome?: Outcome | undefined;
}

/** The decoded payload of one struct kind. */
export type PayloadOf<K extends StructKind> = Extract<DecodedPayload, { readonly kind: K }>;

/** A request whose signature checked out: the payload, narrowed to the kinds the endpoint accepts. */
export interface VerifiedRequest<P extends DecodedPayload = DecodedPayload> {
  readonly payload: P;
  /** Lowercase address that signed, equal to the struct's account or owner. */
  readonly signer: string;
  readonly signature: ParsedSignature;
  readonly digest: Uint8Array;
}

/** A request the engine processed (the outcome may still be a business refusal). */
export interface Processed<P extends DecodedPayload = DecodedPayload> {
  readonly ok: true;
  readonly result: CommandResult;
  readonly verified: VerifiedRequest<P>;
}

/** Either. */
export type RequestResult<P extends DecodedPayload = DecodedPayload> = Refusal | Processed<P>;

function refusal(r: Rejection, extra: Partial<Refusal> = {}): Refusal {
  return { ok: false, code: r.code, message: r.message, ...extra };
}

const ZERO_CLOID = `0x${'0'.repeat(32)}`;

/** A bytes16 client id, `null` for zero (none). */
export function cloidOf(value: string): string | null {
  return value === ZERO_CLOID ? null : value;
}

/** The engine's order request of a decoded Order struct. */
export function orderRequestOf(order: OrderStruct): OrderRequest {
  return {
    market: order.market,
    isBuy: order.isBuy,
    orderType: order.orderType,
    timeInForce: order.timeInForce,
    price: order.price,
    triggerPrice: order.triggerPrice,
    quantity: order.quantity,
    flags: order.flags,
    expiry: order.expiry,
    cloid: cloidOf(order.cloid),
    parentCloid: cloidOf(order.parentCloid),
  };
}

/** The freshness fields of a signed struct. */
export function authOf(struct: { readonly nonce: bigint; readonly deadline: bigint }): RequestAuth {
  return { nonce: struct.nonce, deadline: struct.deadline };
}

/**
 * The refusal the engine would give a verified request's deadline and nonce now, read-only (see
 * `freshnessProblem`). A permit carries the token's nonce and an authenticate payload an unsigned
 * deadline: neither is a wallet nonce, so neither is looked at here.
 */
function staleRequest(
  ctx: VenueContext,
  signer: string,
  payload: DecodedPayload,
): Rejection | undefined {
  if (payload.kind === 'Permit' || payload.kind === 'Authenticate') return undefined;
  const { nonce, deadline } = payload.struct;
  return freshnessProblem(ctx.host.state, ctx.host.now(), signer, nonce, deadline);
}

/** Rate class of a struct kind: cancels get the doubled sustained budget. */
function rateClass(kind: StructKind): 'signed' | 'cancel' {
  return kind === 'Cancel' || kind === 'CancelAll' ? 'cancel' : 'signed';
}

const isIsolated = (flags: number): boolean => (flags & MARGIN_FLAG_ISOLATED) !== 0;

/** The engine command of a verified trading or margin struct (not Deposit, Authenticate). */
export function commandOf(verified: VerifiedRequest): CommandInput | undefined {
  const p: DecodedPayload = verified.payload;
  const who = verified.signer;
  switch (p.kind) {
    case 'Order':
      return {
        type: 'placeOrder',
        account: who,
        order: orderRequestOf(p.struct),
        auth: authOf(p.struct),
      };
    case 'Cancel': {
      const s = p.struct;
      return {
        type: 'cancelOrder',
        account: who,
        market: s.market,
        orderId: s.orderId,
        cloid: cloidOf(s.cloid),
        auth: authOf(s),
      };
    }
    case 'Replace': {
      const s = p.struct;
      return {
        type: 'replaceOrder',
        account: who,
        market: s.market,
        orderId: s.orderId,
        origCloid: cloidOf(s.origCloid),
        price: s.price,
        triggerPrice: s.triggerPrice,
        quantity: s.quantity,
        cloid: cloidOf(s.cloid),
        auth: authOf(s),
      };
    }
    case 'CancelAll':
      return { type: 'cancelAll', account: who, market: p.struct.market, auth: authOf(p.struct) };
    case 'Withdrawal': {
      const s = p.struct;
      return {
        type: 'withdraw',
        account: who,
        amount: s.amount,
        target: isIsolated(s.flags)
          ? { mode: 'Isolated', market: s.market }
          : { mode: 'Cross', market: s.market },
        auth: authOf(s),
      };
    }
    case 'MarginTransfer': {
      const s = p.struct;
      return {
        type: 'transferMargin',
        account: who,
        amount: s.amount,
        market: s.market,
        direction: isIsolated(s.flags) ? 'isolatedToCross' : 'crossToIsolated',
        auth: authOf(s),
      };
    }
    case 'UpdateLeverage': {
      const s = p.struct;
      return {
        type: 'updateLeverage',
        account: who,
        market: s.market,
        mode: isIsolated(s.flags) ? 'Isolated' : 'Cross',
        leverage: s.leverage,
        auth: authOf(s),
      };
    }
    case 'ClaimLiquidation': {
      const s = p.struct;
      // Auction ids are engine counters; a u64 beyond 2^53 names no auction and is refused there.
      const auctionId =
        s.auctionId <= BigInt(Number.MAX_SAFE_INTEGER)
          ? Number(s.auctionId)
          : Number.MAX_SAFE_INTEGER;
      return {
        type: 'claimLiquidation',
        account: who,
        auctionId,
        quantity: s.quantity,
        maxPrice: s.maxPrice,
        auth: authOf(s),
      };
    }
    default:
      return undefined;
  }
}

/** Options of one signed request accepting the struct kinds `K`. */
/**
 * Counts a signed request of `wallet` from `address` against the address's budget for wallets
 * without app access (`limits.noAccessRequestsPerSecondPerIp` and `…Per5MinutesPerIp`) when the
 * wallet has none; the refusal when the address's budget is spent. Such requests are
 * refused by the engine's invite gate (or apply a code), consuming their nonce: a journal record
 * each, from keys that cost nothing to make.
 */
export function noAccessRefusal(
  ctx: VenueContext,
  wallet: string,
  address: string | undefined,
  time: number = ctx.rateNow(),
): Refusal | undefined {
  if (address === undefined || hasAppAccess(ctx.host.state, wallet)) return undefined;
  const d = ctx.accessLimiter.admit(address, time, 'signed');
  if (d.ok) return undefined;
  return {
    ok: false,
    code: d.code,
    message: `${d.message} (signed requests of wallets without app access, from this address)`,
    retryAfterMs: d.retryAfterMs,
  };
}

export interface SignedRequestOptions<K extends StructKind> {
  /** Struct kinds this endpoint or message accepts. */
  readonly allowed: readonly K[];
  /**
   * The client IP, for the budget of wallets without app access ({@link noAccessRefusal});
   * without it that budget is not applied.
   */
  readonly clientAddress?: string | undefined;
  /** The connection's authenticated wallet (WebSocket), if any: the signer must equal it. */
  readonly authenticated?: string | undefined;
  /** Whether this request was already counted against the wallet's rate (authenticated WS). */
  readonly counted?: boolean;
  /** Name of the signature object's field in messages (default `signature`). */
  readonly field?: string;
  /**
   * Prefix of the messages refusing this signature object's payload or signature (`deposit`):
   * a request that carries two signature objects names the one that failed.
   */
  readonly errorPrefix?: string;
  /** Body agreement and other checks that need no signature; a rejection is a 4000/400. */
  readonly precheck?: ((payload: PayloadOf<K>) => Rejection | undefined) | undefined;
  /** Builds the command; defaults to {@link commandOf}. */
  readonly build?:
    | ((
        verified: VerifiedRequest<PayloadOf<K>>,
      ) => CommandInput | Promise<CommandInput | Refusal> | Refusal)
    | undefined;
}

/** The refusal of a request whose recovery could not run (a worker died): retryable 5000. */
/** How long a client is told to wait after a signature check that could not run. */
export const VERIFY_RETRY_MS = 1_000;

/** A signature check that could not run (not a bad signature): the refusal says retry. */
type Unavailable = { readonly ok: false; readonly error: Rejection; readonly transient: true };

/** The refusal of a settled check: transient when the check could not run. */
function verifyRefusal(settled: { readonly error: Rejection } | Unavailable): Refusal {
  return 'transient' in settled
    ? refusal(settled.error, { transient: true, retryAfterMs: VERIFY_RETRY_MS })
    : refusal(settled.error);
}

function unavailable(e: unknown): Rejection {
  return reject(
    'INTERNAL_ERROR',
    `signature verification failed (${e instanceof Error ? e.message : String(e)}); retry the request`,
  );
}

/** A verifier that answers with a recovery already made elsewhere (null: no key recovered). */
function recovered(signer: string | null): SignatureVerifier {
  return {
    recoverAddress(): string {
      if (signer === null) throw new Error('no public key recovers');
      return signer;
    },
  };
}

/** Runs signed requests for both transports. */
export class SignedRequests {
  readonly ctx: VenueContext;
  readonly signing: SigningContext;
  /** Where signers are recovered; inline with the signing context's verifier by default. */
  readonly recovery: SignatureRecovery;

  constructor(ctx: VenueContext, signing: SigningContext, recovery?: SignatureRecovery) {
    this.ctx = ctx;
    this.signing = signing;
    this.recovery = recovery ?? new InlineRecovery(signing.verifier, 'noble');
  }

  /**
   * Starts verifying a received payload's signature: the form (4001) now, the recovery on
   * {@link SignedRequests.recovery}. Never rejects: a recovery that could not run is a 5000.
   */
  verify(
    received: ReceivedPayload,
    sigHex: unknown,
  ): Promise<AuthResult<VerifiedPayload> | Unavailable> {
    const pending = prepareSignature(this.signing, received, sigHex);
    if (!pending.ok) return Promise.resolve(pending);
    return this.recovery.recover(pending.value.digest, pending.value.signature).then(
      (signer) => settleSignature(pending.value, signer),
      (e: unknown): Unavailable => ({ ok: false, error: unavailable(e), transient: true }),
    );
  }

  /**
   * The referral's personal_sign check (401 reasons as auth's {@link verifyReferralSignature}),
   * with the recovery on {@link SignedRequests.recovery}; rejects only when it could not run.
   */
  async verifyReferral(
    message: string,
    sigHex: unknown,
    wallet: string,
  ): Promise<ReferralResult<string>> {
    const sig = parseSignature(sigHex);
    const signer = sig.ok
      ? await this.recovery.recover(personalMessageHash(message), sig.value)
      : null;
    return verifyReferralSignature(recovered(signer), message, sigHex, wallet);
  }

  /** Processes one signed request end to end; see the module comment for the order. */
  async handle<K extends StructKind>(
    signature: unknown,
    options: SignedRequestOptions<K>,
  ): Promise<RequestResult<PayloadOf<K>>> {
    if (signature === null || typeof signature !== 'object' || Array.isArray(signature)) {
      const field = options.field ?? 'signature';
      return refusal(reject('INVALID_REQUEST', `${field} must be an object { sig, payload }`));
    }
    const named = (r: Refusal): Refusal =>
      options.errorPrefix === undefined
        ? r
        : { ...r, message: `${options.errorPrefix}: ${r.message}` };
    const sigObj = signature as Record<string, unknown>;
    if (typeof sigObj.sig !== 'string') {
      // A missing field is a malformed request (4000), as on `authenticate`; 4001 is for a
      // signature that was sent and does not verify.
      const field = options.field ?? 'signature';
      return refusal(reject('INVALID_REQUEST', `${field}.sig must be a 0x-prefixed hex string`));
    }
    const received = receivePayload(sigObj.payload, {
      discriminator: options.allowed.map((k) => DISCRIMINATOR[k]),
    });
    if (!received.ok) return named(refusal(received.error));
    // The expected discriminators are exactly the kinds K.
    const payload = received.value.payload as PayloadOf<K>;
    const claimed = claimedSigner(payload);
    // Field checks that need no signature, before paying for a recovery.
    const decoded: DecodedPayload = payload;
    if (decoded.kind === 'Order') {
      const v = validateOrderRequest(
        this.ctx.host.state,
        orderRequestOf(decoded.struct),
        this.ctx.host.now(),
      );
      if (!v.ok) return refusal(v.error);
    }
    const pre = options.precheck?.(payload);
    if (pre !== undefined) return refusal(pre);
    // Verification runs ahead, in parallel; the queue only orders what reaches the engine.
    const verification = this.verify(received.value, sigObj.sig);
    if (options.authenticated !== undefined && claimed !== options.authenticated) {
      // 4004 is for a valid signature by another wallet: a signature that does not recover the
      // struct's account is 4001 first (protocol.md section 2). Nothing reaches the engine, so
      // the other wallet's queue is not involved.
      const settled = await verification;
      if (!settled.ok) return named(verifyRefusal(settled));
      return refusal(
        reject(
          'WALLET_MISMATCH',
          `the request is signed by ${claimed}, this connection is authenticated as ${options.authenticated}`,
        ),
      );
    }
    // The rate is measured at arrival: the request is counted inside the queue, once its
    // signature has verified, but at the time it arrived. Counted at its turn, requests a slow
    // check or a busy engine held back would reach the limiter together, and a client sending
    // well within the rate would be refused for the venue's own delay. Arrival times of one
    // wallet's queue never go back, as the queue keeps arrival order.
    const arrived = this.ctx.rateNow();
    return this.ctx.walletQueue.run(claimed, async (): Promise<RequestResult<PayloadOf<K>>> => {
      const settled = await verification;
      if (!settled.ok) return named(verifyRefusal(settled));
      const { signer, signature: sig, digest } = settled.value;
      const verified: VerifiedRequest<PayloadOf<K>> = { payload, signer, signature: sig, digest };
      const stale = staleRequest(this.ctx, signer, payload);
      if (stale !== undefined) return refusal(stale);
      // Counted only once attributed: here, after the signature verified. An authenticated
      // connection already counted the message's per-second share on arrival.
      const kind = rateClass(payload.kind);
      const d = options.counted
        ? this.ctx.walletLimiter.admitSustained(verified.signer, arrived, kind)
        : this.ctx.walletLimiter.admit(verified.signer, arrived, kind);
      if (!d.ok)
        return { ok: false, code: d.code, message: d.message, retryAfterMs: d.retryAfterMs };
      const noAccess = noAccessRefusal(this.ctx, verified.signer, options.clientAddress, arrived);
      if (noAccess !== undefined) return noAccess;
      const built =
        options.build === undefined ? commandOf(verified) : await options.build(verified);
      if (built === undefined)
        return refusal(reject('INVALID_REQUEST', `${payload.kind} is not accepted here`));
      if ('ok' in built) return built;
      const result = await this.ctx.host.submit(built);
      return { ok: true, result, verified };
    });
  }

  /**
   * Runs an `authenticate` whose personal_sign signature verified as `wallet`, under the
   * wallet's queue: first counted against the wallet's limits like any attributed signed request
   * (4029 per second, 4035 sustained), then the engine (nonce, invite gate, account). `counted`:
   * the message arrived on a connection already authenticated as `wallet`, which counted its
   * per-second share on arrival. A refusal for rate reaches no engine, so the nonce stays unused.
   */
  authenticate(
    wallet: string,
    nonce: bigint,
    counted: boolean,
    clientAddress?: string,
  ): Promise<Refusal | { readonly ok: true; readonly result: CommandResult }> {
    // Counted at the time it joined the queue, as in handle().
    const arrived = this.ctx.rateNow();
    return this.ctx.walletQueue.run(wallet, async () => {
      // A stale or replayed authenticate (its text is generic) must not spend the budget.
      const stale = freshnessProblem(this.ctx.host.state, this.ctx.host.now(), wallet, nonce);
      if (stale !== undefined) return refusal(stale);
      const d = counted
        ? this.ctx.walletLimiter.admitSustained(wallet, arrived, 'signed')
        : this.ctx.walletLimiter.admit(wallet, arrived, 'signed');
      if (!d.ok)
        return { ok: false, code: d.code, message: d.message, retryAfterMs: d.retryAfterMs };
      const noAccess = noAccessRefusal(this.ctx, wallet, clientAddress, arrived);
      if (noAccess !== undefined) return noAccess;
      const result = await this.ctx.host.submit({ type: 'authenticate', account: wallet, nonce });
      return { ok: true, result };
    });
  }
}

/** The outcome of a processed request as a refusal, when the engine refused it. */
export function engineRefusal(p: Processed): Refusal | undefined {
  const o = p.result.outcome;
  if (o.ok) return undefined;
  return { ok: false, code: o.code, message: o.message, outcome: o };
}

/** Re-export for transports. */
export type { Command };
