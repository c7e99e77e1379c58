/**
 * The trading WebSocket at `/ws` (interface-spec "Trading WebSocket messages", protocol.md
 * section 5, research 6.2-6.5): authentication, execution-report streams with `fromSeq` replay,
 * account-summary pushes, order entry and margin transfers. One reply per request, echoing its
 * `id`. A connection's messages start in order; a signed request holds the next one only until
 * it has joined its wallet's queue, which applies a wallet's requests in arrival order across
 * connections, so answers to signed requests may come back out of order.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import {
  accountOrders,
  accountSummary,
  DISCRIMINATOR,
  ErrorCode,
  type ExecutionReport,
  formatCollateral,
  formatDecimal,
  formatPrice,
  isSignatureObject,
  type Outcome,
  type RateDecision,
  type Rejection,
  receivePayload,
  reject,
} from '@perp/core';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import { type CommittedBatch, HostStoppedError } from '../engine/host.js';
import {
  isRecord,
  MESSAGE_ID_RE,
  parseJson,
  refusedMessageId,
  refusedTextId,
  showValue,
} from '../http/json.js';
import {
  engineRefusal,
  type Processed,
  type Refusal,
  type SignedRequests,
  VERIFY_RETRY_MS,
} from '../requests.js';
import type { VenueContext } from '../venue-context.js';
import { parseAmount } from '../wire/amount.js';
import { specsOf, wireOrder, wireReport } from '../wire/format.js';
import { CLOSE_GRACE_MS, closeWithin } from './close.js';
import { armIdle, IDLE_CLOSE_CODE } from './idle.js';

/** Close codes (protocol.md section 5). */
/**
 * Largest message an unauthenticated trading connection may send: an `authenticate` is under
 * 500 bytes, `ping` and `logout` smaller still (the market-data socket caps every message at the
 * same 4 KiB).
 */
const UNAUTHENTICATED_MESSAGE_BYTES = 4 * 1024;

export const CloseCode = {
  IDLE: IDLE_CLOSE_CODE,
  TOO_MANY_CONNECTIONS: 4429,
  SHUTDOWN: 1001,
  POLICY: 1008,
} as const;
/**
 * Above this many bytes in the socket's buffer (or a quarter of `limits.slowConsumerBytes`, when
 * less), messages wait in the connection's queue, and a `fromSeq` replay is formatted no further.
 */
const SOFT_BUFFER = 256 * 1024;
/**
 * A cut-off socket still open this long after its close is terminated, ms: its close frame waits
 * behind everything the socket holds, and a client that reads nothing would otherwise keep its
 * socket for `ws`'s 30 s close timeout.
 */
export const CUT_OFF_GRACE_MS = 5_000;

/**
 * A `fromSeq` replay still to send: formatted one report at a time as the socket drains, so a
 * replay of any length (up to the 100,000 reports an account keeps) reaches a reader that keeps
 * reading, and costs no memory beyond the reports the stream already holds.
 */
interface ReplayCursor {
  readonly reports: readonly ExecutionReport[];
  next: number;
  readonly frame: (r: ExecutionReport) => string;
}

interface Session {
  readonly ws: WebSocket;
  readonly ip: string;
  account: string | null;
  /** `performance.now()` of the last request or pong. */
  lastActivity: number;
  /** Fires when the connection may have been idle for `idleTimeoutMs`; see `armIdle`. */
  idleTimer: NodeJS.Timeout | null;
  /** Unsubscribes the execution-report stream. */
  trading: (() => void) | null;
  summaries: boolean;
  summaryTimer: NodeJS.Timeout | null;
  /**
   * Messages of this connection start one after another. A signed request only holds the next
   * message until it has joined its wallet's queue, which orders it (see `answerLater`).
   */
  chain: Promise<void>;
  closed: boolean;
  /** Messages waiting for the socket to drain, in order (see `send`). */
  readonly queue: (string | ReplayCursor)[];
  /** Index of the queue's head (shifted lazily). */
  queueHead: number;
  /** Size of the queued strings in UTF-16 units (bytes, for the ASCII JSON sent here). */
  queuedBytes: number;
  /** A send callback will resume the queue. */
  draining: boolean;
}

/** The running trading WebSocket service. */
export interface TradingService {
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
  close(): Promise<void>;
  readonly connections: number;
}

/** Creates the trading WebSocket service. */
export function createTradingService(ctx: VenueContext, requests: SignedRequests): TradingService {
  const limits = ctx.config.limits;
  // A connection with more than this unsent (its queue and its socket's buffer; a `fromSeq`
  // replay still to format not counted) is closed (1008 `slow consumer`) and resyncs by seq.
  const hardBuffer = limits.slowConsumerBytes;
  const softBuffer = Math.min(SOFT_BUFFER, Math.floor(hardBuffer / 4));
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: limits.maxMessageBytes,
    perMessageDeflate: false,
    maxFragments: 32,
    maxBufferedChunks: 256,
  });
  wss.on('error', () => {});
  const sessions = new Set<Session>();
  /** Set by close(): no new message is taken, and no new connection (503). */
  let stopping = false;
  const byAccount = new Map<string, Set<Session>>();

  // Every message of a connection goes out in order through `enqueue`: straight to the socket
  // while its buffer is short, else into the connection's queue, which `pump` feeds to the socket
  // as it drains (a send callback fires once a frame has been handed to the kernel).
  const enqueue = (s: Session, item: string | ReplayCursor): void => {
    if (s.closed) return;
    if (
      s.queue.length === s.queueHead &&
      typeof item === 'string' &&
      s.ws.bufferedAmount < softBuffer
    ) {
      s.ws.send(item);
    } else {
      s.queue.push(item);
      if (typeof item === 'string') s.queuedBytes += item.length;
    }
    // Reports are never dropped: a consumer this far behind is cut off and resyncs by seq. What
    // it has not taken is the queue and what the socket buffers, frames sent straight included.
    if (s.queuedBytes + s.ws.bufferedAmount > hardBuffer) return cutOff(s);
    pump(s);
  };
  const cutOff = (s: Session): void => {
    // The close frame waits behind what the socket holds (the queue is dropped): a client that
    // reads gets it within the grace, and one that does not loses its socket then.
    closeWithin(s.ws, CloseCode.POLICY, 'slow consumer', CUT_OFF_GRACE_MS);
    detach(s);
  };
  /** Resolves once `s` has handed its whole queue to its socket, it closed, or `deadline` passed. */
  const queueDrained = async (s: Session, deadline: number): Promise<void> => {
    while (
      !s.closed &&
      s.ws.readyState === s.ws.OPEN &&
      s.queueHead < s.queue.length &&
      performance.now() < deadline
    ) {
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const pump = (s: Session): void => {
    if (s.draining) return;
    // A closing socket refuses frames (its send callback errs at once): stop; `detach` follows.
    while (!s.closed && s.ws.readyState === s.ws.OPEN && s.queueHead < s.queue.length) {
      const head = s.queue[s.queueHead]!;
      let frame: string;
      if (typeof head === 'string') {
        frame = head;
        s.queuedBytes -= head.length;
        s.queue[s.queueHead++] = '';
      } else {
        frame = head.frame(head.reports[head.next++]!);
        if (head.next >= head.reports.length) s.queue[s.queueHead++] = '';
      }
      if (s.queueHead === s.queue.length) {
        s.queue.length = 0;
        s.queueHead = 0;
      } else if (s.queueHead >= 1024 && s.queueHead * 2 >= s.queue.length) {
        // A backlog that never empties would keep every sent slot: drop them now and then.
        s.queue.splice(0, s.queueHead);
        s.queueHead = 0;
      }
      if (s.ws.bufferedAmount < softBuffer) {
        s.ws.send(frame);
        continue;
      }
      s.draining = true;
      s.ws.send(frame, () => {
        s.draining = false;
        pump(s);
      });
      return;
    }
  };
  const send = (s: Session, message: Record<string, unknown>): void =>
    enqueue(s, JSON.stringify(message));
  const reply = (s: Session, id: string | undefined, message: Record<string, unknown>): void =>
    send(s, id === undefined ? message : { ...message, id });
  const error = (
    s: Session,
    id: string | undefined,
    code: number,
    message: string,
    extra: Record<string, unknown> = {},
  ): void => reply(s, id, { type: 'error', code, message, ...extra });

  const attach = (s: Session, account: string): void => {
    s.account = account;
    let set = byAccount.get(account);
    if (set === undefined) {
      set = new Set();
      byAccount.set(account, set);
    }
    set.add(s);
  };
  const logout = (s: Session): void => {
    s.trading?.();
    s.trading = null;
    s.summaries = false;
    if (s.summaryTimer !== null) clearTimeout(s.summaryTimer);
    s.summaryTimer = null;
    if (s.account !== null) {
      const set = byAccount.get(s.account);
      set?.delete(s);
      if (set?.size === 0) byAccount.delete(s.account);
    }
    s.account = null;
  };
  const detach = (s: Session): void => {
    if (s.closed) return;
    s.closed = true;
    if (s.idleTimer !== null) clearTimeout(s.idleTimer);
    s.idleTimer = null;
    logout(s);
    sessions.delete(s);
    ctx.connectionSlots.release(s.ip);
    // Nothing more is sent: what was queued is garbage now, not after the socket has gone.
    s.queue.length = 0;
    s.queueHead = 0;
    s.queuedBytes = 0;
  };

  const pushSummary = (s: Session): void => {
    if (s.summaryTimer !== null || !s.summaries) return;
    s.summaryTimer = setTimeout(() => {
      s.summaryTimer = null;
      if (!s.summaries || s.account === null) return;
      const summary = accountSummary(ctx.host.state, s.account, ctx.host.now());
      if (summary !== undefined) send(s, { type: 'accountSummary', ...summary });
    }, limits.summaryCoalesceMs);
    s.summaryTimer.unref();
  };

  const unsubscribeBatches = ctx.host.subscribe((batch: CommittedBatch) => {
    for (const events of batch.events) {
      for (const e of events) {
        if (e.type !== 'accountChanged') continue;
        for (const s of byAccount.get(e.account) ?? []) pushSummary(s);
      }
    }
  });

  /**
   * The idle deadline (protocol.md section 5: no request and no pong for `idleTimeoutMs`, close
   * 4408). One timer per connection, armed for the deadline of the last activity known when it
   * is set; requests and pongs only move `lastActivity`, and a timer that finds the connection
   * active since re-arms for the time left. So a silent connection closes at the deadline, not
   * at the next ping tick, and the hot path touches no timer.
   */
  const heartbeat = setInterval(() => {
    for (const s of sessions) s.ws.ping();
  }, limits.pingIntervalMs);
  heartbeat.unref();

  const requireAuth = (s: Session, id: string | undefined): s is Session & { account: string } => {
    if (s.account !== null) return true;
    error(s, id, 4003, 'NOT_AUTHENTICATED: authenticate first');
    return false;
  };

  const outcomeError = (s: Session, id: string | undefined, r: Refusal): void => {
    const o = r.outcome;
    const extra: Record<string, unknown> = {};
    if (r.retryAfterMs !== undefined) extra.retryAfterMs = r.retryAfterMs;
    if (o !== undefined && !o.ok) {
      if (o.orderId !== undefined) extra.orderId = String(o.orderId);
      if (o.cloid !== undefined) extra.cloid = o.cloid;
    }
    error(s, id, r.code, r.message, extra);
  };

  /** Answers an order request from its engine outcome. */
  const orderAnswer = (
    s: Session,
    id: string | undefined,
    r: Refusal | Processed,
    ack: string,
  ): void => {
    if (!r.ok) return outcomeError(s, id, r);
    const refused = engineRefusal(r);
    if (refused !== undefined) return outcomeError(s, id, refused);
    const o = r.result.outcome as Outcome & { ok: true };
    const specOf = specsOf(ctx.host.state);
    if (o.kind === 'cancelAll')
      return reply(s, id, { type: ack, cancelled: o.cancelled, seq: o.seq });
    if (o.kind === 'order' || o.kind === 'cancel' || o.kind === 'replace') {
      const message: Record<string, unknown> = {
        type: ack,
        order: wireOrder(o.order, specOf(o.order.market)),
        seq: o.seq,
      };
      if (o.kind === 'replace') message.origCloid = o.origCloid ?? null;
      return reply(s, id, message);
    }
    error(s, id, 5001, 'EXCHANGE_ERROR: unexpected engine answer');
  };

  const instrumentCheck =
    (msg: Record<string, unknown>) =>
    ({ struct }: { readonly struct: { readonly market: number } }): Rejection | undefined => {
      if (msg.instrument === undefined) return undefined;
      const id =
        typeof msg.instrument === 'string' ? ctx.host.state.symbols.get(msg.instrument) : undefined;
      if (id === undefined || id !== struct.market) {
        return reject(
          'INVALID_REQUEST',
          `instrument ${showValue(msg.instrument)} does not name the signed market ${struct.market}`,
        );
      }
      return undefined;
    };

  /** Answers a `claimLiquidation` from its engine outcome. */
  const claimAnswer = (s: Session, id: string | undefined, r: Refusal | Processed): void => {
    if (!r.ok) return outcomeError(s, id, r);
    const refused = engineRefusal(r);
    if (refused !== undefined) return outcomeError(s, id, refused);
    const o = r.result.outcome;
    if (!o.ok || o.kind !== 'claim')
      return error(s, id, 5001, 'EXCHANGE_ERROR: unexpected engine answer');
    // The auction may already be settled and gone: its market comes from the claim's own event.
    let market: number | undefined;
    for (const e of r.result.events)
      if (e.type === 'auction' && e.auction.auctionId === o.auctionId) market = e.auction.market;
    const spec = market === undefined ? undefined : ctx.host.state.markets.get(market)?.spec;
    reply(s, id, {
      type: 'claimAck',
      auctionId: String(o.auctionId),
      quantity:
        spec === undefined
          ? o.quantity.toString()
          : formatDecimal(o.quantity, spec.quantityDecimals),
      price: formatPrice(o.price),
      seq: o.seq,
    });
  };

  /** The unsigned fields of a `transferMargin` message against its signed payload. */
  const transferCheck =
    (msg: Record<string, unknown>) =>
    ({
      struct,
    }: {
      readonly struct: { readonly amount: bigint; readonly flags: number; readonly market: number };
    }): Rejection | undefined => {
      const bad = (d: string) => reject('INVALID_REQUEST', d);
      const amount = parseAmount(msg.amount);
      if (!amount.ok) return bad(amount.error);
      if (amount.value !== struct.amount)
        return bad(
          `amount ${msg.amount} does not match the signed amount ${formatCollateral(struct.amount)}`,
        );
      if (msg.direction !== 'crossToIsolated' && msg.direction !== 'isolatedToCross')
        return bad('direction must be crossToIsolated or isolatedToCross');
      if ((msg.direction === 'isolatedToCross') !== (struct.flags === 1))
        return bad('direction does not match flags bit 0 of the signed payload');
      const marketId =
        typeof msg.instrument === 'string' ? ctx.host.state.symbols.get(msg.instrument) : undefined;
      if (marketId === undefined || marketId !== struct.market)
        return bad('instrument does not name the signed market');
      return undefined;
    };

  /** Answers a `transferMargin` from its engine outcome (`command_id` lifecycle). */
  const transferAnswer = (s: Session, id: string | undefined, r: Refusal | Processed): void => {
    if (!r.ok) return outcomeError(s, id, r);
    const o = r.result.outcome;
    if (o.ok && o.kind === 'command')
      return reply(s, id, {
        type: 'marginTransferred',
        command_id: o.commandId,
        status: 'Submitted',
      });
    if (!o.ok && o.commandId !== undefined) {
      return reply(s, id, {
        type: 'marginTransferred',
        command_id: o.commandId,
        status: 'Rejected',
        code: o.code,
        message: o.message,
      });
    }
    const refused = engineRefusal(r);
    if (refused !== undefined) return outcomeError(s, id, refused);
    // As for orders and claims: a request is never left without an answer.
    error(s, id, 5001, 'EXCHANGE_ERROR: unexpected engine answer');
  };

  /** Answers a request whose handling threw: the host's stop code, else a retryable 5000. */
  const failed = (s: Session, id: string | undefined, e: unknown): void => {
    // A stopped engine is the spec's 5002 (journal) or 5001 (engine) and is logged by the host.
    if (e instanceof HostStoppedError) return error(s, id, e.code, e.message);
    error(s, id, 5000, 'INTERNAL_ERROR: the request failed; retry with backoff');
    console.error('trading message failed', e);
  };

  /**
   * A signed request has joined its wallet's queue (`SignedRequests.handle` queues before it
   * first waits); its answer follows when the engine has it. The connection's next message is
   * not held until then: the wallet queue, not the connection, orders a wallet's requests
   * (protocol.md section 5, across connections), and a request held on one socket behind a slow
   * signature check would let a later one from another socket of the wallet overtake it.
   */
  /** Requests handed to the engine whose answers are still to come (see close()). */
  const answering = new Set<Promise<void>>();
  const answerLater = (s: Session, id: string | undefined, answer: Promise<void>): void => {
    const settled = answer.catch((e: unknown) => failed(s, id, e));
    answering.add(settled);
    void settled.finally(() => answering.delete(settled));
  };

  const handlers: Record<
    string,
    (s: Session, id: string | undefined, msg: Record<string, unknown>) => Promise<void> | void
  > = {
    ping: (s, id) => reply(s, id, { type: 'pong', serverTime: ctx.host.now() }),

    authenticate: async (s, id, msg) => {
      if (!isSignatureObject(msg.signature)) {
        return error(
          s,
          id,
          4000,
          'INVALID_REQUEST: signature must be an object { sig, payload } of hex strings',
        );
      }
      const received = receivePayload(msg.signature.payload, {
        discriminator: DISCRIMINATOR.Authenticate,
      });
      if (!received.ok) return error(s, id, received.error.code, received.error.message);
      const v = await requests.verify(received.value, msg.signature.sig);
      if (!v.ok)
        return error(
          s,
          id,
          v.error.code,
          v.error.message,
          'transient' in v ? { retryAfterMs: VERIFY_RETRY_MS } : {},
        );
      if (v.value.payload.kind !== 'Authenticate')
        return error(s, id, 4000, 'INVALID_REQUEST: expected an Authenticate payload');
      const account = v.value.signer;
      // An authenticated connection moves only by `logout` (interface-spec, connection states):
      // a valid signature by another wallet is 4004 ("signed wallet differs from authenticated
      // wallet"), as for every other signed message, and leaves the connection, its
      // subscriptions and the other wallet's nonce as they were. Re-authenticating as the same
      // wallet stays allowed (a fresh signature, nothing changes).
      if (s.account !== null && s.account !== account) {
        const r = reject(
          'WALLET_MISMATCH',
          `the authenticate is signed by ${account}, this connection is authenticated as ${s.account}; log out first`,
        );
        return error(s, id, r.code, r.message);
      }
      // The engine sees every authenticate whose signature verified, so its nonce is consumed
      // (and journaled) even when the connection cap below refuses the session (protocol.md
      // section 3); otherwise the refused message could be replayed once a connection closes.
      let r: Awaited<ReturnType<SignedRequests['authenticate']>>;
      try {
        // Counted against the signer once the signature verified (protocol.md section 5); on a
        // connection already authenticated as this wallet the per-second share was counted on
        // arrival. A refusal for rate stops before the engine: the nonce stays unused.
        r = await requests.authenticate(
          account,
          v.value.payload.struct.nonce,
          s.account === account,
          s.ip,
        );
      } catch (e) {
        // Authentication creates or retrieves the account: when the engine cannot, that is the
        // spec's 5003 (interface-spec, connection states).
        if (!(e instanceof HostStoppedError)) throw e;
        return error(
          s,
          id,
          ErrorCode.EXCHANGE_ACCOUNT_ERROR,
          `EXCHANGE_ACCOUNT_ERROR: the account could not be created or retrieved (${e.message})`,
        );
      }
      if (!r.ok) return outcomeError(s, id, r);
      const o = r.result.outcome;
      if (!o.ok) return error(s, id, o.code, o.message);
      // The socket may have gone while the engine worked: it must not hold a place in the cap.
      if (s.closed) return;
      if (s.account !== account) {
        const open = byAccount.get(account)?.size ?? 0;
        if (open >= limits.connectionsPerAccount) {
          error(
            s,
            id,
            5000,
            `INTERNAL_ERROR: ${account} already has ${limits.connectionsPerAccount} authenticated connections`,
          );
          closeWithin(s.ws, CloseCode.TOO_MANY_CONNECTIONS, 'too many connections');
          detach(s);
          return;
        }
        logout(s);
        attach(s, account);
      }
      reply(s, id, { type: 'authenticateSuccess', account, serverTime: ctx.host.now() });
    },

    logout: (s, id) => {
      logout(s);
      reply(s, id, { type: 'logoutSuccess' });
    },

    subscribeTrading: (s, id, msg) => {
      if (!requireAuth(s, id)) return;
      if (s.trading !== null)
        return error(
          s,
          id,
          4033,
          'ALREADY_SUBSCRIBED: this connection already receives execution reports',
        );
      const fromSeq = msg.fromSeq;
      if (
        fromSeq !== undefined &&
        (typeof fromSeq !== 'number' || !Number.isSafeInteger(fromSeq) || fromSeq < 0)
      ) {
        return error(s, id, 4000, 'INVALID_REQUEST: fromSeq must be a non-negative integer');
      }
      const account = s.account;
      const specOf = specsOf(ctx.host.state);
      // Subscribe first and hold live reports back until the ack and the replay are out.
      const held: ExecutionReport[] = [];
      let live = false;
      let sentUpTo = 0;
      s.trading = ctx.streams.subscribe(account, (reports, batch) => {
        const spec = specsOf(batch.state);
        for (const r of reports) {
          if (!live) held.push(r);
          else if (r.seq > sentUpTo) {
            send(s, wireReport(r, spec));
            sentUpTo = r.seq;
          }
        }
      });
      const state = ctx.host.state;
      const acct = state.accounts.get(account);
      const seq = acct?.reportSeq ?? 0;
      const openOrders =
        acct === undefined
          ? []
          : accountOrders(state, acct).map((o) => wireOrder(o, specOf(o.market)));
      const replay = fromSeq === undefined ? undefined : ctx.streams.since(account, fromSeq, seq);
      const replaying = replay !== undefined && !replay.resyncRequired && replay.reports.length > 0;
      reply(s, id, {
        type: 'subscribeTradingSuccess',
        account,
        seq,
        openOrders,
        replay: replaying ? { fromSeq, toSeq: seq } : null,
        resyncRequired: replay?.resyncRequired ?? false,
      });
      if (replaying) {
        const reports = replay.reports.filter((r) => r.seq <= seq);
        if (reports.length > 0) {
          enqueue(s, {
            reports,
            next: 0,
            frame: (r) => JSON.stringify(wireReport(r, specOf, true)),
          });
        }
      }
      // Live reports continue right after the acknowledged seq.
      sentUpTo = seq;
      live = true;
      for (const r of held) {
        if (r.seq > sentUpTo) {
          send(s, wireReport(r, specsOf(ctx.host.state)));
          sentUpTo = r.seq;
        }
      }
    },

    unsubscribeTrading: (s, id) => {
      s.trading?.();
      s.trading = null;
      reply(s, id, { type: 'unsubscribeTradingSuccess' });
    },

    subscribeAccountSummary: (s, id) => {
      if (!requireAuth(s, id)) return;
      s.summaries = true;
      const summary = accountSummary(ctx.host.state, s.account, ctx.host.now());
      reply(s, id, { type: 'accountSummary', ...(summary ?? {}) });
    },

    unsubscribeAccountSummary: (s, id) => {
      s.summaries = false;
      if (s.summaryTimer !== null) clearTimeout(s.summaryTimer);
      s.summaryTimer = null;
      reply(s, id, { type: 'unsubscribeAccountSummarySuccess' });
    },

    placeOrder: (s, id, msg) => {
      if (!requireAuth(s, id)) return;
      const r = requests.handle(msg.signature, {
        allowed: ['Order'],
        authenticated: s.account,
        counted: true,
        precheck: instrumentCheck(msg),
      });
      answerLater(
        s,
        id,
        r.then((answer) => orderAnswer(s, id, answer, 'orderAck')),
      );
    },
    cancelOrder: (s, id, msg) => {
      if (!requireAuth(s, id)) return;
      const r = requests.handle(msg.signature, {
        allowed: ['Cancel'],
        authenticated: s.account,
        counted: true,
        precheck: instrumentCheck(msg),
      });
      answerLater(
        s,
        id,
        r.then((answer) => orderAnswer(s, id, answer, 'cancelAck')),
      );
    },
    replaceOrder: (s, id, msg) => {
      if (!requireAuth(s, id)) return;
      const r = requests.handle(msg.signature, {
        allowed: ['Replace'],
        authenticated: s.account,
        counted: true,
        precheck: instrumentCheck(msg),
      });
      answerLater(
        s,
        id,
        r.then((answer) => orderAnswer(s, id, answer, 'replaceAck')),
      );
    },
    cancelAll: (s, id, msg) => {
      if (!requireAuth(s, id)) return;
      // An `instrument` must name the signed market here too: ignored, one sent with a market-0
      // payload (every market) would cancel the orders of every other market as well.
      const r = requests.handle(msg.signature, {
        allowed: ['CancelAll'],
        authenticated: s.account,
        counted: true,
        precheck: instrumentCheck(msg),
      });
      answerLater(
        s,
        id,
        r.then((answer) => orderAnswer(s, id, answer, 'cancelAllAck')),
      );
    },

    claimLiquidation: (s, id, msg) => {
      if (!requireAuth(s, id)) return;
      const pending = requests.handle(msg.signature, {
        allowed: ['ClaimLiquidation'],
        authenticated: s.account,
        counted: true,
      });
      answerLater(
        s,
        id,
        pending.then((r) => claimAnswer(s, id, r)),
      );
    },

    transferMargin: (s, id, msg) => {
      if (!requireAuth(s, id)) return;
      const pending = requests.handle(msg.signature, {
        allowed: ['MarginTransfer'],
        authenticated: s.account,
        counted: true,
        precheck: transferCheck(msg),
      });
      answerLater(
        s,
        id,
        pending.then((r) => transferAnswer(s, id, r)),
      );
    },
  };

  const onMessage = async (s: Session, data: RawData, isBinary: boolean): Promise<void> => {
    // Every message counts, refused ones included: per wallet once the connection is
    // authenticated, per client address before. A malformed frame costs the venue a parse and a
    // reply like any other; uncounted, one socket could send them without limit.
    const admit = (): RateDecision =>
      s.account !== null
        ? ctx.walletLimiter.admit(s.account, ctx.rateNow(), 'unsigned')
        : ctx.ipLimiter.admit(s.ip, ctx.rateNow(), 'unsigned');
    /** Refuses a malformed message with 4000, or with 4029 when it is also over the rate. */
    const malformed = (id: string | undefined, message: string): void => {
      const d = admit();
      if (!d.ok) return error(s, id, d.code, d.message, { retryAfterMs: d.retryAfterMs });
      return error(s, id, 4000, message);
    };
    if (isBinary)
      return malformed(
        undefined,
        'INVALID_REQUEST: binary frames are not accepted; send JSON text',
      );
    const bytes = Array.isArray(data)
      ? data.reduce((n, b) => n + b.byteLength, 0)
      : (data as ArrayBuffer).byteLength;
    if (s.account === null && bytes > UNAUTHENTICATED_MESSAGE_BYTES) {
      // Before authenticating a connection can only authenticate, ping and log out, all far
      // smaller: a larger message is refused unread, so an anonymous client cannot make the
      // engine's thread parse 64 KiB per frame.
      return malformed(
        undefined,
        `INVALID_REQUEST: a message before authenticate may be at most ${UNAUTHENTICATED_MESSAGE_BYTES} bytes, this one has ${bytes}`,
      );
    }
    const text = Array.isArray(data)
      ? Buffer.concat(data).toString('utf8')
      : Buffer.from(data as ArrayBuffer).toString('utf8');
    const parsed = parseJson(text, limits.maxJsonDepth);
    if (!parsed.ok) return malformed(refusedTextId(text), `INVALID_REQUEST: ${parsed.error}`);
    const msg = parsed.value;
    if (!isRecord(msg) || typeof msg.type !== 'string')
      return malformed(
        refusedMessageId(msg),
        'INVALID_REQUEST: a message is an object with a string type',
      );
    let id: string | undefined;
    if (msg.id !== undefined) {
      if (typeof msg.id !== 'string' || !MESSAGE_ID_RE.test(msg.id))
        return malformed(undefined, 'INVALID_REQUEST: id must be 1-64 characters of [A-Za-z0-9_-]');
      id = msg.id;
    }
    const d = admit();
    if (!d.ok) return error(s, id, d.code, d.message, { retryAfterMs: d.retryAfterMs });
    const handler = Object.hasOwn(handlers, msg.type) ? handlers[msg.type] : undefined;
    if (handler === undefined)
      return error(
        s,
        id,
        4000,
        `INVALID_REQUEST: unknown message type ${JSON.stringify(msg.type).slice(0, 80)}`,
      );
    try {
      await handler(s, id, msg);
    } catch (e) {
      failed(s, id, e);
    }
  };

  return {
    handleUpgrade(request, socket, head) {
      const ip = ctx.clientAddress(request);
      // One count with the market-data socket's (protocol.md 5: connections per IP, all paths).
      if (!ctx.connectionSlots.take(ip)) {
        // A slot frees when one of the address's sockets closes: retrying later may succeed.
        socket.write(
          'HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: 0\r\n\r\n',
        );
        socket.destroy();
        return;
      }
      // A handshake the WebSocket server refuses (no key, bad version) never reaches the
      // callback and no session detaches: its slot is given back when the socket closes.
      let attached = false;
      socket.once('close', () => {
        if (!attached) ctx.connectionSlots.release(ip);
      });
      wss.handleUpgrade(request, socket, head, (ws) => {
        attached = true;
        const s: Session = {
          ws,
          ip,
          account: null,
          lastActivity: performance.now(),
          idleTimer: null,
          trading: null,
          summaries: false,
          summaryTimer: null,
          chain: Promise.resolve(),
          closed: false,
          queue: [],
          queueHead: 0,
          queuedBytes: 0,
          draining: false,
        };
        sessions.add(s);
        armIdle(s, limits.idleTimeoutMs, detach);
        ws.on('error', () => detach(s));
        ws.on('close', () => detach(s));
        ws.on('pong', () => {
          s.lastActivity = performance.now();
        });
        ws.on('message', (data, isBinary) => {
          // A socket the server has let go of (shutting down, idle, too slow) takes no more
          // requests: one read after the venue's stop decided its snapshot would be applied
          // after it. Those received before are finished and answered (see close()).
          if (s.closed || stopping) return;
          // Activity counts on arrival, even while earlier messages are still being handled.
          s.lastActivity = performance.now();
          s.chain = s.chain.then(() => onMessage(s, data, isBinary));
        });
      });
    },
    async close() {
      clearInterval(heartbeat);
      // From here no message is read and no connection accepted (the server answers an
      // upgrade 503); the sockets stay open until what was received is answered.
      stopping = true;
      const serverClosed = new Promise<void>((resolve) => wss.close(() => resolve()));
      const closing = [...sessions];
      // Requests already received finish (applied and journaled, or refused) before this
      // returns, so the venue's clean stop finds the engine idle for good and its snapshot
      // covers them: first the messages on each session's chain, then the requests they handed
      // on (signature recovery, then the engine), which answer later. Their answers and reports
      // go out before the close frame: exactly one reply per request (protocol.md section 1),
      // even at a stop; a client is not left guessing whether an order it sent was placed.
      await Promise.allSettled(closing.map((s) => s.chain));
      await Promise.allSettled([...answering]);
      unsubscribeBatches();
      // What a session still queues (behind a full socket buffer) gets the grace to go out.
      const deadline = performance.now() + CLOSE_GRACE_MS;
      await Promise.all(closing.map((s) => queueDrained(s, deadline)));
      for (const s of closing) {
        closeWithin(s.ws, CloseCode.SHUTDOWN, 'server shutting down');
        detach(s);
      }
      await serverClosed;
    },
    get connections() {
      return sessions.size;
    },
  };
}
