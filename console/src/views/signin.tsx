/**
 * Sign in with an API key and its auth token. The fields are a form the page handles itself
 * (never submitted to a URL: `form-action 'none'` in the CSP would refuse it anyway).
 */
import { useState } from 'preact/hooks';
import { messageOf, signIn, signOut } from '../api.js';
import { navigate } from '../route.js';
import { Failure } from '../ui.js';

export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [apiKey, setApiKey] = useState('');
  const [authToken, setAuthToken] = useState('');
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      // A cheap call that needs the key: wrong credentials are refused here, not in a view.
      await signIn({ apiKey: apiKey.trim(), authToken: authToken.trim() }).call('/v2/organizations/get', { pageSize: 1 });
      onSignedIn();
      navigate({ view: 'orgs' });
    } catch (err) {
      signOut();
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="signin">
      <h1>Sign in</h1>
      <p class="muted">The credentials stay in this tab (its session storage) and are sent only to this service.</p>
      <form onSubmit={(e) => void submit(e)}>
        <label for="apiKey">API key</label>
        <input id="apiKey" name="apiKey" autoComplete="off" required value={apiKey} onInput={(e) => setApiKey(e.currentTarget.value)} />
        <label for="authToken">Auth token</label>
        <input id="authToken" name="authToken" type="password" autoComplete="off" required value={authToken} onInput={(e) => setAuthToken(e.currentTarget.value)} />
        <button type="submit" class="primary" disabled={busy}>
          Sign in
        </button>
      </form>
      <Failure message={error} />
    </div>
  );
}
