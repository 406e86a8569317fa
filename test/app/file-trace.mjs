// Preloaded (--import) into a Sightline process by test/app/image-layout.test.ts: appends every file and
// directory the process (and its worker threads, which inherit --import) reads or loads to the file
// named by SIGHTLINE_TEST_FILE_TRACE, one absolute path a line.

// Preloaded (--import) into a Sightline process by test/app/image-layout.test.ts: appends every file and
// directory the process (and its worker threads, which inherit --import) reads or loads to the file
// named by SIGHTLINE_TEST_FILE_TRACE, one absolute path a line.
import fs, { appendFileSync } from "node:fs";
import module from "node:module";
import { fileURLToPath } from "node:url";

const out = process.env.SIGHTLINE_TEST_FILE_TRACE;
const note = (path) => {
  try {
    const text = path instanceof URL ? fileURLToPath(path) : typeof path === "string" ? path : undefined;
    if (text && out && text !== out) appendFileSync(out, `${text}\n`);
  } catch {}
};
for (const name of [
  "readFileSync",
  "readdirSync",
  "openSync",
  "existsSync",
  "statSync",
  "createReadStream",
]) {
  const original = fs[name];
  fs[name] = function traced(path, ...rest) {
    note(path);
    return original.call(this, path, ...rest);
  };
}
for (const name of ["readFile", "readdir", "open", "stat", "opendir"]) {
  const original = fs.promises[name];
  fs.promises[name] = function traced(path, ...rest) {
    note(path);
    return original.call(this, path, ...rest);
  };
}
module.syncBuiltinESMExports();
module.registerHooks({
  load(url, context, nextLoad) {
    if (url.startsWith("file:")) note(new URL(url));
    return nextLoad(url, context);
  },
});
