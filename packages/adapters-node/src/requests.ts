/**
 * Signed requests from both transports, in the check order of reliability-anchors 2.8: decode
 * (4000), field checks that need no signature (4030-4034, body agreement), one signature
 * recovery (4001, 4004), per-wallet rate accounting (4029/4035), then the engine with the
 * wallet's requests strictly one at a time. Transports only map the result to wire form.
 *
 * @module
 */
import {
  cloidOf,
  type Command,
  type DecodedStruct,
  Discriminator,
  type ErrorCodeValue,
  orderRequestOf,
  type Outcome,
  type RequestAuth,
  reject,
  type Rejection,
  type SigningDomains,
  smallOf,
  validateOrderRequest,
  verifyDecoded,
  decodePayload,
  type VerifiedRequest,
} from '@perp/core';
import type { CommandInput, CommandResult } from './engine/host.js';
import type { VenueContext } from './venue-context.js';

/** A refusal before or by the engine, with what the wire answer needs. */
export interface Refusal {
  readonly ok: false;
  readonly code: ErrorCodeValue;
  readonly message: string;
  readonly retryAfterMs?: number | undefined;
  /** The engine's outcome when the refusal came from the engine. */
  readonly outcome?: Outcome | undefined;
}

/** A request the engine processed (the outcome may still be a business refusal). */
export interface Processed {
  readonly ok: true;
  readonly result: CommandResult;
  readonly verified: VerifiedRequest;
}

/** Either. */
export type RequestResult = Refusal | Processed;

function refusal(r: Rejection, extra: Partial<Refusal> = {}): Refusal {
  return { ok: false, code: r.code, message: r.message, ...extra };
}

/** The freshness fields of a verified struct. */
export function authOf(struct: DecodedStruct): RequestAuth {
  return { nonce: struct.values.nonce as bigint, deadline: struct.values.deadline as bigint };
}

/** Rate class of a discriminator: cancels get the doubled sustained budget. */
function rateClass(discriminator: number): 'signed' | 'cancel' {
  return discriminator === Discriminator.Cancel || discriminator === Discriminator.CancelAll ? 'cancel' : 'signed';
}

/** The engine command of a verified trading or margin struct (not Deposit, Authenticate). */
export function commandOf(verified: VerifiedRequest): CommandInput | undefined {
  const s = verified.struct;
  const v = s.values;
  const auth = authOf(s);
  const who = verified.signer;
  switch (s.def.discriminator) {
    case Discriminator.Order:
      return { type: 'placeOrder', account: who, order: orderRequestOf(s), auth };
    case Discriminator.Cancel:
      return { type: 'cancelOrder', account: who, market: smallOf(v.market), orderId: v.orderId as bigint, cloid: cloidOf(v.cloid), auth };
    case Discriminator.Replace:
      return {
        type: 'replaceOrder',
        account: who,
        market: smallOf(v.market),
        orderId: v.orderId as bigint,
        origCloid: cloidOf(v.origCloid),
        price: v.price as bigint,
        triggerPrice: v.triggerPrice as bigint,
        quantity: v.quantity as bigint,
        cloid: cloidOf(v.cloid),
        auth,
      };
    case Discriminator.CancelAll:
      return { type: 'cancelAll', account: who, market: smallOf(v.market), auth };
    case Discriminator.Withdrawal: {
      const isolated = (v.flags as bigint) === 1n;
      return {
        type: 'withdraw',
        account: who,
        amount: v.amount as bigint,
        target: isolated ? { mode: 'Isolated', market: smallOf(v.market) } : { mode: 'Cross', market: smallOf(v.market) },
        auth,
      };
    }
    case Discriminator.MarginTransfer:
      return {
        type: 'transferMargin',
        account: who,
        amount: v.amount as bigint,
        market: smallOf(v.market),
        direction: (v.flags as bigint) === 1n ? 'isolatedToCross' : 'crossToIsolated',
        auth,
      };
    case Discriminator.UpdateLeverage:
      return {
        type: 'updateLeverage',
        account: who,
        market: smallOf(v.market),
        mode: (v.flags as bigint) === 1n ? 'Isolated' : 'Cross',
        leverage: smallOf(v.leverage),
        auth,
      };
    default:
      return undefined;
  }
}

/** Options of one signed request. */
export interface SignedRequestOptions {
  /** Discriminators this endpoint or message accepts. */
  readonly allowed: readonly number[];
  /** The connection's authenticated wallet (WebSocket), if any: the signer must equal it. */
  readonly authenticated?: string | undefined;
  /** Whether this request was already counted against the wallet's rate (authenticated WS). */
  readonly counted?: boolean;
  /** Body agreement and other checks that need no signature; a rejection is a 4000/400. */
  readonly precheck?: ((struct: DecodedStruct) => Rejection | undefined) | undefined;
  /** Builds the command; defaults to {@link commandOf}. */
  readonly build?: ((verified: VerifiedRequest) => CommandInput | Promise<CommandInput | Refusal> | Refusal) | undefined;
}

/** Runs signed requests for both transports. */
export class SignedRequests {
  readonly ctx: VenueContext;
  readonly domains: SigningDomains;

  constructor(ctx: VenueContext, domains: SigningDomains) {
    this.ctx = ctx;
    this.domains = domains;
  }

  /** Processes one signed request end to end; see the module comment for the order. */
  async handle(signature: unknown, options: SignedRequestOptions): Promise<RequestResult> {
    if (signature === null || typeof signature !== 'object') {
      return refusal(reject('INVALID_REQUEST', 'signature must be an object { sig, payload }'));
    }
    const sigObj = signature as Record<string, unknown>;
    const decoded = decodePayload(sigObj.payload, options.allowed);
    if (!decoded.ok) return refusal(decoded.error);
    const struct = decoded.struct;
    const claimed = (struct.values.account ?? struct.values.owner) as string;
    if (options.authenticated !== undefined && claimed !== options.authenticated) {
      return refusal(reject('WALLET_MISMATCH', `the request is signed for ${claimed}, this connection is authenticated as ${options.authenticated}`));
    }
    // Field checks that need no signature, before paying for a recovery.
    if (struct.def.discriminator === Discriminator.Order) {
      const v = validateOrderRequest(this.ctx.host.state, orderRequestOf(struct), this.ctx.host.now());
      if (!v.ok) return refusal(v.error);
    }
    const pre = options.precheck?.(struct);
    if (pre !== undefined) return refusal(pre);
    return this.ctx.walletQueue.run(claimed, async () => {
      const verified = verifyDecoded(this.domains, struct, sigObj.sig);
      if (!verified.ok) return refusal(verified.error);
      // Counted only once attributed: here, after the signature verified. An authenticated
      // connection already counted the message's per-second share on arrival.
      const kind = rateClass(struct.def.discriminator);
      const now = this.ctx.host.now();
      const d = options.counted
        ? this.ctx.walletLimiter.admitSustained(verified.value.signer, now, kind)
        : this.ctx.walletLimiter.admit(verified.value.signer, now, kind);
      if (!d.ok) return { ok: false, code: d.code, message: d.message, retryAfterMs: d.retryAfterMs };
      const built = options.build === undefined ? commandOf(verified.value) : await options.build(verified.value);
      if (built === undefined) return refusal(reject('INVALID_REQUEST', `${struct.def.name} is not accepted here`));
      if ('ok' in built) return built;
      const result = await this.ctx.host.submit(built);
      return { ok: true, result, verified: verified.value };
    });
  }

  /** Submits an already built command under the wallet's queue. */
  submitFor(wallet: string, command: CommandInput): Promise<CommandResult> {
    return this.ctx.walletQueue.run(wallet, () => this.ctx.host.submit(command));
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
