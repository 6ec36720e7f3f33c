/**
 * Users and groups of an organization: the users holding a grant on it (users/get), what one
 * user can open (resources/get), its groups (usergroups/get) and a group's members (users/get
 * narrowed to the group).
 */
import { useState } from 'preact/hooks';
import type { CollabClient } from '../api.js';
import { Link, Show, useLoad } from '../ui.js';
import { AsOfPicker } from './history.js';

function Crumbs({ org, here }: { org: string; here: string }) {
  return (
    <nav aria-label="Breadcrumb" class="crumbs">
      <Link to={{ view: 'orgs' }}>Organizations</Link> / <Link to={{ view: 'org', org }}>{org}</Link> / {here}
    </nav>
  );
}

type UserRow = { userId: string; name: string; email: string; accessRole: string };

function UserTable({ org, rows, label }: { org: string; rows: UserRow[]; label: string }) {
  if (rows.length === 0) return <p class="muted">No user.</p>;
  return (
    <table>
      <caption class="sr-only">{label}</caption>
      <thead>
        <tr>
          <th scope="col">User</th>
          <th scope="col">Name</th>
          <th scope="col">Email</th>
          <th scope="col">Role</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((u) => (
          <tr key={u.userId}>
            <td>
              <Link to={{ view: 'user', org, user: u.userId }}>{u.userId}</Link>
            </td>
            <td>{u.name}</td>
            <td>{u.email}</td>
            <td>{u.accessRole}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

const asRows = (data: unknown): UserRow[] => (Array.isArray(data) ? (data as UserRow[]) : []);

export function Users({ client, org }: { client: CollabClient; org: string }) {
  const users = useLoad(() => client.all('/v2/users/get', { organizationId: org }), [org]);
  return (
    <div>
      <Crumbs org={org} here="Users" />
      <h1>Users of {org}</h1>
      <p class="muted">The users holding a grant on the organization itself.</p>
      <Show loaded={users}>{(rows) => <UserTable org={org} rows={asRows(rows)} label={`Users of ${org}`} />}</Show>
    </div>
  );
}

/** What a user can open, or with `asOf` what they could then (resources/get as of that instant). */
export function UserView({ client, org, user, asOf }: { client: CollabClient; org: string; user: string; asOf: string | undefined }) {
  const past = asOf !== undefined ? { asOf } : {};
  const docs = useLoad(() => client.all('/v2/auth/resources/get', { organizationId: org, userId: user, type: 'document', ...past }), [org, user, asOf]);
  const folders = useLoad(() => client.all('/v2/auth/resources/get', { organizationId: org, userId: user, type: 'folder', ...past }), [org, user, asOf]);
  return (
    <div>
      <Crumbs org={org} here={user} />
      <h1>{asOf !== undefined ? `What ${user} could open then` : `What ${user} can open`}</h1>
      <AsOfPicker key={asOf ?? ''} asOf={asOf} at={(a) => ({ view: 'user', org, user, ...(a !== undefined ? { asOf: a } : {}) })} />
      {(['document', 'folder'] as const).map((kind) => (
        <section key={kind} aria-labelledby={`res-${kind}`}>
          <h2 id={`res-${kind}`}>{kind === 'document' ? 'Documents' : 'Folders'}</h2>
          <Show loaded={kind === 'document' ? docs : folders}>
            {(rows) =>
              rows.length === 0 ? (
                <p class="muted">None.</p>
              ) : (
                <ul class="list">
                  {rows.map((r) => (
                    <li key={r.id}>
                      <Link to={kind === 'document' ? { view: 'document', org, doc: r.id, user, ...past } : { view: 'org', org, folder: r.id, user, ...past }}>{r.id}</Link> {r.accessRole}{' '}
                      <span class="badge">{r.accessType}</span>
                    </li>
                  ))}
                </ul>
              )
            }
          </Show>
        </section>
      ))}
    </div>
  );
}

const GROUPS_PAGE = 50;

/** An organization's groups (usergroups/get, paged), each opening its members. */
export function Groups({ client, org }: { client: CollabClient; org: string }) {
  const [tokens, setTokens] = useState<(string | undefined)[]>([undefined]);
  const token = tokens[tokens.length - 1];
  const page = useLoad(() => client.call('/v2/organizations/usergroups/get', { organizationId: org, pageSize: GROUPS_PAGE, ...(token ? { pageToken: token } : {}) }), [org, token]);
  return (
    <div>
      <Crumbs org={org} here="Groups" />
      <h1>Groups of {org}</h1>
      <Show loaded={page}>
        {(res) => (
          <>
            {res.data.length === 0 ? (
              <p class="muted">No group.</p>
            ) : (
              <table>
                <caption class="sr-only">{`Groups of ${org}`}</caption>
                <thead>
                  <tr>
                    <th scope="col">Group</th>
                    <th scope="col">Name</th>
                    <th scope="col">Members</th>
                  </tr>
                </thead>
                <tbody>
                  {res.data.map((g) => (
                    <tr key={g.groupId} data-group={g.groupId}>
                      <td>
                        <Link to={{ view: 'group', org, group: g.groupId }}>{g.groupId}</Link>
                      </td>
                      <td>{g.groupName}</td>
                      <td>{g.memberCount}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            <nav class="row" aria-label="Group pages">
              <button type="button" disabled={tokens.length === 1} onClick={() => setTokens(tokens.slice(0, -1))}>
                Previous page
              </button>
              <button type="button" disabled={!res.pageToken} onClick={() => res.pageToken && setTokens([...tokens, res.pageToken])}>
                Next page
              </button>
            </nav>
          </>
        )}
      </Show>
    </div>
  );
}

/** A group's members who hold a grant on the organization (users/get narrowed to the group). */
export function GroupView({ client, org, group }: { client: CollabClient; org: string; group: string }) {
  const members = useLoad(() => client.all('/v2/users/get', { organizationId: org, organizationUserGroupIds: [group] }), [org, group]);
  return (
    <div>
      <nav aria-label="Breadcrumb" class="crumbs">
        <Link to={{ view: 'orgs' }}>Organizations</Link> / <Link to={{ view: 'org', org }}>{org}</Link> / <Link to={{ view: 'groups', org }}>Groups</Link> / {group}
      </nav>
      <h1>Group {group}</h1>
      <section aria-labelledby="members-title">
        <h2 id="members-title">Members with a grant on the organization</h2>
        <Show loaded={members}>{(rows) => <UserTable org={org} rows={asRows(rows)} label={`Members of ${group}`} />}</Show>
      </section>
    </div>
  );
}
