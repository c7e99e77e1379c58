/**
 * A small deterministic driver around the reducer for tests and simulations: it stamps time,
 * keeps the command log, checks every invariant after every command and, when asked, that the
 * reducer left its input untouched.
 *
 * @module
 */
import type { Command, OrderRequest, PlaceOrderCommand } from '../engine/commands.js';
import type { EngineEvent, ExecutionReport, Outcome } from '../engine/events.js';
import { createEngineState } from '../engine/genesis.js';
import { reduce } from '../engine/reduce.js';
import { stateHash } from '../engine/state-hash.js';
import type { EngineState, MarginMode, VenueSettings } from '../engine/types.js';
import type { Instrument, InstrumentSettings } from '../instruments/instrument.js';
import { instrument, type OrderSpec, orderRequest, px, usd } from './builders.js';
import { checkInvariants } from './invariants.js';

/** Distributes `Omit` over the command union. */
type WithoutTime<T> = T extends unknown ? Omit<T, 'time'> & { time?: number } : never;

/** A command without its time: the venue stamps it. */
export type CommandInput = WithoutTime<Command>;

/** 2026-01-01T00:00:00Z, the default start of test time. */
export const T0 = 1_767_225_600_000;

/** Options of a {@link TestVenue}. */
export interface TestVenueOptions {
  /** Venue-wide settings of the genesis state (`createEngineState`); defaults otherwise. */
  settings?: Partial<VenueSettings>;
  /** Time of the genesis state and start of the venue clock, ms (default {@link T0}). */
  time?: number;
  /** Hash the input state before and after every command and fail if it changed. */
  checkPurity?: boolean;
  /** Check every invariant after every command (default true). */
  checkInvariants?: boolean;
}

/** A deterministic venue in memory, driven command by command. */
export class TestVenue {
  /** The state after the last command. */
  state: EngineState;
  /** The venue clock, ms: the latest command time so far; a command without `time` runs 1 ms later. */
  time: number;
  /** Every command run so far, in order, including one that made `reduce` throw. */
  readonly log: Command[] = [];
  /** The events of each command that completed (one entry per command, without a thrown one). */
  readonly history: EngineEvent[][] = [];
  private readonly purity: boolean;
  private readonly invariants: boolean;

  constructor(options: TestVenueOptions = {}) {
    this.time = options.time ?? T0;
    this.state = createEngineState(options.settings ?? {}, this.time);
    this.purity = options.checkPurity ?? false;
    this.invariants = options.checkInvariants ?? true;
  }

  /**
   * Runs one command (time defaults to the venue clock + 1 ms) and returns its events. The
   * command joins `log` before it is reduced, so a log saved after `reduce` threw (or the purity
   * check failed) ends with the command that did it and replays to the same failure.
   */
  run(input: CommandInput): EngineEvent[] {
    const time = input.time ?? this.time + 1;
    this.time = Math.max(this.time, time);
    const cmd = { ...input, time } as Command;
    this.log.push(cmd);
    const before = this.purity ? stateHash(this.state) : '';
    const input_ = this.state;
    const { state, events } = reduce(this.state, cmd);
    if (this.purity && stateHash(input_) !== before) {
      throw new Error(`reduce mutated its input on ${cmd.type}`);
    }
    this.state = state;
    this.history.push(events);
    if (this.invariants) checkInvariants(state);
    return events;
  }

  /** Lists a market. */
  list(settings: InstrumentSettings): Instrument {
    const spec = instrument(settings);
    this.expectOk(this.run({ type: 'setInstrument', instrument: spec }));
    return spec;
  }

  /** The instrument of a symbol. */
  spec(symbol: string): Instrument {
    const id = this.state.symbols.get(symbol);
    if (id === undefined) throw new Error(`unknown symbol ${symbol}`);
    return this.state.markets.get(id)!.spec;
  }

  /** Opens an account. */
  open(address: string): void {
    this.expectOk(this.run({ type: 'openAccount', account: address }));
  }

  /** Deposits and settles `amount` (decimal USD) into the cross pool or an isolated pool. */
  fund(address: string, amount: string, isolated?: string): void {
    const target =
      isolated === undefined
        ? { mode: 'Cross' as MarginMode, market: 0 }
        : { mode: 'Isolated' as MarginMode, market: this.spec(isolated).id };
    const out = this.outcome(
      this.run({ type: 'deposit', account: address, amount: usd(amount), target }),
    );
    if (!out.ok || out.kind !== 'command')
      throw new Error(`deposit refused: ${JSON.stringify(out, replacer)}`);
    this.expectOk(this.run({ type: 'settleDeposit', commandId: out.commandId, success: true }));
  }

  /** Sets index prices (decimal strings by symbol). */
  oracle(prices: Record<string, string>, time?: number): EngineEvent[] {
    return this.run({
      type: 'oracle',
      ...(time === undefined ? {} : { time }),
      prices: Object.entries(prices).map(([symbol, p]) => ({
        market: this.spec(symbol).id,
        price: px(p),
      })),
    });
  }

  /** The signed-struct fields of an order. */
  request(symbol: string, order: OrderSpec): OrderRequest {
    return orderRequest(this.spec(symbol), order);
  }

  /** Places an order and returns the command's events. */
  place(
    address: string,
    symbol: string,
    order: OrderSpec,
    extra: Partial<PlaceOrderCommand> = {},
  ): EngineEvent[] {
    return this.run({
      type: 'placeOrder',
      account: address,
      order: this.request(symbol, order),
      ...extra,
    });
  }

  /** Cancels by order id or cloid. */
  cancel(
    address: string,
    symbol: string,
    target: { orderId?: number; cloid?: string },
  ): EngineEvent[] {
    return this.run({
      type: 'cancelOrder',
      account: address,
      market: this.spec(symbol).id,
      orderId: BigInt(target.orderId ?? 0),
      cloid: target.cloid ?? null,
    });
  }

  /** Moves the clock forward by a `tick`, which applies the expiries, funding and auction ends due by then. */
  advance(ms: number): EngineEvent[] {
    return this.run({ type: 'tick', time: this.time + ms });
  }

  /** The single outcome event of a command. */
  outcome(events: readonly EngineEvent[]): Outcome {
    const o = events.find((e): e is Outcome => e.type === 'outcome');
    if (o === undefined) throw new Error('no outcome');
    return o;
  }

  /** Throws when the command was refused. */
  expectOk(events: readonly EngineEvent[]): void {
    const o = this.outcome(events);
    if (!o.ok) throw new Error(`refused: ${o.code} ${o.message}`);
  }

  /** The execution reports among `events`, optionally for one account. */
  reports(events: readonly EngineEvent[], account?: string): ExecutionReport[] {
    return events.filter(
      (e): e is ExecutionReport =>
        e.type === 'executionReport' && (account === undefined || e.account === account),
    );
  }
}

/** JSON.stringify replacer that prints bigints. */
export function replacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}
