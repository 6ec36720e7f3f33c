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
import type { Decider, DomainEvent } from './decider.js';
import { newEventId } from '../shared/ids.js';
import { evictOldest } from '../shared/evict.js';

export interface HandleResult<State, Event> {
  /** The state after the command (equal to the loaded one when nothing was appended). */
  state: State;
  events: Event[];
  /** Log position of the last appended event; undefined when `decide` returned no events. */
  position?: LogPosition;
}

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
    const previous = this.queues.get(stream) ?? Promise.resolve();
    const run = previous.then(
      () => this.decideAndAppend(decider, stream, command, metadata),
      () => this.decideAndAppend(decider, stream, command, metadata),
    );
    const settled = run.catch(() => undefined);
    this.queues.set(stream, settled);
    void settled.then(() => {
      if (this.queues.get(stream) === settled) this.queues.delete(stream);
    });
    return run;
  }

  private async decideAndAppend<S, C, E extends DomainEvent>(
    decider: Decider<S, C, E>,
    stream: string,
    command: C,
    metadata: EventMetadata,
  ): Promise<HandleResult<S, E>> {
    for (let attempt = 0; ; attempt++) {
      // First attempt: decide without asking the store, on the state this process has cached,
      // or, for a stream it has never seen, on the initial state (most such commands create
      // the stream: a documents/add of 100 new documents then reads no stream at all). The
      // append's expected revision rejects the guess if the stream moved or exists (then the
      // retry loads). Only an append can be checked that way: a refusal or a no-op on the
      // guessed state is decided again on a fresh one.
      let loaded = attempt === 0 ? this.cachedState(decider, stream) ?? { state: decider.initialState(), revision: -1 } : null;
      let events: E[] = [];
      if (loaded) {
        try {
          events = decider.decide(command, loaded.state);
        } catch {
          events = [];
        }
        if (events.length === 0) loaded = null;
      }
      if (!loaded) {
        loaded = await this.load(decider, stream);
        events = decider.decide(command, loaded.state);
      }
      const { state, revision } = loaded;
      if (events.length === 0) return { state, events };
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
        return { state: next, events, position: result.position };
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

