/**
 * One user's explanation for one resource (permissions/explain), drawn as the path
 * organization -> folders -> resource. Each step lists the user's grants there (own or through
 * a group); the grant that decides is marked, and so is the step the access type comes from.
 */
import type { CollabClient } from '../api.js';
import { Show, useLoad } from '../ui.js';
import type { ResourceRef } from './access.js';

interface Candidate {
  level: 'resource' | 'folder' | 'organization';
  id: string;
  via: 'user' | 'group';
  groupId?: string;
  accessRole: 'editor' | 'viewer';
  expiresAt?: number;
  live: boolean;
}

interface Step {
  level: Candidate['level'];
  id: string;
  label: string;
}

/**
 * The path is today's folder chain. As of a past instant the resource may have sat elsewhere:
 * a folder that held a grant then and is not on today's path gets its own step, so no
 * candidate is left undrawn.
 */
function steps(r: ResourceRef, candidates: Candidate[]): Step[] {
  const then = [...new Set(candidates.filter((c) => c.level === 'folder' && !r.folders.includes(c.id)).map((c) => c.id))];
  return [
    { level: 'organization', id: r.org, label: 'Organization' },
    ...then.map((f): Step => ({ level: 'folder', id: f, label: 'Folder (above it then)' })),
    ...r.folders.map((f): Step => ({ level: 'folder', id: f, label: 'Folder' })),
    { level: 'resource', id: r.id, label: r.kind === 'document' ? 'Document' : 'Folder' },
  ];
}

const grantText = (c: Candidate) =>
  `${c.accessRole} ${c.via === 'group' ? `through group ${c.groupId ?? ''}` : 'own grant'}${c.live ? '' : ' (expired)'}${
    c.expiresAt !== undefined ? ` until ${new Date(c.expiresAt * 1000).toISOString()}` : ''
  }`;

export function Explain({ client, r, user, asOf }: { client: CollabClient; r: ResourceRef; user: string; asOf: string | undefined }) {
  const loaded = useLoad(
    () =>
      client.call('/v2/auth/permissions/explain', {
        organizationId: r.org,
        userId: user,
        ...(r.kind === 'document' ? { documentId: r.id } : { folderId: r.id }),
        ...(asOf !== undefined ? { asOf } : {}),
      }),
    [r.org, r.kind, r.id, user, asOf],
  );
  return (
    <section aria-labelledby="explain-title" class="explain">
      <h2 id="explain-title">{asOf !== undefined ? `Why ${user} could or could not open it then` : `Why ${user} can or cannot open it`}</h2>
      <Show loaded={loaded}>
        {({ data }) => {
          const decided = data.decidedBy.candidate !== undefined ? data.candidates[data.decidedBy.candidate] : undefined;
          const entry = data.entry;
          return (
            <>
              <p class="verdict" data-verdict={'accessRole' in entry ? 'allowed' : 'denied'}>
                {'accessRole' in entry ? `Allowed: ${entry.accessRole}` : `Denied: ${entry.error}`} — rule {data.decidedBy.rule}
                {data.blocked ? ` (${data.blocked})` : ''}
              </p>
              <ol class="path">
                {steps(r, data.candidates).map((s) => {
                  const here = data.candidates.filter((c) => c.level === s.level && c.id === s.id);
                  const typeHere = data.accessType.from.level === s.level && data.accessType.from.id === s.id;
                  return (
                    <li key={`${s.level}:${s.id}`} class={decided && decided.level === s.level && decided.id === s.id ? 'decides' : undefined}>
                      <span class="step">
                        {s.label} <code>{s.id}</code>
                      </span>
                      {typeHere ? <span class="badge">access type {data.accessType.value} set here</span> : null}
                      <ul>
                        {here.map((c) => (
                          <li key={`${c.via}:${c.groupId ?? ''}`} class={c === decided ? 'grant deciding' : 'grant'}>
                            {grantText(c)}
                            {c === decided ? <strong class="badge"> deciding grant</strong> : null}
                          </li>
                        ))}
                      </ul>
                    </li>
                  );
                })}
              </ol>
            </>
          );
        }}
      </Show>
    </section>
  );
}
