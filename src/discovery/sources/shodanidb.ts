/**
 * Shodan InternetDB: `GET /<address>` answers `{ip, ports, hostnames, cpes, tags, vulns}`, or 404
 * `{"detail": "No information available"}` for an address it does not know. Its host names are names;
 * ports, CPEs and tags are what Shodan saw, recorded on the address (Sightline's own scan proves ports).
 */
import { field, type PassiveSource, stringsOf } from "./source.ts";

export const shodanidb: PassiveSource = {
  id: "shodanidb",
  consumes: ["IpAddress"],
  async query({ target, client, add, detail }) {
    const { status, value } = await client.json<unknown>(
      { path: `/${encodeURIComponent(target)}` },
      (s) => s === 404,
    );
    if (status === 404) return;
    const ports = field(value, "ports");
    detail({
      internetdb: {
        ports: Array.isArray(ports) ? ports.filter((port) => Number.isInteger(port)).slice(0, 1000) : [],
        cpes: stringsOf(field(value, "cpes")).slice(0, 200),
        tags: stringsOf(field(value, "tags")).slice(0, 50),
      },
    });
    add(stringsOf(field(value, "hostnames")));
  },
};
