/**
 * The dashboard: the files Vite built into src/web/dist, served by the API's own process. Every GET
 * outside /api, /docs and /healthz that is not a built file answers index.html, so the dashboard's own
 * paths (/collections/acme/issues) survive a reload. The dashboard talks to the public API only.
 */
import { stat } from "node:fs/promises";
import { resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance, FastifyReply } from "fastify";
import { decodedPath } from "./auth.ts";

export const WEB_ROOT = fileURLToPath(new URL("../web/dist/", import.meta.url));

/** Paths that belong to the API, its reference and operations, never to the dashboard. */
const NOT_DASHBOARD = /^\/(api|docs|healthz|metrics)(\/|$)/;

/**
 * The dashboard only loads its own files and talks to its own origin; the secret key sits in
 * sessionStorage, so no third-party script or frame may ever run beside it.
 */
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

const MISSING_BUILD = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sightline — dashboard not built</title></head>
<body>
<h1>The dashboard has not been built</h1>
<p>This server has no built dashboard in <code>src/web/dist</code>. <code>npm ci</code> builds it (its
<code>prepare</code> script); on an installation without development dependencies, build it once with
<code>npm run build:web</code> on a machine that has them and copy <code>src/web/dist</code> over.</p>
<p>The API works without it: see <a href="/docs">/docs</a>.</p>
</body></html>
`;

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/** The built file a URL path names, if it lies inside the web root and exists. */
async function builtFile(root: string, pathname: string): Promise<string | undefined> {
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    return undefined;
  }
  if (decoded.includes("\0")) return undefined;
  const file = resolve(root, `.${decoded}`);
  if (!file.startsWith(root.endsWith(sep) ? root : root + sep)) return undefined;
  return (await isFile(file)) ? file.slice(root.length).replace(/^[\\/]/, "") : undefined;
}

export interface WebOptions {
  /** Folder of the built dashboard (tests point it elsewhere). */
  root?: string;
}

export async function webRoutes(app: FastifyInstance, options: WebOptions = {}) {
  const root = resolve(options.root ?? WEB_ROOT);
  // serve: false — only reply.sendFile, so the routes below decide what is the dashboard.
  await app.register(fastifyStatic, { serve: false, decorateReply: true });

  const sendIndex = async (reply: FastifyReply) => {
    reply.headers(SECURITY_HEADERS);
    if (!(await isFile(resolve(root, "index.html")))) {
      return reply.status(503).type("text/html; charset=utf-8").send(MISSING_BUILD);
    }
    // index.html names the hashed bundles of the current build: never cache it.
    return reply.header("cache-control", "no-cache").sendFile("index.html", root, { cacheControl: false });
  };

  // Unknown GETs under /api stay the API's: as an /api route they pass authentication first (no keys,
  // 401; with keys, 404), so probing without keys learns nothing, exactly as for other methods.
  app.get("/api/*", { schema: { hide: true } }, async (_request, reply) => reply.callNotFound());

  app.get("/*", { schema: { hide: true } }, async (request, reply) => {
    const pathname = request.url.split("?")[0];
    // Decoded as the router does, so `/%61pi/x` is not taken for the dashboard's.
    if (NOT_DASHBOARD.test(decodedPath(request.url))) return reply.callNotFound();
    const file = pathname === "/" ? undefined : await builtFile(root, pathname);
    if (!file || file === "index.html") return sendIndex(reply);
    reply.headers(SECURITY_HEADERS);
    // Vite names the bundles by content hash: they never change under the same name.
    const hashed = file.startsWith("assets/");
    return reply.sendFile(file, root, { immutable: hashed, maxAge: hashed ? "365d" : 0 });
  });
}
