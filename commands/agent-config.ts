/**
 * A custom agent's configuration (spec "Agent", semantics §6): its zod schema, its type, and
 * the secret handling.
 *
 * Stored and returned as sent (semantics §6): every field the client sends, named here or
 * not (`knowledge.maxPatterns`, `input.variableKeys`, `mcpServers[].id`, `metadata`,
 * `setup`...), within the §1 limits (JSON depth, 64 KiB). Nothing is filled in: a section
 * the client leaves out stays out. The schema checks the types and bounds of the fields
 * this service knows (the hosted API's documented fields), and does not replicate the
 * hosted execution engine's rules (this service stores agents, it does not run them;
 * docs/compatibility.md). Left out of what is stored: the server's own fields a client may
 * echo back from a read (`id`, `version`, `managedBy`...), and `input.supportedVariables`,
 * which the hosted API computes and discards on write.
 *
 * Secrets, by position (semantics §0 and §6, refined by the hosted docs): the values of
 * every `auth` object (`execution.mcpServers[].auth`, and the `rest-api` strategy's
 * `endpoints[].auth`) but its `type` and `username`, and every value under
 * `contextGathering.strategyOptions` that the hosted docs do not name as a non-secret option
 * (an unknown strategy's options, an unknown option: whatever its key, `pwd`, `accessKey`).
 * They are stored on the write side only, sealed (the agent's events; the route seals them
 * with the API key's data key: src/secrets/), and replaced by `"__redacted__"` everywhere
 * else: read models, responses, audit, webhook payloads. An update that sends
 * `"__redacted__"` back (a client that read the agent and returns it edited) keeps the stored
 * secret instead of storing the placeholder.
 * Example: `strategyOptions: { "web-page-screenshot": { scrollBeforeCapture: true },
 * "rest-api": { endpoints: [{ url, auth: { type: "bearer", token: "sk" } }] }, "mine": { key: "k" } }`
 * reads back as `{ "web-page-screenshot": { scrollBeforeCapture: true }, "rest-api":
 * { endpoints: [{ url, auth: { type: "bearer", token: "__redacted__" } }] }, "mine": { key: "__redacted__" } }`.
 */
import { z } from 'zod';
import { isSealed, sealedPlaintextBytes } from '../src/shared/envelope.js';

export const REDACTED = '__redacted__';

const str = (max = 256) => z.string().max(max);
const list = (max = 100) => z.array(str()).max(max);
/**
 * JSON objects of unknown shape (options, auth, metadata): bounded in depth by the request's
 * JSON depth limit (src/http/json-depth.ts) and in size by MAX_AGENT_CONFIG_BYTES.
 */
const jsonObject = () => z.record(z.string().max(256), z.unknown());
/** An MCP server URL: http(s), or a `{{template}}` the hosted engine resolves to one. */
const mcpUrl = () =>
  z
    .string()
    .max(2048)
    .refine((s) => (/^https?:\/\//i.test(s) && URL.canParse(s)) || /\{\{[^{}]+\}\}/.test(s), {
      message: 'must be an http(s) URL (or contain a {{template}})',
    });
const toggle = () => z.looseObject({ enabled: z.boolean().optional() });
/** Knowledge limits as the hosted docs give them (1-20 each). */
const knowledgeCount = () => z.number().int().min(1).max(20).optional();

const mcpServerSchema = z.looseObject({
  id: str().min(1).optional(),
  name: str().min(1).optional(),
  description: z.string().max(4096).optional(),
  url: mcpUrl(),
  transport: str(64).optional(),
  auth: z.union([z.string().max(8192), jsonObject(), z.null()]).optional(),
  allowedTools: list().optional(),
});

const agentSections = {
  rawInstructions: z.string().max(100_000).optional(),
  instructions: z.string().max(100_000).optional(),
  phaseTimeoutMs: z.number().int().positive().optional(),
  metadata: jsonObject().optional(),
  contextGathering: z
    .looseObject({ strategies: list().optional(), strategyOptions: jsonObject().optional(), aiConfig: jsonObject().optional() })
    .optional(),
  execution: z
    .looseObject({
      executionStrategy: str(64).optional(),
      serviceId: str(64).optional(),
      aiConfig: jsonObject().optional(),
      responseDescriptions: z.record(str(), z.string().max(10_000)).optional(),
      strategyOptions: jsonObject().optional(),
      knowledge: z
        .looseObject({ useMemory: z.boolean().optional(), maxChunks: knowledgeCount(), maxPatterns: knowledgeCount(), maxActivities: knowledgeCount() })
        .optional(),
      mcpServers: z.array(mcpServerSchema).max(50).optional(),
    })
    .optional(),
  response: z
    .looseObject({ useAiFormatting: z.boolean().optional(), formattingPrompt: z.string().max(100_000).optional(), responseAdapter: str(64).optional() })
    .optional(),
  postProcess: z
    .looseObject({
      guardrails: toggle().optional(),
      deletePreviousSuggestions: toggle().optional(),
      annotations: z.looseObject({ enabled: z.boolean().optional(), strategy: str(64).optional() }).optional(),
      analytics: toggle().optional(),
      matchAndMerge: toggle().optional(),
      customProcessors: list().optional(),
    })
    .optional(),
  input: z
    .looseObject({
      variableKeys: list().optional(),
      inputRequirements: z.looseObject({ requires: list().optional(), requiresOneOf: list().optional() }).optional(),
      userContextFields: z
        .array(
          z.looseObject({
            id: str().min(1),
            title: str(),
            type: str(64),
            required: z.boolean().optional(),
            example: z.string().max(10_000).optional(),
            defaultValue: z.union([z.string().max(10_000), z.number(), z.boolean()]).optional(),
          }),
        )
        .max(100)
        .optional(),
    })
    .optional(),
  scope: z
    .looseObject({
      pageScope: list(1000).optional(),
      pageScopeExclude: list(1000).optional(),
      contentTypes: list().optional(),
      crossPage: z
        .looseObject({
          enabled: z.boolean().optional(),
          targetProperty: str().optional(),
          pageDiscovery: str(64).optional(),
          pages: list(1000).optional(),
          sourceOfTruthKnowledgeSourceId: str().optional(),
        })
        .optional(),
    })
    .optional(),
  setup: jsonObject().optional(),
};

/**
 * `agents/create`: `name` is required; `description` and `enabled` default to `""` and
 * `true` (list rows need them); every other field is optional and kept as sent.
 */
export const agentConfigSchema = z.looseObject({
  name: str().min(1),
  description: z.string().max(4096).default(''),
  enabled: z.boolean().default(true),
  ...agentSections,
});

/**
 * `agents/update`: any subset. `name`, `description`, `enabled` are the hosted API's
 * identity update; any other field (this service's extension) replaces the stored one whole
 * and makes a new version.
 */
export const agentChangesSchema = z.looseObject({
  name: str().min(1).optional(),
  description: z.string().max(4096).optional(),
  enabled: z.boolean().optional(),
  ...agentSections,
});

export type AgentConfig = z.output<typeof agentConfigSchema>;
export type AgentChanges = z.output<typeof agentChangesSchema>;
type McpServer = z.output<typeof mcpServerSchema>;

/** The identity fields: changing only these makes no new version (the hosted API's agents/update). */
export const IDENTITY_FIELDS: ReadonlySet<string> = new Set(['name', 'description', 'enabled']);

/**
 * Fields the service answers with itself: a client echoing a read back (`{ id, version,
 * managedBy, ... }`) must not store them in the configuration, where a read would show the
 * stale copy.
 */
const SERVER_FIELDS = ['id', 'agentId', 'version', 'managedBy', 'system', 'essentialDefault', 'executionCount', 'lastExecutedAt', 'createdAt', 'updatedAt'];

/** What is stored of a parsed configuration or change set: server fields and `input.supportedVariables` left out. */
export function toAgentConfig<T extends Record<string, unknown>>(parsed: T): T {
  const out: Record<string, unknown> = { ...parsed };
  for (const k of SERVER_FIELDS) delete out[k];
  const input = out.input;
  if (isPlainObject(input) && Object.hasOwn(input, 'supportedVariables')) {
    const { supportedVariables: _computed, ...rest } = input;
    out.input = rest;
  }
  return out as T;
}

// ---- size (semantics §1 Limits: an agent configuration is at most 64 KiB) ----

export const MAX_AGENT_CONFIG_BYTES = 64 * 1024;

/**
 * The size of a configuration as the limit counts it: the UTF-8 bytes of its JSON, as stored,
 * each secret counted at its clear size, not its sealed one (sealing a thousand one-byte
 * options makes some 70 KB the client never sent). Why measure the stored configuration and
 * not the request: an update replaces some fields and keeps the others, so the sum is what
 * grows. Example: `{ name: "A", rawInstructions: 40,000 x "x" }` counts about 40 KB and fits;
 * the same with `instructions` of another 30,000 characters counts about 70 KB and does not.
 */
export function agentConfigBytes(config: AgentConfig): number {
  // A sealed leaf is written as `""` and counted as its clear JSON instead (2 bytes less).
  let sealed = 0;
  const json = JSON.stringify(config, (_k, v: unknown) => {
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

/**
 * An `auth` object (`{ type: "bearer", token }`, `{ type: "basic", username, password }`,
 * `{ type: "header", headers: { ... } }`): every value but the scheme name and the user name
 * (top-level strings `type` and `username`, which the hosted docs show); a string auth is
 * itself the secret.
 */
function mapAuth(auth: unknown, f: (leaf: unknown) => unknown): unknown {
  if (!isPlainObject(auth)) return mapLeaves(auth, f);
  return Object.fromEntries(
    Object.entries(auth).map(([k, v]) => [k, (k === 'type' || k === 'username') && typeof v === 'string' ? v : mapLeaves(v, f)]),
  );
}

/**
 * The options the hosted docs name, per context-gathering strategy, as not secret: shown as
 * sent. Any other option (and every option of a strategy not listed) is a secret position.
 */
const PUBLIC_STRATEGY_OPTIONS: Record<string, ReadonlySet<string>> = {
  'web-page-text': new Set(['deviceType', 'excludeIframes']),
  'web-page-screenshot': new Set(['scrollBeforeCapture', 'maxPageHeightPx', 'waitUntil', 'deviceType']),
  'web-page-html': new Set(['includeHead', 'includeBody', 'excludeIframes', 'waitUntil']),
  'web-page-css': new Set(['includeInlineStyles']),
  'computed-styles': new Set(['selectors', 'properties']),
  'sitemap-data': new Set(['maxEntries']),
  lighthouse: new Set(['categories', 'formFactor']),
  'rest-api': new Set(['maxResponseBytes']),
};
/** A `rest-api` endpoint's fields the hosted docs show on read; its `auth` is handled by mapAuth. */
const PUBLIC_ENDPOINT_FIELDS: ReadonlySet<string> = new Set([
  'id', 'name', 'description', 'url', 'method', 'headers', 'query', 'body', 'cacheTtlSeconds', 'timeoutMs', 'responsePath',
]);

function mapEndpoint(endpoint: unknown, f: (leaf: unknown) => unknown): unknown {
  if (!isPlainObject(endpoint)) return mapLeaves(endpoint, f);
  return Object.fromEntries(
    Object.entries(endpoint).map(([k, v]) => [k, k === 'auth' ? mapAuth(v, f) : PUBLIC_ENDPOINT_FIELDS.has(k) ? v : mapLeaves(v, f)]),
  );
}

function mapStrategyOptions(options: Record<string, unknown>, f: (leaf: unknown) => unknown): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(options).map(([strategy, opts]) => {
      const known = Object.hasOwn(PUBLIC_STRATEGY_OPTIONS, strategy) ? PUBLIC_STRATEGY_OPTIONS[strategy] : undefined;
      if (!known || !isPlainObject(opts)) return [strategy, mapLeaves(opts, f)];
      return [
        strategy,
        Object.fromEntries(
          Object.entries(opts).map(([k, v]) => {
            if (strategy === 'rest-api' && k === 'endpoints' && Array.isArray(v)) return [k, v.map((e) => mapEndpoint(e, f))];
            return [k, known.has(k) ? v : mapLeaves(v, f)];
          }),
        ),
      ];
    }),
  );
}

/**
 * The configuration with `f` applied at every secret position (see the top of this file).
 * Never mutates its argument; works on a partial configuration (an update's changes) too.
 */
export function mapAgentSecrets<T extends Partial<AgentConfig>>(config: T, f: (leaf: unknown) => unknown): T {
  const out: T = { ...config };
  const cg = config.contextGathering;
  if (cg && isPlainObject(cg.strategyOptions)) {
    out.contextGathering = { ...cg, strategyOptions: mapStrategyOptions(cg.strategyOptions, f) };
  }
  const ex = config.execution;
  if (ex && Array.isArray(ex.mcpServers)) {
    out.execution = {
      ...ex,
      mcpServers: ex.mcpServers.map((s) => (isPlainObject(s) && s.auth !== undefined ? { ...s, auth: mapAuth(s.auth, f) as McpServer['auth'] } : s)),
    };
  }
  return out;
}

/**
 * The configuration as every reader sees it: each secret position shows `"__redacted__"`,
 * and so does any sealed value elsewhere in the strategy options (an option sealed by an
 * earlier version, which counted every option as secret).
 */
export function redactAgentConfig<T extends Partial<AgentConfig>>(config: T): T {
  const out = mapAgentSecrets(config, () => REDACTED);
  const cg = out.contextGathering;
  if (cg && isPlainObject(cg.strategyOptions)) {
    out.contextGathering = { ...cg, strategyOptions: mapLeaves(cg.strategyOptions, (leaf) => (isSealed(leaf) ? REDACTED : leaf)) as Record<string, unknown> };
  }
  return out;
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

/** The stored server an updated one stands for: same `id`, else same `name`, else same place. */
function storedServer(s: McpServer, i: number, prev: McpServer[]): McpServer | undefined {
  const byId = s.id !== undefined ? prev.find((p) => p.id === s.id) : undefined;
  if (byId) return byId;
  const byName = s.name !== undefined ? prev.find((p) => p.name === s.name) : undefined;
  return byName ?? prev[i];
}

/** Keeps stored secrets where an update sent `"__redacted__"` back. Pure. */
export function restoreSecrets(next: AgentConfig, prev: AgentConfig): AgentConfig {
  const out: AgentConfig = { ...next };
  const options = next.contextGathering?.strategyOptions;
  const prevOptions = prev.contextGathering?.strategyOptions;
  if (next.contextGathering && options && prevOptions) {
    out.contextGathering = { ...next.contextGathering, strategyOptions: restore(options, prevOptions) as Record<string, unknown> };
  }
  const servers = next.execution?.mcpServers;
  const prevServers = prev.execution?.mcpServers ?? [];
  if (next.execution && servers) {
    out.execution = {
      ...next.execution,
      mcpServers: servers.map((s, i) => {
        const old = storedServer(s, i, prevServers);
        return old && s.auth !== undefined ? { ...s, auth: restore(s.auth, old.auth) as McpServer['auth'] } : s;
      }),
    };
  }
  return out;
}
