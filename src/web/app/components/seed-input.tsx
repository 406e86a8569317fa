/**
 * Seeds typed, pasted in bulk or loaded from a file, one per line, with a preview that shows the type
 * detected for each line and any error on the very line it belongs to — found here with the API's own
 * rules, or returned by the API for `seeds.N`.
 */
import { useMemo, useState } from "preact/hooks";
import { SEED_TYPES, type Seed, type SeedType } from "../../../core/seeds.ts";
import { ApiFailure, type ErrorDetail, sentence } from "../api.ts";
import { plural } from "../format.ts";
import {
  countByType,
  errorsByLine,
  parseSeedLines,
  retypeLine,
  type SeedLine,
  seedsToSend,
} from "../seed-lines.ts";
import { ScrollArea } from "./scroll-area.tsx";

const PREVIEW_LIMIT = 200;
const FILE_LIMIT = 5 * 1024 * 1024;

export interface SeedInputProps {
  id: string;
  label: string;
  /** The form's seed text, its lines, and the API's messages by line number (useSeedText). */
  seeds: SeedText;
}

export function SeedInput({ id, label, seeds }: SeedInputProps) {
  const { text, lines, setText: onText, apiErrors } = seeds;
  const [fileError, setFileError] = useState<string>();
  const problems = lines.filter((line) => line.problem || apiErrors.has(line.line));
  const ready = lines.filter((line) => line.seed).length;
  const counts = countByType(lines);
  const preview = lines.length <= PREVIEW_LIMIT ? lines : problems.slice(0, PREVIEW_LIMIT);

  const load = async (input: HTMLInputElement) => {
    const file = input.files?.[0];
    if (!file) return;
    setFileError(undefined);
    if (file.size > FILE_LIMIT) {
      setFileError(`${file.name} is larger than 5 MB; split it into smaller files.`);
      return;
    }
    try {
      const content = await file.text();
      onText(text.trim() === "" ? content : `${text.replace(/\s*$/, "")}\n${content}`);
    } catch {
      setFileError(`${file.name} could not be read; check that it is a text file.`);
    }
    input.value = "";
  };

  return (
    <fieldset class="seed-input" id={id}>
      <legend>{label}</legend>
      <label for={`${id}-text`}>Seeds, one per line</label>
      <p class="hint" id={`${id}-hint`}>
        Domains, DNS names, IP addresses, CIDR blocks and http(s) URLs are recognised by themselves. Put the
        type first where it cannot be guessed: <code>Nameserver ns1.example.com</code>,{" "}
        <code>Domain example.co.uk</code>. Lines starting with # are ignored.
      </p>
      <textarea
        id={`${id}-text`}
        rows={8}
        spellcheck={false}
        autocapitalize="off"
        value={text}
        aria-describedby={`${id}-hint ${id}-summary`}
        aria-invalid={problems.length > 0 ? "true" : undefined}
        onInput={(event) => onText((event.target as HTMLTextAreaElement).value)}
      />
      <label for={`${id}-file`} class="file-label">
        Or load them from a text or CSV file
      </label>
      <input
        id={`${id}-file`}
        type="file"
        accept=".txt,.csv,.list,text/plain,text/csv"
        onChange={(event) => load(event.target as HTMLInputElement)}
      />
      {fileError && (
        <p class="notice error" role="alert">
          {fileError}
        </p>
      )}
      <p id={`${id}-summary`} class="seed-summary" aria-live="polite">
        {lines.length === 0
          ? "No seeds entered."
          : `${plural(ready, "seed")} ready${counts.length ? ` (${counts.map(([type, n]) => `${n} ${type}`).join(", ")})` : ""}${
              problems.length
                ? `; ${plural(problems.length, "line")} need${problems.length === 1 ? "s" : ""} attention`
                : ""
            }.`}
      </p>
      {preview.length > 0 && (
        <ScrollArea class="seed-preview" label="Seeds preview">
          <table>
            <caption class="visually-hidden">Each line, its detected type and any problem</caption>
            <thead>
              <tr>
                <th scope="col" class="numeric">
                  Line
                </th>
                <th scope="col">Seed</th>
                <th scope="col">Type</th>
                <th scope="col">Check</th>
              </tr>
            </thead>
            <tbody>
              {preview.map((line) => {
                const messages = [
                  ...(line.problem ? [line.problem] : []),
                  ...(apiErrors.get(line.line) ?? []),
                ];
                return (
                  <tr key={line.line} class={messages.length ? "bad" : undefined} data-line={line.line}>
                    <td class="numeric">{line.line}</td>
                    <td>
                      <code>{line.value}</code>
                    </td>
                    <td>
                      <select
                        aria-label={`Type of line ${line.line}`}
                        value={line.type ?? ""}
                        aria-invalid={messages.length ? "true" : undefined}
                        onChange={(event) =>
                          onText(
                            retypeLine(
                              text,
                              line.line,
                              (event.target as HTMLSelectElement).value as SeedType,
                            ),
                          )
                        }
                      >
                        {!line.type && <option value="">Unknown</option>}
                        {SEED_TYPES.map((type) => (
                          <option key={type} value={type}>
                            {type}
                          </option>
                        ))}
                      </select>
                    </td>
                    <td class="check">
                      {messages.length ? (
                        <span class="line-error">
                          <span aria-hidden="true">✗ </span>
                          {messages.join(" ")}
                        </span>
                      ) : (
                        <span class="ok">
                          <span aria-hidden="true">✓ </span>
                          {line.explicit ? "typed" : "detected"}
                        </span>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          {lines.length > PREVIEW_LIMIT && (
            <p class="hint">
              {lines.length.toLocaleString("en")} lines: only lines that need attention are listed
              {problems.length > PREVIEW_LIMIT ? ` (the first ${PREVIEW_LIMIT})` : ""}.
            </p>
          )}
        </ScrollArea>
      )}
    </fieldset>
  );
}

export type SeedText = ReturnType<typeof useSeedText>;

/** The seed text of a form, its parsed lines, and the API's errors for them. */
export function useSeedText(initial = "") {
  const [text, setTextState] = useState(initial);
  const [apiErrors, setApiErrors] = useState<Map<number, string[]>>(new Map());
  const lines = useMemo(() => parseSeedLines(text), [text]);
  const setText = (next: string) => {
    setTextState(next);
    // The API's answer was about the text it was sent.
    setApiErrors(new Map());
  };
  return { text, setText, lines, apiErrors, setApiErrors };
}

/** The sentence that stops a submission while lines need attention; undefined when all are good. */
export function linesProblem(lines: SeedLine[]): string | undefined {
  const bad = lines.filter((line) => line.problem);
  if (bad.length === 0) return undefined;
  const first = bad[0];
  const more = bad.length > 1 ? ` (and ${plural(bad.length - 1, "more line")})` : "";
  return `Line ${first.line}: ${first.problem}${more}. Fix or remove it; nothing was saved.`;
}

/** Moves focus to the first line marked bad, so a keyboard user lands on it. */
export function focusFirstBadLine(id: string) {
  requestAnimationFrame(() => {
    const select = document.querySelector<HTMLSelectElement>(`#${id} tr.bad select`);
    (select ?? document.getElementById(`${id}-text`))?.focus();
  });
}

export interface SeedSubmission<T> {
  result?: T;
  /** The sentence to show above the form: the API's, or why nothing was sent. */
  error?: string;
  /** The API's details that are not about a seed line (e.g. `name`, `team_id`). */
  fieldErrors: ErrorDetail[];
}

/**
 * Sends the valid lines' seeds through `request` unless a line needs attention; the API's `seeds.N`
 * errors are put back on their lines and focus goes to the first of them.
 */
export async function submitSeeds<T>(
  id: string,
  seedText: SeedText,
  request: (seeds: Seed[]) => Promise<T>,
): Promise<SeedSubmission<T>> {
  const problem = linesProblem(seedText.lines);
  if (problem) {
    focusFirstBadLine(id);
    return { error: problem, fieldErrors: [] };
  }
  const { seeds, lineOf } = seedsToSend(seedText.lines);
  try {
    return { result: await request(seeds), fieldErrors: [] };
  } catch (error) {
    const details = error instanceof ApiFailure ? error.details : [];
    const { byLine, general } = errorsByLine(details, lineOf);
    seedText.setApiErrors(byLine);
    if (byLine.size > 0) focusFirstBadLine(id);
    return { error: sentence(error), fieldErrors: general };
  }
}
