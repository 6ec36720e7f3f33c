/**
 * A document, and a folder's access panel: access type, disabled flag, who can open it, one
 * user's explanation; changing the access type, disabling, moving (each confirmed first).
 */
import { useState } from 'preact/hooks';
import { failedItems, type AccessChanges, type CollabClient } from '../api.js';
import type { Route } from '../route.js';
import { useFolderNames, useOrgName } from '../names.js';
import { Confirm, Crumbs, Link, Show, useLoad } from '../ui.js';
import { WhoCanOpen, type ResourceRef } from './access.js';
import { Explain } from './explain.js';
import { AsOfPicker } from './history.js';
import { ACCESS_OPTIONS, meaningOf, type AccessType } from '../access-types.js';

const TYPES: AccessType[] = ['organizationPrivate', 'restricted', 'public'];
/** The optional `asOf` of a route, absent rather than undefined. */
const at = (asOf: string | undefined) => (asOf !== undefined ? { asOf } : {});
/** A folder's `ancestors` start with `root`, the organization's top, which the path shows as the organization. */
const withoutRoot = (ids: string[]) => ids.filter((id) => id !== 'root');

/** A change the dialog previews first: the same call as a dry run, then for real. */
type Previewed = (t: AccessType) => { preview: () => Promise<{ data?: unknown; accessChanges: AccessChanges }>; run: () => Promise<string | void> };

function AccessTypeControl({ current, label, change, onDone }: { current: string; label: string; change: Previewed; onDone: () => void }) {
  const [chosen, setChosen] = useState<AccessType>(TYPES.find((t) => t === current) ?? 'restricted');
  return (
    <div class="row">
      <label for="access-type">Access type</label>
      <select id="access-type" value={chosen} onChange={(e) => setChosen(TYPES.find((t) => t === e.currentTarget.value) ?? 'restricted')}>
        {ACCESS_OPTIONS.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
      <Confirm label="Change access type" disabled={chosen === current} question={`Set the access type of ${label} to ${chosen}?`} {...change(chosen)} done={onDone} />
    </div>
  );
}

export function FolderAccess(props: {
  client: CollabClient;
  org: string;
  folder: string;
  folders: { folderId: string; folderName: string; ancestors: string[]; accessType?: string }[];
  user: string | undefined;
  explainRoute: (u: string) => Route;
  asOf: string | undefined;
}) {
  const { client, org, folder, folders, user, explainRoute, asOf } = props;
  const [version, setVersion] = useState(0);
  const row = folders.find((f) => f.folderId === folder);
  if (!row) return <p class="failure" role="alert">NOT_FOUND: Folder {folder} is not in this organization.</p>;
  const r: ResourceRef = { org, kind: 'folder', id: folder, folders: withoutRoot(row.ancestors) };
  return (
    <section aria-labelledby="folder-title" class="panel">
      <h2 id="folder-title">Folder {row.folderName}</h2>
      <p>
        Id <code>{row.folderId}</code> · <Link to={{ view: 'timeline', org, kind: 'folder', id: folder }}>Access timeline</Link>
      </p>
      <AsOfPicker key={asOf ?? ''} asOf={asOf} at={(a) => ({ view: 'org', org, folder, ...(user !== undefined ? { user } : {}), ...at(a) })} />
      {asOf === undefined ? (
        <AccessTypeControl
          current={row.accessType ?? ''}
          label={`folder ${row.folderName}`}
          change={(t) => {
            const body = { organizationId: org, folderIds: [folder], accessType: t };
            return {
              preview: () => client.call('/v2/organizations/folders/access/update', body, { dryRun: true }),
              run: async () => failedItems((await client.call('/v2/organizations/folders/access/update', body)).data).join('; ') || undefined,
            };
          }}
          onDone={() => setVersion((v) => v + 1)}
        />
      ) : null}
      <WhoCanOpen client={client} r={r} explainRoute={explainRoute} version={version} asOf={asOf} />
      {user !== undefined ? <Explain client={client} r={r} user={user} asOf={asOf} /> : null}
    </section>
  );
}

function DocumentControls({ client, org, doc, name, accessType, disabled, changed }: { client: CollabClient; org: string; doc: string; name: string; accessType: string; disabled: boolean; changed: () => void }) {
  const [target, setTarget] = useState('');
  const flag = { organizationId: org, documentIds: [doc], disabled: !disabled };
  const move = { organizationId: org, documentIds: [doc], folderId: target.trim() };
  return (
    <section aria-labelledby="change-title" class="panel">
      <h2 id="change-title">Change</h2>
      <AccessTypeControl
        current={accessType}
        label={`document ${name}`}
        change={(t) => {
          const body = { organizationId: org, documentIds: [doc], accessType: t };
          return {
            preview: () => client.call('/v2/organizations/documents/access/update', body, { dryRun: true }),
            run: async () => failedItems((await client.call('/v2/organizations/documents/access/update', body)).data).join('; ') || undefined,
          };
        }}
        onDone={changed}
      />
      <div class="row">
        <Confirm
          label={disabled ? 'Enable' : 'Disable'}
          danger={!disabled}
          question={`${disabled ? 'Enable' : 'Disable'} document ${name}? ${disabled ? '' : 'Nobody can open a disabled document.'}`}
          preview={() => client.call('/v2/organizations/documents/access/disablestate/update', flag, { dryRun: true })}
          run={async () => failedItems((await client.call('/v2/organizations/documents/access/disablestate/update', flag)).data).join('; ') || undefined}
          done={changed}
        />
      </div>
      <div class="row">
        <label for="move-to">Move to folder id ("root" for the top)</label>
        <input id="move-to" value={target} onInput={(e) => setTarget(e.currentTarget.value)} autoComplete="off" />
        <Confirm
          label="Move"
          disabled={target.trim() === ''}
          question={`Move document ${name} to folder ${target.trim()}?`}
          preview={() => client.call('/v2/organizations/documents/move', move, { dryRun: true })}
          run={async () => {
            await client.call('/v2/organizations/documents/move', move);
          }}
          done={changed}
        />
      </div>
    </section>
  );
}

/** Organizations / the organization / each folder above the document, by name. */
function DocumentCrumbs({ client, org, folders }: { client: CollabClient; org: string; folders: string[] }) {
  const orgName = useOrgName(client, org);
  const names = useFolderNames(client, org, folders);
  return <Crumbs org={org} orgName={orgName} trail={folders.map((f) => ({ to: { view: 'org', org, folder: f }, label: names.data?.get(f) ?? f, loading: names.loading }))} />;
}

export function DocumentView({ client, org, doc, user, asOf }: { client: CollabClient; org: string; doc: string; user: string | undefined; asOf: string | undefined }) {
  const [version, setVersion] = useState(0);
  const loaded = useLoad(async () => {
    const row = (await client.call('/v2/organizations/documents/get', { organizationId: org, documentIds: [doc] })).data[0];
    if (!row) throw new Error(`NOT_FOUND: Document ${doc} does not exist in organization ${org}.`);
    const folder = row.folderId !== undefined && row.folderId !== 'root' ? (await client.call('/v2/organizations/folders/get', { organizationId: org, folderId: row.folderId, maxDepth: 0 })).data[0] : undefined;
    return { row, folders: folder ? withoutRoot([...folder.ancestors, folder.folderId]) : [] };
  }, [org, doc, version]);
  const changed = () => setVersion((v) => v + 1);
  return (
    <div>
      <Show loaded={loaded}>
        {({ row, folders }) => {
          const r: ResourceRef = { org, kind: 'document', id: doc, folders };
          return (
            <>
              <DocumentCrumbs client={client} org={org} folders={folders} />
              <h1>{row.documentName}</h1>
              <dl class="facts">
                <dt>Id</dt>
                <dd>
                  <code>{row.id}</code>
                </dd>
                <dt>Access type</dt>
                <dd data-fact="accessType" title={meaningOf(row.accessType)}>
                  {row.accessType}
                </dd>
                <dt>Disabled</dt>
                <dd data-fact="disabled">{row.disabled ? 'yes' : 'no'}</dd>
              </dl>
              <p class="row">
                <Link to={{ view: 'audit', org, doc }}>Audit of this document</Link>
                <Link to={{ view: 'timeline', org, kind: 'document', id: doc }}>Access timeline</Link>
              </p>
              <AsOfPicker key={asOf ?? ''} asOf={asOf} at={(a) => ({ view: 'document', org, doc, ...(user !== undefined ? { user } : {}), ...at(a) })} />
              <WhoCanOpen client={client} r={r} explainRoute={(u) => ({ view: 'document', org, doc, user: u, ...at(asOf) })} version={version} asOf={asOf} />
              {user !== undefined ? <Explain key={`${user}/${version}`} client={client} r={r} user={user} asOf={asOf} /> : null}
              {asOf === undefined ? (
                <DocumentControls client={client} org={org} doc={doc} name={row.documentName} accessType={row.accessType} disabled={row.disabled} changed={changed} />
              ) : (
                <p class="muted">Changes are made to the present: go back to now to change this document.</p>
              )}
            </>
          );
        }}
      </Show>
    </div>
  );
}
