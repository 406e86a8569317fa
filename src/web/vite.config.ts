/**
 * Builds the dashboard into src/web/dist, which the API process serves (src/api/web.ts). Preact through
 * Oxc's automatic JSX runtime; `node:url` is swapped for a browser twin so the dashboard detects seed
 * types with the very code the API validates them with (src/core/seeds.ts).
 */
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const api = process.env.SIGHTLINE_URL ?? "http://127.0.0.1:8080";

export default defineConfig({
  root: here("."),
  base: "/",
  publicDir: here("public"),
  logLevel: "warn",
  resolve: { alias: { "node:url": here("shims/node-url.ts") } },
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: here("dist"),
    emptyOutDir: true,
    target: "es2022",
    // The server's Content-Security-Policy forbids inline scripts: keep everything in files.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
  // `npx vite -c src/web/vite.config.ts` for development, next to a running `npm start`.
  server: { proxy: { "/api": api, "/docs": api, "/healthz": api } },
});
