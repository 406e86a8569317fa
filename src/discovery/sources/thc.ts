/**
 * THC's subdomain API (ip.thc.org): `POST /api/v1/lookup/subdomains` with `{"domain", "limit",
 * "page_state"}` answers `{"domains": [{"domain": …}], "page_state": …}`; an empty `page_state` is the
 * last page.
 */
import { field, type PassiveSource } from "./source.ts";

export const thc: PassiveSource = {
  id: "thc",
  consumes: ["Domain"],
  async query({ target, client, add, maxPages }) {
    let state = "";
    for (let page = 0; page < maxPages; page++) {
      const { value } = await client.json<unknown>({
        path: "/api/v1/lookup/subdomains",
        method: "POST",
        body: JSON.stringify({ domain: target, limit: 1000, page_state: state }),
      });
      const domains = field(value, "domains");
      if (!Array.isArray(domains)) throw new Error("THC's answer has no domains list");
      const names = domains
        .map((entry) => field(entry, "domain"))
        .filter((n): n is string => typeof n === "string");
      const next = field(value, "page_state");
      if (!add(names) || typeof next !== "string" || next === "" || domains.length === 0) return;
      state = next;
    }
  },
};
