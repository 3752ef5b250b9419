/**
 * Tools are functions of text: the engine passes the call's argument text and
 * gets text back, plus what it must record. A tool never throws for bad input: it returns
 * `{ ok: false, output: <error message for the agent> }`.
 */
export interface ToolOutcome {
  ok: boolean;
  /** Text shown to the agent inside the protocol's result wrapper. */
  output: string;
  /** search only: paragraph idx values returned, in rank order. */
  retrievedIdx?: number[];
  /** search over a corpus (index, remote) only: the corpus ids returned, in rank order. */
  retrievedIds?: string[];
}

export type Tool = (args: string) => Promise<ToolOutcome>;
