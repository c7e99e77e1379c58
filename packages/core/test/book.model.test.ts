/**
 * Model-based test: random command sequences run through the engine and through the naive
 * reference book; after every command both must report the same fills and self-trade cancels
 * and hold the same book (orders, priority, remaining quantity). The commands live in
 * `book-model.ts`.
 */
import fc from 'fast-check';
import { describe, it } from 'vitest';
import { bookVenue, commands, newModel } from './book-model.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 150);

describe('order book against the naive reference book', () => {
  it('agrees on fills, self-trade cancels and the resting book after every command', () => {
    fc.assert(
      fc.property(fc.commands(commands, { maxCommands: 150, size: 'max' }), (cmds) => {
        const venue = bookVenue();
        fc.modelRun(() => ({ model: newModel(), real: { venue } }), cmds);
      }),
      { numRuns: runs },
    );
  });
});
