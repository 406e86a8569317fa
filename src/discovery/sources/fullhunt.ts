/**
 * FullHunt: `GET /api/v1/domain/<domain>/subdomains` with the key in `X-API-KEY` answers `{domain,
 * hosts: [<name>, …], message, metadata, status}`.
 */
import { field, type PassiveSource, stringsOf } from "./source.ts";

export const fullhunt: PassiveSource = {
  id: "fullhunt",
  consumes: ["Domain"],
  async query({ target, key, client, add }) {
    const { value } = await client.json<unknown>({
      path: `/api/v1/domain/${encodeURIComponent(target)}/subdomains`,
      headers: { "x-api-key": key },
    });
    const hosts = field(value, "hosts");
    if (!Array.isArray(hosts)) throw new Error("FullHunt's answer has no hosts list");
    add(stringsOf(hosts));
  },
};
