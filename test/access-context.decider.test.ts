/**
 * Access context on grants (semantics §4a), decided by the grants decider: given(events)
 * .when(command).then(events), and the per-resource outcomes the routes report.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spec } from './support/decider.js';
import {
  grantsDecider,
  MAX_ACCESS_FIELDS_PER_GRANT,
  MAX_ACCESS_FIELDS_PER_USER,
  plan,
  type GrantEvent,
  type GrantsCommand,
  type Resource,
} from '../commands/grant.js';

const now = 1_700_000_000_000;
const meta = { now };
const u = { organizationId: 'o', userId: 'u' };
const org: Resource = { resourceType: 'organization', resourceId: 'o' };
const doc: Resource = { resourceType: 'document', resourceId: 'd' };
const FUTURE = now / 1000 + 3600;
const PAST = now / 1000 - 1;

const added = (r: Resource, accessFields?: string[], expiresAt: number | null = null, accessRole: 'editor' | 'viewer' = 'editor'): GrantEvent => ({
  type: 'GrantAdded',
  data: { ...u, ...r, accessRole, expiresAt, grantedAt: now, ...(accessFields ? { accessFields } : {}) },
});
const removed = (r: Resource, accessFields: string[]): GrantEvent => ({ type: 'AccessFieldsRemoved', data: { ...u, ...r, accessFields, removedAt: now } });
const grant = (r: Resource, accessFields?: string[], extra: { expiresAt?: number; accessRole?: 'editor' | 'viewer' } = {}): GrantsCommand => ({
  type: 'Grant',
  data: { ...u, grants: [{ ...r, accessRole: extra.accessRole ?? 'editor', expiresAt: extra.expiresAt ?? null, ...(accessFields ? { accessFields } : {}) }] },
  metadata: meta,
});
const revoke = (r: Resource, accessFields?: string[]): GrantsCommand => ({
  type: 'Revoke',
  data: { ...u, resources: [{ ...r, ...(accessFields ? { accessFields } : {}) }] },
  metadata: meta,
});
const outcomes = (given: GrantEvent[], c: GrantsCommand) => [...plan(c, given.reduce(grantsDecider.evolve, grantsDecider.initialState())).outcomes.values()];
const fields = (n: number, prefix = 'f') => Array.from({ length: n }, (_, i) => `${prefix}:${String(i).padStart(4, '0')}`);

test('Grant with access fields: the event carries them sorted and unique', () => {
  spec(grantsDecider).given([]).when(grant(doc, ['widgetId:2', 'widgetId:1', 'widgetId:2'])).then([added(doc, ['widgetId:1', 'widgetId:2'])]);
});

test('Grant without access fields: no accessFields key (as before access context)', () => {
  spec(grantsDecider).given([]).when(grant(doc)).then([added(doc)]);
});

test('Grant again adds to the live grant\'s fields; a re-grant without context keeps them', () => {
  spec(grantsDecider).given([added(doc, ['a:1'])]).when(grant(doc, ['b:2'])).then([added(doc, ['a:1', 'b:2'])]);
  spec(grantsDecider).given([added(doc, ['a:1'])]).when(grant(doc, undefined, { accessRole: 'viewer' })).then([added(doc, ['a:1'], null, 'viewer')]);
});

test('A grant replacing an expired one starts without its fields (they died with it)', () => {
  spec(grantsDecider).given([added(doc, ['a:1'], PAST)]).when(grant(doc, ['b:2'])).then([added(doc, ['b:2'])]);
  spec(grantsDecider).given([added(doc, ['a:1'], PAST)]).when(grant(doc)).then([added(doc)]);
});

test('A temporary grant over a permanent one is refused, its fields with it', () => {
  spec(grantsDecider).given([added(doc, ['a:1'])]).when(grant(doc, ['b:2'], { expiresAt: FUTURE })).thenNothing();
  assert.equal(outcomes([added(doc, ['a:1'])], grant(doc, ['b:2'], { expiresAt: FUTURE }))[0]!.refused, 'permanentExists');
});

test('Revoke with access fields: removes only those the grant holds; the grant stays', () => {
  spec(grantsDecider).given([added(doc, ['a:1', 'b:2'])]).when(revoke(doc, ['b:2', 'c:3'])).then([removed(doc, ['b:2'])]);
  spec(grantsDecider).given([added(doc, ['a:1'])]).when(revoke(doc, ['c:3'])).thenNothing();
  assert.equal(outcomes([added(doc, ['a:1'])], revoke(doc, ['c:3'])), [{ success: true, message: 'Access fields removed.' }]);
  assert.equal(outcomes([], revoke(doc, ['a:1'])), [{ success: true, message: 'Permission does not exist.' }]);
});

test('Revoke without access fields: the grant goes, fields and all', () => {
  const state = [added(doc, ['a:1']), { type: 'GrantRevoked', data: { ...u, ...doc, revokedAt: now } } as GrantEvent];
  spec(grantsDecider).given([added(doc, ['a:1'])]).when(revoke(doc)).then([state[1]!]);
  // After it, a new grant starts with no fields.
  spec(grantsDecider).given(state).when(grant(doc)).then([added(doc)]);
});

test('Removed fields are gone from the state: granting them again adds them back', () => {
  spec(grantsDecider).given([added(doc, ['a:1', 'b:2']), removed(doc, ['a:1'])]).when(grant(doc, ['c:3'])).then([added(doc, ['b:2', 'c:3'])]);
});

test(`limit: at most ${MAX_ACCESS_FIELDS_PER_GRANT} fields on one grant (the union counts); refused for that resource only`, () => {
  const full = added(doc, fields(MAX_ACCESS_FIELDS_PER_GRANT));
  spec(grantsDecider).given([full]).when(grant(doc, ['z:1'])).thenNothing();
  const [o] = outcomes([full], grant(doc, ['z:1']));
  assert.is(o!.success, false);
  assert.is(o!.refused, 'accessFieldLimit');
  assert.match(o!.message, /would hold 201 access fields on this resource; a resource holds at most 200/);
  // Fields it holds already do not count twice; another resource goes through.
  spec(grantsDecider).given([full]).when(grant(doc, ['f:0000'])).then([added(doc, fields(MAX_ACCESS_FIELDS_PER_GRANT))]);
  const both: GrantsCommand = { type: 'Grant', data: { ...u, grants: [{ ...doc, accessRole: 'editor', accessFields: ['z:1'] }, { ...org, accessRole: 'editor' }] }, metadata: meta };
  spec(grantsDecider).given([full]).when(both).then([added(org)]);
});

test(`limit: at most ${MAX_ACCESS_FIELDS_PER_USER} fields over the user's live grants in one organization; expired grants do not count`, () => {
  const docs = Array.from({ length: MAX_ACCESS_FIELDS_PER_USER / MAX_ACCESS_FIELDS_PER_GRANT }, (_, i): Resource => ({ resourceType: 'document', resourceId: `d${i}` }));
  const given = docs.map((r, i) => added(r, fields(MAX_ACCESS_FIELDS_PER_GRANT, `f${i}`)));
  const [o] = outcomes(given, grant(org, ['x:1']));
  assert.is(o!.refused, 'accessFieldLimit');
  assert.match(o!.message, /would hold 2001 access fields in this organization; a user holds at most 2000 in one organization/);
  spec(grantsDecider).given(given).when(grant(org, ['x:1'])).thenNothing();
  // One of them expired: its 200 fields no longer count.
  const oneExpired = [...given.slice(1), added(docs[0]!, fields(MAX_ACCESS_FIELDS_PER_GRANT, 'f0'), PAST)];
  spec(grantsDecider).given(oneExpired).when(grant(org, ['x:1'])).then([added(org, ['x:1'])]);
  // Within one command, earlier items count for later ones.
  const two: GrantsCommand = {
    type: 'Grant',
    data: { ...u, grants: [{ ...org, accessRole: 'editor', accessFields: ['x:1'] }, { ...doc, accessRole: 'editor', accessFields: ['y:1'] }] },
    metadata: meta,
  };
  const filled = given.slice(1).concat(added(docs[0]!, fields(MAX_ACCESS_FIELDS_PER_GRANT - 1, 'f0')));
  assert.equal(outcomes(filled, two).map((x) => x.success), [true, false]);
});

test('evolve never throws: AccessFieldsRemoved on a grant that is not there changes nothing', () => {
  const s = grantsDecider.evolve(grantsDecider.initialState(), removed(doc, ['a:1']));
  assert.equal(s, grantsDecider.initialState());
});

test.run();
