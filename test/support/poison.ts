/**
 * A poison event, as test/parked.test.ts reproduces it: an event the agents projection cannot
 * write on the store the suite runs on (TEST_STORE), so it is parked, and a retry fails
 * again. Used by the parking suites and by those that need a parked event to show
 * (operations, console). Each store refuses a different thing, so each gets its own poison:
 * - SQLite: a config nested 1,000 objects deep (what agents/create stored before the depth
 *   limit); SQLite's JSON functions stop at that depth, so the expression indexes fail on it.
 * - PostgreSQL: an agent id of 12,000 random characters. The row's key and the audit's
 *   `target` column are btree index entries, which PostgreSQL refuses above about 2.7 kB
 *   (random text, so compression cannot bring it under). The stream name stays short: the
 *   log's own index would refuse the append otherwise.
 * Either way the agents read model and the audit index (which keeps the event's data and
 * target) park it, and no other projection does.
 */
import { randomBytes } from 'node:crypto';
import type { Harness } from './app.js';
import type { NewEvent } from '../../src/ports/event-store.js';
import { agentStream } from '../../commands/agent.js';
import { newEventId } from '../../src/shared/ids.js';

export interface Poison {
  stream: string;
  event: NewEvent;
  /** What the parked record's error says on this store. */
  error: RegExp;
}

const nested = (depth: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
};

export function agentPoison(apiKey: string): Poison {
  const metadata = { requestId: 'r', actor: 'test', time: 1, apiKey };
  const stream = agentStream(apiKey, 'deep');
  if (process.env.TEST_STORE === 'postgres') {
    const agentId = randomBytes(9000).toString('base64');
    return {
      stream,
      event: { id: newEventId(), type: 'AgentCreated', data: { agentId, config: { name: 'long' }, version: 1, createdAt: 1 }, metadata },
      error: /index row (size|requires)/,
    };
  }
  const config = { name: 'deep', contextGathering: { strategyOptions: nested(1000) } };
  return {
    stream,
    event: { id: newEventId(), type: 'AgentCreated', data: { agentId: 'deep', config, version: 1, createdAt: 1 }, metadata },
    error: /JSON/,
  };
}

/** Appends the poison event for `apiKey` and waits until the projections have passed it (parked it). */
export async function parkPoison(h: Harness, apiKey: string): Promise<Poison> {
  const poison = agentPoison(apiKey);
  await h.services.events.append(poison.stream, [poison.event], 'no_stream');
  await h.services.projections.waitFor(await h.services.events.headPosition(), 10_000);
  return poison;
}
