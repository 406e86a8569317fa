/**
 * TypeBox schemas shared by routes: they validate requests, serialise responses and become the
 * OpenAPI document, so the contract is written once.
 */

import { type TSchema, Type } from "typebox";
import { OrNull } from "../core/or-null.ts";
import { SCAN_RATES } from "../core/runs.ts";
import { ScanProfileSchema } from "../core/scan-profile-schema.ts";
import { SEED_TYPES } from "../core/seeds.ts";
import { patternMeaning } from "./errors.ts";
import { DOCUMENTED } from "./openapi.ts";

/** The success envelope around a route's result. */
export const Envelope = <T extends TSchema>(result: T) =>
  Type.Object({
    success: Type.Literal(true),
    message: Type.Literal("success"),
    result,
  });

export const ErrorEnvelope = Type.Object(
  {
    success: Type.Literal(false),
    message: Type.String({ description: "A sentence saying what went wrong and what to do about it." }),
    result: Type.Null(),
    error: Type.Object({
      code: Type.String({ description: "Machine-readable code, e.g. bad_request, unauthorized, not_found." }),
      details: Type.Optional(
        Type.Array(Type.Object({ field: Type.String(), message: Type.String() }), {
          description: "One entry per offending field or seed.",
        }),
      ),
    }),
  },
  { $id: "ErrorEnvelope", title: "Error envelope" },
);

const errorResponse = (description: string) => ({ ...Type.Ref("ErrorEnvelope"), description });

/** Error responses every authenticated route can give. */
export const COMMON_ERRORS = {
  400: errorResponse("Bad request: malformed JSON, a bad field or seed (details name each)."),
  401: errorResponse("Missing, wrong or revoked SERVICE_ACCESS_KEY / SERVICE_SECRET_KEY."),
  413: errorResponse("The request body is larger than the configured limit."),
  415: errorResponse("The body is not JSON (Content-Type), or is compressed (Content-Encoding)."),
  429: errorResponse(
    "Too many failed authentication attempts from this client; retry after the Retry-After header's seconds.",
  ),
  500: errorResponse("Unexpected failure; nothing internal is revealed."),
  503: errorResponse("The database is unreachable; retry after the Retry-After header's seconds."),
};
export const NOT_FOUND_ERROR = { 404: errorResponse("No such collection, or not visible to this user.") };
export const FORBIDDEN_ERROR = {
  403: errorResponse("Action not allowed (team not yours, account suspended)."),
};
export const CONFLICT_ERROR = {
  409: errorResponse(
    "The name cannot be used (names are unique within the account); the answer does not say why.",
  ),
};

export const SeedInput = Type.Object(
  {
    // Checked seed by seed in the handler (checkSeed), so that one answer names every bad seed.
    type: Type.String({
      [DOCUMENTED]: { enum: [...SEED_TYPES] },
      description: `One of ${SEED_TYPES.join(", ")}.`,
      examples: ["Domain"],
    }),
    name: Type.String({
      [DOCUMENTED]: { minLength: 1, maxLength: 2048 },
      description: "The seed's value, according to its type.",
      examples: ["example.com"],
    }),
  },
  { additionalProperties: false },
);

export const Seed = Type.Object({
  type: Type.String({ enum: [...SEED_TYPES] }),
  name: Type.String(),
});

/**
 * The characters a collection name may have; checked before a name from a path is looked up. Names made
 * only of `_ - .` (`.`, `..`) were once accepted: they stay reachable, so they can be deleted.
 */
export const COLLECTION_NAME = /^[a-z0-9_.-]{1,64}$/;

/** A new name must also hold a letter or digit: `.` and `..` are path segments, not names. */
export const NAMES_SOMETHING = /[a-z0-9]/;

export const CollectionName = Type.String({
  minLength: 1,
  maxLength: 64,
  pattern: patternMeaning("^[a-z0-9_.-]+$", "has characters outside a-z 0-9 _ - ."),
  description: "1–64 characters of a-z 0-9 _ - ., at least one a letter or digit; unique within the account.",
});

export const CollectionParams = Type.Object({ collection_name: Type.String() });

/** Ids of stored records are positive and fit the id columns (PostgreSQL's serial: a 32-bit integer). */
export const MAX_RECORD_ID = 2_147_483_647;

/** A record id in a path: written in digits, 1 to MAX_RECORD_ID; anything else answers 400. */
export const RecordId = (description: string) =>
  Type.Integer({ minimum: 1, maximum: MAX_RECORD_ID, description });

/** Items to skip in a page: bounded like ids (no list holds more), so no driver ever sees a larger number. */
export const PageOffset = (description = "Items to skip.") =>
  Type.Integer({ minimum: 0, maximum: MAX_RECORD_ID, default: 0, description });

export const CollectionBody = Type.Object(
  {
    name: Type.Optional(CollectionName),
    seeds: Type.Optional(
      Type.Array(SeedInput, { maxItems: 10000, description: "Up to 10,000 seeds per request." }),
    ),
    team_id: Type.Optional(
      Type.Union([Type.String(), Type.Integer()], {
        description: "The team that owns the collection (creation only).",
      }),
    ),
    scan_rate: Type.Optional(
      Type.String({
        enum: [...SCAN_RATES],
        description:
          "Automatic run rate: auto follows the account status (active daily, trial weekly); a collection may only choose a slower one.",
      }),
    ),
    scan_profile: Type.Optional(
      OrNull(ScanProfileSchema, {
        description:
          "The collection's scan profile (a Sightline extension): a preset and the settings it overrides; null goes back to the server's settings.",
      }),
    ),
  },
  { additionalProperties: false },
);

export const CreateCollectionBody = Type.Object(
  { ...CollectionBody.properties, name: CollectionName },
  { additionalProperties: false },
);

export const Collection = Type.Object({
  name: Type.String(),
  team_id: Type.Integer(),
  scan_rate: Type.String(),
  scan_profile: OrNull(ScanProfileSchema, {
    description: "The collection's scan profile (a Sightline extension); null: the server's settings.",
  }),
  created_at: Type.String({ description: "YYYY-MM-DD HH:MM:SS UTC" }),
  updated_at: Type.String({ description: "YYYY-MM-DD HH:MM:SS UTC" }),
  seed_count: Type.Integer({ description: "Every seed of the collection (the same as seeds_total)." }),
  seeds_total: Type.Integer({ description: "Every seed of the collection; `seeds` is one page of them." }),
  seeds: Type.Array(Seed, {
    description: "One page of the seeds (limit/offset), in the order they were added.",
  }),
});

export const SeedsChange = Type.Object({
  name: Type.String(),
  seeds_added: Type.Optional(Type.Integer()),
  seeds_deleted: Type.Optional(Type.Integer()),
  seed_count: Type.Integer(),
});
