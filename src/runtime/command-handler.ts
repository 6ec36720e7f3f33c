/**
 * The one generic command handler: load the stream, fold `evolve`, `decide`, append with
 * the expected revision. On a revision conflict (another request appended in between) it
 * retries with fresh state a bounded number of times, then answers ABORTED.
 *
 * Commands on one stream run one at a time within this process (a per-stream queue): ten
 * concurrent items on one stream would otherwise all decide on the same state and nine
 * would conflict, again and again. Conflicts then come only from other processes.
 *
 * Loaded states are cached with their revision (a bounded LRU), so a load reads only the
 * events after the cached revision. The cache never hides another writer: every load still
 * asks the store for newer events, and the append's expected revision catches the rest.
 */
import { aborted } from '../shared/errors.js';
import {
  WrongExpectedRevisionError,
  type EventMetadata,
  type EventStore,
  type LogPosition,
} from '../ports/event-store.js';
import type { Decider, DomainEvent, Planned, PlanningDecider } from './decider.js';
import { newEventId } from '../shared/ids.js';
import { evictOldest } from '../shared/evict.js';

export interface HandleResult<State, Event> {
  /** The state after the command (equal to the loaded one when nothing was appended). */
  state: State;
  events: Event[];
  /** Log position of the last appended event; undefined when `decide` returned no events. */
  position?: LogPosition;
}

/** A planned command's result: what `handle` answers, with the outcomes of the decision that was kept. */
export interface PlannedResult<State, Event, Outcome> extends HandleResult<State, Event> {
  outcomes: Map<string, Outcome>;
}

/** One decision inside the handler: `decide`'s events, or a plan's events and outcomes. */
type Decision<E, O> = { events: E[]; outcomes: O };

interface CacheEntry {
  decider: string;
  state: unknown;
  /** Revision of the last event folded into `state`; -1 for none. */
  revision: number;
}

export interface CommandHandlerOptions {
  maxRetries?: number;
  cacheSize?: number;
}

export class CommandHandler {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly maxRetries: number;
  private readonly cacheSize: number;
  /** Told the duration of each append that landed, in seconds (GET /metrics). */
  onAppendTimed: ((seconds: number) => void) | undefined;

  constructor(
    private readonly store: EventStore,
    options: CommandHandlerOptions = {},
  ) {
    this.maxRetries = options.maxRetries ?? 5;
    this.cacheSize = options.cacheSize ?? 50_000;
  }

  /** The current state of an aggregate (read side of the write model: decide's input). */
  async load<S, C, E extends DomainEvent>(decider: Decider<S, C, E>, stream: string): Promise<{ state: S; revision: number }> {
    const cached = this.cache.get(stream);
    let state: S;
    let revision: number;
    if (cached && cached.decider === decider.name) {
      state = cached.state as S;
      revision = cached.revision;
    } else {
      state = decider.initialState();
      revision = -1;
    }
    const newer = await this.store.readStream(stream, { fromRevision: revision + 1 });
    for (const e of newer) {
      state = decider.evolve(state, e as unknown as E);
      revision = e.revision;
    }
    if (newer.length > 0 || !cached) this.remember(stream, decider.name, state, revision);
    return { state, revision };
  }

  handle<S, C, E extends DomainEvent>(
    decider: Decider<S, C, E>,
    stream: string,
    command: C,
    metadata: EventMetadata,
  ): Promise<HandleResult<S, E>> {
    const decide = (c: C, s: S): Decision<E, undefined> => ({ events: decider.decide(c, s), outcomes: undefined });
    return this.enqueue(stream, () => this.decideAndAppend(decider, decide, stream, command, metadata)).then(({ result }) => result);
  }

  /**
   * `handle` for a planning decider: the result carries the outcomes of the plan whose events
   * were appended. A revision conflict plans again on fresh state, so the outcomes answered
   * are always those of the decision that landed (or of the last one, when nothing did).
   */
  async handlePlan<S, C, E extends DomainEvent, O>(
    decider: PlanningDecider<S, C, E, O>,
    stream: string,
    command: C,
    metadata: EventMetadata,
  ): Promise<PlannedResult<S, E, O>> {
    const plan = (c: C, s: S): Planned<E, O> => decider.plan(c, s);
    const { result, outcomes } = await this.enqueue(stream, () => this.decideAndAppend(decider, plan, stream, command, metadata));
    return { ...result, outcomes };
  }

  /** Runs `work` after every earlier command on `stream` settled (the per-stream queue). */
  private enqueue<T>(stream: string, work: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(stream) ?? Promise.resolve();
    const run = previous.then(work, work);
    const settled = run.catch(() => undefined);
    this.queues.set(stream, settled);
    void settled.then(() => {
      if (this.queues.get(stream) === settled) this.queues.delete(stream);
    });
    return run;
  }

  private async decideAndAppend<S, C, E extends DomainEvent, O>(
    decider: Decider<S, C, E>,
    decide: (command: C, state: S) => Decision<E, O>,
    stream: string,
    command: C,
    metadata: EventMetadata,
  ): Promise<{ result: HandleResult<S, E>; outcomes: O }> {
    for (let attempt = 0; ; attempt++) {
      // First attempt: decide without asking the store, on the state this process has cached,
      // or, for a stream it has never seen, on the initial state (most such commands create
      // the stream: a documents/add of 100 new documents then reads no stream at all). The
      // append's expected revision rejects the guess if the stream moved or exists (then the
      // retry loads). Only an append can be checked that way: a refusal or a no-op on the
      // guessed state is decided again on a fresh one.
      let loaded = attempt === 0 ? this.cachedState(decider, stream) ?? { state: decider.initialState(), revision: -1 } : null;
      let decision: Decision<E, O> | null = null;
      if (loaded) {
        try {
          decision = decide(command, loaded.state);
        } catch {
          decision = null;
        }
        if (!decision || decision.events.length === 0) loaded = null;
      }
      if (!loaded) {
        loaded = await this.load(decider, stream);
        decision = decide(command, loaded.state);
      }
      const { events, outcomes } = decision!;
      const { state, revision } = loaded;
      if (events.length === 0) return { result: { state, events }, outcomes };
      const appendStarted = performance.now();
      try {
        const result = await this.store.append(
          stream,
          events.map((e) => ({ id: newEventId(), type: e.type, data: e.data, metadata })),
          revision === -1 ? 'no_stream' : revision,
        );
        this.onAppendTimed?.((performance.now() - appendStarted) / 1000);
        const next = events.reduce(decider.evolve, state);
        this.remember(stream, decider.name, next, result.nextRevision);
        return { result: { state: next, events, position: result.position }, outcomes };
      } catch (error) {
        if (!(error instanceof WrongExpectedRevisionError)) throw error;
        if (attempt >= this.maxRetries) {
          throw aborted('The resource was changed by concurrent requests; try again.');
        }
      }
    }
  }

  private cachedState<S, C, E extends DomainEvent>(decider: Decider<S, C, E>, stream: string): { state: S; revision: number } | null {
    const cached = this.cache.get(stream);
    return cached && cached.decider === decider.name ? { state: cached.state as S, revision: cached.revision } : null;
  }

  private remember(stream: string, decider: string, state: unknown, revision: number) {
    const prev = this.cache.get(stream);
    // A slower concurrent load must not overwrite a newer state.
    if (prev && prev.decider === decider && prev.revision > revision) return;
    this.cache.delete(stream);
    this.cache.set(stream, { decider, state, revision });
    // An eighth at a time: one-by-one eviction is slow on V8 Maps (src/shared/evict.ts).
    if (this.cache.size > this.cacheSize) evictOldest(this.cache, this.cache.size - this.cacheSize + (this.cacheSize >> 3));
  }
}

