/**
 * Subdomain takeovers in the lab (not in the default world: `startLab({ world: takeoverWorld })`). The
 * lab's name server also serves two zones of shared services, as the services answer them:
 * - `github.io`: `globex.github.io` and `globex-assets.github.io` both resolve to one lab host, which answers
 *   like GitHub Pages does, by the Host header: a site for the names a repository claims
 *   (`globex.github.io`, and the custom domain `help.globex.test`), the "There isn't a GitHub Pages site
 *   here." 404 for every other name;
 * - `azurewebsites.net`: empty, so a released app name is NXDOMAIN.
 * In `globex.test`: `assets` CNAME `globex-assets.github.io` (unclaimed: a takeover), `help` CNAME
 * `globex.github.io` (claimed: the twin that must not be raised), `media` CNAME
 * `globex-legacy.azurewebsites.net` (NXDOMAIN at a service whose names anyone can register: a takeover).
 * `old.acme.test` stays a dangling CNAME into `cloudapp.test`, which no takeover fingerprint names.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { LabWorld } from "./types.ts";
import { defaultWorld } from "./world.ts";

/** The names the lab's "GitHub Pages" serves a site for. */
const CLAIMED = new Set(["globex.github.io", "help.globex.test"]);

export const UNCLAIMED_PAGE =
  '<!DOCTYPE html>\n<html><head><title>Site not found &middot; GitHub Pages</title></head><body><div class="container"><h1>404</h1><p><strong>There isn\'t a GitHub Pages site here.</strong></p></div></body></html>\n';

function pages(request: IncomingMessage, response: ServerResponse): void {
  const host = (request.headers.host ?? "").split(":")[0].toLowerCase();
  if (CLAIMED.has(host)) {
    response.writeHead(200, { "content-type": "text/html; charset=utf-8", server: "GitHub.com" });
    response.end(
      "<!DOCTYPE html>\n<html><head><title>Globex Pages</title></head><body><h1>Globex Pages</h1></body></html>\n",
    );
    return;
  }
  response.writeHead(404, { "content-type": "text/html; charset=utf-8", server: "GitHub.com" });
  response.end(request.method === "HEAD" ? undefined : UNCLAIMED_PAGE);
}

export function takeoverWorld(base: string): LabWorld {
  const world = defaultWorld(base);
  const globex = world.zones.find((zone) => zone.name === "globex.test");
  if (!globex) throw new Error("the default world has no globex.test zone");
  return {
    ...world,
    zones: [
      ...world.zones.filter((zone) => zone !== globex),
      {
        ...globex,
        records: [
          ...globex.records,
          { name: "assets.globex.test", type: "CNAME", data: "globex-assets.github.io" },
          { name: "help.globex.test", type: "CNAME", data: "globex.github.io" },
          { name: "media.globex.test", type: "CNAME", data: "globex-legacy.azurewebsites.net" },
        ],
      },
      { name: "github.io", records: [] },
      { name: "azurewebsites.net", records: [] },
    ],
    hosts: [
      ...world.hosts,
      {
        ip: `${base}.5.10`,
        names: ["globex.github.io", "globex-assets.github.io"],
        ptr: null,
        services: [
          {
            kind: "http",
            port: 80,
            server: "GitHub.com",
            title: "Site not found · GitHub Pages",
            handler: pages,
            expect: { products: [], issues: [] },
          },
        ],
      },
    ],
    bruteforceWords: [...world.bruteforceWords, "assets", "help", "media"],
  };
}
