/**
 * Censys Search v2 certificates: `POST /api/v2/certificates/search` with `{q: "names: <domain>",
 * per_page: 100, cursor}` and HTTP basic authentication (`<API ID>:<secret>`) answers `{code, status,
 * result: {hits: [{names: […]}], links: {next}}}`; an empty `next` is the last page.
 */
import { field, type PassiveSource, stringsOf } from "./source.ts";

export const censys: PassiveSource = {
  id: "censys",
  consumes: ["Domain"],
  async query({ target, key, client, add, maxPages }) {
    let cursor = "";
    for (let page = 0; page < maxPages; page++) {
      const { value } = await client.json<unknown>({
        path: "/api/v2/certificates/search",
        method: "POST",
        headers: { authorization: `Basic ${Buffer.from(key).toString("base64")}` },
        body: JSON.stringify({ q: `names: ${target}`, per_page: 100, ...(cursor ? { cursor } : {}) }),
      });
      const result = field(value, "result");
      const hits = field(result, "hits");
      if (!Array.isArray(hits)) throw new Error("Censys's answer has no result.hits list");
      const names = hits.flatMap((hit) => stringsOf(field(hit, "names")));
      const next = field(field(result, "links"), "next");
      if (!add(names) || typeof next !== "string" || next === "") return;
      cursor = next;
    }
  },
};
