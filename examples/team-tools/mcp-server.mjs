// @ts-check
/**
 * A tiny MCP server of the example's own, on stdio, written out by hand so that the example needs no
 * MCP SDK: newline-delimited JSON-RPC 2.0 with the four methods a client needs (initialize, the
 * initialized notification, tools/list, tools/call). Its one tool, `add_years`, answers "In what year
 * did X turn 30?" from a birth year. `main.ts` starts it through `rollout.tools`
 * ({mcp, command, args}); a real server would use @modelcontextprotocol/sdk.
 */
import process from 'node:process';
import { createInterface } from 'node:readline';

const TOOLS = [
  {
    name: 'add_years',
    description: 'A year plus a number of years, e.g. the year someone born in 1899 turned 30.',
    inputSchema: {
      type: 'object',
      properties: {
        year: { type: 'integer', description: 'The starting year.' },
        years: { type: 'integer', description: 'How many years later.' },
      },
      required: ['year', 'years'],
    },
  },
];

/** @param {unknown} message */
const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);

/**
 * The result of one request, or undefined for a notification (which gets no answer).
 * @param {{ id?: number | string, method: string, params?: Record<string, any> }} req
 */
function answer(req) {
  switch (req.method) {
    case 'initialize':
      // The client's protocol version is echoed: this server uses nothing a version changed.
      return {
        protocolVersion: req.params?.protocolVersion ?? '2025-06-18',
        capabilities: { tools: {} },
        serverInfo: { name: 'team-tools-calendar', version: '1.0.0' },
      };
    case 'ping':
      return {};
    case 'tools/list':
      return { tools: TOOLS };
    case 'tools/call': {
      const { name, arguments: args = {} } = req.params ?? {};
      if (name !== 'add_years') return { isError: true, content: [{ type: 'text', text: `unknown tool ${name}` }] };
      const year = Number(args.year);
      const years = Number(args.years);
      return { content: [{ type: 'text', text: `${year} + ${years} years = ${year + years}` }] };
    }
    default:
      return undefined;
  }
}

createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() === '') return;
  /** @type {{ id?: number | string, method: string, params?: Record<string, any> }} */
  let req;
  try {
    req = JSON.parse(line);
  } catch {
    send({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } });
    return;
  }
  if (req.id === undefined) return; // a notification (notifications/initialized): nothing to answer
  const result = answer(req);
  if (result === undefined) send({ jsonrpc: '2.0', id: req.id, error: { code: -32601, message: 'method not found' } });
  else send({ jsonrpc: '2.0', id: req.id, result });
});
