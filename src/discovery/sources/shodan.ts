/**
 * Shodan's DNS API: `GET /dns/domain/<domain>?key=<key>&page=N` answers `{domain, subdomains: ["www",
 * …], data: [...], more}`; `more: true` asks for the next page.
 */
import { field, type PassiveSource, stringsOf, underDomain } from "./source.ts";

export const shodan: PassiveSource = {
  id: "shodan",
  consumes: ["Domain"],
  async query({ target, key, client, add, maxPages }) {
    for (let page = 1; page <= maxPages; page++) {
      const { value } = await client.json<unknown>({
        path: `/dns/domain/${encodeURIComponent(target)}`,
        query: { key, page },
      });
      const labels = field(value, "subdomains");
      if (!Array.isArray(labels)) throw new Error("Shodan's answer has no subdomains list");
      if (!add(underDomain(stringsOf(labels), target)) || field(value, "more") !== true) return;
    }
  },
};
