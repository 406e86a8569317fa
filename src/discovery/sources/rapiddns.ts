/**
 * RapidDNS: `GET /subdomain/<domain>?full=1&page=N` answers an HTML page whose result table has a row
 * per record, the name in its first cell; a page without rows ends the paging.
 */
import type { PassiveSource } from "./source.ts";

const ROW = /<tr>\s*<th[^>]*>\s*\d+\s*<\/th>\s*<td>\s*([^<\s]+)\s*<\/td>/gi;

export const rapiddns: PassiveSource = {
  id: "rapiddns",
  consumes: ["Domain"],
  async query({ target, client, add, maxPages }) {
    for (let page = 1; page <= maxPages; page++) {
      const { text } = await client.text({
        path: `/subdomain/${encodeURIComponent(target)}`,
        query: { full: 1, page },
      });
      const names = [...text.matchAll(ROW)].map((match) => match[1]!);
      if (names.length === 0 || !add(names)) return;
    }
  },
};
