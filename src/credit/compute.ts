import type { Episode } from '../data/episode.ts';
import { type AssignOptions, type AssignedGroup, assignCredit, evaluatePlan } from './assign.ts';
import type { CreditConfig } from './config.ts';
import type { EvaluateStats, ReplayRunner } from './counterfactual.ts';
import { type LikelihoodScorer, scorePlan } from './likelihood-scorer.ts';
import { type PlanOptions, planReplays } from './plan.ts';
import { reportInputs, type TrajectoryCredit } from './credited.ts';
import type { MessageReward } from './message-shares.ts';
import { creditReport, type CreditReport } from './report.ts';
import type { AgentCredit } from './reward.ts';
import type { Trajectory } from '../rollout/types.ts';

/**
 * The credit stages of one group in one call, for callers that run the replays in this process:
 * plan replays (plan.ts) -> run replays (`runner`: one batched engine run for the whole group) ->
 * evaluate (counterfactual.ts) -> assign credit (assign.ts). The GRPO loop calls the stages one by
 * one (train/grpo/loop.ts); evaluation and the tests call this.
 */
export type { CreditConfig };

export type CreditOptions = PlanOptions &
  AssignOptions & {
    /** credit.value likelihood: scores the planned contexts (likelihood-scorer.ts). */
    scorer?: LikelihoodScorer;
  };

export interface GroupCredit extends AssignedGroup {
  stats: EvaluateStats;
  /**
   * Views of `credited` (flattened, not copies): each trajectory's numbers, every agent's credit, every message share,
   * the group's report.
   */
  readonly trajectories: TrajectoryCredit[];
  readonly credits: AgentCredit[];
  readonly messageRewards: MessageReward[];
  readonly report: CreditReport;
}

function withViews(g: AssignedGroup, stats: EvaluateStats): GroupCredit {
  return {
    ...g,
    stats,
    get trajectories() {
      return g.credited.map((c) => c.credit);
    },
    get credits() {
      return g.credited.flatMap((c) => c.agents);
    },
    get messageRewards() {
      return g.credited.flatMap((c) => c.messages ?? []);
    },
    get report() {
      const { summaries, credits } = reportInputs(g.credited);
      return creditReport(summaries, credits);
    },
  };
}

export async function computeCredits(
  group: readonly Trajectory[],
  episode: Episode,
  runner: ReplayRunner,
  cfg: CreditConfig,
  opts: CreditOptions = {},
): Promise<GroupCredit> {
  const plan = planReplays(group, episode, cfg, opts);
  const replayed = plan.items.length > 0 ? await runner(plan.items) : [];
  const scored = await scorePlan(plan, opts.scorer);
  const { tables, stats } = evaluatePlan(plan, replayed, scored, cfg, opts.outcome);
  return withViews(await assignCredit(plan, tables, cfg, opts), stats);
}
