/**
 * SecurityTrails: `GET /v1/domain/<domain>/subdomains?children_only=false` with the key in `APIKEY`
 * answers `{subdomains: ["www", …], subdomain_count}`: labels under the domain.
 */
import { field, type PassiveSource, stringsOf, underDomain } from "./source.ts";

export const securitytrails: PassiveSource = {
  id: "securitytrails",
  consumes: ["Domain"],
  async query({ target, key, client, add }) {
    const { value } = await client.json<unknown>({
      path: `/v1/domain/${encodeURIComponent(target)}/subdomains`,
      query: { children_only: "false" },
      headers: { apikey: key },
    });
    add(underDomain(stringsOf(field(value, "subdomains")), target));
  },
};
