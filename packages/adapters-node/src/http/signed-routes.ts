/**
 * Signed REST writes (interface-spec "Endpoints", protocol.md sections 3-4): the referral
 * application (canonical-JSON personal_sign with headers), deposits (ERC-2612 permit plus vault
 * authorisation), withdrawals, margin transfers and leverage updates (EIP-712).
 *
 * Every write first counts against its client address's budget (the one public reads use), so
 * one address cannot queue unbounded signature recoveries with forged requests, which are only
 * attributed to a wallet once they verify.
 *
 * Answers: an accepted command is 200 `{command_id, status: "Submitted"}`; a business refusal
 * after admission is 200 `{command_id, status: "Rejected", code, message}`; bad input or a bad
 * signature or nonce is 400 `{error}`; no app access 403 `USER_NOT_INVITED: ...`.
 *
 * @module
 */
import {
  type ChainDeposit,
  checkNonceHeader,
  checkPermit,
  checkPermitDeadline,
  checkTimestampHeader,
  checkTimestampWindow,
  DISCRIMINATOR,
  formatCollateral,
  parseReferralBody,
  parseSignature,
  type ReferralRefusal,
  type Rejection,
  receivePayload,
  referralNonceUsed,
  referralSignedMessage,
  reject,
  signatureToHex,
} from '@perp/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { CommandResult } from '../engine/host.js';
import {
  engineRefusal,
  noAccessRefusal,
  type Processed,
  type Refusal,
  type SignedRequests,
  VERIFY_RETRY_MS,
} from '../requests.js';
import type { VenueContext } from '../venue-context.js';
import { parseAmount } from '../wire/amount.js';
import { HttpError, isBadRequest, statusOf } from './errors.js';
import { chargeAddress } from './ip-limit.js';
import { isRecord, showValue } from './json.js';

/** What a signed REST write answers. */
function commandAnswer(reply: FastifyReply, r: Refusal | Processed): Record<string, unknown> {
  if (!r.ok) {
    if (r.retryAfterMs !== undefined)
      reply.header('Retry-After', String(Math.ceil(r.retryAfterMs / 1000)));
    throw new HttpError(r.transient === true ? 503 : statusOf(r.code), r.message);
  }
  const o = r.result.outcome;
  if (o.ok && o.kind === 'command') return { command_id: o.commandId, status: 'Submitted' };
  const refused = engineRefusal(r);
  if (refused !== undefined && o.ok === false && o.commandId !== undefined) {
    return { command_id: o.commandId, status: 'Rejected', code: o.code, message: o.message };
  }
  throw new HttpError(
    statusOf(refused?.code ?? 5000),
    refused?.message ?? 'unexpected engine answer',
  );
}

function bodyOf(req: FastifyRequest): Record<string, unknown> {
  if (!isRecord(req.body)) throw new HttpError(400, 'body must be a JSON object');
  return req.body;
}

const MODES = new Set(['Cross', 'Isolated']);

/** The fields the margin structs (Withdrawal, Deposit, MarginTransfer) share. */
interface MarginFields {
  readonly amount: bigint;
  readonly market: number;
  readonly flags: number;
}

/** Checks `amount`, `instrument` and `marginMode` of a body against a margin struct. */
function marginBody(
  ctx: VenueContext,
  body: Record<string, unknown>,
  struct: MarginFields,
  modeField: 'marginMode' | 'direction',
): Rejection | undefined {
  const bad = (detail: string) => reject('INVALID_REQUEST', detail);
  const amount = parseAmount(body.amount);
  if (!amount.ok) return bad(amount.error);
  if (amount.value !== struct.amount) {
    return bad(
      `amount ${body.amount} does not match the signed amount ${formatCollateral(struct.amount)}`,
    );
  }
  const isolated = struct.flags === 1;
  const market = struct.market;
  if (modeField === 'direction') {
    if (body.direction !== 'crossToIsolated' && body.direction !== 'isolatedToCross') {
      return bad('direction must be crossToIsolated or isolatedToCross');
    }
    if ((body.direction === 'isolatedToCross') !== isolated)
      return bad('direction does not match flags bit 0 of the signed payload');
    if (typeof body.instrument !== 'string')
      return bad('instrument must be the symbol of the isolated market');
    const id = ctx.host.state.symbols.get(body.instrument);
    if (id === undefined) return bad(`unknown instrument ${showValue(body.instrument)}`);
    if (id !== market)
      return bad(
        `instrument ${body.instrument} is market ${id}, the payload signs market ${market}`,
      );
    return undefined;
  }
  const mode = body.marginMode;
  if (typeof mode !== 'string' || !MODES.has(mode))
    return bad('marginMode must be Cross or Isolated');
  if ((mode === 'Isolated') !== isolated)
    return bad('marginMode does not match flags bit 0 of the signed payload');
  if (mode === 'Cross') {
    if (body.instrument !== null) return bad('instrument must be null for Cross');
    if (market !== 0) return bad('a Cross payload signs market 0');
    return undefined;
  }
  if (typeof body.instrument !== 'string')
    return bad('instrument must be the isolated market symbol');
  const id = ctx.host.state.symbols.get(body.instrument);
  if (id === undefined) return bad(`unknown instrument ${showValue(body.instrument)}`);
  if (id !== market)
    return bad(`instrument ${body.instrument} is market ${id}, the payload signs market ${market}`);
  return undefined;
}

/** Registers the signed writes under `/api`. */
export function registerSignedRoutes(
  app: FastifyInstance,
  ctx: VenueContext,
  requests: SignedRequests,
): void {
  // Each write counts against its address's budget when it arrives, before its body is read:
  // a body refused as malformed (bad or too deep JSON, wrong content type) cost its parse, and
  // counted in the handler it would not count at all.
  const charged = {
    onRequest: async (req: FastifyRequest, reply: FastifyReply): Promise<void> =>
      chargeAddress(ctx, req, reply),
  };
  app.post('/api/margin/withdrawal', charged, async (req, reply) => {
    const body = bodyOf(req);
    const r = await requests.handle(body.signature, {
      allowed: ['Withdrawal'],
      clientAddress: ctx.clientAddress(req.raw),
      precheck: (p) => marginBody(ctx, body, p.struct, 'marginMode'),
    });
    const answer = commandAnswer(reply, r);
    if (r.ok && answer.status === 'Submitted') {
      // The amount left the account at acceptance; the chain pays it out (WithdrawMargin report).
      void ctx.desk.withdrawal(
        answer.command_id as number,
        r.verified.signer,
        r.verified.payload.struct.amount,
      );
    }
    return answer;
  });

  app.post('/api/margin/transfer', charged, async (req, reply) => {
    const body = bodyOf(req);
    const r = await requests.handle(body.signature, {
      allowed: ['MarginTransfer'],
      clientAddress: ctx.clientAddress(req.raw),
      precheck: (p) => marginBody(ctx, body, p.struct, 'direction'),
    });
    return commandAnswer(reply, r);
  });

  app.post('/api/update_leverage', charged, async (req, reply) => {
    const body = bodyOf(req);
    const r = await requests.handle(body.signature, {
      allowed: ['UpdateLeverage'],
      clientAddress: ctx.clientAddress(req.raw),
      precheck: ({ struct: s }) => {
        const bad = (d: string) => reject('INVALID_REQUEST', d);
        if (
          typeof body.leverage !== 'number' ||
          !Number.isInteger(body.leverage) ||
          body.leverage < 0
        ) {
          return bad('leverage must be a u32 (x100)');
        }
        if (body.leverage !== s.leverage) return bad('leverage does not match the signed leverage');
        if (typeof body.instrument !== 'string') return bad('instrument must be a symbol');
        const id = ctx.host.state.symbols.get(body.instrument);
        if (id === undefined) return bad(`unknown instrument ${showValue(body.instrument)}`);
        if (id !== s.market) return bad('instrument does not match the signed market');
        if (body.marginMode !== 'Cross' && body.marginMode !== 'Isolated')
          return bad('marginMode must be Cross or Isolated');
        if ((body.marginMode === 'Isolated') !== (s.flags === 1))
          return bad('marginMode does not match flags bit 0');
        return undefined;
      },
    });
    return commandAnswer(reply, r);
  });

  app.post('/api/margin/deposit', charged, async (req, reply) => {
    const body = bodyOf(req);
    const permitObj = body.permitSignature;
    const permitReceived = isRecord(permitObj)
      ? receivePayload(permitObj.payload, { discriminator: DISCRIMINATOR.Permit })
      : undefined;
    if (permitReceived === undefined)
      throw new HttpError(
        400,
        'INVALID_REQUEST: permitSignature must be an object { sig, payload }',
      );
    // Named like the permit's signature errors below: the deposit carries two payloads.
    if (!permitReceived.ok) throw new HttpError(400, `permit: ${permitReceived.error.message}`);
    if (permitReceived.value.payload.kind !== 'Permit')
      throw new HttpError(400, 'INVALID_REQUEST: permitSignature must sign a Permit');
    const permit = permitReceived.value.payload.struct;
    const permitSigHex = (permitObj as Record<string, unknown>).sig;
    // The permit signature's presence and form are checked with its payload, before any recovery
    // and before the wallet's rate is counted (reliability 2.8), as the deposit signature's are: a
    // missing `sig` is a malformed request (4000), a sig of the wrong form 4001, both 400.
    if (typeof permitSigHex !== 'string')
      throw new HttpError(
        400,
        'INVALID_REQUEST: permitSignature.sig must be a 0x-prefixed hex string',
      );
    const permitSigForm = parseSignature(permitSigHex);
    if (!permitSigForm.ok) throw new HttpError(400, `permit: ${permitSigForm.error.message}`);
    const vault = ctx.config.vault.address.toLowerCase();
    let permitVerification: ReturnType<typeof requests.verify> | undefined;
    const r = await requests.handle(body.depositSignature, {
      allowed: ['Deposit'],
      clientAddress: ctx.clientAddress(req.raw),
      field: 'depositSignature',
      errorPrefix: 'deposit',
      precheck: ({ struct: s }) => {
        const mismatch = marginBody(ctx, body, s, 'marginMode');
        if (mismatch !== undefined) return mismatch;
        // The permit's fields before any recovery; its token nonce needs the chain (in build).
        const bad = (d: string) => reject('INVALID_REQUEST', d);
        if (permit.owner !== s.owner) return bad('the permit owner must be the deposit owner');
        if (permit.spender !== vault) return bad(`the permit spender must be the vault ${vault}`);
        if (permit.value < s.amount) return bad('the permit value is below the deposit amount');
        // Checked again by checkPermit (below), with the same code and message.
        const expired = checkPermitDeadline(permit.deadline, ctx.host.now());
        if (expired !== undefined) return expired;
        // Both recoveries run while the request waits for its turn.
        permitVerification = requests.verify(permitReceived.value, permitSigHex);
        return undefined;
      },
      build: async (verified) => {
        const permitSig = await (permitVerification ??
          requests.verify(permitReceived.value, permitSigHex));
        if (!permitSig.ok)
          return {
            ok: false,
            code: permitSig.error.code,
            message: `permit: ${permitSig.error.message}`,
            ...('transient' in permitSig ? { transient: true, retryAfterMs: VERIFY_RETRY_MS } : {}),
          };
        const s = verified.payload.struct;
        const tokenNonce = await ctx.chain.permitNonce(verified.signer);
        const problem = checkPermit(permit, {
          vault,
          amount: s.amount,
          tokenNonce,
          nowMs: ctx.host.now(),
          owner: verified.signer,
        });
        if (problem !== undefined)
          return { ok: false, code: problem.code, message: problem.message };
        return {
          type: 'deposit',
          account: verified.signer,
          amount: s.amount,
          target:
            s.flags === 1 ? { mode: 'Isolated', market: s.market } : { mode: 'Cross', market: 0 },
          auth: { nonce: s.nonce, deadline: s.deadline },
        };
      },
    });
    const answer = commandAnswer(reply, r);
    if (r.ok && answer.status === 'Submitted') {
      // Verified in build: a Submitted deposit has a well-formed permit signature.
      const permitSig = parseSignature(permitSigHex);
      const request: ChainDeposit = {
        commandId: answer.command_id as number,
        owner: r.verified.signer,
        amount: r.verified.payload.struct.amount,
        permit: {
          spender: permit.spender,
          value: permit.value,
          nonce: permit.nonce,
          deadline: permit.deadline,
          signature: permitSig.ok ? signatureToHex(permitSig.value) : '',
        },
      };
      // Settlement is reported later (DepositMargin); the answer does not wait for the chain.
      void ctx.desk.deposit(request);
    }
    return answer;
  });

  // The spec's referral error table has one 400: `walletAddress and code are required` for a
  // malformed body. Bodies refused before the handler (malformed or too deep JSON, empty,
  // oversized, wrong content type) get that text too; other statuses go to the venue's handler.
  const malformed = 'walletAddress and code are required';
  // The spec fixes the 400's text; `detail` (an addition) names the check that failed.
  const referralErrors = (error: unknown, _req: FastifyRequest, reply: FastifyReply) => {
    if (isBadRequest(error)) {
      const detail =
        error instanceof HttpError ? (error.detail ?? error.message) : (error as Error).message;
      return reply.code(400).send({ error: malformed, detail });
    }
    throw error;
  };
  app.post(
    '/api/referral/apply',
    { ...charged, errorHandler: referralErrors },
    async (req, reply) => {
      const raw = (req as FastifyRequest & { rawBody?: string }).rawBody ?? '';
      // The checks and their order are core's (auth/canonical-json.ts), one implementation for
      // every embedding; only the signature recovery runs here, on the worker pool.
      const parsed = parseReferralBody(raw);
      if (!parsed.ok) throw new HttpError(400, malformed, {}, parsed.reason);
      const refuse = (r: ReferralRefusal) => new HttpError(r.status, r.error);
      const unauthorized = (reason: string) => new HttpError(401, `Unauthorized: ${reason}`);
      const sig = req.headers['x-signature'];
      if (typeof sig !== 'string') throw unauthorized('missing x-signature header');
      const ts = checkTimestampHeader(req.headers['x-timestamp']);
      if (!ts.ok) throw refuse(ts);
      if (req.headers['x-nonce'] === undefined) throw unauthorized('missing x-nonce header');
      const outside = checkTimestampWindow(ts.value, ctx.host.now());
      if (outside !== undefined) throw refuse(outside);
      const checkedNonce = checkNonceHeader(req.headers['x-nonce']);
      if (!checkedNonce.ok) throw refuse(checkedNonce);
      const nonce = checkedNonce.value;
      const timestamp = ts.value;
      const { body, walletAddress: wallet, code } = parsed.value;
      const message = referralSignedMessage({ body, nonce, timestamp, walletAddress: wallet });
      let signer: Awaited<ReturnType<typeof requests.verifyReferral>>;
      try {
        signer = await requests.verifyReferral(message, sig, wallet);
      } catch {
        // The check could not run (a worker died or hung, the pool is full): transient, and the
        // spec's referral table has one answer for that.
        reply.header('Retry-After', String(Math.ceil(VERIFY_RETRY_MS / 1000)));
        throw new HttpError(503, 'Referral service unavailable, please retry');
      }
      // The reason names the check: the signature's form (high s, v, length, hex), a failed
      // recovery, or the recovered signer against walletAddress (core's own 401 text).
      if (!signer.ok) throw refuse(signer);
      // A resent application must not spend the wallet's budget (the engine checks again).
      if (referralNonceUsed(ctx.host.state, wallet, nonce))
        throw unauthorized(`replayed nonce ${nonce}`);
      const d = ctx.walletLimiter.admit(wallet, ctx.rateNow(), 'signed');
      if (!d.ok) {
        reply.header('Retry-After', String(Math.ceil(d.retryAfterMs / 1000)));
        throw new HttpError(429, d.message);
      }
      // Every application but a wallet's first success is refused and journaled (its nonce is
      // consumed), and wallets cost nothing: a budget per address bounds both the journal's growth
      // and guessing codes.
      const noAccess = noAccessRefusal(ctx, wallet, ctx.clientAddress(req.raw));
      if (noAccess !== undefined) {
        reply.header('Retry-After', String(Math.ceil((noAccess.retryAfterMs ?? 1000) / 1000)));
        throw new HttpError(429, noAccess.message);
      }
      // The 504 promises what the spec's states table says of any failure: no app access. So it
      // is answered only while the application waits for its turn behind the wallet's earlier
      // requests, and the application is then dropped before it reaches the engine. Once handed
      // to the engine it is applied in memory at once and answered when durable, like every other
      // signed write: a 504 then would report a failure that becomes a success.
      let handedOver = false;
      let abandoned = false;
      let result: CommandResult;
      try {
        result = await timeoutUnless(
          ctx.walletQueue.run(wallet, () => {
            if (abandoned) return Promise.resolve(null);
            handedOver = true;
            return ctx.host.submit({
              type: 'applyReferral',
              wallet,
              code,
              nonce,
              timestamp,
            });
          }),
          ctx.config.limits.referralTimeoutMs,
          () => {
            if (handedOver) return false;
            abandoned = true;
            return true;
          },
        );
      } catch (e) {
        if (e instanceof TimeoutError)
          throw new HttpError(504, 'Referral service timed out, please try again later');
        throw new HttpError(503, 'Referral service unavailable, please retry');
      }
      const o = result.outcome;
      if (o.ok && o.kind === 'referral') {
        reply.code(201);
        const ref = o.referral;
        return {
          kind: ref.kind,
          refereeAddress: ref.wallet,
          ...(ref.kind === 'attributed' ? { referrerAddress: ref.referrer } : {}),
          code: ref.code,
        };
      }
      if (!o.ok && o.referralError !== undefined) throw new HttpError(422, o.referralError);
      if (!o.ok && o.code === 4002) throw unauthorized(o.message.replace(/^INVALID_NONCE: /, ''));
      throw new HttpError(400, o.ok ? 'unexpected answer' : o.message);
    },
  );
}

class TimeoutError extends Error {}

/**
 * `p`, or a {@link TimeoutError} after `ms` if `giveUp()` agrees then (it is asked once; when it
 * declines, `p` is awaited however long it takes). A `null` from `p` is a task that gave up.
 */
function timeoutUnless<T>(p: Promise<T | null>, ms: number, giveUp: () => boolean): Promise<T> {
  return new Promise<T>((resolve, reject_) => {
    const t = setTimeout(() => {
      if (giveUp()) reject_(new TimeoutError('timeout'));
    }, ms);
    t.unref();
    p.then(
      (v) => {
        clearTimeout(t);
        if (v === null) reject_(new TimeoutError('timeout'));
        else resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject_(e);
      },
    );
  });
}
