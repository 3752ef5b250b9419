// Entry of a user tool module's own process (hosted by module-tool.ts through WorkerHost). Plain
// JavaScript, so it starts without a loader; tsx's tsImport then loads the user's module, TypeScript
// or JavaScript, in this process only. The module is the user's own code: whatever it does (loops
// forever, exhausts its heap, calls process.exit) ends this process at worst, never the rollout's.
import process from 'node:process';
import { tsImport } from 'tsx/esm/api';
import { toJSONSchema } from 'zod';

const [moduleUrl = '', exportName = '', maxCharsText = '16384'] = process.argv.slice(2);
// A longer answer would only be cut by the host (result-cap.ts): a reply of megabytes is not sent.
const maxChars = Number(maxCharsText) + 1;
const send = (m) => process.send?.(m);
// The host died (even by kill -9): this process must not linger.
process.on('disconnect', () => process.exit(0));

const firstLine = (e) =>
  String(e instanceof Error ? e.message : e)
    .split('\n')[0]
    .slice(0, 300);

const isTool = (v) =>
  typeof v === 'object' &&
  v !== null &&
  typeof v.name === 'string' &&
  typeof v.description === 'string' &&
  typeof v.run === 'function' &&
  typeof v.parameters === 'object' &&
  v.parameters !== null;

const isZod = (schema) => '_zod' in schema || typeof schema.safeParse === 'function';

/** The module's tool: the named export, else the default export, else its only tool export. */
function pick(mod) {
  if (exportName !== '') {
    if (!(exportName in mod)) return { error: `has no export '${exportName}'` };
    return isTool(mod[exportName])
      ? { tool: mod[exportName] }
      : { error: `export '${exportName}' is not a tool (make it with defineTool({ name, description, ... }))` };
  }
  if (isTool(mod.default)) return { tool: mod.default };
  const tools = Object.entries(mod).filter(([, v]) => isTool(v));
  if (tools.length === 1) return { tool: tools[0][1] };
  if (tools.length === 0)
    return { error: 'exports no tool (export default defineTool({ name, description, parameters, run }))' };
  return { error: `exports several tools (${tools.map(([k]) => k).join(', ')}): name one with export` };
}

async function load() {
  let mod;
  try {
    mod = await tsImport(moduleUrl, import.meta.url);
  } catch (e) {
    return { error: `cannot be loaded: ${firstLine(e)}` };
  }
  const picked = pick(mod);
  if (picked.error) return picked;
  const tool = picked.tool;
  let parameters = tool.parameters;
  if (isZod(parameters)) {
    try {
      parameters = toJSONSchema(parameters, { io: 'input', unrepresentable: 'any' });
    } catch (e) {
      return { error: `tool '${tool.name}': its zod parameters have no JSON Schema (${firstLine(e)}); use zod 4` };
    }
  }
  return { tool, info: { name: tool.name, description: tool.description, parameters } };
}

const loaded = await load();
const tool = loaded.tool;

async function call(req) {
  let args = req.args;
  if (isZod(tool.parameters)) {
    const parsed = tool.parameters.safeParse(args);
    if (!parsed.success) {
      const issue = parsed.error.issues?.[0];
      const where = issue?.path?.length ? `argument ${issue.path.join('.')}: ` : '';
      return { ok: false, output: `${tool.name} error: ${where}${issue?.message ?? 'invalid arguments'}` };
    }
    args = parsed.data;
  }
  const out = await tool.run(args, { tool: tool.name, deadline: req.deadline });
  if (typeof out !== 'string')
    return { ok: false, output: `${tool.name} error: run returned ${out === null ? 'null' : typeof out}, no string` };
  return { ok: true, output: out.length > maxChars ? out.slice(0, maxChars) : out };
}

process.on('message', (req) => {
  send({ started: req.id });
  call(req).then(
    (outcome) => send({ id: req.id, outcome }),
    (e) => send({ id: req.id, outcome: { ok: false, output: `${tool.name} error: ${firstLine(e)}` } }),
  );
});
send({ ready: true, info: loaded.info ?? { error: loaded.error } });
