/**
 * `/v2/changes/get` (issue 36; docs/guide.md, Change feed): an API key's changes in log order,
 * paged by position tokens (src/secrets/positions.ts), each as a client that keeps a copy in
 * sync needs it. From the audit index (queries/changes.ts), so:
 * - secrets never: the rows hold event data through the audit redaction, redacted again on
 *   the way out as the audit route does (rows an older version wrote);
 * - a user's name, e-mail and initial are opened from the sealed copy the row keeps, with the
 *   user's personal key: shown while the user is live, left out once their data was deleted
 *   (the key is gone, docs/privacy.md), and left out too where the row has no sealed copy (a
 *   value written in clear before sealing, a row from before the feed): the feed never shows
 *   what an erasure could not reach.
 */
import { PERSONAL_FIELDS, changeFamily, redactForAudit, type AuditEventDoc, type ChangeFamily } from '../../projections/audit.js';
import { changesPage, checkNotPruned } from '../../queries/changes.js';
import { Deadline, Pacer } from '../../queries/cost.js';
import type { Services } from '../composition/services.js';
import type { LogPosition } from '../ports/event-store.js';
import { apiKeyScope } from '../secrets/positions.js';
import type { TenantReadContext } from './context.js';

/** A change as the feed shows it. */
export interface ChangeView {
  token: string;
  type: string;
  family: ChangeFamily;
  time: number;
  actor: string;
  organizationId?: string;
  resourceType?: string;
  resourceId?: string;
  data: Record<string, unknown>;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** Categories whose stream ids start with the organization's. */
const IN_ORGANIZATION = new Set(['organization', 'document', 'documentMigration', 'grants', 'usergroup']);

/** The organization a change happened in, when any. */
export const organizationOf = (e: AuditEventDoc): string | undefined =>
  str(e.data.organizationId) ?? (IN_ORGANIZATION.has(e.category) ? e.streamIds[0] : undefined);

/** The resource a change is about (a grant: the resource granted), from its data and stream. */
export function resourceOf(e: AuditEventDoc, family: ChangeFamily): { type: string; id: string | undefined } | undefined {
  const d = e.data;
  const ids = e.streamIds;
  switch (family) {
    case 'organization':
      return { type: 'organization', id: str(d.organizationId) ?? ids[0] };
    case 'folder':
      return { type: 'folder', id: str(d.folderId) };
    case 'document':
      return { type: 'document', id: str(d.documentId) ?? ids[1] };
    case 'migration':
      return { type: 'migration', id: str(d.migrationId) ?? ids[1] };
    case 'grant':
      return { type: str(d.resourceType) ?? 'organization', id: str(d.resourceId) ?? str(d.organizationId) };
    case 'user':
      return { type: 'user', id: str(d.userId) ?? ids[0] };
    case 'group':
      return { type: 'group', id: str(d.groupId) ?? ids[1] };
    case 'agent':
      return e.category === 'agentGroup' ? { type: 'agentGroup', id: str(d.groupId) ?? ids[0] } : { type: 'agent', id: str(d.agentId) ?? ids[0] };
    case 'webhook':
      return { type: 'webhook', id: str(d.endpointId) };
    case 'apiKey':
      return undefined;
  }
}

export type ChangesContext = TenantReadContext & {
  readonly services: TenantReadContext['services'] & Pick<Services, 'projections' | 'clock'>;
  readonly signal?: AbortSignal;
};

/** The data of a user's change with their personal fields opened (or left out). */
async function withPersonal(ctx: ChangesContext, e: AuditEventDoc, data: Record<string, unknown>): Promise<Record<string, unknown>> {
  if (e.category !== 'user') return data;
  const out = { ...data };
  for (const f of PERSONAL_FIELDS) delete out[f];
  const userId = str(e.data.userId) ?? e.streamIds[0];
  if (!e.personal || userId === undefined) return out;
  const opened = await ctx.services.secrets.personal.open(ctx.apiKey, userId, e.personal);
  for (const [f, v] of Object.entries(opened)) if (typeof v === 'string') out[f] = v;
  return out;
}

/** A row of the audit index as the feed shows it (changes/get and the stream alike). */
export async function changeView(ctx: ChangesContext, scope: string, e: AuditEventDoc): Promise<ChangeView> {
  const family = e.family ?? changeFamily(e.category, e.type);
  const resource = resourceOf(e, family);
  const organizationId = organizationOf(e);
  return {
    token: ctx.services.secrets.positions.seal(scope, e.position),
    type: e.type,
    family,
    time: e.time,
    actor: e.actor,
    ...(organizationId !== undefined ? { organizationId } : {}),
    ...(resource?.id !== undefined ? { resourceType: resource.type, resourceId: resource.id } : {}),
    data: await withPersonal(ctx, e, redactForAudit(e.type, e.data)),
  };
}

/**
 * One page after `since` (LOG_START: from the start). Only what every read model has applied
 * is served (queries/changes.ts); the caller waits for `since` first when it names a write.
 */
export async function getChanges(ctx: ChangesContext, input: { since: LogPosition; pageSize: number; types?: readonly ChangeFamily[] | undefined }) {
  const { read, projections, config, clock } = ctx.services;
  const scope = apiKeyScope(ctx.apiKey);
  const pacer = new Pacer(new Deadline(config.queryDeadlineMs, clock, ctx.now, ctx.signal), 'changes/get');
  await checkNotPruned(read, ctx.apiKey, input.since, 'data.since');
  const page = await changesPage(read, ctx.apiKey, { after: input.since, bound: projections.position, pageSize: input.pageSize, families: input.types, pacer });
  const changes: ChangeView[] = [];
  for (const row of page.rows) changes.push(await changeView(ctx, scope, row));
  return { changes, nextToken: ctx.services.secrets.positions.seal(scope, page.next) };
}
