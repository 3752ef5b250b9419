// The CLI's typed errors live in src/errors.ts so that lower layers can throw them without
// importing upward; re-exported here for command modules.
export { UserError } from '../errors.ts';
