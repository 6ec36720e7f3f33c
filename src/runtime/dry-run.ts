/**
 * The command handler of a dry run (`x-dry-run: true`, issue 38): the same deciders on the
 * same states as the real handler, but what a decision would append goes to an overlay of the
 * streams kept for this one request, never to the store.
 *
 * - `load` is the real handler's load (which asks the store for newer events, so the state
 *   is as fresh as a real command's) with the overlay's events of that stream folded on top:
 *   a later command of the same request, and a use case's own `load`, see what earlier
 *   decisions of the request would have done.
 * - `handle` and `handlePlan` decide on that state and keep the events, in decision order
 *   (`decided`). No position is answered, so the request waits for no read model.
 * - Commands on one stream run one at a time, as in the real handler: a batch's items
 *   decided concurrently on one aggregate would otherwise all see the same state.
 *
 * The real handler decides its first attempt on a cached guess and lets the append's
 * expected revision reject it; a dry run has no append to check the guess, so it always loads.
 */
import type { EventMetadata, EventStore } from '../ports/event-store.js';
import { CommandHandler, type HandleResult, type PlannedResult } from './command-handler.js';
import type { Decider, DomainEvent, PlanningDecider } from './decider.js';

/** An event a dry run decided and did not append, with its stream. */
export interface DecidedEvent {
  stream: string;
  /** The revision the event would have had in its stream. */
  revision: number;
  type: string;
  data: unknown;
  metadata: EventMetadata;
}

export class DryRunCommandHandler extends CommandHandler {
  /** Per stream, the events this request decided, in order. */
  private readonly overlay = new Map<string, DomainEvent[]>();
  private readonly streamQueues = new Map<string, Promise<unknown>>();
  /** Every event decided in this request, in decision order. */
  readonly decided: DecidedEvent[] = [];

  constructor(
    private readonly real: CommandHandler,
    store: EventStore,
  ) {
    super(store);
  }

  override async load<S, C, E extends DomainEvent>(decider: Decider<S, C, E>, stream: string): Promise<{ state: S; revision: number }> {
    const loaded = await this.real.load(decider, stream);
    const pending = this.overlay.get(stream) ?? [];
    return { state: pending.reduce((s, e) => decider.evolve(s, e as E), loaded.state), revision: loaded.revision + pending.length };
  }

  override handle<S, C, E extends DomainEvent>(decider: Decider<S, C, E>, stream: string, command: C, metadata: EventMetadata): Promise<HandleResult<S, E>> {
    return this.queued(stream, async () => {
      const { state, revision } = await this.load(decider, stream);
      const events = decider.decide(command, state);
      return { state: this.keep(decider, stream, { state, revision }, events, metadata), events };
    });
  }

  override handlePlan<S, C, E extends DomainEvent, O>(
    decider: PlanningDecider<S, C, E, O>,
    stream: string,
    command: C,
    metadata: EventMetadata,
  ): Promise<PlannedResult<S, E, O>> {
    return this.queued(stream, async () => {
      const { state, revision } = await this.load(decider, stream);
      const { events, outcomes } = decider.plan(command, state);
      return { state: this.keep(decider, stream, { state, revision }, events, metadata), events, outcomes };
    });
  }

  /** Records `events` as appended to `stream` for the rest of the request; answers the state after them. */
  private keep<S, C, E extends DomainEvent>(decider: Decider<S, C, E>, stream: string, loaded: { state: S; revision: number }, events: E[], metadata: EventMetadata): S {
    const { state, revision } = loaded;
    if (events.length === 0) return state;
    const pending = this.overlay.get(stream) ?? [];
    this.overlay.set(stream, [...pending, ...events]);
    events.forEach((e, i) => this.decided.push({ stream, revision: revision + 1 + i, type: e.type, data: e.data, metadata }));
    return events.reduce(decider.evolve, state);
  }

  private queued<T>(stream: string, work: () => Promise<T>): Promise<T> {
    const previous = this.streamQueues.get(stream) ?? Promise.resolve();
    const run = previous.then(work, work);
    this.streamQueues.set(stream, run.catch(() => undefined));
    return run;
  }
}
