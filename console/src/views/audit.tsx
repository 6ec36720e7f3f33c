/**
 * A document's changes from the log (audit/events/get): time, event, who, and the event's
 * data as the service gives it (secrets already read `__redacted__`). Paged, and live: a change
 * to the document arriving on the change stream reloads the page.
 */
import { useState } from 'preact/hooks';
import type { CollabClient } from '../api.js';
import { useDocumentName, useOrgName } from '../names.js';
import { Crumbs, Show, useLive, useLoad, when } from '../ui.js';

export function Audit({ client, org, doc }: { client: CollabClient; org: string; doc: string }) {
  const [tokens, setTokens] = useState<(string | undefined)[]>([undefined]);
  const token = tokens[tokens.length - 1];
  const orgName = useOrgName(client, org);
  const docName = useDocumentName(client, org, doc);
  const page = useLoad(() => client.call('/v2/audit/events/get', { organizationId: org, documentId: doc, pageSize: 50, ...(token ? { pageToken: token } : {}) }), [org, doc, token]);
  // Live: a change to the document (its own, or a grant on it) reloads the page shown.
  useLive(client, (c) => c.organizationId === org && c.resourceId === doc, page.reload, [client, org, doc]);
  return (
    <div>
      <Crumbs org={org} orgName={orgName} trail={[{ to: { view: 'document', org, doc }, label: docName.data ?? doc, loading: docName.loading }, { label: 'audit' }]} />
      <h1>Audit of {doc}</h1>
      <Show loaded={page}>
        {(res) => (
          <>
            <div class="scroll">
              <table class="audit">
                <caption class="sr-only">Changes of document {doc}</caption>
                <thead>
                  <tr>
                    <th scope="col">Time</th>
                    <th scope="col">Event</th>
                    <th scope="col">Who</th>
                    <th scope="col">Data</th>
                  </tr>
                </thead>
                <tbody>
                  {res.data.map((e) => (
                    <tr key={e.id} data-event={e.type}>
                      <td>
                        <code>{when(e.time)}</code>
                      </td>
                      <td>{e.type}</td>
                      <td>
                        <code>{e.actor}</code>
                      </td>
                      <td>
                        <pre>{JSON.stringify(e.data, null, 1)}</pre>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            {res.data.length === 0 ? <p class="muted">No event on this page.</p> : null}
            <nav class="row" aria-label="Audit pages">
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
