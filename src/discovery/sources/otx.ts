/**
 * AlienVault OTX: `GET /api/v1/indicators/domain/<domain>/passive_dns` with the key in
 * `X-OTX-API-KEY` answers `{passive_dns: [{hostname, address, record_type, first, last}], count}`.
 */
import { field, type PassiveSource } from "./source.ts";

export const otx: PassiveSource = {
  id: "otx",
  consumes: ["Domain"],
  async query({ target, key, client, add }) {
    const { value } = await client.json<unknown>({
      path: `/api/v1/indicators/domain/${encodeURIComponent(target)}/passive_dns`,
      headers: { "x-otx-api-key": key },
    });
    const records = field(value, "passive_dns");
    if (!Array.isArray(records)) throw new Error("OTX's answer has no passive_dns list");
    add(records.map((record) => field(record, "hostname")).filter((n): n is string => typeof n === "string"));
  },
};
