/**
 * What routes do with the secrets a request carries before a command sees them (deciders are
 * pure, so encryption happens here, like id generation): seal every secret of a service
 * config or an agent configuration with the API key's data key. The `"__redacted__"`
 * placeholder (a client sending back what it read) is left as it is: the decider puts the
 * stored value back in its place.
 *
 * And the upgrade path's other half: the clear secrets a stored configuration still holds
 * from before encryption at rest, each with its sealed form, so the decider writes the
 * sealed form into the next event instead of copying the clear one (see `legacySealed` in
 * commands/service-config.ts and commands/agent.ts).
 */
import { SERVICE_SECRET_FIELDS, REDACTED } from '../../commands/service-config.js';
import { agentSecretValues, mapAgentSecrets, type AgentConfig } from '../../commands/agent-config.js';
import { isSealed } from '../shared/envelope.js';
import { invalidArgument } from '../shared/errors.js';
import type { SecretStore } from './store.js';

/** The config with each secret field (webhook `authToken`, email `apiKey`, ...) sealed; `''` (remove) and the placeholder kept. */
export async function sealServiceConfig(secrets: SecretStore, apiKey: string, config: Record<string, string>): Promise<Record<string, string>> {
  const secretFields = Object.keys(config).filter((k) => SERVICE_SECRET_FIELDS.has(k) && config[k] !== '' && config[k] !== REDACTED);
  if (secretFields.length === 0) return config;
  const seal = await secrets.sealer(apiKey);
  const out = { ...config };
  for (const k of secretFields) out[k] = seal(out[k]);
  return out;
}

/** Clear value -> sealed value, for the clear secrets of a stored service config; undefined when there are none. */
export async function legacyServiceSecrets(secrets: SecretStore, apiKey: string, stored: Record<string, string> | undefined): Promise<Record<string, string> | undefined> {
  const clear = Object.entries(stored ?? {})
    .filter(([k, v]) => SERVICE_SECRET_FIELDS.has(k) && v !== '' && v !== REDACTED && !isSealed(v))
    .map(([, v]) => v);
  if (clear.length === 0) return undefined;
  const seal = await secrets.sealer(apiKey);
  return Object.fromEntries(clear.map((v) => [v, seal(v)]));
}

/**
 * Values at secret positions an agent configuration may hold. Each is sealed on its own, and
 * a sealed value is about 66 bytes plus 4/3 of its JSON: without a bound, a 64 KiB
 * configuration of one-digit options (`[1,1,1,...]`, two bytes each) would be stored as
 * about 2 MB. With it, sealing adds at most about 66 KB.
 */
const MAX_AGENT_SECRET_VALUES = 1000;

/** The configuration (or an update's changes) with every value at a secret position sealed. */
export async function sealAgentSecrets<T extends Partial<AgentConfig>>(secrets: SecretStore, apiKey: string, config: T): Promise<T> {
  const values = agentSecretValues(config);
  if (values.length > MAX_AGENT_SECRET_VALUES) {
    throw invalidArgument(
      `An agent configuration holds at most ${MAX_AGENT_SECRET_VALUES} values under contextGathering.strategyOptions and execution.mcpServers[].auth (they are stored encrypted one by one); got ${values.length}.`,
    );
  }
  if (!values.some((v) => v !== REDACTED)) return config;
  const seal = await secrets.sealer(apiKey);
  return mapAgentSecrets(config, (leaf) => (leaf === REDACTED ? leaf : seal(leaf)));
}

/** JSON of a clear value -> sealed value, for the clear secrets of a stored agent configuration; undefined when there are none. */
export async function legacyAgentSecrets(secrets: SecretStore, apiKey: string, stored: AgentConfig | undefined): Promise<Record<string, string> | undefined> {
  const clear = stored ? agentSecretValues(stored).filter((v) => v !== REDACTED && !isSealed(v)) : [];
  if (clear.length === 0) return undefined;
  const seal = await secrets.sealer(apiKey);
  return Object.fromEntries(clear.map((v) => [JSON.stringify(v), seal(v)]));
}
