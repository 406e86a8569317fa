/**
 * ThreatMiner: `GET /v2/domain.php?q=<domain>&rt=5` (subdomains) answers `{status_code, status_message,
 * results}`; `status_code` "404" means no results, "200" results.
 */
import { SourceFailure } from "../net/source-client.ts";
import { field, type PassiveSource, stringsOf } from "./source.ts";

export const threatminer: PassiveSource = {
  id: "threatminer",
  consumes: ["Domain"],
  async query({ target, client, add }) {
    const { value } = await client.json<unknown>({ path: "/v2/domain.php", query: { q: target, rt: 5 } });
    const code = String(field(value, "status_code") ?? "");
    if (code === "404") return;
    if (code !== "200") throw new SourceFailure(`refused: status_code ${code || "missing"}`);
    add(stringsOf(field(value, "results")));
  },
};
