/**
 * What a route handler gets besides its validated `data`: who is calling, the request's
 * clock reading and id, and `execute`, which runs a command with this request's metadata
 * and remembers how far the log moved so the response can wait for the read models.
 */
import type { EventMetadata, LogPosition } from '../ports/event-store.js';
import { stamp, type Decider, type DomainEvent, type PlanningDecider, type Unstamped } from '../runtime/decider.js';
import type { HandleResult, PlannedResult } from '../runtime/command-handler.js';
import { DryRunCommandHandler } from '../runtime/dry-run.js';
import type { Services } from '../composition/services.js';

/** The API key a request in API-key mode acts for: the tenant every read and write is scoped to. */
export interface Tenant {
  apiKey: string;
  workspaceId: string;
  type: 'testing' | 'production';
}

export interface Logger {
  info(obj: unknown, msg?: string): void;
  warn(obj: unknown, msg?: string): void;
  error(obj: unknown, msg?: string): void;
}

const NEVER_ABORTED = new AbortController().signal;

export class RequestContext {
  /** Highest log position this request appended; the response waits for projections to pass it. */
  lastPosition: LogPosition | undefined;

  constructor(
    readonly services: Services,
    readonly requestId: string,
    readonly now: number,
    readonly log: Logger,
    readonly actor: string,
    readonly tenant?: Tenant,
    readonly workspaceId?: string,
    /** The user of the user token that authenticated the call (route.ts `userToken`); undefined otherwise. */
    readonly userId?: string,
    /**
     * Aborted when the client leaves or the request timeout passes (src/http/cancel.ts): long
     * queries check it through their Deadline. Never aborted for the CLI.
     */
    readonly signal: AbortSignal = NEVER_ABORTED,
  ) {}

  /**
   * The user a user token (Authorization: Bearer) authenticated, who may act as itself
   * only; undefined when the API key's own headers did (the back end, acting for anyone).
   * A route flagged `userToken` checks its data against it (src/http/acting-user.ts).
   */
  actingUser(): string | undefined {
    return this.userId;
  }

  /** A dry run's context (src/http/dry-run.ts): its commands are decided into an overlay, never appended. */
  get dryRun(): boolean {
    return this.services.commands instanceof DryRunCommandHandler;
  }

  /** The tenant of an API-key route; a route declared `apiKey` always has one. */
  get apiKey(): string {
    if (!this.tenant) throw new Error('bug: apiKey read on a route without API-key auth');
    return this.tenant.apiKey;
  }

  private meta: EventMetadata | undefined;

  /** The same frozen object for every event of the request: the event store serializes it once. */
  metadata(): EventMetadata {
    this.meta ??= Object.freeze({
      requestId: this.requestId,
      actor: this.actor,
      time: this.now,
      ...(this.workspaceId ?? this.tenant?.workspaceId ? { workspaceId: this.workspaceId ?? this.tenant?.workspaceId } : {}),
      ...(this.tenant ? { apiKey: this.tenant.apiKey } : {}),
    });
    return this.meta;
  }

  /** Runs `command` with this request's metadata; a command without `metadata` gets `{ now: this.now }`. */
  async execute<S, C, E extends DomainEvent>(decider: Decider<S, C, E>, stream: string, command: Unstamped<C>): Promise<HandleResult<S, E>> {
    const result = await this.services.commands.handle(decider, stream, stamp<C>(command, this.now), this.metadata());
    if (result.position && (!this.lastPosition || result.position > this.lastPosition)) this.lastPosition = result.position;
    return result;
  }

  /** `execute` for a planning decider: the result carries the per-item outcomes of the decision appended. */
  async executePlan<S, C, E extends DomainEvent, O>(decider: PlanningDecider<S, C, E, O>, stream: string, command: Unstamped<C>): Promise<PlannedResult<S, E, O>> {
    const result = await this.services.commands.handlePlan(decider, stream, stamp<C>(command, this.now), this.metadata());
    if (result.position && (!this.lastPosition || result.position > this.lastPosition)) this.lastPosition = result.position;
    return result;
  }
}
