/**
 * Loaded with `--import` into a child process: prints `loads <package>` to standard error for each
 * package a module asks for by bare name (ESM imports and CommonJS requires alike), so a test can see
 * what a process loaded.
 */
import { registerHooks } from "node:module";

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (/^(@[\w.-]+\/)?[\w.-]+$/.test(specifier)) process.stderr.write(`loads ${specifier}\n`);
    return nextResolve(specifier, context);
  },
});
