/**
 * Operations: webhook deliveries of the signed-in API key (their attempts and last error),
 * and, with the workspace's credentials (kept in this tab's memory only), the key's auth tokens.
 */
import { useState } from 'preact/hooks';
import { currentApiKey, unlockWorkspace, workspace, type CollabClient } from '../api.js';
import { Show, useLoad, when } from '../ui.js';

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
                    <td>{d.attempts[d.attempts.length - 1]?.error ?? ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Show>
    </section>
  );
}

function Tokens({ client }: { client: CollabClient }) {
  const apiKey = currentApiKey() ?? '';
  const tokens = useLoad(() => client.call('/v2/workspace/authtokens/get', { apiKey }), [apiKey]);
  return (
    <Show loaded={tokens}>
      {(res) => (
        <ul class="list">
          {res.data.authTokens.map((t) => (
            <li key={t.tokenId}>
              {t.name} <code>{t.tokenId}</code> created {when(t.createdAt)}
            </li>
          ))}
        </ul>
      )}
    </Show>
  );
}

function Workspace() {
  const [client, setClient] = useState(workspace);
  const [id, setId] = useState('');
  const [token, setToken] = useState('');
  return (
    <section aria-labelledby="ws-title">
      <h2 id="ws-title">API key tokens (workspace credentials)</h2>
      {client ? (
        <Tokens client={client} />
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

export function Ops({ client }: { client: CollabClient }) {
  return (
    <div>
      <h1>Operations</h1>
      <Deliveries client={client} />
      <Workspace />
    </div>
  );
}
