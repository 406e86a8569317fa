/**
 * Subdomain brute-force wordlists. `small` is the shipped list of common labels (wordlists/subdomains.txt);
 * `large` adds the permutations organisations actually use around them (numbered, per environment,
 * per region: www2, dev-api, api-staging, eu-portal) — about eighteen thousand labels; anything else is a
 * file with one label a line (# starts a comment).
 */
import { readFileSync } from "node:fs";

const SMALL = new URL("./wordlists/subdomains.txt", import.meta.url);

const ENVIRONMENTS = [
  "dev",
  "test",
  "staging",
  "stage",
  "qa",
  "uat",
  "prod",
  "old",
  "new",
  "beta",
  "int",
  "internal",
  "ext",
];
const REGIONS = [
  "us",
  "eu",
  "uk",
  "de",
  "fr",
  "asia",
  "ap",
  "au",
  "ca",
  "us-east",
  "us-west",
  "eu-west",
  "eu-central",
];
const LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;

const cache = new Map<string, string[]>();
/** Labels of the lines runs carry, per run's (cached) settings. */
const carried = new WeakMap<string[], string[]>();

function readList(path: string | URL): string[] {
  return labelsOf(readFileSync(path, "utf8").split(/\r?\n/));
}

function labelsOf(lines: string[]): string[] {
  return lines
    .map((line) => line.replace(/#.*/, "").trim().toLowerCase())
    .filter((label) => label.split(".").every((part) => LABEL.test(part)));
}

function permutations(words: string[]): string[] {
  const out = new Set(words);
  for (const word of words) {
    for (let n = 1; n <= 3; n++) out.add(`${word}${n}`).add(`${word}-${n}`);
    for (const env of ENVIRONMENTS) out.add(`${env}-${word}`).add(`${word}-${env}`).add(`${word}.${env}`);
    for (const region of REGIONS) out.add(`${region}-${word}`).add(`${word}-${region}`);
  }
  return [...out];
}

/**
 * The labels for `choice` (small, large or a path), each once, in a stable order. `lines` are a file's
 * lines as the run carries them: used instead of reading the file, which this process may not have.
 */
export function loadWordlist(choice: string, lines?: string[]): string[] {
  if (lines) {
    let labels = carried.get(lines);
    if (!labels) {
      labels = [...new Set(labelsOf(lines))];
      carried.set(lines, labels);
    }
    return labels;
  }
  let words = cache.get(choice);
  if (!words) {
    const small = readList(SMALL);
    words = [
      ...new Set(choice === "small" ? small : choice === "large" ? permutations(small) : readList(choice)),
    ];
    cache.set(choice, words);
  }
  return words;
}
