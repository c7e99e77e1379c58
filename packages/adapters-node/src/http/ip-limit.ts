/**
 * The per-address budget of requests not yet attributed to a wallet (protocol.md section 5: 100
 * public reads per second per IP), answered 429 with `Retry-After` above it.
 *
 * @module
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { VenueContext } from '../venue-context.js';
import { HttpError } from './errors.js';

/** Counts a request against its client address's budget; throws 429 when it is spent. */
export function chargeAddress(ctx: VenueContext, req: FastifyRequest, reply: FastifyReply): void {
  // The one client-address function the WebSocket services use too (fastify's `req.ip` is given
  // the same trust, but the budget is shared with them and must key on exactly their address).
  const d = ctx.ipLimiter.admit(ctx.clientAddress(req.raw), ctx.rateNow(), 'unsigned');
  if (!d.ok) {
    reply.header('Retry-After', String(Math.ceil(d.retryAfterMs / 1000)));
    throw new HttpError(429, `too many requests from this address; retry in ${d.retryAfterMs} ms`);
  }
}
