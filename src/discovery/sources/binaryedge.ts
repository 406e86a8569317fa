/**
 * BinaryEdge v2: `GET /v2/query/domains/subdomain/<domain>?page=N` with the key in `X-Key` answers
 * `{query, page, pagesize, total, events: [<name>, …]}`; pages go on while `page * pagesize < total`.
 */
import { field, type PassiveSource, stringsOf } from "./source.ts";

export const binaryedge: PassiveSource = {
  id: "binaryedge",
  consumes: ["Domain"],
  async query({ target, key, client, add, maxPages }) {
    for (let page = 1; page <= maxPages; page++) {
      const { value } = await client.json<unknown>({
        path: `/v2/query/domains/subdomain/${encodeURIComponent(target)}`,
        query: { page },
        headers: { "x-key": key },
      });
      const events = field(value, "events");
      if (!Array.isArray(events)) throw new Error("BinaryEdge's answer has no events list");
      const total = Number(field(value, "total") ?? 0);
      const size = Number(field(value, "pagesize") ?? 100);
      if (!add(stringsOf(events)) || events.length === 0 || page * size >= total) return;
    }
  },
};
