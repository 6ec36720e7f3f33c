/**
 * Users and groups of an organization: the users holding a grant on it (users/get), what one
 * user can open (resources/get), and a group's members (users/get narrowed to the group; the
 * API lists no groups, so a group is opened by its id).
 */
import { useState } from 'preact/hooks';
import type { CollabClient } from '../api.js';
import { navigate } from '../route.js';
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

export function GroupView({ client, org, group }: { client: CollabClient; org: string; group: string | undefined }) {
  const [id, setId] = useState(group ?? '');
  const members = useLoad(() => (group === undefined ? Promise.resolve(undefined) : client.all('/v2/users/get', { organizationId: org, organizationUserGroupIds: [group] })), [org, group]);
  return (
    <div>
      <Crumbs org={org} here="Groups" />
      <h1>Groups of {org}</h1>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          if (id.trim()) navigate({ view: 'group', org, group: id.trim() });
        }}
      >
        <label for="group-id">Group id</label>
        <input id="group-id" value={id} onInput={(e) => setId(e.currentTarget.value)} autoComplete="off" />
        <button type="submit">Open group</button>
      </form>
      {group !== undefined ? (
        <section aria-labelledby="members-title">
          <h2 id="members-title">Members of {group} with a grant on the organization</h2>
          {members.error ? <Show loaded={members}>{() => null}</Show> : <UserTable org={org} rows={asRows(members.data)} label={`Members of ${group}`} />}
        </section>
      ) : null}
    </div>
  );
}
