/** How a page says it is loading, empty, or failed — always in words, never a blank area. */
import type { ComponentChildren } from "preact";
import { isMissingEndpoint, sentence } from "../api.ts";

export function Loading({ what }: { what: string }) {
  return (
    <p class="notice" role="status" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function ErrorNote({ error, onRetry }: { error: unknown; onRetry?: () => void }) {
  return (
    <div class="notice error" role="alert">
      <p>{sentence(error)}</p>
      {isMissingEndpoint(error) && (
        <p class="hint">This server does not offer that yet; an update of Sightline will.</p>
      )}
      {onRetry && !isMissingEndpoint(error) && (
        <button type="button" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <div class="notice empty">{children}</div>;
}
