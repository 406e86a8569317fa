/** `npm run docs:config`: writes docs/configuration.md from the configuration's schema. */
import { writeFileSync } from "node:fs";
import { configurationDocument } from "../core/config.ts";

export const CONFIGURATION_DOCUMENT = new URL("../../docs/configuration.md", import.meta.url);

if (import.meta.main) {
  writeFileSync(CONFIGURATION_DOCUMENT, configurationDocument());
  console.log("Wrote docs/configuration.md.");
}
