/**
 * A poison event, as test/parked.test.ts reproduces it: an AgentCreated whose strategyOptions
 * are nested 1000 levels deep (what agents/create stored before the JSON depth limit). The
 * agents projection cannot write it (SQLite's JSON functions stop at depth 1000), so it is
 * parked, and a retry fails again.
 */
import type { Harness } from './app.js';
import { newEventId } from '../../src/shared/ids.js';
import { agentStream } from '../../commands/agent.js';

const nested = (depth: number) => {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
};

/** Appends the poison event for `apiKey` and waits until the projections have passed it (parked it). */
export async function parkPoison(h: Harness, apiKey: string): Promise<void> {
  const config = { name: 'deep', contextGathering: { strategyOptions: nested(1000) } };
  await h.services.events.append(
    agentStream(apiKey, 'deep'),
    [{ id: newEventId(), type: 'AgentCreated', data: { agentId: 'deep', config, version: 1, createdAt: 1 }, metadata: { requestId: 'r', actor: 'test', time: 1, apiKey } }],
    'no_stream',
  );
  await h.services.projections.waitFor(await h.services.events.headPosition(), 10_000);
}
