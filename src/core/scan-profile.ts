/**
 * A collection's scan profile: what its runs scan, over the server's settings. A profile names a preset
 * (`quick`, `default`, `thorough`) and may set any of its fields itself; a field it leaves out comes from
 * the preset, and one the preset leaves out from the server's configuration. A run applies the profile
 * of its collection when it is created and records it with its settings (core/run-settings.ts), so a run
 * says what it scanned whatever the collection's profile is later.
 */
import { Type } from "typebox";
import type { RunSettings } from "./run-settings.ts";

export const SCAN_PRESETS = ["quick", "default", "thorough"] as const;
export type ScanPreset = (typeof SCAN_PRESETS)[number];

/** Subdomain brute force through a profile: off, or one of the shipped lists (never a server file). */
export const PROFILE_WORDLISTS = ["off", "small", "large"] as const;

/** A collection's profile as the API carries it (snake_case, every field optional). */
export interface ScanProfile {
  preset?: ScanPreset;
  /** `top100`, `top1000` or a list such as "22,80,443,8000-8100". */
  ports?: string;
  /** The UDP pass (DNS, NTP, SNMP, …). */
  udp?: boolean;
  dns_wordlist?: (typeof PROFILE_WORDLISTS)[number];
  /** How far discovery follows from a seed (1–10). */
  depth?: number;
  /** Network operations per second across a run (0 = unlimited). */
  rate_limit?: number;
  /** The active exposure checks (one read-only exchange per service that proves an exposure). */
  exposure_checks?: boolean;
  /** Sightline's own template library. */
  template_library?: boolean;
}

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

/** What each preset sets; `default` sets nothing, so the server's settings apply. */
export const PRESETS: Record<ScanPreset, Omit<ScanProfile, "preset">> = {
  quick: {
    ports: "top100",
    udp: false,
    dns_wordlist: "off",
    depth: 3,
    exposure_checks: true,
    template_library: false,
  },
  default: {},
  thorough: {
    ports: "top1000",
    udp: true,
    dns_wordlist: "large",
    depth: 6,
    exposure_checks: true,
    template_library: true,
  },
};

/** The profile's own fields over its preset's: what the profile changes in the server's settings. */
export function resolveProfile(profile: ScanProfile): Omit<ScanProfile, "preset"> {
  const { preset, ...own } = profile;
  return { ...PRESETS[preset ?? "default"], ...own };
}

/** The settings of a run of a collection with `profile`, over the server's `settings`. */
export function applyProfile(settings: RunSettings, profile: ScanProfile | null | undefined): RunSettings {
  if (!profile) return settings;
  const fields = resolveProfile(profile);
  const applied: RunSettings = { ...settings, profile: { preset: profile.preset ?? "default", ...fields } };
  if (fields.ports !== undefined) applied.ports = fields.ports;
  if (fields.udp !== undefined) applied.udp = fields.udp ? "on" : "off";
  if (fields.dns_wordlist !== undefined) {
    applied.dnsWordlist = fields.dns_wordlist;
    delete applied.dnsWordlistLines;
  }
  if (fields.depth !== undefined) applied.depth = fields.depth;
  if (fields.rate_limit !== undefined) applied.rateLimit = fields.rate_limit;
  if (fields.exposure_checks !== undefined) applied.exposureChecks = fields.exposure_checks ? "on" : "off";
  if (fields.template_library !== undefined) applied.templateLibrary = fields.template_library ? "on" : "off";
  return applied;
}

/** Why a port list cannot be scanned, or undefined when it can. */
export function portSpecProblem(spec: string): string | undefined {
  const key = spec.trim().toLowerCase();
  if (key === "top100" || key === "top1000") return undefined;
  const items = key.split(",").map((item) => item.trim());
  if (items.length === 0 || items.some((item) => item === ""))
    return 'must be top100, top1000 or a list such as "22,80,443,8000-8100"';
  for (const item of items) {
    const match = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(item);
    if (!match) return `has "${item}", which is not a port or a range such as 8000-8100`;
    const [low, high] = [Number(match[1]), Number(match[2] ?? match[1])];
    if (low < 1 || high > 65535 || low > high) return `has "${item}", outside 1–65535`;
  }
  return undefined;
}

/** How a run's port list reads to a person: "the top 100", "the top 1,000", or the list itself. */
export function describePorts(spec: string): string {
  const key = spec.trim().toLowerCase();
  if (key === "top100") return "the top 100";
  if (key === "top1000") return "the top 1,000";
  return key.replace(/\s+/g, "");
}
