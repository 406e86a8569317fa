/**
 * A small history-API router: the dashboard's paths are real URLs (the server answers index.html for
 * them), so a reload or a shared link opens the same page.
 */
import { useEffect, useState } from "preact/hooks";

export interface Location {
  path: string;
  query: URLSearchParams;
}

const listeners = new Set<() => void>();

function current(): Location {
  return { path: window.location.pathname, query: new URLSearchParams(window.location.search) };
}

export function navigate(to: string, options: { replace?: boolean } = {}) {
  if (to === window.location.pathname + window.location.search) return;
  if (options.replace) window.history.replaceState(null, "", to);
  else window.history.pushState(null, "", to);
  for (const listener of listeners) listener();
}

export function useLocation(): Location {
  const [location, setLocation] = useState(current);
  useEffect(() => {
    const update = () => setLocation(current());
    listeners.add(update);
    window.addEventListener("popstate", update);
    return () => {
      listeners.delete(update);
      window.removeEventListener("popstate", update);
    };
  }, []);
  return location;
}

/** Left clicks on same-origin links navigate in place; modified clicks keep the browser's behaviour. */
export function interceptLinks(root: HTMLElement) {
  root.addEventListener("click", (event) => {
    if (
      event.defaultPrevented ||
      event.button !== 0 ||
      event.metaKey ||
      event.ctrlKey ||
      event.shiftKey ||
      event.altKey
    )
      return;
    const anchor = (event.target as Element).closest("a");
    if (
      !anchor ||
      anchor.target ||
      anchor.hasAttribute("download") ||
      anchor.origin !== window.location.origin
    )
      return;
    if (anchor.getAttribute("href")?.startsWith("#")) return;
    if (/^\/(api|docs|healthz)(\/|$)/.test(anchor.pathname)) return;
    event.preventDefault();
    navigate(anchor.pathname + anchor.search);
  });
}

/** `/collections/acme/issues` → `{ name: "acme", tab: "issues" }` for the pattern `/collections/:name/:tab`. */
export function match(pattern: string, path: string): Record<string, string> | undefined {
  const parts = pattern.split("/").filter(Boolean);
  const segments = path.split("/").filter(Boolean);
  if (parts.length !== segments.length) return undefined;
  const params: Record<string, string> = {};
  for (const [index, part] of parts.entries()) {
    const segment = segments[index];
    if (part.startsWith(":")) {
      try {
        params[part.slice(1)] = decodeURIComponent(segment);
      } catch {
        return undefined;
      }
    } else if (part !== segment) return undefined;
  }
  return params;
}
