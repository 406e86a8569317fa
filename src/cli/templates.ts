/**
 * `sightline templates validate <dir>`: reads every template file under a directory (a checkout of the
 * public nuclei templates works) the way discovery would, and says for each one whether it runs, and
 * if not why: outside the supported subset (naming the field), a pattern or expression refused, or
 * left out by the selection settings (an intrusive tag, SIGHTLINE_TEMPLATE_TAGS, …). Reads nothing
 * over the network. Exit status 0 when at least one template runs, 1 otherwise.
 */
import { statSync } from "node:fs";
import type { Command } from "commander";
import { loadConfig } from "../core/config.ts";
import { excluded, loadDirectory, type TemplateSettings } from "../discovery/templates/library.ts";
import { CliError, type DataOptions, printedForScripts, withJsonLines } from "./output.ts";

export function registerTemplateCommands(program: Command): void {
  const templates = program.command("templates").description("Nuclei-format templates (docs/templates.md)");
  withJsonLines(
    templates
      .command("validate <dir>")
      .description("say for each template file under <dir> whether it runs, or why it is skipped"),
    { jsonl: "print one JSON line per template file" },
  ).action(async (dir: string, options: DataOptions) => {
    let isDirectory = false;
    try {
      isDirectory = statSync(dir).isDirectory();
    } catch {}
    if (!isDirectory) throw new CliError(`${dir} is not a directory that can be read`);
    const config = loadConfig();
    const settings: TemplateSettings = {
      builtIn: false,
      directories: [],
      tags: config.templateTags,
      severities: config.templateSeverities,
      allow: config.templateAllow.map((tag) => tag.toLowerCase()),
    };
    const library = await loadDirectory(dir);
    const rows = [
      ...library.templates.map(({ path, template }) => {
        const why = excluded(template, settings);
        return { file: path, id: template.id, result: why ? `skipped: ${why}` : "runs" };
      }),
      ...library.skipped.map(({ path, reason }) => ({ file: path, id: "", result: `skipped: ${reason}` })),
    ].sort((a, b) => a.file.localeCompare(b.file));
    const runs = rows.filter((row) => row.result === "runs").length;
    if (!printedForScripts(options, { runs, skipped: rows.length - runs, files: rows }, rows)) {
      for (const row of rows) console.log(`${row.file}: ${row.result}`);
      console.log(`${runs} of ${rows.length} template files run.`);
    }
    if (runs === 0) process.exitCode = 1;
  });
}
