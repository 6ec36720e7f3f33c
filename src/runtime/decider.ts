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
