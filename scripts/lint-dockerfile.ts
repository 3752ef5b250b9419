// `npm run lint` step for docker/Dockerfile: dockerfile-utils' validator (the one behind
// the Dockerfile language server), every diagnostic printed as file:line:col, exit 1 on any.
import { readFileSync } from 'node:fs';
import { validate } from 'dockerfile-utils';

const file = process.argv[2] ?? 'docker/Dockerfile';
const diagnostics = validate(readFileSync(file, 'utf8'));
for (const d of diagnostics) {
  process.stderr.write(`${file}:${d.range.start.line + 1}:${d.range.start.character + 1}: ${d.message}\n`);
}
process.exitCode = diagnostics.length > 0 ? 1 : 0;
if (diagnostics.length === 0) process.stdout.write(`${file}: no problems\n`);
