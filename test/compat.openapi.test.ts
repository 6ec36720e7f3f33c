/**
 * The hosted OpenAPI document as a second compatibility source (issue 28).
 *
 * test/fixtures/hosted/openapi.yaml is `api-reference/open-api/openapi.yaml` of velt-js/docs
 * at the commit its README names (the git blob id is checked below, so an edit shows). For
 * every path that document and this service both serve, requests are built from it: each
 * request example it gives, and two from each request schema, `full` (every property) and
 * `minimal` (the required ones), with the values of the schema's `example`s, else the ids
 * the examples use (NAMED). `pageToken` is left out of built requests: a token is one this
 * service gave (the example's literal one is a listed difference). DERIVED adds the requests
 * the issue names: ones the hosted schema accepts and this service used to refuse, and ones
 * it requires something of that this service lets through.
 *
 * Each request is first checked against the hosted request schema (valid, or `hosted:
 * 'invalid'` when it is built not to be), then sent through app.inject on a fresh tenant
 * after a setup that creates what it names (organizations, folders, documents, users,
 * groups), and the answer is validated against the hosted response schema of its status. A
 * write is followed by the read that shows it (THEN), validated the same way.
 *
 * The rule: a request the hosted document accepts answers 200 with an answer its 200 schema
 * accepts. DIFFERENCES lists each exception and how this service answers instead; its `what`
 * is the first cell of a row of docs/compatibility.md ("The hosted OpenAPI document"), and
 * the two hold the same rows. A listed difference that no longer happens fails as well, so
 * neither the table nor the docs can go stale.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import SwaggerParser from '@apidevtools/swagger-parser';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Response } from './support/app.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const YAML = path.join(ROOT, 'test', 'fixtures', 'hosted', 'openapi.yaml');
/** The blob test/fixtures/hosted/README.md names. */
const BLOB = '7a28d01742a27b919c249e40c4ede64aa447e92c';

/** The hosted paths this service does not serve (docs/compatibility.md, Not served). */
const NOT_SERVED = ['/notifications/get', '/commentannotations/comments/add', '/livestate/broadcast'];

type Schema = Record<string, any>;
interface Request {
  path: string;
  name: string;
  /** The whole body, as the hosted request schema describes it. */
  body: any;
  /** What the hosted request schema says of it: built requests are valid; DERIVED says. */
  hosted: 'valid' | 'invalid';
}

type Answer =
  /** The hosted schema requires what this request leaves out; this service answers 200 all the same. */
  | { accepted: true }
  /** Refused: this status, a message naming the field. */
  | { status: number; message: RegExp }
  /** 200, and the hosted response schema refuses the answer with these errors (ajv's, `path message`). */
  | { schemaErrors: RegExp }
  /** Sent as `{ data: body }`: unwrapped it is refused (400). */
  | { wrapped: true };

interface Difference {
  /** The first cell of its docs/compatibility.md row, character for character. */
  what: string;
  paths: string[];
  /** The names of the requests it covers: built and derived ones by name, reads after a write as `after <path> <name>`. */
  request: RegExp;
  answer: Answer;
}

const ALL_WITH_RESOURCES = ['/auth/generate_token', '/auth/permissions/add'];

export const DIFFERENCES: Difference[] = [
  { what: '`generate_token` body', paths: ['/auth/generate_token'], request: /./, answer: { wrapped: true } },
  {
    what: '`users/get` rows of a user without a name or e-mail address',
    paths: ['/users/get'],
    request: /^after \/(auth\/permissions\/add minimal|users\/add without name and email)$/,
    answer: { schemaErrors: /^\/result\/data\/0 must have required property 'name'; \/result\/data\/0 must have required property 'email'/ },
  },
  {
    what: 'empty arrays',
    paths: ['/organizations/add'],
    request: /^empty organizations$/,
    answer: { status: 400, message: /^data\.organizations must not be empty$/ },
  },
  { what: 'empty ids', paths: ['/organizations/delete'], request: /^empty id$/, answer: { status: 400, message: /^data\.organizationIds\[0\] must not be empty$/ } },
  { what: '`pageSize` below 1', paths: ['/users/get'], request: /^pageSize 0$/, answer: { status: 400, message: /^data\.pageSize must be at least 1$/ } },
  {
    what: '`users[].initial` over 256 characters',
    paths: ['/users/add'],
    request: /^initial of 257 characters$/,
    answer: { status: 400, message: /^data\.users\[0\]\.initial must be at most 256 characters$/ },
  },
  {
    what: '`usergroups/add` items without `groupId`',
    paths: ['/organizations/usergroups/add'],
    request: /^minimal$/,
    answer: { status: 400, message: /^data\.organizationUserGroups\[0\]\.groupId is required$/ },
  },
  {
    what: 'document and folder resources without `organizationId`',
    paths: ALL_WITH_RESOURCES,
    request: /^document resource without organizationId$/,
    answer: { status: 400, message: /^data\.permissions\.resources\[0\]\.organizationId organizationId is required for folder and document resources$/ },
  },
  { what: '`organizationName` absent', paths: ['/organizations/add', '/organizations/update'], request: /^without organizationName$/, answer: { accepted: true } },
  { what: '`name`, `email` absent', paths: ['/users/add', '/users/update'], request: /^without name and email$/, answer: { accepted: true } },
  { what: '`generate_token` without `permissions`', paths: ['/auth/generate_token'], request: /^without permissions$/, answer: { accepted: true } },
  {
    what: 'a `pageToken` this service did not give',
    paths: ['/organizations/get'],
    request: /^example$/,
    answer: { status: 400, message: /^data\.pageToken is not a valid page token for this query\.$/ },
  },
  {
    what: '`workspace/domains/add`, `delete`',
    paths: ['/workspace/domains/add', '/workspace/domains/delete'],
    request: /^(full|minimal)$/,
    answer: { status: 400, message: /^data(\.domains)? is required/ },
  },
  {
    what: '`users/data/get`, `users/data/delete`',
    paths: ['/users/data/get', '/users/data/delete'],
    request: /^(full|minimal)$/,
    answer: { status: 400, message: /^data is required/ },
  },
];

/** Values for properties the document gives no `example` for: the ids its examples use. */
const NAMED: Record<string, unknown> = {
  organizationId: 'yourOrganizationId',
  documentId: 'yourDocumentId',
  folderId: 'yourFolderId',
  userId: 'yourUserId1',
  groupId: 'yourGroupId',
  groupName: 'Your Group Name',
  organizationName: 'Your Organization Name',
  userIds: ['yourUserId1'],
  documentIds: ['yourDocumentId'],
  organizationUserGroupIds: ['yourGroupId'],
};

/** A value `schema` accepts: its example, a NAMED id, else one of its type. */
function sample(schema: Schema, name: string, mode: 'full' | 'minimal'): unknown {
  if (schema.example !== undefined) return schema.example;
  if (name in NAMED) return NAMED[name];
  if (schema.enum) return schema.enum[0];
  switch (schema.type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      const required: string[] = schema.required ?? [];
      for (const [prop, s] of Object.entries<Schema>(schema.properties ?? {})) {
        if (prop === 'pageToken') continue;
        if (mode === 'full' || required.includes(prop)) out[prop] = sample(s, prop, mode);
      }
      // A required field the schema says nothing more of (`data` on workspace/domains/add).
      for (const prop of required) if (!(prop in out)) out[prop] = {};
      return out;
    }
    case 'array':
      return [sample(schema.items ?? {}, name.replace(/s$/, ''), mode)];
    case 'string':
      return schema.format === 'email' ? 'user@example.com' : `${name}-1`;
    case 'integer':
    case 'number':
      return schema.default ?? 1;
    case 'boolean':
      return false;
    default:
      throw new Error(`no sample for ${name}: ${JSON.stringify(schema)}`);
  }
}

type Operation = Schema;
const requestSchema = (op: Operation): Schema | undefined => op.requestBody?.content?.['application/json']?.schema;
const responseSchema = (op: Operation, status: number): Schema | undefined => op.responses?.[String(status)]?.content?.['application/json']?.schema;

/** The requests of one path: its examples, then `full` and `minimal`. */
function built(p: string, op: Operation): Request[] {
  const out: Request[] = [];
  const content = op.requestBody?.content?.['application/json'] ?? {};
  if (content.example !== undefined) out.push({ path: p, name: 'example', body: content.example, hosted: 'valid' });
  for (const [name, ex] of Object.entries<Schema>(content.examples ?? {})) out.push({ path: p, name: `example ${name}`, body: ex.value, hosted: 'valid' });
  const schema = requestSchema(op);
  if (schema) for (const mode of ['full', 'minimal'] as const) out.push({ path: p, name: mode, body: sample(schema, 'body', mode), hosted: 'valid' });
  return out;
}

const org = 'yourOrganizationId';
const token = (resources: unknown[], extra: Record<string, unknown> = {}) => ({
  userId: 'user123',
  userProperties: { name: 'John Doe', email: 'john@example.com' },
  permissions: { resources },
  ...extra,
});

/** The requests issue 28 names, beyond the built ones. */
const DERIVED: Request[] = [
  { path: '/organizations/add', name: 'empty organizations', body: { data: { organizations: [] } }, hosted: 'valid' },
  { path: '/organizations/delete', name: 'empty id', body: { data: { organizationIds: [''] } }, hosted: 'valid' },
  { path: '/users/get', name: 'pageSize 0', body: { data: { organizationId: org, pageSize: 0 } }, hosted: 'valid' },
  {
    path: '/users/add',
    name: 'initial of 9 characters',
    body: { data: { organizationId: org, users: [{ userId: 'u1', name: 'Ann', email: 'ann@example.com', initial: 'ABCDEFGHI' }] } },
    hosted: 'valid',
  },
  {
    path: '/users/add',
    name: 'initial of 257 characters',
    body: { data: { organizationId: org, users: [{ userId: 'u1', name: 'Ann', email: 'ann@example.com', initial: 'A'.repeat(257) }] } },
    hosted: 'valid',
  },
  {
    path: '/organizations/usergroups/add',
    name: 'group without groupName',
    body: { data: { organizationId: org, organizationUserGroups: [{ groupId: 'engineering' }] } },
    hosted: 'valid',
  },
  ...ALL_WITH_RESOURCES.map((p): Request => {
    const resources = [{ type: 'document', id: 'yourDocumentId' }];
    const body = p === '/auth/generate_token' ? token(resources) : { data: { user: { userId: 'yourUserId1' }, permissions: { resources } } };
    return { path: p, name: 'document resource without organizationId', body, hosted: 'valid' };
  }),
  { path: '/organizations/add', name: 'without organizationName', body: { data: { organizations: [{ organizationId: org }] } }, hosted: 'invalid' },
  { path: '/organizations/update', name: 'without organizationName', body: { data: { organizations: [{ organizationId: org }] } }, hosted: 'invalid' },
  { path: '/users/add', name: 'without name and email', body: { data: { organizationId: org, users: [{ userId: 'yourUserId1' }] } }, hosted: 'invalid' },
  { path: '/users/update', name: 'without name and email', body: { data: { organizationId: org, users: [{ userId: 'yourUserId1', accessRole: 'viewer' }] } }, hosted: 'invalid' },
  { path: '/auth/generate_token', name: 'without permissions', body: { userId: 'user123', userProperties: { name: 'John Doe', email: 'john@example.com' } }, hosted: 'invalid' },
];

// ---- setup: what a request names, created first ----

interface Names {
  orgs: Set<string>;
  /** `${org}\u0000${id}` */
  folders: Set<string>;
  /** `${org}\u0000${folder or ''}\u0000${id}` */
  documents: Set<string>;
  users: Set<string>;
  groups: Set<string>;
}

/** The items an add route creates are not created first; everything else it names is. */
function namesOf(p: string, data: any): Names {
  const n: Names = { orgs: new Set(), folders: new Set(), documents: new Set(), users: new Set(), groups: new Set() };
  const o: string = data.organizationId || data.organizationIds?.[0] || org;
  const subject = (field: string) => p.endsWith('/add') && (p.includes(field) || (field === 'users' && p.startsWith('/auth/')));
  for (const id of [data.organizationId, ...(data.organizationIds ?? [])]) if (typeof id === 'string' && id) n.orgs.add(id);
  if (!subject('organizations')) for (const x of data.organizations ?? []) n.orgs.add(x.organizationId);
  if (typeof data.folderId === 'string') n.folders.add(`${o}\u0000${data.folderId}`);
  for (const f of data.folders ?? []) {
    if (typeof f.parentFolderId === 'string') n.folders.add(`${o}\u0000${f.parentFolderId}`);
    if (!subject('folders')) n.folders.add(`${o}\u0000${f.folderId}`);
  }
  const inFolder = typeof data.folderId === 'string' ? data.folderId : '';
  const docIds = [data.documentId, ...(data.documentIds ?? []), ...(subject('documents') ? [] : (data.documents ?? []).map((d: any) => d.documentId))];
  for (const id of docIds) if (typeof id === 'string' && id) n.documents.add(`${o}\u0000${inFolder}\u0000${id}`);
  for (const r of data.permissions?.resources ?? []) {
    if (r.type === 'organization') n.orgs.add(r.id);
    else if (r.organizationId) {
      n.orgs.add(r.organizationId);
      if (r.type === 'folder') n.folders.add(`${r.organizationId}\u0000${r.id}`);
      else n.documents.add(`${r.organizationId}\u0000\u0000${r.id}`);
    }
  }
  if (!subject('users')) for (const u of [...(data.userIds ?? []), ...(data.users ?? []).map((x: any) => x.userId)]) n.users.add(u);
  for (const g of data.organizationUserGroupIds ?? []) n.groups.add(g);
  if (n.orgs.size === 0) n.orgs.add(o);
  return n;
}

/** Creates what `data` names through this service's own routes (each must answer 200). */
async function setUp(h: Harness, headers: Record<string, string>, p: string, data: any): Promise<void> {
  const n = namesOf(p, data);
  const ok = (url: string, d: unknown) => h.ok(`/v2${url}`, d, headers);
  await ok('/organizations/add', { organizations: [...n.orgs].map((id) => ({ organizationId: id, organizationName: `Org ${id}` })) });
  for (const key of n.folders) {
    const [o, folderId] = key.split('\u0000');
    await ok('/organizations/folders/add', { organizationId: o, createOrganization: true, folders: [{ folderId }] });
  }
  for (const key of n.documents) {
    const [o, folderId, documentId] = key.split('\u0000');
    await ok('/organizations/documents/add', { organizationId: o, createOrganization: true, ...(folderId ? { folderId, createFolder: true } : {}), documents: [{ documentId }] });
  }
  if (n.users.size > 0) {
    const o: string = data.organizationId ?? org;
    const users = [...n.users].map((userId) => ({ userId, name: `Name ${userId}`, email: `${userId.toLowerCase()}@example.com` }));
    await ok('/users/add', { organizationId: o, users });
    if (data.documentId || data.folderId) await ok('/users/add', { organizationId: o, documentId: data.documentId, folderId: data.folderId, users });
    for (const groupId of n.groups) {
      await ok('/organizations/usergroups/add', { organizationId: o, organizationUserGroups: [{ groupId, groupName: groupId }] });
      await ok('/organizations/usergroups/users/add', { organizationId: o, organizationUserGroupId: groupId, userIds: [...n.users] });
    }
  }
}

/** The read that shows a write, as a hosted request body (THEN). */
function then(p: string, data: any): { path: string; body: any } | null {
  const resourceOrg = (data.permissions?.resources ?? []).map((r: any) => (r.type === 'organization' ? r.id : r.organizationId))[0];
  switch (p) {
    case '/organizations/add':
    case '/organizations/update':
      return { path: '/organizations/get', body: { data: { organizationIds: data.organizations.map((o: any) => o.organizationId) } } };
    case '/users/add':
    case '/users/update': {
      const scope = Object.fromEntries(['organizationId', 'documentId', 'folderId'].filter((k) => data[k] !== undefined).map((k) => [k, data[k]]));
      return { path: '/users/get', body: { data: scope } };
    }
    case '/auth/permissions/add':
    case '/auth/generate_token':
      return resourceOrg ? { path: '/users/get', body: { data: { organizationId: resourceOrg } } } : null;
    case '/organizations/documents/add':
    case '/organizations/documents/update':
      return { path: '/organizations/documents/get', body: { data: { organizationId: data.organizationId } } };
    case '/organizations/folders/add':
      return { path: '/organizations/folders/get', body: { data: { organizationId: data.organizationId } } };
    default:
      return null;
  }
}

// ---- checking ----

interface Ctx {
  h: Harness;
  doc: Schema;
  ajv: InstanceType<typeof Ajv2020>;
  shared: string[];
  seen: Set<Difference>;
}

const errorsOf = (ctx: Ctx, schema: Schema, value: unknown): string => {
  const validate = ctx.ajv.compile(schema);
  return validate(value) ? '' : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');
};

function differenceFor(ctx: Ctx, p: string, name: string): Difference | undefined {
  const found = DIFFERENCES.filter((d) => d.paths.includes(p) && d.request.test(name) && !('wrapped' in d.answer));
  assert.ok(found.length <= 1, `${p} ${name}: more than one listed difference: ${found.map((d) => d.what).join(', ')}`);
  if (found[0]) ctx.seen.add(found[0]);
  return found[0];
}

/** Sends `body` (wrapped in `data` where a row says so), and checks the answer as the top of this file says. */
async function check(ctx: Ctx, headers: Record<string, string>, req: Request): Promise<Response> {
  const op = ctx.doc.paths[req.path].post;
  const label = `${req.path} ${req.name}`;
  const requestErrors = errorsOf(ctx, requestSchema(op) ?? {}, req.body);
  assert.is(requestErrors === '' ? 'valid' : 'invalid', req.hosted, `${label}: the hosted request schema says ${requestErrors || 'valid'}`);
  const wrap = DIFFERENCES.find((d) => d.paths.includes(req.path) && 'wrapped' in d.answer);
  let payload = req.body;
  if (wrap) {
    ctx.seen.add(wrap);
    const unwrapped = await ctx.h.raw(`/v2${req.path}`, JSON.stringify(req.body), headers);
    assert.is(unwrapped.status, 400, `${label}: the hosted body as it is (without data) is refused here: ${JSON.stringify(unwrapped.body)}`);
    payload = { data: req.body };
  }
  const res = await ctx.h.raw(`/v2${req.path}`, JSON.stringify(payload), headers);
  const diff = differenceFor(ctx, req.path, req.name);
  assert.ok(req.hosted === 'valid' || (diff && 'accepted' in diff.answer), `${label}: the hosted schema refuses it and no difference lists it`);
  const answer = diff?.answer;
  if (answer && 'status' in answer) {
    assert.is(res.status, answer.status, `${label} (listed: ${diff!.what}): ${JSON.stringify(res.body)}`);
    assert.match(res.body.error.message, answer.message, `${label}: ${res.body.error.message}`);
    const schema = responseSchema(op, res.status);
    if (schema) assert.is(errorsOf(ctx, schema, res.body), '', `${label}: the failure envelope fits the hosted ${res.status} schema`);
    return res;
  }
  assert.is(res.status, 200, `${label}: ${JSON.stringify(res.body)}`);
  const schema = responseSchema(op, 200);
  const errors = schema ? errorsOf(ctx, schema, res.body) : '';
  if (answer && 'schemaErrors' in answer) assert.match(errors, answer.schemaErrors, `${label} (listed: ${diff!.what}): ${errors || 'no error'}`);
  else assert.is(errors, '', `${label}: the answer does not fit the hosted 200 schema: ${JSON.stringify(res.body)}`);
  return res;
}

async function run(ctx: Ctx, req: Request): Promise<number> {
  const t = await ctx.h.tenant();
  const data = req.path === '/auth/generate_token' ? req.body : req.body.data ?? {};
  await setUp(ctx.h, t.headers, req.path, data);
  const res = await check(ctx, t.headers, req);
  const read = res.status === 200 ? then(req.path, data) : null;
  if (read) await check(ctx, t.headers, { ...read, name: `after ${req.path} ${req.name}`, hosted: 'valid' });
  return read ? 2 : 1;
}

// ---- the suite ----

const S = suite<Ctx>('hosted OpenAPI document');

S.before(async (ctx) => {
  ctx.h = await harness();
  ctx.doc = (await SwaggerParser.dereference(YAML)) as Schema;
  ctx.ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ctx.ajv, ['email']);
  // OpenAPI's integer formats: a JavaScript number holds an int64 exactly up to 2^53.
  ctx.ajv.addFormat('int64', { type: 'number', validate: Number.isSafeInteger });
  ctx.shared = Object.keys(ctx.doc.paths).filter((p) => ctx.h.app.hasRoute({ method: 'POST', url: `/v2${p}` }));
  ctx.seen = new Set();
});
S.after(async (ctx) => ctx.h.close());

S('the vendored document is the one the README names, byte for byte', () => {
  const bytes = fs.readFileSync(YAML);
  const blob = crypto.createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
  assert.is(blob, BLOB);
  assert.ok(fs.readFileSync(path.join(ROOT, 'test', 'fixtures', 'hosted', 'README.md'), 'utf8').includes(BLOB));
});

S('every hosted path is served here but the ones docs/compatibility.md says are not', (ctx) => {
  const unserved = Object.keys(ctx.doc.paths).filter((p) => !ctx.shared.includes(p));
  assert.equal(unserved.sort(), [...NOT_SERVED].sort());
  assert.is(ctx.shared.length, 22);
});

S('requests built from the document: answers fit its response schemas, bar DIFFERENCES', async (ctx) => {
  let sent = 0;
  for (const p of ctx.shared) {
    for (const req of built(p, ctx.doc.paths[p].post)) sent += await run(ctx, req);
  }
  // Every shared path sends at least its two built requests.
  assert.ok(sent >= ctx.shared.length * 2, `${sent} requests`);
});

S('the requests issue 28 names: the hosted behaviour where its docs agree, else a listed difference', async (ctx) => {
  for (const req of DERIVED) {
    assert.ok(ctx.shared.includes(req.path), req.path);
    await run(ctx, req);
  }
});

S('generate_token keeps the name and e-mail it is sent; a user known only from a grant has none, not ""', async (ctx) => {
  const t = await ctx.h.tenant();
  await ctx.h.ok('/v2/organizations/add', { organizations: [{ organizationId: 'o' }] }, t.headers);
  await ctx.h.ok('/v2/auth/generate_token', token([{ type: 'organization', id: 'o' }], { userId: 'tok' }), t.headers);
  await ctx.h.ok('/v2/auth/permissions/add', { user: { userId: 'granted' }, permissions: { resources: [{ type: 'organization', id: 'o' }] } }, t.headers);
  let rows = (await ctx.h.ok('/v2/users/get', { organizationId: 'o' }, t.headers)).data;
  assert.equal(rows, [
    { userId: 'granted', accessRole: 'editor' },
    { userId: 'tok', name: 'John Doe', email: 'john@example.com', initial: 'JD', accessRole: 'editor' },
  ]);
  // A later token with other properties updates the profile; the same ones write nothing.
  await ctx.h.ok('/v2/auth/generate_token', { ...token([], { userId: 'tok' }), userProperties: { name: 'Jo Doe', email: 'jo@example.com' }, permissions: undefined }, t.headers);
  rows = (await ctx.h.ok('/v2/users/get', { organizationId: 'o', userIds: ['tok'] }, t.headers)).data;
  assert.equal(rows, [{ userId: 'tok', name: 'Jo Doe', email: 'jo@example.com', initial: 'JD', accessRole: 'editor' }]);
  // allDocuments rows, flat and grouped, leave the unknown fields out the same way.
  await ctx.h.ok('/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: 'd' }] }, t.headers);
  await ctx.h.ok('/v2/auth/permissions/add', { user: { userId: 'granted' }, permissions: { resources: [{ type: 'document', id: 'd', organizationId: 'o' }] } }, t.headers);
  assert.equal((await ctx.h.ok('/v2/users/get', { organizationId: 'o', allDocuments: true }, t.headers)).data, [{ userId: 'granted', accessRole: 'editor', documentId: 'd' }]);
  assert.equal((await ctx.h.ok('/v2/users/get', { organizationId: 'o', allDocuments: true, groupByDocumentId: true }, t.headers)).data, { d: [{ userId: 'granted', accessRole: 'editor' }] });
});

S('documents/get rows: `documentId` beside `id`', async (ctx) => {
  const t = await ctx.h.tenant();
  await ctx.h.ok('/v2/organizations/documents/add', { organizationId: 'o', createOrganization: true, folderId: 'f', createFolder: true, documents: [{ documentId: 'q"\\\u2028' }] }, t.headers);
  await ctx.h.ok('/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: 'plain', documentName: 'Plain' }] }, t.headers);
  const rows = (await ctx.h.ok('/v2/organizations/documents/get', { organizationId: 'o' }, t.headers)).data;
  assert.equal(rows.map((r: any) => [r.id, r.documentId]), [['q"\\\u2028', 'q"\\\u2028'], ['plain', 'plain']]);
});

S('every listed difference happened, and docs/compatibility.md lists the same rows', (ctx) => {
  for (const d of DIFFERENCES) assert.ok(ctx.seen.has(d), `listed but not seen (no longer a difference?): ${d.what}`);
  const md = fs.readFileSync(path.join(ROOT, 'docs', 'compatibility.md'), 'utf8');
  const section = md.split('\n## The hosted OpenAPI document\n')[1]?.split('\n## ')[0];
  assert.ok(section, 'docs/compatibility.md has a section "The hosted OpenAPI document"');
  const rows = section.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| what ') && !l.startsWith('|---'));
  const firstCells = rows.map((l) => l.slice(2, l.indexOf(' | ')));
  assert.equal(firstCells, DIFFERENCES.map((d) => d.what));
});

S.run();
