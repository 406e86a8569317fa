/**
 * One CLI convention, held to the commands themselves: every command that prints data takes `--json`
 * (the API's result, as the server sent it), lists take `--jsonl` (one item per line), `-` reads seeds
 * from standard input, `serve --help` names the settings, and `completion` prints working scripts for
 * bash, zsh and fish made from the command tree. Real `sightline` processes against a real server.
 */
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Command } from "commander";
import { resultRows } from "../../src/cli/collections.ts";
import { registerCommands } from "../../src/cli/commands.ts";
import { allCommands, commandTree } from "../../src/cli/completion.ts";
import { ENVIRONMENT } from "../../src/core/config.ts";
import { runClientCommand, spawnSightline } from "../helpers/processes.ts";
import { buildRun } from "../helpers/result-fixtures.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

const DOC = readFileSync(new URL("../../docs/cli.md", import.meta.url), "utf8");
/** Commands that print no data: they run a process, or print a script or help. */
const NO_DATA = new Set(["serve", "worker", "completion", "help"]);

const tree = commandTree(registerCommands(new Command("sightline")));
const leaves = allCommands(tree).filter(
  (node) => node.path.length > 0 && node.commands.length === 0 && node.path.at(-1) !== "help",
);
const takes = (node: { options: Array<{ long?: string }> }, flag: string) =>
  node.options.some((option) => option.long === flag);

/** JSON Lines: every line one JSON value. */
function jsonLines(text: string): unknown[] {
  assert.ok(text.endsWith("\n"), "JSON Lines end with a newline");
  return text
    .slice(0, -1)
    .split("\n")
    .map((line, i) => {
      try {
        return JSON.parse(line);
      } catch {
        return assert.fail(`line ${i + 1} is not JSON: ${line}`);
      }
    });
}

describe("every command that prints data takes --json, lists --jsonl (docs/cli.md)", () => {
  const rows = new Map(
    [...DOC.matchAll(/^\| `([a-z -]+)` \| [^|]+ \| (yes|—) \| (yes|—) \|$/gm)].map((match) => [
      match[1],
      { json: match[2] === "yes", jsonl: match[3] === "yes" },
    ]),
  );

  test("the table in docs/cli.md names every command, and says what it takes", () => {
    assert.deepEqual(
      [...rows.keys()].sort(),
      leaves.map((node) => node.path.join(" ")).sort(),
      "one row per command",
    );
    for (const node of leaves) {
      const path = node.path.join(" ");
      assert.deepEqual(
        rows.get(path),
        { json: takes(node, "--json"), jsonl: takes(node, "--jsonl") },
        `${path}: docs/cli.md and the command agree`,
      );
    }
  });

  test("all of them but the processes and the completion script take --json", () => {
    for (const node of leaves)
      if (!NO_DATA.has(node.path[0]))
        assert.ok(takes(node, "--json"), `sightline ${node.path.join(" ")} takes --json`);
    for (const list of [
      "collections list",
      "runs list",
      "results",
      "accounts list",
      "keys list",
      "audit list",
    ])
      assert.ok(
        takes(leaves.find((node) => node.path.join(" ") === list)!, "--jsonl"),
        `${list} takes --jsonl`,
      );
  });
});

describe("--json and --jsonl against a real server", () => {
  let t: TestServer;
  let home: string;

  before(async () => {
    t = await startTestServer("sqlite", { schedulerIntervalSeconds: 3600 });
    home = mkdtempSync(join(tmpdir(), "sightline-conventions-"));
    const created = await t.request("POST", "/api/collections", {
      body: { name: "fx", scan_rate: "on_demand", seeds: [{ type: "Domain", name: "corp.example" }] },
    });
    assert.equal(created.status, 200, created.text);
    const account = (await t.server.services.accounts.findAccount("default"))!;
    const row = (await t.server.services.collections.findInAccount(account.id, "fx"))!;
    await buildRun(t.server.services.store.db, { collectionId: row.id, name: "fx" }, { hosts: 6 });
  });
  after(async () => {
    await t?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  const sightline = async (args: string[], input?: string) => {
    const answer = await runClientCommand(t, home, args, { SIGHTLINE_DATA_DIR: t.config.dataDir }, input);
    assert.equal(answer.code, 0, `sightline ${args.join(" ")}: ${answer.output}`);
    return answer.stdout;
  };
  const api = async (path: string) => {
    const response = await t.request("GET", path);
    assert.equal(response.status, 200, response.text);
    return response.body.result;
  };

  test("--json is the API's result; --jsonl its items, a line each", async () => {
    for (const [args, path] of [
      [["collections", "list"], "/api/collections"],
      [["runs", "list", "fx"], "/api/collections/fx/runs"],
      [["results", "fx", "issues"], "/api/collections/fx/issues"],
      [["results", "fx", "applications"], "/api/collections/fx/applications"],
    ] as const) {
      const expected = await api(path);
      assert.ok(expected.length > 0, `${path} has items to compare`);
      assert.deepEqual(
        JSON.parse(await sightline([...args, "--json"])),
        expected,
        `${args.join(" ")} --json`,
      );
      assert.deepEqual(
        jsonLines(await sightline([...args, "--jsonl"])),
        expected,
        `${args.join(" ")} --jsonl`,
      );
    }
    for (const [args, path] of [
      [["collections", "show", "fx"], "/api/collections/fx"],
      [["results", "fx", "overview"], "/api/collections/fx/overview"],
      [["results", "fx", "hosts"], "/api/collections/fx/hosts"],
    ] as const)
      assert.deepEqual(JSON.parse(await sightline([...args, "--json"])), await api(path), args.join(" "));

    // Watching a run: --json the run when it ends, --jsonl the run each time it changes (here: once, ended).
    const [latest] = await api("/api/collections/fx/runs");
    const run = await api(`/api/collections/fx/runs/${latest.id}`);
    assert.deepEqual(JSON.parse(await sightline(["runs", "watch", "fx", "--json"])), run);
    assert.deepEqual(jsonLines(await sightline(["runs", "watch", "fx", String(latest.id), "--jsonl"])), [
      run,
    ]);

    // --format json stays an alias; hosts, an object keyed by address, stream as {ip, …} lines.
    const hosts = await api("/api/collections/fx/hosts");
    assert.deepEqual(JSON.parse(await sightline(["results", "fx", "hosts", "--format", "json"])), hosts);
    const lines = jsonLines(await sightline(["results", "fx", "hosts", "--jsonl"]));
    assert.equal(lines.length, 6);
    assert.deepEqual(lines, resultRows("hosts", hosts));
    assert.deepEqual(jsonLines(await sightline(["results", "fx", "hosts", "--format", "jsonl"])), lines);
    // export: --jsonl is --format ndjson, --json the envelope.
    assert.deepEqual(jsonLines(await sightline(["export", "fx", "hosts", "--jsonl"])), lines);
    assert.deepEqual(JSON.parse(await sightline(["export", "fx", "hosts", "--json"])).result, hosts);
  });

  test("store commands: --jsonl lines are --json's items", async () => {
    for (const args of [
      ["accounts", "list"],
      ["users", "list"],
      ["keys", "list"],
      ["audit", "list"],
    ]) {
      const whole = JSON.parse(await sightline([...args, "--json"]));
      assert.ok(Array.isArray(whole) && whole.length > 0, `${args.join(" ")} lists something`);
      assert.deepEqual(jsonLines(await sightline([...args, "--jsonl"])), whole, args.join(" "));
    }
    assert.deepEqual(JSON.parse(await sightline(["migrate", "--json"])), { applied: [] });
  });

  test("--jsonl into a reader that stops early (| head) ends quietly", async () => {
    const account = (await t.server.services.accounts.findAccount("default"))!;
    await t.request("POST", "/api/collections", { body: { name: "big", scan_rate: "on_demand", seeds: [] } });
    const row = (await t.server.services.collections.findInAccount(account.id, "big"))!;
    await buildRun(t.server.services.store.db, { collectionId: row.id, name: "big" }, { hosts: 300 });
    const child = spawnSightline(["results", "big", "applications", "--jsonl"], {
      HOME: home,
      SIGHTLINE_URL: t.url,
      SERVICE_ACCESS_KEY: t.admin.accessKey,
      SERVICE_SECRET_KEY: t.admin.secretKey,
    });
    // Like `head -1`: the first line read, then the pipe closed while the rest is still coming.
    child.child.stdout?.once("data", () => child.child.stdout?.destroy());
    assert.equal(await child.exited, 0, child.output());
    assert.doesNotMatch(child.output(), /EPIPE|sightline:/);
  });

  test("usage errors: two formats at once, --jsonl of one object", async () => {
    const both = await runClientCommand(t, home, ["results", "fx", "hosts", "--json", "--format", "csv"]);
    assert.equal(both.code, 2);
    assert.match(both.output, /--json and --format csv ask for two formats; give one of them/);
    const overview = await runClientCommand(t, home, ["results", "fx", "overview", "--jsonl"]);
    assert.equal(overview.code, 2);
    assert.match(overview.output, /The overview is one object, not a list: read it with --json/);
    const conflict = await runClientCommand(t, home, ["collections", "list", "--json", "--jsonl"]);
    assert.equal(conflict.code, 2);
    assert.match(conflict.output, /cannot be used with/);
  });

  test("- reads seeds from standard input, one per line, as the seed arguments are written", async () => {
    const seeds = (name: string) =>
      api(`/api/collections/${name}`).then((collection: { seeds: Array<{ type: string; name: string }> }) =>
        collection.seeds.map((seed) => `${seed.type} ${seed.name}`).sort(),
      );
    const created = JSON.parse(
      await sightline(
        ["collections", "create", "piped", "--seeds-file", "-", "--seed", "Domain:flag.example", "--json"],
        "# from a pipe\nDomain acme.example\n\n192.0.2.10\nNameserver:ns1.acme.example\n",
      ),
    );
    assert.equal(created.seed_count, 4);
    assert.deepEqual(await seeds("piped"), [
      "Domain acme.example",
      "Domain flag.example",
      "IpAddress 192.0.2.10",
      "Nameserver ns1.acme.example",
    ]);

    const added = await sightline(["collections", "add-seeds", "piped", "--seed", "-"], "www.acme.example\n");
    assert.match(added, /Added 1 new seeds to piped; it has 5\./);

    const deleted = JSON.parse(
      await sightline(
        ["collections", "delete-seed", "piped", "-", "--json"],
        "192.0.2.10\nDomain:flag.example\n",
      ),
    );
    assert.deepEqual(
      deleted.map((answer: { seed_count: number }) => answer.seed_count),
      [4, 3],
    );
    assert.deepEqual(await seeds("piped"), [
      "DnsRecord www.acme.example",
      "Domain acme.example",
      "Nameserver ns1.acme.example",
    ]);

    const bad = await runClientCommand(
      t,
      home,
      ["collections", "add-seeds", "piped", "--seed", "-"],
      {},
      "what is this\n",
    );
    assert.equal(bad.code, 2);
    assert.match(bad.output, /standard input line 1: cannot tell what "what is this" is/);
  });
});

describe("serve --help names the settings", () => {
  test("docs/configuration.md and every variable", () => {
    const help = execFileSync(process.execPath, ["src/cli/main.ts", "serve", "--help"], { encoding: "utf8" });
    assert.match(help, /docs\/configuration\.md/);
    assert.match(help, /sightline\.config\.json/);
    const named = new Set(help.split(/\s+/));
    for (const variable of Object.keys(ENVIRONMENT)) assert.ok(named.has(variable), `${variable} is named`);
  });
});

describe("sightline completion bash|zsh|fish", () => {
  let dir: string;
  const scripts: Record<string, string> = {};
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "sightline-completion-"));
    for (const shell of ["bash", "zsh", "fish"]) {
      const made = spawnSync(process.execPath, ["src/cli/main.ts", "completion", shell], {
        encoding: "utf8",
      });
      assert.equal(made.status, 0, made.stderr);
      scripts[shell] = made.stdout;
      writeFileSync(join(dir, shell), made.stdout);
    }
  });
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Whether `shell` is installed here; under CI it must be (.ci installs bash, zsh and fish). */
  const installed = (shell: string) => {
    const found = spawnSync(shell, ["-c", "true"]).status === 0;
    if (!found && process.env.CI) throw new Error(`${shell} is not installed, and CI requires it`);
    return found;
  };
  const runIn = (shell: string, script: string) => {
    const ran = spawnSync(shell, ["-c", script], {
      encoding: "utf8",
      env: { PATH: process.env.PATH, HOME: dir },
    });
    assert.equal(ran.status, 0, `${shell}: ${ran.stderr}`);
    return ran.stdout;
  };

  test("each script names every command and every option of the program", () => {
    for (const [shell, script] of Object.entries(scripts)) {
      for (const node of allCommands(tree)) {
        if (node.path.length > 0)
          assert.ok(script.includes(node.path.at(-1)!), `${shell}: ${node.path.join(" ")}`);
        for (const option of node.options)
          if (option.long) assert.ok(script.includes(option.long.slice(2)), `${shell}: ${option.long}`);
      }
    }
    const unknown = spawnSync(process.execPath, ["src/cli/main.ts", "completion", "tcsh"], {
      encoding: "utf8",
    });
    assert.equal(unknown.status, 2);
    assert.match(unknown.stderr, /No completion for "tcsh"; choose one of bash, zsh, fish/);
  });

  test("bash: bash -n accepts it, and it completes commands, subcommands and options", () => {
    assert.equal(spawnSync("bash", ["-n", join(dir, "bash")]).status, 0);
    const complete = (...words: string[]) =>
      runIn(
        "bash",
        `source ${join(dir, "bash")}; COMP_WORDS=(${words.map((word) => `'${word}'`).join(" ")}); COMP_CWORD=${words.length - 1}; _sightline; echo "\${COMPREPLY[*]}"`,
      ).trim();
    assert.equal(complete("sightline", "coll"), "collections");
    assert.equal(complete("sightline", "collections", "delete-s"), "delete-seeds delete-seed");
    assert.equal(complete("sightline", "--url", "http://x", "runs", "li"), "list");
    assert.equal(complete("sightline", "collections", "list", "--js"), "--json --jsonl");
    assert.equal(complete("sightline", "results", "acme", "hosts", "--w"), "--wide");
  });

  test("zsh: zsh -n accepts it, and _sightline offers each command line's subcommands and options", (context) => {
    if (!installed("zsh")) return context.skip("zsh is not installed (apt-get install zsh)");
    assert.equal(spawnSync("zsh", ["-n", join(dir, "zsh")]).status, 0);
    // zsh's own menu functions print what they are given; the rest is the script's, run by zsh.
    const offered = (...line: string[]) =>
      runIn(
        "zsh",
        `compdef() {}; _describe() { print -rl -- \${(P)4} }; _files() { print '(files)' }
source ${join(dir, "zsh")}
words=(${line.map((word) => `'${word}'`).join(" ")}); CURRENT=${line.length}; _sightline`,
      )
        .trim()
        .split("\n")
        .map((entry) => entry.split(":")[0]);
    assert.ok(offered("sightline", "").includes("collections"));
    assert.deepEqual(offered("sightline", "--url", "http://x", "runs", ""), [
      "list",
      "watch",
      "show",
      "cancel",
      "help",
    ]);
    assert.ok(offered("sightline", "collections", "list", "--js").includes("--jsonl"));
    assert.deepEqual(offered("sightline", "vulndb", "import", ""), ["(files)"]);
  });

  test("fish: fish -n accepts it, and complete -C offers what the command line allows", (context) => {
    if (!installed("fish")) return context.skip("fish is not installed (apt-get install fish)");
    assert.equal(spawnSync("fish", ["-n", join(dir, "fish")]).status, 0);
    const complete = (line: string) =>
      runIn("fish", `source ${join(dir, "fish")}; complete -C '${line}'`)
        .trim()
        .split("\n")
        .map((entry) => entry.split("\t")[0]);
    assert.deepEqual(complete("sightline coll"), ["collections"]);
    assert.deepEqual(complete("sightline collections delete-s"), ["delete-seed", "delete-seeds"]);
    assert.deepEqual(complete("sightline collections list --js"), ["--json", "--jsonl"]);
    assert.deepEqual(complete("sightline --url http://x runs li"), ["list"]);
  });
});
