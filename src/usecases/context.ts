/**
 * What a use case needs from its caller, and nothing more. The HTTP layer's RequestContext
 * (src/http/context.ts) satisfies these types, and so does the context the CLI builds, so a
 * use case runs the same from a route and from the command line without importing HTTP.
 */
import type { Decider, DomainEvent, PlanningDecider, Unstamped } from '../runtime/decider.js';
import type { HandleResult, PlannedResult } from '../runtime/command-handler.js';
import type { Services } from '../composition/services.js';

export interface UseCaseContext {
  /** The clock reading every event of the call is stamped with. */
  readonly now: number;
  readonly services: Pick<Services, 'commands' | 'secrets' | 'read' | 'config'>;
  /**
   * True under `x-dry-run: true` (src/http/dry-run.ts): commands are decided and not appended,
   * and a use case must skip whatever it does outside the log (destroying a data key, writing
   * the read store directly). Left out by callers that never dry-run (the CLI).
   */
  readonly dryRun?: boolean;
  /** Runs a command with the caller's metadata (who, which request), `metadata.now` stamped from `now` when left out. */
  execute<S, C, E extends DomainEvent>(decider: Decider<S, C, E>, stream: string, command: Unstamped<C>): Promise<HandleResult<S, E>>;
  /** `execute` for a planning decider: the result carries the outcomes of the decision that was appended. */
  executePlan<S, C, E extends DomainEvent, O>(decider: PlanningDecider<S, C, E, O>, stream: string, command: Unstamped<C>): Promise<PlannedResult<S, E, O>>;
}

/** A use case that acts inside one API key's data (its streams are named by the key). */
export interface TenantContext extends UseCaseContext {
  readonly apiKey: string;
}

/**
 * A tenant use case that also reads the read models (lists, counts, presence) and the
 * service's settings (folder depth, presence lifetime). RequestContext satisfies it.
 */
export interface TenantReadContext extends TenantContext {
  readonly services: Pick<Services, 'commands' | 'secrets' | 'read' | 'config'>;
}
