/**
 * LeakIX: `GET /api/subdomains/<domain>` with the key in `api-key` and `Accept: application/json`
 * answers `[{subdomain, distinct_ips, last_seen}]`.
 */
import { field, type PassiveSource } from "./source.ts";

export const leakix: PassiveSource = {
  id: "leakix",
  consumes: ["Domain"],
  async query({ target, key, client, add }) {
    const { value } = await client.json<unknown>({
      path: `/api/subdomains/${encodeURIComponent(target)}`,
      headers: { "api-key": key, accept: "application/json" },
    });
    if (!Array.isArray(value)) throw new Error("LeakIX answered something other than a JSON array");
    add(value.map((entry) => field(entry, "subdomain")).filter((n): n is string => typeof n === "string"));
  },
};
