/**
 * Access in the past (issue 25, docs/permissions.md "History"): the "As of" picker that answers
 * a view's access questions (users/get, explain, resources/get) as of one instant, and a
 * resource's access timeline (access/history): who could open it, from when to when, through
 * which grant, opened and closed by which change.
 */
import { useState } from 'preact/hooks';
import type { CollabClient } from '../api.js';
import { navigate, type Route } from '../route.js';
import { useOrgName } from '../names.js';
import { Crumbs, Link, Show, named, useLive, useLoad } from '../ui.js';

/**
 * The picker's value is read as UTC, as the service's instants are: `<input type="datetime-local">`
 * gives `2026-11-25T15:04:05.123` (Chromium drops a zero second and zero milliseconds:
 * `2026-11-25T15:04`), which is `2026-11-25T15:04:05.123Z` here, whatever the browser's zone.
 */
const toInstant = (local: string): string | undefined => {
  const t = Date.parse(`${local}Z`);
  return local !== '' && Number.isFinite(t) ? new Date(t).toISOString() : undefined;
};

/** An instant back into the picker (`…T15:04:05.123Z` -> `…T15:04:05.123`); anything else leaves it empty. */
const toLocal = (asOf: string | undefined): string => {
  if (asOf === undefined) return '';
  const t = Date.parse(asOf);
  return Number.isFinite(t) ? new Date(t).toISOString().slice(0, 23) : '';
};

const instant = (ms: number) => new Date(ms).toISOString();

/**
 * The view's "As of" control. Applying it moves to the same view with `asOf` in its URL (so a
 * reload or a shared link asks the same past); "Back to now" drops it.
 */
export function AsOfPicker({ asOf, at }: { asOf: string | undefined; at: (asOf: string | undefined) => Route }) {
  const [value, setValue] = useState(toLocal(asOf));
  const chosen = toInstant(value);
  return (
    <form
      class="row asof"
      aria-label="Point in time"
      onSubmit={(e) => {
        e.preventDefault();
        if (chosen !== undefined) navigate(at(chosen));
      }}
    >
      <label for="as-of">As of (UTC)</label>
      <input id="as-of" type="datetime-local" step="0.001" value={value} onInput={(e) => setValue(e.currentTarget.value)} />
      <button type="submit" disabled={chosen === undefined || chosen === asOf}>
        Show as of then
      </button>
      {asOf !== undefined ? (
        <button
          type="button"
          onClick={() => {
            setValue('');
            navigate(at(undefined));
          }}
        >
          Back to now
        </button>
      ) : null}
      <span class="when" role="status" data-as-of={asOf ?? 'now'}>
        {asOf !== undefined ? (
          <>
            Showing access as of <time dateTime={asOf}>{asOf}</time>
          </>
        ) : (
          'Showing access now'
        )}
      </span>
    </form>
  );
}

type Interval = {
  userId: string;
  accessRole: string;
  from: number;
  to: number | null;
  via: { level: 'resource' | 'folder' | 'organization'; id: string; groupId?: string };
  openedBy: { type: string; time: number; actor: string };
  closedBy: { type: string; time: number; actor: string } | null;
};

const viaText = (v: Interval['via']) => `${v.groupId !== undefined ? `group ${v.groupId}` : 'own grant'} on ${v.level === 'resource' ? 'this' : `${v.level} ${v.id}`}`;
function Change({ c }: { c: Interval['openedBy'] | null }) {
  if (c === null) return null;
  return (
    <>
      {c.type} by <code class="actor">{c.actor}</code>
    </>
  );
}

export function Timeline({ client, org, kind, id }: { client: CollabClient; org: string; kind: 'document' | 'folder'; id: string }) {
  const history = useLoad(() => client.all('/v2/auth/access/history', { organizationId: org, ...(kind === 'document' ? { documentId: id } : { folderId: id }) }), [org, kind, id]);
  // Live: access changes anywhere in the organization (a grant on a folder above, a group's
  // members) may change the timeline; the resource's own changes too.
  useLive(client, (c) => c.organizationId === org && (c.family === 'grant' || c.family === 'group' || c.resourceId === id), history.reload, [client, org, kind, id]);
  const orgName = useOrgName(client, org);
  const name = useLoad(
    () =>
      kind === 'document'
        ? client.call('/v2/organizations/documents/get', { organizationId: org, documentIds: [id] }).then((r) => named(r.data[0]?.documentName, id))
        : client.call('/v2/organizations/folders/get', { organizationId: org, folderId: id, maxDepth: 0 }).then((r) => named(r.data.find((f) => f.folderId === id)?.folderName, id)),
    [org, kind, id],
  );
  const resource = (asOf: number): Route => (kind === 'document' ? { view: 'document', org, doc: id, asOf: instant(asOf) } : { view: 'org', org, folder: id, asOf: instant(asOf) });
  return (
    <div>
      <Crumbs
        org={org}
        orgName={orgName}
        trail={[{ to: kind === 'document' ? { view: 'document', org, doc: id } : { view: 'org', org, folder: id }, label: name.data ?? id, loading: name.loading }, { label: 'Access timeline' }]}
      />
      <h1>
        Access timeline of {kind} {id}
      </h1>
      <p class="muted">Each row is a stretch of time during which the user could open it with that role through that grant. Users let in without a grant (a public resource) have none.</p>
      <Show loaded={history}>
        {(rows: Interval[]) =>
          rows.length === 0 ? (
            <p class="muted">Nobody could open it through a grant yet.</p>
          ) : (
            <div class="scroll">
              <table class="timeline">
                <caption class="sr-only">
                  Who could open {kind} {id}, and when
                </caption>
                <thead>
                  <tr>
                    <th scope="col">User</th>
                    <th scope="col">Role</th>
                    <th scope="col">From (UTC)</th>
                    <th scope="col">To (UTC)</th>
                    <th scope="col">Through</th>
                    <th scope="col">Opened by</th>
                    <th scope="col">Closed by</th>
                  </tr>
                </thead>
                <tbody>
                  {rows.map((r) => (
                    <tr key={`${r.userId}@${r.from}`} data-interval={r.userId} data-open={r.to === null ? 'yes' : 'no'}>
                      <th scope="row">{r.userId}</th>
                      <td>{r.accessRole}</td>
                      <td>
                        <Link to={resource(r.from)}>
                          <time dateTime={instant(r.from)}>{instant(r.from)}</time>
                        </Link>
                      </td>
                      <td>{r.to === null ? 'now' : <time dateTime={instant(r.to)}>{instant(r.to)}</time>}</td>
                      <td>{viaText(r.via)}</td>
                      <td>
                        <Change c={r.openedBy} />
                      </td>
                      <td>
                        <Change c={r.closedBy} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Show>
    </div>
  );
}
