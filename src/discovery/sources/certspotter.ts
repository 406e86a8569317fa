/**
 * Cert Spotter's issuances API: `GET /v1/issuances?domain=<d>&include_subdomains=true&expand=dns_names`
 * answers a JSON array of issuances with `id` and `dns_names`; the next page is asked with
 * `after=<last id>` until a page is empty. A key, when set, goes as a bearer token.
 */
import { field, type PassiveSource, stringsOf } from "./source.ts";

export const certspotter: PassiveSource = {
  id: "certspotter",
  consumes: ["Domain"],
  async query({ target, key, client, add, maxPages }) {
    let after: string | undefined;
    for (let page = 0; page < maxPages; page++) {
      const { value } = await client.json<unknown[]>({
        path: "/v1/issuances",
        query: { domain: target, include_subdomains: "true", expand: "dns_names", after },
        headers: key ? { authorization: `Bearer ${key}` } : {},
      });
      if (!Array.isArray(value)) throw new Error("Cert Spotter answered something other than a JSON array");
      if (value.length === 0) return;
      for (const issuance of value) if (!add(stringsOf(field(issuance, "dns_names")))) return;
      const last = field(value[value.length - 1], "id");
      if (typeof last !== "string" && typeof last !== "number") return;
      after = String(last);
    }
  },
};
