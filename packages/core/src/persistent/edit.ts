/**
 * Copy-on-write ownership. A reducer call opens one {@link Edit}; a record or collection node
 * whose `edit` field is that token was created inside this call and may be mutated in place,
 * anything else belongs to a state somebody else may still hold and is copied before the first
 * write. This is how the reducer stays pure (the caller's state is never mutated) while a batch of
 * commands pays each copy once.
 *
 * @module
 */

/**
 * An identity token for one write session. It carries no data: two edits are distinct because
 * they are distinct objects, so no counter or global is needed.
 */
export interface Edit {
  readonly __edit: true;
}

/** Opens a new write session. */
export function newEdit(): Edit {
  return { __edit: true };
}

/** A record that may be owned by a write session. */
export interface Owned {
  /** The write session that may mutate this record in place; `null` once published. */
  edit: Edit | null;
}
