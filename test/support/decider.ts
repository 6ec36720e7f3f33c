/**
 * Decider specs read `given(events).when(command).then(events)`, or `.thenFails(status, text)`
 * for a refusal. Pure: no store, no clock.
 */
import * as assert from 'uvu/assert';
import { ApiError, type StatusCode } from '../../src/shared/errors.js';
import type { Decider, DomainEvent } from '../../src/runtime/decider.js';

export function spec<S, C, E extends DomainEvent>(decider: Decider<S, C, E>) {
  return {
    given(events: E[]) {
      const state = events.reduce(decider.evolve, decider.initialState());
      return {
        state,
        when(command: C) {
          return {
            then(expected: E[]) {
              assert.equal(decider.decide(command, state), expected);
            },
            thenNothing() {
              assert.equal(decider.decide(command, state), []);
            },
            thenFails(status: StatusCode, message?: string | RegExp) {
              try {
                decider.decide(command, state);
              } catch (err) {
                assert.instance(err, ApiError);
                assert.is((err as ApiError).status, status);
                if (typeof message === 'string') assert.is((err as ApiError).message, message);
                else if (message) assert.match((err as ApiError).message, message);
                return;
              }
              assert.unreachable(`expected ${status}, but the command was accepted`);
            },
          };
        },
      };
    },
  };
}
