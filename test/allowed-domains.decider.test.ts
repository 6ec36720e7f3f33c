/**
 * Allowed domains (issue 22): what an entry is (commands/allowed-domains.ts: normalization
 * as the hosted API stores entries, and the candidates an origin is looked up by), the
 * workspace decider's add and remove (past-tense events, only what changed, the per-key
 * bound), evolve, and the read model with its entry index.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  MAX_DOMAINS_PER_KEY,
  MAX_WILDCARD_LABELS,
  domainToRemove,
  normalizeDomain,
  originCandidates,
} from '../commands/allowed-domains.js';
import { workspaceDecider, type ApiKeySettings, type WorkspaceEvent } from '../commands/workspace.js';
import { ALLOWED_DOMAINS, API_KEYS, workspacesProjection } from '../projections/workspaces.js';
import { defaultSettings } from '../src/usecases/workspace.js';
import { spec } from './support/decider.js';
import { projectionSpec, project, collection, type GivenEvent } from './support/projection.js';

const entry = (s: string) => {
  const n = normalizeDomain(s);
  if (!n.ok) assert.unreachable(`${s} refused: ${n.reason}`);
  return n.ok ? n.entry : '';
};
const refused = (s: string, re: RegExp) => {
  const n = normalizeDomain(s);
  assert.not.ok(n.ok, `${s} must be refused`);
  if (!n.ok) assert.match(n.reason, re, s);
};

test('normalization: scheme, www, case and a trailing slash go, as the hosted API stores entries', () => {
  assert.is(entry('https://www.google.com'), 'google.com');
  assert.is(entry('https://*.firebase.com'), '*.firebase.com');
  assert.is(entry('  HTTPS://WWW.Example.COM/ '), 'example.com');
  assert.is(entry('example.com'), 'example.com');
  assert.is(entry('app.example.com:8443'), 'app.example.com:8443');
  assert.is(entry('http://localhost:3000'), 'localhost:3000');
  assert.is(entry('localhost'), 'localhost');
  assert.is(entry('127.0.0.1'), '127.0.0.1');
  assert.is(entry('http://127.0.0.1:5173/'), '127.0.0.1:5173');
  assert.is(entry('xn--bcher-kva.example'), 'xn--bcher-kva.example');
  // `www.` goes only when a domain of two labels is left.
  assert.is(entry('www.com'), 'www.com');
  assert.is(entry('www.co.uk'), 'co.uk');
});

test('normalization refuses what no browser origin can be', () => {
  refused('', /empty/);
  refused('ftp://example.com', /scheme ftp/);
  refused('http://example.com', /http:\/\/, which is admitted only for localhost/);
  refused('https://example.com/app', /no path/);
  refused('https://user@example.com', /no path, query, user/);
  refused('https://[::1]:3000', /IPv6/);
  refused('bücher.example', /xn--/);
  refused('com', /at least two labels/);
  refused('*.com', /after "\*\."/);
  refused('a.*.example.com', /\* only as its whole first label/);
  refused('*', /after "\*\."|first label/);
  refused('-bad.example.com', /not a domain name/);
  refused('example.com:0', /port/);
  refused('example.com:65536', /port/);
  refused('example.com:80:80', /port/);
  refused('1.2.3', /not a domain name/);
  refused(`${'a'.repeat(64)}.com`, /not a domain name/);
  refused(`*.${Array.from({ length: MAX_WILDCARD_LABELS + 1 }, (_, i) => `l${i}`).join('.')}`, new RegExp(`more than ${MAX_WILDCARD_LABELS} labels`));
});

test('removal compares the normalized form, or the stored text of an entry from before validation', () => {
  assert.is(domainToRemove('https://www.example.com'), 'example.com');
  assert.is(domainToRemove(' Not A Domain '), 'not a domain');
});

test('an origin is looked up by its candidate entries: exact, www-less, every wildcard above it, each with and without the port', () => {
  assert.equal(originCandidates('https://a.b.example.com'), [
    'a.b.example.com', 'a.b.example.com:443',
    '*.b.example.com', '*.b.example.com:443',
    '*.example.com', '*.example.com:443',
  ]);
  assert.equal(originCandidates('https://www.example.com'), ['www.example.com', 'www.example.com:443', 'example.com', 'example.com:443', '*.example.com', '*.example.com:443']);
  assert.equal(originCandidates('http://localhost:3000'), ['localhost', 'localhost:3000']);
  assert.equal(originCandidates('https://127.0.0.1'), ['127.0.0.1', '127.0.0.1:443']);
  // No entry admits these.
  assert.is(originCandidates('http://example.com'), null);
  assert.is(originCandidates('null'), null);
  assert.is(originCandidates('https://[::1]'), null);
  assert.is(originCandidates('https://example.com/path'), null);
  assert.is(originCandidates('chrome-extension://abc'), null);
  assert.is(originCandidates('https://EXAMPLE.com'), null);
  // A deep host is looked up against at most MAX_WILDCARD_LABELS levels of wildcards.
  const deep = `https://${'a.'.repeat(120)}example.com`;
  assert.ok(originCandidates(deep), 'a deep host of 122 labels is an origin');
  assert.ok(originCandidates(deep)!.length <= 2 * (1 + MAX_WILDCARD_LABELS), `${originCandidates(deep)!.length} candidates`);
});

test('every entry admits exactly the origins whose candidates name it', () => {
  const admits = (e: string, origin: string) => (originCandidates(origin) ?? []).includes(entry(e));
  assert.ok(admits('example.com', 'https://example.com'));
  assert.ok(admits('example.com', 'https://www.example.com'));
  assert.ok(admits('example.com', 'https://example.com:8443'));
  assert.not.ok(admits('example.com', 'https://app.example.com'));
  assert.not.ok(admits('example.com', 'https://example.com.evil.net'));
  assert.not.ok(admits('example.com', 'https://evilexample.com'));
  assert.not.ok(admits('example.com', 'http://example.com'));
  assert.ok(admits('*.example.com', 'https://a.b.example.com'));
  assert.not.ok(admits('*.example.com', 'https://example.com'));
  assert.ok(admits('example.com:443', 'https://example.com'));
  assert.not.ok(admits('example.com:8443', 'https://example.com'));
  assert.ok(admits('localhost', 'http://localhost:5173'));
  assert.ok(admits('localhost:3000', 'http://localhost:3000'));
  assert.not.ok(admits('localhost:3000', 'http://localhost:3001'));
});

// ---- the decider ----

const { given } = spec(workspaceDecider);
const now = 1_700_000_000_000;
const settings = (allowedDomains: string[]): ApiKeySettings => ({ ...defaultSettings(), allowedDomains });
const history = (domains: string[]): WorkspaceEvent[] => [
  { type: 'WorkspaceCreated', data: { workspaceId: 'w1', name: 'W', ownerEmail: 'o@example.com', ownerName: 'o', authTokenHash: 'wh', createdAt: now } },
  {
    type: 'ApiKeyCreated',
    data: { workspaceId: 'w1', apiKey: 'k1', apiKeyName: 'K', type: 'testing', ownerEmail: 'o@example.com', persistenceDBRegion: null, realtimeDBRegion: null, settings: settings(domains), createdAt: now },
  },
];
const meta = { now };
const add = (domains: string[], apiKey = 'k1') => ({ type: 'AddAllowedDomains' as const, data: { apiKey, domains }, metadata: meta });
const remove = (domains: string[], apiKey = 'k1') => ({ type: 'RemoveAllowedDomains' as const, data: { apiKey, domains }, metadata: meta });
const added = (domains: string[]): WorkspaceEvent => ({ type: 'ApiKeyAllowedDomainsAdded', data: { workspaceId: 'w1', apiKey: 'k1', domains, addedAt: now } });
const removed = (domains: string[]): WorkspaceEvent => ({ type: 'ApiKeyAllowedDomainsRemoved', data: { workspaceId: 'w1', apiKey: 'k1', domains, removedAt: now } });

test('AddAllowedDomains: only the entries the key does not hold, once each', () => {
  given(history(['localhost'])).when(add(['example.com', 'localhost', 'example.com', '*.example.org'])).then([added(['example.com', '*.example.org'])]);
});

test('AddAllowedDomains of entries the key holds: no event', () => {
  given([...history(['localhost']), added(['example.com'])]).when(add(['example.com', 'localhost'])).thenNothing();
});

test('AddAllowedDomains past the per-key bound refuses the whole call', () => {
  const full = Array.from({ length: MAX_DOMAINS_PER_KEY - 1 }, (_, i) => `d${i}.example.com`);
  given(history(full)).when(add(['one.example.com'])).then([added(['one.example.com'])]);
  given(history(full)).when(add(['one.example.com', 'two.example.com'])).thenFails('RESOURCE_EXHAUSTED', new RegExp(`would have ${MAX_DOMAINS_PER_KEY + 1} allowed domains; an API key has at most ${MAX_DOMAINS_PER_KEY}`));
  // Entries it holds do not count twice.
  given(history(full)).when(add(['d0.example.com', 'one.example.com'])).then([added(['one.example.com'])]);
});

test('RemoveAllowedDomains: only the entries the key holds; none: no event', () => {
  given([...history(['localhost']), added(['example.com'])]).when(remove(['example.com', 'nothere.com', 'example.com'])).then([removed(['example.com'])]);
  given(history(['localhost'])).when(remove(['nothere.com'])).thenNothing();
});

test('add and remove on a key the workspace does not have: NOT_FOUND; after both, evolve holds what is left', () => {
  given(history([])).when(add(['example.com'], 'k2')).thenFails('NOT_FOUND');
  given(history([])).when(remove(['example.com'], 'k2')).thenFails('NOT_FOUND');
  const { state } = given([...history(['localhost']), added(['a.com', 'b.com']), removed(['localhost', 'a.com']), added(['c.com'])]);
  assert.ok(state.status === 'active');
  if (state.status === 'active') assert.equal(state.keys.k1!.allowedDomains, ['b.com', 'c.com']);
});

test('evolve never throws: an event for a key that is gone changes nothing', () => {
  const events = [...history([]), { type: 'ApiKeyDeleted', data: { workspaceId: 'w1', apiKey: 'k1', deletedAt: now } } as WorkspaceEvent, added(['a.com']), removed(['a.com'])];
  const state = events.reduce(workspaceDecider.evolve, workspaceDecider.initialState());
  assert.ok(state.status === 'active' && !Object.hasOwn(state.keys, 'k1'));
});

// ---- the read model ----

const { given: projected } = projectionSpec(workspacesProjection);
const m = {};
const rmEvents: GivenEvent[] = [
  ...history(['localhost']).map((e) => ({ ...e, metadata: m })),
  { type: 'ApiKeyCreated', data: { workspaceId: 'w1', apiKey: 'k2', apiKeyName: 'K2', type: 'testing', ownerEmail: 'o@example.com', persistenceDBRegion: null, realtimeDBRegion: null, settings: settings(['localhost', 'b.com']), createdAt: now }, metadata: m },
  { ...added(['a.com', 'b.com']), metadata: m },
  { ...removed(['localhost']), metadata: m },
];

test('the read model: the key lists its entries, and the index holds one document per (key, entry)', async () => {
  const store = await project(workspacesProjection, rmEvents);
  const keys = await collection(store, API_KEYS);
  assert.equal(keys.map((k) => [k._id, (k.settings as ApiKeySettings).allowedDomains]), [['k1', ['a.com', 'b.com']], ['k2', ['localhost', 'b.com']]]);
  const index = await collection(store, ALLOWED_DOMAINS);
  assert.equal(index.map((d) => [d.apiKey, d.domain]).sort(), [['k1', 'a.com'], ['k1', 'b.com'], ['k2', 'b.com'], ['k2', 'localhost']]);
  await store.close();
});

test('deleting a key takes its entries out of the index, and only its own', async () => {
  const store = await project(workspacesProjection, [...rmEvents, { type: 'ApiKeyDeleted', data: { workspaceId: 'w1', apiKey: 'k2', deletedAt: now }, metadata: m }]);
  const index = await collection(store, ALLOWED_DOMAINS);
  assert.equal(index.map((d) => [d.apiKey, d.domain]).sort(), [['k1', 'a.com'], ['k1', 'b.com']]);
  await store.close();
});

test('replaying every event twice changes nothing', async () => {
  await projected(rmEvents).replayTwice([API_KEYS, ALLOWED_DOMAINS]);
});

test.run();
