/**
 * A collection's scan profile in its settings: a preset and the fields that override it, each left empty
 * to take the preset's value (or the server's, where the preset sets none). Saving sends the whole
 * profile, as the API stores it; "Use the server's settings" drops it.
 */
import { useState } from "preact/hooks";
import { PRESETS, type ScanPreset, type ScanProfile } from "../../../core/scan-profile.ts";
import { post, sentence } from "../api.ts";

const PRESET_LABELS: Record<ScanPreset, string> = {
  quick: "Quick: 100 ports, no UDP",
  default: "Default: the server's",
  thorough: "Thorough: 1,000 ports, UDP",
};

/** A switch of the profile: on, off, or as the preset says (unset). */
function Toggle({
  id,
  label,
  value,
  inherited,
  onChange,
}: {
  id: string;
  label: string;
  value: boolean | undefined;
  inherited: boolean | undefined;
  onChange: (value: boolean | undefined) => void;
}) {
  const from = inherited === undefined ? "server's setting" : `preset: ${inherited ? "on" : "off"}`;
  return (
    <div class="form-row">
      <label for={id}>{label}</label>
      <select
        id={id}
        value={value === undefined ? "" : value ? "on" : "off"}
        onChange={(event) => {
          const chosen = (event.target as HTMLSelectElement).value;
          onChange(chosen === "" ? undefined : chosen === "on");
        }}
      >
        <option value="">Unset ({from})</option>
        <option value="on">On</option>
        <option value="off">Off</option>
      </select>
    </div>
  );
}

/** The profile the form holds: only the fields set, so an empty form is no profile. */
function profileOf(fields: ScanProfile): ScanProfile | null {
  const set = Object.fromEntries(
    Object.entries(fields).filter(([, value]) => value !== undefined && value !== ""),
  );
  return Object.keys(set).length > 0 ? (set as ScanProfile) : null;
}

export function ScanProfileForm({
  path,
  profile,
  onChanged,
}: {
  path: string;
  profile: ScanProfile | null | undefined;
  onChanged: () => void;
}) {
  const [fields, setFields] = useState<ScanProfile>(profile ?? {});
  const [message, setMessage] = useState<{ text: string; error: boolean }>();
  const [busy, setBusy] = useState(false);
  const preset = PRESETS[fields.preset ?? "default"];
  const set = (change: Partial<ScanProfile>) => setFields((current) => ({ ...current, ...change }));
  const numberOrUndefined = (text: string) => (text.trim() === "" ? undefined : Number(text));

  const save = async (profileToSave: ScanProfile | null) => {
    setMessage(undefined);
    setBusy(true);
    try {
      await post(path, { scan_profile: profileToSave });
      if (profileToSave === null) setFields({});
      setMessage({
        text: profileToSave
          ? "Scan profile saved: the next run scans with it."
          : "Scan profile removed: runs use the server's settings.",
        error: false,
      });
      onChanged();
    } catch (error) {
      setMessage({ text: sentence(error), error: true });
    } finally {
      setBusy(false);
    }
  };

  return (
    <form
      class="stack"
      aria-labelledby="profile-heading"
      onSubmit={(event) => {
        event.preventDefault();
        void save(profileOf(fields));
      }}
      noValidate
    >
      <fieldset>
        <legend id="profile-heading">Scan profile</legend>
        <p class="hint">
          What this collection's runs scan. Empty fields take the preset's value, or the server's setting
          where the preset sets none. Each run records the profile it used.
        </p>
        <div class="form-grid">
          <div class="form-row">
            <label for="profile-preset">Preset</label>
            <select
              id="profile-preset"
              value={fields.preset ?? "default"}
              onChange={(event) => set({ preset: (event.target as HTMLSelectElement).value as ScanPreset })}
            >
              {(Object.keys(PRESET_LABELS) as ScanPreset[]).map((name) => (
                <option key={name} value={name}>
                  {PRESET_LABELS[name]}
                </option>
              ))}
            </select>
          </div>
          <div class="form-row">
            <label for="profile-ports">TCP ports</label>
            <input
              id="profile-ports"
              value={fields.ports ?? ""}
              placeholder={preset.ports ?? "the server's ports"}
              onInput={(event) => set({ ports: (event.target as HTMLInputElement).value || undefined })}
            />
            <span class="hint">top100, top1000 or a list such as 22,80,443,8000-8100</span>
          </div>
          <Toggle
            id="profile-udp"
            label="UDP pass"
            value={fields.udp}
            inherited={preset.udp}
            onChange={(udp) => set({ udp })}
          />
          <div class="form-row">
            <label for="profile-wordlist">Subdomain brute force</label>
            <select
              id="profile-wordlist"
              value={fields.dns_wordlist ?? ""}
              onChange={(event) => {
                const chosen = (event.target as HTMLSelectElement).value;
                set({ dns_wordlist: chosen === "" ? undefined : (chosen as ScanProfile["dns_wordlist"]) });
              }}
            >
              <option value="">
                Unset ({preset.dns_wordlist ? `preset: ${preset.dns_wordlist}` : "server's setting"})
              </option>
              <option value="off">Off</option>
              <option value="small">Small wordlist</option>
              <option value="large">Large wordlist</option>
            </select>
          </div>
          <div class="form-row">
            <label for="profile-depth">Depth</label>
            <input
              id="profile-depth"
              type="number"
              min={1}
              max={10}
              value={fields.depth ?? ""}
              placeholder={preset.depth !== undefined ? String(preset.depth) : "the server's depth"}
              onInput={(event) => set({ depth: numberOrUndefined((event.target as HTMLInputElement).value) })}
            />
          </div>
          <div class="form-row">
            <label for="profile-rate">Operations a second</label>
            <input
              id="profile-rate"
              type="number"
              min={0}
              value={fields.rate_limit ?? ""}
              placeholder="the server's rate (0: unlimited)"
              onInput={(event) =>
                set({ rate_limit: numberOrUndefined((event.target as HTMLInputElement).value) })
              }
            />
          </div>
          <Toggle
            id="profile-exposures"
            label="Exposure checks"
            value={fields.exposure_checks}
            inherited={preset.exposure_checks}
            onChange={(exposure_checks) => set({ exposure_checks })}
          />
          <Toggle
            id="profile-templates"
            label="Template library"
            value={fields.template_library}
            inherited={preset.template_library}
            onChange={(template_library) => set({ template_library })}
          />
        </div>
        {message && (
          <p
            class={`notice ${message.error ? "error" : "success"}`}
            role={message.error ? "alert" : "status"}
          >
            {message.text}
          </p>
        )}
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            Save scan profile
          </button>
          <button type="button" disabled={busy || !profile} onClick={() => void save(null)}>
            Use the server's settings
          </button>
        </div>
      </fieldset>
    </form>
  );
}
