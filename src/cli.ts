/**
 * Command-line interface: `collab <command>` (bin/collab.mjs) or `npm run cli -- <command>`.
 *
 *   serve [--role api|worker|all]             run the service (same as npm start); api: HTTP only,
 *                                             worker: projections and webhooks only, all: both
 *   serve --workers N|auto [--role all|api]   N API processes on one port and a background process
 *                                             under a supervising primary (src/cluster.ts)
 *   workspace create --email E [--name N] [--workspace-name W]
 *                                             create a workspace; prints its credentials as JSON
 *   workspace set <id> [--plan free|paid] [--production-keys on|off] [--max-production-keys N]
 *                                             operator settings that gate production keys
 *   workspace rotate-token <id>               a new workspace auth token (printed once); the old one stops
 *   apikey rotate-signing-key <apiKey> [--revoke-previous] [--workspace W]
 *                                             a new user-token signing key; old tokens stay valid until
 *                                             they expire unless --revoke-previous
 *   apikey delete <apiKey> [--workspace W]    delete the key: its tokens stop, its secrets are shredded
 *   audit --api-key K [--organization O [--folder F | --document D] | --agent A]
 *         [--since T] [--until T] [--type T]... [--json]
 *                                             a history in log order (src/ops/audit.ts)
 *   access review --api-key K --org O [--as-of T] [--format csv|json]
 *                                             every user with access to every folder and document of
 *                                             O (now or as of T), with role and via, streamed
 *                                             (src/ops/access-review.ts)
 *   migrate [--runtime-role R]                PostgreSQL: bring the schema up to date (as its owner),
 *                                             and grant a split runtime role what it may do (the log
 *                                             read and appended to, nothing more)
 *   projections status [--json]               each projection's checkpoint and lag, generation, leases
 *   projections rebuild [<name>|--all]        replay the log into a fresh read-model generation and
 *                                             switch to it when caught up (src/ops/rebuild.ts)
 *   projections parked [--all] [--json]       events a follower could not apply and passed over
 *   projections retry <id> | skip <id>        apply a parked event again, or acknowledge it (src/ops/parked.ts)
 *
 * Commands other than `serve` work directly on the stores named by the environment
 * (DATA_DIR, or POSTGRES_URL, EVENTSTORE_URL/MONGODB_URL) and bring the read models up to date before
 * exiting, so a running server sees the change at its next poll.
 */
import { parseArgs } from 'node:util';
import { nanoid } from 'nanoid';
import { z } from 'zod';
import { ConfigError, loadConfig } from './config/config.js';
import { ApiError, notFound } from './shared/errors.js';
import { openServices, type Services } from './composition/services.js';
import { RequestContext, type Logger } from './http/context.js';
import { createWorkspace } from './usecases/workspace.js';
import { workspaceStream, workspaceDecider } from '../commands/workspace.js';
import { main as serveMain } from './server.js';
import { AuditUsageError, parseAuditArgs, printAudit } from './ops/audit.js';
import { formatProgress, formatStatus, projectionsStatus, rebuildReadModels, RebuildError } from './ops/rebuild.js';
import { allProjections } from '../projections/index.js';
import { WEBHOOK_CHECKPOINT } from './webhooks/outbox.js';
import { ParkedError, formatParked, listParked, skipParked } from './ops/parked.js';
import { retryParkedEvent } from './usecases/parked.js';
import { deleteApiKey, rotateWorkspaceAuthToken } from './usecases/key-lifecycle.js';
import { rotateSigningKey } from './usecases/user-tokens.js';
import { API_KEYS, type ApiKeyDoc } from '../projections/workspaces.js';
import { accessReview } from './ops/access-review.js';
import { checkedAsOf } from './usecases/access.js';

const USAGE = `usage:
  collab serve [--role api|worker|all] [--workers <n>|auto]
  collab workspace create --email <email> [--name <owner name>] [--workspace-name <name>]
  collab workspace set <workspaceId> [--plan free|paid] [--production-keys on|off] [--max-production-keys <n>]
  collab workspace rotate-token <workspaceId>
  collab apikey rotate-signing-key <apiKey> [--revoke-previous] [--workspace <workspaceId>]
  collab apikey delete <apiKey> [--workspace <workspaceId>]
  collab audit --api-key <key> [--organization <id> [--folder <id> | --document <id>] | --agent <id>]
               [--since <time>] [--until <time>] [--type <EventType>]... [--json]
  collab access review --api-key <key> --org <id> [--as-of <instant>] [--format csv|json]
  collab migrate [--runtime-role <role>]
  collab projections status [--json]
  collab projections rebuild [<projection>|--all]
  collab projections parked [--all] [--json]
  collab projections retry <parked id>
  collab projections skip <parked id>`;

class UsageError extends Error {}

const stderrLogger: Logger = {
  info: () => {},
  warn: (o, m) => process.stderr.write(`warn: ${m ?? ''} ${JSON.stringify(o)}\n`),
  error: (o, m) => process.stderr.write(`error: ${m ?? ''} ${JSON.stringify(o)}\n`),
};

async function withServices<T>(fn: (s: Services, ctx: RequestContext) => Promise<T>): Promise<T> {
  const services = await openServices(loadConfig(), { follow: false });
  try {
    const ctx = new RequestContext(services, `cli-${nanoid(12)}`, services.clock(), stderrLogger, 'cli');
    const out = await fn(services, ctx);
    await services.projections.catchUp();
    return out;
  } finally {
    await services.close();
  }
}

async function workspaceCreate(args: string[]) {
  const { values } = parseArgs({
    args,
    options: { email: { type: 'string' }, name: { type: 'string' }, 'workspace-name': { type: 'string' } },
    strict: true,
  });
  if (!values.email || !z.email().safeParse(values.email).success) throw new UsageError('--email <valid email> is required');
  const created = await withServices((_s, ctx) =>
    createWorkspace(ctx, { ownerEmail: values.email!, name: values.name, workspaceName: values['workspace-name'] }),
  );
  process.stdout.write(JSON.stringify(created, null, 2) + '\n');
}

async function workspaceSet(args: string[]) {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      plan: { type: 'string' },
      'production-keys': { type: 'string' },
      'max-production-keys': { type: 'string' },
    },
    strict: true,
  });
  const id = positionals[0];
  if (!id || positionals.length > 1) throw new UsageError('workspace set takes exactly one workspace id');
  const data: { plan?: 'free' | 'paid'; productionKeysEnabled?: boolean; maxProductionKeys?: number } = {};
  if (values.plan !== undefined) {
    if (values.plan !== 'free' && values.plan !== 'paid') throw new UsageError('--plan must be free or paid');
    data.plan = values.plan;
  }
  const pk = values['production-keys'];
  if (pk !== undefined) {
    if (pk !== 'on' && pk !== 'off') throw new UsageError('--production-keys must be on or off');
    data.productionKeysEnabled = pk === 'on';
  }
  const max = values['max-production-keys'];
  if (max !== undefined) {
    if (!/^\d{1,6}$/.test(max)) throw new UsageError('--max-production-keys must be a whole number');
    data.maxProductionKeys = Number(max);
  }
  if (Object.keys(data).length === 0) throw new UsageError('nothing to set: give --plan, --production-keys or --max-production-keys');
  const state = await withServices(async (_s, ctx) => {
    const r = await ctx.execute(workspaceDecider, workspaceStream(id), {
      type: 'ChangeWorkspaceSettings',
      data,
    });
    return r.state;
  });
  if (state.status !== 'active') throw new Error('bug: settings changed on a workspace that is not active');
  const { plan, productionKeysEnabled, maxProductionKeys } = state;
  process.stdout.write(JSON.stringify({ workspaceId: id, plan, productionKeysEnabled, maxProductionKeys }, null, 2) + '\n');
}

async function workspaceRotateToken(args: string[]) {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {}, strict: true });
  if (positionals.length !== 1) throw new UsageError('workspace rotate-token takes exactly one workspace id');
  const out = await withServices((_s, ctx) => rotateWorkspaceAuthToken(ctx, positionals[0]!));
  process.stdout.write(JSON.stringify(out, null, 2) + '\n');
}

/** `apikey rotate-signing-key` and `apikey delete`: the key's workspace from the read model, unless given. */
async function apiKeyCommand(sub: string | undefined, args: string[]) {
  if (sub !== 'rotate-signing-key' && sub !== 'delete') throw new UsageError(`unknown command: apikey ${sub ?? ''}`.trim());
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { workspace: { type: 'string' }, ...(sub === 'rotate-signing-key' ? { 'revoke-previous': { type: 'boolean', default: false } } : {}) },
    strict: true,
  });
  if (positionals.length !== 1) throw new UsageError(`apikey ${sub} takes exactly one API key`);
  const apiKey = positionals[0]!;
  const out = await withServices(async (s, ctx) => {
    let workspaceId = values.workspace as string | undefined;
    if (workspaceId === undefined) {
      await s.projections.catchUp();
      const doc = await s.read.get<ApiKeyDoc>(API_KEYS, apiKey);
      if (!doc) throw notFound('API key not found (give --workspace to finish the deletion of a key already removed from the read models).');
      workspaceId = doc.workspaceId;
    }
    return sub === 'delete' ? deleteApiKey(ctx, workspaceId, apiKey) : rotateSigningKey(ctx, workspaceId, apiKey, values['revoke-previous'] === true);
  });
  process.stdout.write(JSON.stringify(out, null, 2) + '\n');
}

async function audit(args: string[]) {
  const a = parseAuditArgs(args);
  const services = await openServices(loadConfig(), { follow: false, webhooks: false });
  try {
    // The audit index is a read model: bring it up to the log's head first.
    await services.projections.catchUp();
    await printAudit(services.read, a, (line) => process.stdout.write(line + '\n'));
  } finally {
    await services.close();
  }
}

async function projectionsCommand(sub: string | undefined, args: string[]) {
  if (sub === 'status') {
    const { values } = parseArgs({ args, options: { json: { type: 'boolean', default: false } }, strict: true });
    const services = await openServices(loadConfig(), { follow: false, webhooks: false });
    try {
      const st = await projectionsStatus({ events: services.events, generations: services.generations, projections: allProjections, webhookCheckpoint: WEBHOOK_CHECKPOINT });
      process.stdout.write((values.json ? JSON.stringify(st, null, 2) : formatStatus(st)) + '\n');
    } finally {
      await services.close();
    }
    return;
  }
  if (sub === 'parked') {
    const { values } = parseArgs({ args, options: { json: { type: 'boolean', default: false }, all: { type: 'boolean', default: false } }, strict: true });
    const services = await openServices(loadConfig(), { follow: false, webhooks: false });
    try {
      const rows = await listParked(services.read, { all: values.all });
      process.stdout.write((values.json ? rows.map((r) => JSON.stringify(r)).join('\n') : formatParked(rows)) + (rows.length || !values.json ? '\n' : ''));
    } finally {
      await services.close();
    }
    return;
  }
  if (sub === 'retry' || sub === 'skip') {
    const { positionals } = parseArgs({ args, allowPositionals: true, options: {}, strict: true });
    if (positionals.length !== 1) throw new UsageError(`projections ${sub} takes one parked id (collab projections parked lists them)`);
    const id = positionals[0]!;
    const services = await openServices(loadConfig(), { follow: false, webhooks: false });
    try {
      if (sub === 'skip') {
        await skipParked(services.read, id, services.clock());
        process.stdout.write(`skipped ${id}\n`);
      } else {
        await retryParkedEvent(services, id);
        process.stdout.write(`applied ${id} again; its record is gone\n`);
      }
    } finally {
      await services.close();
    }
    return;
  }
  if (sub === 'rebuild') {
    const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { all: { type: 'boolean', default: false } }, strict: true });
    const names = allProjections.map((p) => p.name);
    if (values.all === (positionals.length > 0) || positionals.length > 1) throw new UsageError('projections rebuild takes one projection name or --all');
    const named = positionals[0];
    if (named !== undefined && !names.includes(named)) throw new UsageError(`unknown projection ${JSON.stringify(named)}; known: ${names.join(', ')}`);
    if (named !== undefined) {
      process.stderr.write(`${named} shares collections with other projections: rebuilding the whole read-model generation\n`);
    }
    const services = await openServices(loadConfig(), { follow: false, webhooks: false });
    try {
      const r = await rebuildReadModels(
        { events: services.events, generations: services.generations, projections: allProjections },
        { onProgress: (p) => process.stderr.write(formatProgress(p) + '\n'), retention: services.config },
      );
      if (r.dropped.length) process.stderr.write(`dropped old read-model collections: ${r.dropped.join(', ')}\n`);
      process.stdout.write(
        `switched read models from generation ${r.from} to ${r.to} at position ${r.position || '(start)'}: ${r.events} events in ${r.seconds.toFixed(1)} s\n`,
      );
    } finally {
      await services.close();
    }
    return;
  }
  throw new UsageError(`unknown command: projections ${sub ?? ''}`.trim());
}

/** `access review`: the organization's access, streamed to stdout (src/ops/access-review.ts). */
async function accessCommand(sub: string | undefined, args: string[]) {
  if (sub !== 'review') throw new UsageError(`unknown command: access ${sub ?? ''}`.trim());
  const { values } = parseArgs({
    args,
    strict: true,
    options: { 'api-key': { type: 'string' }, org: { type: 'string' }, 'as-of': { type: 'string' }, format: { type: 'string', default: 'csv' } },
  });
  const apiKey = values['api-key'];
  if (!apiKey || !values.org) throw new UsageError('access review needs --api-key <key> and --org <organizationId>');
  const format = values.format;
  if (format !== 'csv' && format !== 'json') throw new UsageError('--format must be csv or json');
  const raw = values['as-of'];
  await withServices(async (services, ctx) => {
    // The review reads the read models as the log leaves them.
    await services.projections.catchUp();
    // `--as-of` as the API's asOf takes it: an ISO instant with milliseconds or Unix milliseconds.
    const asOf = await checkedAsOf(services.read, raw === undefined ? undefined : /^\d+$/.test(raw) ? Number(raw) : raw, ctx.now, services.config.historyRetentionDays, '--as-of');
    await accessReview(services.read, apiKey, ctx.now, values.org!, process.stdout, { format, ...(asOf !== undefined ? { asOf } : {}) });
  });
}

/**
 * `migrate`: the PostgreSQL schema brought up to date by the role that owns it, and a split
 * runtime role's grants (docs/operations.md, Roles). A process migrates at start too when its
 * role may; with split roles only this does.
 */
async function migrateCommand(args: string[]) {
  const { values } = parseArgs({ args, strict: true, options: { 'runtime-role': { type: 'string' } } });
  const config = loadConfig(process.env);
  if (!config.postgresUrl) {
    process.stdout.write('nothing to migrate: only PostgreSQL (POSTGRES_URL) has a schema to migrate; the other stores set theirs up at start\n');
    return;
  }
  const { openPool, migrate, grantRuntimeRole } = await import('./adapters/postgres-common.js');
  const pool = openPool(config.postgresUrl);
  try {
    await migrate(pool, { warn: (_o, msg) => process.stderr.write(`${msg}\n`) });
    if (values['runtime-role']) await grantRuntimeRole(pool, values['runtime-role']);
    const v = await pool.query<{ v: number }>('SELECT max(version) AS v FROM schema_version');
    process.stdout.write(`schema at version ${v.rows[0]!.v}${values['runtime-role'] ? `; ${values['runtime-role']} may read and append to the log and nothing more` : ''}\n`);
  } finally {
    await pool.end();
  }
}

export async function run(argv: string[]): Promise<number> {
  const [cmd, sub, ...rest] = argv;
  try {
    if (cmd === 'serve') {
      await serveMain(argv.slice(1));
      return -1; // keeps running
    }
    if (cmd === 'workspace' && sub === 'create') await workspaceCreate(rest);
    else if (cmd === 'workspace' && sub === 'set') await workspaceSet(rest);
    else if (cmd === 'workspace' && sub === 'rotate-token') await workspaceRotateToken(rest);
    else if (cmd === 'apikey') await apiKeyCommand(sub, rest);
    else if (cmd === 'audit') await audit(argv.slice(1));
    else if (cmd === 'projections') await projectionsCommand(sub, rest);
    else if (cmd === 'access') await accessCommand(sub, rest);
    else if (cmd === 'migrate') await migrateCommand(argv.slice(1));
    else if (cmd === undefined || cmd === 'help' || cmd === '--help') {
      process.stdout.write(USAGE + '\n');
    } else throw new UsageError(`unknown command: ${[cmd, sub].filter(Boolean).join(' ')}`);
    return 0;
  } catch (err) {
    if (err instanceof UsageError || err instanceof AuditUsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
      return 2;
    }
    if (err instanceof ConfigError) {
      process.stderr.write(`configuration error: ${err.message}\n`);
      return 2;
    }
    if (err instanceof ParkedError) {
      process.stderr.write(`${err.message}\n`);
      return 1;
    }
    if (err instanceof RebuildError) {
      process.stderr.write(`rebuild failed: ${err.message}\n`);
      return 1;
    }
    if (err instanceof ApiError) {
      process.stderr.write(`${err.status}: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}

const isEntry = process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (isEntry) {
  run(process.argv.slice(2)).then((code) => {
    if (code >= 0) process.exit(code);
  });
}
