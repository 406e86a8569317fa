/** The scan profile's wire schema, apart from core/scan-profile.ts so the dashboard's bundle has no schema library. */
import { Type } from "typebox";
import { PROFILE_WORDLISTS, SCAN_PRESETS } from "./scan-profile.ts";

/** The profile on the wire: in a collection's body and view, and in a run's settings. */
export const ScanProfileSchema = Type.Object(
  {
    preset: Type.Optional(
      Type.String({
        enum: [...SCAN_PRESETS],
        description:
          "quick (top 100 ports, no UDP, no brute force, depth 3, no template library), default (the server's settings) or thorough (top 1,000 ports, UDP, the large wordlist, depth 6, every check); the profile's own fields override it.",
      }),
    ),
    ports: Type.Optional(
      Type.String({
        maxLength: 2000,
        description: 'TCP ports scanned: top100, top1000 or a list such as "22,80,443,8000-8100".',
      }),
    ),
    udp: Type.Optional(Type.Boolean({ description: "Whether the UDP pass runs." })),
    dns_wordlist: Type.Optional(
      Type.String({
        enum: [...PROFILE_WORDLISTS],
        description: "Subdomain brute force: off, small or large.",
      }),
    ),
    depth: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 10, description: "Steps away from the seeds." }),
    ),
    rate_limit: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1_000_000,
        description: "Network operations per second across a run (0 = unlimited).",
      }),
    ),
    exposure_checks: Type.Optional(Type.Boolean({ description: "Whether the active exposure checks run." })),
    template_library: Type.Optional(
      Type.Boolean({ description: "Whether Sightline's own template library runs." }),
    ),
  },
  {
    additionalProperties: false,
    description:
      "The collection's scan profile (a Sightline extension): a preset and the fields it overrides; what it leaves out comes from the server's settings.",
  },
);
