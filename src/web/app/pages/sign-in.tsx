/**
 * Sign-in with an access/secret key pair. The pair is checked by asking the API for the user's
 * collections; a refusal shows the API's own sentence. The pair is kept for this browser session only.
 */
import { useState } from "preact/hooks";
import { call, type Keys, sentence } from "../api.ts";
import { Page } from "../page.tsx";

export function SignIn({ reason, onSignedIn }: { reason?: string; onSignedIn: (keys: Keys) => void }) {
  const [accessKey, setAccessKey] = useState("");
  const [secretKey, setSecretKey] = useState("");
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    const keys = { accessKey: accessKey.trim(), secretKey: secretKey.trim() };
    if (!keys.accessKey || !keys.secretKey) {
      setError("Enter both your access key and your secret key.");
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      await call("GET", "/api/collections", { keys });
      onSignedIn(keys);
    } catch (failure) {
      setError(sentence(failure));
      setBusy(false);
    }
  };

  return (
    <div class="sign-in">
      <p class="brand-line">
        <img src="/favicon.svg" alt="" width="32" height="32" /> Sightline
      </p>
      <Page title="Sign in">
        <p>
          Sign in with an API key pair. It is kept only for this browser session and sent with each request.
        </p>
        {reason && !error && (
          <p class="notice" role="status">
            {reason}
          </p>
        )}
        <form onSubmit={submit} noValidate aria-describedby={error ? "sign-in-error" : undefined}>
          <label for="access-key">Access key</label>
          <input
            id="access-key"
            name="access-key"
            autocomplete="username"
            spellcheck={false}
            value={accessKey}
            onInput={(event) => setAccessKey((event.target as HTMLInputElement).value)}
            aria-invalid={error ? "true" : undefined}
            required
          />
          <label for="secret-key">Secret key</label>
          <input
            id="secret-key"
            name="secret-key"
            type="password"
            autocomplete="current-password"
            value={secretKey}
            onInput={(event) => setSecretKey((event.target as HTMLInputElement).value)}
            aria-invalid={error ? "true" : undefined}
            required
          />
          {error && (
            <p id="sign-in-error" class="notice error" role="alert">
              {error}
            </p>
          )}
          <button type="submit" class="primary" disabled={busy}>
            {busy ? "Checking…" : "Sign in"}
          </button>
        </form>
        <p class="hint">
          No keys? The first start of the server prints the administrator's pair;{" "}
          <code>sightline keys create &lt;user&gt;</code> issues more. The API itself is described at{" "}
          <a href="/docs">/docs</a>.
        </p>
      </Page>
    </div>
  );
}
