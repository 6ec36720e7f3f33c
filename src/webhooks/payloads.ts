/**
 * What a webhook delivers for one domain event.
 *
 * - raw (`rawNotificationUrl`): the event as recorded, secrets redacted:
 *   `{ id, type, stream: { category, ids }, revision, occurredAt, apiKey, actor, requestId, data }`.
 * - processed (`processedNotificationUrl`): a compact, human-oriented notification:
 *   `{ id, type, area, action, title, message, occurredAt, apiKey, actor, resource }`, where
 *   `resource` holds the ids the event names (organizationId, folderId, documentId, userId,
 *   groupId, agentId) and `message` reads like "Document added: doc-1 in organization acme".
 *
 * Bodies are built once, when the delivery is queued, and every attempt sends the same bytes.
 * A user's personal fields (name, email, initial), sealed in the log, go out redacted
 * (docs/privacy.md): a webhook says that a profile changed, never to what, so no endpoint
 * keeps personal data that a deletion could not reach.
 */
import type { RecordedEvent } from '../ports/event-store.js';
import { redactEventData } from '../../commands/redaction.js';
import { isSealed } from '../shared/envelope.js';
import { categoryOf, triggerOf } from './triggers.js';

function streamIds(stream: string): string[] {
  try {
    const ids = JSON.parse(stream.slice(categoryOf(stream).length + 1));
    return Array.isArray(ids) ? ids.map(String) : [];
  } catch {
    return [];
  }
}

export function rawPayload(e: RecordedEvent): Record<string, unknown> {
  return {
    id: e.id,
    type: e.type,
    stream: { category: categoryOf(e.stream), ids: streamIds(e.stream).slice(1) },
    revision: e.revision,
    occurredAt: e.metadata.time,
    apiKey: e.metadata.apiKey,
    actor: e.metadata.actor,
    requestId: e.metadata.requestId,
    data: redactEventData(e.type, e.data),
  };
}

const RESOURCE_FIELDS = ['organizationId', 'folderId', 'documentId', 'userId', 'groupId', 'agentId', 'organizationUserGroupId'] as const;

/** `DocumentAccessTypeUpdated` -> ["Document", "access type updated"]. */
function words(type: string): { title: string; action: string } {
  const parts = type.match(/[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+/g) ?? [type];
  const sentence = parts.map((p, i) => (i === 0 ? p : p.toLowerCase())).join(' ');
  return { title: sentence, action: parts.at(-1)!.toLowerCase() };
}

export function processedPayload(e: RecordedEvent): Record<string, unknown> {
  const data = e.data as Record<string, unknown>;
  const resource: Record<string, string> = {};
  for (const f of RESOURCE_FIELDS) if (typeof data[f] === 'string') resource[f] = data[f] as string;
  const { title, action } = words(e.type);
  const subject = resource.documentId ?? resource.folderId ?? resource.agentId ?? resource.groupId ?? resource.organizationUserGroupId ?? resource.userId;
  const config = data.config as { name?: unknown } | undefined;
  // A user's name is sealed (docs/privacy.md): the message names the user by id.
  const name = [data.documentName, data.folderName, data.organizationName, data.groupName, data.name, config?.name]
    .find((n) => typeof n === 'string' && n !== '' && !isSealed(n)) as string | undefined;
  const where = resource.organizationId && subject !== undefined ? ` in organization ${resource.organizationId}` : '';
  const what = subject ?? resource.organizationId;
  const message = `${title}${what !== undefined ? `: ${name ? `"${name}" (${what})` : what}` : ''}${where}.`;
  return {
    id: e.id,
    type: e.type,
    area: triggerOf(e.stream),
    action,
    title,
    message,
    occurredAt: e.metadata.time,
    apiKey: e.metadata.apiKey,
    actor: e.metadata.actor,
    resource,
  };
}
