/**
 * Access, drawn: who can open a folder or document (auth/users/get) with each user's role and
 * the grant it comes from; for a chosen user, the explanation (permissions/explain) as the
 * path organization -> folders -> resource with the deciding grant marked; grant and revoke.
 */
import { useState } from 'preact/hooks';
import { failedItems, type CollabClient } from '../api.js';
import type { Route } from '../route.js';
import { Confirm, Link, Show, useLoad } from '../ui.js';
import { meaningOf } from '../access-types.js';

type Kind = 'document' | 'folder';

export interface ResourceRef {
  org: string;
  kind: Kind;
  id: string;
  /** The resource's folder chain, organization side first (for the path drawn). */
  folders: string[];
}

type Via = { type: 'user' | 'group'; level: 'resource' | 'folder' | 'organization'; id: string; groupId?: string };

const scope = (r: ResourceRef) => (r.kind === 'document' ? { documentId: r.id } : { folderId: r.id });
const resource = (r: ResourceRef) => ({ type: r.kind, id: r.id, organizationId: r.org });

function viaText(via: Via): string {
  const who = via.type === 'group' ? `group ${via.groupId ?? ''}` : 'own grant';
  return `${who} on ${via.level === 'resource' ? 'this' : via.level} ${via.level === 'resource' ? '' : via.id}`.trim();
}

/** Revoking a direct grant (user or group) on this resource; grants above it are revoked where they are. */
function Revoke({ client, r, userId, via, done }: { client: CollabClient; r: ResourceRef; userId: string; via: Via; done: () => void }) {
  if (via.level !== 'resource') return null;
  const group = via.type === 'group' && via.groupId !== undefined ? via.groupId : undefined;
  const who = group !== undefined ? `group ${group}` : userId;
  const body = { ...(group !== undefined ? { group: { groupId: group } } : { userId }), permissions: { resources: [resource(r)] } };
  return (
    <Confirm
      label={`Revoke ${who}`}
      question={`Revoke the grant of ${who} on ${r.kind} ${r.id}?`}
      danger
      preview={() => client.call('/v2/auth/permissions/remove', body, { dryRun: true })}
      run={async () => failedItems((await client.call('/v2/auth/permissions/remove', body)).data).join('; ') || undefined}
      done={done}
    />
  );
}

/**
 * Whether the organization has this user (users/get narrowed to the id: a live grant on the
 * organization). permissions/add grants to any id, known or not (an application may grant
 * before its user first signs in); a mistyped id would be a grant to nobody, so the console
 * says so before the grant is confirmed, and says it again in the dialog.
 */
function useKnownUser(client: CollabClient, org: string, user: string | undefined): 'checking' | 'known' | 'unknown' | 'none' {
  const check = useLoad<{ user: string | undefined; known: boolean }>(
    () =>
      user === undefined
        ? Promise.resolve({ user, known: true })
        : client.call('/v2/users/get', { organizationId: org, userIds: [user] }).then((res) => ({ user, known: Array.isArray(res.data) && (res.data as { userId: string }[]).some((u) => u.userId === user) })),
    [org, user],
  );
  if (user === undefined) return 'none';
  // A refused check (an id longer than ids may be) warns of nothing: the grant's own refusal will.
  if (check.error !== undefined) return 'known';
  // Until the answer is this id's (not the previous one's), nothing is said either way.
  if (check.loading || check.data?.user !== user) return 'checking';
  return check.data.known ? 'known' : 'unknown';
}

function Grant({ client, r, done }: { client: CollabClient; r: ResourceRef; done: () => void }) {
  const [to, setTo] = useState<'user' | 'group'>('user');
  const [who, setWho] = useState('');
  const [role, setRole] = useState<'editor' | 'viewer'>('viewer');
  const id = who.trim();
  const known = useKnownUser(client, r.org, to === 'user' && id !== '' ? id : undefined);
  const grant = { ...(to === 'group' ? { group: { groupId: id } } : { userId: id }), permissions: { resources: [{ ...resource(r), accessRole: role }] } };
  const warning = known === 'unknown' ? `The organization has no user ${id} (users/get does not list them). The grant is given all the same; check the id, or add the user on the Users page first.` : '';
  return (
    <fieldset class="grant">
      <legend>Grant access</legend>
      <label for="grant-to">To</label>
      <select id="grant-to" value={to} onChange={(e) => setTo(e.currentTarget.value === 'group' ? 'group' : 'user')}>
        <option value="user">User</option>
        <option value="group">Group</option>
      </select>
      <label for="grant-id">{to === 'group' ? 'Group id' : 'User id'}</label>
      <input id="grant-id" value={who} onInput={(e) => setWho(e.currentTarget.value)} autoComplete="off" aria-describedby="grant-check" />
      <p id="grant-check" class={warning ? 'warning' : 'check'} aria-live="polite" data-user-check={known}>
        {warning}
      </p>
      <label for="grant-role">Role</label>
      <select id="grant-role" value={role} onChange={(e) => setRole(e.currentTarget.value === 'editor' ? 'editor' : 'viewer')}>
        <option value="viewer">viewer</option>
        <option value="editor">editor</option>
      </select>
      <Confirm
        label="Grant"
        disabled={id === ''}
        question={`Give ${to} ${id} ${role} access to ${r.kind} ${r.id}?${warning ? ` ${warning}` : ''}`}
        preview={() => client.call('/v2/auth/permissions/add', grant, { dryRun: true })}
        run={async () => failedItems((await client.call('/v2/auth/permissions/add', grant)).data).join('; ') || undefined}
        done={() => {
          setWho('');
          done();
        }}
      />
    </fieldset>
  );
}

/**
 * Who can open it, or with `asOf` who could then (users/get as of that instant). The past is
 * read-only: grant and revoke change the present, so they show only on the present view.
 */
export function WhoCanOpen({ client, r, explainRoute, version, asOf }: { client: CollabClient; r: ResourceRef; explainRoute: (user: string) => Route; version: number; asOf: string | undefined }) {
  const users = useLoad(() => client.call('/v2/auth/users/get', { organizationId: r.org, ...scope(r), ...(asOf !== undefined ? { asOf } : {}) }), [r.org, r.kind, r.id, version, asOf]);
  return (
    <section aria-labelledby="who-title">
      <h2 id="who-title">{asOf !== undefined ? 'Who could open it then' : 'Who can open it'}</h2>
      <div class="access">
        <div>
          <Show loaded={users}>
            {({ data }) => (
              <>
                <p>
                  Access type <strong>{data.accessType}</strong>: {data.everyone ? `${meaningOf('public') ?? ''}; the users listed hold grants, which set their role` : data.accessType === 'public' ? 'nobody can open it while it is disabled' : meaningOf(data.accessType) ?? 'see docs/permissions.md'}.
                </p>
                <div class="scroll">
                  <table class="users">
                    <caption class="sr-only">
                      Users who {asOf !== undefined ? `could open ${r.kind} ${r.id} as of ${asOf}` : `can open ${r.kind} ${r.id}`}
                    </caption>
                    <thead>
                      <tr>
                        <th scope="col">User</th>
                        <th scope="col">Role</th>
                        <th scope="col">Through</th>
                        {asOf === undefined ? <th scope="col">Actions</th> : null}
                      </tr>
                    </thead>
                    <tbody>
                      {data.users.map((u) => (
                        <tr key={`${u.userId}`} data-user={u.userId}>
                          <td>
                            <Link to={explainRoute(u.userId)}>{u.userId}</Link>
                          </td>
                          <td>{u.accessRole}</td>
                          <td>{viaText(u.via)}</td>
                          {asOf === undefined ? (
                            <td>
                              <Revoke client={client} r={r} userId={u.userId} via={u.via} done={users.reload} />
                            </td>
                          ) : null}
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
                {data.users.length === 0 ? <p class="muted">{asOf !== undefined ? 'No user held a grant that reached it then.' : 'No user holds a grant that reaches it.'}</p> : null}
              </>
            )}
          </Show>
        </div>
        {asOf === undefined ? <Grant client={client} r={r} done={users.reload} /> : null}
      </div>
    </section>
  );
}
