/**
 * Which release and commit this process runs: the version of package.json (releases are tagged
 * `v<version>`, CHANGELOG.md has a section per release) and the commit, from SIGHTLINE_BUILD_COMMIT
 * (the image's build sets it) or else from the checkout's `.git` (read as files: no git is needed),
 * else "unknown". Read once per process.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export interface BuildInfo {
  version: string;
  commit: string;
}

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../..");
const COMMIT = /^[0-9a-f]{40}$/;

/** The commit HEAD names in the `.git` at `root` (a directory, or a worktree's `gitdir:` file). */
export function checkoutCommit(root: string): string | undefined {
  let git = join(root, ".git");
  if (!existsSync(git)) return undefined;
  try {
    if (statSync(git).isFile()) {
      const pointer = /^gitdir:\s*(.+)$/m.exec(readFileSync(git, "utf8"))?.[1]?.trim();
      if (!pointer) return undefined;
      git = resolve(root, pointer);
    }
    const head = readFileSync(join(git, "HEAD"), "utf8").trim();
    if (COMMIT.test(head)) return head;
    const ref = /^ref:\s*(.+)$/.exec(head)?.[1];
    if (!ref) return undefined;
    // A worktree keeps its HEAD; its refs live in the common directory.
    const common = existsSync(join(git, "commondir"))
      ? resolve(git, readFileSync(join(git, "commondir"), "utf8").trim())
      : git;
    for (const dir of [git, common]) {
      const file = join(dir, ref);
      if (existsSync(file)) return readFileSync(file, "utf8").trim();
    }
    const packed = join(common, "packed-refs");
    if (!existsSync(packed)) return undefined;
    for (const line of readFileSync(packed, "utf8").split("\n")) {
      const [commit, name] = line.split(" ");
      if (name === ref && commit && COMMIT.test(commit)) return commit;
    }
  } catch {
    return undefined;
  }
  return undefined;
}

let cached: BuildInfo | undefined;

export function buildInfo(): BuildInfo {
  if (cached) return cached;
  const { version } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
  const given = process.env.SIGHTLINE_BUILD_COMMIT?.trim();
  const commit = (given && /^[0-9a-f]{7,40}$/.test(given) ? given : checkoutCommit(ROOT)) ?? "unknown";
  cached = { version, commit };
  return cached;
}

/** "0.2.0 (commit 1a2b3c4d5e6f)" — as `sightline --version` prints it. */
export function describeBuild(info: BuildInfo = buildInfo()): string {
  return `${info.version} (commit ${info.commit === "unknown" ? "unknown" : info.commit.slice(0, 12)})`;
}
