/**
 * Webhook triggers: which domain events of a key are delivered. A trigger names an area;
 * an event's area comes from its stream's category. The defaults (seeded on the webhook
 * service's first enable) are every area, so every domain event is delivered until the
 * key narrows `triggers`.
 */

export const WEBHOOK_TRIGGERS = ['organization', 'folder', 'document', 'user', 'group', 'agent', 'other'] as const;
export type WebhookTrigger = (typeof WEBHOOK_TRIGGERS)[number];
export const DEFAULT_WEBHOOK_TRIGGERS: string[] = [...WEBHOOK_TRIGGERS];

/** Email triggers are stored for the email service; this service does not send email itself. */
export const DEFAULT_EMAIL_TRIGGERS: string[] = ['comment.added', 'comment.mentioned', 'document.shared'];

/** `<category>-[...]` (src/shared/ids.ts streamName) -> category. */
export const categoryOf = (stream: string): string => {
  const i = stream.indexOf('-');
  return i < 0 ? stream : stream.slice(0, i);
};

/** Categories that are not tenant data and never delivered (lower case): the workspace and the key's own webhook settings. */
const NEVER = new Set(['workspace', 'advancedwebhooks']);

export function triggerOf(stream: string): WebhookTrigger | null {
  const c = categoryOf(stream).toLowerCase();
  if (NEVER.has(c)) return null;
  if (c.includes('agent')) return 'agent';
  if (c.includes('group')) return 'group';
  if (c.includes('user') || c.includes('grant') || c.includes('permission') || c.includes('member')) return 'user';
  if (c.includes('document')) return 'document';
  if (c.includes('folder')) return 'folder';
  if (c.startsWith('org')) return 'organization';
  return 'other';
}
