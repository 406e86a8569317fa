/** Every migration, in the order it runs. Add new ones at the end; never edit one that has shipped. */
import { accountsAndCollections } from "./001-accounts-collections.ts";
import { runs } from "./002-runs.ts";
import { entities } from "./003-entities.ts";
import { vulnerabilityDatabase } from "./004-vulndb.ts";
import { auditLog } from "./005-audit.ts";
import { stagedLookup } from "./006-staged-lookup.ts";
import { webhooks } from "./007-webhooks.ts";
import { resultHistory } from "./008-result-history.ts";
import { runConnections } from "./009-run-connections.ts";
import { findingsByEntity } from "./010-findings-by-entity.ts";
import { stagedMergeOrder } from "./011-staged-merge-order.ts";
import { runSettingsAndNoteKinds } from "./012-run-settings-note-kinds.ts";
import { findingEndpoints } from "./013-finding-endpoints.ts";
import { runWorkers } from "./014-run-workers.ts";
import { findingTexts } from "./015-finding-texts.ts";
import { stagedFindingsOrder } from "./016-staged-findings-order.ts";
import { compressedJson } from "./017-compressed-json.ts";
import { stagingIndexPrefixes } from "./018-staging-index-prefixes.ts";
import { stagedServicesByAddress } from "./019-staged-services-by-address.ts";
import { unloggedWorkingTables } from "./020-unlogged-working-tables.ts";
import { collectionScanProfiles } from "./021-collection-scan-profiles.ts";
import { runSources } from "./022-run-sources.ts";
import type { DialectMigration } from "./helpers.ts";

export const migrations: Record<string, DialectMigration> = {
  "001-accounts-collections": accountsAndCollections,
  "002-runs": runs,
  "003-entities": entities,
  "004-vulndb": vulnerabilityDatabase,
  "005-audit": auditLog,
  "006-staged-lookup": stagedLookup,
  "007-webhooks": webhooks,
  "008-result-history": resultHistory,
  "009-run-connections": runConnections,
  "010-findings-by-entity": findingsByEntity,
  "011-staged-merge-order": stagedMergeOrder,
  "012-run-settings-note-kinds": runSettingsAndNoteKinds,
  "013-finding-endpoints": findingEndpoints,
  "014-run-workers": runWorkers,
  "015-finding-texts": findingTexts,
  "016-staged-findings-order": stagedFindingsOrder,
  "017-compressed-json": compressedJson,
  "018-staging-index-prefixes": stagingIndexPrefixes,
  "019-staged-services-by-address": stagedServicesByAddress,
  "020-unlogged-working-tables": unloggedWorkingTables,
  "021-collection-scan-profiles": collectionScanProfiles,
  "022-run-sources": runSources,
};

/** The migration that creates the vulnerability tables, which start with the shipped seed. */
export const VULNERABILITY_TABLES = "004-vulndb";
