/**
 * Netlas: `GET /api/domains/?q=domain:*.<domain>&start=N` with the key in `X-API-Key` answers
 * `{items: [{data: {domain}}]}`, 20 a page; the next page starts 20 further, until a page is short.
 */
import { field, type PassiveSource } from "./source.ts";

const PAGE = 20;

export const netlas: PassiveSource = {
  id: "netlas",
  consumes: ["Domain"],
  async query({ target, key, client, add, maxPages }) {
    for (let page = 0; page < maxPages; page++) {
      const { value } = await client.json<unknown>({
        path: "/api/domains/",
        query: { q: `domain:*.${target}`, start: page * PAGE, fields: "domain" },
        headers: { "x-api-key": key },
      });
      const items = field(value, "items");
      if (!Array.isArray(items)) throw new Error("Netlas's answer has no items list");
      const names = items
        .map((item) => field(field(item, "data"), "domain"))
        .filter((n): n is string => typeof n === "string");
      if (!add(names) || items.length < PAGE) return;
    }
  },
};
