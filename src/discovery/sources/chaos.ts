/**
 * ProjectDiscovery Chaos: `GET /dns/<domain>/subdomains` with the key in `Authorization` answers
 * `{domain, subdomains: ["www", …], count}`.
 */
import { field, type PassiveSource, stringsOf, underDomain } from "./source.ts";

export const chaos: PassiveSource = {
  id: "chaos",
  consumes: ["Domain"],
  async query({ target, key, client, add }) {
    const { value } = await client.json<unknown>({
      path: `/dns/${encodeURIComponent(target)}/subdomains`,
      headers: { authorization: key },
    });
    add(underDomain(stringsOf(field(value, "subdomains")), target));
  },
};
