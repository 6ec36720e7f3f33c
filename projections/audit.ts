/**
 * The audit index: every tenant event once (secrets redacted), plus one small subject row per
 * thing it is about, so the history of a key, an organization, a folder, a document or an
 * agent is an indexed, ordered, paged read (queries/audit.ts) instead of a scan of the log.
 *
 * - `audit_events`: `_id` = log position; the event as recorded (data through
 *   `redactEventData`, the same redaction webhooks use), its metadata, its stream split into
 *   category and ids (the API key left out).
 * - `audit_subjects`: `{ subject, position }`, `subject` = `key(kind, apiKey, ...ids)`, only for
 *   the subjects the event row does not index itself. The key and organization subjects are
 *   read from `audit_events` through its (apiKey, position) and (apiKey, data.organizationId,
 *   position) indexes, and the event's first folder, document or agent subject is its
 *   `target`, indexed (target, position); only further ones (a deleted folder subtree, an
 *   agent group's agents, ...) get rows. An index entry on the event's row costs far less
 *   than another document with its own indexes: DocumentAdded went from 4 audit documents
 *   to 1. Read models written before keep their rows (and no `target`): queries read both.
 *
 * Subjects of an event (all under the API key that owns its stream):
 * - `key`: every event of the key's streams, and the workspace events that name the key
 *   (`data.apiKey`: created, tokens, service configs): the events whose `apiKey` is the key;
 * - `organization`: every event whose data names an `organizationId`: the events whose
 *   `apiKey` and `data.organizationId` match (the redaction never touches `organizationId`);
 * - `folder`: the folder events of the organization stream (`folderId`, and every id of a
 *   `FolderDeleted` subtree), and grants on the folder (a user's or a group's);
 * - `document`: the document's stream, and grants on the document (a user's or a group's);
 * - `agent`: the agent's stream, and agent-group events that list the agent.
 *
 * Replay-safe: both collections are keyed by position, so applying an event twice rewrites
 * the same documents.
 *
 * The change feed (`/v2/changes/get`, queries/changes.ts) reads the same rows: every tenant
 * event in log order by (apiKey, position), and by (apiKey, family, position) for its `types`
 * filter. For it a row also keeps
 * - `family`: the kind of change (`changeFamily`: a grant on a document is a `grant`);
 * - `personal`: a user event's sealed personal fields (name, e-mail, initial) as the log holds
 *   them, sealed with the user's key (src/secrets/personal.ts), which `data` shows as
 *   `"__redacted__"`. The feed opens them for a live user; once the user's data is deleted
 *   their key is gone and they never open again. Never shown by the audit routes.
 * Rows written before these fields have neither (a rebuild adds them; docs/guide.md, Change feed).
 */
import type { RecordedEvent } from '../src/ports/event-store.js';
import type { Doc, ReadTx } from '../src/ports/read-store.js';
import type { Projection } from '../src/runtime/projection.js';
import { key } from '../src/shared/ids.js';
import { redactEventData } from '../commands/redaction.js';
import { isSealed } from '../src/shared/envelope.js';
import { redactConfig } from './workspaces.js';

export const AUDIT_EVENTS = 'audit_events';
export const AUDIT_SUBJECTS = 'audit_subjects';
/**
 * Not written by this projection: the retention job's record of what it deleted from
 * `audit_events` (src/jobs/retention.ts), one document per API key, keyed by the key. It
 * belongs to the read-model generation: a rebuild prunes its new generation and writes its own.
 */
export const AUDIT_RETENTION = 'audit_retention';

export interface AuditPrunedDoc extends Doc {
  /** The position of the key's last entry deleted: every entry of the key at or before it is gone. */
  through: string;
  /** That entry's time (ms). */
  time: number;
}

export type SubjectKind = 'key' | 'organization' | 'folder' | 'document' | 'agent';

export const subjectKey = (kind: SubjectKind, apiKey: string, ...ids: string[]): string => key(kind, apiKey, ...ids);

export interface AuditEventDoc extends Doc {
  position: string;
  eventId: string;
  stream: string;
  category: string;
  /** The stream's ids after the API key. */
  streamIds: string[];
  revision: number;
  type: string;
  /** Milliseconds since the epoch (metadata.time). */
  time: number;
  actor: string;
  requestId: string;
  apiKey: string;
  workspaceId?: string;
  causationId?: string;
  /** The event's first folder, document or agent subject (its other ones have subject rows); absent before. */
  target?: string | null;
  data: Record<string, unknown>;
  /** `changeFamily` of the event; absent on rows written before the change feed. */
  family?: ChangeFamily;
  /** A user event's personal fields, sealed with the user's key (see above); absent otherwise. */
  personal?: Record<string, string>;
}

/** The kinds of change the change feed filters by (`types` of /v2/changes/get). */
export const CHANGE_FAMILIES = ['apiKey', 'organization', 'folder', 'document', 'migration', 'user', 'grant', 'group', 'agent', 'webhook'] as const;
export type ChangeFamily = (typeof CHANGE_FAMILIES)[number];

/**
 * The family of an event, from its stream's category and its type: folders live in their
 * organization's stream, and a group's grants in the group's stream, yet a folder change is a
 * `folder` and any grant (a user's or a group's, on an organization, folder or document) a
 * `grant`. The workspace events of a key are `apiKey` (its tokens, configs, domains), but for
 * a disabled webhook endpoint.
 */
export function changeFamily(category: string, type: string): ChangeFamily {
  switch (category) {
    case 'organization':
      return type.startsWith('Folder') ? 'folder' : 'organization';
    case 'document':
      return 'document';
    case 'documentMigration':
      return 'migration';
    case 'grants':
      return 'grant';
    case 'usergroup':
      return type.startsWith('GroupAccess') ? 'grant' : 'group';
    case 'user':
      return 'user';
    case 'agent':
    case 'agentGroup':
      return 'agent';
    case 'advancedWebhooks':
      return 'webhook';
    default:
      return type.startsWith('Webhook') ? 'webhook' : 'apiKey';
  }
}

/** Fields of a user's events sealed with their personal key (src/usecases/personal.ts `sealedProfile`). */
export const PERSONAL_FIELDS = ['name', 'email', 'initial', 'derivedInitial'] as const;

/** A user event's sealed personal fields; undefined when it has none (or is no user event). */
function personalOf(category: string, data: Record<string, unknown>): Record<string, string> | undefined {
  if (category !== 'user') return undefined;
  const out: Record<string, string> = {};
  for (const f of PERSONAL_FIELDS) {
    const v = data[f];
    if (typeof v === 'string' && isSealed(v)) out[f] = v;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

export interface AuditSubjectDoc extends Doc {
  subject: string;
  position: string;
}

/** `<category>-<json ids>` (src/shared/ids.ts streamName) split; null for anything else. */
function parseStream(stream: string): { category: string; ids: string[] } | null {
  const i = stream.indexOf('-');
  if (i < 0) return null;
  try {
    const ids = JSON.parse(stream.slice(i + 1)) as unknown;
    if (!Array.isArray(ids) || !ids.every((x) => typeof x === 'string')) return null;
    return { category: stream.slice(0, i), ids };
  } catch {
    return null;
  }
}

const str = (v: unknown): v is string => typeof v === 'string';
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter(str) : []);

/** The owning API key and the subjects of one event; null when it is no tenant's data. */
function auditSubjectsOf(e: RecordedEvent): { apiKey: string; category: string; streamIds: string[]; subjects: string[] } | null {
  const s = parseStream(e.stream);
  if (!s) return null;
  const d = e.data as Record<string, unknown>;
  let apiKey: string | undefined;
  let streamIds: string[];
  if (s.category === 'workspace') {
    // Workspace events are the operator's and the workspace's; those naming a key are its history.
    if (!str(d.apiKey)) return null;
    apiKey = d.apiKey;
    streamIds = s.ids;
  } else {
    apiKey = s.ids[0];
    streamIds = s.ids.slice(1);
  }
  if (!apiKey) return null;
  const subjects = new Set<string>([subjectKey('key', apiKey)]);
  const org = str(d.organizationId) ? d.organizationId : undefined;
  if (org !== undefined) subjects.add(subjectKey('organization', apiKey, org));
  if (org !== undefined && s.category === 'organization' && e.type.startsWith('Folder')) {
    if (str(d.folderId)) subjects.add(subjectKey('folder', apiKey, org, d.folderId));
    for (const f of strings(d.folderIds)) subjects.add(subjectKey('folder', apiKey, org, f));
  }
  if (org !== undefined && s.category === 'document' && str(d.documentId)) {
    subjects.add(subjectKey('document', apiKey, org, d.documentId));
  }
  // A grant names its resource in its data, whoever holds it: a user (`grants` streams) or a
  // group (`usergroup` streams: GroupAccessGranted / GroupAccessRevoked). Either is part of the
  // resource's history, so an audit of a document answers "who was let in here, and when".
  if (org !== undefined && (s.category === 'grants' || s.category === 'usergroup') && str(d.resourceId)) {
    if (d.resourceType === 'folder') subjects.add(subjectKey('folder', apiKey, org, d.resourceId));
    if (d.resourceType === 'document') subjects.add(subjectKey('document', apiKey, org, d.resourceId));
  }
  if (s.category === 'agent') {
    const agentId = str(d.agentId) ? d.agentId : streamIds[0];
    if (agentId !== undefined) subjects.add(subjectKey('agent', apiKey, agentId));
  }
  if (s.category === 'agentGroup') for (const a of strings(d.agentIds)) subjects.add(subjectKey('agent', apiKey, a));
  return { apiKey, category: s.category, streamIds, subjects: [...subjects] };
}

/**
 * Event data without secrets: the webhook redaction (agent configs, token and secret fields)
 * plus, for the workspace events of a key, its service configs (`apiKey`, `authToken`, ...),
 * redacted the way the api_keys read model stores them.
 */
export function redactForAudit(type: string, data: Record<string, unknown>): Record<string, unknown> {
  const d = { ...data };
  if (d.config && typeof d.config === 'object' && type === 'ApiKeyServiceConfigUpdated') {
    d.config = redactConfig(d.config as Record<string, string>);
  }
  const settings = d.settings as Record<string, unknown> | undefined;
  if (settings && typeof settings === 'object' && type === 'ApiKeyCreated') {
    d.settings = {
      ...settings,
      ...(settings.emailServiceConfig ? { emailServiceConfig: redactConfig(settings.emailServiceConfig as Record<string, string>) } : {}),
      ...(settings.webhookServiceConfig ? { webhookServiceConfig: redactConfig(settings.webhookServiceConfig as Record<string, string>) } : {}),
    };
  }
  return redactEventData(type, d);
}

/** Every event type: the audit index keeps the whole tenant history. */
class EveryType extends Set<string> {
  override has(_type: string): boolean {
    return true;
  }
}

/** Key and organization subjects are read from `audit_events` (see above): no subject row. */
const hasRow = (subject: string) => !subject.startsWith('["key",') && !subject.startsWith('["organization",');

async function apply(e: RecordedEvent, tx: ReadTx): Promise<void> {
  const of = auditSubjectsOf(e);
  if (!of) return;
  const doc: AuditEventDoc = {
    _id: e.position,
    position: e.position,
    eventId: e.id,
    stream: e.stream,
    category: of.category,
    streamIds: of.streamIds,
    revision: e.revision,
    type: e.type,
    time: e.metadata.time,
    actor: e.metadata.actor,
    requestId: e.metadata.requestId,
    apiKey: of.apiKey,
    ...(e.metadata.workspaceId !== undefined ? { workspaceId: e.metadata.workspaceId } : {}),
    ...(e.metadata.causationId !== undefined ? { causationId: e.metadata.causationId } : {}),
    data: redactForAudit(e.type, e.data),
    family: changeFamily(of.category, e.type),
  };
  const personal = personalOf(of.category, e.data as Record<string, unknown>);
  if (personal) doc.personal = personal;
  const others = of.subjects.filter(hasRow);
  doc.target = others[0] ?? null;
  await tx.bulk([
    { op: 'upsert', collection: AUDIT_EVENTS, doc },
    ...others.slice(1).map((subject) => ({
      op: 'upsert' as const,
      collection: AUDIT_SUBJECTS,
      doc: { _id: key(subject, e.position), subject, position: e.position } satisfies AuditSubjectDoc,
    })),
  ]);
}

export const auditProjection: Projection = {
  name: 'audit',
  indexes: [
    { collection: AUDIT_SUBJECTS, fields: ['subject', 'position'] },
    // The retention job (src/jobs/retention.ts) deletes subject rows oldest first, as it deletes their events.
    { collection: AUDIT_SUBJECTS, fields: ['position'] },
    { collection: AUDIT_EVENTS, fields: ['apiKey', 'position'] },
    { collection: AUDIT_EVENTS, fields: ['apiKey', 'data.organizationId', 'position'] },
    { collection: AUDIT_EVENTS, fields: ['target', 'position'] },
    { collection: AUDIT_EVENTS, fields: ['apiKey', 'family', 'position'] },
  ],
  // Its two collections are its own: the retention job only deletes entries past the horizon,
  // rows this projection never writes again.
  lane: 'audit',
  handles: new EveryType(),
  apply,
};
