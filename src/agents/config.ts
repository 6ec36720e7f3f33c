/**
 * A custom agent's configuration (spec "Agent"): its zod schema (the wire shape, with
 * defaults for every section a client leaves out), its type, and the secret handling of
 * semantics §6.
 *
 * Secrets, by position (semantics §6): every value inside `contextGathering.strategyOptions`
 * (at any depth, whatever its key), and every value of `execution.mcpServers[].auth` except
 * its `type`. They are stored on the write side only, sealed (the agent's events; the route
 * seals them with the API key's data key: src/secrets/), and replaced by `"__redacted__"`
 * everywhere else: read models, responses, audit, webhook payloads. An update that sends
 * `"__redacted__"` back (a client that read the agent and returns it edited) keeps the stored
 * secret instead of storing the placeholder.
 */
import { z } from 'zod';
import { isSealed, sealedPlaintextBytes } from '../secrets/envelope.js';

export const REDACTED = '__redacted__';

const str = (max = 256) => z.string().max(max);
const list = (max = 100) => z.array(str()).max(max);
const httpUrl = () =>
  z
    .string()
    .max(2048)
    .refine((s) => /^https?:\/\//i.test(s) && URL.canParse(s), { message: 'must be an http(s) URL' });
/**
 * JSON objects of unknown shape (options, auth): bounded in depth by the request's JSON depth
 * limit (src/http/json-depth.ts) and in size by MAX_AGENT_CONFIG_BYTES.
 */
const jsonObject = () => z.record(z.string().max(256), z.unknown());

export const mcpServerSchema = z.object({
  name: str().min(1),
  url: httpUrl(),
  transport: str(64).optional(),
  tools: list().optional(),
  auth: z.union([z.string().max(8192), jsonObject(), z.null()]).default(null),
});

export const agentInputSchema = z.object({
  inputRequirements: z.object({ requires: list().default([]) }).prefault({}),
  userContextFields: z
    .array(z.object({ id: str().min(1), title: str(), type: str(64), required: z.boolean().default(false) }))
    .max(100)
    .default([]),
});

/** Every configuration section, each complete after parsing (defaults filled in). */
export const agentSections = {
  rawInstructions: z.string().max(100_000).default(''),
  instructions: z.string().max(100_000).optional(),
  contextGathering: z
    .object({ strategies: list().default([]), strategyOptions: jsonObject().optional() })
    .prefault({}),
  execution: z
    .object({
      executionStrategy: str(64).default('default'),
      responseDescriptions: z.record(str(), z.string().max(10_000)).default({}),
      knowledge: z
        .object({ useMemory: z.boolean().default(false), maxChunks: z.number().int().min(0).max(1000).default(5) })
        .prefault({}),
      mcpServers: z.array(mcpServerSchema).max(50).default([]),
    })
    .prefault({}),
  response: z.object({ useAiFormatting: z.boolean().default(false) }).prefault({}),
  postProcess: z
    .object({
      guardrails: z.object({ enabled: z.boolean().default(false) }).prefault({}),
      deletePreviousSuggestions: z.object({ enabled: z.boolean().default(false) }).prefault({}),
      annotations: z.object({ enabled: z.boolean().default(false), strategy: str(64).default('default') }).prefault({}),
    })
    .prefault({}),
  input: agentInputSchema.prefault({}),
  scope: z
    .object({
      pageScope: list().default([]),
      crossPage: z
        .object({
          enabled: z.boolean().default(false),
          targetProperty: str().default(''),
          pageDiscovery: str(64).default(''),
        })
        .prefault({}),
    })
    .prefault({}),
};

const identity = {
  name: str().min(1),
  description: z.string().max(4096).default(''),
  enabled: z.boolean().default(true),
};

/** `agents/create`: everything but `name` is optional. */
export const agentConfigSchema = z.object({ ...identity, ...agentSections });

/** `agents/update`: any subset; a section that is given replaces the stored one whole. */
export const agentChangesSchema = z.object({
  name: identity.name.optional(),
  description: z.string().max(4096).optional(),
  enabled: z.boolean().optional(),
  rawInstructions: z.string().max(100_000).optional(),
  instructions: z.string().max(100_000).optional(),
  contextGathering: agentSections.contextGathering.unwrap().optional(),
  execution: agentSections.execution.unwrap().optional(),
  response: agentSections.response.unwrap().optional(),
  postProcess: agentSections.postProcess.unwrap().optional(),
  input: agentSections.input.unwrap().optional(),
  scope: agentSections.scope.unwrap().optional(),
});

type Parsed = z.output<typeof agentConfigSchema>;
/** The stored configuration: `instructions` defaults to `rawInstructions`. */
export type AgentConfig = Omit<Parsed, 'instructions'> & { instructions: string };
export type AgentChanges = z.output<typeof agentChangesSchema>;
export type McpServer = z.output<typeof mcpServerSchema>;

export const toAgentConfig = (p: Parsed): AgentConfig => ({ ...p, instructions: p.instructions ?? p.rawInstructions });

// ---- size (semantics §1 Limits: an agent configuration is at most 64 KiB) ----

export const MAX_AGENT_CONFIG_BYTES = 64 * 1024;

/**
 * The size of a configuration as the limit counts it: the UTF-8 bytes of its JSON, as stored
 * (defaults filled in), with `instructions` left out when it is only the default copy of
 * `rawInstructions`, and each secret counted at its clear size, not its sealed one (sealing
 * a thousand one-byte options makes some 70 KB the client never sent). Why measure the stored configuration and not the request: an update
 * replaces some sections and keeps the others, so the sum is what grows; and a client that
 * sends 40 KB of `rawInstructions` alone has sent 40 KB, not the 80 KB its copy would count.
 * Example: `{ name: "A", rawInstructions: 40,000 x "x" }` counts about 40.7 KB and fits;
 * the same with `instructions` of another 30,000 characters counts about 70.7 KB and does not.
 */
export function agentConfigBytes(config: AgentConfig): number {
  const counted = config.instructions === config.rawInstructions ? { ...config, instructions: undefined } : config;
  // A sealed leaf is written as `""` and counted as its clear JSON instead (2 bytes less).
  let sealed = 0;
  const json = JSON.stringify(counted, (_k, v: unknown) => {
    if (!isSealed(v)) return v;
    sealed += sealedPlaintextBytes(v) - 2;
    return '';
  });
  return Buffer.byteLength(json, 'utf8') + sealed;
}

// ---- secrets ----

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * `v` with `f` applied to every leaf, objects and arrays kept in shape. null and '' are
 * left as they are: they hold no secret, and a reader may need to see that nothing is set.
 */
function mapLeaves(v: unknown, f: (leaf: unknown) => unknown): unknown {
  if (Array.isArray(v)) return v.map((x) => mapLeaves(x, f));
  if (isPlainObject(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, mapLeaves(x, f)]));
  if (v === null || v === '') return v;
  return f(v);
}

/** mcpServers[].auth: every value but the scheme name (a top-level string `type`); a string auth is itself the secret. */
function mapAuth(auth: McpServer['auth'], f: (leaf: unknown) => unknown): McpServer['auth'] {
  if (!isPlainObject(auth)) return mapLeaves(auth, f) as McpServer['auth'];
  return Object.fromEntries(Object.entries(auth).map(([k, v]) => [k, k === 'type' && typeof v === 'string' ? v : mapLeaves(v, f)]));
}

/**
 * The configuration with `f` applied at every secret position (semantics §6): every value,
 * at any depth, under `contextGathering.strategyOptions`, and every value of
 * `execution.mcpServers[].auth` but its `type`. By position, not by key name: an option
 * called `pwd`, `accessKey` or `passphrase` is as secret as one called `apiKey`. Never
 * mutates its argument; works on a partial configuration (an update's changes) too.
 */
export function mapAgentSecrets<T extends Partial<AgentConfig>>(config: T, f: (leaf: unknown) => unknown): T {
  const out: T = { ...config };
  if (config.contextGathering) {
    const cg = config.contextGathering;
    out.contextGathering = cg.strategyOptions
      ? { ...cg, strategyOptions: mapLeaves(cg.strategyOptions, f) as Record<string, unknown> }
      : cg;
  }
  if (config.execution) {
    out.execution = {
      ...config.execution,
      mcpServers: config.execution.mcpServers.map((s) => ({ ...s, auth: mapAuth(s.auth, f) })),
    };
  }
  return out;
}

/** The configuration as every reader sees it: each secret position shows `"__redacted__"`. */
export function redactAgentConfig<T extends Partial<AgentConfig>>(config: T): T {
  return mapAgentSecrets(config, () => REDACTED);
}

/** The values at secret positions (collected in order). */
export function agentSecretValues(config: Partial<AgentConfig>): unknown[] {
  const found: unknown[] = [];
  mapAgentSecrets(config, (leaf) => {
    found.push(leaf);
    return leaf;
  });
  return found;
}

/**
 * Replaces the clear values a stored configuration still holds from before encryption at
 * rest by their sealed forms (`legacySealed`: JSON of the clear value -> sealed value, made
 * by the route), so an update never copies a clear secret into a new event. Pure.
 */
export function resealLegacy(config: AgentConfig, legacySealed: Record<string, string> | undefined): AgentConfig {
  if (!legacySealed) return config;
  return mapAgentSecrets(config, (leaf) => {
    if (isSealed(leaf) || leaf === REDACTED) return leaf;
    const k = JSON.stringify(leaf);
    return Object.hasOwn(legacySealed, k) ? legacySealed[k] : leaf;
  });
}

/** Where `next` holds the placeholder, put back what `prev` holds at the same place. */
function restore(next: unknown, prev: unknown): unknown {
  if (next === REDACTED) return prev === undefined ? next : prev;
  if (isPlainObject(next) && isPlainObject(prev)) {
    // Own properties only: a `__proto__` key must not find Object.prototype.
    return Object.fromEntries(Object.entries(next).map(([k, v]) => [k, restore(v, Object.hasOwn(prev, k) ? prev[k] : undefined)]));
  }
  if (Array.isArray(next) && Array.isArray(prev)) return next.map((v, i) => restore(v, prev[i]));
  return next;
}

/** Keeps stored secrets where an update sent `"__redacted__"` back. Pure. */
export function restoreSecrets(next: AgentConfig, prev: AgentConfig): AgentConfig {
  const prevOptions = prev.contextGathering.strategyOptions;
  const strategyOptions = next.contextGathering.strategyOptions && prevOptions
    ? (restore(next.contextGathering.strategyOptions, prevOptions) as Record<string, unknown>)
    : next.contextGathering.strategyOptions;
  const prevServers = prev.execution.mcpServers;
  const mcpServers = next.execution.mcpServers.map((s, i) => {
    // Match the stored server by name, else by position.
    const old = prevServers.find((p) => p.name === s.name) ?? prevServers[i];
    return old ? { ...s, auth: restore(s.auth, old.auth) as McpServer['auth'] } : s;
  });
  return {
    ...next,
    contextGathering: strategyOptions ? { ...next.contextGathering, strategyOptions } : next.contextGathering,
    execution: { ...next.execution, mcpServers },
  };
}
