/**
 * VirusTotal API v3: `GET /api/v3/domains/<domain>/subdomains?limit=40` with the key in `x-apikey`
 * answers `{data: [{id: <name>, type: "domain"}], meta: {cursor}}`; the next page is asked with
 * `cursor=`, until none is given.
 */
import { field, type PassiveSource } from "./source.ts";

export const virustotal: PassiveSource = {
  id: "virustotal",
  consumes: ["Domain"],
  async query({ target, key, client, add, maxPages }) {
    let cursor: string | undefined;
    for (let page = 0; page < maxPages; page++) {
      const { value } = await client.json<unknown>({
        path: `/api/v3/domains/${encodeURIComponent(target)}/subdomains`,
        query: { limit: 40, cursor },
        headers: { "x-apikey": key },
      });
      const data = field(value, "data");
      if (!Array.isArray(data)) throw new Error("VirusTotal's answer has no data list");
      const names = data
        .map((item) => field(item, "id"))
        .filter((id): id is string => typeof id === "string");
      const next = field(field(value, "meta"), "cursor");
      if (!add(names) || typeof next !== "string" || next === "") return;
      cursor = next;
    }
  },
};
