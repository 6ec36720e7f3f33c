/**
 * Operations: webhook deliveries of the signed-in API key (their attempts and last error);
 * with the workspace's credentials, the workspace's API keys and the signed-in key's auth
 * tokens (ids and names: no read answers a secret); with the operator's admin token,
 * projection status and lag and the parked events with retry and skip. The workspace
 * credentials and the admin token are kept in this module's memory only (src/api.ts).
 */
import { useState } from 'preact/hooks';
import { currentApiKey, lockOperator, operator, unlockOperator, unlockWorkspace, workspace, type CollabClient } from '../api.js';
import { Confirm, Show, useLoad, when } from '../ui.js';

function Deliveries({ client }: { client: CollabClient }) {
  const page = useLoad(() => client.call('/v2/workspace/webhooks/deliveries/get', { pageSize: 50 }), []);
  return (
    <section aria-labelledby="deliveries-title">
      <h2 id="deliveries-title">Webhook deliveries</h2>
      <Show loaded={page}>
        {(res) =>
          res.data.length === 0 ? (
            <p class="muted">No delivery.</p>
          ) : (
            <div class="scroll">
              <table>
                <caption class="sr-only">Webhook deliveries</caption>
                <thead>
                  <tr>
                    <th scope="col">Event</th>
                    <th scope="col">Status</th>
                    <th scope="col">Attempts</th>
                    <th scope="col">Last error</th>
                  </tr>
                </thead>
                <tbody>
                  {res.data.map((d) => (
                    <tr key={d.id}>
                      <td>{d.eventType}</td>
                      <td>{d.status}</td>
                      <td>{d.attemptCount}</td>
                      <td>{d.lastError ?? ''}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Show>
    </section>
  );
}

/** The workspace's API keys (apikeys/get): id, name and type only; the service answers no secret there. The signed-in key first, then the others in the service's order (key id). */
function ApiKeys({ client }: { client: CollabClient }) {
  const keys = useLoad(() => client.all('/v2/workspace/apikeys/get', {}), []);
  const mine = currentApiKey();
  return (
    <section aria-labelledby="keys-title">
      <h3 id="keys-title">API keys of the workspace</h3>
      <Show loaded={keys}>
        {(rows) => (
          <div class="scroll">
            <table>
              <caption class="sr-only">API keys of the workspace</caption>
              <thead>
                <tr>
                  <th scope="col">API key</th>
                  <th scope="col">Name</th>
                  <th scope="col">Type</th>
                </tr>
              </thead>
              <tbody>
                {[...rows.filter((k) => k.id === mine), ...rows.filter((k) => k.id !== mine)].map((k) => (
                  <tr key={k.id} data-api-key={k.id === mine ? 'signed-in' : 'other'}>
                    <td>
                      <code>{k.id}</code> {k.id === mine ? <span class="badge">signed in</span> : null}
                    </td>
                    <td>{k.apiKeyName}</td>
                    <td>{k.type}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Show>
    </section>
  );
}

/** The signed-in key's auth tokens: names and ids, never a token (authtokens/get reads them redacted). */
function Tokens({ client }: { client: CollabClient }) {
  const apiKey = currentApiKey() ?? '';
  const tokens = useLoad(() => client.call('/v2/workspace/authtokens/get', { apiKey }), [apiKey]);
  return (
    <section aria-labelledby="tokens-title">
      <h3 id="tokens-title">Auth tokens of the signed-in key</h3>
      <Show loaded={tokens}>
        {(res) => (
          <ul class="list">
            {res.data.authTokens.map((t) => (
              <li key={t.tokenId} data-token>
                {t.name} <code>{t.tokenId}</code> created <time>{when(t.createdAt)}</time>
              </li>
            ))}
          </ul>
        )}
      </Show>
    </section>
  );
}

function Workspace() {
  const [client, setClient] = useState(workspace);
  const [id, setId] = useState('');
  const [token, setToken] = useState('');
  return (
    <section aria-labelledby="ws-title">
      <h2 id="ws-title">API keys (workspace credentials)</h2>
      {client ? (
        <>
          <ApiKeys client={client} />
          <Tokens client={client} />
        </>
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            setClient(unlockWorkspace(id.trim(), token.trim()));
          }}
        >
          <label for="ws-id">Workspace id</label>
          <input id="ws-id" value={id} onInput={(e) => setId(e.currentTarget.value)} autoComplete="off" required />
          <label for="ws-token">Workspace auth token</label>
          <input id="ws-token" type="password" value={token} onInput={(e) => setToken(e.currentTarget.value)} autoComplete="off" required />
          <button type="submit">Unlock</button>
        </form>
      )}
    </section>
  );
}

function Projections({ admin }: { admin: CollabClient }) {
  const st = useLoad(() => admin.call('/v2/admin/projections/get', {}), []);
  return (
    <section aria-labelledby="proj-title">
      <h2 id="proj-title">Projections</h2>
      <Show loaded={st}>
        {({ data }) => (
          <>
            <p>
              Read models generation {data.generation}; log head <code>{data.head || '(empty)'}</code>; parked events {data.parked}.
            </p>
            <div class="scroll">
              <table>
                <caption class="sr-only">Projection checkpoints and lag</caption>
                <thead>
                  <tr>
                    <th scope="col">Projection</th>
                    <th scope="col">Checkpoint</th>
                    <th scope="col">Lag (events)</th>
                  </tr>
                </thead>
                <tbody>
                  {[...data.projections, data.webhooks].map((p) => (
                    <tr key={p.name} data-projection={p.name}>
                      <td>{p.name}</td>
                      <td>
                        <code>{p.checkpoint ?? '(none)'}</code>
                      </td>
                      <td>{`${p.lagCapped ? '>' : ''}${p.lag}`}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </>
        )}
      </Show>
    </section>
  );
}

function Parked({ admin }: { admin: CollabClient }) {
  const rows = useLoad(() => admin.call('/v2/admin/parked/get', {}), []);
  return (
    <section aria-labelledby="parked-title">
      <h2 id="parked-title">Parked events</h2>
      <Show loaded={rows}>
        {({ data }) =>
          data.length === 0 ? (
            <p class="muted">No parked event.</p>
          ) : (
            <div class="scroll">
              <table class="parked">
                <caption class="sr-only">Parked events</caption>
                <thead>
                  <tr>
                    <th scope="col">Event</th>
                    <th scope="col">Follower</th>
                    <th scope="col">Parked</th>
                    <th scope="col">Attempts</th>
                    <th scope="col">Error</th>
                    <th scope="col">Actions</th>
                  </tr>
                </thead>
                <tbody>
                  {data.map((p) => (
                    <tr key={p.id} data-parked={p.id}>
                      <td>
                        {p.eventType} on <code>{p.stream}</code>
                      </td>
                      <td>{p.follower}</td>
                      <td>
                        <code>{when(p.parkedAt)}</code>
                      </td>
                      <td data-attempts>{p.attempts}</td>
                      <td>
                        <pre>{p.error}</pre>
                      </td>
                      <td>
                        <Confirm
                          label="Retry"
                          name={`Retry ${p.id}`}
                          question={`Apply ${p.eventType} to ${p.follower} again?`}
                          run={async () => {
                            // A retry that fails again counts an attempt and keeps the new error: show both.
                            try {
                              await admin.call('/v2/admin/parked/retry', { id: p.id });
                            } finally {
                              rows.reload();
                            }
                          }}
                          done={rows.reload}
                        />
                        <Confirm label="Skip" name={`Skip ${p.id}`} danger question={`Skip ${p.eventType} for ${p.follower}? It stops counting as parked; rebuilding the read models replays it.`} run={async () => void (await admin.call('/v2/admin/parked/skip', { id: p.id }))} done={rows.reload} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Show>
    </section>
  );
}

function Operator() {
  const [admin, setAdmin] = useState(operator);
  const [token, setToken] = useState('');
  if (admin) {
    return (
      <>
        <Projections admin={admin} />
        <Parked admin={admin} />
        <button
          type="button"
          onClick={() => {
            lockOperator();
            setAdmin(null);
          }}
        >
          Forget the admin token
        </button>
      </>
    );
  }
  return (
    <section aria-labelledby="admin-title">
      <h2 id="admin-title">Operator (admin token)</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setAdmin(unlockOperator(token.trim()));
        }}
      >
        <label for="admin-token">Admin token</label>
        <input id="admin-token" type="password" value={token} onInput={(e) => setToken(e.currentTarget.value)} autoComplete="off" required />
        <button type="submit">Unlock operations</button>
      </form>
    </section>
  );
}

export function Ops({ client }: { client: CollabClient }) {
  return (
    <div>
      <h1>Operations</h1>
      <Operator />
      <Deliveries client={client} />
      <Workspace />
    </div>
  );
}
