/**
 * The shape every aggregate in commands/ has: events and commands are
 * `{ type, data, metadata }` records, `decide` is pure (guards, then events; refusals throw
 * ApiError), `evolve` is pure and total (an event that does not apply returns state as is).
 */
export interface DomainEvent<Type extends string = string, Data extends Record<string, unknown> = Record<string, unknown>> {
  type: Type;
  data: Data;
}

export interface Command<Type extends string = string, Data = unknown> {
  type: Type;
  data: Data;
  /** Time and generated values come in on the command, so `decide` stays pure. */
  metadata: { now: number };
}

export interface Decider<State, Cmd, Event extends DomainEvent> {
  /** A stable name: the state cache keys on it, so two deciders never share a state. */
  name: string;
  initialState: () => State;
  evolve: (state: State, event: Event) => State;
  decide: (command: Cmd, state: State) => Event[];
}

/**
 * A command as a caller writes it: `metadata` may be left out, and the context that runs it
 * (`execute` in src/http/context.ts and src/usecases/context.ts) stamps the request's clock
 * reading, so `metadata: { now }` is written in one place. Distributes over a union of
 * commands, so `{ type: 'AddDocument', data }` still picks its own `data` type.
 */
export type Unstamped<C> = C extends { metadata: { now: number } } ? Omit<C, 'metadata'> & { metadata?: C['metadata'] } : C;

/** The command with `metadata.now` set to `now` unless the caller set it. */
export function stamp<C>(command: Unstamped<C>, now: number): C {
  const c = command as { metadata?: unknown };
  return (c.metadata ? command : { ...command, metadata: { now } }) as C;
}

/**
 * What a batch command's decision returns: the events to append and each item's outcome,
 * keyed by item (a folder id, a user id, a resource key). A folders batch, say, appends the
 * folders that could be added and answers "Folder already exists" for the others.
 */
export interface Planned<E, O> {
  events: E[];
  outcomes: Map<string, O>;
}

/**
 * A decider whose decision carries per-item outcomes beside its events: `plan` is pure like
 * `decide`, and `decide` is `plan(...).events`. The command handler's `handlePlan` runs it
 * and returns the outcomes of the decision whose events were appended.
 */
export interface PlanningDecider<S, C, E extends DomainEvent, O> extends Decider<S, C, E> {
  plan: (command: C, state: S) => Planned<E, O>;
}
