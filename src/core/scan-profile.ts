/**
 * A collection's scan profile: what its runs scan, over the server's settings. A profile names a preset
 * (`quick`, `default`, `thorough`) and may set any of its fields itself; a field it leaves out comes from
 * the preset, and one the preset leaves out from the server's configuration. A run applies the profile
 * of its collection when it is created and records it with its settings (`applyProfile` in
 * core/run-settings.ts), so a run says what it scanned whatever the collection's profile is later.
 */
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
