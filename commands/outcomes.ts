/**
 * Batch commands decided as one command (a folders batch on the organization's tree, the
 * grants of one user in one organization) have a pure `plan(command, state)` that returns
 * the events AND each item's outcome; the decider's `decide` is `plan(...).events`.
 *
 * `capturing` wraps such a decider for one request so the route can read the outcomes of
 * the decision that was actually appended: the command handler may call `decide` several
 * times (a revision conflict retries with fresh state), and the last call is the one whose
 * events were appended. The wrapper keeps the decider's name, so the state cache is shared.
 */
import type { Decider, DomainEvent } from '../src/runtime/decider.js';

export interface Planned<E, O> {
  events: E[];
  outcomes: Map<string, O>;
}

export function capturing<S, C, E extends DomainEvent, O>(
  decider: Decider<S, C, E>,
  plan: (command: C, state: S) => Planned<E, O>,
): { decider: Decider<S, C, E>; outcomes: () => Map<string, O> } {
  let last = new Map<string, O>();
  return {
    decider: {
      ...decider,
      decide(command, state) {
        const p = plan(command, state);
        last = p.outcomes;
        return p.events;
      },
    },
    outcomes: () => last,
  };
}
