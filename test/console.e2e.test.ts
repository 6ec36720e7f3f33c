/**
 * The console (issue 26, docs/console.md) in a real browser: Debian's chromium through
 * playwright-core, against the app listening on 127.0.0.1 with seeded data. It walks what
 * the "Done when" lists, in order: sign in; organization -> folder -> document; the
 * users who can open it and one user's explanation; grant access and see it appear; a refused
 * grant shows the failure envelope's message; revoke; change the access type; the document's
 * audit; the organization's groups and one group's members; with the admin token, a parked
 * event retried; with the workspace credentials, the workspace's API keys (no secret shown).
 * On the way: a document named as markup shows as text; the page's CSP refuses an
 * inline script; the credentials are in session storage and never in a URL; axe-core finds no
 * serious or critical violation. Each view's screenshot is written to test-output/console/
 * (untracked); with UPDATE_SCREENSHOTS=1, to docs/console/, the ones the docs show.
 * No fixed waits: every step waits for what it expects to see.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { harness, type Harness, type Tenant } from './support/app.js';
import { CONSOLE_CSP } from '../src/http/console.js';
import { parkPoison } from './support/poison.js';

// The page's globals, as the page.evaluate callbacks below use them (the project's tsconfig
// has no DOM library: the callbacks run in the browser, not here).
interface PageElement {
  textContent: string | null;
  getAttribute(name: string): string | null;
}
declare const window: { innerWidth: number; __xss?: number; __inline?: number; axe: { run(): Promise<{ violations: { id: string; impact: string; help: string; nodes: unknown[] }[] }> } };
declare const document: {
  cookie: string;
  documentElement: { scrollWidth: number };
  querySelector(selector: string): unknown;
  fonts: { ready: Promise<unknown> };
  createElement(tag: string): PageElement;
  addEventListener(type: string, listener: () => void, options: { once: boolean }): void;
  body: { append(node: PageElement): void };
};
declare const sessionStorage: object;
declare const localStorage: object;

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
// npm test never rewrites a tracked file (another machine's fonts give other bytes): the
// committed screenshots are refreshed on purpose, with UPDATE_SCREENSHOTS=1.
const SHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? path.join(root, 'docs', 'console') : path.join(root, 'test-output', 'console');
const ADMIN_TOKEN = 'console-e2e-admin-token';
const XSS_NAME = '<img src=x onerror="window.__xss=1">';
const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface Ctx {
  h: Harness;
  t: Tenant;
  base: string;
  browser: Browser;
  page: Page;
  requested: string[];
  /** Unix ms after dave's grant showed and before it was revoked: the past the picker asks about. */
  between: number;
}

async function seed(h: Harness, t: Tenant) {
  const ok = (url: string, data: unknown) => h.ok(url, data, t.headers);
  await ok('/v2/organizations/add', { organizations: [{ organizationId: 'o1', organizationName: 'Acme' }] });
  await ok('/v2/organizations/folders/add', { organizationId: 'o1', folders: [{ folderId: 'f1', folderName: 'Engineering' }] });
  await ok('/v2/organizations/folders/add', { organizationId: 'o1', folders: [{ folderId: 'f2', folderName: 'Specs', parentFolderId: 'f1' }] });
  await ok('/v2/organizations/documents/add', {
    organizationId: 'o1',
    folderId: 'f2',
    documents: [
      { documentId: 'd1', documentName: 'Plan', accessType: 'restricted' },
      { documentId: 'd-xss', documentName: XSS_NAME },
    ],
  });
  await ok('/v2/users/add', { organizationId: 'o1', users: ['alice', 'bob', 'carol'].map((u) => ({ userId: u, name: u, email: `${u}@example.com`, accessRole: 'viewer' })) });
  await ok('/v2/auth/permissions/add', { userId: 'alice', permissions: { resources: [{ type: 'folder', id: 'f1', organizationId: 'o1', accessRole: 'editor' }] } });
  await ok('/v2/auth/permissions/add', { userId: 'bob', permissions: { resources: [{ type: 'document', id: 'd1', organizationId: 'o1', accessRole: 'viewer' }] } });
  await ok('/v2/organizations/usergroups/add', { organizationId: 'o1', organizationUserGroups: [{ groupId: 'eng', groupName: 'Engineers' }, { groupId: 'ops', groupName: XSS_NAME }] });
  await ok('/v2/organizations/usergroups/users/add', { organizationId: 'o1', organizationUserGroupId: 'eng', userIds: ['alice', 'bob'] });
}

/** axe-core over the page as it is: no serious or critical violation. */
async function axe(page: Page, view: string) {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern; the page
  // itself could not load it (no inline script, no other origin).
  const violations = await page.evaluate(async (src) => {
    (0, eval)(src);
    const r = await window.axe.run();
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.length }));
  }, axeSource);
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.equal(bad, [], `${view}: axe-core violations ${JSON.stringify(bad)}`);
}

/**
 * What differs from run to run (the API key, times, ids made at random) is masked, so a run
 * that changed nothing visible writes the same bytes (and, with UPDATE_SCREENSHOTS=1, leaves
 * docs/console/ as committed).
 */
const VOLATILE = ['header .muted', 'tr[data-api-key] code', 'li[data-token] code', 'li[data-token] time', 'tr[data-event] td:nth-child(1)', 'tr[data-event] td:nth-child(3)', 'tr[data-event] pre', 'tr[data-parked] td:nth-child(1) code', 'tr[data-parked] td:nth-child(3)', 'tr[data-projection="webhooks"] td:nth-child(n+2)', '.timeline time', '.timeline .actor'];

async function shot(page: Page, name: string) {
  const file = path.join(SHOTS, `${name}.png`);
  // Every section of the view has its answer (a loading line is `aria-busy`).
  await page.waitForFunction(() => !document.querySelector('[aria-busy="true"]'));
  await page.evaluate(() => document.fonts.ready.then(() => undefined));
  // Nothing hovered.
  await page.mouse.move(0, 0);
  const png = await page.screenshot({ fullPage: true, animations: 'disabled', mask: VOLATILE.map((s) => page.locator(s)), maskColor: '#d0d7de' });
  fs.mkdirSync(SHOTS, { recursive: true });
  if (!fs.existsSync(file) || !fs.readFileSync(file).equals(png)) fs.writeFileSync(file, png);
}

/** The breadcrumb's links once every name in it has loaded. */
async function crumbs(page: Page): Promise<string[]> {
  await page.waitForFunction(() => !document.querySelector('.crumbs [aria-busy="true"]'));
  return page.locator('.crumbs a').allInnerTexts();
}

/** Nothing wider than the viewport: no sideways scroll (a phone's 375 px included). */
async function fits(page: Page, view: string) {
  const { scroll, inner } = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth }));
  assert.ok(scroll <= inner, `${view}: ${scroll} px wide in a ${inner} px viewport`);
}

const E = suite<Ctx>('console in headless Chromium');
E.before(async (ctx) => {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium or set CHROMIUM_PATH.`);
  ctx.h = await harness({ ADMIN_TOKEN });
  ctx.t = await ctx.h.tenant();
  await seed(ctx.h, ctx.t);
  await parkPoison(ctx.h, ctx.t.apiKey);
  await ctx.h.app.listen({ host: '127.0.0.1', port: 0 });
  ctx.base = `http://127.0.0.1:${(ctx.h.app.server.address() as AddressInfo).port}`;
  fs.mkdirSync(SHOTS, { recursive: true });
  ctx.browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-background-networking'] });
  ctx.page = await ctx.browser.newPage({ viewport: { width: 1280, height: 900 } });
  ctx.requested = [];
  ctx.page.on('request', (req) => ctx.requested.push(req.url()));
  // Anything elsewhere is refused (and recorded): the console must work offline.
  await ctx.page.route('**/*', (route) => (new URL(route.request().url()).origin === ctx.base ? route.continue() : route.abort()));
});
E.after(async (ctx) => {
  await ctx.browser?.close();
  await ctx.h?.close();
});

E('sign in with an API key and its auth token; the credentials stay out of every URL', async ({ page, base, t }) => {
  const res = await page.goto(`${base}/console/`);
  assert.is(res?.status(), 200);
  assert.is(res?.headers()['content-security-policy'], CONSOLE_CSP);
  await page.getByLabel('API key').waitFor();
  await axe(page, 'sign in');
  await shot(page, 'signin');
  await page.getByLabel('API key').fill(t.headers['x-service-api-key']!);
  await page.getByLabel('Auth token').fill(t.headers['x-service-auth-token']!);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Organizations' }).waitFor();
  const stored = await page.evaluate(() => ({ session: JSON.stringify(sessionStorage), local: JSON.stringify(localStorage), cookie: document.cookie }));
  assert.ok(stored.session.includes(t.headers['x-service-auth-token']!), 'the token is in session storage');
  assert.not.ok(stored.local.includes(t.headers['x-service-auth-token']!), 'never in local storage');
  assert.is(stored.cookie, '');
});

E('a wrong token is refused with the envelope message', async ({ browser, base, t }) => {
  const other = await browser.newPage();
  try {
    await other.goto(`${base}/console/`);
    await other.getByLabel('API key').fill(t.headers['x-service-api-key']!);
    await other.getByLabel('Auth token').fill('wrong-token');
    await other.getByRole('button', { name: 'Sign in' }).click();
    const alert = other.getByRole('alert');
    await alert.waitFor();
    assert.match(await alert.innerText(), /PERMISSION_DENIED/);
  } finally {
    await other.close();
  }
});

E('organization -> folder -> folder: the tree, the folder access panel, names as text', async ({ page }) => {
  await page.getByRole('link', { name: 'Acme' }).click();
  await page.getByRole('heading', { name: 'Acme', level: 1 }).waitFor();
  await page.getByRole('navigation', { name: 'Folders' }).getByRole('link', { name: 'Engineering' }).click();
  await page.getByRole('heading', { name: 'Folder Engineering' }).waitFor();
  await page.getByRole('navigation', { name: 'Folders' }).getByRole('link', { name: 'Specs' }).click();
  await page.getByRole('heading', { name: 'Folder Specs' }).waitFor();
  assert.match(page.url(), /#\/orgs\/o1\/folders\/f2$/);
  assert.is(await page.locator('a[aria-current="page"]').innerText(), 'Specs');
  // The document named as markup is its name, as text: no element made of it, nothing run.
  await page.getByText(XSS_NAME, { exact: true }).waitFor();
  assert.is(await page.locator('.documents img').count(), 0);
  assert.is(await page.evaluate(() => window.__xss), undefined);
  await axe(page, 'organization');
  await shot(page, 'organization');
  // Search by name, then by id.
  const search = page.getByLabel('Search by id or name');
  await search.fill('pla');
  await page.locator('.documents li').filter({ hasText: 'd-xss' }).waitFor({ state: 'detached' });
  assert.equal(await page.locator('.documents li a').allInnerTexts(), ['Plan']);
  await search.fill('d-xss');
  await page.locator('.documents li').filter({ hasText: 'Plan' }).waitFor({ state: 'detached' });
  assert.equal(await page.locator('.documents li a').allInnerTexts(), [XSS_NAME]);
  await search.fill('');
  await page.locator('.documents li').nth(1).waitFor();
});

E('the page refuses an inline script (its CSP)', async ({ page }) => {
  const ran = await page.evaluate(async () => {
    const s = document.createElement('script');
    s.textContent = 'window.__inline = 1';
    const refused = new Promise<boolean>((resolve) => document.addEventListener('securitypolicyviolation', () => resolve(true), { once: true }));
    document.body.append(s);
    await refused;
    return window.__inline;
  });
  assert.is(ran, undefined);
});

E('a document: who can open it, and one user\'s explanation drawn with the deciding grant', async ({ page, h, t }) => {
  await page.getByRole('link', { name: 'Plan' }).click();
  await page.getByRole('heading', { name: 'Plan', level: 1 }).waitFor();
  const expected = (await h.ok('/v2/auth/users/get', { organizationId: 'o1', documentId: 'd1' }, t.headers)).data.users as { userId: string; accessRole: string }[];
  assert.ok(expected.length >= 2, JSON.stringify(expected));
  for (const u of expected) {
    const row = page.locator(`tr[data-user="${u.userId}"]`);
    await row.waitFor();
    assert.match(await row.innerText(), new RegExp(u.accessRole));
  }
  // Names in the breadcrumb, ids nowhere in it.
  assert.equal(await crumbs(page), ['Organizations', 'Acme', 'Engineering', 'Specs']);
  await page.locator('tr[data-user="alice"]').getByRole('link', { name: 'alice' }).click();
  await page.getByRole('heading', { name: /Why alice/ }).waitFor();
  const why = (await h.ok('/v2/auth/permissions/explain', { organizationId: 'o1', userId: 'alice', documentId: 'd1' }, t.headers)).data;
  const deciding = why.candidates[why.decidedBy.candidate];
  assert.is(deciding.id, 'f1', 'seeded: the folder grant decides');
  const marked = page.locator('.path > li.decides');
  await marked.waitFor();
  assert.match(await marked.innerText(), /Folder f1/);
  assert.match(await marked.innerText(), /deciding grant/);
  assert.equal(await page.locator('.path > li .step').allInnerTexts(), ['Organization o1', 'Folder f1', 'Folder f2', 'Document d1'], 'organization, two folders, the document');
  assert.match(page.url(), /#\/orgs\/o1\/documents\/d1\/explain\/alice$/);
  await axe(page, 'document');
  await shot(page, 'document');
});

E('grant access: it appears; a refused grant shows the envelope\'s message; revoke: it goes', async (ctx) => {
  const { page } = ctx;
  // carol is a user of the organization: no warning. dave is not: warned before and in the dialog.
  await page.getByLabel('User id', { exact: true }).fill('carol');
  await page.locator('[data-user-check="known"]').waitFor({ state: 'attached' });
  assert.is(await page.locator('.grant .warning').count(), 0);
  await page.getByLabel('User id', { exact: true }).fill('dave');
  const warning = page.locator('.grant .warning[data-user-check="unknown"]');
  await warning.waitFor();
  assert.match(await warning.innerText(), /The organization has no user dave/);
  await page.getByRole('button', { name: 'Grant', exact: true }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByText('Give user dave viewer access to document d1?').waitFor();
  assert.match(await dialog.innerText(), /has no user dave/);
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await page.locator('tr[data-user="dave"]').waitFor();
  // dave's grant has happened (it shows); the revoke below happens after this instant.
  ctx.between = Date.now();
  await shot(page, 'grant');

  await page.getByLabel('To', { exact: true }).selectOption('group');
  await page.getByLabel('Group id', { exact: true }).fill('no-such-group');
  await page.getByRole('button', { name: 'Grant', exact: true }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
  const refusal = page.locator('.grant').getByRole('alert');
  await refusal.waitFor();
  assert.match(await refusal.innerText(), /user group does not exist/i);

  await page.waitForFunction((t) => Date.now() > t, ctx.between);
  // The dialog asks the service first, with a dry run of the same call: dave would lose his access.
  const head = await ctx.h.services.events.headPosition();
  await page.getByRole('button', { name: 'Revoke dave' }).click();
  const revoke = page.getByRole('dialog');
  const counts = revoke.locator('.preview .impact');
  await counts.waitFor();
  assert.is(await counts.innerText(), '0 gain, 1 lose access');
  await revoke.getByText('List the 1 change').click();
  assert.equal(await revoke.locator('.changes li').allInnerTexts(), ['dave → document d1 → loses viewer']);
  await axe(page, 'revoke dialog with its dry run');
  // Nothing changed before confirming: the log's head, dave's row, and dave's access as the API answers it.
  assert.is(await ctx.h.services.events.headPosition(), head);
  assert.is(await page.locator('tr[data-user="dave"]').count(), 1);
  const dave = await ctx.h.ok('/v2/auth/permissions/get', { organizationId: 'o1', userIds: ['dave'], documentIds: ['d1'] }, ctx.t.headers);
  assert.is(dave.data.dave.documents.d1.accessRole, 'viewer');
  await revoke.getByRole('button', { name: 'Confirm' }).click();
  await page.locator('tr[data-user="dave"]').waitFor({ state: 'detached' });
});

E('change the access type; disable and enable; move (refused, then done); each confirmed', async ({ page }) => {
  await page.getByLabel('Access type', { exact: true }).selectOption('public');
  await page.getByRole('button', { name: 'Change access type' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
  await page.locator('[data-fact="accessType"]', { hasText: 'public' }).waitFor();
  await page.getByRole('button', { name: 'Disable', exact: true }).click();
  // Cancel first: nothing changes.
  await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
  assert.is(await page.locator('[data-fact="disabled"]').innerText(), 'no');
  await page.getByRole('button', { name: 'Disable', exact: true }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
  await page.locator('[data-fact="disabled"]', { hasText: 'yes' }).waitFor();
  await page.getByRole('button', { name: 'Enable', exact: true }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
  await page.locator('[data-fact="disabled"]', { hasText: 'no' }).waitFor();
  // A refused move shows the envelope's message; a move to f1 shows in the breadcrumb.
  await page.getByLabel(/^Move to folder id/).fill('no-such-folder');
  await page.getByRole('button', { name: 'Move', exact: true }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
  const refusal = page.getByRole('region', { name: 'Change' }).getByRole('alert');
  await refusal.waitFor();
  assert.match(await refusal.innerText(), /^NOT_FOUND: .*no-such-folder/);
  await page.getByLabel(/^Move to folder id/).fill('f1');
  await page.getByRole('button', { name: 'Move', exact: true }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
  await page.locator('.crumbs a', { hasText: 'Specs' }).waitFor({ state: 'detached' });
  assert.equal(await crumbs(page), ['Organizations', 'Acme', 'Engineering'], 'the breadcrumb names the organization and the folder');
});

E('the document\'s audit: its changes with time, event and who; live: a grant and its revocation made elsewhere appear without a reload; a reload keeps the view', async ({ page, h, t }) => {
  await page.getByRole('link', { name: 'Audit of this document' }).click();
  await page.getByRole('heading', { name: 'Audit of d1' }).waitFor();
  await page.locator('tr[data-event]').first().waitFor();
  const types = await page.locator('tr[data-event]').evaluateAll((rows: PageElement[]) => rows.map((r) => r.getAttribute('data-event')));
  assert.ok(types.includes('DocumentCreated') || types.some((x) => /Document/.test(x ?? '')), JSON.stringify(types));
  assert.ok(types.some((x) => /Permission|Grant/i.test(x ?? '')), `a grant is in the audit: ${JSON.stringify(types)}`);
  await axe(page, 'audit');
  await shot(page, 'audit');
  // Live (the change stream, from when the view opened): writes through the API, not the page.
  const rows = () => page.locator('tr[data-event]').count();
  const before = await rows();
  const carol = { userId: 'carol', permissions: { resources: [{ type: 'document', id: 'd1', organizationId: 'o1', accessRole: 'viewer' }] } };
  await h.ok('/v2/auth/permissions/add', carol, t.headers);
  await page.locator('tr[data-event]').nth(before).waitFor();
  await h.ok('/v2/auth/permissions/remove', carol, t.headers);
  await page.locator('tr[data-event]').nth(before + 1).waitFor();
  assert.is(await rows(), before + 2, 'the grant and its revocation, once each');
  const added = await page.locator('tr[data-event]').evaluateAll((r: PageElement[]) => r.map((x) => x.getAttribute('data-event')));
  assert.ok(added.includes('GrantRevoked'), JSON.stringify(added));
  await page.reload();
  await page.getByRole('heading', { name: 'Audit of d1' }).waitFor();
});

E('users of the organization, and what one of them can open', async ({ page, h, t }) => {
  await page.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link', { name: 'Acme' }).click();
  await page.getByRole('link', { name: 'Users', exact: true }).click();
  await page.getByRole('heading', { name: 'Users of Acme' }).waitFor();
  await page.locator('tbody tr').nth(2).waitFor();
  await axe(page, 'users');
  await shot(page, 'users');
  await page.getByRole('link', { name: 'alice' }).click();
  await page.getByRole('heading', { name: 'What alice can open' }).waitFor();
  const expected = (await h.ok('/v2/auth/resources/get', { organizationId: 'o1', userId: 'alice', type: 'document' }, t.headers)).data.map((r: { id: string }) => r.id);
  assert.ok(expected.includes('d1'), JSON.stringify(expected));
  const docs = page.getByRole('region', { name: 'Documents' }).getByRole('listitem');
  await docs.nth(expected.length - 1).waitFor();
  assert.equal((await docs.locator('a').allInnerTexts()).sort(), [...expected].sort());
  await axe(page, 'user');
  await shot(page, 'user');
});

E('the organization\'s groups (usergroups/get) and one group\'s members', async ({ page, h, t, base }) => {
  await page.goto(`${base}/console/#/orgs/o1`);
  await page.getByRole('navigation', { name: 'Organization' }).getByRole('link', { name: 'Groups' }).click();
  await page.getByRole('heading', { name: 'Groups of Acme' }).waitFor();
  assert.match(page.url(), /#\/orgs\/o1\/groups$/);
  const groups = (await h.ok('/v2/organizations/usergroups/get', { organizationId: 'o1' }, t.headers)).data as { groupId: string; groupName: string; memberCount: number }[];
  assert.equal(groups.map((g) => g.groupId), ['eng', 'ops']);
  const rows = page.locator('tr[data-group]');
  await rows.nth(groups.length - 1).waitFor();
  assert.is(await rows.count(), groups.length);
  for (const [n, g] of groups.entries()) assert.equal(await rows.nth(n).locator('td').allInnerTexts(), [g.groupId, g.groupName, String(g.memberCount)]);
  // A group named as markup is that text.
  assert.is(await page.locator('tr[data-group] img').count(), 0);
  assert.is(await page.evaluate(() => window.__xss), undefined);
  await axe(page, 'groups');
  await shot(page, 'groups');
  await page.locator('tr[data-group="eng"]').getByRole('link', { name: 'eng' }).click();
  await page.getByRole('heading', { name: 'Group eng' }).waitFor();
  assert.match(page.url(), /#\/orgs\/o1\/groups\/eng$/);
  const members = (await h.ok('/v2/users/get', { organizationId: 'o1', organizationUserGroupIds: ['eng'] }, t.headers)).data.map((u: { userId: string }) => u.userId);
  assert.equal(members, ['alice', 'bob']);
  const links = page.getByRole('region', { name: /Members/ }).getByRole('link');
  await links.nth(members.length - 1).waitFor();
  assert.equal(await links.allInnerTexts(), members);
  await axe(page, 'group');
  await shot(page, 'group');
  await page.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link', { name: 'Groups' }).click();
  await page.getByRole('heading', { name: 'Groups of Acme' }).waitFor();
});

/**
 * What Chromium's datetime-local (step 0.001) holds for an instant read as UTC: the shortest
 * string for it, as HTML asks (`…:05.120` is `…:05.12`, `…:05.000` is `…:05`, `…:00.000` drops
 * the seconds too). Playwright's fill refuses any other spelling.
 */
const pickerValue = (ms: number) =>
  new Date(ms)
    .toISOString()
    .slice(0, 23)
    .replace(/0+$/, '')
    .replace(/\.$/, '')
    .replace(/(T\d\d:\d\d):00$/, '$1');

E('as of a moment between dave\'s grant and its revoke: the picker lists him, the URL keeps it, back to now drops him', async ({ page, h, t, base, between }) => {
  const asOf = new Date(between).toISOString();
  const then = (await h.ok('/v2/auth/users/get', { organizationId: 'o1', documentId: 'd1', asOf }, t.headers)).data.users as { userId: string; accessRole: string }[];
  assert.ok(then.some((u) => u.userId === 'dave' && u.accessRole === 'viewer'), `the service lists dave then: ${JSON.stringify(then)}`);
  await page.goto(`${base}/console/#/orgs/o1/documents/d1`);
  await page.locator('tr[data-user="alice"]').waitFor();
  assert.is(await page.locator('tr[data-user="dave"]').count(), 0, 'revoked: not listed now');
  assert.is(await page.getByRole('status').innerText(), 'Showing access now');
  await page.getByLabel('As of (UTC)').fill(pickerValue(between));
  await page.getByRole('button', { name: 'Show as of then' }).click();
  await page.getByRole('status').filter({ hasText: `Showing access as of ${asOf}` }).waitFor();
  assert.ok(page.url().endsWith(`#/orgs/o1/documents/d1?asOf=${encodeURIComponent(asOf)}`), page.url());
  const dave = page.locator('tr[data-user="dave"]');
  await dave.waitFor();
  assert.match(await dave.innerText(), /viewer/);
  for (const u of then) assert.match(await page.locator(`tr[data-user="${u.userId}"]`).innerText(), new RegExp(u.accessRole));
  assert.is(await page.getByRole('button', { name: /^Revoke / }).count(), 0, 'the past is read-only');
  await axe(page, 'document as of');
  // The URL is the view: a reload asks the same past.
  await page.reload();
  await page.locator('tr[data-user="dave"]').waitFor();
  assert.is(await page.getByLabel('As of (UTC)').inputValue(), pickerValue(between));
  // dave's explanation as of then: allowed, his own grant on the document deciding.
  await dave.getByRole('link', { name: 'dave' }).click();
  await page.getByRole('heading', { name: 'Why dave could or could not open it then' }).waitFor();
  await page.locator('.verdict[data-verdict="allowed"]', { hasText: 'viewer' }).waitFor();
  assert.match(await page.locator('.path > li.decides').innerText(), /Document d1/);
  assert.ok(page.url().endsWith(`/explain/dave?asOf=${encodeURIComponent(asOf)}`), page.url());
  await page.getByRole('button', { name: 'Back to now' }).click();
  await page.getByRole('status').filter({ hasText: 'Showing access now' }).waitFor();
  await page.locator('tr[data-user="dave"]').waitFor({ state: 'detached' });
  assert.not.match(page.url(), /asOf/);
});

E('what dave could open then: resources/get as of the picker\'s moment', async ({ page, base, between, h, t }) => {
  // Each listed document is "<id> <role> <access type>", as resources/get answers it, now and then.
  type Res = { id: string; accessRole: string; accessType: string };
  const listed = async (asOf?: number) => {
    const rows = (await h.ok('/v2/auth/resources/get', { organizationId: 'o1', userId: 'dave', type: 'document', ...(asOf !== undefined ? { asOf } : {}) }, t.headers)).data as Res[];
    return rows.map((r) => `${r.id} ${r.accessRole} ${r.accessType}`).sort();
  };
  const shown = () => page.getByRole('region', { name: 'Documents' }).getByRole('listitem').allInnerTexts().then((x) => x.map((s) => s.replace(/\s+/g, ' ').trim()).sort());
  const then = await listed(between);
  assert.ok(then.includes('d1 viewer restricted'), `the service: dave could open d1 then, through his own viewer grant: ${JSON.stringify(then)}`);
  const now = await listed();
  assert.not.equal(now, then, 'and not so now (d1 is public since, and his grant revoked)');
  await page.goto(`${base}/console/#/orgs/o1/users/dave`);
  await page.getByRole('heading', { name: 'What dave can open' }).waitFor();
  await page.waitForFunction(() => !document.querySelector('[aria-busy="true"]'));
  assert.equal(await shown(), now);
  await page.getByLabel('As of (UTC)').fill(pickerValue(between));
  await page.getByRole('button', { name: 'Show as of then' }).click();
  await page.getByRole('heading', { name: 'What dave could open then' }).waitFor();
  await page.getByRole('region', { name: 'Documents' }).getByRole('listitem').filter({ hasText: 'd1 viewer' }).waitFor();
  assert.equal(await shown(), then);
  assert.ok(page.url().endsWith(`#/orgs/o1/users/dave?asOf=${encodeURIComponent(new Date(between).toISOString())}`), page.url());
  // An instant the service cannot read, typed into a URL, is its refusal, shown as such.
  await page.goto(`${base}/console/#/orgs/o1/users/dave?asOf=yesterday`);
  const refusal = page.getByRole('region', { name: 'Documents' }).getByRole('alert');
  await refusal.waitFor();
  assert.match(await refusal.innerText(), /^INVALID_ARGUMENT: .*asOf/);
});

E('the access timeline of the document: dave\'s interval from grant to revoke, alice\'s still open', async ({ page, base, between, h, t }) => {
  await page.goto(`${base}/console/#/orgs/o1/documents/d1`);
  await page.getByRole('link', { name: 'Access timeline' }).click();
  await page.getByRole('heading', { name: 'Access timeline of document d1' }).waitFor();
  assert.match(page.url(), /#\/orgs\/o1\/documents\/d1\/timeline$/);
  type Interval = { userId: string; accessRole: string; from: number; to: number | null; openedBy: { type: string; actor: string }; closedBy: { type: string; actor: string } | null };
  const intervals = (await h.ok('/v2/auth/access/history', { organizationId: 'o1', documentId: 'd1' }, t.headers)).data as Interval[];
  const daves = intervals.filter((i) => i.userId === 'dave');
  assert.is(daves.length, 1, JSON.stringify(intervals));
  const d = daves[0]!;
  assert.ok(d.from <= between && d.to !== null && between < d.to, `the picker's moment lies inside dave's interval: ${JSON.stringify(d)}`);
  const rows = page.locator('tr[data-interval]');
  await rows.nth(intervals.length - 1).waitFor();
  assert.is(await rows.count(), intervals.length);
  for (const [n, i] of intervals.entries()) {
    const cells = await rows.nth(n).locator('th, td').allInnerTexts();
    assert.equal(cells.slice(0, 4), [i.userId, i.accessRole, new Date(i.from).toISOString(), i.to === null ? 'now' : new Date(i.to).toISOString()]);
    assert.is(cells[5], `${i.openedBy.type} by ${i.openedBy.actor}`);
    assert.is(cells[6], i.closedBy === null ? '' : `${i.closedBy.type} by ${i.closedBy.actor}`);
  }
  assert.is(await page.locator('tr[data-interval="alice"][data-open="yes"]').count(), 1, 'alice can still open it');
  await axe(page, 'timeline');
  await shot(page, 'timeline');
  // An interval's start opens the document as of that instant, where its user is listed.
  await page.locator('tr[data-interval="dave"]').getByRole('link').click();
  await page.locator('tr[data-user="dave"]').waitFor();
  assert.ok(page.url().endsWith(`?asOf=${encodeURIComponent(new Date(d.from).toISOString())}`), page.url());
});

E('operations with the admin token: projection lag, a parked event retried (it fails again, the error shown) and skipped', async ({ page }) => {
  await page.getByRole('link', { name: 'Operations' }).click();
  await page.getByLabel('Admin token', { exact: true }).fill(ADMIN_TOKEN);
  await page.getByRole('button', { name: 'Unlock operations' }).click();
  await page.locator('tr[data-projection="agents"]').waitFor();
  const row = page.locator('tr[data-parked^="agents:"]');
  await row.waitFor();
  const attempts = Number(await row.locator('[data-attempts]').innerText());
  await axe(page, 'operations');
  await shot(page, 'operations');
  await row.getByRole('button', { name: /^Retry / }).click();
  await page.getByRole('dialog').filter({ hasText: 'again?' }).getByRole('button', { name: 'Confirm' }).click();
  const refusal = row.getByRole('alert');
  await refusal.waitFor();
  assert.match(await refusal.innerText(), /FAILED_PRECONDITION: .*failed again/);
  await row.locator('[data-attempts]', { hasText: String(attempts + 1) }).waitFor();
  await axe(page, 'operations, a retry refused');
  const stored = await page.evaluate(() => JSON.stringify(sessionStorage) + JSON.stringify(localStorage) + document.cookie);
  assert.not.ok(stored.includes(ADMIN_TOKEN), 'the admin token is kept in memory only');
  await row.getByRole('button', { name: /^Skip / }).click();
  await page.getByRole('dialog').filter({ hasText: 'Skip' }).getByRole('button', { name: 'Confirm' }).click();
  await page.locator('tr[data-parked^="agents:"]').waitFor({ state: 'detached' });
});

E('with the workspace credentials: the workspace\'s API keys and the key\'s auth tokens, no secret shown', async ({ page, h, t }) => {
  const ws = t.workspaceHeaders;
  // A second key, made with its auth token: listed by id and name, its token never shown.
  const made = (await h.ok('/v2/workspace/apikey/create', { ownerEmail: 'owner@example.com', type: 'testing', createAuthToken: true }, ws)).data;
  const madeToken = JSON.stringify(made).match(/"authToken":"([^"]+)"/)?.[1];
  assert.ok(madeToken && madeToken !== '__redacted__', JSON.stringify(made));
  await page.getByLabel('Workspace id', { exact: true }).fill(ws['x-service-workspace-id']!);
  await page.getByLabel('Workspace auth token', { exact: true }).fill(ws['x-service-workspace-auth-token']!);
  await page.getByRole('button', { name: 'Unlock', exact: true }).click();
  const keys = (await h.ok('/v2/workspace/apikeys/get', {}, ws)).data as { id: string; apiKeyName: string; type: string }[];
  assert.ok(keys.length === 2 && keys.some((k) => k.id === t.apiKey), JSON.stringify(keys));
  const rows = page.getByRole('region', { name: 'API keys of the workspace' }).locator('tbody tr');
  await rows.nth(keys.length - 1).waitFor();
  assert.is(await rows.count(), keys.length);
  // The signed-in key first, then the others as the service lists them.
  for (const [n, k] of [...keys.filter((k) => k.id === t.apiKey), ...keys.filter((k) => k.id !== t.apiKey)].entries()) {
    assert.equal((await rows.nth(n).locator('td').allInnerTexts()).map((x) => x.replace(/\s+/g, ' ').trim()), [k.id === t.apiKey ? `${k.id} signed in` : k.id, k.apiKeyName, k.type]);
  }
  assert.is(await page.locator('tr[data-api-key="signed-in"]').count(), 1);
  await page.locator('li[data-token]').first().waitFor();
  // Neither the key's auth token nor the workspace's is anywhere on the page or in storage.
  const text = await page.evaluate(() => (document.querySelector('main') as PageElement).textContent ?? '');
  for (const secret of [t.headers['x-service-auth-token']!, ws['x-service-workspace-auth-token']!, madeToken]) assert.not.ok(text.includes(secret), 'a secret on the page');
  const stored = await page.evaluate(() => JSON.stringify(sessionStorage) + JSON.stringify(localStorage) + document.cookie);
  assert.not.ok(stored.includes(ws['x-service-workspace-auth-token']!), 'the workspace token is kept in memory only');
  await axe(page, 'API keys');
  await shot(page, 'apikeys');
});

E('a fresh API key starts in the console: its first organization, a folder, a document, users, a group and a member, grants (an unknown user warned of)', async ({ browser, base, h }) => {
  const fresh = await h.tenant();
  const api = (url: string, data: unknown) => h.ok(url, data, fresh.headers);
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.route('**/*', (route) => (new URL(route.request().url()).origin === base ? route.continue() : route.abort()));
  try {
    await page.goto(`${base}/console/`);
    await page.getByLabel('API key').fill(fresh.headers['x-service-api-key']!);
    await page.getByLabel('Auth token').fill(fresh.headers['x-service-auth-token']!);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // The empty state offers the first organization.
    await page.getByText('This API key has no organization yet.').waitFor();
    const first = page.getByRole('form', { name: 'Create the first organization' });
    await first.waitFor();
    await axe(page, 'no organization yet');
    await shot(page, 'start');
    await first.getByLabel('Organization id').fill('team');
    await first.getByLabel('Name').fill('Team Space');
    await first.getByRole('button', { name: 'Create organization' }).click();
    await page.getByRole('heading', { name: 'Team Space', level: 1 }).waitFor();
    assert.match(page.url(), /#\/orgs\/team$/);
    assert.equal((await api('/v2/organizations/get', {})).data.map((o: { organizationId: string; organizationName: string }) => [o.organizationId, o.organizationName]), [['team', 'Team Space']]);

    // A restricted folder at the top, then a document in it (inheriting restricted).
    const folderForm = page.getByRole('form', { name: 'New folder' });
    await folderForm.getByLabel('Folder id').fill('projects');
    await folderForm.getByLabel('Folder name').fill('Projects');
    await folderForm.getByLabel('Folder access type').selectOption('restricted');
    await folderForm.getByRole('button', { name: 'Create folder' }).click();
    await page.getByRole('heading', { name: 'Folder Projects' }).waitFor();
    assert.match(page.url(), /#\/orgs\/team\/folders\/projects$/);
    await page.getByRole('navigation', { name: 'Folders' }).getByRole('link', { name: 'Projects' }).waitFor();
    // An id in use is the service's refusal, shown under the form.
    await folderForm.getByLabel('Folder id').fill('projects');
    await folderForm.getByRole('button', { name: 'Create folder' }).click();
    await folderForm.getByRole('alert').filter({ hasText: /already exists/ }).waitFor();
    const docForm = page.getByRole('form', { name: 'New document' });
    await docForm.getByText('In folder Projects.').waitFor();
    await axe(page, 'organization with its forms');
    await shot(page, 'start-organization');
    await docForm.getByLabel('Document id').fill('roadmap');
    await docForm.getByLabel('Document name').fill('Roadmap 2027');
    await docForm.getByRole('button', { name: 'Create document' }).click();
    await page.getByRole('heading', { name: 'Roadmap 2027', level: 1 }).waitFor();
    assert.match(page.url(), /#\/orgs\/team\/documents\/roadmap$/);
    assert.equal(await crumbs(page), ['Organizations', 'Team Space', 'Projects']);
    await page.locator('[data-fact="accessType"]', { hasText: 'restricted' }).waitFor();
    const doc = (await api('/v2/organizations/documents/get', { organizationId: 'team', documentIds: ['roadmap'] })).data[0];
    assert.equal([doc.documentName, doc.folderId, doc.accessType], ['Roadmap 2027', 'projects', 'restricted']);

    // Two users of the organization; an id it has already is refused by the console.
    await page.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link', { name: 'Team Space' }).click();
    await page.getByRole('navigation', { name: 'Organization' }).getByRole('link', { name: 'Users' }).click();
    const userForm = page.getByRole('form', { name: 'Add a user' });
    for (const [id, name, role] of [['erin', 'Erin Example', 'editor'], ['frank', 'Frank Example', 'viewer']] as const) {
      await userForm.getByLabel('User id').fill(id);
      await userForm.getByLabel('Name').fill(name);
      await userForm.getByLabel('Email').fill(`${id}@example.com`);
      await userForm.getByLabel('Role in the organization').selectOption(role);
      await userForm.getByRole('button', { name: 'Add user' }).click();
      // Asked first, with a dry run: the grant on the organization is the one access gained.
      const adding = page.getByRole('dialog', { name: 'Add user' });
      await adding.getByText(`Add ${id} to team as ${role}?`).waitFor();
      await adding.locator('.preview .impact', { hasText: '1 gain, 0 lose access' }).waitFor();
      assert.equal(await adding.locator('.changes li').allTextContents(), [`${id} → organization team → gains ${role}`]);
      await adding.getByRole('button', { name: 'Confirm' }).click();
      await page.getByRole('row', { name: new RegExp(`^${id} ${name}`) }).waitFor();
    }
    await userForm.getByLabel('User id').fill('erin');
    await userForm.getByRole('button', { name: 'Add user' }).click();
    await userForm.getByRole('alert').filter({ hasText: 'erin is a user of this organization already.' }).waitFor();
    const users = (await api('/v2/users/get', { organizationId: 'team' })).data as { userId: string; name: string; accessRole: string }[];
    assert.equal(users.map((u) => [u.userId, u.name, u.accessRole]), [['erin', 'Erin Example', 'editor'], ['frank', 'Frank Example', 'viewer']]);
    await axe(page, 'users with the add form');
    await shot(page, 'start-users');
    // The user's page names them in its breadcrumb.
    await page.getByRole('link', { name: 'erin', exact: true }).click();
    await page.getByRole('heading', { name: 'What erin can open' }).waitFor();
    assert.equal(await crumbs(page), ['Organizations', 'Team Space', 'Users']);
    assert.match(await page.locator('.crumbs').innerText(), /Users \/ Erin Example$/);

    // A group, erin in it; a user the organization does not have cannot join.
    await page.goto(`${base}/console/#/orgs/team/groups`);
    const groupForm = page.getByRole('form', { name: 'New group' });
    await groupForm.getByLabel('Group id').fill('writers');
    await groupForm.getByLabel('Group name').fill('Writers');
    await groupForm.getByRole('button', { name: 'Create group' }).click();
    await page.locator('tr[data-group="writers"]').waitFor();
    await page.locator('tr[data-group="writers"]').getByRole('link', { name: 'writers' }).click();
    await page.getByRole('heading', { name: 'Group writers' }).waitFor();
    assert.equal(await crumbs(page), ['Organizations', 'Team Space', 'Groups']);
    assert.match(await page.locator('.crumbs').innerText(), /Groups \/ Writers$/);
    const memberForm = page.getByRole('form', { name: 'Add a member' });
    await memberForm.getByLabel('Member user id').fill('erin');
    await memberForm.getByRole('button', { name: 'Add to group' }).click();
    // The group holds no grant yet: joining it changes nobody's access, and the dialog says so.
    const joining = page.getByRole('dialog', { name: 'Add to group' });
    await joining.locator('.preview .impact', { hasText: '0 gain, 0 lose access' }).waitFor();
    await axe(page, 'a member\'s confirmation with its dry run');
    await joining.getByRole('button', { name: 'Confirm' }).click();
    await page.getByRole('region', { name: /Members/ }).getByRole('link', { name: 'erin' }).waitFor();
    await memberForm.getByLabel('Member user id').fill('nobody');
    await memberForm.getByRole('button', { name: 'Add to group' }).click();
    // The dry run already meets the refusal; confirming sends it, and the form shows the service's message.
    await joining.locator('.preview .warning', { hasText: /not a member of the organization/ }).waitFor();
    await joining.getByRole('button', { name: 'Confirm' }).click();
    await memberForm.getByRole('alert').filter({ hasText: /not a member of the organization/ }).waitFor();
    const groups = (await api('/v2/organizations/usergroups/get', { organizationId: 'team' })).data as { groupId: string; memberCount: number }[];
    assert.equal(groups.map((g) => [g.groupId, g.memberCount]), [['writers', 1]]);
    await axe(page, 'group with the member form');
    await shot(page, 'start-group');

    // Grants on the document: frank is known (no warning); a typo is warned of, and still granted,
    // as the API allows; the group's grant reaches erin.
    await page.goto(`${base}/console/#/orgs/team/documents/roadmap`);
    await page.getByRole('heading', { name: 'Roadmap 2027', level: 1 }).waitFor();
    const grantId = page.getByLabel('User id', { exact: true });
    await grantId.fill('frank');
    await page.locator('[data-user-check="known"]').waitFor({ state: 'attached' });
    assert.is(await page.locator('.grant .warning').count(), 0);
    await grantId.fill('frnak');
    const warning = page.locator('.grant .warning[data-user-check="unknown"]');
    await warning.waitFor();
    assert.match(await warning.innerText(), /^The organization has no user frnak/);
    await axe(page, 'document, a grant to an unknown user warned of');
    await shot(page, 'start-warning');
    await page.getByRole('button', { name: 'Grant', exact: true }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText(/Give user frnak viewer access to document roadmap\? The organization has no user frnak/).waitFor();
    await dialog.getByRole('button', { name: 'Confirm' }).click();
    await page.locator('tr[data-user="frnak"]').waitFor();
    await page.getByLabel('To', { exact: true }).selectOption('group');
    await page.getByLabel('Group id', { exact: true }).fill('writers');
    assert.is(await page.locator('.grant .warning').count(), 0, 'a group is not checked as a user');
    await page.getByLabel('Role', { exact: true }).selectOption('editor');
    await page.getByRole('button', { name: 'Grant', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
    await page.locator('tr[data-user="erin"]', { hasText: 'group writers' }).waitFor();
    const who = (await api('/v2/auth/users/get', { organizationId: 'team', documentId: 'roadmap' })).data as { everyone: boolean; users: { userId: string; accessRole: string }[] };
    assert.is(who.everyone, false);
    assert.equal(who.users.map((u) => [u.userId, u.accessRole]).sort(), [['erin', 'editor'], ['frnak', 'viewer']]);
    assert.match(await page.getByRole('region', { name: 'Who can open it' }).innerText(), /Access type restricted: only users with a grant on it or on a folder above it/);
    await shot(page, 'start-grant');

    // The icon: /favicon.ico answers with it, not a 404.
    const icon = await page.request.get(`${base}/favicon.ico`);
    assert.is(icon.status(), 200);
    assert.match(icon.headers()['content-type'] ?? '', /^image\/svg\+xml/);

    // At a phone's width every view fits: no sideways scroll, the header included.
    await page.setViewportSize({ width: 375, height: 800 });
    const views: [string, string][] = [
      ['#/orgs', 'Organizations'],
      ['#/orgs/team', 'Team Space'],
      ['#/orgs/team/folders/projects', 'Team Space'],
      ['#/orgs/team/documents/roadmap/explain/erin', 'Roadmap 2027'],
      ['#/orgs/team/users', 'Users of Team Space'],
      ['#/orgs/team/users/erin', 'What erin can open'],
      ['#/orgs/team/groups', 'Groups of Team Space'],
      ['#/orgs/team/groups/writers', 'Group writers'],
      ['#/orgs/team/documents/roadmap/timeline', 'Access timeline of document roadmap'],
      ['#/orgs/team/documents/roadmap/audit', 'Audit of roadmap'],
    ];
    for (const [hash, heading] of views) {
      await page.goto(`${base}/console/${hash}`);
      await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
      await page.waitForFunction(() => !document.querySelector('[aria-busy="true"]'));
      await fits(page, `${hash} at 375 px`);
    }
    await page.goto(`${base}/console/#/orgs/team/documents/roadmap`);
    await page.locator('tr[data-user="frnak"]').waitFor();
    await fits(page, 'the document at 375 px');
    await axe(page, 'document at 375 px');
    await shot(page, 'phone');
  } finally {
    await page.close();
  }
});

E('nothing was requested from another origin, and no URL carried a credential', async ({ requested, base, t }) => {
  const elsewhere = requested.filter((u) => new URL(u).origin !== base);
  assert.equal(elsewhere, []);
  for (const secret of [t.headers['x-service-auth-token']!, t.workspaceHeaders['x-service-workspace-auth-token']!, ADMIN_TOKEN]) {
    assert.equal(requested.filter((u) => u.includes(secret) || u.includes(encodeURIComponent(secret))), []);
  }
});

E.run();
