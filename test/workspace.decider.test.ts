import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  DEFAULT_MAX_PRODUCTION_KEYS,
  workspaceDecider,
  type ApiKeySettings,
  type NewApiKey,
  type WorkspaceEvent,
} from '../commands/workspace.js';
import { defaultSettings } from '../src/usecases/workspace.js';
import { spec } from './support/decider.js';

const { given } = spec(workspaceDecider);
const now = 1_700_000_000_000;
const settings: ApiKeySettings = defaultSettings();
const key = (apiKey: string, type: 'testing' | 'production', token?: string): NewApiKey => ({
  apiKey,
  apiKeyName: `${type} key`,
  type,
  ownerEmail: 'o@example.com',
  persistenceDBRegion: type === 'production' ? 'usa' : null,
  realtimeDBRegion: null,
  settings,
  ...(token ? { token: { tokenId: token, tokenHash: `hash-${token}` } } : {}),
});
const keyCreated = (k: NewApiKey): WorkspaceEvent => ({
  type: 'ApiKeyCreated',
  data: {
    workspaceId: 'w1',
    apiKey: k.apiKey,
    apiKeyName: k.apiKeyName,
    type: k.type,
    ownerEmail: k.ownerEmail,
    persistenceDBRegion: k.persistenceDBRegion,
    realtimeDBRegion: k.realtimeDBRegion,
    settings: k.settings,
    createdAt: now,
  },
});
const created: WorkspaceEvent[] = [
  {
    type: 'WorkspaceCreated',
    data: { workspaceId: 'w1', name: 'W', ownerEmail: 'o@example.com', ownerName: 'o', ownerId: 'o1', authTokenHash: 'wh', createdAt: now },
  },
  keyCreated(key('k1', 'testing')),
  { type: 'ApiKeyAuthTokenCreated', data: { apiKey: 'k1', tokenId: 't1', tokenHash: 'hash-t1', createdAt: now } },
];
const settingsChanged = (data: { plan?: 'free' | 'paid'; productionKeysEnabled?: boolean; maxProductionKeys?: number }): WorkspaceEvent => ({
  type: 'WorkspaceSettingsChanged',
  data: { workspaceId: 'w1', ...data },
});
const meta = { now };
const createKey = (k: NewApiKey) => ({ type: 'CreateApiKey' as const, data: k, metadata: meta });

test('CreateWorkspace: the workspace, its testing key and the key token', () => {
  given([])
    .when({
      type: 'CreateWorkspace',
      data: { workspaceId: 'w1', name: 'W', ownerEmail: 'o@example.com', ownerName: 'o', ownerId: 'o1', authTokenHash: 'wh', firstKey: key('k1', 'testing', 't1') },
      metadata: meta,
    })
    .then(created);
});

test('CreateWorkspace twice: ALREADY_EXISTS', () => {
  given(created)
    .when({
      type: 'CreateWorkspace',
      data: { workspaceId: 'w1', name: 'W', ownerEmail: 'o@example.com', ownerName: 'o', ownerId: 'o1', authTokenHash: 'x', firstKey: key('k9', 'testing') },
      metadata: meta,
    })
    .thenFails('ALREADY_EXISTS');
});

test('CreateApiKey testing: allowed on any workspace, token optional', () => {
  given(created).when(createKey(key('k2', 'testing'))).then([keyCreated(key('k2', 'testing'))]);
  given(created)
    .when(createKey(key('k2', 'testing', 't2')))
    .then([
      keyCreated(key('k2', 'testing')),
      { type: 'ApiKeyAuthTokenCreated', data: { apiKey: 'k2', tokenId: 't2', tokenHash: 'hash-t2', createdAt: now } },
    ]);
});

test('CreateApiKey on a missing workspace: NOT_FOUND', () => {
  given([]).when(createKey(key('k2', 'testing'))).thenFails('NOT_FOUND', 'Workspace not found.');
});

test('CreateApiKey with an existing key id: ALREADY_EXISTS', () => {
  given(created).when(createKey(key('k1', 'testing'))).thenFails('ALREADY_EXISTS');
});

test('production key, workspace not enabled: PERMISSION_DENIED (checked first)', () => {
  given(created).when(createKey(key('p1', 'production'))).thenFails('PERMISSION_DENIED', /not enabled/);
  given([...created, settingsChanged({ plan: 'paid' })]).when(createKey(key('p1', 'production'))).thenFails('PERMISSION_DENIED');
});

test('production key, enabled but not paid: FAILED_PRECONDITION', () => {
  given([...created, settingsChanged({ productionKeysEnabled: true })])
    .when(createKey(key('p1', 'production')))
    .thenFails('FAILED_PRECONDITION', /paid plan/);
});

test('production key, enabled and paid: created', () => {
  given([...created, settingsChanged({ productionKeysEnabled: true, plan: 'paid' })])
    .when(createKey(key('p1', 'production')))
    .then([keyCreated(key('p1', 'production'))]);
});

test('production key over the limit: RESOURCE_EXHAUSTED; testing keys do not count', () => {
  const enabled = [...created, settingsChanged({ productionKeysEnabled: true, plan: 'paid', maxProductionKeys: 1 })];
  given([...enabled, keyCreated(key('p1', 'production'))])
    .when(createKey(key('p2', 'production')))
    .thenFails('RESOURCE_EXHAUSTED', /maximum of 1 production keys/);
  given([...enabled, keyCreated(key('t2', 'testing')), keyCreated(key('t3', 'testing'))])
    .when(createKey(key('p1', 'production')))
    .then([keyCreated(key('p1', 'production'))]);
});

test(`the default production key limit is ${DEFAULT_MAX_PRODUCTION_KEYS}`, () => {
  const enabled = [...created, settingsChanged({ productionKeysEnabled: true, plan: 'paid' })];
  const existing = Array.from({ length: DEFAULT_MAX_PRODUCTION_KEYS }, (_, i) => keyCreated(key(`p${i}`, 'production')));
  given([...enabled, ...existing]).when(createKey(key('px', 'production'))).thenFails('RESOURCE_EXHAUSTED');
});

test('ChangeWorkspaceSettings: only real changes are recorded', () => {
  given(created)
    .when({ type: 'ChangeWorkspaceSettings', data: { plan: 'paid' }, metadata: meta })
    .then([settingsChanged({ plan: 'paid' })]);
  given([...created, settingsChanged({ plan: 'paid' })])
    .when({ type: 'ChangeWorkspaceSettings', data: { plan: 'paid' }, metadata: meta })
    .thenNothing();
  given([]).when({ type: 'ChangeWorkspaceSettings', data: { plan: 'paid' }, metadata: meta }).thenFails('NOT_FOUND');
});

test('ResetAuthToken without a token id revokes every token and issues one', () => {
  const twoTokens = [
    ...created,
    { type: 'ApiKeyAuthTokenCreated', data: { apiKey: 'k1', tokenId: 't2', tokenHash: 'hash-t2', createdAt: now } } as WorkspaceEvent,
  ];
  given(twoTokens)
    .when({ type: 'ResetAuthToken', data: { apiKey: 'k1', tokenId: 't3', tokenHash: 'hash-t3' }, metadata: meta })
    .then([
      { type: 'ApiKeyAuthTokenRevoked', data: { apiKey: 'k1', tokenId: 't1', revokedAt: now } },
      { type: 'ApiKeyAuthTokenRevoked', data: { apiKey: 'k1', tokenId: 't2', revokedAt: now } },
      { type: 'ApiKeyAuthTokenCreated', data: { apiKey: 'k1', tokenId: 't3', tokenHash: 'hash-t3', createdAt: now } },
    ]);
});

test('ResetAuthToken with a token id revokes only that one', () => {
  given(created)
    .when({ type: 'ResetAuthToken', data: { apiKey: 'k1', revokeTokenId: 't1', tokenId: 't3', tokenHash: 'h3' }, metadata: meta })
    .then([
      { type: 'ApiKeyAuthTokenRevoked', data: { apiKey: 'k1', tokenId: 't1', revokedAt: now } },
      { type: 'ApiKeyAuthTokenCreated', data: { apiKey: 'k1', tokenId: 't3', tokenHash: 'h3', createdAt: now } },
    ]);
});

test('ResetAuthToken refusals: unknown key, unknown token, a revoked token', () => {
  given(created)
    .when({ type: 'ResetAuthToken', data: { apiKey: 'other', tokenId: 't3', tokenHash: 'h' }, metadata: meta })
    .thenFails('NOT_FOUND', 'API key not found.');
  given(created)
    .when({ type: 'ResetAuthToken', data: { apiKey: 'k1', revokeTokenId: 'nope', tokenId: 't3', tokenHash: 'h' }, metadata: meta })
    .thenFails('NOT_FOUND', 'Auth token not found for this API key.');
  given([...created, { type: 'ApiKeyAuthTokenRevoked', data: { apiKey: 'k1', tokenId: 't1', revokedAt: now } }])
    .when({ type: 'ResetAuthToken', data: { apiKey: 'k1', revokeTokenId: 't1', tokenId: 't3', tokenHash: 'h' }, metadata: meta })
    .thenFails('NOT_FOUND');
});

test('RotateWorkspaceAuthToken: the new hash is recorded; missing workspace NOT_FOUND', () => {
  given(created)
    .when({ type: 'RotateWorkspaceAuthToken', data: { authTokenHash: 'wh2' }, metadata: meta })
    .then([{ type: 'WorkspaceAuthTokenRotated', data: { workspaceId: 'w1', authTokenHash: 'wh2', rotatedAt: now } }]);
  given([]).when({ type: 'RotateWorkspaceAuthToken', data: { authTokenHash: 'x' }, metadata: meta }).thenFails('NOT_FOUND');
});

test('DeleteApiKey: the key goes (its production slot too); again: nothing; unknown key: NOT_FOUND; its id is never reused', () => {
  const deleted: WorkspaceEvent = { type: 'ApiKeyDeleted', data: { workspaceId: 'w1', apiKey: 'k1', deletedAt: now } };
  given(created).when({ type: 'DeleteApiKey', data: { apiKey: 'k1' }, metadata: meta }).then([deleted]);
  given([...created, deleted]).when({ type: 'DeleteApiKey', data: { apiKey: 'k1' }, metadata: meta }).thenNothing();
  given(created).when({ type: 'DeleteApiKey', data: { apiKey: 'other' }, metadata: meta }).thenFails('NOT_FOUND', 'API key not found in this workspace.');
  // A deleted key takes no further commands.
  given([...created, deleted])
    .when({ type: 'ResetAuthToken', data: { apiKey: 'k1', tokenId: 't3', tokenHash: 'h' }, metadata: meta })
    .thenFails('NOT_FOUND');
  given([...created, deleted]).when(createKey(key('k1', 'testing'))).thenFails('ALREADY_EXISTS');
  const enabled = [...created, settingsChanged({ productionKeysEnabled: true, plan: 'paid', maxProductionKeys: 1 }), keyCreated(key('p1', 'production'))];
  given([...enabled, { type: 'ApiKeyDeleted', data: { workspaceId: 'w1', apiKey: 'p1', deletedAt: now } }])
    .when(createKey(key('p2', 'production')))
    .then([keyCreated(key('p2', 'production'))]);
});

test('RotateTokenSigningKey: an ES256 key; keeps the previous key for its tokens, revokes on request, drops keys past every token lifetime', () => {
  const H = 3_600_000;
  const pub = (kid: string) => ({ kty: 'EC' as const, crv: 'P-256' as const, x: `x${kid}`, y: `y${kid}` });
  const first: WorkspaceEvent = { type: 'ApiKeyTokenSigningSecretCreated', data: { workspaceId: 'w1', apiKey: 'k1', kid: 'a', secret: 'sa', alg: 'ES256', publicKey: pub('a'), createdAt: now } };
  const rotate = (kid: string, at: number, revokePrevious = false) => ({ type: 'RotateTokenSigningKey' as const, data: { apiKey: 'k1', kid, secret: `s${kid}`, publicKey: pub(kid), revokePrevious }, metadata: { now: at } });
  const rotated = (kid: string, at: number, revokedKids: string[]): WorkspaceEvent => ({
    type: 'ApiKeyTokenSigningKeyRotated',
    data: { workspaceId: 'w1', apiKey: 'k1', kid, secret: `s${kid}`, alg: 'ES256', publicKey: pub(kid), revokedKids, rotatedAt: at },
  });
  given([...created, first]).when(rotate('b', now + H)).then([rotated('b', now + H, [])]);
  given([...created, first]).when(rotate('b', now + H, true)).then([rotated('b', now + H, ['a'])]);
  // a retired at +1 h; at +1 h + 48 h + 1 min every token it signed has expired.
  given([...created, first, rotated('b', now + H, [])]).when(rotate('c', now + 49 * H + 59_999)).then([rotated('c', now + 49 * H + 59_999, [])]);
  given([...created, first, rotated('b', now + H, [])]).when(rotate('c', now + 49 * H + 60_000)).then([rotated('c', now + 49 * H + 60_000, ['a'])]);
  const { state } = given([...created, first, rotated('b', now + H, [])]);
  assert.equal(state.status === 'active' && state.keys.k1!.signingKeys, [
    { kid: 'a', secret: 'sa', alg: 'ES256', publicKey: pub('a'), createdAt: now, retiredAt: now + H },
    { kid: 'b', secret: 'sb', alg: 'ES256', publicKey: pub('b'), createdAt: now + H, retiredAt: null },
  ]);
  const revoked = given([...created, first, rotated('b', now + H, ['a'])]).state;
  assert.equal(revoked.status === 'active' && revoked.keys.k1!.signingKeys.map((k) => k.kid), ['b']);
  given(created).when(rotate('b', now)).then([rotated('b', now, [])]);
  given(created).when({ ...rotate('b', now), data: { ...rotate('b', now).data, apiKey: 'nope' } }).thenFails('NOT_FOUND');
  // An HS256 key (from before asymmetric signing) is retired by an ES256 one like any other.
  const hs256: WorkspaceEvent = { type: 'ApiKeyTokenSigningSecretCreated', data: { workspaceId: 'w1', apiKey: 'k1', kid: 'h', secret: 'sh', createdAt: now } };
  const mixed = given([...created, hs256, rotated('b', now + H, [])]).state;
  assert.equal(mixed.status === 'active' && mixed.keys.k1!.signingKeys, [
    { kid: 'h', secret: 'sh', createdAt: now, retiredAt: now + H },
    { kid: 'b', secret: 'sb', alg: 'ES256', publicKey: pub('b'), createdAt: now + H, retiredAt: null },
  ]);
});

test('evolve ignores events that do not apply', () => {
  const s = workspaceDecider.initialState();
  const after = workspaceDecider.evolve(s, settingsChanged({ plan: 'paid' }));
  if (after !== s) throw new Error('an event before WorkspaceCreated changed the state');
});

// ---- apikey/update and apikeyconfig/update ----

const rename = (apiKey: string, apiKeyName: string) => ({ type: 'RenameApiKey' as const, data: { apiKey, apiKeyName }, metadata: meta });
const renamed = (apiKeyName: string): WorkspaceEvent => ({ type: 'ApiKeyRenamed', data: { workspaceId: 'w1', apiKey: 'k1', apiKeyName, renamedAt: now } });
const configure = (change: Record<string, unknown>) => ({ type: 'UpdateApiKeyConfig' as const, data: { apiKey: 'k1', change }, metadata: meta });
const configured = (change: Record<string, unknown>) => ({ type: 'ApiKeyConfigUpdated', data: { workspaceId: 'w1', apiKey: 'k1', ...change, updatedAt: now } }) as WorkspaceEvent;

test('RenameApiKey: a new name is an event; the same name, nothing; an unknown key, NOT_FOUND in the hosted words', () => {
  given(created).when(rename('k1', 'Renamed')).then([renamed('Renamed')]);
  given(created).when(rename('k1', 'testing key')).thenNothing();
  given([...created, renamed('Renamed')]).when(rename('k1', 'Renamed')).thenNothing();
  given([...created, renamed('Renamed')]).when(rename('k1', 'testing key')).then([renamed('testing key')]);
  given(created).when(rename('nope', 'X')).thenFails('NOT_FOUND', 'API key not found.');
  given([]).when(rename('k1', 'X')).thenFails('NOT_FOUND', 'Workspace not found.');
});

test('UpdateApiKeyConfig: only the fields that change are in the event; AI keys always are', () => {
  given(created)
    .when(configure({ requireJwtToken: true, enablePrivateComments: false, defaultDocumentAccessType: 'restricted' }))
    .then([configured({ requireJwtToken: true, defaultDocumentAccessType: 'restricted' })]);
  given(created).when(configure({ requireJwtToken: false, defaultDocumentAccessType: 'public', requireAutoOrgUser: false })).thenNothing();
  given([...created, configured({ requireJwtToken: true })]).when(configure({ requireJwtToken: true })).thenNothing();
  given([...created, configured({ requireJwtToken: true })]).when(configure({ requireJwtToken: false })).then([configured({ requireJwtToken: false })]);
  const ai = { openai: { secret: 's1', displayText: 'sk-p...XyZ' } };
  given([...created, configured({ aiModelKeys: ai })]).when(configure({ aiModelKeys: ai })).then([configured({ aiModelKeys: ai })]);
  given(created).when({ ...configure({ requireJwtToken: true }), data: { apiKey: 'nope', change: { requireJwtToken: true } } }).thenFails('NOT_FOUND', 'API key not found.');
});

test('apikey/create\'s toggles are the starting configuration; AI keys merge provider by provider', () => {
  const withToggles = keyCreated({ ...key('k2', 'testing'), settings: { ...settings, enablePrivateComments: true, requireAutoOrgUser: true } });
  const k2 = (change: Record<string, unknown>) => ({ type: 'UpdateApiKeyConfig' as const, data: { apiKey: 'k2', change }, metadata: meta });
  given([...created, withToggles]).when(k2({ enablePrivateComments: true, requireAutoOrgUser: true })).thenNothing();
  let state = [...created, configured({ aiModelKeys: { openai: { secret: 'a', displayText: 'A' } } }), configured({ aiModelKeys: { gemini: { secret: 'g', displayText: 'G' } } })]
    .reduce(workspaceDecider.evolve, workspaceDecider.initialState());
  if (state.status !== 'active') throw new Error('no workspace');
  assert.equal(state.keys.k1!.config.aiModelKeys, { openai: { secret: 'a', displayText: 'A' }, gemini: { secret: 'g', displayText: 'G' } });
  state = workspaceDecider.evolve(state, configured({ aiModelKeys: { openai: { secret: 'b', displayText: 'B' } } }));
  if (state.status !== 'active') throw new Error('no workspace');
  assert.equal(state.keys.k1!.config.aiModelKeys.openai, { secret: 'b', displayText: 'B' });
  assert.equal(state.keys.k1!.config.aiModelKeys.gemini, { secret: 'g', displayText: 'G' });
});

test.run();
