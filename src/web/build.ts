/**
 * Builds the dashboard: `npm run build:web`, and npm's `prepare` step so that `npm ci` of a fresh
 * clone leaves a server ready to serve it. An installation without development dependencies has no
 * Vite: it says so and carries on, and the server explains the missing dashboard at `/`.
 */
import { fileURLToPath } from "node:url";

type Vite = typeof import("vite");

async function loadVite(): Promise<Vite | undefined> {
  try {
    return await import("vite");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ERR_MODULE_NOT_FOUND") return undefined;
    throw error;
  }
}

/** Runs Vite's production build with the dashboard's configuration; false when Vite is not installed. */
export async function buildDashboard(): Promise<boolean> {
  const vite = await loadVite();
  if (!vite) return false;
  await vite.build({ configFile: fileURLToPath(new URL("vite.config.ts", import.meta.url)) });
  return true;
}

if (import.meta.main) {
  if (await buildDashboard()) {
    console.log("Built the dashboard into src/web/dist.");
  } else {
    console.warn(
      "Vite is not installed (no development dependencies), so the dashboard was not built; run `npm run build:web` where they are installed.",
    );
  }
}
