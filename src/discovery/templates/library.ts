/**
 * Where templates come from and which run: Sightline's own library (`templates/` at the repository
 * root) and the directories of SIGHTLINE_TEMPLATES (a checkout of the public nuclei templates works),
 * read recursively (`*.yaml`, `*.yml`; dot-directories left out), each file parsed once per process.
 * A file outside the supported subset is kept as a skipped entry with the reason. Selection is by tags
 * and severities; a template tagged intrusive, dos, fuzz or bruteforce runs only when its tag is allowed.
 */
import { readdir, readFile, stat } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseTemplate, type Template, TemplateError } from "./template.ts";

/** Sightline's own templates, shipped with it. */
export const BUILT_IN_DIRECTORY = fileURLToPath(new URL("../../../templates/", import.meta.url));

/** Tags whose templates may harm or load a target: never run unless allowed by name. */
export const INTRUSIVE_TAGS = ["intrusive", "dos", "fuzz", "bruteforce"] as const;

/** A template file larger than this is not read (public templates are a few kilobytes). */
const MAX_TEMPLATE_BYTES = 256 * 1024;
/** Files read from one directory tree: a checkout of the public templates has about 10 000. */
const MAX_FILES = 50_000;

export interface TemplateSettings {
  /** Whether Sightline's own library runs. */
  builtIn: boolean;
  /** More directories (SIGHTLINE_TEMPLATES). */
  directories: string[];
  /** Only templates with at least one of these tags; empty: any. */
  tags: string[];
  /** Only templates of these severities; empty: any. */
  severities: string[];
  /** Intrusive tags allowed to run (SIGHTLINE_TEMPLATE_ALLOW). */
  allow: string[];
}

export const DEFAULT_TEMPLATE_SETTINGS: TemplateSettings = {
  builtIn: true,
  directories: [],
  tags: [],
  severities: [],
  allow: [],
};

export interface LoadedTemplate {
  template: Template;
  /** Read from Sightline's own library. */
  builtIn: boolean;
  /** The path below its directory, as shown in findings. */
  path: string;
}

export interface SkippedFile {
  path: string;
  reason: string;
}

export interface TemplateLibrary {
  templates: LoadedTemplate[];
  skipped: SkippedFile[];
}

async function* yamlFiles(directory: string, budget: { left: number }): AsyncGenerator<string> {
  let entries: Array<import("node:fs").Dirent>;
  try {
    entries = await readdir(directory, { withFileTypes: true });
  } catch {
    return;
  }
  entries.sort((a, b) => a.name.localeCompare(b.name));
  for (const entry of entries) {
    if (budget.left <= 0) return;
    if (entry.name.startsWith(".")) continue;
    const path = join(directory, entry.name);
    if (entry.isDirectory()) yield* yamlFiles(path, budget);
    else if (entry.isFile() && /\.ya?ml$/i.test(entry.name)) {
      budget.left--;
      yield path;
    }
  }
}

/** Parses every template file of a directory; the event loop gets a turn between files. */
export async function loadDirectory(directory: string, builtIn = false): Promise<TemplateLibrary> {
  const root = resolve(directory);
  const library: TemplateLibrary = { templates: [], skipped: [] };
  try {
    if (!(await stat(root)).isDirectory()) throw new Error("not a directory");
  } catch {
    library.skipped.push({ path: root, reason: "is not a readable directory" });
    return library;
  }
  for await (const file of yamlFiles(root, { left: MAX_FILES })) {
    const path = relative(root, file);
    try {
      const info = await stat(file);
      if (info.size > MAX_TEMPLATE_BYTES)
        throw new TemplateError(
          `is ${info.size} bytes, more than the ${MAX_TEMPLATE_BYTES} a template may be`,
        );
      const template = parseTemplate(await readFile(file), path, { root, directory: dirname(file) });
      library.templates.push({ template, builtIn, path });
    } catch (error) {
      library.skipped.push({
        path,
        reason:
          error instanceof TemplateError ? error.message : `could not be read: ${(error as Error).message}`,
      });
    }
    await new Promise((next) => setImmediate(next));
  }
  return library;
}

const libraries = new Map<string, Promise<TemplateLibrary>>();

/** The templates of the settings' directories, each directory read once per process. */
export async function loadLibrary(settings: TemplateSettings): Promise<TemplateLibrary> {
  const directories = [...(settings.builtIn ? [BUILT_IN_DIRECTORY] : []), ...settings.directories];
  const parts = await Promise.all(
    directories.map((directory) => {
      const key = resolve(directory);
      let pending = libraries.get(key);
      if (!pending) {
        pending = loadDirectory(key, key === resolve(BUILT_IN_DIRECTORY));
        libraries.set(key, pending);
      }
      return pending;
    }),
  );
  const seen = new Set<string>();
  const library: TemplateLibrary = { templates: [], skipped: parts.flatMap((part) => part.skipped) };
  for (const part of parts)
    for (const loaded of part.templates) {
      // The first directory's template wins an id: the built-in one, then SIGHTLINE_TEMPLATES in order.
      if (seen.has(loaded.template.id)) continue;
      seen.add(loaded.template.id);
      library.templates.push(loaded);
    }
  return library;
}

/** Why a template does not run under these settings, or undefined when it runs. */
export function excluded(template: Template, settings: TemplateSettings): string | undefined {
  const tags = template.info.tags;
  const intrusive = INTRUSIVE_TAGS.filter((tag) => tags.includes(tag) && !settings.allow.includes(tag));
  if (intrusive.length > 0)
    return `it is tagged ${intrusive.join(", ")}, which run only when SIGHTLINE_TEMPLATE_ALLOW names them`;
  if (settings.tags.length > 0 && !settings.tags.some((tag) => tags.includes(tag.toLowerCase())))
    return `it has none of the tags ${settings.tags.join(", ")} (SIGHTLINE_TEMPLATE_TAGS)`;
  if (
    settings.severities.length > 0 &&
    !settings.severities.map((s) => s.toLowerCase()).includes(template.info.severity)
  )
    return `its severity ${template.info.severity} is not among ${settings.severities.join(", ")} (SIGHTLINE_TEMPLATE_SEVERITIES)`;
  return undefined;
}
