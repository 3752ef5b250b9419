import { UserError } from '../../errors.ts';

/**
 * `${ENV_NAME}` references in an MCP server's settings (headers, env, args, url), expanded from the
 * environment when the server starts. The config keeps the references: the run folder's config.yaml,
 * the log and the viewer show `${ENV_NAME}`, never the value. Every value expanded is remembered, so
 * an error message that happens to quote one (a URL in a fetch error) is scrubbed before it is shown.
 */
export class Secrets {
  private readonly values = new Set<string>();

  constructor(
    private readonly env: NodeJS.ProcessEnv,
    private readonly origin: string,
  ) {}

  /** `text` with each `${NAME}` replaced by the variable's value; an unset variable is a UserError. */
  expand(text: string): string {
    return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
      const value = this.env[name];
      if (value === undefined)
        throw new UserError(`rollout.tools: ${this.origin}: environment variable ${name} is not set`);
      if (value.length >= 4) this.values.add(value);
      return value;
    });
  }

  /** Each value of a record expanded. */
  expandAll(record: Readonly<Record<string, string>> | undefined): Record<string, string> {
    return Object.fromEntries(Object.entries(record ?? {}).map(([k, v]) => [k, this.expand(v)]));
  }

  /** `text` with every expanded value replaced by `***`. */
  scrub(text: string): string {
    let out = text;
    for (const v of this.values) out = out.split(v).join('***');
    return out;
  }
}
