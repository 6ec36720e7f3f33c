/**
 * The client end to end, as an application uses it: the service runs as a child process from
 * the repository root (`node --import tsx src/server.ts` through scripts/run.mjs, which on a
 * Node older than the service needs runs it under the fallback Node: README, Node versions),
 * on a free port with its embedded stores in a temporary directory, and every call goes
 * through the client over HTTP. `npm test` in clients/typescript runs it, after type-checking
 * the sources and these tests; the service's own suite runs that `npm test`
 * (test/client.e2e.test.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { CollabApiError, createClient, type AccessChanges, type CollabClient } from '../src/index.js';

/** The service's repository: this package lives in its clients/typescript/. */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

interface Service {
  url: string;
  stop: () => Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Starts the service on a free port and a fresh DATA_DIR, open sign-up (no ADMIN_TOKEN) and no
 * sign-up limit, and waits until GET /healthz answers 200 (or the process ends, or a minute
 * passes: a first run may fetch the fallback Node).
 */
async function startService(): Promise<Service> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-client-e2e-'));
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'warn', SIGNUP_RATE_PER_MINUTE: '0' };
  delete env.ADMIN_TOKEN;
  delete env.NODE_ENV;
  const child: ChildProcess = spawn(process.execPath, [path.join(ROOT, 'scripts', 'run.mjs'), 'dev', 'src/server.ts'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (c) => (output += c));
  child.stderr!.on('data', (c) => (output += c));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let ended = false;
  void exited.then(() => (ended = true));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (!ended) child.kill('SIGTERM');
    await exited;
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 60_000;
  while (!ended && Date.now() < deadline) {
    try {
      if ((await fetch(`${url}/healthz`)).status === 200) return { url, stop };
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await stop();
  throw new Error(`the service did not answer /healthz on ${url}:\n${output}`);
}

interface Ctx {
  service: Service;
  baseUrl: string;
  /** No credentials: workspace/create is open while ADMIN_TOKEN is unset. */
  anonymous: CollabClient;
  workspace: { id: string; authToken: string; apiKey: string; keyToken: string };
  client: CollabClient;
}

/**
 * The answers' `data` as these tests read them. Read through `unknown` so the test compiles
 * whatever the generated types say of `data` (they get more precise as routes declare their
 * response schemas): the assertions check the values.
 */
const view = <T>(data: unknown): T => data as T;

/** Runs `fn`, which must throw a CollabApiError; returns it. */
async function apiError(fn: () => Promise<unknown>): Promise<CollabApiError> {
  let caught: unknown;
  try {
    await fn();
  } catch (e) {
    caught = e;
  }
  if (caught instanceof CollabApiError) return caught;
  assert.unreachable(caught === undefined ? 'expected a CollabApiError, the call succeeded' : `expected a CollabApiError, got ${String(caught)}`);
  throw caught;
}

/**
 * Never run: `npx tsc -p .` (first step of `npm test`) fails if any line marked
 * @ts-expect-error compiles, i.e. if the client stopped rejecting these mistakes.
 */
export function typeChecks(client: CollabClient): void {
  // @ts-expect-error an unknown route
  void client.call('/v2/organizations/nothing', {});
  // @ts-expect-error a required field missing (organizations)
  void client.call('/v2/organizations/add', {});
  // @ts-expect-error a field of the wrong type
  void client.call('/v2/organizations/documents/get', { organizationId: 1 });
  // @ts-expect-error a route that takes no pageToken cannot be paged
  void client.pages('/v2/organizations/add', { organizations: [] });
  // @ts-expect-error half a credential pair
  void createClient({ baseUrl: '', credentials: { apiKey: 'k' } });
  // @ts-expect-error statuses are the API's, not any string
  const status: CollabApiError['status'] = 'TEAPOT';
  // ...while the document's own statuses are accepted (the union is not empty).
  const known: Array<CollabApiError['status']> = ['NOT_FOUND', 'INVALID_ARGUMENT', 'FAILED_PRECONDITION', 'UNAUTHENTICATED', 'PERMISSION_DENIED'];
  void status;
  void known;
  // @ts-expect-error the stream is no POST route: streamChanges reads it
  void client.call('/v2/changes/stream', {});
  // @ts-expect-error an unknown kind of change
  void client.streamChanges({ types: ['nothing'] });
}

/** Never run, as typeChecks: what dry runs' types accept and reject. */
export async function dryRunTypeChecks(client: CollabClient, flag: boolean): Promise<void> {
  const grant = { userId: 'u', permissions: { resources: [{ type: 'document' as const, id: 'd', organizationId: 'o', accessRole: 'viewer' as const }] } };
  // A dry run's answer has its accessChanges...
  const dry = await client.call('/v2/auth/permissions/add', grant, { dryRun: true });
  const changes: AccessChanges = dry.accessChanges;
  const next: string | undefined = dry.accessChanges.pageToken;
  void [changes, next, dry.data];
  // ...a real call's has none to count on...
  const real = await client.call('/v2/auth/permissions/add', grant);
  // @ts-expect-error accessChanges is possibly undefined on a real call
  void real.accessChanges.counts;
  // ...nor one decided at run time.
  const maybe = await client.call('/v2/auth/permissions/add', grant, { dryRun: flag });
  void maybe.accessChanges?.counts.gain;
  // @ts-expect-error generate_token does not preview (it signs a token): no dry run
  void client.call('/v2/auth/generate_token', { userId: 'u' }, { dryRun: true });
  // users/add previews (it grants): its dry run has accessChanges.
  void (await client.call('/v2/users/add', { organizationId: 'o', users: [{ userId: 'u' }] }, { dryRun: true })).accessChanges.counts;
  // @ts-expect-error a read is no dry run
  void client.call('/v2/auth/permissions/get', { organizationId: 'o', userIds: ['u'] }, { dryRun: true });
  // @ts-expect-error a page token belongs to a dry run
  void client.call('/v2/auth/permissions/add', grant, { dryRunPageToken: 'x' });
}

const E = suite<Ctx>('TypeScript client against a running service');
E.before(async (ctx) => {
  ctx.service = await startService();
  ctx.baseUrl = ctx.service.url;
  ctx.anonymous = createClient({ baseUrl: ctx.baseUrl });
});
E.after(async (ctx) => {
  await ctx.service.stop();
});

E('workspace/create without credentials (no ADMIN_TOKEN): the workspace, its token and a first API key', async (ctx) => {
  const created = await ctx.anonymous.call('/v2/workspace/create', { ownerEmail: 'you@example.com' });
  assert.is(created.status, 'success');
  assert.is(created.message, 'Workspace created successfully');
  const d = view<{ id: string; authToken: string; apiKeyList: Record<string, { authToken: string }> }>(created.data);
  const [apiKey, key] = Object.entries(d.apiKeyList)[0];
  assert.type(d.id, 'string');
  assert.type(d.authToken, 'string');
  assert.type(key.authToken, 'string');
  ctx.workspace = { id: d.id, authToken: d.authToken, apiKey, keyToken: key.authToken };
  ctx.client = ctx.anonymous.withCredentials({ apiKey, authToken: key.authToken });
});

E('API-key mode: organizations/add, documents/add, then documents/get page by page with pages() and all()', async ({ client }) => {
  const org = await client.call('/v2/organizations/add', { organizations: [{ organizationId: 'acme', organizationName: 'Acme' }] });
  assert.is(org.status, 'success');
  const ids = ['doc-1', 'doc-2', 'doc-3', 'doc-4', 'doc-5'];
  const added = await client.call('/v2/organizations/documents/add', { organizationId: 'acme', documents: ids.map((documentId) => ({ documentId })) });
  const results = view<Record<string, { success: boolean }>>(added.data);
  assert.equal(Object.keys(results).sort(), ids);
  assert.ok(ids.every((id) => results[id].success), JSON.stringify(results));

  const whole = view<Array<{ id: string }>>((await client.call('/v2/organizations/documents/get', { organizationId: 'acme' })).data);
  assert.equal(whole.map((d) => d.id).sort(), ids);

  const sizes: number[] = [];
  const paged: string[] = [];
  const tokens: Array<string | undefined> = [];
  for await (const page of client.pages('/v2/organizations/documents/get', { organizationId: 'acme', pageSize: 2 })) {
    const rows = view<Array<{ id: string }>>(page.data);
    sizes.push(rows.length);
    paged.push(...rows.map((d) => d.id));
    tokens.push(view<{ pageToken?: string }>(page).pageToken);
  }
  assert.equal(sizes, [2, 2, 1], 'three pages of at most 2');
  assert.equal(paged, whole.map((d) => d.id), 'the pages, in order, are the whole list');
  assert.is(tokens[2], undefined, 'the last page carries no pageToken');
  assert.ok(typeof tokens[0] === 'string' && typeof tokens[1] === 'string');

  const all = await client.all('/v2/organizations/documents/get', { organizationId: 'acme', pageSize: 2 });
  assert.equal(view<Array<{ id: string }>>(all).map((d) => d.id), paged);
});

E('API-key mode: users/add on a document, then permissions/get shows the grant', async ({ client }) => {
  // doc-2 restricted: only a grant on it gives access, and Ada gets one on doc-1 only.
  await client.call('/v2/organizations/documents/access/update', { organizationId: 'acme', documentIds: ['doc-2'], accessType: 'restricted' });
  const added = await client.call('/v2/users/add', {
    organizationId: 'acme',
    documentId: 'doc-1',
    users: [{ userId: 'ada', name: 'Ada Lovelace', email: 'ada@example.com', accessRole: 'editor' }],
  });
  assert.is(added.status, 'success');
  const perms = await client.call('/v2/auth/permissions/get', { organizationId: 'acme', userIds: ['ada'], documentIds: ['doc-1', 'doc-2'] });
  const byUser = view<Record<string, { documents: Record<string, { accessRole?: string; errorCode?: string }> }>>(perms.data);
  assert.is(byUser.ada.documents['doc-1'].accessRole, 'editor');
  assert.is(byUser.ada.documents['doc-2'].accessRole, undefined, 'no grant on the restricted doc-2');
  assert.is(byUser.ada.documents['doc-2'].errorCode, 'permission_denied');
});

E('user-token mode: a front end asks what its own user can open with a Bearer token, and nothing else', async ({ client, anonymous }) => {
  const generated = await client.call('/v2/auth/generate_token', { userId: 'ada', userProperties: { name: 'Ada Lovelace', email: 'ada@example.com' } });
  const token = view<{ token: string }>(generated.data).token;
  const front = anonymous.withCredentials({ userToken: token });
  const open = view<Array<{ id: string; accessRole: string }>>((await front.call('/v2/auth/resources/get', { organizationId: 'acme', userId: 'ada', type: 'document' })).data);
  assert.ok(open.some((d) => d.id === 'doc-1' && d.accessRole === 'editor'), JSON.stringify(open));
  assert.not.ok(open.some((d) => d.id === 'doc-2'), 'not the restricted doc-2');
  const other = await apiError(() => front.call('/v2/auth/resources/get', { organizationId: 'acme', userId: 'grace', type: 'document' }));
  assert.is(other.status, 'PERMISSION_DENIED');
  const elsewhere = await apiError(() => front.call('/v2/organizations/get', {}));
  assert.is(elsewhere.status, 'PERMISSION_DENIED');
});

E('failures are thrown as CollabApiError: status, HTTP status, message, request id', async ({ client, anonymous, workspace }) => {
  const e = await apiError(() => client.call('/v2/organizations/documents/get', { organizationId: 'no-such-org' }, { headers: { 'x-request-id': 'client-e2e-1' } }));
  assert.ok(e instanceof Error);
  assert.is(e.name, 'CollabApiError');
  assert.is(e.status, 'NOT_FOUND');
  assert.is(e.httpStatus, 404);
  assert.match(e.message, /no-such-org|[Oo]rganization/);
  assert.is(e.requestId, 'client-e2e-1', 'the x-request-id of the answer');
  assert.is(e.path, '/v2/organizations/documents/get');

  const invalid = await apiError(() => client.call('/v2/organizations/add', { organizations: [] }));
  assert.is(invalid.status, 'INVALID_ARGUMENT');
  assert.is(invalid.httpStatus, 400);
  assert.type(invalid.requestId, 'string', 'the service names every answer');

  const none = await apiError(() => anonymous.call('/v2/organizations/get', {}));
  assert.is(none.status, 'UNAUTHENTICATED');
  assert.is(none.httpStatus, 401);
  const wrong = await apiError(() => anonymous.withCredentials({ apiKey: workspace.apiKey, authToken: 'not-the-token' }).call('/v2/organizations/get', {}));
  assert.is(wrong.status, 'PERMISSION_DENIED');
  assert.is(wrong.httpStatus, 403);
});

E('dry runs: permissions/add previewed (the user\'s gain, nothing stored), then performed; a route that does not preview throws FAILED_PRECONDITION', async ({ client }) => {
  const grant = { userId: 'ada', permissions: { resources: [{ type: 'document' as const, id: 'doc-2', organizationId: 'acme', accessRole: 'viewer' as const }] } };
  const ask = { organizationId: 'acme', userIds: ['ada'], documentIds: ['doc-2'] };
  const doc2 = async () => view<Record<string, { documents: Record<string, { accessRole?: string; errorCode?: string }> }>>((await client.call('/v2/auth/permissions/get', ask)).data).ada.documents['doc-2'];
  assert.is((await doc2()).errorCode, 'permission_denied', 'doc-2 is restricted and Ada holds no grant on it');

  const dry = await client.call('/v2/auth/permissions/add', grant, { dryRun: true, idempotencyKey: 'client-e2e-dry' });
  assert.is(dry.status, 'success');
  assert.equal(dry.accessChanges.counts, { gain: 1, lose: 0, role: 0 });
  assert.equal(
    dry.accessChanges.changes.map(({ resourceType, resourceId, organizationId, userId, change, after }) => ({ resourceType, resourceId, organizationId, userId, change, after })),
    [{ resourceType: 'document', resourceId: 'doc-2', organizationId: 'acme', userId: 'ada', change: 'gain', after: 'viewer' }],
  );
  assert.is(dry.accessChanges.changes[0].before, undefined, 'denied before');
  assert.is(dry.accessChanges.pageToken, undefined, 'one page');
  const after = await doc2();
  assert.is(after.accessRole, undefined, 'the dry run stored nothing');
  assert.is(after.errorCode, 'permission_denied');

  // The page token travels as x-dry-run-page-token: one that is not the service's is refused.
  const badPage = await apiError(() => client.call('/v2/auth/permissions/add', grant, { dryRun: true, dryRunPageToken: 'not-a-token' }));
  assert.is(badPage.status, 'INVALID_ARGUMENT');
  assert.match(badPage.message, /x-dry-run-page-token/);

  // The real call, with the key the dry run sent (ignored by it): performed now, and no accessChanges.
  const real = await client.call('/v2/auth/permissions/add', grant, { idempotencyKey: 'client-e2e-dry' });
  assert.is(real.status, 'success');
  assert.is(real.accessChanges, undefined);
  assert.is((await doc2()).accessRole, 'viewer');
  // Previewed again, the same grant changes nothing any more.
  assert.equal((await client.call('/v2/auth/permissions/add', grant, { dryRun: true })).accessChanges.counts, { gain: 0, lose: 0, role: 0 });

  // generate_token signs a token (key material outside the event log): it refuses a dry run, and nothing runs.
  const refused = await apiError(() =>
    // @ts-expect-error generate_token is no DryRunPath: a dry run of it does not compile either
    client.call('/v2/auth/generate_token', { userId: 'dry-grace', userProperties: { name: 'Grace' }, permissions: { resources: [{ type: 'document', id: 'doc-1', organizationId: 'acme', accessRole: 'viewer' }] } }, { dryRun: true }),
  );
  assert.is(refused.status, 'FAILED_PRECONDITION');
  assert.is(refused.httpStatus, 400);
  assert.match(refused.message, /generate_token cannot be dry-run/);
  const users = view<Array<{ userId: string }>>((await client.call('/v2/users/get', { organizationId: 'acme', documentId: 'doc-1' })).data).map((u) => u.userId);
  assert.ok(users.includes('ada'), `doc-1's users: ${users.join(', ')}`);
  assert.not.ok(users.includes('dry-grace'), 'the refused call added no user');
});

E('workspace mode: apikey/create, and the new key works in API-key mode', async ({ anonymous, workspace }) => {
  const ws = anonymous.withCredentials({ workspaceId: workspace.id, workspaceAuthToken: workspace.authToken });
  const created = await ws.call('/v2/workspace/apikey/create', { ownerEmail: 'you@example.com', type: 'testing', createAuthToken: true });
  const key = view<{ apiKey: string; authToken: string }>(created.data);
  assert.type(key.apiKey, 'string');
  assert.is.not(key.apiKey, workspace.apiKey);
  const agents = await anonymous.withCredentials({ apiKey: key.apiKey, authToken: key.authToken }).call('/v2/agents/get', {});
  assert.is(agents.status, 'success');
  // An API-key route with workspace credentials is refused: the modes do not mix.
  const e = await apiError(() => ws.call('/v2/organizations/get', {}));
  assert.ok(e.httpStatus === 401 || e.httpStatus === 403, `${e.httpStatus} ${e.status}`);
});

E('idempotencyKey: a retry gets the first answer back and nothing is applied twice', async ({ anonymous, workspace }) => {
  const ws = anonymous.withCredentials({ workspaceId: workspace.id, workspaceAuthToken: workspace.authToken });
  const body = { ownerEmail: 'you@example.com', type: 'testing' as const, createAuthToken: true };
  const first = view<{ apiKey: string; authToken: string }>((await ws.call('/v2/workspace/apikey/create', body, { idempotencyKey: 'client-e2e-key' })).data);
  const again = view<{ apiKey: string; authToken: string }>((await ws.call('/v2/workspace/apikey/create', body, { idempotencyKey: 'client-e2e-key' })).data);
  assert.is(again.apiKey, first.apiKey, 'the same key, not a second one');
  assert.is(again.authToken, '__redacted__', 'the secret is not shown twice');
  const other = view<{ apiKey: string }>((await ws.call('/v2/workspace/apikey/create', body, { idempotencyKey: 'client-e2e-key-2' })).data);
  assert.is.not(other.apiKey, first.apiKey, 'another key is another call');
  const conflict = await apiError(() => ws.call('/v2/workspace/apikey/create', { ...body, ownerEmail: 'other@example.com' }, { idempotencyKey: 'client-e2e-key' }));
  assert.is(conflict.status, 'INVALID_ARGUMENT');
  assert.is(conflict.httpStatus, 422);
});

E('consistency tokens: a write\'s token read back with withConsistency, and the changes after it', async ({ client, anonymous, workspace }) => {
  await client.call('/v2/organizations/documents/add', { organizationId: 'acme', documents: [{ documentId: 'doc-c1' }] });
  const token = client.consistencyToken();
  assert.type(token, 'string', 'the write answered a token');
  // Another client (a reader on another host, say) reads at least that write.
  const reader = anonymous.withCredentials({ apiKey: workspace.apiKey, authToken: workspace.keyToken }).withConsistency(token);
  const docs = view<Array<{ id: string }>>((await reader.call('/v2/organizations/documents/get', { organizationId: 'acme', documentIds: ['doc-c1'] })).data);
  assert.equal(docs.map((d) => d.id), ['doc-c1']);
  // The changes after it: none yet, then the next write's.
  const none = await client.call('/v2/changes/get', { since: token });
  const feed = view<{ changes: unknown[]; nextToken: string }>(none.data);
  assert.equal(feed.changes, []);
  await client.call('/v2/organizations/documents/add', { organizationId: 'acme', documents: [{ documentId: 'doc-c2' }] });
  const next = view<{ changes: Array<{ type: string; family: string; resourceId?: string }> }>((await client.call('/v2/changes/get', { since: feed.nextToken })).data);
  assert.equal(next.changes.map((c) => [c.type, c.family, c.resourceId]), [['DocumentAdded', 'document', 'doc-c2']]);
  // A changed token is refused; withConsistency(undefined) sends none again.
  const bad = await apiError(() => reader.withConsistency(`${token!.slice(0, -2)}xx`).call('/v2/organizations/get', {}));
  assert.is(bad.status, 'INVALID_ARGUMENT');
  assert.match(bad.message, /x-consistency-token/);
  assert.is((await reader.withConsistency(undefined).call('/v2/organizations/get', {})).status, 'success');
});

E('streamChanges: the key\'s changes as they are applied, each once, in order, going on after a token; a user token\'s stream shows its own grant and revocation', async ({ client, anonymous }) => {
  const start = client.consistencyToken();
  const seen: string[] = [];
  const stream = client.streamChanges({ since: start, types: ['document'] });
  const writes = (async () => {
    for (const id of ['doc-s1', 'doc-s2', 'doc-s3']) await client.call('/v2/organizations/documents/add', { organizationId: 'acme', documents: [{ documentId: id }] });
  })();
  let last: string | undefined;
  for await (const change of stream) {
    assert.is(change.family, 'document');
    seen.push(change.resourceId!);
    last = change.token;
    if (seen.length === 3) break;
  }
  await writes;
  assert.equal(seen, ['doc-s1', 'doc-s2', 'doc-s3']);
  // Later, from the last token: only what came after.
  await client.call('/v2/organizations/documents/add', { organizationId: 'acme', documents: [{ documentId: 'doc-s4' }] });
  for await (const change of client.streamChanges({ since: last, types: ['document'] })) {
    assert.is(change.resourceId, 'doc-s4');
    break;
  }

  // A front end with its user's token: it learns the moment its access to a document ends.
  const generated = await client.call('/v2/auth/generate_token', { userId: 'ada', userProperties: { name: 'Ada Lovelace', email: 'ada@example.com' } });
  const front = anonymous.withCredentials({ userToken: view<{ token: string }>(generated.data).token });
  const controller = new AbortController();
  const types: string[] = [];
  const following = (async () => {
    for await (const change of front.streamChanges({ since: last, signal: controller.signal })) {
      types.push(`${change.type}:${change.resourceId}`);
      if (change.type === 'GrantRevoked' && change.resourceId === 'doc-s1') controller.abort();
    }
  })();
  await client.call('/v2/auth/permissions/add', { userId: 'ada', permissions: { resources: [{ type: 'document', id: 'doc-s1', organizationId: 'acme', accessRole: 'viewer' }] } });
  await client.call('/v2/auth/permissions/remove', { userId: 'ada', permissions: { resources: [{ type: 'document', id: 'doc-s1', organizationId: 'acme' }] } });
  await following;
  assert.ok(types.includes('GrantAdded:doc-s1'), types.join(', '));
  assert.is(types.at(-1), 'GrantRevoked:doc-s1');

  // Past the service's bound or with a bad token: a CollabApiError, as any call.
  const bad = await apiError(async () => {
    for await (const _ of client.streamChanges({ since: 'not-a-token' })) break;
  });
  assert.is(bad.status, 'INVALID_ARGUMENT');
});

E.run();
